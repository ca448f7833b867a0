/* SPDX-License-Identifier: MIT */
/*
 * The idle-state constraints actuator: caps the exit latency a CPU may pay
 * to wake up, per CPU, through
 *
 *   - SYSFS_ROOT/sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us
 *     (journal kind "pm_qos", key "N"): "0" means no constraint, "n/a" means
 *     no resume latency is acceptable (only polling), "M" allows states with
 *     an exit latency up to M us (Documentation/ABI/testing/sysfs-devices-power);
 *   - stateM/disable of the states whose exit latency exceeds the cap
 *     (kind "cpuidle", key "N:M"), through libcpupower on the live system;
 *   - /dev/cpu_dma_latency, held open with a 32-bit value for a machine-wide
 *     request. The kernel drops that request when the file is closed, also
 *     when the process dies, so it is not journaled: nothing can be left over.
 *
 * Every sysfs write is journaled first (journal values are the files' exact
 * text without the newline), nothing is written when the value is already
 * right, and a value an administrator changed after placed set it is left
 * alone (the object is forgotten, and not set again until its cap is
 * released).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actuator.h"
#include "journal.h"

#define ACT_IDLE_NO_CAP       (-1) /* in the cap array: no constraint for this CPU */
#define ACT_IDLE_N_KINDS      2    /* JournalKindOps filled by act_idle_kind_ops() */
#define ACT_IDLE_KIND_QOS     "pm_qos"
#define ACT_IDLE_KIND_CPUIDLE "cpuidle"

typedef struct ActIdle ActIdle;

typedef enum ActIdleMechanism {
        ACT_IDLE_AUTO = 0,               /* PM QoS where the CPU has it, else state disable */
        ACT_IDLE_PM_QOS = 1 << 0,        /* PM QoS only */
        ACT_IDLE_STATE_DISABLE = 1 << 1, /* state disable only; both bits: both */
} ActIdleMechanism;

/*
 * Called for each change made (or, in dry-run mode, that would be made):
 * kind and key as journaled, from = current text, to = new text.
 * For the global request kind is "cpu_dma_latency", key "global", and from
 * is "" when no request was held ("" as to: released).
 */
typedef void (*ActIdleReportFn)(const char *kind, const char *key, const char *from, const char *to,
                                bool dry_run, void *userdata);

/*
 * act_idle_new() - an actuator for the CPUs under env->sysfs_root ("/" =
 * live: cpuidle through libcpupower, /dev/cpu_dma_latency; else the tree's
 * files and SYSFS_ROOT/dev/cpu_dma_latency). env->journal (not owned) may
 * be NULL only when the actuator is used for act_idle_kind_ops() alone or
 * in dry-run mode.
 *
 * Return: 0, -ENOENT when the root has no CPUs, other negative errno.
 */
int act_idle_new(const ActuatorEnv *env, ActIdle **ret);

/* Closes /dev/cpu_dma_latency (releasing the global request); sysfs values
 * are left as they are: restoring them is the journal's job. */
ActIdle *act_idle_free(ActIdle *a);

void act_idle_set_mechanism(ActIdle *a, ActIdleMechanism mechanism);
void act_idle_set_report(ActIdle *a, ActIdleReportFn fn, void *userdata);

/*
 * act_idle_apply() - make the constraints match max_latency_us[cpu] for every
 * CPU (ACT_IDLE_NO_CAP or a CPU at or beyond n = no constraint: what placed
 * set there is restored). A cap of 0 allows polling only. An original PM QoS
 * value that is already as strict as the cap is kept as it is. All CPUs are
 * tried even when one fails. In dry-run mode nothing is written or journaled;
 * the report callback says what would be set.
 *
 * Return: 1 when something was (or would be) changed, 0 when all was already
 * right, else the first negative errno (see actuator_error_is_transient()).
 */
int act_idle_apply(ActIdle *a, const int64_t *max_latency_us, unsigned n);

/*
 * act_idle_set_global() - hold a machine-wide request on /dev/cpu_dma_latency
 * (max_latency_us >= 0, clamped to INT32_MAX) or drop it (< 0: closes the
 * file). No write when the value is unchanged.
 *
 * Return: 1 changed, 0 unchanged, negative errno.
 */
int act_idle_set_global(ActIdle *a, int64_t max_latency_us);

/*
 * act_idle_release_all() - restore everything this actuator set (as
 * act_idle_apply() with no caps) and drop the global request.
 *
 * Return: 1 when something was restored, 0 when nothing was held, first
 * negative errno.
 */
int act_idle_release_all(ActIdle *a);

/*
 * act_idle_kind_ops() - the journal's read/write operations for the kinds
 * "pm_qos" and "cpuidle", bound to a (which must outlive them).
 *
 * Return: ACT_IDLE_N_KINDS (entries filled in ret), or -ENOBUFS when max is
 * smaller.
 */
int act_idle_kind_ops(ActIdle *a, JournalKindOps *ret, unsigned max);

/*
 * act_idle_qos_text() - pure: the pm_qos_resume_latency_us text for a cap
 * ("n/a" for 0, the number otherwise).
 */
void act_idle_qos_text(int64_t max_latency_us, char *buf, size_t size);

/*
 * act_idle_qos_parse() - pure: the latency a pm_qos_resume_latency_us text
 * allows: "0" -> INT64_MAX (no constraint), "n/a" -> 0, "M" -> M.
 *
 * Return: 0 or -EINVAL.
 */
int act_idle_qos_parse(const char *text, int64_t *ret_us);

static inline void act_idle_freep(ActIdle **p) {
        act_idle_free(*p);
}
