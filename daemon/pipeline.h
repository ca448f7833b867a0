/* SPDX-License-Identifier: MIT */
/*
 * The tick's pipeline: sample -> model -> decide -> diff -> apply, over the
 * lib/ modules (wake source and graph, policy, actuators). It knows neither
 * the manager nor the bus: the manager owns a Pipeline, hands it what it
 * works with (PipelineEnv) and calls pipeline_tick() once a tick, which
 * returns what the tick produced (TickResult); the manager publishes it.
 * Data flows one way.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "energy.h"
#include "group.h"
#include "idle.h"
#include "journal.h"
#include "metrics-text.h" /* MetricsTrials */
#include "policy.h"
#include "tick-clock.h" /* TickKind */
#include "topology.h"
#include "wake-graph.h"

typedef struct Pipeline Pipeline;

/* What the pipeline works with, owned by the caller; read at each call. */
typedef struct PipelineEnv {
        const Topology *topo;
        const Config *config;
        const Profile *profile; /* the profile in force */
        Journal *journal;       /* where actuators journal first */
        bool advise;            /* dry run: compute and report, change nothing */
        const char *procfs_root;
        const char *sysfs_root;
} PipelineEnv;

/* The stages of a tick, whose times a TickResult reports. */
typedef enum TickStage {
        TICK_STAGE_SAMPLE, /* the wake source, per-CPU figures, each task's facts */
        TICK_STAGE_MODEL,  /* the wake graph's groups, the filters */
        TICK_STAGE_DECIDE, /* the rules' decisions, policy_decide() */
        TICK_STAGE_APPLY,  /* the actuators, the log of changes */
        _TICK_STAGE_MAX,
} TickStage;

/* "sample", "model", "decide", "apply"; NULL out of range. */
const char *tick_stage_to_string(TickStage s);

/* What one tick produced. groups are the caller's to free (group_array_free()). */
typedef struct TickResult {
        Group *groups; /* with their allowed CPUs as placed this tick */
        unsigned n_groups;
        unsigned placement_changes; /* groups placed, moved or handed back */
        unsigned trials_started;    /* placements put on trial this tick */
        /* Trials that ended this tick, by the verdict they ended in (TRIAL_KEPT,
         * TRIAL_REVERTED; TRIAL_NONE: cut short). */
        unsigned trial_verdicts[_TRIAL_VERDICT_MAX];
        MetricsTrials trials;                 /* the verdicts' windows and gains, re-checks, ties */
        uint64_t stage_usec[_TICK_STAGE_MAX]; /* each stage's CPU time (the thread's clock) */
        /* A group waits to be measured or a placement is on trial: the next
         * tick is worth having soon (a quick one). */
        bool quick_wanted;
        /* Of those, a task noted in the last second is in a pair waiting to
         * be measured, or a young one in a group waking one way so far: the
         * shortest window that measures anything (half a quick one) will do. */
        bool quick_soon;
        /* No group waits to be measured or is on trial (and not advised only),
         * and this tick changed no placement and started no trial: the
         * caller may space the next regular tick out. */
        bool settled;
} TickResult;

/*
 * pipeline_new() - open the wake source (BPF, else perf, as configured), the
 * actuators and the samplers. A wake source that cannot be opened is logged
 * and leaves placed publishing an empty model ("none"), not failing.
 * Return: 0 or negative errno (logged).
 */
int pipeline_new(const PipelineEnv *env, Pipeline **ret);
Pipeline *pipeline_free(Pipeline *p);

/*
 * pipeline_tick() - one pass: sample, model, decide, diff, apply. now_ns:
 * CLOCK_MONOTONIC. Return: 0 and *ret, or negative errno (logged; nothing
 * was applied and *ret is empty).
 */
int pipeline_tick(Pipeline *p, const PipelineEnv *env, uint64_t now_ns, TickKind kind,
                  TickResult *ret);

/*
 * The wake source's notes (wake-source.h: an edge that just became a run
 * across CPUs): an fd to watch, -1 without one; pipeline_dispatch_notes()
 * when it is readable.
 *
 * Return: 1 when a note is about something the last tick had not decided (a
 * task it did not know, or two tasks not yet in one group it decided): a
 * quick tick is worth it; 0 when not; negative errno (logged at debug).
 */
int pipeline_notes_fd(const Pipeline *p);
int pipeline_dispatch_notes(Pipeline *p);

/* Hand every task back to the kernel and lift every constraint (restore):
 * the journal restore does the writing; this forgets the applied state. */
void pipeline_forget_applied(Pipeline *p);

/*
 * The process lifecycle source (the proc connector): an fd to watch, -1
 * without one; pipeline_dispatch_proc_events() when it is readable, which
 * returns negative errno (logged) when the connector failed for good: stop
 * watching the fd, then pipeline_close_proc_events() (exits are then
 * noticed on the tick). Stop watching it before pipeline_free() too.
 */
int pipeline_proc_events_fd(const Pipeline *p);
int pipeline_dispatch_proc_events(Pipeline *p);
void pipeline_close_proc_events(Pipeline *p);

/* "bpf", "perf", "replay" or "none". */
const char *pipeline_wake_source(const Pipeline *p);

/* The plan of the last tick (NULL before the first). */
const Plan *pipeline_plan(const Pipeline *p);

/* Per-CPU load of the last tick, the policy's input (n_cpus entries). */
const CpuLoad *pipeline_loads(const Pipeline *p, unsigned *ret_n);

/* Sampler cost for status: BPF run time per wakeup (ns), 0 when unknown. */
double pipeline_sampler_ns_per_wakeup(const Pipeline *p);
/* Return: whether the wake sampler rests now; *ret_seconds: how long it has rested in all. */
bool pipeline_sampler_rested(const Pipeline *p, double *ret_seconds);

/* Per-CPU figures of the last tick (NULL, 0 before the second tick). */
const IdleCpuStats *pipeline_idle_stats(const Pipeline *p, unsigned *ret_n);
/* The idle sampler, for state names and exit latencies (NULL without cpuidle). */
const IdleSampler *pipeline_idle_sampler(const Pipeline *p);

/* The energy estimate of the last tick; *ret_rapl_watts -1 where RAPL is absent. */
void pipeline_energy(const Pipeline *p, EnergyEstimate *ret_estimate, double *ret_rapl_watts);

/* The rule decision per group of the last tick, parallel to its groups
 * (NULL, 0 when no rules are configured). */
const GroupRule *pipeline_group_rules_of(const Pipeline *p, unsigned *ret_n);

/* The live wake graph (tasks, edges), for placectl graph --dot and explain. */
const WakeGraph *pipeline_graph(const Pipeline *p);
