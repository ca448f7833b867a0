/* SPDX-License-Identifier: MIT */
/*
 * placectl's parts: placectl.c (argv, the verb table, the verbs),
 * placectl-bus.c (connecting, calling placed, reading its replies into JSON)
 * and placectl-format.c (tables, text and Graphviz output). The D-Bus names
 * and signatures are lib/bus-contract.h's; placectl links none of the daemon.
 */
#pragma once

#include <json.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "macro.h"

/*
 * Exit codes are part of the interface, so scripts can tell apart what went
 * wrong. "hold" returns its command's exit code.
 */
enum {
        EXIT_OK = 0,
        EXIT_DAEMON = 1,      /* the daemon refused or failed (its message is printed) */
        EXIT_USAGE = 2,       /* bad usage */
        EXIT_UNREACHABLE = 3, /* no bus, or nobody owns org.placed1 */
        EXIT_DENIED = 4,      /* access denied */
};

typedef struct Args {
        const char *address; /* NULL: PLACED_BUS_ADDRESS, else the system bus */
        const char *reason;  /* hold --reason */
        const char *format;  /* metrics --format; NULL: OpenMetrics */
        bool json;
        bool dot;
        bool reset; /* profile --reset */
} Args;

static inline void json_object_putp(json_object **o) {
        json_object_put(*o);
}

/* Prints "placectl: ..." and the help hint. Return: EXIT_USAGE. */
_printf_(1, 2) int usage_error(const char *fmt, ...);

/* ---- placectl-bus.c ---------------------------------------------------- */

/* Return: 0 with *ret, or an exit code (message printed). */
int pctl_connect(const char *address, sd_bus **ret);

/*
 * pctl_call() - calls a method of org.placed1.Manager with types and the
 * arguments after it (types NULL: none).
 * Return: 0 with *ret_reply (may be NULL: not wanted), or an exit code (message printed).
 */
int pctl_call(sd_bus *bus, const char *method, sd_bus_message **ret_reply, const char *types, ...);

/* Says that placed's reply could not be read. Return: EXIT_DAEMON. */
int pctl_parse_error(int r);

/*
 * What placed publishes, as JSON (each Return: 0 with *ret, or an exit
 * code): every property by its D-Bus name (GetAll); ListGroups() as an array
 * of groups; CpuStats() as an array of CPUs; CpuTopology() as an array of
 * { cpu, kind, capacity, core, llc, node }, *ret NULL from a placed too old
 * to have it; WakeGraph() as { "tasks": [...], "edges": [...] }.
 */
int pctl_fetch_status(sd_bus *bus, json_object **ret);
int pctl_fetch_groups(sd_bus *bus, json_object **ret);
int pctl_fetch_cpus(sd_bus *bus, json_object **ret);
int pctl_fetch_topology(sd_bus *bus, json_object **ret);
int pctl_fetch_graph(sd_bus *bus, json_object **ret);

/* ---- placectl-format.c ------------------------------------------------- */

/* Field of a JSON object as a string ("?" if absent), double or integer (0 if absent). */
const char *json_get_str(json_object *o, const char *key);
double json_get_double(json_object *o, const char *key);
int64_t json_get_int(json_object *o, const char *key);

/* Prints o pretty, and drops the reference. */
void print_json(json_object *o);

/* Prints outside text (a hold reason, a profile name) with control characters escaped. */
void print_text_escaped(const char *s);

/* { "pair": N, ... } for the classes present, in the order pair, fanout, mesh, solo. */
json_object *group_classes(json_object *groups);

/* status: the text form, and the JSON form (snake_case keys). topology: NULL from an older placed.
 */
void print_status_text(json_object *status, size_t n_groups, json_object *classes,
                       json_object *cpus, json_object *topology);
json_object *status_to_json(json_object *status, json_object *classes, json_object *cpus,
                            json_object *topology);

/* groups: the table. */
void print_groups_table(json_object *groups);

/* graph: a table of tasks by group and edges by rate, or DOT for Graphviz. */
void print_graph_text(json_object *graph);
void print_graph_dot(json_object *graph);
