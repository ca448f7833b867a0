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

#define WAKE_COMM_LEN        16
#define WAKE_FLIP_DECAY_NS   1000000000ULL /* the kernel halves wakee_flips after HZ jiffies */
#define WAKE_MAX_EDGES       65536         /* in the BPF edge map; new edges beyond are lost */
#define WAKE_CACHE_SETS_MAX  4096u         /* edge cache sets per CPU, at most (256 KiB) */
#define WAKE_CACHE_SETS_MIN  64u           /* and at least, whatever the CPU count */
#define WAKE_LOG_RECORDS_MAX (1u << 18)    /* wake log records per CPU, at most (4 MiB) */
#define WAKE_LOG_RECORDS_MIN 256u          /* and at least, whatever the CPU count */
#define WAKE_WANTED_BITS     (1u << 20)    /* the task iterator's filter (128 KiB) */

/* A task_struct address's bit in the task iterator's filter (wake.bpf.c). */
static inline __u32 wake_wanted_bit(__u64 task) {
        return (__u32)((task * 0x9e3779b97f4a7c15ULL) >> 44);
}

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

/*
 * Key of the BPF edge map: one waker -> wakee relation, by the addresses of
 * the two task_structs (in registers at the tracepoint: no cache line of the
 * wakee is touched to build it). The task iterator maps an address to its
 * task. The value is a per-CPU __u64 count of the (sampled) wakeups.
 */
struct wake_edge_key {
        __u64 waker_task;
        __u64 wakee_task;
};

/*
 * A record of the BPF wake log: a run of count consecutive (sampled) wakeups
 * of one edge on one CPU (see wake.bpf.c).
 */
struct wake_log_rec {
        __u64 waker_task;
        __u64 wakee_task;
        __u64 count;
};

/*
 * One way of the BPF edge cache: an edge and its (sampled) wakeups on this
 * CPU since it took the way. waker_task 0 = empty.
 */
struct wake_edge_way {
        __u64 waker_task;
        __u64 wakee_task;
        __u64 count;
};

/*
 * One set of the BPF edge cache: a 64-byte cache line, written only by the
 * CPU that owns it. seq is odd while a way changes edge (see wake.bpf.c);
 * mru is the way hit last.
 */
struct wake_edge_set {
        __u32 seq;
        __u32 mru;
        struct wake_edge_way way[2];
        __u64 pad;
};

/*
 * One record of the BPF task iterator, run by userspace once per read: a
 * task's identity, the kernel's own wakee_flips state, as record_wakee()
 * left it (the state wake_wide() will start from at the task's next wakeup),
 * and what /proc/TID/{stat,schedstat,status} would say of it that the tick
 * needs (its run time, run-queue delay, scheduling class, state, CPU and
 * allowed CPUs), so that no file is opened per task. WAKE_MASK_WORDS(n)
 * words of its allowed-CPU mask (task_struct.cpus_mask) follow each record,
 * n = the number of possible CPUs, as the iterator was loaded with.
 */
struct wake_task_info {
        __u64 task;             /* the task_struct's address, as in wake_edge_key */
        __u64 start_ns;         /* task_struct.start_boottime */
        __u64 decay_ts_jiffies; /* task_struct.wakee_flip_decay_ts */
        __u64 run_ns;           /* se.sum_exec_runtime: schedstat's first field */
        __u64 run_delay_ns;     /* sched_info.run_delay: schedstat's second */
        __u64 pcount;           /* sched_info.pcount: times it ran, schedstat's third */
        __u64 cgroup_id;        /* its cgroup in the unified hierarchy (kernfs id) */
        __u64 cpuset_cgroup_id; /* the cgroup of its cpuset controller; 0 = none */
        __u64 leader_start_ns;  /* its process's: the group leader's start_boottime */
        __u64 io_bytes;         /* ioac.rchar + ioac.wchar: bytes through read/write calls */
        __u32 tid;
        __u32 tgid;
        __u32 ppid;       /* its parent process, as stat's field 4 */
        __u32 flips;      /* task_struct.wakee_flips */
        __u32 last_wakee; /* TID of task_struct.last_wakee; 0 = none */
        __u32 flags;      /* task_struct.flags (PF_*) */
        __u32 state;      /* task_struct.__state (TASK_*) */
        __u32 exit_state; /* task_struct.exit_state (EXIT_*) */
        __u32 policy;     /* SCHED_* */
        __u32 rt_priority;
        __s32 cpu;      /* the CPU it is on or last ran on */
        __u32 reserved; /* zero */
        char comm[WAKE_COMM_LEN];
};

/* Words of the allowed-CPU mask that follow each wake_task_info, for n possible CPUs. */
#define WAKE_MASK_WORDS(n)  (((n) + 63) / 64)
#define WAKE_MASK_WORDS_MAX 64 /* 4096 CPUs: CPUSET_MAX_CPUS */

/*
 * A note: a run of one edge on one CPU reached WAKE_NOTE_RUN wakeups in a
 * row, the sign of a pair handing work back and forth across two CPUs (each
 * CPU sees one direction, a run that does not end); or WAKE_NOTE_RUN runs in
 * a row on one CPU were each the one before turned round (A wakes B, B wakes
 * A, ...), the sign of a pair taking turns on one CPU, which no run shows (a
 * new client the kernel started beside its server: redis sessions waited
 * for a tick, 0.9 s, while the kernel kept them there and then moved one).
 * The program writes one to its ring buffer when a CPU's run or turns reach
 * the count, unless that CPU's last note was of the same edge less than
 * WAKE_NOTE_QUIET_NS ago, so that userspace can decide at once instead of at
 * its next tick; it costs a repeated edge one compare, and another edge two
 * compares and a store. The edge is two task_struct addresses, which a new
 * task may get from one that ended: a redis client's after the one before
 * it, whose note the CPU wrote last (1 session in 10 waited 2 s for a note
 * from the other CPU while the quiet time had no end).
 */
#define WAKE_NOTE_QUIET_NS (1000 * 1000 * 1000ULL)
#define WAKE_NOTE_RUN      32

struct wake_note {
        __u64 waker_task; /* task_struct addresses, as in wake_edge_key */
        __u64 wakee_task;
        __u64 ts_ns;     /* CLOCK_MONOTONIC when the run reached WAKE_NOTE_RUN */
        __u32 waker_tid; /* as placed's /proc shows them; 0: not in its PID namespace */
        __u32 wakee_tid;
        __u32 cpu;
        __u32 reserved;
};

/* wake_cpu_ctl.cfg: the program's settings, copied from its read-only data
 * into the hot line at the CPU's first wakeup, so that the hot path reads no
 * other cache line nor page of its own than this one and the log's. */
#define WAKE_CFG_SET           0x01 /* the fields below are set */
#define WAKE_CFG_SKIP_KTHREADS 0x02 /* skip wakeups to or from kernel threads */
#define WAKE_CFG_SAMPLED       0x04 /* sample_shift > 0 */

/*
 * One CPU's state of the BPF program, an element of an mmap'able array of
 * three cache lines: the first two written only by the program on that CPU
 * (the first is the hot path's: all that a wakeup that repeats the CPU's last
 * edge reads or writes there), the third only by userspace. Counts are in
 * sampled wakeups: userspace scales them by 2^sample_shift.
 *
 * The run: the wakeups since the CPU's last change of edge, all of
 * run_waker -> run_wakee, run_count of them (0: no run), to be written as
 * record log_head / 2 of the wake log when the edge changes, in slot
 * log_head / 2 - log_start, free while the run lasts. log_head counts
 * records twice and is odd while the program writes a record and rewrites
 * the run and log_start: userspace takes them between two equal even values
 * of it (see wake.bpf.c).
 */
struct wake_cpu_ctl {
        __u64 log_head;  /* 2 x records written to this CPU's wake log; odd: writing one */
        __u64 log_start; /* the record in the log's first slot (see wake.bpf.c) */
        __u64 run_waker; /* the run's edge; 0 = no run */
        __u64 run_wakee;
        __u64 run_count;     /* wakeups in the run; 0 = no run */
        __u32 skipped;       /* interrupt context, idle task, kernel threads, self (wraps) */
        __u32 softirq_taken; /* of the wakeups taken (logged or cached), from softirq context
                                (wraps) */
        __u32 log_base;      /* cfg: this CPU's first record in the wake log */
        __u32 log_mask;      /* cfg: records per CPU - 1 */
        __u32 thread_size;   /* cfg: THREAD_SIZE, the task's kernel stack */
        /* Markers of the context and cfg, read by the program as one 32-bit word: */
        __u8 in_timer;       /* a timer wheel callback runs (TIMER softirq) */
        __u8 in_irq_handler; /* a hard IRQ's handler runs */
        __u8 in_hrtimer;     /* an hrtimer callback runs */
        __u8 cfg;            /* WAKE_CFG_* */
        __u64 lost;          /* the edge map full */
        __u32 countdown;     /* calls to skip before the next sampled one */
        __u32 turns;         /* runs in a row, each the one before turned round (see wake_note) */
        __u32 cached;        /* counted in the edge cache (the log was full; wraps) */
        __u32 misses;        /* of those, edge cache misses: calls that took a way (wraps) */
        __u64 noted_ns;      /* when this CPU wrote its last note (see wake_note) */
        __u64 task_addr[2];  /* scratch of the edge cache path */
        __u64 noted_waker;   /* the edge of the last note this CPU wrote (see wake_note) */
        __u64 noted_wakee;
        __u64 log_tail; /* written by userspace: records read from the log */
        __u64 pad2[7];
};

#ifndef __bpf__

#include "group.h"

/* One task seen by the source during a batch (as waker or wakee). */
typedef struct WakeTaskRecord {
        TaskId id; /* start_time 0 = unknown (perf/replay: filled from the task's facts) */
        pid_t tgid;
        char comm[WAKE_COMM_LEN];
        uint64_t wakeups;        /* wakeups it caused in this batch (scaled when sampled) */
        struct wake_flips flips; /* its flip state at its latest wakeup, if has_flips */
        bool has_flips;
} WakeTaskRecord;

/*
 * One task as a source's kernel task iterator saw it at its last read (the
 * BPF source): the record and its allowed-CPU mask, valid until the next read.
 */
typedef struct WakeTaskView {
        TaskId id;                  /* tid, and start time in clock ticks as /proc's stat says */
        uint64_t leader_start_time; /* its process's leader's, likewise */
        const struct wake_task_info *info;
        const uint64_t *cpus_mask; /* mask_words words, CPU 0 in bit 0 of the first */
        unsigned mask_words;
} WakeTaskView;

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
        uint64_t n_events;     /* wakeups attributed (scaled) */
        uint64_t n_skipped;    /* wakeups not attributed: interrupt context, idle, kernel threads */
        uint64_t n_lost;       /* wakeups lost: full maps, ring overflows */
        uint64_t n_softirq;    /* wakeups made in softirq context and attributed to the task
                                  current there, as record_wakee() does (bpf: as the program
                                  took them; userspace may still skip a few, see n_skipped) */
        uint64_t unwatched_ns; /* of the interval since the previous read, how long the
                                  source did not watch wakeups (it rested: see
                                  wake_source_rest()); 0 for a source that never rests */
} WakeBatch;

void wake_batch_reset(WakeBatch *b);
void wake_batch_done(WakeBatch *b);

/* Return: 0, -ENOMEM. */
int wake_batch_add_task(WakeBatch *b, const WakeTaskRecord *t);
int wake_batch_add_edge(WakeBatch *b, pid_t waker, pid_t wakee, uint64_t count);

#endif /* !__bpf__ */
