/* SPDX-License-Identifier: MIT */
/*
 * The tick's pipeline: sample -> model -> decide -> diff/apply -> publish,
 * over the lib/ modules (wake source and graph, policy, actuators). The
 * manager owns a Pipeline and calls pipeline_tick() once a tick.
 */
#pragma once

#include <stdint.h>

#include "energy.h"
#include "idle.h"
#include "manager.h"
#include "wake-graph.h"

typedef struct Pipeline Pipeline;

/*
 * pipeline_new() - open the wake source (BPF, else perf, as configured), the
 * actuators and the samplers. A wake source that cannot be opened is logged
 * and leaves placed publishing an empty model ("none"), not failing.
 * Return: 0 or negative errno (logged).
 */
int pipeline_new(Manager *m, Pipeline **ret);
Pipeline *pipeline_free(Pipeline *p);

/* One pass. now_ns: CLOCK_MONOTONIC. */
void pipeline_tick(Pipeline *p, Manager *m, uint64_t now_ns);

/* Hand every task back to the kernel and lift every constraint (restore):
 * the journal restore does the writing; this forgets the applied state. */
void pipeline_forget_applied(Pipeline *p);

/* The plan of the last tick (NULL before the first). */
const struct Plan *pipeline_plan(const Pipeline *p);

/* Sampler cost for status: BPF run time per wakeup (ns), 0 when unknown. */
double pipeline_sampler_ns_per_wakeup(const Pipeline *p);

/* Per-CPU idle figures of the last tick (NULL, 0 without cpuidle). */
const IdleCpuStats *pipeline_idle_stats(const Pipeline *p, unsigned *ret_n);
/* The idle sampler, for state names and exit latencies (NULL without cpuidle). */
const IdleSampler *pipeline_idle_sampler(const Pipeline *p);

/* The energy estimate of the last tick; *ret_rapl_watts -1 where RAPL is absent. */
void pipeline_energy(const Pipeline *p, EnergyEstimate *ret_estimate, double *ret_rapl_watts);

/* The live wake graph (tasks, edges), for placectl graph --dot and explain. */
const WakeGraph *pipeline_graph(const Pipeline *p);

/*
 * pipeline_snapshot() - the policy's input of the last tick as JSON (the
 * snapshot format of policy.h), for "placectl snapshot" and "placed --plan".
 * Return: 0 and *ret (malloc'd), -ENOMEM.
 */
int pipeline_snapshot(const Pipeline *p, const Manager *m, char **ret);
