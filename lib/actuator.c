/* SPDX-License-Identifier: MIT */
/*
 * The actuator contract's shared parts (see actuator.h): the one sorting of
 * errors, the one choice of how slices are confined, and where an
 * environment's cpuset hierarchy is.
 */
#include "actuator.h"

#include <errno.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "act-cpuset.h"
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
