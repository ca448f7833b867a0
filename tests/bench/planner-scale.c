/* SPDX-License-Identifier: MIT */
/*
 * Planner at scale: a generated 512-CPU machine (2 packages x 16 LLCs x 8
 * cores x 2 threads), 50k tasks and 200k wake edges through the wake-graph
 * model, then policy_decide() for each profile. Reports the model update
 * and decision times (CPU time of the thread, median and worst of several
 * runs, so other load on a shared machine does not count) and peak memory,
 * as JSON.
 *
 *   planner-scale [-r RUNS] [-t TASKS] [-e EDGES]
 *   planner-scale -g GROUPS [-s] [-r RUNS] [-o FILE]
 *
 * Workload: 5000 lockstep pairs, 500 meshes of 40 tasks, 100 masters with 64
 * workers each, and the remaining tasks as sparse background noise, which
 * also fills up the edge count.
 *
 * With -g, the groups are made directly, GROUPS of them, as a snapshot
 * ("placed --plan --snapshot" input, written to FILE with -o): of every 50
 * groups one master with 16 workers, 4 meshes of 8 tasks and 45 pairs, all
 * light (pairs 0.2-1.2% of a CPU, meshes 3%, fan-outs 6%: 40,000 groups keep
 * about 400 of the 512 CPUs busy). With -s they share tasks: each group's
 * first task is the one before's last, as a model that merged nothing would
 * list them. Reported apart: parsing the snapshot's JSON (as placed --plan
 * does first) and policy_decide() on what was parsed, each run from no
 * previous plan, as placed --plan decides.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "policy.h"
#include "topology.h"
#include "wake-graph.h"

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static unsigned rnd(unsigned n) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return (unsigned)(rng % n);
}

static void add_task(WakeBatch *b, pid_t tid, uint64_t wakeups) {
        WakeTaskRecord t = { .id = { .tid = tid, .start_time = 1 },
                             .tgid = tid,
                             .wakeups = wakeups };
        snprintf(t.comm, sizeof(t.comm), "t%d", (int)tid);
        if (wake_batch_add_task(b, &t) < 0)
                exit(1);
}

static void edge(WakeBatch *b, pid_t a, pid_t z, uint64_t n) {
        if (wake_batch_add_edge(b, a, z, n) < 0)
                exit(1);
}

/* One second's worth of wakeups. Return: edges added. */
static size_t fill_batch(WakeBatch *b, unsigned n_tasks, size_t n_edges) {
        pid_t tid = 1000;
        size_t before;

        for (unsigned i = 0; i < n_tasks; i++)
                add_task(b, 1000 + (pid_t)i, 100);
        for (int i = 0; i < 5000; i++, tid += 2) { /* pairs */
                edge(b, tid, tid + 1, 20000);
                edge(b, tid + 1, tid, 20000);
        }
        for (int m = 0; m < 500; m++, tid += 40) /* meshes: each wakes 6 others */
                for (int i = 0; i < 40; i++)
                        for (int k = 1; k <= 6; k++)
                                edge(b, tid + i, tid + (i + k * 7) % 40, 500);
        for (int f = 0; f < 100; f++, tid += 65) /* fan-outs: master, 64 workers */
                for (int w = 1; w <= 64; w++) {
                        edge(b, tid, tid + w, 300);
                        edge(b, tid + w, tid, 300);
                }
        before = b->n_edges;
        pid_t noise_first = tid, noise_n = 1000 + (pid_t)n_tasks - tid;
        while (b->n_edges < n_edges && noise_n > 1)
                edge(b, noise_first + (pid_t)rnd((unsigned)noise_n),
                     noise_first + (pid_t)rnd((unsigned)noise_n), 1);
        (void)before;
        return b->n_edges;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static const char *const profiles[] = { "power-first", "balanced", "latency-first" };

/* Prints ", \"decide_ms_P\": median, \"decide_max_ms_P\": worst" for a profile. */
static void print_times(const char *key, const char *profile, uint64_t *times, unsigned runs) {
        qsort(times, runs, sizeof(*times), cmp_u64);
        printf(", \"%s_ms%s%s\": %.2f, \"%s_max_ms%s%s\": %.2f", key, profile ? "_" : "",
               profile ? profile : "", times[runs / 2] / 1e6, key, profile ? "_" : "",
               profile ? profile : "", times[runs - 1] / 1e6);
}

/* One generated group: n tasks from *next_tid on (the first is shared_tid
 * when that is not 0), on the machine's CPUs, where a pair ran on two CPUs
 * and a larger group on one LLC. */
static int make_group(Group *g, uint64_t id, GroupClass class, unsigned n, pid_t shared_tid,
                      pid_t *next_tid, const Topology *topo) {
        g->id = id;
        g->class = class;
        g->tasks = calloc(n, sizeof(TaskId));
        if (!g->tasks)
                return -ENOMEM;
        for (unsigned k = 0; k < n; k++) {
                g->tasks[k].tid = k == 0 && shared_tid ? shared_tid : (*next_tid)++;
                g->tasks[k].start_time = 1;
        }
        g->n_tasks = n;
        g->runq_delay_us = 5;
        g->cpus = topo->online;
        cpuset_zero(&g->ran_on);
        if (class == GROUP_PAIR) {
                g->util = 0.002 + rnd(1000) / 100000.0;
                g->wake_rate = 50 + rnd(150); /* light, but worth placing */
                cpuset_set(&g->ran_on, (int)rnd(topo->n_cpus));
                cpuset_set(&g->ran_on, (int)rnd(topo->n_cpus));
        } else {
                g->util = class == GROUP_MESH ? 0.03 : 0.06;
                g->wake_rate = class == GROUP_MESH ? 500 : 1000;
                g->ran_on = topo->llcs[rnd(topo->n_llcs)].cpus;
        }
        g->handoff_rate = g->wake_rate;
        return 0;
}

static int snapshot_mode(const Topology *topo, unsigned runs, unsigned n_groups, bool shared,
                         const char *out) {
        PolicySnapshot s = { .now_ns = 100000000000ULL };
        pid_t next_tid = 1000;
        snprintf(s.profile, sizeof(s.profile), "balanced");
        s.groups = calloc(n_groups, sizeof(Group));
        s.loads = calloc(topo->n_cpus, sizeof(CpuLoad));
        if (!s.groups || !s.loads)
                return -ENOMEM;
        s.n_loads = topo->n_cpus;
        for (unsigned c = 0; c < topo->n_cpus; c++)
                s.loads[c].busy = 0.5;
        for (unsigned i = 0; i < n_groups; i++) {
                unsigned kind = i % 50;
                GroupClass class = kind == 0 ? GROUP_FANOUT : kind <= 4 ? GROUP_MESH : GROUP_PAIR;
                unsigned n = class == GROUP_FANOUT ? 17 : class == GROUP_MESH ? 8 : 2;
                pid_t first = shared && i > 0
                                      ? s.groups[i - 1].tasks[s.groups[i - 1].n_tasks - 1].tid
                                      : 0;
                if (make_group(&s.groups[i], i + 1, class, n, first, &next_tid, topo) < 0)
                        return -ENOMEM;
                s.n_groups++;
        }
        char *text = NULL;
        if (policy_snapshot_to_json(&s, &text) < 0)
                return -ENOMEM;
        if (out) {
                FILE *f = fopen(out, "w");
                if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
                        fprintf(stderr, "planner-scale: cannot write %s: %s\n", out,
                                strerror(errno));
                        return -EIO;
                }
        }

        uint64_t *times = calloc(runs, sizeof(*times));
        PolicySnapshot *parsed = NULL;
        if (!times)
                return -ENOMEM;
        for (unsigned r = 0; r < runs; r++) {
                policy_snapshot_free(parsed);
                uint64_t start = now_ns();
                if (policy_snapshot_from_json(text, &parsed) < 0)
                        return -EINVAL;
                times[r] = now_ns() - start;
        }
        printf("{\"mode\": \"snapshot\", \"shared\": %s, \"cpus\": %u, \"llcs\": %u, "
               "\"tasks\": %d, \"groups\": %u, \"snapshot_mb\": %.1f",
               shared ? "true" : "false", cpuset_count(&topo->online), topo->n_llcs,
               (int)(next_tid - 1000), n_groups, strlen(text) / 1e6);
        print_times("parse", NULL, times, runs);

        Profile latency;
        if (profile_defaults("latency-first", &latency) < 0)
                return -EINVAL;
        for (size_t p = 0; p < 3; p++) {
                Profile prof;
                if (profile_defaults(profiles[p], &prof) < 0)
                        return -EINVAL;
                for (unsigned r = 0; r < runs; r++) {
                        PolicyInput in = { .topo = topo,
                                           .groups = parsed->groups,
                                           .n_groups = parsed->n_groups,
                                           .loads = parsed->loads,
                                           .n_loads = parsed->n_loads,
                                           .profile = &prof,
                                           .now_ns = parsed->now_ns,
                                           .rules = parsed->rules,
                                           .latency_profile = &latency };
                        Plan *plan;
                        uint64_t start = now_ns();
                        if (policy_decide(&in, &plan) < 0)
                                return -EINVAL;
                        times[r] = now_ns() - start;
                        plan_free(plan);
                }
                print_times("decide", profiles[p], times, runs);
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf(", \"peak_rss_mb\": %.1f}\n", ru.ru_maxrss / 1024.0);

        free(times);
        free(text);
        policy_snapshot_free(parsed);
        group_array_free(s.groups, s.n_groups);
        free(s.loads);
        return 0;
}

int main(int argc, char *argv[]) {
        unsigned runs = 9, n_tasks = 50000, want_groups = 0;
        size_t n_edges = 200000;
        bool shared = false;
        const char *out = NULL;
        int c;
        while ((c = getopt(argc, argv, "r:t:e:g:so:")) >= 0) {
                if (c == 'r')
                        runs = (unsigned)strtoul(optarg, NULL, 10);
                else if (c == 't')
                        n_tasks = (unsigned)strtoul(optarg, NULL, 10);
                else if (c == 'e')
                        n_edges = strtoul(optarg, NULL, 10);
                else if (c == 'g')
                        want_groups = (unsigned)strtoul(optarg, NULL, 10);
                else if (c == 's')
                        shared = true;
                else if (c == 'o')
                        out = optarg;
                else
                        return 2;
        }
        if (runs == 0 || n_tasks < 30000) {
                fprintf(stderr, "planner-scale: need runs >= 1 and tasks >= 30000\n");
                return 2;
        }

        Topology *topo;
        if (topo_new_uniform(2, 16, 8, 2, &topo) < 0)
                return 1;
        if (want_groups > 0) {
                int r = snapshot_mode(topo, runs, want_groups, shared, out);
                topo_free(topo);
                return r < 0 ? 1 : 0;
        }
        WakeGraphParams params;
        wake_graph_params_default(&params);
        params.llc_size = cpuset_count(&topo->llcs[0].cpus);
        WakeGraph *g;
        if (wake_graph_new(&params, &g) < 0)
                return 1;

        /* Two ticks of input, with run time so groups carry utilisation. */
        WakeBatch b = { 0 };
        Group *groups = NULL;
        unsigned n_groups = 0;
        uint64_t t0 = 1000000000ULL, update_ns = 0;
        size_t edges = 0;
        for (int tick = 0; tick < 2; tick++) {
                uint64_t now = t0 + (uint64_t)tick * 1000000000ULL;
                wake_batch_reset(&b);
                b.now_ns = now;
                edges = fill_batch(&b, n_tasks, n_edges);
                if (wake_graph_ingest(g, &b, now) < 0)
                        return 1;
                for (unsigned i = 0; i < n_tasks; i++)
                        (void)wake_graph_task_stats(
                                g, 1000 + (pid_t)i, 1,
                                &(WakeTaskCounters){ .run_ns = (uint64_t)(tick + 1) * 20000000ULL,
                                                     .run_delay_ns =
                                                             (uint64_t)(tick + 1) * 100000ULL,
                                                     .timeslices = (uint64_t)(tick + 1) * 100 });
                group_array_free(groups, n_groups);
                uint64_t start = now_ns();
                if (wake_graph_update(g, now, &groups, &n_groups) < 0)
                        return 1;
                update_ns = now_ns() - start;
        }
        /* As the daemon fills them in: allowed everywhere, and where they ran
         * (a pair on one or two CPUs, a larger group within one LLC). */
        for (unsigned i = 0; i < n_groups; i++) {
                groups[i].cpus = topo->online;
                cpuset_zero(&groups[i].ran_on);
                if (groups[i].n_tasks == 2) {
                        cpuset_set(&groups[i].ran_on, (int)rnd(topo->n_cpus));
                        cpuset_set(&groups[i].ran_on, (int)rnd(topo->n_cpus));
                } else
                        groups[i].ran_on = topo->llcs[rnd(topo->n_llcs)].cpus;
        }

        CpuLoad *loads = calloc(topo->n_cpus, sizeof(*loads));
        uint64_t *times = calloc(runs, sizeof(*times));
        if (!loads || !times)
                return 1;
        printf("{\"mode\": \"wake-graph\", \"cpus\": %u, \"llcs\": %u, \"tasks\": %zu, "
               "\"edges\": %zu, \"groups\": %u, "
               "\"model_update_ms\": %.2f",
               cpuset_count(&topo->online), topo->n_llcs, wake_graph_n_tasks(g), edges, n_groups,
               update_ns / 1e6);

        for (size_t p = 0; p < 3; p++) {
                Profile prof;
                if (profile_defaults(profiles[p], &prof) < 0)
                        return 1;
                Plan *prev = NULL;
                for (unsigned r = 0; r < runs; r++) {
                        PolicyInput in = { .topo = topo,
                                           .groups = groups,
                                           .n_groups = n_groups,
                                           .loads = loads,
                                           .n_loads = topo->n_cpus,
                                           .profile = &prof,
                                           .prev = prev,
                                           .now_ns = t0 + 2000000000ULL + r * 1000000000ULL };
                        Plan *plan;
                        uint64_t start = now_ns();
                        if (policy_decide(&in, &plan) < 0)
                                return 1;
                        times[r] = now_ns() - start;
                        plan_free(prev);
                        prev = plan;
                }
                plan_free(prev);
                qsort(times, runs, sizeof(*times), cmp_u64);
                printf(", \"decide_ms_%s\": %.2f, \"decide_max_ms_%s\": %.2f", profiles[p],
                       times[runs / 2] / 1e6, profiles[p], times[runs - 1] / 1e6);
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf(", \"peak_rss_mb\": %.1f}\n", ru.ru_maxrss / 1024.0);

        free(times);
        free(loads);
        group_array_free(groups, n_groups);
        wake_batch_done(&b);
        wake_graph_free(g);
        topo_free(topo);
        return 0;
}
