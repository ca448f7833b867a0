/* SPDX-License-Identifier: MIT */
/*
 * Energy: an estimate from idle-state residency for machines without an energy
 * counter (this VM, most guests, many ARM boards), and the powercap RAPL
 * counters where they exist, reported beside the estimate.
 *
 * The model, per CPU and tick, in "active-CPU equivalents" (ACE: 1.0 = one
 * CPU running flat out for the whole tick):
 *
 *   ace = busy_frac * 1.0
 *       + sum over states (state_frac * weight(state))
 *       + other_idle_frac * other_idle_weight
 *       + wakeups_per_sec * wakeup_cost_us / 1e6
 *
 * weight(state) is the state's power relative to an active CPU: from the
 * model's overrides by name, else the built-in table (POLL 0.9: it spins; C1,
 * "haltpoll idle" 0.3; C1E 0.2; C3 0.1; C6 0.05; deeper 0.03), else by exit
 * latency (0 us 0.9, <= 2 us 0.3, <= 20 us 0.2, <= 100 us 0.1, else 0.05).
 * wakeup_cost_us charges each idle entry and exit as that many microseconds
 * of an active CPU (cache and TLB refills, the transition itself). Watts =
 * ACE * watts_per_cpu, when a nominal figure is configured (0 = unknown).
 * The numbers are rough on purpose: the estimate ranks placements, it does
 * not meter them.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "idle.h"

#define ENERGY_MAX_OVERRIDES 16

typedef struct EnergyWeight {
        char name[IDLE_NAME_MAX]; /* state name, compared case-insensitively */
        double weight;
} EnergyWeight;

typedef struct EnergyModel {
        double wakeup_cost_us;    /* active-CPU microseconds per idle entry */
        double other_idle_weight; /* idle time outside any cpuidle state */
        double watts_per_cpu;     /* nominal power of one active CPU; 0 = unknown */
        EnergyWeight overrides[ENERGY_MAX_OVERRIDES];
        unsigned n_overrides;
} EnergyModel;

/* energy_model_init() - the defaults above: wakeup_cost_us 10, other idle 0.3, watts unknown. */
void energy_model_init(EnergyModel *m);

/*
 * energy_model_set_weight() - override the weight of the state called name.
 *
 * Return: 1 added, 0 replaced, -EINVAL for a weight outside [0, 1] or an
 * empty name, -ENOSPC when ENERGY_MAX_OVERRIDES are set.
 */
int energy_model_set_weight(EnergyModel *m, const char *name, double weight);

/* Return: the power weight of a state (see the top of this file). */
double energy_state_weight(const EnergyModel *m, const char *name, uint64_t exit_latency_us);

/*
 * energy_estimate_cpu() - the ACE of one CPU for one tick; ic supplies the
 * state names and latencies, st the fractions (idle_cpu_derive()).
 *
 * Return: ACE >= 0, or -1 when st is not valid.
 */
double energy_estimate_cpu(const EnergyModel *m, const IdleCpu *ic, const IdleCpuStats *st);

typedef struct EnergyEstimate {
        double ace;      /* sum over the CPUs counted */
        double watts;    /* ace * watts_per_cpu; 0 when unknown */
        unsigned n_cpus; /* CPUs with valid stats */
} EnergyEstimate;

/*
 * energy_estimate() - sum energy_estimate_cpu() over stats[0..n) (invalid
 * entries skipped), taking each CPU's states from the sampler; s NULL on a
 * machine without cpuidle states (idle_cpu_derive_stateless() figures).
 *
 * Return: 1 when some CPU counted, 0 when none did (*ret zeroed).
 */
int energy_estimate(const EnergyModel *m, const IdleSampler *s, const IdleCpuStats *stats,
                    unsigned n, EnergyEstimate *ret);

/* Measured energy from SYSFS_ROOT/sys/class/powercap/intel-rapl:*. */
typedef struct EnergyRaplZone {
        char zone[64];  /* directory name, "intel-rapl:0" */
        char name[64];  /* "package-0", "core", "psys" */
        bool top_level; /* "intel-rapl:N", not a subzone "intel-rapl:N:M" */
        uint64_t energy_uj;
        uint64_t max_energy_range_uj;
        bool has_delta;
        uint64_t delta_uj; /* since the previous refresh, wraparound handled */
} EnergyRaplZone;

typedef struct EnergyRapl EnergyRapl;

/*
 * energy_rapl_open() - find the RAPL zones (those with an energy_uj file).
 *
 * Return: 0; -ENOENT when there are none (no RAPL: report the estimate
 * only); other negative errno.
 */
int energy_rapl_open(const char *sysfs_root, EnergyRapl **ret);
EnergyRapl *energy_rapl_free(EnergyRapl *r);

/*
 * energy_rapl_refresh() - read every zone's counter. now_us is the caller's
 * CLOCK_MONOTONIC time. The measured power is the sum over the top-level
 * package zones (all top-level zones but psys when none is called
 * "package-*"), so subzones and the platform zone are not counted twice.
 *
 * Return: 1 and *ret_watts set when a delta is available, 0 on the first
 * read, negative errno (-EACCES: energy_uj is root-only on current kernels).
 */
int energy_rapl_refresh(EnergyRapl *r, uint64_t now_us, double *ret_watts);

unsigned energy_rapl_n_zones(const EnergyRapl *r);
const EnergyRaplZone *energy_rapl_zone(const EnergyRapl *r, unsigned i);

/* Return: counter delta from before to now, wrapping at max_range (0 = no wrap known). */
uint64_t energy_rapl_delta_uj(uint64_t before, uint64_t now, uint64_t max_range);

static inline void energy_rapl_freep(EnergyRapl **p) {
        energy_rapl_free(*p);
}
