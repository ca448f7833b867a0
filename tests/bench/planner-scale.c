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
 *
 * Workload: 5000 lockstep pairs, 500 meshes of 40 tasks, 100 masters with 64
 * workers each, and the remaining tasks as sparse background noise, which
 * also fills up the edge count.
 */
#include <errno.h>
#include <inttypes.h>
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

int main(int argc, char *argv[]) {
        unsigned runs = 9, n_tasks = 50000;
        size_t n_edges = 200000;
        int c;
        while ((c = getopt(argc, argv, "r:t:e:")) >= 0) {
                if (c == 'r')
                        runs = (unsigned)strtoul(optarg, NULL, 10);
                else if (c == 't')
                        n_tasks = (unsigned)strtoul(optarg, NULL, 10);
                else if (c == 'e')
                        n_edges = strtoul(optarg, NULL, 10);
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
                                g, 1000 + (pid_t)i, 1, (uint64_t)(tick + 1) * 20000000ULL,
                                (uint64_t)(tick + 1) * 100000ULL, (uint64_t)(tick + 1) * 100);
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
        printf("{\"cpus\": %u, \"llcs\": %u, \"tasks\": %zu, \"edges\": %zu, \"groups\": %u, "
               "\"model_update_ms\": %.2f",
               cpuset_count(&topo->online), topo->n_llcs, wake_graph_n_tasks(g), edges, n_groups,
               update_ns / 1e6);

        const char *profiles[] = { "power-first", "balanced", "latency-first" };
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
