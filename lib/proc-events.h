/* SPDX-License-Identifier: MIT */
/*
 * Process lifecycle events (fork, exec, exit, comm) from the kernel's netlink
 * proc connector, read through libnl. The model prunes exited tasks at once
 * and a new thread of a managed group is placed within one tick.
 *
 * Usage:
 *
 *     proc_events_new(on_event, userdata, &pe);   then scan /proc once
 *     loop: when proc_events_fd(pe) is readable, proc_events_dispatch(pe);
 *           PROC_EVENTS_LOST from it means: rescan /proc on the next tick
 *     proc_events_free(pe);
 *
 * Privileges: kernels before the connector's event filtering (v6.6) answer
 * -EPERM without CAP_NET_ADMIN; newer ones (6.18 here) let any user listen.
 * The connector reports only to listeners in the initial network, PID and
 * user namespaces, with PIDs as seen there: in another network namespace the
 * subscription fails (-ECONNREFUSED), in another PID or user namespace some
 * kernels (6.1) ignore it silently, which proc_events_new() detects (no
 * acknowledgement) and reports as -EOPNOTSUPP, and others acknowledge it
 * with EPERM (6.18 builds seen here). Without the connector the
 * daemon falls back to rescanning /proc on the tick.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>
#include <linux/cn_proc.h>

typedef struct ProcEvents ProcEvents;

/* One event. Fields that do not apply to the type are 0. */
typedef struct ProcEvent {
        uint32_t type;         /* PROC_EVENT_FORK, _EXEC, _EXIT or _COMM (<linux/cn_proc.h>) */
        pid_t pid;             /* the thread (fork: the new one), as in the initial PID ns */
        pid_t tgid;            /* its process */
        pid_t parent_pid;      /* fork, exit: the kernel's real_parent; for a new thread */
        pid_t parent_tgid;     /*   that is the process's parent, not the creating thread */
        uint32_t exit_code;    /* exit: wait status as waitpid() reports it (WEXITSTATUS...) */
        int exit_signal;       /* exit: signal sent to the parent (SIGCHLD; -1 for threads) */
        unsigned cpu;          /* the CPU the event happened on */
        uint64_t timestamp_ns; /* CLOCK_MONOTONIC */
        char comm[16];         /* comm: the new name, NUL-terminated */
} ProcEvent;

/*
 * Called from proc_events_dispatch() for each event, in the order received.
 * Return 0 to go on, or a negative errno to stop dispatching: dispatch
 * returns it and the events not yet delivered stay queued.
 */
typedef int (*ProcEventsCallback)(const ProcEvent *ev, void *userdata);

/* Counters since proc_events_new(). */
typedef struct ProcEventsStats {
        uint64_t events;      /* proc connector events received (all types) */
        uint64_t lost_events; /* events the kernel counted but we never received */
        uint64_t overflows;   /* times the socket's receive buffer overflowed (ENOBUFS) */
} ProcEventsStats;

/* proc_events_dispatch() returns this when events were lost during the call. */
#define PROC_EVENTS_LOST 2

/*
 * proc_events_new() - open a non-blocking proc connector socket and subscribe
 * (PROC_CN_MCAST_LISTEN). cb is called only from proc_events_dispatch():
 * events from before this returns are dropped, so scan /proc after it.
 *
 * Return: 0 and *ret; -EPERM when the kernel requires CAP_NET_ADMIN or
 * refuses a listener outside the initial PID/user namespace; -EOPNOTSUPP
 * when the kernel ignored the subscription (outside them, older kernels); -ECONNREFUSED (or
 * -EPROTONOSUPPORT) without a connector (other network namespace); -ENOMEM; -EIO for other libnl
 * failures. *ret untouched on failure.
 */
int proc_events_new(ProcEventsCallback cb, void *userdata, ProcEvents **ret);

/* proc_events_free() - unsubscribe (PROC_CN_MCAST_IGNORE) and close. NULL-safe. Return: NULL. */
ProcEvents *proc_events_free(ProcEvents *pe);

/* The socket's fd: poll it for readability (level-triggered). */
int proc_events_fd(const ProcEvents *pe);

/*
 * proc_events_dispatch() - read what is pending without blocking, calling the
 * callback for each fork, exec, exit and comm event. At most a bounded batch
 * per call, so a fork storm cannot starve the loop: the fd stays readable
 * while more wait. Losses are detected from socket overflows (ENOBUFS) and
 * from gaps in the kernel's per-CPU event sequence numbers.
 *
 * Return: 0 when nothing was pending, 1 when something was read,
 * PROC_EVENTS_LOST when events were lost (the caller should rescan /proc),
 * or a negative errno (the callback's own, or -EIO/-ENOMEM from the socket).
 */
int proc_events_dispatch(ProcEvents *pe);

/* proc_events_get_stats() - counters since proc_events_new(). */
void proc_events_get_stats(const ProcEvents *pe, ProcEventsStats *ret);
