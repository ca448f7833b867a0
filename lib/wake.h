/* SPDX-License-Identifier: MIT */
/*
 * Who wakes whom: the layouts shared by the BPF sampler (wake.bpf.c) and
 * userspace, the kernel's wakee_flips arithmetic (used by the BPF program, by
 * the perf and replay sources and by the tests, so all three agree), and the
 * WakeBatch a wake source hands to the model once per tick.
 *
 * This header is compiled both by clang -target bpf (where __bpf__ is
 * defined and the includer has declared __u32/__u64) and by the C compiler.
 */
#pragma once

#ifndef __bpf__
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#endif

#define WAKE_COMM_LEN      16
#define WAKE_FLIP_DECAY_NS 1000000000ULL /* the kernel halves wakee_flips after HZ jiffies */
#define WAKE_MAX_EDGES     65536 /* per BPF edge map (two of them); more in a tick are lost */

/*
 * The kernel's per-task wakee_flips state (struct task_struct: wakee_flips,
 * wakee_flip_decay_ts, last_wakee), with nanoseconds for jiffies and a TID for
 * the last wakee pointer. A zeroed struct is a task that never woke anyone.
 */
struct wake_flips {
        __u64 decay_ts_ns; /* when flips was last halved */
        __u32 flips;
        __u32 last_wakee; /* TID; 0 = none yet */
};

/*
 * wake_flips_record() - what record_wakee() in kernel/sched/fair.c does when
 * the task owning f wakes wakee at now_ns: halve once (only once, however
 * long ago) if more than a second passed since the last halving, then count a
 * flip when the wakee differs from the last one.
 */
static inline void wake_flips_record(struct wake_flips *f, __u32 wakee, __u64 now_ns) {
        if (now_ns > f->decay_ts_ns + WAKE_FLIP_DECAY_NS) {
                f->flips >>= 1;
                f->decay_ts_ns = now_ns;
        }
        if (f->last_wakee != wakee) {
                f->last_wakee = wakee;
                f->flips++;
        }
}

/*
 * wake_flips_peek() - the flips value the kernel's wake_wide() would see at
 * now_ns, i.e. with the pending halving applied, without recording a wakeup.
 */
static inline __u32 wake_flips_peek(const struct wake_flips *f, __u64 now_ns) {
        return now_ns > f->decay_ts_ns + WAKE_FLIP_DECAY_NS ? f->flips >> 1 : f->flips;
}

/* Key of the BPF edge maps: one waker -> wakee relation. */
struct wake_edge_key {
        __u32 waker_tid;
        __u32 wakee_tid;
};

/*
 * Value of the BPF edge maps. Only the waker writes its own edges, and a task
 * runs on one CPU at a time, so plain increments do not race.
 */
struct wake_edge_val {
        __u64 count;             /* wakeups seen on this edge (sampled ones, see sample_shift) */
        __u64 last_ns;           /* bpf_ktime_get_ns() of the latest one */
        __u64 waker_start_ns;    /* task_struct.start_boottime of the waker */
        __u64 wakee_start_ns;    /* task_struct.start_boottime of the wakee */
        struct wake_flips flips; /* the waker's flip state after the latest wakeup */
        __u32 waker_tgid;
        __u32 wakee_tgid;
        char waker_comm[WAKE_COMM_LEN];
        char wakee_comm[WAKE_COMM_LEN];
};

/* Per-CPU counters of the BPF program (summed by userspace). */
struct wake_counters {
        __u64 events;  /* wakeups attributed (flips recorded) */
        __u64 skipped; /* interrupt context, idle task, kernel threads, self, ignored tgid */
        __u64 lost;    /* no task storage, or an edge map full */
};

#ifndef __bpf__

#include "group.h"

/* One task seen by the source during a batch (as waker or wakee). */
typedef struct WakeTaskRecord {
        TaskId id; /* start_time 0 = unknown (perf/replay: fill from task-stats) */
        pid_t tgid;
        char comm[WAKE_COMM_LEN];
        uint64_t wakeups;        /* wakeups it caused in this batch (scaled when sampled) */
        struct wake_flips flips; /* its flip state at its latest wakeup, if has_flips */
        bool has_flips;
} WakeTaskRecord;

/* Wakeups from waker to wakee during a batch (scaled when sampled). */
typedef struct WakeEdgeRecord {
        pid_t waker;
        pid_t wakee;
        uint64_t count;
} WakeEdgeRecord;

/*
 * What a wake source saw since its previous read. Owns its arrays; reuse one
 * WakeBatch across ticks (wake_batch_reset() keeps the allocations) and free
 * it with wake_batch_done().
 */
typedef struct WakeBatch {
        uint64_t now_ns;       /* CLOCK_MONOTONIC of the read */
        WakeTaskRecord *tasks; /* one per TID */
        size_t n_tasks, n_tasks_alloc;
        WakeEdgeRecord *edges; /* one per (waker, wakee) */
        size_t n_edges, n_edges_alloc;
        uint64_t n_events;  /* wakeups attributed (scaled) */
        uint64_t n_skipped; /* wakeups not attributed: interrupt context, idle, kernel threads */
        uint64_t n_lost;    /* wakeups lost: full maps, ring overflows */
} WakeBatch;

void wake_batch_reset(WakeBatch *b);
void wake_batch_done(WakeBatch *b);

/* Return: 0, -ENOMEM. */
int wake_batch_add_task(WakeBatch *b, const WakeTaskRecord *t);
int wake_batch_add_edge(WakeBatch *b, pid_t waker, pid_t wakee, uint64_t count);

#endif /* !__bpf__ */
