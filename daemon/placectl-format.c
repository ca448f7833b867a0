/* SPDX-License-Identifier: MIT */
/*
 * placectl's output (see placectl.h): what placed published, already read
 * into JSON objects by placectl-bus.c, printed as text for people (status,
 * the groups table, the wake graph's tables), as DOT for Graphviz, or as
 * JSON. Text that came from outside (comms, profile names, hold reasons) is
 * escaped so it cannot fake lines or move the cursor.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placectl.h"

const char *json_get_str(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "?";
}

double json_get_double(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

int64_t json_get_int(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

void print_json(json_object *o) {
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
}

/* Prints outside text (a hold reason, a profile name) for a terminal: control
 * characters escaped ("\\n", "\\x1b"), so they cannot fake lines or move the cursor. */
void print_text_escaped(const char *s) {
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '\n')
                        fputs("\\n", stdout);
                else if (c == '\t')
                        fputs("\\t", stdout);
                else if (c < 0x20 || c == 0x7f)
                        printf("\\x%02x", c);
                else
                        putchar(c);
        }
}

/* ---- status ----------------------------------------------------------- */

/* Status shows every CPU up to this many; above, only the busy ones and a summary. */
#define STATUS_CPUS_ALL      32
#define STATUS_BUSY_SHOWN    0.10
#define STATUS_PCT(fraction) (100.0 * (fraction))

/* { "pair": N, ... } for the classes present, in the order pair, fanout, mesh, solo. */
json_object *group_classes(json_object *groups) {
        static const char *const classes[] = { "pair", "fanout", "mesh", "solo" };
        json_object *o = json_object_new_object();
        for (size_t c = 0; c < ELEMENTSOF(classes); c++) {
                int64_t n = 0;
                for (size_t i = 0; i < json_object_array_length(groups); i++)
                        n += strcmp(json_get_str(json_object_array_get_idx(groups, i), "class"),
                                    classes[c]) == 0;
                if (n > 0)
                        json_object_object_add(o, classes[c], json_object_new_int64(n));
        }
        return o;
}

/* ---- status: the topology (CpuTopology(), NULL from an older placed) ---- */

/* The kinds of core, biggest first, as placed names them. */
static const char *const core_kinds[] = { "performance", "efficient", "low-power" };

/* How many CPUs of a kind, and their capacities' range. */
typedef struct KindSummary {
        int64_t n, min_capacity, max_capacity;
} KindSummary;

static void topology_kinds(json_object *topology, KindSummary ret[ELEMENTSOF(core_kinds)]) {
        for (size_t k = 0; k < ELEMENTSOF(core_kinds); k++)
                ret[k] = (KindSummary){ 0 };
        for (size_t i = 0; i < json_object_array_length(topology); i++) {
                json_object *c = json_object_array_get_idx(topology, i);
                int64_t capacity = json_get_int(c, "capacity");
                for (size_t k = 0; k < ELEMENTSOF(core_kinds); k++) {
                        if (strcmp(json_get_str(c, "kind"), core_kinds[k]) != 0)
                                continue;
                        KindSummary *s = &ret[k];
                        s->min_capacity = s->n == 0 ? capacity : MIN(s->min_capacity, capacity);
                        s->max_capacity = s->n == 0 ? capacity : MAX(s->max_capacity, capacity);
                        s->n++;
                }
        }
}

/* The number of domains (LLCs, nodes) the CPUs name by key: their dense indexes' highest + 1. */
static int64_t topology_domains(json_object *topology, const char *key) {
        int64_t n = 0;
        for (size_t i = 0; i < json_object_array_length(topology); i++)
                n = MAX(n, json_get_int(json_object_array_get_idx(topology, i), key) + 1);
        return n;
}

/* The CPU's entry in topology, or NULL. */
static json_object *topology_cpu(json_object *topology, int64_t cpu) {
        for (size_t i = 0; i < json_object_array_length(topology); i++) {
                json_object *c = json_object_array_get_idx(topology, i);
                if (json_get_int(c, "cpu") == cpu)
                        return c;
        }
        return NULL;
}

/* Whether the CPUs differ in kind or capacity: placed's Asymmetric property. */
static bool status_asymmetric(json_object *status) {
        json_object *v;
        return json_object_object_get_ex(status, "Asymmetric", &v) && json_object_get_boolean(v);
}

/* "Topology: 22 CPUs, 2 LLCs; kinds: 12 performance (1024), 8 efficient (649), ...". */
static void print_topology_line(json_object *status, json_object *topology) {
        size_t n = json_object_array_length(topology);
        int64_t llcs = topology_domains(topology, "llc"),
                nodes = topology_domains(topology, "node");
        KindSummary kinds[ELEMENTSOF(core_kinds)];

        printf("\n     Topology: %zu CPU%s, %" PRId64 " LLC%s", n, n == 1 ? "" : "s", llcs,
               llcs == 1 ? "" : "s");
        if (nodes > 1)
                printf(", %" PRId64 " NUMA nodes", nodes);
        if (!status_asymmetric(status)) {
                printf("; all alike");
                return;
        }
        topology_kinds(topology, kinds);
        const char *sep = "; kinds: ";
        for (size_t k = 0; k < ELEMENTSOF(core_kinds); k++) {
                if (kinds[k].n == 0)
                        continue;
                printf("%s%" PRId64 " %s (%" PRId64, sep, kinds[k].n, core_kinds[k],
                       kinds[k].min_capacity);
                if (kinds[k].max_capacity != kinds[k].min_capacity)
                        printf("-%" PRId64, kinds[k].max_capacity);
                printf(")");
                sep = ", ";
        }
        printf("; capacity from %s", json_get_str(status, "CapacitySource"));
}

/* The optional topology files placed set aside at start, one a line. */
static void print_set_aside(json_object *status) {
        json_object *list;
        if (!json_object_object_get_ex(status, "TopologySetAside", &list) ||
            json_object_array_length(list) == 0)
                return;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                printf("\n%s ", i == 0 ? "    Set aside:" : "             ");
                print_text_escaped(json_object_get_string(json_object_array_get_idx(list, i)));
        }
}

/* { llcs, nodes, kinds: { KIND: { count, capacity_min, capacity_max } }, cpus: [...] }. */
static json_object *topology_to_json(json_object *topology) {
        KindSummary kinds[ELEMENTSOF(core_kinds)];
        json_object *o = json_object_new_object(), *by_kind = json_object_new_object();

        topology_kinds(topology, kinds);
        for (size_t k = 0; k < ELEMENTSOF(core_kinds); k++) {
                if (kinds[k].n == 0)
                        continue;
                json_object *kind = json_object_new_object();
                json_object_object_add(kind, "count", json_object_new_int64(kinds[k].n));
                json_object_object_add(kind, "capacity_min",
                                       json_object_new_int64(kinds[k].min_capacity));
                json_object_object_add(kind, "capacity_max",
                                       json_object_new_int64(kinds[k].max_capacity));
                json_object_object_add(by_kind, core_kinds[k], kind);
        }
        json_object_object_add(o, "llcs", json_object_new_int64(topology_domains(topology, "llc")));
        json_object_object_add(o, "nodes",
                               json_object_new_int64(topology_domains(topology, "node")));
        json_object_object_add(o, "kinds", by_kind);
        json_object_object_add(o, "cpus", json_object_get(topology));
        return o;
}

/* ---- status: the rest ------------------------------------------------- */

/* One CPU's line; kind: its kind of core, shown where the CPUs differ (NULL: not shown). */
static void print_cpu_line(json_object *c, const char *kind) {
        json_object *states = NULL;
        json_object_object_get_ex(c, "states", &states);
        printf("cpu%-3" PRId64, json_get_int(c, "cpu"));
        if (kind)
                printf(" %-11s", kind);
        printf(" busy %3.0f%%  wakeups %5.0f/s", STATUS_PCT(json_get_double(c, "busy")),
               json_get_double(c, "wakeups_per_sec"));
        for (size_t s = 0; s < json_object_array_length(states); s++) {
                json_object *st = json_object_array_get_idx(states, s);
                printf("  %s %.0f%%", json_get_str(st, "name"),
                       STATUS_PCT(json_get_double(st, "residency")));
        }
        printf("\n");
}

/*
 * One line per CPU, with its kind where the CPUs differ (kinds: the
 * topology, else NULL); above STATUS_CPUS_ALL CPUs only the busy ones, the
 * rest summed up.
 */
static void print_cpus(json_object *cpus, json_object *kinds) {
        size_t n = json_object_array_length(cpus), n_quiet = 0;
        double busy = 0, wakeups = 0, deepest = 0;

        if (n == 0) {
                printf("\nNo per-CPU idle figures (no cpuidle, or fewer than two ticks so far).\n");
                return;
        }
        printf("\n");
        for (size_t i = 0; i < n; i++) {
                json_object *c = json_object_array_get_idx(cpus, i);
                if (n <= STATUS_CPUS_ALL || json_get_double(c, "busy") >= STATUS_BUSY_SHOWN) {
                        json_object *t = kinds ? topology_cpu(kinds, json_get_int(c, "cpu")) : NULL;
                        print_cpu_line(c, t ? json_get_str(t, "kind") : kinds ? "?" : NULL);
                        continue;
                }
                n_quiet++;
                busy += json_get_double(c, "busy");
                wakeups += json_get_double(c, "wakeups_per_sec");
                deepest += json_get_double(c, "deepest_idle_share");
        }
        if (n_quiet > 0)
                printf("%zu more CPUs under %.0f%% busy: mean busy %.0f%%, wakeups %.0f/s, "
                       "deepest state %.0f%% of idle\n",
                       n_quiet, STATUS_PCT(STATUS_BUSY_SHOWN), STATUS_PCT(busy / (double)n_quiet),
                       wakeups / (double)n_quiet, STATUS_PCT(deepest / (double)n_quiet));
}

/* "ticks 1234 (56 quick), last took 812 us: sample 400, ... us CPU", as much as placed said. */
static void print_ticks(json_object *status) {
        json_object *stages;

        printf("ticks %s", json_get_str(status, "Ticks"));
        if (json_object_object_get_ex(status, "QuickTicks", NULL))
                printf(" (%s quick)", json_get_str(status, "QuickTicks"));
        printf(", last took %s us", json_get_str(status, "TickCostUSec"));
        if (!json_object_object_get_ex(status, "TickStagesUSec", &stages) ||
            json_object_object_length(stages) == 0)
                return;
        const char *sep = ": ";
        json_object_object_foreach(stages, stage, usec) {
                printf("%s%s %s", sep, stage, json_object_get_string(usec));
                sep = ", ";
        }
        printf(" us CPU");
}

void print_status_text(json_object *status, size_t n_groups, json_object *classes,
                       json_object *cpus, json_object *topology) {
        json_object *profiles, *holds;

        printf("      Profile: ");
        print_text_escaped(json_get_str(status, "ActiveProfile"));
        if (json_object_object_get_ex(status, "Profiles", &profiles)) {
                printf("  (of");
                for (size_t i = 0; i < json_object_array_length(profiles); i++) {
                        printf(" ");
                        print_text_escaped(
                                json_object_get_string(json_object_array_get_idx(profiles, i)));
                }
                printf(")");
        }
        printf("\n          Why: ");
        print_text_escaped(json_get_str(status, "ActiveProfileReason"));
        json_object *follow;
        if (json_object_object_get_ex(status, "Follow", &follow) &&
            strcmp(json_get_str(follow, "state"), "off") != 0) {
                const char *state = json_get_str(follow, "state");
                printf("\n      Follows: power-profiles API: ");
                if (strcmp(state, "waiting") == 0)
                        printf("no daemon owns it");
                else {
                        print_text_escaped(json_get_str(follow, "daemon"));
                        printf(" is at \"");
                        print_text_escaped(json_get_str(follow, "profile"));
                        printf("\"%s", strcmp(state, "gone") == 0
                                               ? " (it has left the bus; its last profile is kept)"
                                               : "");
                }
        }
        printf("\n         Mode: %s\n", json_get_str(status, "Mode"));
        if (json_object_object_get_ex(status, "Holds", &holds) &&
            json_object_array_length(holds) > 0)
                for (size_t i = 0; i < json_object_array_length(holds); i++) {
                        json_object *h = json_object_array_get_idx(holds, i);
                        printf("%s ", i == 0 ? "        Holds:" : "             ");
                        print_text_escaped(json_get_str(h, "profile"));
                        printf(" (cookie %s): ", json_get_str(h, "cookie"));
                        print_text_escaped(json_get_str(h, "reason"));
                        printf("\n");
                }
        else
                printf("        Holds: none\n");

        printf("  Wake source: %s", json_get_str(status, "WakeSource"));
        double ns = json_get_double(status, "SamplerNsPerWakeup");
        if (ns > 0)
                printf(", %.0f ns/wakeup", ns);
        else if (strcmp(json_get_str(status, "WakeSource"), "bpf") == 0)
                printf(", cost not measured (needs sysctl kernel.bpf_stats_enabled=1)");
        json_object *resting;
        if (json_object_object_get_ex(status, "SamplerResting", &resting) &&
            strcmp(json_get_str(status, "WakeSource"), "bpf") == 0)
                printf("\n      Resting: %s, %.0f s in all",
                       json_object_get_boolean(resting) ? "now (nothing new, waiting or on trial)"
                                                        : "no",
                       json_get_double(status, "SamplerRestedUSec") / 1e6);
        printf("\n      Wakeups: %s attributed (%s in softirq), %s skipped, %s lost",
               json_get_str(status, "SamplerWakeups"),
               json_get_str(status, "SamplerSoftirqWakeups"),
               json_get_str(status, "SamplerSkipped"), json_get_str(status, "SamplerLost"));
        printf("\n       Groups: %zu group%s", n_groups, n_groups == 1 ? "" : "s");
        const char *sep = ": ";
        json_object_object_foreach(classes, class, count) {
                printf("%s%s %s", sep, json_object_get_string(count), class);
                sep = ", ";
        }
        printf("\n       Energy: %.2f active CPUs (estimate)",
               json_get_double(status, "EnergyEstimate"));
        double watts = json_get_double(status, "EnergyWatts");
        if (watts >= 0)
                printf(", RAPL %.1f W", watts);
        if (topology)
                print_topology_line(status, topology);
        print_set_aside(status);
        printf("\n     Counters: placement changes %s, reloads %s, ",
               json_get_str(status, "PlacementChanges"), json_get_str(status, "Reloads"));
        print_ticks(status);
        printf("\n      Version: %s\n", json_get_str(status, "Version"));
        print_cpus(cpus, topology && status_asymmetric(status) ? topology : NULL);
}

/* JSON keys in snake_case, as the rest of placed's JSON. */
json_object *status_to_json(json_object *status, json_object *classes, json_object *cpus,
                            json_object *topology) {
        static const char *const keys[][2] = {
                { "Version", "version" },
                { "ActiveProfile", "active_profile" },
                { "ActiveProfileSource", "active_profile_source" },
                { "ActiveProfileReason", "active_profile_reason" },
                { "Follow", "follow" },
                { "Profiles", "profiles" },
                { "Mode", "mode" },
                { "WakeSource", "wake_source" },
                { "SamplerNsPerWakeup", "sampler_ns_per_wakeup" },
                { "SamplerWakeups", "sampler_wakeups" },
                { "SamplerSoftirqWakeups", "sampler_softirq_wakeups" },
                { "SamplerSkipped", "sampler_skipped" },
                { "SamplerLost", "sampler_lost" },
                { "SamplerResting", "sampler_resting" },
                { "SamplerRestedUSec", "sampler_rested_usec" },
                { "Holds", "holds" },
                { "Groups", "groups" },
                { "PlacementChanges", "placement_changes" },
                { "Reloads", "reloads" },
                { "Ticks", "ticks" },
                { "QuickTicks", "quick_ticks" },
                { "TickCostUSec", "tick_cost_usec" },
                { "TickStagesUSec", "tick_stages_usec" },
                { "EnergyEstimate", "energy_estimate" },
                { "CapacitySource", "capacity_source" },
                { "Asymmetric", "asymmetric" },
                { "TopologySetAside", "topology_set_aside" },
        };
        json_object *o = json_object_new_object(), *v;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (json_object_object_get_ex(status, keys[i][0], &v))
                        json_object_object_add(o, keys[i][1], json_object_get(v));
        double watts = json_get_double(status, "EnergyWatts");
        json_object_object_add(o, "energy_watts",
                               watts >= 0 ? json_object_new_double(watts) : NULL);
        json_object_object_add(o, "group_classes", json_object_get(classes));
        json_object_object_add(o, "topology", topology ? topology_to_json(topology) : NULL);
        /* Each CPU's kind and capacity beside its figures. */
        for (size_t i = 0; topology && i < json_object_array_length(cpus); i++) {
                json_object *c = json_object_array_get_idx(cpus, i);
                json_object *t = topology_cpu(topology, json_get_int(c, "cpu"));
                if (!t)
                        continue;
                json_object_object_get_ex(t, "kind", &v);
                json_object_object_add(c, "kind", json_object_get(v));
                json_object_object_get_ex(t, "capacity", &v);
                json_object_object_add(c, "capacity", json_object_get(v));
        }
        json_object_object_add(o, "cpus", json_object_get(cpus));
        return o;
}

/* ---- groups ----------------------------------------------------------- */

static void print_group_row(json_object *g) {
        json_object *tids = NULL, *v;
        char list[64] = "";
        size_t len = 0;

        json_object_object_get_ex(g, "tids", &tids);
        size_t n = json_object_array_length(tids);
        for (size_t i = 0; i < n && len < sizeof(list) - 16; i++)
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "",
                                        json_object_get_string(json_object_array_get_idx(tids, i)));
        if (len >= sizeof(list) - 16 && n > 0)
                snprintf(list + len, sizeof(list) - len, ",...");

        double util = json_object_object_get_ex(g, "util", &v) ? json_object_get_double(v) : 0;
        char trial[64] = "-";
        json_object *t = NULL;
        if (json_object_object_get_ex(g, "trial", &t) && strcmp(json_get_str(t, "verdict"), "none"))
                snprintf(trial, sizeof(trial), "%s %.2fx/%sw", json_get_str(t, "verdict"),
                         json_get_double(t, "gain"), json_get_str(t, "windows"));
        json_object *rule = NULL;
        json_object_object_get_ex(g, "rule", &rule);
        printf("%-6s %-7s %5zu %6.2f %10s  %-12s %-24s %s%s%s%s\n", json_get_str(g, "id"),
               json_get_str(g, "class"), n, util, json_get_str(g, "runq_delay_us"),
               json_get_str(g, "cpus"), trial, list, rule ? " (rule " : "",
               rule ? json_get_str(rule, "name") : "", rule ? ")" : "");
}

void print_groups_table(json_object *groups) {
        printf("%-6s %-7s %5s %6s %10s  %-12s %-24s %s\n", "ID", "CLASS", "TASKS", "UTIL",
               "RUNQ-US", "CPUS", "TRIAL (HANDOFFS)", "TIDS");
        for (size_t i = 0; i < json_object_array_length(groups); i++)
                print_group_row(json_object_array_get_idx(groups, i));
        printf("\n%zu groups.\n", json_object_array_length(groups));
}

/* ---- the wake graph ----------------------------------------------------- */

/* Prints s as the inside of a DOT string: quotes and backslashes escaped, control bytes
 * as a visible "\\xHH" (never a raw newline that would end the label). */
static void dot_print_escaped(const char *s) {
        for (; *s; s++)
                if (*s == '"' || *s == '\\')
                        printf("\\%c", *s);
                else if ((unsigned char)*s < 0x20 || *s == 0x7f)
                        printf("\\\\x%02x", (unsigned char)*s);
                else
                        putchar(*s);
}

/* One node: "comm/tid", filled with its group's colour (set312 has 12). */
static void dot_print_task(json_object *t, const char *indent) {
        uint64_t group = (uint64_t)json_get_int(t, "group");
        printf("%st%" PRId64 " [label=\"", indent, json_get_int(t, "tid"));
        dot_print_escaped(json_get_str(t, "comm"));
        printf("/%" PRId64 "\"", json_get_int(t, "tid"));
        if (group)
                printf(", style=\"rounded,filled\", fillcolor=%" PRIu64, group % 12 + 1);
        printf("];\n");
}

/* Orders tasks by group, then tid, so each group's tasks are adjacent. */
static int task_compare(const void *a, const void *b) {
        json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b;
        int64_t gx = json_get_int(x, "group"), gy = json_get_int(y, "group");
        if (gx != gy)
                return gx < gy ? -1 : 1;
        return (json_get_int(x, "tid") > json_get_int(y, "tid")) -
               (json_get_int(x, "tid") < json_get_int(y, "tid"));
}

/* Prints the graph for Graphviz: one cluster per group, edges weighted by rate. */
void print_graph_dot(json_object *graph) {
        json_object *tasks = NULL, *edges = NULL;
        json_object_object_get_ex(graph, "tasks", &tasks);
        json_object_object_get_ex(graph, "edges", &edges);
        size_t n_tasks = json_object_array_length(tasks), n_edges = json_object_array_length(edges);

        printf("digraph placed {\n"
               "  graph [rankdir=LR, fontname=sans, label=\"placed wake graph: %zu tasks, "
               "%zu edges (wakeups/s; solid = strong)\"];\n"
               "  node [shape=box, style=rounded, fontname=sans, colorscheme=set312];\n"
               "  edge [fontname=sans, fontsize=10];\n",
               n_tasks, n_edges);
        json_object_array_sort(tasks, task_compare);
        for (size_t i = 0; i < n_tasks; i++) {
                json_object *t = json_object_array_get_idx(tasks, i);
                int64_t group = json_get_int(t, "group");
                if (group == 0) {
                        dot_print_task(t, "  ");
                        continue;
                }
                const char *class = json_get_str(t, "class");
                printf("  subgraph cluster_g%" PRId64 " {\n    label=\"group %" PRId64 "%s%s\";\n"
                       "    style=rounded; color=gray40;\n",
                       group, group, class[0] ? ": " : "", class);
                for (; i < n_tasks; i++) {
                        t = json_object_array_get_idx(tasks, i);
                        if (json_get_int(t, "group") != group) {
                                i--;
                                break;
                        }
                        dot_print_task(t, "    ");
                }
                printf("  }\n");
        }

        double max_rate = 1;
        for (size_t i = 0; i < n_edges; i++)
                max_rate = fmax(max_rate,
                                json_get_double(json_object_array_get_idx(edges, i), "rate"));
        for (size_t i = 0; i < n_edges; i++) {
                json_object *e = json_object_array_get_idx(edges, i), *v;
                double rate = json_get_double(e, "rate");
                double scale = log1p(rate) / log1p(max_rate); /* 0..1, log: rates span decades */
                bool strong =
                        json_object_object_get_ex(e, "strong", &v) && json_object_get_boolean(v);
                printf("  t%" PRId64 " -> t%" PRId64
                       " [label=\"%.*f/s\", penwidth=%.1f, weight=%d, style=%s];\n",
                       json_get_int(e, "waker"), json_get_int(e, "wakee"), rate < 10 ? 1 : 0, rate,
                       0.5 + 4.5 * scale, 1 + (int)lround(9 * scale), strong ? "solid" : "dashed");
        }
        printf("}\n");
}

#define WAKE_LABEL_MAX 40 /* "comm/tid": 15 + 1 + 10 bytes and the NUL, with room */

/* "comm/tid" of a graph task into buf, control characters shown as '?', for a table cell. */
static void graph_task_label(json_object *t, char *buf, size_t size) {
        snprintf(buf, size, "%s/%" PRId64, json_get_str(t, "comm"), json_get_int(t, "tid"));
        for (char *p = buf; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = '?';
}

/* A graph task by its tid, for the edge rows' lookups. */
typedef struct TaskByTid {
        int64_t tid;
        json_object *task;
} TaskByTid;

static int task_tid_compare(const void *a, const void *b) {
        int64_t x = ((const TaskByTid *)a)->tid, y = ((const TaskByTid *)b)->tid;
        return (x > y) - (x < y);
}

static int edge_rate_compare(const void *a, const void *b) {
        double x = json_get_double(*(json_object *const *)a, "rate");
        double y = json_get_double(*(json_object *const *)b, "rate");
        return (x < y) - (x > y); /* fastest first */
}

/* One edge row: its ends by "comm/tid" (found in by_tid, sorted by tid), rate, strength. */
static void print_graph_edge_row(json_object *e, const TaskByTid *by_tid, size_t n_tasks) {
        static const char *const keys[2] = { "waker", "wakee" };
        char ends[2][WAKE_LABEL_MAX];
        json_object *v;

        for (int i = 0; i < 2; i++) {
                TaskByTid key = { .tid = json_get_int(e, keys[i]) };
                const TaskByTid *t =
                        bsearch(&key, by_tid, n_tasks, sizeof(*by_tid), task_tid_compare);
                if (t)
                        graph_task_label(t->task, ends[i], sizeof(ends[i]));
                else
                        snprintf(ends[i], sizeof(ends[i]), "?/%" PRId64, key.tid);
        }
        bool strong = json_object_object_get_ex(e, "strong", &v) && json_object_get_boolean(v);
        printf("%-28s -> %-28s %10.1f  %s\n", ends[0], ends[1], json_get_double(e, "rate"),
               strong ? "strong" : "weak");
}

/*
 * The wake graph for people: the tasks by group, then the edges, fastest
 * first. Rates are wakeups per second, decayed; only strong edges group tasks.
 */
void print_graph_text(json_object *graph) {
        json_object *tasks = NULL, *edges = NULL;
        json_object_object_get_ex(graph, "tasks", &tasks);
        json_object_object_get_ex(graph, "edges", &edges);
        size_t n_tasks = json_object_array_length(tasks), n_edges = json_object_array_length(edges);
        char label[WAKE_LABEL_MAX];

        printf("%zu tasks, %zu edges (wakeups/s, decayed; strong edges group tasks).\n\n", n_tasks,
               n_edges);
        printf("%-6s %-7s %-28s %8s %10s\n", "GROUP", "CLASS", "TASK", "TGID", "WAKES/S");
        json_object_array_sort(tasks, task_compare);
        for (size_t i = 0; i < n_tasks; i++) {
                json_object *t = json_object_array_get_idx(tasks, i);
                const char *class = json_get_str(t, "class");
                graph_task_label(t, label, sizeof(label));
                printf("%-6s %-7s %-28s %8" PRId64 " %10.1f\n",
                       json_get_int(t, "group") ? json_get_str(t, "group") : "-",
                       class[0] ? class : "-", label, json_get_int(t, "tgid"),
                       json_get_double(t, "out_rate"));
        }

        _cleanup_free_ TaskByTid *by_tid = calloc(n_tasks + 1, sizeof(*by_tid));
        if (!by_tid)
                return;
        for (size_t i = 0; i < n_tasks; i++) {
                json_object *t = json_object_array_get_idx(tasks, i);
                by_tid[i] = (TaskByTid){ .tid = json_get_int(t, "tid"), .task = t };
        }
        qsort(by_tid, n_tasks, sizeof(*by_tid), task_tid_compare);
        printf("\n%-28s    %-28s %10s  %s\n", "WAKER", "WAKEE", "RATE/S", "EDGE");
        json_object_array_sort(edges, edge_rate_compare);
        for (size_t i = 0; i < n_edges; i++)
                print_graph_edge_row(json_object_array_get_idx(edges, i), by_tid, n_tasks);
}
