/* SPDX-License-Identifier: MIT */
/*
 * A WakeBatch (wake.h): what a wake source hands the model once a tick, with
 * its arrays kept across ticks. And the userspace aggregation that builds one
 * from single wakeups (wake-source-ops.h), shared by the perf and replay
 * sources; the BPF source aggregates in the kernel and adds its records
 * directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "util.h"
#include "wake-source-ops.h"
#include "wake.h"

void wake_batch_reset(WakeBatch *b) {
        b->n_tasks = b->n_edges = 0;
        b->n_events = b->n_skipped = b->n_lost = b->n_softirq = 0;
        b->now_ns = b->unwatched_ns = 0;
}

void wake_batch_done(WakeBatch *b) {
        free(b->tasks);
        free(b->edges);
        *b = (WakeBatch){};
}

int wake_batch_add_task(WakeBatch *b, const WakeTaskRecord *t) {
        int r = array_grow((void **)&b->tasks, &b->n_tasks_alloc, b->n_tasks + 1, sizeof(*t));
        if (r < 0)
                return r;
        b->tasks[b->n_tasks++] = *t;
        return 0;
}

int wake_batch_add_edge(WakeBatch *b, pid_t waker, pid_t wakee, uint64_t count) {
        int r = array_grow((void **)&b->edges, &b->n_edges_alloc, b->n_edges + 1,
                           sizeof(WakeEdgeRecord));
        if (r < 0)
                return r;
        b->edges[b->n_edges++] = (WakeEdgeRecord){ .waker = waker, .wakee = wakee, .count = count };
        return 0;
}

/* ---- userspace aggregation, shared by perf and replay ------------------ */

#define AGG_IDLE_NS (30 * NSEC_PER_SEC) /* forget a waker's flips after this long */

typedef struct AggTask {
        pid_t tid, tgid;
        char comm[WAKE_COMM_LEN];
        struct wake_flips flips;
        uint64_t last_ns;
        uint64_t wakeups; /* in the current batch */
        bool in_batch;
        bool waker; /* woke someone in the current batch */
} AggTask;

struct WakeAgg {
        AggTask *tasks; /* owned; persistent: the flips outlive a batch */
        size_t n_tasks, n_tasks_alloc;
        U64Map *by_tid;    /* tid -> tasks index */
        U64Map *edge_slot; /* waker << 32 | wakee -> batch edge index, per batch */
};

WakeAgg *wake_agg_free(WakeAgg *a) {
        if (!a)
                return NULL;
        free(a->tasks);
        u64map_free(a->by_tid);
        u64map_free(a->edge_slot);
        free(a);
        return NULL;
}

int wake_agg_new(WakeAgg **ret) {
        WakeAgg *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        if (u64map_new(&a->by_tid) < 0 || u64map_new(&a->edge_slot) < 0) {
                wake_agg_free(a);
                return -ENOMEM;
        }
        *ret = a;
        return 0;
}

static AggTask *agg_task(WakeAgg *a, pid_t tid, pid_t tgid, const char *comm) {
        uint32_t i;
        if (!u64map_get(a->by_tid, (uint64_t)tid, &i)) {
                if (array_grow((void **)&a->tasks, &a->n_tasks_alloc, a->n_tasks + 1,
                               sizeof(AggTask)) < 0 ||
                    u64map_put(a->by_tid, (uint64_t)tid, (uint32_t)a->n_tasks) < 0)
                        return NULL;
                i = (uint32_t)a->n_tasks++;
                a->tasks[i] = (AggTask){ .tid = tid };
        }
        AggTask *t = &a->tasks[i];
        if (tgid > 0)
                t->tgid = tgid;
        if (comm && comm[0])
                snprintf(t->comm, sizeof(t->comm), "%s", comm);
        t->in_batch = true;
        return t;
}

int wake_agg_event(WakeAgg *a, WakeBatch *b, uint64_t ts_ns, pid_t waker, pid_t waker_tgid,
                   const char *waker_comm, pid_t wakee, pid_t wakee_tgid, const char *wakee_comm,
                   uint64_t weight) {
        AggTask *t = agg_task(a, wakee, wakee_tgid, wakee_comm);
        if (!t)
                return -ENOMEM;
        t = agg_task(a, waker, waker_tgid, waker_comm);
        if (!t)
                return -ENOMEM;
        wake_flips_record(&t->flips, (uint32_t)wakee, ts_ns);
        t->last_ns = ts_ns;
        t->wakeups += weight;
        t->waker = true;
        b->n_events += weight;

        uint64_t key = (uint64_t)waker << 32 | (uint32_t)wakee;
        uint32_t i;
        if (u64map_get(a->edge_slot, key, &i)) {
                b->edges[i].count += weight;
                return 0;
        }
        int r = u64map_put(a->edge_slot, key, (uint32_t)b->n_edges);
        if (r < 0)
                return r;
        return wake_batch_add_edge(b, waker, wakee, weight);
}

int wake_agg_finish(WakeAgg *a, WakeBatch *b, uint64_t now_ns) {
        int r = 0;
        for (size_t i = 0; i < a->n_tasks; i++) {
                AggTask *t = &a->tasks[i];
                if (!t->in_batch)
                        continue;
                WakeTaskRecord rec = {
                        .id = { .tid = t->tid },
                        .tgid = t->tgid,
                        .wakeups = t->wakeups,
                        .flips = t->flips,
                        .has_flips = t->waker,
                };
                memcpy(rec.comm, t->comm, sizeof(rec.comm));
                if (r >= 0)
                        r = wake_batch_add_task(b, &rec);
                t->in_batch = t->waker = false;
                t->wakeups = 0;
        }
        for (size_t i = a->n_tasks; i-- > 0;) {
                if (a->tasks[i].last_ns + AGG_IDLE_NS >= now_ns)
                        continue;
                u64map_remove(a->by_tid, (uint64_t)a->tasks[i].tid);
                if (i != --a->n_tasks) {
                        a->tasks[i] = a->tasks[a->n_tasks];
                        (void)u64map_put(a->by_tid, (uint64_t)a->tasks[i].tid, (uint32_t)i);
                }
        }
        u64map_clear(a->edge_slot);
        return r;
}
