/* SPDX-License-Identifier: MIT */
/*
 * The manager's metrics: manager_metrics_text() for the Metrics() D-Bus
 * method (placectl metrics), manager_metrics_tick() for the [metrics]
 * textfile node_exporter reads. Part of the manager (declared in manager.h),
 * in a file of its own as the bus object is. Everything is read from
 * the manager's state of the last tick, gathered into a MetricsFigures and
 * formatted by lib/metrics-text.c: one place builds the text, whether it
 * goes over D-Bus or into the textfile.
 *
 * The counters live in the manager (and the wake graph, which lives as long
 * as the process), so they only grow, across ticks, reloads and Restore().
 * placed's own figures are read from the real /proc whatever --procfs-root
 * says: that option points the task readers at a tree of another machine,
 * but placed's own process is only ever in this one.
 */
#include "manager.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "idle.h"
#include "log.h"
#include "wake-graph.h"

/* Per CPU with figures for the last tick (online, after the second tick). *ret malloc'd. */
static int metrics_gather_cpus(const Manager *m, MetricsCpu **ret, unsigned *ret_n) {
        const IdleSampler *s = NULL;
        unsigned n = 0, k = 0;
        const IdleCpuStats *stats = manager_cpu_stats(m, &s, &n);

        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        MetricsCpu *cpus = calloc(n, sizeof(*cpus));
        if (!cpus)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++) {
                const IdleCpu *ic = s ? idle_sampler_cpu(s, i) : NULL;
                const IdleCpuStats *st = &stats[i];
                if (!st->valid || (s && !ic))
                        continue; /* offline, or before the second tick */
                MetricsCpu *c = &cpus[k++];
                c->cpu = st->cpu;
                c->busy_ratio = st->busy_frac;
                c->other_idle_ratio = st->other_idle_frac;
                for (unsigned j = 0; ic && j < st->n_states && j < ic->n_states; j++) {
                        snprintf(c->state_names[j], IDLE_NAME_MAX, "%s", ic->states[j].name);
                        c->state_ratio[j] = st->state_frac[j];
                        c->n_states = j + 1;
                }
        }
        *ret = cpus;
        *ret_n = k;
        return 0;
}

/* Every online CPU's kind and capacity. *ret malloc'd. */
static int metrics_gather_capacities(const Manager *m, MetricsCpuCapacity **ret, unsigned *ret_n) {
        unsigned n = m->topo ? cpuset_count(&m->topo->online) : 0, k = 0;

        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        MetricsCpuCapacity *caps = calloc(n, sizeof(*caps));
        if (!caps)
                return -ENOMEM;
        TOPO_FOREACH_CPU (cpu, m->topo) {
                const TopoCpu *c = &m->topo->cpus[cpu];
                caps[k++] = (MetricsCpuCapacity){ .cpu = c->cpu,
                                                  .kind = c->kind,
                                                  .capacity = c->capacity };
        }
        *ret = caps;
        *ret_n = k;
        return 0;
}

static void metrics_gather(const Manager *m, MetricsFigures *f) {
        WakeGraphIngested in = {};
        const WakeGraph *g = manager_graph(m);
        EnergyEstimate energy;

        *f = (MetricsFigures){
                .version = PLACED_VERSION,
                .mode = strna(manager_mode_to_string(m->mode)),
                .wake_source = m->wake_source ? m->wake_source : "none",
                .profile = m->profile ? m->profile->name : "",
                .profile_source = strna(profile_source_to_string(m->profile_source)),
                .n_holds = m->n_holds,
                .placement_changes = m->n_placement_changes,
                .trials_started = m->n_trials_started,
                .sampler_ns_per_wakeup = manager_sampler_ns_per_wakeup(m),
                .process_start_time_seconds = (double)m->start_realtime_usec / USEC_PER_SEC,
                .ticks = m->n_ticks,
                .quick_ticks = m->n_quick_ticks,
                .reloads = m->n_reloads,
                .last_tick_duration_seconds = (double)m->last_tick_cost_usec / USEC_PER_SEC,
                .last_tick_timestamp_seconds = (double)m->last_tick_realtime_usec / USEC_PER_SEC,
                .trials = m->trials,
                .energy_active_cpu_seconds = m->energy_active_cpu_seconds,
                .capacity_source = m->topo ? m->topo->capacity_source : TOPO_CAPACITY_NONE,
        };
        memcpy(f->trial_verdicts, m->n_trial_verdicts, sizeof(f->trial_verdicts));
        f->sampler_resting = manager_sampler_rested(m, &f->sampler_rested_seconds);

        for (unsigned i = 0; i < m->n_groups; i++) {
                const PlanGroup *pg = manager_group_decision(m, m->groups[i].id);
                if ((unsigned)m->groups[i].class < _GROUP_CLASS_MAX)
                        f->groups[m->groups[i].class][pg && pg->managed]++;
        }

        if (g)
                wake_graph_ingested(g, &in);
        f->wakeups_sampled = in.wakeups;
        f->wakeups_softirq = in.softirq;
        f->wakeups_skipped = in.skipped;
        f->wakeups_lost = in.lost;

        (void)metrics_read_process("/proc", &f->process_cpu_seconds, &f->process_rss_bytes);

        manager_energy(m, &energy, &f->rapl_watts);
        f->have_energy = energy.n_cpus > 0;
        f->energy_active_cpus = energy.ace;
}

int manager_metrics_text(const Manager *m, MetricsFormat format, char **ret, size_t *ret_len) {
        assert(m);
        _cleanup_free_ MetricsCpu *cpus = NULL;
        _cleanup_free_ MetricsCpuCapacity *caps = NULL;
        MetricsTickStage stages[_TICK_STAGE_MAX];
        MetricsFigures f;

        metrics_gather(m, &f);
        int r = metrics_gather_cpus(m, &cpus, &f.n_cpus);
        if (r < 0)
                return r;
        f.cpus = cpus;
        r = metrics_gather_capacities(m, &caps, &f.n_capacities);
        if (r < 0)
                return r;
        f.capacities = caps;
        for (TickStage s = 0; s < _TICK_STAGE_MAX; s++)
                stages[s] = (MetricsTickStage){ .name = tick_stage_to_string(s),
                                                .cpu_seconds = (double)m->last_tick_stage_usec[s] /
                                                               USEC_PER_SEC };
        f.tick_stages = stages;
        f.n_tick_stages = _TICK_STAGE_MAX;
        return metrics_text_format(&f, format, ret, ret_len);
}

/* Logs a textfile error the first time it happens; the caller logs the recovery. */
static void metrics_log_textfile_error(const char *path, int r) {
        const char *why = metrics_textfile_strerror(r);
        if (why)
                log_error("Cannot write the metrics to \"%s\": %s. Retrying every few ticks; "
                          "logged again only when this changes.",
                          path, why);
        else
                log_error_errno(r,
                                "Cannot write the metrics to \"%s\": %m. The previous file is "
                                "kept; retrying every few ticks, logged again only when this "
                                "changes.",
                                path);
}

void manager_metrics_tick(Manager *m) {
        assert(m);
        const char *path = m->config.metrics_textfile;
        unsigned every = m->config.metrics_every_ticks ? m->config.metrics_every_ticks : 1;
        _cleanup_free_ char *text = NULL;
        size_t len;

        if (path[0] == '\0' || (m->n_ticks - 1) % every != 0)
                return;
        int r = manager_metrics_text(m, METRICS_FORMAT_PROMETHEUS, &text, &len);
        if (r >= 0)
                r = metrics_textfile_write(path, text, len);
        if (r < 0 && r != m->metrics_textfile_error)
                metrics_log_textfile_error(path, r);
        else if (r >= 0 && m->metrics_textfile_error != 0)
                log_notice("Writing the metrics to \"%s\" works again.", path);
        m->metrics_textfile_error = r < 0 ? r : 0;
}
