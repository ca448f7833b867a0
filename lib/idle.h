/* SPDX-License-Identifier: MIT */
/*
 * Idle-state (C-state) sampling: per CPU and per cpuidle state its name,
 * exit latency, target residency, disable flag, cumulative residency time and
 * entry count, and the deltas between two reads.
 *
 * Two back ends sit behind IdleOps: libcpupower for the live system (it
 * hard-codes /sys) and a reader of SYSFS_ROOT/sys/devices/system/cpu/cpuN/
 * cpuidle/stateM/ for fixture trees. idle_ops_pick() chooses.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cpustat.h"

#define IDLE_MAX_STATES 10 /* CPUIDLE_STATE_MAX in the kernel */
#define IDLE_NAME_MAX   32
#define IDLE_DESC_MAX   64

typedef struct IdleState {
        char name[IDLE_NAME_MAX]; /* "POLL", "C1", "haltpoll idle" */
        char desc[IDLE_DESC_MAX];
        uint64_t exit_latency_us;
        uint64_t target_residency_us;
        bool disabled;          /* stateM/disable is "1" */
        uint64_t time_us;       /* cumulative residency */
        uint64_t usage;         /* cumulative entries */
        uint64_t delta_time_us; /* since the previous refresh (valid when IdleCpu.has_delta) */
        uint64_t delta_usage;
} IdleState;

typedef struct IdleCpu {
        int cpu;
        unsigned n_states; /* 0: no cpuidle on this CPU (offline, no driver) */
        IdleState states[IDLE_MAX_STATES];
        bool has_delta;       /* two good reads in a row with the same states */
        uint64_t interval_us; /* time between those reads */
} IdleCpu;

/*
 * The back end. Every function returns 0 or a negative errno (-ENOENT when the
 * CPU or state does not exist); root is the sysfs root the ops were picked for.
 */
typedef struct IdleOps {
        const char *name; /* "libcpupower" or "sysfs" */
        /* Return: number of states (0 when the CPU has no cpuidle directory). */
        int (*state_count)(const char *root, unsigned cpu);
        /* Fills name, desc, exit_latency_us, target_residency_us. */
        int (*read_info)(const char *root, unsigned cpu, unsigned state, IdleState *st);
        /* Fills time_us, usage, disabled. */
        int (*read_counters)(const char *root, unsigned cpu, unsigned state, IdleState *st);
        int (*set_disabled)(const char *root, unsigned cpu, unsigned state, bool disable);
} IdleOps;

extern const IdleOps idle_ops_cpupower;
extern const IdleOps idle_ops_sysfs;

/*
 * idle_ops_pick() - libcpupower when sysfs_root is "/" and libcpupower sees
 * states on some CPU, else the sysfs-root reader.
 *
 * Return: the ops (never NULL).
 */
const IdleOps *idle_ops_pick(const char *sysfs_root);

/*
 * idle_cpu_count() - the highest cpuN directory under
 * SYSFS_ROOT/sys/devices/system/cpu, plus one.
 *
 * Return: the count (> 0), -ENOENT when there is no CPU, other negative errno.
 */
int idle_cpu_count(const char *sysfs_root);

typedef struct IdleSampler IdleSampler;

/*
 * idle_sampler_new() - a sampler for every cpuN under sysfs_root, with the ops
 * idle_ops_pick() chooses (ops NULL) or the given ones. Reads the static state
 * information once; counters are read by idle_sampler_refresh().
 *
 * Return: 0, -ENOENT when sysfs_root has no CPUs, other negative errno.
 */
int idle_sampler_new(const char *sysfs_root, const IdleOps *ops, IdleSampler **ret);
IdleSampler *idle_sampler_free(IdleSampler *s);

/*
 * idle_sampler_refresh() - read all counters and compute deltas against the
 * previous refresh. now_us is the caller's CLOCK_MONOTONIC time. A CPU whose
 * states cannot be read (gone offline) or whose state count changed gets
 * has_delta = false this time and its information is read again.
 *
 * Return: 1 when deltas are available for some CPU, 0 on the first refresh
 * (or when none are), negative errno when no CPU could be read at all.
 */
int idle_sampler_refresh(IdleSampler *s, uint64_t now_us);

unsigned idle_sampler_n_cpus(const IdleSampler *s);
/* Return: the CPU's data, NULL when cpu is out of range. */
const IdleCpu *idle_sampler_cpu(const IdleSampler *s, unsigned cpu);
const IdleOps *idle_sampler_ops(const IdleSampler *s);

/* Derived per-CPU figures for one tick. */
typedef struct IdleCpuStats {
        int cpu;
        bool valid;                         /* both idle and busy deltas were there */
        double busy_frac;                   /* /proc/stat busy share of the tick */
        double state_frac[IDLE_MAX_STATES]; /* residency / interval, see idle_cpu_derive() */
        double other_idle_frac;             /* idle time in no cpuidle state */
        double wakeups_per_sec;             /* idle-state entries per second */
        double deepest_idle_share;          /* deepest state's share of the idle residency */
        unsigned n_states;
        unsigned deepest_state; /* index of the state with the highest exit latency */
} IdleCpuStats;

/*
 * idle_cpu_derive() - pure: busy fraction from the /proc/stat deltas, and per
 * state the residency delta over the interval. The two sources are sampled
 * at slightly different moments and /proc/stat counts in ticks, so when busy
 * plus residency exceeds 1 the residency fractions are scaled down to fill
 * 1 - busy; when less, the rest is other_idle_frac. busy_frac +
 * sum(state_frac) + other_idle_frac is therefore 1 for a valid CPU.
 * deepest_idle_share is the deepest state's residency over all residency
 * (0 when the CPU did not idle).
 *
 * Return: 1 when *ret is valid, 0 when a delta is missing (ret->valid false).
 */
int idle_cpu_derive(const IdleCpu *ic, const CpuStatCpu *sc, IdleCpuStats *ret);

/*
 * idle_cpu_derive_stateless() - pure: the figures of a CPU without cpuidle
 * states (no driver: idle is plain HLT). busy_frac from /proc/stat, all idle
 * time in other_idle_frac, and as wakeups_per_sec its idle exits estimated
 * from its interrupts over interval_us (cpustat_refresh_irqs()): a halted
 * CPU leaves idle only on an interrupt, and of its interrupts those that
 * came while it was idle, taken in proportion to idle time.
 *
 * Return: 1 when *ret is valid, 0 when a delta is missing (ret->valid false).
 */
int idle_cpu_derive_stateless(const CpuStatCpu *sc, uint64_t interval_us, IdleCpuStats *ret);

static inline void idle_sampler_freep(IdleSampler **p) {
        idle_sampler_free(*p);
}
