/* SPDX-License-Identifier: MIT */
/*
 * What the owner excluded in the configuration ([exclude] comm= and
 * cgroup=): tasks placed must never touch, whatever their wake pattern.
 * The task's comm and cgroup come from its facts (task-facts.h).
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
