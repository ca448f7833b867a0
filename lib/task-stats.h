/* SPDX-License-Identifier: MIT */
/*
 * Per-task scheduler counters from a procfs root: run time and run-queue
 * delay (/proc/TGID/task/TID/schedstat, present without CONFIG_SCHEDSTATS),
 * and identity and policy from .../stat and .../status.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "group.h"

typedef struct TaskStats {
        TaskId id;  /* start_time: field 22 of stat, clock ticks since boot */
        pid_t tgid; /* the tgid passed, or Tgid: from status */
        char comm[16];
        char state;            /* field 3 */
        unsigned flags;        /* field 9 (PF_KTHREAD = 0x00200000) */
        int processor;         /* field 39: CPU it last ran on */
        unsigned rt_priority;  /* field 40 */
        unsigned policy;       /* field 41: SCHED_OTHER, SCHED_FIFO, ... */
        uint64_t run_ns;       /* schedstat: time on CPU */
        uint64_t run_delay_ns; /* schedstat: time waiting on a run queue */
        uint64_t timeslices;   /* schedstat: times it ran */
} TaskStats;

/*
 * task_stats_read() - read tid's counters under procfs_root ("/proc"),
 * through /proc/TGID/task/TID. With tgid 0 it reads through
 * /proc/TID/task/TID (works for any thread) and takes the tgid from status,
 * a third, costlier file; pass the tgid where it is known.
 *
 * Return: 0 and *ret; -ENOENT when the task is gone; -EINVAL on malformed
 * files; other negative errno. *ret untouched on failure.
 */
int task_stats_read(const char *procfs_root, pid_t tgid, pid_t tid, TaskStats *ret);

/* Return: true for SCHED_FIFO, SCHED_RR or SCHED_DEADLINE (never touched). */
bool task_stats_is_realtime(const TaskStats *s);
