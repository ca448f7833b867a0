/* SPDX-License-Identifier: MIT */
/*
 * The cgroupfs backend of the slice actuator (act-slice.h), for hosts where
 * systemd is not PID 1: writes cpuset.cpus of a cgroup directly, in a
 * cgroup v2 tree or the v1 cpuset hierarchy, below a root path so tests run
 * on fixture trees. act_slice_apply() calls it as:
 *
 * For each slice the plan confines (Plan.slice_cpus[i] non-empty):
 *
 *     act_cpuset_apply(a, "system.slice", &plan->slice_cpus[PLAN_SLICE_SYSTEM], NULL, NULL);
 *
 * and for a slice the plan no longer confines (empty set):
 *
 *     act_cpuset_release(a, "system.slice");
 */
#pragma once

#include <stdbool.h>

#include "cpuset.h"
#include "journal.h"

#define ACT_CPUSET_KIND "cpuset"

typedef enum CgroupVersion {
        CGROUP_VERSION_DETECT = 0, /* from the files under the root */
        CGROUP_VERSION_1 = 1,
        CGROUP_VERSION_2 = 2,
} CgroupVersion;

typedef struct ActCpuset ActCpuset;

typedef struct ActCpusetOptions {
        const char *cgroup_root; /* "/sys/fs/cgroup" (v2) or the v1 cpuset mount */
        CgroupVersion version;
        bool dry_run;
        Journal *journal; /* borrowed; required unless dry_run */
} ActCpusetOptions;

typedef enum CpusetResult {
        CPUSET_SET,       /* written (return 1) */
        CPUSET_WOULD_SET, /* dry run */
        CPUSET_UNCHANGED, /* already holds that set: nothing written */
} CpusetResult;

/*
 * act_cpuset_find_mount() - where the cgroup hierarchy of version lives,
 * from procfs_root/self/mountinfo: a "cgroup2" mount for v2, a "cgroup"
 * mount with the cpuset controller for v1. Caller frees *ret.
 *
 * Return: 0; -ENOENT when there is no such mount; -EBADFD, -EFBIG or other
 * negative errno of fileio_lines_next() for a mountinfo that cannot be
 * read.
 */
int act_cpuset_find_mount(const char *procfs_root, CgroupVersion version, char **ret);

/*
 * act_cpuset_new() - an actuator over opts->cgroup_root.
 * Return: 0; -EINVAL for bad options; -ENOENT when the version cannot be
 * detected (no cpuset files at the root); -ENOMEM.
 */
int act_cpuset_new(const ActCpusetOptions *opts, ActCpuset **ret);
ActCpuset *act_cpuset_free(ActCpuset *a);

/* Return: the detected or given version. */
CgroupVersion act_cpuset_version(const ActCpuset *a);

/*
 * act_cpuset_apply() - confine cgroup (relative to the root, e.g.
 * "system.slice"; not the root itself) to want, clamped to the parent's
 * effective CPUs. Nothing is written when the cgroup already holds that
 * set (in v2, an empty cpuset.cpus whose effective set equals it counts as
 * holding it). The exact previous file content is journaled (kind "cpuset",
 * key the cgroup's directory path) before the first write.
 *
 * Return: 1 written; 0 nothing written (see *ret_result: unchanged or dry
 * run); -EINVAL when nothing is left after clamping or the path is bad;
 * -ENOENT when the cgroup does not exist; other negative errno from the
 * write (-EBUSY/-ENOSPC from v1 rules are permanent until the tree changes).
 * ret_result and ret_applied (may be NULL) are set when the return is >= 0.
 */
int act_cpuset_apply(ActCpuset *a, const char *cgroup, const CpuSet *want, CpusetResult *ret_result,
                     CpuSet *ret_applied);

/*
 * act_cpuset_release() - put back the exact original cpuset.cpus of cgroup
 * if it still holds what placed set, and forget it (an empty v2 original
 * while tasks are inside: the parent's effective CPUs, see act-cpuset.c).
 * Nothing is written in dry run.
 *
 * Return: 1 written back; 0 nothing to do (not journaled, changed by
 * someone else, gone); negative errno when the write failed (record kept).
 */
int act_cpuset_release(ActCpuset *a, const char *cgroup);

/* The journal operations for kind "cpuset" (key = cgroup directory path). */
void act_cpuset_kind_ops(JournalKindOps *ret);

/*
 * act_cpuset_read_cpus() - the content of DIR/cpuset.cpus without the
 * trailing newline ("" = inherit in v2). Return: 0, -ENOENT; -EBADFD,
 * -EFBIG, -EBADMSG or other negative errno as read_small_file_alloc().
 */
int act_cpuset_read_cpus(const char *dir, char **ret);
