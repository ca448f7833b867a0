/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/wake-graph.c and the flip arithmetic in lib/wake.h, on
 * synthetic event streams: each scenario generates timestamped wakeups per
 * tick, aggregates them the way a wake source does (flips recorded per event,
 * edge counts summed) and checks the groups the model forms.
 *
 * The random scenarios print their seed; PLACED_TEST_SEED=N reruns one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "util.h"
#include "wake-graph.h"
#include "wake-source.h"
#include "hostile.h"

#define MAX_TID 70000
#define TICK_NS NSEC_PER_SEC

static uint64_t rng_state;

static uint64_t rng_next(void) {
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static int setup_seed(void **state) {
        const char *env = getenv("PLACED_TEST_SEED");
        rng_state = env ? strtoull(env, NULL, 0) : UINT64_C(4);
        print_message("seed %" PRIu64 " (set PLACED_TEST_SEED to override)\n", rng_state);
        return 0;
}

/* ---- a tiny event-stream simulator ------------------------------------ */

typedef struct Sim {
        WakeGraph *graph;
        uint64_t now_ns; /* end of the current tick */
        struct wake_flips flips[MAX_TID];
        uint64_t start_time[MAX_TID];
        pid_t tgid[MAX_TID];
        uint64_t wakeups[MAX_TID];
        bool seen[MAX_TID];
        U64Map *edge_index; /* waker << 32 | wakee -> index in batch.edges */
        WakeBatch batch;
        Group *groups;
        unsigned n_groups;
} Sim;

static Sim *sim_new(const WakeGraphParams *p) {
        Sim *s = calloc(1, sizeof(Sim));
        assert_non_null(s);
        assert_int_equal(wake_graph_new(p, &s->graph), 0);
        assert_int_equal(u64map_new(&s->edge_index), 0);
        s->now_ns = 100 * NSEC_PER_SEC;
        return s;
}

static void sim_free(Sim *s) {
        group_array_free(s->groups, s->n_groups);
        wake_batch_done(&s->batch);
        u64map_free(s->edge_index);
        wake_graph_free(s->graph);
        free(s);
}

/* One wakeup at ts_ns, aggregated like the perf and replay sources do. */
static void sim_wake(Sim *s, pid_t waker, pid_t wakee, uint64_t ts_ns) {
        uint64_t key = (uint64_t)waker << 32 | (uint32_t)wakee;
        uint32_t i;
        wake_flips_record(&s->flips[waker], (uint32_t)wakee, ts_ns);
        s->wakeups[waker]++;
        s->seen[waker] = s->seen[wakee] = true;
        if (u64map_get(s->edge_index, key, &i)) {
                s->batch.edges[i].count++;
                return;
        }
        assert_int_equal(u64map_put(s->edge_index, key, (uint32_t)s->batch.n_edges), 0);
        assert_int_equal(wake_batch_add_edge(&s->batch, waker, wakee, 1), 0);
}

/* Ends the tick: hands the batch to the model and runs an update. */
static void sim_tick(Sim *s) {
        for (pid_t tid = 1; tid < MAX_TID; tid++) {
                if (!s->seen[tid])
                        continue;
                WakeTaskRecord rec = {
                        .id = { .tid = tid, .start_time = s->start_time[tid] },
                        .tgid = s->tgid[tid] ? s->tgid[tid] : tid,
                        .wakeups = s->wakeups[tid],
                        .flips = s->flips[tid],
                        .has_flips = s->wakeups[tid] > 0,
                };
                snprintf(rec.comm, sizeof(rec.comm), "t%d", (int)tid);
                assert_int_equal(wake_batch_add_task(&s->batch, &rec), 0);
                s->seen[tid] = false;
                s->wakeups[tid] = 0;
        }
        s->batch.now_ns = s->now_ns;
        assert_int_equal(wake_graph_ingest(s->graph, &s->batch, s->now_ns), 0);
        s->groups = group_array_free(s->groups, s->n_groups);
        s->n_groups = 0;
        assert_int_equal(wake_graph_update(s->graph, s->now_ns, &s->groups, &s->n_groups), 0);
        wake_batch_reset(&s->batch);
        u64map_clear(s->edge_index);
        s->now_ns += TICK_NS;
}

/* The time of event k of n spread over the current tick. */
static uint64_t sim_ts(const Sim *s, unsigned k, unsigned n) {
        return s->now_ns - TICK_NS + (uint64_t)k * TICK_NS / n;
}

static const Group *find_group_with(const Sim *s, pid_t tid) {
        for (unsigned i = 0; i < s->n_groups; i++)
                for (unsigned j = 0; j < s->groups[i].n_tasks; j++)
                        if (s->groups[i].tasks[j].tid == tid)
                                return &s->groups[i];
        return NULL;
}

static void print_groups(const Sim *s) {
        for (unsigned i = 0; i < s->n_groups; i++)
                print_message("group %" PRIu64 " %s n=%u rate=%.0f first=%d\n", s->groups[i].id,
                              group_class_to_string(s->groups[i].class), s->groups[i].n_tasks,
                              s->groups[i].wake_rate, (int)s->groups[i].tasks[0].tid);
}

/* Asserts that tids lo..hi (inclusive) and nothing else form one group of class c. */
static const Group *assert_group(const Sim *s, pid_t lo, pid_t hi, GroupClass c) {
        const Group *g = find_group_with(s, lo);
        if (!g)
                print_groups(s);
        assert_non_null(g);
        if (g->class != c)
                print_groups(s);
        assert_int_equal(g->class, c);
        assert_int_equal(g->n_tasks, hi - lo + 1);
        for (pid_t t = lo; t <= hi; t++)
                assert_ptr_equal(find_group_with(s, t), g);
        return g;
}

/* ---- scenarios ---------------------------------------------------------- */

static void tick_pair(Sim *s, pid_t a, pid_t b, unsigned round_trips) {
        for (unsigned k = 0; k < round_trips; k++) {
                sim_wake(s, a, b, sim_ts(s, 2 * k, 2 * round_trips));
                sim_wake(s, b, a, sim_ts(s, 2 * k + 1, 2 * round_trips));
        }
}

static void test_pair(void **state) {
        Sim *s = sim_new(NULL);
        tick_pair(s, 101, 102, 5000);
        sim_tick(s);
        const Group *g = assert_group(s, 101, 102, GROUP_PAIR);
        assert_int_equal(s->n_groups, 1);
        /* bias correction: one tick shows the real rate, 10000 wakeups/s */
        assert_true(g->wake_rate > 9000 && g->wake_rate < 11000);
        tick_pair(s, 101, 102, 5000);
        sim_tick(s);
        g = assert_group(s, 101, 102, GROUP_PAIR);
        assert_int_equal(s->n_groups, 1);
        /* A task's group and its size, as the pipeline's note rules read them. */
        WakeGraphTask t;
        assert_int_equal(wake_graph_get_task(s->graph, 102, s->now_ns, &t), 1);
        assert_int_equal(t.group_id, g->id);
        assert_int_equal(t.group_size, 2);
        sim_free(s);
}

/* master 200 wakes 64 workers round-robin; with wake_back the workers answer. */
static void run_fanout(bool wake_back) {
        Sim *s = sim_new(NULL);
        for (int tick = 0; tick < 3; tick++) {
                unsigned n = 64 * 100;
                for (unsigned k = 0; k < n; k++) {
                        pid_t w = 201 + (pid_t)(k % 64);
                        sim_wake(s, 200, w, sim_ts(s, 2 * k, 2 * n));
                        if (wake_back)
                                sim_wake(s, w, 200, sim_ts(s, 2 * k + 1, 2 * n));
                }
                sim_tick(s);
        }
        const Group *g = assert_group(s, 200, 264, GROUP_FANOUT);
        assert_int_equal(g->tasks[0].tid, 200); /* the master first */
        assert_int_equal(s->n_groups, 1);
        WakeGraphTask t;
        assert_int_equal(wake_graph_get_task(s->graph, 230, s->now_ns, &t), 1);
        assert_int_equal(t.group_size, 65);
        sim_free(s);
}

static void test_fanout(void **state) {
        run_fanout(true);
        run_fanout(false);
}

/* A master handing work to 8 workers that share a contended lock: every
 * other round a worker wakes the next one (the lock's hand-off), so a third
 * of the group's wakeups do not touch the master. Still a fanout: the master
 * passes wake_wide()'s flip test by far (live, under load: 0.67-0.76 of the
 * rate on the master's edges, master flips 10-30x a worker's). */
static void test_fanout_lock_handoff(void **state) {
        Sim *s = sim_new(NULL);
        for (int tick = 0; tick < 3; tick++) {
                unsigned n = 8 * 200;
                for (unsigned k = 0; k < n; k++) {
                        pid_t w = 301 + (pid_t)(k % 8);
                        sim_wake(s, 300, w, sim_ts(s, 2 * k, 2 * n));
                        if (k % 2)
                                sim_wake(s, w, 301 + (pid_t)((k + 1) % 8),
                                         sim_ts(s, 2 * k + 1, 2 * n));
                }
                sim_tick(s);
        }
        const Group *g = assert_group(s, 300, 308, GROUP_FANOUT);
        assert_int_equal(g->tasks[0].tid, 300);
        sim_free(s);
}

/* n tasks from base, each waking the others round-robin, per_task wakeups per tick. */
static void tick_mesh(Sim *s, pid_t base, unsigned n, unsigned per_task) {
        for (unsigned k = 0; k < per_task; k++)
                for (unsigned i = 0; i < n; i++) {
                        unsigned j = (i + 1 + k % (n - 1)) % n;
                        sim_wake(s, base + (pid_t)i, base + (pid_t)j,
                                 sim_ts(s, k * n + i, per_task * n));
                }
}

static void test_mesh(void **state) {
        Sim *s = sim_new(NULL);
        for (int tick = 0; tick < 3; tick++) {
                tick_mesh(s, 1000, 40, 39 * 100);
                sim_tick(s);
        }
        assert_group(s, 1000, 1039, GROUP_MESH);
        assert_int_equal(s->n_groups, 1);
        sim_free(s);
}

/* A pair A=500,B=501 that also talks a little to a busy mesh 1000..1019. */
static void test_pair_in_mesh(void **state) {
        Sim *s = sim_new(NULL);
        for (int tick = 0; tick < 3; tick++) {
                tick_mesh(s, 1000, 20, 19 * 200);
                tick_pair(s, 500, 501, 5000);
                for (unsigned k = 0; k < 30; k++)
                        for (pid_t m = 1000; m < 1003; m++) {
                                uint64_t ts = sim_ts(s, k, 30);
                                sim_wake(s, 500, m, ts);
                                sim_wake(s, m, 500, ts);
                                sim_wake(s, 501, m + 3, ts);
                                sim_wake(s, m + 3, 501, ts);
                        }
                sim_tick(s);
        }
        assert_group(s, 500, 501, GROUP_PAIR);
        assert_group(s, 1000, 1019, GROUP_MESH);
        assert_int_equal(s->n_groups, 2);
        sim_free(s);
}

/* 300 tasks waking random others a few times a second: no group. */
static void test_noise(void **state) {
        Sim *s = sim_new(NULL);
        for (int tick = 0; tick < 10; tick++) {
                for (unsigned k = 0; k < 1000; k++) {
                        pid_t a = 2000 + (pid_t)(rng_next() % 300),
                              b = 2000 + (pid_t)(rng_next() % 300);
                        if (a != b)
                                sim_wake(s, a, b, sim_ts(s, k, 1000));
                }
                sim_tick(s);
                for (unsigned i = 0; i < s->n_groups; i++)
                        assert_int_equal(s->groups[i].class, GROUP_SOLO);
        }
        assert_int_equal(s->n_groups, 0);
        assert_true(wake_graph_n_tasks(s->graph) >= 290);
        sim_free(s);
}

/* A busy pair among the noise is still found, and only it. */
static void test_pair_in_noise(void **state) {
        Sim *s = sim_new(NULL);
        for (int tick = 0; tick < 3; tick++) {
                for (unsigned k = 0; k < 1000; k++) {
                        pid_t a = 2000 + (pid_t)(rng_next() % 300),
                              b = 2000 + (pid_t)(rng_next() % 300);
                        if (a != b)
                                sim_wake(s, a, b, sim_ts(s, k, 1000));
                }
                tick_pair(s, 2000, 2001, 3000);
                sim_tick(s);
        }
        assert_group(s, 2000, 2001, GROUP_PAIR);
        assert_int_equal(s->n_groups, 1);
        sim_free(s);
}

/* ---- flips -------------------------------------------------------------- */

typedef struct FlipStep {
        uint64_t t_ms;
        uint32_t wakee;
        uint32_t flips;      /* expected after record */
        uint32_t peek_later; /* expected wake_flips_peek() 2 s later */
} FlipStep;

static void test_flips_kernel(void **state) {
        /* Worked by hand from record_wakee(): halve once if now > decay_ts + 1 s
         * (only once, however long ago), then +1 when the wakee changes. */
        static const FlipStep steps[] = {
                { 0, 7, 1, 0 },  /* first wakeup: last_wakee was none; decay_ts 0 */
                { 10, 7, 1, 0 }, /* same wakee: no flip */
                { 20, 8, 2, 1 },     { 30, 7, 3, 1 },
                { 1000, 8, 4, 2 }, /* exactly 1 s after decay_ts 0: no halving yet */
                { 1001, 9, 3, 1 }, /* > 1 s: 4 -> 2, then +1 */
                { 1500, 9, 3, 1 },   { 5000, 9, 1, 0 },  /* 3.5 s idle: halved once only */
                { 5001, 10, 2, 1 },  { 6001, 11, 2, 1 }, /* 6.001 > 5.0 + 1: 2 -> 1, then +1 */
                { 60000, 11, 1, 0 }, /* a minute later: still one halving, same wakee */
        };
        struct wake_flips f = {};
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                uint64_t now = steps[i].t_ms * 1000000;
                wake_flips_record(&f, steps[i].wakee, now);
                print_message("t=%" PRIu64 " ms wakee %u -> flips %u\n", steps[i].t_ms,
                              steps[i].wakee, f.flips);
                assert_int_equal(f.flips, steps[i].flips);
                assert_int_equal(f.last_wakee, steps[i].wakee);
                assert_int_equal(wake_flips_peek(&f, now + 2 * NSEC_PER_SEC), steps[i].peek_later);
                assert_int_equal(wake_flips_peek(&f, now), f.flips);
        }
}

/* Round-robin over N wakees at a steady rate settles where the kernel's does:
 * between R and 2R flips for R wakeups per second. */
static void test_flips_steady(void **state) {
        struct wake_flips f = {};
        unsigned rate = 1000;
        for (unsigned k = 0; k < 10 * rate; k++)
                wake_flips_record(&f, 1 + k % 4, (uint64_t)k * NSEC_PER_SEC / rate);
        assert_true(f.flips >= rate && f.flips <= 2 * rate);
        /* a task that always wakes the same one has no flips left */
        struct wake_flips one = {};
        for (unsigned k = 0; k < 10 * rate; k++)
                wake_flips_record(&one, 5, (uint64_t)k * NSEC_PER_SEC / rate);
        assert_int_equal(one.flips, 0);
}

/* ---- identity, exit, ageing, ids, stats ----------------------------------- */

static void test_exit(void **state) {
        Sim *s = sim_new(NULL);
        tick_pair(s, 101, 102, 1000);
        sim_tick(s);
        assert_group(s, 101, 102, GROUP_PAIR);
        assert_int_equal(wake_graph_n_edges(s->graph), 2);
        assert_int_equal(wake_graph_task_exit(s->graph, 101), 1);
        assert_int_equal(wake_graph_task_exit(s->graph, 101), 0);
        WakeGraphTask t;
        assert_int_equal(wake_graph_get_task(s->graph, 101, s->now_ns, &t), 0);
        sim_tick(s);
        assert_int_equal(s->n_groups, 0);
        assert_int_equal(wake_graph_n_tasks(s->graph), 1);
        assert_int_equal(wake_graph_get_task(s->graph, 102, s->now_ns, &t), 1);
        assert_int_equal(t.group_id, 0); /* alone now: in no group, of no size */
        assert_int_equal(t.group_size, 0);
        assert_int_equal(wake_graph_n_edges(s->graph), 0);
        sim_free(s);
}

static void test_ageing(void **state) {
        Sim *s = sim_new(NULL);
        tick_pair(s, 101, 102, 1000);
        sim_tick(s);
        assert_int_equal(s->n_groups, 1);
        for (int i = 0; i < 12; i++)
                sim_tick(s); /* nothing happens for 12 s */
        assert_int_equal(s->n_groups, 0);
        assert_int_equal(wake_graph_n_tasks(s->graph), 0);
        assert_int_equal(wake_graph_n_edges(s->graph), 0);
        sim_free(s);
}

/*
 * A rested sampler (wake_source_rest()) sees no wakeups, which says nothing
 * of the tasks: time it did not watch neither decays the edges nor ages the
 * tasks, so a pair stays a pair, at its rate, through 30 s of rest, and
 * after it ages on watched time alone; half a tick watched decays it by
 * half a tick's worth.
 */
static void test_unwatched(void **state) {
        Sim *s = sim_new(NULL);
        for (int i = 0; i < 20; i++) { /* 10 half-lives: the rate's bias correction is done */
                tick_pair(s, 101, 102, 1000);
                sim_tick(s);
        }
        const Group *g = assert_group(s, 101, 102, GROUP_PAIR);
        double rate = g->wake_rate;
        uint64_t id = g->id;
        for (int i = 0; i < 30; i++) {
                s->batch.unwatched_ns = TICK_NS;
                sim_tick(s);
                g = assert_group(s, 101, 102, GROUP_PAIR);
                assert_int_equal(g->id, id);
                assert_true(fabs(g->wake_rate - rate) < 1e-9);
        }
        /* Half of a tick watched, with no wakeups in it: a half tick's decay. */
        s->batch.unwatched_ns = TICK_NS / 2;
        sim_tick(s);
        g = assert_group(s, 101, 102, GROUP_PAIR);
        double half = exp2(-0.5e9 / 2e9); /* the half-life: 2 s */
        print_message("rate %.1f -> %.1f (%.4f, expected %.4f)\n", rate, g->wake_rate,
                      g->wake_rate / rate, half);
        assert_true(fabs(g->wake_rate / rate - half) < 0.01);
        /* Watched and idle: gone after task_idle_ns (10 s) of watched time. */
        for (int i = 0; i < 12; i++)
                sim_tick(s);
        assert_int_equal(s->n_groups, 0);
        assert_int_equal(wake_graph_n_tasks(s->graph), 0);
        sim_free(s);
}

static void test_tid_reuse(void **state) {
        Sim *s = sim_new(NULL);
        s->start_time[101] = 1000;
        s->start_time[102] = 1001;
        tick_pair(s, 101, 102, 1000);
        sim_tick(s);
        assert_group(s, 101, 102, GROUP_PAIR);

        /* 101 exits unseen and a new task gets its TID: it only wakes 103 */
        s->start_time[101] = 5000;
        for (unsigned k = 0; k < 1000; k++)
                sim_wake(s, 101, 103, sim_ts(s, k, 1000));
        sim_tick(s);
        WakeGraphTask t;
        assert_int_equal(wake_graph_get_task(s->graph, 101, s->now_ns, &t), 1);
        assert_int_equal(t.id.start_time, 5000);
        WakeGraphEdge *edges;
        size_t n;
        assert_int_equal(wake_graph_get_edges(s->graph, &edges, &n), 0);
        for (size_t i = 0; i < n; i++) /* the old 101 <-> 102 edges are gone */
                assert_false(edges[i].wakee == 102 || edges[i].waker == 102);
        free(edges);
        assert_null(find_group_with(s, 102));

        /* a stats reading with another start time also replaces the task */
        assert_int_equal(
                wake_graph_task_stats(
                        s->graph, 101, 5000,
                        &(WakeTaskCounters){ .run_ns = 10, .run_delay_ns = 10, .timeslices = 1 }),
                1);
        assert_int_equal(
                wake_graph_task_stats(
                        s->graph, 101, 6000,
                        &(WakeTaskCounters){ .run_ns = 10, .run_delay_ns = 10, .timeslices = 1 }),
                0);
        assert_int_equal(wake_graph_get_task(s->graph, 101, s->now_ns, &t), 0);
        sim_free(s);
}

static void test_ids_stable(void **state) {
        Sim *s = sim_new(NULL);
        uint64_t pair_id = 0, mesh_id = 0;
        for (int tick = 0; tick < 8; tick++) {
                tick_pair(s, 101, 102, 2000);
                /* a mesh of 10 that loses one member at tick 4 and gains two at 6 */
                unsigned n = tick < 4 ? 10 : tick < 6 ? 9 : 11;
                tick_mesh(s, tick < 4 ? 1000 : 1001, n, 300);
                if (tick >= 3)
                        tick_pair(s, 301, 302, 2000); /* a second pair appears */
                sim_tick(s);
                const Group *p = find_group_with(s, 101), *m = find_group_with(s, 1005);
                assert_non_null(p);
                assert_non_null(m);
                if (tick == 0) {
                        pair_id = p->id;
                        mesh_id = m->id;
                        assert_int_not_equal(pair_id, mesh_id);
                }
                assert_int_equal(p->id, pair_id);
                assert_int_equal(m->id, mesh_id);
                const Group *q = find_group_with(s, 301);
                if (q) {
                        assert_int_not_equal(q->id, pair_id);
                        assert_int_not_equal(q->id, mesh_id);
                }
        }
        /* the pair breaks up: 101 now only talks to 103 (a new pair, new id) */
        for (int tick = 0; tick < 10; tick++) {
                tick_pair(s, 101, 103, 2000);
                sim_tick(s);
        }
        const Group *p = find_group_with(s, 101);
        assert_non_null(p);
        assert_int_equal(p->n_tasks, 2);
        assert_int_equal(p->tasks[1].tid, 103);
        assert_int_not_equal(p->id, pair_id);
        sim_free(s);
}

static void test_util_and_delay(void **state) {
        Sim *s = sim_new(NULL);
        tick_pair(s, 101, 102, 1000);
        sim_tick(s);
        uint64_t run = 0, delay = 0, slices = 0, delay2 = 0, io = 0;
        for (int tick = 0; tick < 3; tick++) {
                /* each task: 0.6 s of CPU per 1 s tick; 101 waits 2 ms over
                 * 1000 schedulings (2 us each), 102 waits 8 ms over 250 (32 us) */
                run += 600 * 1000000ULL;
                delay += 2 * 1000000ULL;
                delay2 += 8 * 1000000ULL;
                slices += 1000;
                io += 3000000; /* 101 moves 3 MB a tick through read and write, 102 none */
                tick_pair(s, 101, 102, 1000);
                assert_int_equal(wake_graph_task_stats(s->graph, 101, 0,
                                                       &(WakeTaskCounters){ .run_ns = run,
                                                                            .run_delay_ns = delay,
                                                                            .timeslices = slices,
                                                                            .io_bytes = io }),
                                 1);
                assert_int_equal(
                        wake_graph_task_stats(s->graph, 102, 0,
                                              &(WakeTaskCounters){ .run_ns = run,
                                                                   .run_delay_ns = delay2,
                                                                   .timeslices = slices / 4 }),
                        1);
                assert_int_equal(wake_graph_task_stats(s->graph, 999, 0,
                                                       &(WakeTaskCounters){ .run_ns = run,
                                                                            .run_delay_ns = delay,
                                                                            .timeslices = slices }),
                                 0);
                sim_tick(s);
                const Group *g = assert_group(s, 101, 102, GROUP_PAIR);
                /* The first reading is only a baseline: zero run time then
                 * says nothing about the load, and the group says so. */
                assert_int_equal(g->unmeasured, tick == 0);
                if (tick == 0)
                        continue;
                assert_true(g->util > 1.19 && g->util < 1.21);
                /* (2 ms + 8 ms) / 1250 waits = 8 us a wait, not 5 ms a tick */
                assert_int_equal(g->runq_delay_us, 8);
                /* 10 ms of waiting in a 1 s tick: a hundredth of a task waited */
                assert_true(g->runq_wait > 0.0099 && g->runq_wait < 0.0101);
                /* Its bytes over the tick, not since the start. */
                assert_true(g->io_rate > 2.99e6 && g->io_rate < 3.01e6);
        }
        sim_free(s);
}

/* Threads of one process bind at a rate too low a share of their wakeups. */
static void test_threads_of_process(void **state) {
        Sim *s = sim_new(NULL);
        s->tgid[600] = s->tgid[601] = 600;
        for (int tick = 0; tick < 3; tick++) {
                /* 600 and 601 each wake 100 others 100x/s and each other 40x/s */
                for (unsigned k = 0; k < 100; k++)
                        for (pid_t o = 0; o < 100; o++) {
                                uint64_t ts = sim_ts(s, k, 100);
                                sim_wake(s, 600, 3000 + o, ts);
                                sim_wake(s, 601, 3100 + o, ts);
                                sim_wake(s, 3200 + o, 600, ts);
                                sim_wake(s, 3300 + o, 601, ts);
                        }
                for (unsigned k = 0; k < 40; k++) {
                        sim_wake(s, 600, 601, sim_ts(s, k, 40));
                        sim_wake(s, 601, 600, sim_ts(s, k, 40));
                }
                sim_tick(s);
        }
        const Group *g = find_group_with(s, 600);
        assert_non_null(g);
        assert_ptr_equal(find_group_with(s, 601), g);
        sim_free(s);
}

/* 50k tasks, 200k edges: the model copes (speed is for benchmarks, not asserted). */
static void test_scale(void **state) {
        WakeGraph *g;
        WakeBatch b = {};
        assert_int_equal(wake_graph_new(NULL, &g), 0);
        for (pid_t t = 0; t < 50000; t++)
                for (int k = 1; k <= 4; k++)
                        assert_int_equal(
                                wake_batch_add_edge(&b, 10 + t, 10 + (t + k * 7) % 50000, 100), 0);
        for (int tick = 1; tick <= 2; tick++) {
                Group *groups;
                unsigned n;
                assert_int_equal(wake_graph_ingest(g, &b, tick * NSEC_PER_SEC), 0);
                assert_int_equal(wake_graph_update(g, tick * NSEC_PER_SEC, &groups, &n), 0);
                assert_int_equal(wake_graph_n_tasks(g), 50000);
                assert_int_equal(wake_graph_n_edges(g), 200000);
                assert_true(n >= 1);
                group_array_free(groups, n);
        }
        for (pid_t t = 0; t < 50000; t += 2)
                assert_int_equal(wake_graph_task_exit(g, 10 + t), 1);
        Group *groups;
        unsigned n;
        assert_int_equal(wake_graph_update(g, 3 * NSEC_PER_SEC, &groups, &n), 0);
        group_array_free(groups, n);
        assert_int_equal(wake_graph_n_tasks(g), 25000);
        assert_true(wake_graph_n_edges(g) < 200000);
        wake_batch_done(&b);
        wake_graph_free(g);
}

static void test_u64map(void **state) {
        U64Map *m;
        assert_int_equal(u64map_new(&m), 0);
        for (uint64_t k = 0; k < 20000; k++)
                assert_int_equal(u64map_put(m, k * 2654435761u, (uint32_t)k), 0);
        for (uint64_t k = 0; k < 20000; k += 3)
                assert_int_equal(u64map_remove(m, k * 2654435761u), 1);
        for (uint64_t k = 0; k < 20000; k++) {
                uint32_t v = UINT32_MAX;
                int found = u64map_get(m, k * 2654435761u, &v);
                assert_int_equal(found, k % 3 != 0);
                if (found)
                        assert_int_equal(v, k);
        }
        assert_int_equal(u64map_size(m), 20000 - 6667);
        u64map_free(m);
}

static char *fixture(const char *name) {
        const char *src = getenv("PLACED_SRC");
        char *path;
        assert_true(asprintf(&path, "%s/tests/fixtures/%s", src ? src : ".", name) > 0);
        return path;
}

static const WakeEdgeRecord *batch_edge(const WakeBatch *b, pid_t waker, pid_t wakee) {
        for (size_t i = 0; i < b->n_edges; i++)
                if (b->edges[i].waker == waker && b->edges[i].wakee == wakee)
                        return &b->edges[i];
        return NULL;
}

/* The replay source plays a recorded file tick by tick into the model. */
static void test_replay_pair(void **state) {
        _cleanup_free_ char *path = fixture("wake-pair.txt");
        WakeSourceOptions opts = { .replay_path = path };
        WakeSource *src;
        WakeGraph *g;
        WakeBatch b = {};
        Group *groups;
        unsigned n;

        assert_int_equal(wake_source_open(WAKE_SOURCE_REPLAY, &opts, &src, NULL), 0);
        assert_string_equal(wake_source_name(src), "replay");
        assert_int_equal(wake_graph_new(NULL, &g), 0);

        /* events at 1.0 .. 2.0 s: 200 round trips, lines after 2.0 s stay for later */
        assert_int_equal(wake_source_read(src, 2 * NSEC_PER_SEC, &b), 0);
        const WakeEdgeRecord *e = batch_edge(&b, 4001, 4002);
        assert_non_null(e);
        assert_int_equal(e->count, 201); /* k = 0..200 at 1.0 + k * 5 ms */
        assert_int_equal(batch_edge(&b, 4002, 4001)->count, 200);
        bool seen = false;
        for (size_t i = 0; i < b.n_tasks; i++)
                if (b.tasks[i].id.tid == 4001) {
                        seen = true;
                        assert_string_equal(b.tasks[i].comm, "pipe-a");
                        assert_true(b.tasks[i].has_flips);
                        /* one flip for the first wakee, halved at the next wakeup (1.005 s is more
                         * than 1 s after decay_ts 0), then never again: always the same wakee */
                        assert_int_equal(b.tasks[i].flips.flips, 0);
                        assert_int_equal(b.tasks[i].flips.last_wakee, 4002);
                        assert_int_equal(b.tasks[i].wakeups, 201);
                }
        assert_true(seen);
        assert_int_equal(wake_graph_ingest(g, &b, 2 * NSEC_PER_SEC), 0);
        assert_int_equal(wake_graph_update(g, 2 * NSEC_PER_SEC, &groups, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(groups[0].class, GROUP_PAIR);
        assert_int_equal(groups[0].tasks[0].tid, 4001);
        assert_int_equal(groups[0].tasks[1].tid, 4002);
        groups = group_array_free(groups, n);

        assert_int_equal(wake_source_read(src, 4 * NSEC_PER_SEC, &b), 0);
        assert_int_equal(batch_edge(&b, 4001, 4002)->count, 199);
        assert_int_equal(wake_source_read(src, 5 * NSEC_PER_SEC, &b), 0);
        assert_int_equal(b.n_edges, 0); /* end of file */
        assert_int_equal(b.n_events, 0);

        wake_batch_done(&b);
        wake_graph_free(g);
        wake_source_free(src);
}

/* The sampler's counters of every batch ingested, summed for status. */
static void test_ingested_counters(void **state) {
        WakeGraph *g = NULL;
        WakeGraphIngested in;
        WakeBatch b = {};
        assert_int_equal(wake_graph_new(NULL, &g), 0);
        wake_graph_ingested(g, &in);
        assert_int_equal(in.wakeups + in.softirq + in.skipped + in.lost, 0);
        assert_int_equal(wake_batch_add_edge(&b, 10, 11, 7), 0);
        b.n_events = 7, b.n_softirq = 5, b.n_skipped = 3, b.n_lost = 1;
        assert_int_equal(wake_graph_ingest(g, &b, NSEC_PER_SEC), 0);
        wake_batch_reset(&b);
        b.n_events = 2, b.n_softirq = 0, b.n_skipped = 4;
        assert_int_equal(wake_graph_ingest(g, &b, 2 * NSEC_PER_SEC), 0);
        wake_graph_ingested(g, &in);
        assert_int_equal(in.wakeups, 9);
        assert_int_equal(in.softirq, 5);
        assert_int_equal(in.skipped, 7);
        assert_int_equal(in.lost, 1);
        wake_batch_done(&b);
        wake_graph_free(g);
}

static void test_replay_errors(void **state) {
        _cleanup_free_ char *bad = fixture("wake-bad.txt");
        _cleanup_free_ char *missing = fixture("wake-missing.txt");
        WakeSourceOptions opts = { .replay_path = bad };
        WakeSource *src = NULL;
        WakeBatch b = {};

        assert_int_equal(wake_source_open(WAKE_SOURCE_REPLAY, &opts, &src, NULL), 0);
        assert_int_equal(wake_source_read(src, 2 * NSEC_PER_SEC, &b), -EINVAL);
        src = wake_source_free(src);
        opts.replay_path = missing;
        assert_int_equal(wake_source_open(WAKE_SOURCE_REPLAY, &opts, &src, NULL), -ENOENT);
        assert_null(src);
        assert_int_equal(wake_source_open(WAKE_SOURCE_NONE, &opts, &src, NULL), -EOPNOTSUPP);
        wake_batch_done(&b);
}

/* A replay file that is a FIFO or /dev/zero is refused at open; one whose events run into
 * 100 MB of NULs gives its events, then -EFBIG: none waits or reads the NULs through. */
static void test_replay_hostile(void **state) {
        char path[] = "/tmp/test-wake-graph-replay.XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        for (int kind = 0; kind < _HOSTILE_MAX; kind++) {
                uint64_t mark = hostile_begin();
                WakeSourceOptions opts = { .replay_path = path };
                WakeSource *src = NULL;
                WakeBatch b = {};
                hostile_make(path, "1000000000 4001 4001 pipe-a 4002 4002 pipe-b\n", kind);
                int r = wake_source_open(WAKE_SOURCE_REPLAY, &opts, &src, NULL);
                if (kind != HOSTILE_BIG)
                        assert_int_equal(r, hostile_error[kind]);
                else {
                        assert_int_equal(r, 0);
                        assert_int_equal(wake_source_read(src, NSEC_PER_SEC / 2, &b), 0);
                        assert_int_equal(wake_source_read(src, 2 * NSEC_PER_SEC, &b),
                                         hostile_error[kind]);
                        assert_int_equal(b.n_edges, 1); /* the event before the NULs */
                }
                src = wake_source_free(src);
                wake_batch_done(&b);
                hostile_end(mark);
        }
        unlink(path);
}

/* The perf source reads sched_waking's id and format from tracefs before it opens anything:
 * a FIFO, /dev/zero or 100 MB in place of either fails the open, with no wait and no read
 * of it through. */
static void test_perf_tracefs_hostile(void **state) {
        char tmp[] = "/tmp/test-wake-graph-tracefs.XXXXXX", dir[128], id[160], format[160];
        assert_non_null(mkdtemp(tmp));
        snprintf(dir, sizeof(dir), "%s/events/sched/sched_waking", tmp);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
        assert_int_equal(system(cmd), 0);
        snprintf(id, sizeof(id), "%s/id", dir);
        snprintf(format, sizeof(format), "%s/format", dir);
        for (int file = 0; file < 2; file++)
                for (int kind = 0; kind < _HOSTILE_MAX; kind++) {
                        uint64_t mark = hostile_begin();
                        WakeSourceOptions opts = { .tracefs = tmp };
                        WakeSource *src = NULL;
                        hostile_make(id, "300\n", file == 0 ? kind : HOSTILE_BIG);
                        if (file == 1) {
                                assert_int_equal(truncate(id, 4), 0); /* "300\n" alone */
                                hostile_make(format, "name: sched_waking\nID: 300\n", kind);
                        }
                        assert_int_equal(wake_source_open(WAKE_SOURCE_PERF, &opts, &src, NULL),
                                         hostile_error[kind]);
                        assert_null(src);
                        hostile_end(mark);
                }
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
        assert_int_equal(system(cmd), 0);
}

static void test_group_class_names(void **state) {
        for (int c = 0; c < _GROUP_CLASS_MAX; c++)
                assert_int_equal(group_class_from_string(group_class_to_string(c)), c);
        assert_string_equal(group_class_to_string(GROUP_FANOUT), "fanout");
        assert_int_equal(group_class_from_string("bogus"), -EINVAL);
        assert_null(group_class_to_string(_GROUP_CLASS_MAX));
}

static void test_group_format_tids(void **state) {
        TaskId tasks[5] = {
                { .tid = 20553 }, { .tid = 20561 }, { .tid = 3 }, { .tid = 4 }, { .tid = 5 }
        };
        Group g = { .tasks = tasks, .n_tasks = 2 };
        char buf[64];
        group_format_tids(&g, buf, sizeof(buf));
        assert_string_equal(buf, "tasks 20553 20561");
        g.n_tasks = 5;
        group_format_tids(&g, buf, sizeof(buf));
        assert_string_equal(buf, "first task 20553 of 5");
        g.n_tasks = 4;
        group_format_tids(&g, buf, 12); /* cut, terminated */
        assert_string_equal(buf, "tasks 20553");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_flips_kernel),
                cmocka_unit_test(test_group_format_tids),
                cmocka_unit_test(test_flips_steady),
                cmocka_unit_test(test_pair),
                cmocka_unit_test(test_fanout),
                cmocka_unit_test(test_fanout_lock_handoff),
                cmocka_unit_test(test_mesh),
                cmocka_unit_test(test_pair_in_mesh),
                cmocka_unit_test(test_noise),
                cmocka_unit_test(test_pair_in_noise),
                cmocka_unit_test(test_exit),
                cmocka_unit_test(test_ageing),
                cmocka_unit_test(test_unwatched),
                cmocka_unit_test(test_tid_reuse),
                cmocka_unit_test(test_ids_stable),
                cmocka_unit_test(test_util_and_delay),
                cmocka_unit_test(test_threads_of_process),
                cmocka_unit_test(test_scale),
                cmocka_unit_test(test_u64map),
                cmocka_unit_test(test_group_class_names),
                cmocka_unit_test(test_replay_pair),
                cmocka_unit_test(test_replay_errors),
                cmocka_unit_test(test_replay_hostile),
                cmocka_unit_test(test_perf_tracefs_hostile),
                cmocka_unit_test(test_ingested_counters),
        };
        return cmocka_run_group_tests(tests, setup_seed, NULL);
}
