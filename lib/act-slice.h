/* SPDX-License-Identifier: MIT */
/*
 * The slice actuator: the CPUs of a slice ("system.slice", "user.slice"),
 * through the backend actuator_slice_backend_pick() chose:
 *
 *   - systemd (PID 1): AllowedCPUs= set at runtime through its D-Bus API
 *     (SetUnitProperties), so placed and systemd never fight over cgroup
 *     files; journal kind "slice", key the unit name;
 *   - cgroupfs: cpuset.cpus of the slice's cgroup under the cpuset
 *     hierarchy (act-cpuset.h); journal kind "cpuset", key the directory.
 *
 * Per tick, for each slice: act_slice_apply() when the plan confines it,
 * act_slice_release() when it no longer does. See actuator.h for the
 * contract.
 */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "actuator.h"
#include "cpuset.h"
#include "journal.h"

#define ACT_SLICE_JOURNAL_KIND "slice"

typedef struct ActSlice ActSlice;

/*
 * act_slice_new() - a slice actuator over env, with the backend picked by
 * actuator_slice_backend_pick(). When that backend cannot work (systemd
 * unreachable, no cpuset files) the actuator has none and
 * act_slice_backend_error() says why.
 * Return: 0, or -ENOMEM.
 */
int act_slice_new(const ActuatorEnv *env, ActSlice **ret);
ActSlice *act_slice_free(ActSlice *s);

SliceBackend act_slice_backend(const ActSlice *s);
/* Return: why the picked backend is not in use (negative errno), or 0. */
int act_slice_backend_error(const ActSlice *s);

/*
 * act_slice_apply() - journal the original value, then confine slice to
 * cpus, unless it already has them. In dry run nothing is written.
 * Return: 1 changed (or, dry run, would change), 0 nothing to do (or no
 * backend), negative errno (-ENOENT: no such slice).
 */
int act_slice_apply(ActSlice *s, const char *slice, const CpuSet *cpus);

/*
 * act_slice_release() - put back the original of slice if it still holds
 * what placed set, and forget it. Nothing is written in dry run.
 * Return: 1 released, 0 placed held nothing there, negative errno.
 */
int act_slice_release(ActSlice *s, const char *slice);

/*
 * act_slice_kind_ops() - journal operations for "cpuset" (always: the
 * records name their files) and "slice" (with the systemd backend: only
 * systemd can put them back; without it they are set aside for a person).
 * Return: how many, or -ENOBUFS.
 */
int act_slice_kind_ops(ActSlice *s, JournalKindOps *ret, unsigned max);

/* systemd's AllowedCPUs= of unit; *ret_set false when unset. Return: 0 or negative errno. */
int act_slice_get_allowed_cpus(sd_bus *bus, const char *unit, CpuSet *ret, bool *ret_set);
