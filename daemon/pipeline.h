/* SPDX-License-Identifier: MIT */
/*
 * The tick's pipeline: sample -> model -> decide -> diff/apply -> publish,
 * over the lib/ modules (wake source and graph, policy, actuators). The
 * manager owns a Pipeline and calls pipeline_tick() once a tick.
 */
#pragma once

#include <stdint.h>

#include "manager.h"

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
