/* SPDX-License-Identifier: MIT */
/*
 * Per-task facts, read once a tick: the one /proc parser of placed, and the
 * one reader of the same facts from the kernel's task iterator where the
 * BPF sampler runs one (task_facts_reader_set_kernel()).
 *
 * The sample stage reads, for each task of the wake graph, everything the
 * later stages need about it, from PROCFS_ROOT/TGID/task/TID/:
 *
 *   stat       identity (tid + start time), comm, state, flags (kernel
 *              thread), policy and RT priority, the CPU it last ran on
 *   schedstat  run time, run-queue delay, timeslices (no CONFIG_SCHEDSTATS needed)
 *   status     Tgid, Cpus_allowed_list (its affinity now)
 *   io         rchar + wchar: bytes through read and write calls (0 when the
 *              file is missing: a kernel without CONFIG_TASK_XACCT)
 *   cgroup     its cgroup: the unified "0::" entry, else the v1 cpuset entry
 *
 * and, under a cgroup root, the effective CPUs of its cpuset cgroup (v2
 * cpuset.cpus.effective or v1 cpuset.effective_cpus, from the nearest
 * cgroup that has the file), the systemd unit its cgroup belongs to, and
 * its executable (PROCFS_ROOT/TGID/exe, cached per process: tgid + the
 * leader's start time). The model, the filters, the policy and the
 * actuators then work from these facts and read nothing again.
 *
 *     TaskFactsReader *r;
 *     task_facts_reader_new("/proc", "/sys/fs/cgroup/cpuset", &r);
 *     each tick:  task_facts_reader_new_tick(r);
 *                 for each task: task_facts_read(r, tgid, tid, &facts);
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpuset.h"
#include "group.h"
#include "wake.h"

#define TASK_FACTS_COMM_MAX 16
#define TASK_FACTS_PATH_MAX 1024
#define TASK_FACTS_UNIT_MAX 256

typedef struct TaskFacts {
        TaskId id;  /* start_time: field 22 of stat, clock ticks since boot */
        pid_t tgid; /* from status */
        pid_t ppid; /* field 4 */
        char comm[TASK_FACTS_COMM_MAX];
        char state;            /* field 3 */
        unsigned flags;        /* field 9 (PF_KTHREAD = 0x00200000) */
        int processor;         /* field 39: the CPU it last ran on; -1 unknown */
        unsigned rt_priority;  /* field 40 */
        unsigned policy;       /* field 41: SCHED_OTHER, SCHED_FIFO, ... */
        uint64_t run_ns;       /* schedstat: time on a CPU */
        uint64_t run_delay_ns; /* schedstat: time waiting on a run queue */
        uint64_t timeslices;   /* schedstat: times it ran */
        uint64_t io_bytes;     /* io: rchar + wchar, bytes through read and write calls */
        CpuSet allowed;        /* Cpus_allowed_list: its affinity now */
        /* The effective CPUs of its cpuset cgroup; empty when unknown (no
         * cgroup root, or no cpuset file up to the root). */
        CpuSet cpuset_cpus;
        /* Plain strings, "" when unknown, for the filters and the rules: */
        char cgroup[TASK_FACTS_PATH_MAX]; /* "/system.slice/foo.service" */
        char unit[TASK_FACTS_UNIT_MAX];   /* "foo.service", "session-2.scope" */
        char exe[TASK_FACTS_PATH_MAX];    /* "/usr/bin/foo"; "" for kernel threads */
} TaskFacts;

/* Why a task is not placed's to touch (docs/design.md, "Respecting the owner's system"). */
typedef enum TaskOwner {
        TASK_OWNER_PLACED,  /* placed may change it */
        TASK_OWNER_KTHREAD, /* a kernel thread */
        TASK_OWNER_INIT,    /* PID 1 and its threads */
        TASK_OWNER_SELF,    /* placed itself */
        TASK_OWNER_RT,      /* SCHED_FIFO, SCHED_RR, SCHED_DEADLINE */
} TaskOwner;

typedef struct TaskFactsReader TaskFactsReader;

/*
 * task_facts_reader_new() - a reader over procfs_root ("/proc") and
 * cgroup_root, the directory the paths in /proc/TID/cgroup are relative to
 * for the cpuset controller (the v1 cpuset mount, or the v2 mount); NULL:
 * no cpuset facts. Both strings are copied.
 * Return: 0 or -ENOMEM.
 */
int task_facts_reader_new(const char *procfs_root, const char *cgroup_root, TaskFactsReader **ret);
TaskFactsReader *task_facts_reader_free(TaskFactsReader *r);

/*
 * Where a reader finds the kernel's own record of a task (the BPF source's
 * task iterator, wake_source_task()): return 1 and *ret, or 0. Such a task's
 * stat, schedstat and status facts come from the record, and no file is
 * opened for it but, once per cgroup and once per process, its cgroup and
 * its executable (cached by the cgroup's kernel ids and the process's
 * identity). Tasks it does not know are read from /proc.
 */
typedef int (*TaskFactsKernelLookup)(void *userdata, pid_t tid, WakeTaskView *ret);

/* Installs lookup (NULL: /proc alone); userdata is the caller's. */
void task_facts_reader_set_kernel(TaskFactsReader *r, TaskFactsKernelLookup lookup, void *userdata);

/* Starts a tick: cgroups' effective CPUs are read again, once each. */
void task_facts_reader_new_tick(TaskFactsReader *r);

/* Files opened since the reader was made (for the tests of the kernel path). */
uint64_t task_facts_reader_files_opened(const TaskFactsReader *r);

/* A process exited or exec()ed: drop its cached executable. */
void task_facts_reader_forget_process(TaskFactsReader *r, pid_t tgid);

/*
 * task_facts_read() - all of tid's facts: from the kernel's record where
 * the reader has one (task_facts_reader_set_kernel()), else from /proc.
 * tgid 0 reads through PROCFS_ROOT/TID/task/TID (works for any thread); pass
 * it where known.
 *
 * Return: 0 and *ret; -ESRCH when the task is gone (or is not a thread of
 * tgid); -EINVAL on a malformed file; other negative errno. *ret is
 * untouched on failure.
 */
int task_facts_read(TaskFactsReader *r, pid_t tgid, pid_t tid, TaskFacts *ret);

/*
 * task_facts_read_stat() - only what stat says (identity, comm, state,
 * flags, ppid, policy, processor): for the actuators' identity checks
 * outside a tick (release, restore). Other fields are zero.
 *
 * Return: as task_facts_read().
 */
int task_facts_read_stat(const char *procfs_root, pid_t tgid, pid_t tid, TaskFacts *ret);

/* Return: true when t is the task id names (tid and start time). */
bool task_facts_is(const TaskFacts *t, const TaskId *id);

/* Return: true for SCHED_FIFO, SCHED_RR or SCHED_DEADLINE. */
bool task_facts_is_realtime(const TaskFacts *t);

/*
 * Return: whether placed may change t; self_pid is placed's own process.
 * Kernel threads by PF_KTHREAD, init by PID 1 of placed's PID namespace.
 */
TaskOwner task_facts_owner(const TaskFacts *t, pid_t self_pid);
const char *task_owner_to_string(TaskOwner o);

/*
 * task_facts_unit_from_cgroup() - the systemd unit of a cgroup path: its
 * innermost component ending in ".service" or ".scope"; "" when none.
 * Return: 0, or -ENOBUFS when the name does not fit (buf is then "").
 */
int task_facts_unit_from_cgroup(const char *cgroup, char *buf, size_t size);

/*
 * task_facts_parse_cgroup() - from the text of /proc/TID/cgroup, the
 * unified ("0::") path, else the v1 cpuset path (ret_cgroup), and the path
 * in the cpuset hierarchy: v1 cpuset if present, else unified
 * (ret_cpuset). Either may be NULL.
 * Return: 0; -ENOENT when there is neither entry; -ENOBUFS when a path
 * does not fit; -EINVAL for a malformed line.
 */
int task_facts_parse_cgroup(const char *text, char *ret_cgroup, char *ret_cpuset, size_t size);

/*
 * task_alive() - whether task tid lives: procfs_root/TID is there (NULL =
 * "/proc"), as it is for every thread, though readdir lists only leaders.
 * Inside a PID namespace, where no proc connector reports exits, it is how
 * an exit is told.
 */
bool task_alive(const char *procfs_root, pid_t tid);

/*
 * pid_ns_is_initial() - whether the calling process is in the kernel's
 * initial PID namespace, by the inode of procfs_root/self/ns/pid (NULL =
 * "/proc"): the kernel gives the initial namespace the fixed inode number
 * 0xEFFFFFFC (PROC_PID_INIT_INO), the same on every kernel since 3.8.
 *
 * Return: 1 initial, 0 not, or negative errno (no such file: a fixture
 * tree, or procfs not mounted).
 */
int pid_ns_is_initial(const char *procfs_root);
