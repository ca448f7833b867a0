/* SPDX-License-Identifier: MIT */
/*
 * The actuator contract. Everything placed changes on the system goes
 * through an actuator, and every actuator has the same shape:
 *
 *     act_X_new(const ActuatorEnv *env, ..., ActX **ret)
 *     act_X_apply(a, OBJECT, VALUE, ...)   1 written (dry run: 0 and "would"),
 *                                          0 nothing to do, negative errno
 *     act_X_release(a, OBJECT)             the original back if the object
 *                                          still holds what placed set: 1,
 *                                          0 nothing to do, negative errno
 *     act_X_kind_ops(a, ret, max)          its journal operations (one per
 *                                          kind it journals): how many
 *
 * Each journals the original value before its first write (journal.h) and
 * reads nothing it was not given beyond the object's current value. Errors
 * are sorted once, by actuator_error_is_transient(): transient ones are
 * retried next tick without noise, permanent ones are logged once by the
 * caller.
 *
 * The actuators: act-affinity.h (a task's CPUs), act-idle.h (idle-state
 * constraints per CPU), act-slice.h (the CPUs of a slice, through systemd or
 * cgroupfs cpuset files: the backend is chosen here, in
 * actuator_slice_backend_pick(), for the tick and for restore alike).
 * actuators.h bundles them for the pipeline and for restore (restore.h);
 * this header knows none of them.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "cpuset.h"
#include "journal.h"

/* What every actuator is made with; strings are borrowed for its life. */
typedef struct ActuatorEnv {
        const char *procfs_root; /* "/proc" */
        const char *sysfs_root;  /* "/": the live system */
        /* The cpuset hierarchy (actuator_find_cpuset_root()); NULL: none. */
        const char *cgroup_root;
        CpuSet online;    /* the CPUs a task may be given */
        pid_t self_pid;   /* placed's own process; 0 = getpid() */
        bool dry_run;     /* compute and report, change nothing */
        Journal *journal; /* borrowed; required unless dry_run */
} ActuatorEnv;

/* How slices are confined, chosen in one place (see actuator_slice_backend_pick()). */
typedef enum SliceBackend {
        SLICE_BACKEND_NONE,     /* slices stay unconfined */
        SLICE_BACKEND_SYSTEMD,  /* AllowedCPUs= through systemd's D-Bus API */
        SLICE_BACKEND_CGROUPFS, /* cpuset.cpus files under env->cgroup_root */
        _SLICE_BACKEND_MAX,
} SliceBackend;

/* Return: true for errors worth retrying next tick (-ESRCH, -EAGAIN, -EBUSY,
 * -EINTR, -ENOMEM, -ETIMEDOUT); any other is permanent for that object. */
bool actuator_error_is_transient(int r);

/*
 * actuator_find_cpuset_root() - where the cpuset controller's hierarchy is
 * mounted, from procfs_root/self/mountinfo: the v1 cpuset mount, else the
 * v2 mount. Caller frees *ret.
 * Return: 0; -ENOENT without one; other negative errno.
 */
int actuator_find_cpuset_root(const char *procfs_root, char **ret);

/*
 * actuator_slice_backend_pick() - systemd when it is PID 1 and env is the
 * live system (sysfs_root "/"): it owns the cgroup tree, so placed never
 * writes cgroup files behind its back, even when it cannot be reached;
 * else cgroupfs when there is a cpuset hierarchy; else none.
 */
SliceBackend actuator_slice_backend_pick(const ActuatorEnv *env);
/* "none", "systemd", "cgroupfs"; NULL out of range. */
const char *slice_backend_to_string(SliceBackend b);
