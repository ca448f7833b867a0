/* SPDX-License-Identifier: MIT */
/*
 * Wake sources: where the wake graph's input comes from. Three kinds, one
 * interface, each kind behind an ops table in its own file (bpf, perf,
 * replay; wake-source-ops.h). Every kind is read on the tick. The bpf source
 * also reports, from the same pass of its task iterator, every task's
 * scheduling facts (wake_source_task()), and has an fd for the loop to
 * watch: notes of edges that just became runs across CPUs, the sign of a new
 * pair (wake_source_read_notes()), so that placed need not wait for its tick.
 *
 *  - "bpf": wake.bpf.c on tp_btf/sched_waking; wakeups logged per CPU, or
 *    counted per edge in the kernel when a log is full (optionally 1 in
 *    2^sample_shift wakeups, counts scaled back), all read once per read, and
 *    the kernel's own wakee_flips read from each task by a BPF task iterator
 *    at the same time;
 *  - "perf": perf_event_open() on the sched:sched_waking tracepoint, one ring
 *    buffer per CPU, one sample per sample_period wakeups (counts scaled);
 *    inside a PID namespace also on sched:sched_switch, to map the wakees'
 *    global PIDs to the namespace's TIDs;
 *  - "replay": a recorded event file, for tests without root.
 *
 * perf and replay events go through the same userspace aggregation (flips per
 * waker with wake_flips_record(), edge counts summed).
 *
 * Replay file format: one wakeup per line, '#' starts a comment:
 *
 *     TS_NS WAKER_TID WAKER_TGID WAKER_COMM WAKEE_TID WAKEE_TGID [WAKEE_COMM]
 *
 * TS_NS is on the caller's clock (now_ns of wake_source_read()); comms
 * contain no white space. Lines must be in time order.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "kernel-features.h"
#include "wake.h"

typedef struct WakeSource WakeSource;

#define WAKE_SAMPLE_SHIFT_MAX 16u
/*
 * Default BPF sampling: every wakeup. Measured on the 2-CPU development VM
 * (kernel.bpf_stats_enabled, tests/bench/sampler-cost.sh): the trampoline and
 * the statistics alone cost 75-100 ns a call; a wakeup counted in the
 * per-CPU hash cost 300-600 ns under hackbench (cache misses on the map),
 * one appended to the wake log costs 110-150 ns (see wake.bpf.c). Sampling 1
 * in 8 (shift 3) was tried against the hash and rejected: the model then sees
 * single sampled wakeups as edges of weight 8, merges the two meshes of
 * hackbench -g 2 and grows a fanout by stray tasks
 * (tests/test-wake-source-live.c fails), so sampling stays opt-in.
 */
#define WAKE_SAMPLE_SHIFT_DEFAULT 0

typedef struct WakeSourceOptions {
        pid_t ignore_tgid;      /* wakeups by this process are not attributed (placed); 0 = none */
        unsigned sample_period; /* perf: one sample per N wakeups (0 = 1) */
        int sample_shift;       /* bpf: count 1 in 2^N wakeups, scaled back; 0 = the default
                                   WAKE_SAMPLE_SHIFT_DEFAULT, negative = every wakeup;
                                   at most WAKE_SAMPLE_SHIFT_MAX */
        unsigned log_records;   /* bpf: wake log records per CPU (rounded down to a power of
                                   two, at most WAKE_LOG_RECORDS_MAX); 0 = by the CPU count */
        unsigned edge_cache_sets; /* bpf: edge cache sets per CPU (likewise, at most
                                     WAKE_CACHE_SETS_MAX); 0 = by the CPU count */
        bool keep_kthreads;       /* attribute wakeups to and from kernel threads too */
        const char *replay_path;  /* replay: the event file */
        const char *tracefs;      /* perf: tracefs mount; NULL = /sys/kernel/tracing, then
                                     /sys/kernel/debug/tracing */
        const char *procfs_root;  /* perf: where to tell kernel threads and placed's PID
                                     namespace; NULL = "/proc" */
        int perf_map_pids;        /* perf: map wakees' global PIDs to placed's PID namespace
                                     through sched_switch (wake-source-perf.c): 0 = when not in
                                     the initial one, > 0 = always (tests), < 0 = never */
        unsigned kernel_features; /* KERNEL_FEATURE_* from kernel_features_probe(), which the
                                     caller may narrow to force a fallback; 0 = probed at open */
} WakeSourceOptions;

/*
 * wake_source_open() - open a source of kind (WAKE_SOURCE_AUTO: bpf, else
 * perf). ret_reason (may be NULL) receives a malloc'd sentence saying which
 * source was chosen and why another failed, for the daemon to log (when
 * both fail, why; otherwise untouched on failure). The BPF
 * source is not tried when opts->kernel_features lacks one of
 * KERNEL_FEATURES_BPF_SAMPLER, and reads no kernel flips without
 * KERNEL_FEATURE_WAKEE_FLIPS (the task records then have has_flips false).
 *
 * Return: 0 and *ret; -EOPNOTSUPP for WAKE_SOURCE_NONE, or for
 * WAKE_SOURCE_BPF when the kernel lacks what it needs; the open error of the
 * (last) source tried otherwise (-EPERM without privileges, -ENOENT without
 * tracefs or replay file). *ret untouched on failure.
 */
int wake_source_open(WakeSourceKind kind, const WakeSourceOptions *opts, WakeSource **ret,
                     char **ret_reason);
WakeSource *wake_source_free(WakeSource *s);

/* "bpf", "perf" or "replay". */
const char *wake_source_name(const WakeSource *s);

/*
 * wake_source_read() - everything seen since the previous read (replay: up to
 * now_ns). *ret is reset first and reused. bpf: wakeups by or of tasks that
 * exited before the read are counted in n_skipped, not as edges; the task
 * records carry the kernel's wakee_flips as of the read.
 *
 * Return: 0, or negative errno (ret holds what was read before the error).
 */
int wake_source_read(WakeSource *s, uint64_t now_ns, WakeBatch *ret);

/*
 * Kernel run time of the BPF programs (bpf_stats), for the sampler's cost:
 * run_time_ns / run_cnt is the cost of a wakeup, softirq and IRQ markers
 * included.
 */
typedef struct WakeSourceCost {
        uint64_t run_time_ns; /* all programs but the task iterator; 0 unless
                                 kernel.bpf_stats_enabled */
        uint64_t run_cnt;     /* wakeups (runs of the sched_waking program) */
} WakeSourceCost;

/* Return: 1 and *ret for the bpf source, 0 for the others, negative errno. */
int wake_source_get_cost(const WakeSource *s, WakeSourceCost *ret);

/*
 * wake_source_task() - what the source's task iterator saw of tid at the
 * last read: its identity, scheduling facts and allowed CPUs, as /proc's
 * stat, schedstat and status would say them (task-facts.h turns it into
 * TaskFacts). Only the bpf source has one; s may be NULL.
 *
 * Return: 1 and *ret (valid until the next read), 0 when there is none.
 */
int wake_source_task(const WakeSource *s, pid_t tid, WakeTaskView *ret);

/*
 * wake_source_watch() - the tasks whose facts the caller wants from the
 * next reads on (the wake graph's), besides the ends of the edges the
 * source tracks. The bpf source's iterator reads and reports only those, so
 * that the thousands of tasks that sleep cost it little; any other task is
 * not found by wake_source_task(). ids is copied; s may be NULL.
 *
 * Return: 0, or -ENOMEM (the old set stays).
 */
int wake_source_watch(WakeSource *s, const TaskId *ids, size_t n);

/*
 * wake_source_rest() - rest (true) or watch again (false). A resting bpf
 * source has its sched_waking program detached: a program there costs a
 * wake-heavy workload about 3% however little it does (docs/benchmarks.md,
 * "what watching costs"). Its task iterator, interrupt markers and notes'
 * ring stay; its reads carry no edges then, and tell how long of their
 * interval it did not watch (WakeBatch.unwatched_ns), so that the wake
 * graph holds still meanwhile. now_ns is on wake_source_read()'s clock.
 *
 * Return: 1 changed, 0 already so, -EOPNOTSUPP for a source that cannot
 * rest (perf, replay), or the attach's negative errno (still resting).
 */
int wake_source_rest(WakeSource *s, bool rest, uint64_t now_ns);

/* Return: whether s can rest (a bpf source). */
bool wake_source_can_rest(const WakeSource *s);

/* Return: how long s has rested in all, up to now_ns (0 for s NULL). */
uint64_t wake_source_rested_ns(const WakeSource *s, uint64_t now_ns);

/* Return: whether s rests now (never for s NULL). */
bool wake_source_resting(const WakeSource *s);

/* A note (wake.h's wake_note): a run of WAKE_NOTE_RUN wakeups of one edge on one CPU. */
typedef struct WakeNote {
        pid_t waker, wakee; /* TIDs as placed's /proc shows them; 0: outside its namespace */
        uint64_t ts_ns;     /* CLOCK_MONOTONIC when the run reached the count */
} WakeNote;

/* Return: the fd that is readable when notes are waiting, or -1 (no notes: perf, replay). */
int wake_source_notes_fd(const WakeSource *s);

/*
 * wake_source_read_notes() - the notes written since the last call, at most
 * max of them into ret (the BPF program writes one per CPU and edge at most
 * every WAKE_NOTE_QUIET_NS, so a steady pair writes few; a burst beyond the
 * source's buffer is dropped: the tick sees those edges anyway).
 *
 * Return: how many, or negative errno.
 */
int wake_source_read_notes(WakeSource *s, WakeNote *ret, size_t max);
