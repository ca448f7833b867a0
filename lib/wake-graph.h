/* SPDX-License-Identifier: MIT */
/*
 * The wake-graph model: from what a wake source saw (WakeBatch, wake.h) and
 * per-task schedstat counters, keep decayed waker->wakee rates and per-task
 * wakee_flips, form groups of tasks that wake each other and classify them
 * pair / fanout / mesh / solo (see docs/design.md).
 *
 * Pure: no I/O, no clock, no logging. The caller passes now_ns
 * (CLOCK_MONOTONIC, the same clock as WakeBatch.now_ns).
 *
 * Per tick:
 *
 *     wake_graph_ingest(g, &batch, now_ns);
 *     for each tid of wake_graph_get_tasks(): wake_graph_task_stats(...)
 *                                              or wake_graph_task_exit()
 *     wake_graph_update(g, now_ns, &groups, &n_groups);
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group.h"
#include "util.h" /* U64Map: the model's callers index their tasks with it too */
#include "wake.h"

typedef struct WakeGraphParams {
        uint64_t edge_half_life_ns; /* edge and task wake rates decay with this half-life (2 s) */
        double strong_min_rate;     /* wakeups/s an edge needs to bind two tasks (4) */
        double strong_min_share;    /* ... and this share of its waker's out-rate or of its
                                       wakee's in-rate (1/64), unless both are threads of
                                       one process */
        double pair_min_share;      /* a pair: each direction at least this share of both tasks'
                                       out- and in-rates (0.5) */
        unsigned llc_size;          /* wake_wide()'s factor: CPUs sharing an LLC (8) */
        double fanout_min_star;     /* fanout: share of the group's wake rate on the
                                       master's edges (0.6) */
        double edge_min_rate;       /* edges decayed below this many wakeups/s are dropped (0.05) */
        uint64_t task_idle_ns;      /* a task unseen this long is dropped (10 s) */
} WakeGraphParams;

typedef struct WakeGraph WakeGraph;

/* What the model knows about one task (for placectl explain/graph). */
typedef struct WakeGraphTask {
        TaskId id;
        pid_t tgid;
        char comm[WAKE_COMM_LEN];
        uint32_t wakee_flips; /* as wake_wide() would see it now */
        double out_rate;      /* wakeups/s it causes */
        double in_rate;       /* wakeups/s it receives */
        uint64_t group_id;    /* 0 = in no group */
        uint32_t group_size;  /* tasks of that group at the last update; 0 = in none */
} WakeGraphTask;

/* One edge, for placectl graph --dot. */
typedef struct WakeGraphEdge {
        pid_t waker, wakee;
        double rate; /* wakeups/s, decayed */
        bool strong; /* counted in grouping at the last update */
} WakeGraphEdge;

void wake_graph_params_default(WakeGraphParams *ret);

/* Return: 0, -EINVAL (bad params), -ENOMEM. params NULL = defaults. */
int wake_graph_new(const WakeGraphParams *params, WakeGraph **ret);
WakeGraph *wake_graph_free(WakeGraph *g);

/*
 * wake_graph_ingest() - add a batch: counts are attributed to the interval
 * since the previous wake_graph_update(). A record whose TaskId.start_time
 * differs from the known one (both non-zero) is a new task with the same TID:
 * the old one's state and edges are dropped.
 *
 * Return: 0, -ENOMEM (the graph stays consistent; part of the batch is lost).
 */
int wake_graph_ingest(WakeGraph *g, const WakeBatch *b, uint64_t now_ns);

/* The sampler's counters of every batch ingested so far, summed (status). */
typedef struct WakeGraphIngested {
        uint64_t wakeups; /* attributed (WakeBatch.n_events) */
        uint64_t softirq; /* of those, made in softirq context (n_softirq) */
        uint64_t skipped; /* n_skipped */
        uint64_t lost;    /* n_lost */
} WakeGraphIngested;

void wake_graph_ingested(const WakeGraph *g, WakeGraphIngested *ret);

/* A task's cumulative counters, as its facts say them (task-facts.h). */
typedef struct WakeTaskCounters {
        uint64_t run_ns;       /* schedstat: time on a CPU */
        uint64_t run_delay_ns; /* schedstat: time waiting for one */
        uint64_t timeslices;   /* schedstat: times it ran */
        uint64_t io_bytes;     /* bytes through read and write calls (rchar + wchar); 0 unknown */
} WakeTaskCounters;

/*
 * wake_graph_task_stats() - cumulative counters of a known task. The model
 * uses their growth since the previous call. start_time non-zero fills in
 * or checks the identity.
 *
 * Return: 1 recorded, 0 unknown TID (or a different start_time: the old
 * task is dropped), -ENOMEM.
 */
int wake_graph_task_stats(WakeGraph *g, pid_t tid, uint64_t start_time, const WakeTaskCounters *c);

/* wake_graph_task_exit() - forget tid now. Return: 1 removed, 0 unknown. */
int wake_graph_task_exit(WakeGraph *g, pid_t tid);

/*
 * wake_graph_update() - decay rates over the time since the previous update,
 * drop idle tasks and edges, form and classify groups.
 *
 * Return: 0 and *ret_groups (malloc'd array, each Group's tasks malloc'd;
 * free with group_array_free()) and *ret_n, -ENOMEM (outputs untouched).
 * Groups of one task are not listed. cpus and ran_on are left empty for the
 * caller.
 */
int wake_graph_update(WakeGraph *g, uint64_t now_ns, Group **ret_groups, unsigned *ret_n);

size_t wake_graph_n_tasks(const WakeGraph *g);
size_t wake_graph_n_edges(const WakeGraph *g);

/* Return: 0 and a malloc'd array of the known tasks' ids in *ret, *ret_n; -ENOMEM. */
int wake_graph_get_tasks(const WakeGraph *g, TaskId **ret, size_t *ret_n);

/* Return: 1 and *ret filled, 0 unknown tid. */
int wake_graph_get_task(const WakeGraph *g, pid_t tid, uint64_t now_ns, WakeGraphTask *ret);

/* Return: 0 and a malloc'd array of every edge in *ret, *ret_n; -ENOMEM. */
int wake_graph_get_edges(const WakeGraph *g, WakeGraphEdge **ret, size_t *ret_n);

/* Frees groups[0..n) and their tasks. Return: NULL. */
Group *group_array_free(Group *groups, unsigned n);
