/* SPDX-License-Identifier: MIT */
/*
 * placectl's side of the bus (see placectl.h): connecting, calling
 * org.placed1.Manager, turning its errors into exit codes and its replies
 * into JSON objects, which the verbs print as text or JSON. The names and
 * signatures are lib/bus-contract.h's, the same the daemon serves.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-contract.h"
#include "placectl.h"

/* What each error means, in words, before the daemon's own message. */
static const struct {
        const char *name;
        const char *meaning;
        int exit_code;
} error_table[] = {
        { PLACED_ERROR_UNKNOWN_PROFILE, "unknown profile", EXIT_DAEMON },
        { PLACED_ERROR_UNKNOWN_TASK, "unknown task", EXIT_DAEMON },
        { PLACED_ERROR_UNKNOWN_HOLD, "unknown hold", EXIT_DAEMON },
        { PLACED_ERROR_CONFIG_INVALID, "configuration invalid", EXIT_DAEMON },
        { PLACED_ERROR_TOO_MANY_HOLDS, "too many holds", EXIT_DAEMON },
        { SD_BUS_ERROR_INVALID_ARGS, "invalid argument", EXIT_DAEMON },
        { SD_BUS_ERROR_ACCESS_DENIED, "access denied", EXIT_DENIED },
        { SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED, "access denied", EXIT_DENIED },
        { SD_BUS_ERROR_SERVICE_UNKNOWN, "placed is not running on this bus", EXIT_UNREACHABLE },
        { SD_BUS_ERROR_NAME_HAS_NO_OWNER, "placed is not running on this bus", EXIT_UNREACHABLE },
        { SD_BUS_ERROR_NO_REPLY, "placed did not answer", EXIT_UNREACHABLE },
        { SD_BUS_ERROR_DISCONNECTED, "disconnected from the bus", EXIT_UNREACHABLE },
        { SD_BUS_ERROR_UNKNOWN_METHOD, "placed does not know this request (older version?)",
          EXIT_DAEMON },
};

/* Prints what went wrong. Return: the exit code for it. */
static int report_error(const sd_bus_error *e, int r, const char *what) {
        for (size_t i = 0; i < ELEMENTSOF(error_table); i++)
                if (sd_bus_error_has_name(e, error_table[i].name)) {
                        fprintf(stderr, "placectl: %s: %s\n", error_table[i].meaning,
                                e->message ? e->message : what);
                        return error_table[i].exit_code;
                }
        if (sd_bus_error_is_set(e))
                fprintf(stderr, "placectl: %s failed: %s (%s)\n", what,
                        e->message ? e->message : "", e->name);
        else
                fprintf(stderr, "placectl: %s failed: %s\n", what, strerror(-r));
        if (r == -EACCES || r == -EPERM)
                return EXIT_DENIED;
        if (r == -ECONNRESET || r == -ENOTCONN || r == -ETIMEDOUT)
                return EXIT_UNREACHABLE;
        return EXIT_DAEMON;
}

int pctl_connect(const char *address, sd_bus **ret) {
        sd_bus *bus = NULL;

        if (!address)
                address = getenv("PLACED_BUS_ADDRESS");
        int r = placed_bus_connect(address, &bus);
        if (r < 0) {
                fprintf(stderr, "placectl: cannot connect to %s: %s\n",
                        placed_bus_describe(address), strerror(-r));
                if (r == -ENOENT || r == -ECONNREFUSED)
                        fprintf(stderr, "placectl: no bus there; if placed runs on a private bus, "
                                        "pass --address ADDRESS or set PLACED_BUS_ADDRESS.\n");
                return EXIT_UNREACHABLE;
        }
        /* Lets polkit ask for a password where it would (harmless otherwise). */
        (void)sd_bus_set_allow_interactive_authorization(bus, 1);
        *ret = bus;
        return 0;
}

int pctl_call(sd_bus *bus, const char *method, sd_bus_message **ret_reply, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        va_list ap;

        int r = sd_bus_message_new_method_call(bus, &msg, PLACED_BUS_NAME, PLACED_BUS_PATH,
                                               PLACED_BUS_INTERFACE, method);
        if (r < 0)
                return report_error(&error, r, method);
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(msg, types, ap);
                va_end(ap);
                if (r < 0)
                        return report_error(&error, r, method);
        }
        r = sd_bus_call(bus, msg, 0, &error, &reply);
        if (r < 0)
                return report_error(&error, r, method);
        if (ret_reply)
                *ret_reply = TAKE_PTR(reply);
        return 0;
}

int pctl_parse_error(int r) {
        fprintf(stderr, "placectl: unexpected reply from placed: %s\n", strerror(-r));
        return EXIT_DAEMON;
}

/* ---- status: every property ------------------------------------------- */

/* Reads an "as" into a JSON array. Return: >= 0 or negative errno. */
static int read_strings(sd_bus_message *reply, json_object *v) {
        const char *s;
        int r = sd_bus_message_enter_container(reply, 'a', "s");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "s", &s)) > 0)
                json_object_array_add(v, json_object_new_string(s));
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

/* The Follow property: {state, daemon, profile}. */
static int read_follow(sd_bus_message *reply, json_object **ret) {
        const char *state, *daemon, *profile;
        int r = sd_bus_message_read(reply, PLACED_FOLLOW, &state, &daemon, &profile);
        if (r < 0)
                return r;
        *ret = json_object_new_object();
        json_object_object_add(*ret, "state", json_object_new_string(state));
        json_object_object_add(*ret, "daemon", json_object_new_string(daemon));
        json_object_object_add(*ret, "profile", json_object_new_string(profile));
        return 0;
}

/* Reads the Holds property into a JSON array. Return: >= 0 or negative errno. */
static int read_holds(sd_bus_message *reply, json_object *v) {
        const char *profile, *reason;
        uint32_t cookie;
        int r = sd_bus_message_enter_container(reply, 'a', PLACED_HOLD);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, PLACED_HOLD, &cookie, &profile, &reason)) > 0) {
                json_object *h = json_object_new_object();
                json_object_object_add(h, "cookie", json_object_new_int64(cookie));
                json_object_object_add(h, "profile", json_object_new_string(profile));
                json_object_object_add(h, "reason", json_object_new_string(reason));
                json_object_array_add(v, h);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

/* Reads the TickStagesUSec property into a JSON object { stage: us }, in its order. */
static int read_tick_stages(sd_bus_message *reply, json_object *v) {
        const char *stage;
        uint64_t usec;
        int r = sd_bus_message_enter_container(reply, 'a', PLACED_TICK_STAGE);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, PLACED_TICK_STAGE, &stage, &usec)) > 0)
                json_object_object_add(v, stage, json_object_new_uint64(usec));
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

/* Reads a basic value of type contents ("s", "t", "d", "u", "b") into *ret. Return: >= 0 or -errno.
 */
static int read_basic(sd_bus_message *reply, const char *contents, json_object **ret) {
        union {
                const char *s;
                uint64_t t;
                double d;
                uint32_t u;
                int b;
        } x;
        int r = sd_bus_message_read_basic(reply, contents[0], &x);
        if (r < 0)
                return r;
        switch (contents[0]) {
        case 's':
                *ret = json_object_new_string(x.s);
                break;
        case 't':
                *ret = json_object_new_uint64(x.t);
                break;
        case 'd':
                *ret = json_object_new_double(x.d);
                break;
        case 'b':
                *ret = json_object_new_boolean(x.b);
                break;
        default:
                *ret = json_object_new_int64(x.u);
        }
        return r;
}

/* Reads one property's variant into the status object under key. Return: 0 or negative errno. */
static int status_read_value(sd_bus_message *reply, const char *key, json_object *status) {
        json_object *v = NULL;
        const char *contents;
        char type;
        int r = sd_bus_message_peek_type(reply, &type, &contents);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'v', contents);
        if (r < 0)
                return r;

        if (strlen(contents) == 1 && strchr("stdub", contents[0]))
                r = read_basic(reply, contents, &v);
        else if (strcmp(contents, "as") == 0)
                r = read_strings(reply, v = json_object_new_array());
        else if (strcmp(contents, PLACED_SIG_HOLDS) == 0)
                r = read_holds(reply, v = json_object_new_array());
        else if (strcmp(contents, PLACED_FOLLOW) == 0)
                r = read_follow(reply, &v);
        else if (strcmp(contents, PLACED_SIG_TICK_STAGES) == 0)
                r = read_tick_stages(reply, v = json_object_new_object());
        else
                r = sd_bus_message_skip(reply, contents); /* newer daemon, unknown type */
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0 && v)
                json_object_object_add(status, key, v);
        else
                json_object_put(v);
        return r;
}

int pctl_fetch_status(sd_bus *bus, json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *key;

        int r = sd_bus_call_method(bus, PLACED_BUS_NAME, PLACED_BUS_PATH,
                                   "org.freedesktop.DBus.Properties", "GetAll", &error, &reply, "s",
                                   PLACED_BUS_INTERFACE);
        if (r < 0)
                return report_error(&error, r, "reading the status");

        _cleanup_(json_object_putp) json_object *status = json_object_new_object();
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return pctl_parse_error(r);
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &key);
                if (r < 0)
                        return pctl_parse_error(r);
                r = status_read_value(reply, key, status);
                if (r < 0)
                        return pctl_parse_error(r);
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return pctl_parse_error(r);
        }
        if (r < 0)
                return pctl_parse_error(r);
        *ret = TAKE_PTR(status);
        return 0;
}

/* ---- ListGroups() ----------------------------------------------------- */

/* Reads the trial of a group into a JSON object. Return: >= 0 or <0 error. */
static int read_trial(sd_bus_message *reply, json_object *g) {
        const char *verdict;
        double kernel, placed, kernel_delay, placed_delay, gain, gain_lo, gain_hi;
        uint32_t windows;
        int r = sd_bus_message_read(reply, PLACED_TRIAL, &verdict, &kernel, &placed, &kernel_delay,
                                    &placed_delay, &gain, &gain_lo, &gain_hi, &windows);
        if (r < 0)
                return r;
        json_object *t = json_object_new_object();
        json_object_object_add(t, "verdict", json_object_new_string(verdict));
        json_object_object_add(t, "kernel_rate", json_object_new_double(kernel));
        json_object_object_add(t, "placed_rate", json_object_new_double(placed));
        json_object_object_add(t, "kernel_delay_us", json_object_new_double(kernel_delay));
        json_object_object_add(t, "placed_delay_us", json_object_new_double(placed_delay));
        json_object_object_add(t, "gain", json_object_new_double(gain));
        json_object_object_add(t, "gain_lo", json_object_new_double(gain_lo));
        json_object_object_add(t, "gain_hi", json_object_new_double(gain_hi));
        json_object_object_add(t, "windows", json_object_new_int64(windows));
        json_object_object_add(g, "trial", t);
        return 0;
}

/* Reads a group's "au" tids into a JSON array. Return: >= 0 or <0 error. */
static int read_tids(sd_bus_message *reply, json_object *tids) {
        uint32_t tid;
        int r = sd_bus_message_enter_container(reply, 'a', "u");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "u", &tid)) > 0)
                json_object_array_add(tids, json_object_new_int64(tid));
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

/* Reads one group into a JSON object. Return: >0 read, 0 at the end, <0 error. */
static int read_group(sd_bus_message *reply, json_object **ret) {
        const char *class, *cpus, *ran_on;
        uint64_t id, runq_delay_us;
        double util, wake_rate;

        int r = sd_bus_message_enter_container(reply, 'r', PLACED_GROUP_FIELDS);
        if (r <= 0)
                return r;
        r = sd_bus_message_read(reply, "ts", &id, &class);
        if (r < 0)
                return r;
        _cleanup_(json_object_putp) json_object *g = json_object_new_object();
        json_object *tids = json_object_new_array();
        json_object_object_add(g, "id", json_object_new_uint64(id));
        json_object_object_add(g, "class", json_object_new_string(class));
        json_object_object_add(g, "tids", tids);
        r = read_tids(reply, tids);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "dtdss", &util, &runq_delay_us, &wake_rate, &cpus, &ran_on);
        if (r < 0)
                return r;
        r = read_trial(reply, g);
        if (r < 0)
                return r;
        const char *rule = "", *rule_action = "none";
        r = sd_bus_message_read(reply, PLACED_RULE, &rule, &rule_action);
        if (r < 0)
                return r;
        if (rule[0]) { /* the rule that decided, when one did */
                json_object *ro = json_object_new_object();
                json_object_object_add(ro, "name", json_object_new_string(rule));
                json_object_object_add(ro, "action", json_object_new_string(rule_action));
                json_object_object_add(g, "rule", ro);
        }
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        json_object_object_add(g, "util", json_object_new_double(util));
        json_object_object_add(g, "runq_delay_us", json_object_new_uint64(runq_delay_us));
        json_object_object_add(g, "wake_rate", json_object_new_double(wake_rate));
        json_object_object_add(g, "cpus", json_object_new_string(cpus));
        json_object_object_add(g, "ran_on", json_object_new_string(ran_on));
        *ret = TAKE_PTR(g);
        return 1;
}

/*
 * Reads an array reply of element type (a struct) with read_one into a JSON
 * array. Return: 0 with *ret, or an exit code.
 */
static int read_array(sd_bus_message *reply, const char *element,
                      int (*read_one)(sd_bus_message *reply, json_object **ret),
                      json_object **ret) {
        json_object *item;

        _cleanup_(json_object_putp) json_object *array = json_object_new_array();
        int r = sd_bus_message_enter_container(reply, 'a', element);
        if (r < 0)
                return pctl_parse_error(r);
        while ((r = read_one(reply, &item)) > 0)
                json_object_array_add(array, item);
        if (r < 0)
                return pctl_parse_error(r);
        *ret = TAKE_PTR(array);
        return 0;
}

/* Calls method and reads its array reply (see read_array()). Return: 0 with *ret, or an exit code.
 */
static int fetch_array(sd_bus *bus, const char *method, const char *element,
                       int (*read_one)(sd_bus_message *reply, json_object **ret),
                       json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

        int r = pctl_call(bus, method, &reply, NULL);
        if (r != 0)
                return r;
        return read_array(reply, element, read_one, ret);
}

int pctl_fetch_groups(sd_bus *bus, json_object **ret) {
        return fetch_array(bus, "ListGroups", PLACED_GROUP, read_group, ret);
}

/* ---- CpuStats() -------------------------------------------------------- */

/* Reads the idle states of a CPU into a JSON array. Return: >= 0 or <0 error. */
static int read_idle_states(sd_bus_message *reply, json_object *states) {
        const char *name;
        double residency;
        uint64_t exit_latency_us;
        int r = sd_bus_message_enter_container(reply, 'a', PLACED_IDLE_STATE);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, PLACED_IDLE_STATE, &name, &residency,
                                        &exit_latency_us)) > 0) {
                json_object *s = json_object_new_object();
                json_object_object_add(s, "name", json_object_new_string(name));
                json_object_object_add(s, "residency", json_object_new_double(residency));
                json_object_object_add(s, "exit_latency_us",
                                       json_object_new_uint64(exit_latency_us));
                json_object_array_add(states, s);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

/* Reads one CPU. Return: >0 read, 0 at the end, <0 error. */
static int read_cpu(sd_bus_message *reply, json_object **ret) {
        double busy, wakeups, deepest;
        uint32_t cpu, n_states;

        int r = sd_bus_message_enter_container(reply, 'r', PLACED_CPU_FIELDS);
        if (r <= 0)
                return r;
        r = sd_bus_message_read(reply, "udddu", &cpu, &busy, &wakeups, &deepest, &n_states);
        if (r < 0)
                return r;
        _cleanup_(json_object_putp) json_object *c = json_object_new_object();
        json_object *states = json_object_new_array();
        json_object_object_add(c, "cpu", json_object_new_int64(cpu));
        json_object_object_add(c, "busy", json_object_new_double(busy));
        json_object_object_add(c, "wakeups_per_sec", json_object_new_double(wakeups));
        json_object_object_add(c, "deepest_idle_share", json_object_new_double(deepest));
        json_object_object_add(c, "states", states);
        r = read_idle_states(reply, states);
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 1;
}

int pctl_fetch_cpus(sd_bus *bus, json_object **ret) {
        return fetch_array(bus, "CpuStats", PLACED_CPU, read_cpu, ret);
}

/* ---- CpuTopology() ----------------------------------------------------- */

/* Reads one CPU's kind, capacity and domains. Return: >0 read, 0 at the end, <0 error. */
static int read_cpu_topo(sd_bus_message *reply, json_object **ret) {
        uint32_t cpu, capacity, core, llc, node;
        const char *kind;

        int r = sd_bus_message_read(reply, PLACED_CPU_TOPO, &cpu, &kind, &capacity, &core, &llc,
                                    &node);
        if (r <= 0)
                return r;
        json_object *c = json_object_new_object();
        json_object_object_add(c, "cpu", json_object_new_int64(cpu));
        json_object_object_add(c, "kind", json_object_new_string(kind));
        json_object_object_add(c, "capacity", json_object_new_int64(capacity));
        json_object_object_add(c, "core", json_object_new_int64(core));
        json_object_object_add(c, "llc", json_object_new_int64(llc));
        json_object_object_add(c, "node", json_object_new_int64(node));
        *ret = c;
        return 1;
}

int pctl_fetch_topology(sd_bus *bus, json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        int r = sd_bus_call_method(bus, PLACED_BUS_NAME, PLACED_BUS_PATH, PLACED_BUS_INTERFACE,
                                   "CpuTopology", &error, &reply, NULL);
        if (r < 0 && sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                *ret = NULL; /* a placed older than CpuTopology() */
                return 0;
        }
        if (r < 0)
                return report_error(&error, r, "CpuTopology");
        return read_array(reply, PLACED_CPU_TOPO, read_cpu_topo, ret);
}

/* ---- WakeGraph() ------------------------------------------------------- */

/* Reads the graph's tasks into a JSON array. Return: >= 0 or negative errno. */
static int read_graph_tasks(sd_bus_message *reply, json_object *tasks) {
        const char *comm, *class;
        uint32_t tid, tgid;
        double rate;
        uint64_t group;
        int r = sd_bus_message_enter_container(reply, 'a', PLACED_GRAPH_TASK);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, PLACED_GRAPH_TASK, &tid, &tgid, &comm, &class, &rate,
                                        &group)) > 0) {
                json_object *t = json_object_new_object();
                json_object_object_add(t, "tid", json_object_new_int64(tid));
                json_object_object_add(t, "tgid", json_object_new_int64(tgid));
                json_object_object_add(t, "comm", json_object_new_string(comm));
                json_object_object_add(t, "class", json_object_new_string(class));
                json_object_object_add(t, "out_rate", json_object_new_double(rate));
                json_object_object_add(t, "group", json_object_new_uint64(group));
                json_object_array_add(tasks, t);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

/* Reads the graph's edges into a JSON array. Return: >= 0 or negative errno. */
static int read_graph_edges(sd_bus_message *reply, json_object *edges) {
        uint32_t waker, wakee;
        double rate;
        int strong;
        int r = sd_bus_message_enter_container(reply, 'a', PLACED_GRAPH_EDGE);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, PLACED_GRAPH_EDGE, &waker, &wakee, &rate, &strong)) >
               0) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "waker", json_object_new_int64(waker));
                json_object_object_add(e, "wakee", json_object_new_int64(wakee));
                json_object_object_add(e, "rate", json_object_new_double(rate));
                json_object_object_add(e, "strong", json_object_new_boolean(strong));
                json_object_array_add(edges, e);
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

int pctl_fetch_graph(sd_bus *bus, json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

        int r = pctl_call(bus, "WakeGraph", &reply, NULL);
        if (r != 0)
                return r;
        _cleanup_(json_object_putp) json_object *graph = json_object_new_object();
        json_object *tasks = json_object_new_array(), *edges = json_object_new_array();
        json_object_object_add(graph, "tasks", tasks);
        json_object_object_add(graph, "edges", edges);
        r = read_graph_tasks(reply, tasks);
        if (r < 0)
                return pctl_parse_error(r);
        r = read_graph_edges(reply, edges);
        if (r < 0)
                return pctl_parse_error(r);
        *ret = TAKE_PTR(graph);
        return 0;
}
