/* SPDX-License-Identifier: MIT */
/*
 * Cpusets of systemd slices: AllowedCPUs= set at runtime through systemd's
 * D-Bus API (SetUnitProperties), used when systemd is PID 1 so that placed
 * and systemd never fight over cgroup files.
 */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "cpuset.h"
#include "journal.h"

#define ACT_SLICE_JOURNAL_KIND "slice"

/*
 * act_slice_get_allowed_cpus() - read AllowedCPUs= of unit. *ret_set is false
 * when the property is unset (the slice inherits all CPUs).
 * Return: 0, or negative errno (-ENOENT for an unknown unit).
 */
int act_slice_get_allowed_cpus(sd_bus *bus, const char *unit, CpuSet *ret, bool *ret_set);

/*
 * act_slice_set_allowed_cpus() - set AllowedCPUs= of unit at runtime; cpus NULL
 * or empty resets it. Return: 0 or negative errno.
 */
int act_slice_set_allowed_cpus(sd_bus *bus, const char *unit, const CpuSet *cpus);

/*
 * act_slice_apply() - journal the original value, then set cpus, unless the
 * slice already has them. dry_run reports without changing.
 * Return: 1 changed (or would change), 0 nothing to do, negative errno.
 */
int act_slice_apply(sd_bus *bus, Journal *j, const char *unit, const CpuSet *cpus, bool dry_run);

/*
 * act_slice_release() - put back the original AllowedCPUs= of unit if it
 * still holds what placed set, and forget it. Return: 1 released, 0 placed
 * held nothing there, negative errno.
 */
int act_slice_release(sd_bus *bus, Journal *j, const char *unit);

/* Journal operations for restoring slices (userdata: the sd_bus *). */
void act_slice_journal_ops(sd_bus *bus, JournalKindOps *ret);
