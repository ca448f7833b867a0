/* SPDX-License-Identifier: MIT */
/*
 * The actuator contract's shared parts (see actuator.h): the one sorting of
 * errors, the one choice of how slices are confined, and the bundle of
 * actuators that the pipeline applies with and restore replays with, so
 * both always agree on which kinds exist and how each is written.
 */
#include "actuator.h"

#include <errno.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "act-affinity.h"
#include "act-cpuset.h"
#include "act-idle.h"
#include "act-slice.h"
#include "macro.h"
#include "string-table.h"

bool actuator_error_is_transient(int r) {
        return r == -ESRCH || r == -EAGAIN || r == -EBUSY || r == -EINTR || r == -ENOMEM ||
               r == -ETIMEDOUT;
}

int actuator_find_cpuset_root(const char *procfs_root, char **ret) {
        int r = act_cpuset_find_mount(procfs_root, CGROUP_VERSION_1, ret);
        if (r == -ENOENT)
                r = act_cpuset_find_mount(procfs_root, CGROUP_VERSION_2, ret);
        return r;
}

static bool is_live_root(const char *root) {
        return !root || root[strspn(root, "/")] == '\0';
}

SliceBackend actuator_slice_backend_pick(const ActuatorEnv *env) {
        if (sd_booted() > 0 && is_live_root(env->sysfs_root))
                return SLICE_BACKEND_SYSTEMD;
        return env->cgroup_root ? SLICE_BACKEND_CGROUPFS : SLICE_BACKEND_NONE;
}

static const char *const slice_backend_table[_SLICE_BACKEND_MAX] = {
        [SLICE_BACKEND_NONE] = "none",
        [SLICE_BACKEND_SYSTEMD] = "systemd",
        [SLICE_BACKEND_CGROUPFS] = "cgroupfs",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(slice_backend, SliceBackend);

int actuators_open(const ActuatorEnv *env, Actuators *ret, int *ret_idle_error) {
        Actuators a = { 0 };
        int r = act_affinity_new(env, &a.affinity);
        if (r < 0)
                return r;
        int idle = act_idle_new(env, &a.idle);
        r = act_slice_new(env, &a.slice);
        if (r < 0) {
                actuators_close(&a);
                return r;
        }
        if (ret_idle_error)
                *ret_idle_error = idle < 0 ? idle : 0;
        *ret = a;
        return 0;
}

void actuators_close(Actuators *a) {
        a->affinity = act_affinity_free(a->affinity);
        a->idle = act_idle_free(a->idle);
        a->slice = act_slice_free(a->slice);
}

int actuators_kind_ops(Actuators *a, JournalKindOps *ret, unsigned max) {
        int n = act_affinity_kind_ops(a->affinity, ret, max), k;
        if (n < 0)
                return n;
        if (a->idle) {
                k = act_idle_kind_ops(a->idle, ret + n, max - (unsigned)n);
                if (k < 0)
                        return k;
                n += k;
        }
        k = act_slice_kind_ops(a->slice, ret + n, max - (unsigned)n);
        return k < 0 ? k : n + k;
}
