/* SPDX-License-Identifier: MIT */
/*
 * WakePidMap: the kernel's global PIDs of tasks -> the TIDs of the PID
 * namespace placed runs in, learnt from perf samples (wake-source-perf.c says
 * from which). Used by the perf wake source only when placed is not in the
 * initial PID namespace (pid_ns_is_initial() in task-facts.h); see
 * wake-pid-map.c for why it is needed.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "wake.h"

typedef struct WakePidMap WakePidMap;

/* Return: 0 and *ret, or -ENOMEM. */
int wake_pid_map_new(WakePidMap **ret);
WakePidMap *wake_pid_map_free(WakePidMap *m);

/*
 * wake_pid_map_learn() - the task global (the kernel's PID) is local in
 * placed's namespace and is called comm (WAKE_COMM_LEN, NUL-terminated or
 * not). Replaces what was known of global.
 *
 * Return: 0, -EINVAL for a PID that is not positive, -ENOMEM.
 */
int wake_pid_map_learn(WakePidMap *m, pid_t global, pid_t local, const char *comm);

/*
 * wake_pid_map_lookup() - the local TID of the task global, if it was learnt
 * under the same comm (a different comm: the PID was reused, or the task
 * exec'd; it is not trusted until learnt again).
 *
 * Return: the local TID, or 0 when not known.
 */
pid_t wake_pid_map_lookup(const WakePidMap *m, pid_t global, const char *comm);

/*
 * wake_pid_map_prune() - forgets the tasks whose local TID is no longer in
 * procfs_root (NULL = "/proc"): they exited, and their global PIDs may be
 * reused.
 *
 * Return: how many were forgotten, or -ENOMEM.
 */
int wake_pid_map_prune(WakePidMap *m, const char *procfs_root);

size_t wake_pid_map_size(const WakePidMap *m);

static inline void wake_pid_map_freep(WakePidMap **m) {
        wake_pid_map_free(*m);
}
