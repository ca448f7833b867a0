/* SPDX-License-Identifier: MIT */
/*
 * What the owner excluded in the configuration ([exclude] comm= and
 * cgroup=): tasks placed must never touch, whatever their wake pattern.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

/*
 * exclude_match() - true when comm matches one of the comm globs (fnmatch)
 * or cgroup lies under one of the cgroup prefixes ("/a/b" covers "/a/b" and
 * "/a/b/c", not "/a/bc"). cgroup may be NULL (unknown: only comm is checked).
 */
bool exclude_match(const Config *c, const char *comm, const char *cgroup);

/*
 * exclude_read_cgroup() - the task's cgroup path from PROCFS_ROOT/TID/cgroup:
 * the unified (v2, "0::") entry, else the v1 cpuset entry.
 * Return: 0, -ESRCH when the task is gone, -ENOENT when no such entry,
 * -ENOBUFS when the path does not fit.
 */
int exclude_read_cgroup(const char *procfs_root, pid_t tid, char *buf, size_t size);
