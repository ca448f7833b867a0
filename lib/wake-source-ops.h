/* SPDX-License-Identifier: MIT */
/*
 * Inside the wake sources: the ops table each kind of source exports
 * (wake-source-bpf.c, wake-source-perf.c, wake-source-replay.c) and the
 * dispatcher (wake-source.c) calls, and the userspace aggregation that the
 * perf and replay sources share (wake-batch.c). Only those files include
 * this header; everyone else uses wake-source.h.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"
#include "wake-source.h"
#include "wake.h"

/*
 * One kind of wake source. impl is the source's own object, opaque to the
 * dispatcher. opts has kernel_features probed and is the source's to copy.
 */
typedef struct WakeSourceOps {
        const char *name;        /* "bpf", "perf", "replay" */
        unsigned needs_features; /* KERNEL_FEATURE_* without which open is not tried */
        bool reads_kernel_flips; /* the kernel's wakee_flips, when KERNEL_FEATURE_WAKEE_FLIPS */
        /* Return: 0 and *ret, or negative errno (*ret untouched). */
        int (*open)(const WakeSourceOptions *opts, void **ret);
        void (*close)(void *impl);
        /*
         * Everything seen since the previous read (replay: up to now_ns), into
         * b, which the dispatcher reset. Return: 0, or negative errno.
         */
        int (*read)(void *impl, uint64_t now_ns, WakeBatch *b);
        /* Return: N when the source sees 1 in N wakeups (1: every one). */
        unsigned (*sample_every)(const void *impl);
        /* What the reason should add about how it sees tasks ("" or ", ..."). NULL: nothing. */
        const char *(*note)(const void *impl);
        /* Return: 1 and *ret, or negative errno. NULL: the source cannot tell its cost. */
        int (*get_cost)(const void *impl, WakeSourceCost *ret);
        /* Return: 1 and *ret, 0 when the last read saw no such task. NULL: the source
         * reads no task facts (perf, replay). */
        int (*task)(const void *impl, pid_t tid, WakeTaskView *ret);
        /* Replaces the watched tasks (wake_source_watch()). NULL: nothing to watch. */
        int (*watch)(void *impl, const TaskId *ids, size_t n);
        /* The notes' fd and reader (wake_source_notes_fd()). NULL: no notes. */
        int (*notes_fd)(const void *impl);
        int (*read_notes)(void *impl, WakeNote *ret, size_t max);
        /* Stops watching wakeups (rest) or starts again; everything else goes on
         * (wake_source_rest()). Return: 0, or negative errno (nothing changed). NULL: the
         * source cannot rest. */
        int (*rest)(void *impl, bool rest);
} WakeSourceOps;

extern const WakeSourceOps wake_source_bpf_ops;
extern const WakeSourceOps wake_source_perf_ops;
extern const WakeSourceOps wake_source_replay_ops;

/*
 * WakeAgg: turns single wakeups (perf samples, replay lines) into a batch the
 * way the BPF source's kernel side does: edge counts summed, and each waker's
 * flips recorded with wake_flips_record(). The task table persists across
 * batches (flips outlive a tick); wakers idle for 30 s are forgotten.
 */
typedef struct WakeAgg WakeAgg;

/* Return: 0 and *ret, or -ENOMEM. */
int wake_agg_new(WakeAgg **ret);
WakeAgg *wake_agg_free(WakeAgg *a);

/*
 * wake_agg_event() - one wakeup at ts_ns, or one sample standing for weight
 * wakeups, into b. tgid 0 and comm NULL or "" leave what is known untouched.
 *
 * Return: 0, or -ENOMEM.
 */
int wake_agg_event(WakeAgg *a, WakeBatch *b, uint64_t ts_ns, pid_t waker, pid_t waker_tgid,
                   const char *waker_comm, pid_t wakee, pid_t wakee_tgid, const char *wakee_comm,
                   uint64_t weight);

/*
 * wake_agg_finish() - ends the batch: adds a record for every task seen in it
 * and forgets wakers idle for long. Call once per read, after the events.
 *
 * Return: 0, or -ENOMEM.
 */
int wake_agg_finish(WakeAgg *a, WakeBatch *b, uint64_t now_ns);
