/* SPDX-License-Identifier: MIT */
/*
 * Task groups: the unit placed decides for. The wake-graph model
 * (wake-graph.h) produces them; the policy (policy.h) places them; the
 * manager publishes them (D-Bus ListGroups, placectl groups).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpuset.h"

typedef enum GroupClass {
        GROUP_SOLO,   /* no strong relation: left to the kernel */
        GROUP_PAIR,   /* two tasks that mostly wake each other */
        GROUP_FANOUT, /* one master waking many workers */
        GROUP_MESH,   /* many tasks waking many */
        _GROUP_CLASS_MAX,
} GroupClass;

/* Identity of a task: a reused TID is never mistaken for one we know. */
typedef struct TaskId {
        pid_t tid;
        uint64_t start_time; /* field 22 of /proc/TID/stat, clock ticks since boot */
} TaskId;

typedef struct Group {
        uint64_t id; /* stable across ticks while the group lives */
        GroupClass class;
        TaskId *tasks; /* owned; tasks[0] is the master of a fanout */
        unsigned n_tasks;
        double util;            /* CPUs' worth of run time over the last tick */
        bool unmeasured;        /* a task's run time is not known over a whole tick yet */
        uint64_t runq_delay_us; /* mean run-queue wait per scheduling of its tasks, last tick */
        double runq_wait;       /* CPUs' worth of run-queue wait: how many of its tasks
                                   waited for a CPU, on average over the last tick */
        double wake_rate;       /* wakeups per second inside the group (decayed) */
        double handoff_rate;    /* the group's progress over the last tick, which a trial
                                   placement is judged by: its members' times on a CPU
                                   per second (hand-offs), wakeups/s where unknown */
        double io_rate;         /* bytes/s its members moved through read and write
                                   calls over the last tick (a stream's work); 0 unknown */
        CpuSet cpus;            /* CPUs its tasks are allowed on now */
        CpuSet ran_on;          /* CPUs its tasks ran on during the last tick */
} Group;

/* "solo", "pair", "fanout", "mesh"; NULL out of range. */
const char *group_class_to_string(GroupClass c);

/*
 * group_format_tids() - g's tasks for a log line into buf (size bytes, always
 * terminated): "tasks 20553 20561" for up to 4 of them, else "first task
 * 20553 of 40".
 */
void group_format_tids(const Group *g, char *buf, size_t size);
/* Return: the GroupClass named s, or -EINVAL. */
int group_class_from_string(const char *s);
