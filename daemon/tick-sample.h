/* SPDX-License-Identifier: MIT */
/*
 * The tick's sample, its first stage (pipeline.h): the wake source's
 * wakeups since the last tick into the wake graph, per-CPU busy time, idle
 * states and energy, and each task's facts (task-facts.h), read once: the
 * model, the filters, the decision and the actuators work from them and
 * read no task again. It also reads what "what is new" (news.h) needs of
 * the system: the young boundary, once a tick, and which noted tasks are
 * alive.
 *
 * Out of memory is an error: a sample that could not read every task's
 * facts returns -ENOMEM, and the tick stops before it applies anything
 * (a sample without facts would make every task unplaceable, and the apply
 * stage would hand every placement back).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpustat.h"
#include "energy.h"
#include "idle.h"
#include "news.h"
#include "policy.h"
#include "rules.h"
#include "task-facts.h"
#include "topology.h"
#include "wake-graph.h"
#include "wake-source.h"

typedef struct TickSample {
        const char *procfs_root; /* the caller's, living as long as the sample */
        pid_t self_pid;
        const char *fail_path; /* PLACED_TEST_FAIL_SAMPLE: a test hook, see tick_sample_read() */

        WakeBatch batch;
        WakeSourceCost cost;
        double sampler_ns_per_wakeup;

        CpuStat *cpustat;
        int cpustat_error, irqs_error; /* the last failure each, logged once; 0 after a read */
        IdleSampler *idle;
        CpuLoad *loads; /* indexed by CPU, n_loads (topo->n_cpus) entries */
        unsigned n_loads;
        IdleCpuStats *idle_stats; /* indexed by CPU: idle_sampler_n_cpus(), else n_cpus entries */
        unsigned n_idle_stats;
        uint64_t last_cpus_ns; /* when the per-CPU figures were last sampled */
        EnergyModel energy_model;
        EnergyEstimate energy;
        EnergyRapl *rapl; /* NULL where powercap RAPL is absent (this VM) */
        double rapl_watts;

        /* The facts of each task of the wake graph. */
        TaskFactsReader *facts_reader;
        TaskFacts *facts;       /* owned, n_facts used of cap_facts */
        bool *placeable;        /* owned, parallel to facts: passed this tick's filters */
        const Rule **task_rule; /* owned, parallel to facts: the first rule it matches, or NULL */
        size_t n_facts, cap_facts;
        U64Map *facts_index; /* tid -> index in facts */

        uint64_t young_after;              /* news_young_after(), this tick's */
        pid_t noted_alive[NEWS_NOTED_MAX]; /* noted lately and alive this tick: sorted */
        size_t n_noted_alive;
} TickSample;

/*
 * tick_sample_init() - the samplers: /proc/stat, cpuidle (none without a
 * driver, said once), RAPL where there is one, the facts reader.
 * Return: 0 or negative errno (logged).
 */
int tick_sample_init(TickSample *s, const Topology *topo, const char *procfs_root,
                     const char *sysfs_root);
void tick_sample_done(TickSample *s);

/*
 * tick_sample_read() - one tick's sample: the source's wakeups into graph
 * (source NULL: none), every task's facts (a task that is gone leaves the
 * graph now), the fork storm into news, the noted tasks alive, the per-CPU
 * figures. PLACED_TEST_FAIL_SAMPLE=PATH (a test hook): while PATH exists,
 * the facts fail as out of memory.
 * Return: 0; -ENOMEM (the facts are incomplete: nothing may be decided).
 */
int tick_sample_read(TickSample *s, WakeSource *source, WakeGraph *graph, News *news,
                     const Topology *topo, uint64_t now_ns);

/* This tick's facts about the task id names; NULL where it has none (gone, or another task). */
const TaskFacts *tick_sample_facts(const TickSample *s, const TaskId *id);

/*
 * tick_sample_fill_group_cpus() - where g's tasks may run now and ran during
 * the tick (g->cpus, g->ran_on), and *limit: the CPUs its members' cpusets
 * allow all of them, the policy's bound.
 */
void tick_sample_fill_group_cpus(const TickSample *s, const Topology *topo, Group *g,
                                 CpuSet *limit);

/* The young boundary now (news_young_after() from CLOCK_BOOTTIME); 0 where unreadable. */
uint64_t tick_sample_young_after(void);
