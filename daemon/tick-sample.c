/* SPDX-License-Identifier: MIT */
/*
 * The tick's sample (tick-sample.h): wakeups, per-CPU figures and each
 * task's facts, read once a tick; the rest of the tick reads no task again.
 */
#include "tick-sample.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"
#include "fileio.h"
#include "log.h"

uint64_t tick_sample_young_after(void) {
        struct timespec ts;
        if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
                return 0; /* every task young */
        return news_young_after((uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec,
                                sysconf(_SC_CLK_TCK));
}

static bool tick_sample_has_states(const IdleSampler *idle) {
        for (unsigned cpu = 0; cpu < idle_sampler_n_cpus(idle); cpu++)
                if (idle_sampler_cpu(idle, cpu)->n_states > 0)
                        return true;
        return false;
}

int tick_sample_init(TickSample *s, const Topology *topo, const char *procfs_root,
                     const char *sysfs_root) {
        _cleanup_free_ char *cgroup = NULL;
        int r;

        *s = (TickSample){ .procfs_root = procfs_root,
                           .self_pid = getpid(),
                           .fail_path = getenv("PLACED_TEST_FAIL_SAMPLE") };
        s->loads = calloc(topo->n_cpus, sizeof(*s->loads));
        s->n_loads = topo->n_cpus;
        if (!s->loads)
                return log_error_errno(ENOMEM, "Out of memory.");
        (void)actuator_find_cpuset_root(procfs_root, &cgroup);
        r = u64map_new(&s->facts_index);
        if (r >= 0)
                r = task_facts_reader_new(procfs_root, cgroup, &s->facts_reader);
        if (r >= 0)
                r = cpustat_new(procfs_root, &s->cpustat);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the model: %m");
        if (idle_sampler_new(sysfs_root, NULL, &s->idle) >= 0 && !tick_sample_has_states(s->idle))
                s->idle = idle_sampler_free(s->idle); /* no driver: plain HLT */
        if (!s->idle)
                log_info("No cpuidle states under \"%s\": per-CPU figures are busy time and "
                         "interrupts.",
                         sysfs_root);
        s->n_idle_stats = s->idle ? idle_sampler_n_cpus(s->idle) : topo->n_cpus;
        s->idle_stats = calloc(s->n_idle_stats, sizeof(*s->idle_stats));
        energy_model_init(&s->energy_model);
        (void)energy_rapl_open(sysfs_root, &s->rapl);
        return 0;
}

void tick_sample_done(TickSample *s) {
        wake_batch_done(&s->batch);
        cpustat_free(s->cpustat);
        idle_sampler_free(s->idle);
        free(s->idle_stats);
        energy_rapl_free(s->rapl);
        free(s->loads);
        u64map_free(s->facts_index);
        task_facts_reader_free(s->facts_reader);
        free(s->facts);
        free(s->placeable);
        free(s->task_rule);
        *s = (TickSample){ 0 };
}

const TaskFacts *tick_sample_facts(const TickSample *s, const TaskId *id) {
        uint32_t i;
        if (!u64map_get(s->facts_index, (uint64_t)id->tid, &i) || i >= s->n_facts)
                return NULL;
        const TaskFacts *t = &s->facts[i];
        return id->start_time == 0 || task_facts_is(t, id) ? t : NULL;
}

static int tick_sample_reserve(TickSample *s, size_t n) {
        if (n <= s->cap_facts)
                return 0;
        TaskFacts *grown = reallocarray(s->facts, n, sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        s->facts = grown;
        bool *flags = reallocarray(s->placeable, n, sizeof(*flags));
        if (!flags)
                return -ENOMEM;
        s->placeable = flags;
        const Rule **rules = reallocarray(s->task_rule, n, sizeof(*rules));
        if (!rules)
                return -ENOMEM;
        s->task_rule = rules;
        s->cap_facts = n;
        return 0;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return x < y ? -1 : x > y;
}

/*
 * Which tasks noted lately are alive: sampled this tick, or there in /proc
 * (a task whose first read was skipped, as it got the task_struct of a task
 * that ended, is alive and not in the model). Outside a fork storm only:
 * in one, no unknown task is pending (news.h).
 */
static void tick_sample_noted(TickSample *s, const News *news, uint64_t now_ns) {
        pid_t fresh[NEWS_NOTED_MAX];
        unsigned n = news->storm ? 0 : news_fresh(news, now_ns, fresh);
        uint32_t i;

        s->n_noted_alive = 0;
        for (unsigned k = 0; k < n; k++)
                if (u64map_get(s->facts_index, (uint64_t)fresh[k], &i) ||
                    task_alive(s->procfs_root, fresh[k]))
                        s->noted_alive[s->n_noted_alive++] = fresh[k];
        qsort(s->noted_alive, s->n_noted_alive, sizeof(pid_t), cmp_pid);
}

/* Reads the facts of every task of the wake graph, once: the rest of the tick works from them. */
static int tick_sample_tasks(TickSample *s, WakeSource *source, WakeGraph *graph, News *news,
                             uint64_t now_ns) {
        _cleanup_free_ TaskId *ids = NULL;
        size_t n = 0;
        unsigned n_young = 0;

        s->n_facts = 0;
        s->n_noted_alive = 0;
        s->young_after = tick_sample_young_after();
        u64map_clear(s->facts_index);
        if (s->fail_path && access(s->fail_path, F_OK) == 0)
                return -ENOMEM;
        int r = wake_graph_get_tasks(graph, &ids, &n);
        if (r < 0)
                return r;
        r = tick_sample_reserve(s, n);
        if (r < 0)
                return r;
        task_facts_reader_new_tick(s->facts_reader);
        for (size_t i = 0; i < n; i++) {
                WakeGraphTask t;
                TaskFacts *f = &s->facts[s->n_facts];
                pid_t tgid = wake_graph_get_task(graph, ids[i].tid, 0, &t) > 0 ? t.tgid : 0;
                r = task_facts_read(s->facts_reader, tgid, ids[i].tid, f);
                if (r < 0) {
                        /* Gone (or unreadable): forget it now rather than in ten seconds. */
                        wake_graph_task_exit(graph, ids[i].tid);
                        continue;
                }
                WakeTaskCounters c = { .run_ns = f->run_ns,
                                       .run_delay_ns = f->run_delay_ns,
                                       .timeslices = f->timeslices,
                                       .io_bytes = f->io_bytes };
                (void)wake_graph_task_stats(graph, ids[i].tid, f->id.start_time, &c);
                r = u64map_put(s->facts_index, (uint64_t)f->id.tid, (uint32_t)s->n_facts);
                if (r < 0)
                        return r;
                s->n_facts++;
                if (news_task_young(f->id.start_time, s->young_after))
                        n_young++;
        }
        if (news_set_storm(news, n_young) > 0)
                log_debug(news->storm ? "A fork storm: %u tasks started in the last %d s; their "
                                        "notes wait for the regular tick."
                                      : "The fork storm is over (%u tasks started in the last "
                                        "%d s).",
                          n_young, NEWS_YOUNG_SEC);
        tick_sample_noted(s, news, now_ns);
        /* The next read's task iterator reports these (and its edges' ends) alone. */
        (void)wake_source_watch(source, ids, n);
        return 0;
}

/* Says once that path cannot be read, again only after a good read or another error. */
static int tick_sample_note_error(int r, int *last, const char *path, const char *what) {
        if (r < 0 && r != *last)
                log_warning("Cannot read \"%s\": %s; %s until it can.", path,
                            read_small_file_strerror(r), what);
        *last = r < 0 ? r : 0;
        return r;
}

/*
 * A CPU whose /proc/stat counters did not move since the last tick (a tick
 * shorter than one of its jiffies) tells nothing new: its figures of the tick
 * before stand, rather than a CPU that looks idle or drops out of the
 * published series for a tick.
 */
static void tick_sample_cpus(TickSample *s, const Topology *topo, uint64_t now_ns) {
        IdleCpuStats st;
        if (tick_sample_note_error(cpustat_refresh(s->cpustat), &s->cpustat_error,
                                   cpustat_path(s->cpustat),
                                   "CPU loads keep their last figures") >= 0)
                for (unsigned cpu = 0; cpu < topo->n_cpus; cpu++) {
                        const CpuStatCpu *c = cpustat_cpu(s->cpustat, cpu);
                        if (!cpustat_no_news(c))
                                s->loads[cpu].busy = c && c->has_delta ? cpustat_busy_frac(c) : 0;
                }
        if (!s->idle_stats)
                ;
        else if (s->idle && idle_sampler_refresh(s->idle, now_ns / NSEC_PER_USEC) > 0) {
                for (unsigned cpu = 0; cpu < s->n_idle_stats; cpu++) {
                        const CpuStatCpu *c = cpustat_cpu(s->cpustat, cpu);
                        if (idle_cpu_derive(idle_sampler_cpu(s->idle, cpu), c, &st) > 0 ||
                            !cpustat_no_news(c))
                                s->idle_stats[cpu] = st;
                }
                (void)energy_estimate(&s->energy_model, s->idle, s->idle_stats, s->n_idle_stats,
                                      &s->energy);
        } else if (!s->idle && tick_sample_note_error(cpustat_refresh_irqs(s->cpustat),
                                                      &s->irqs_error, cpustat_irqs_path(s->cpustat),
                                                      "idle figures keep their last values") > 0) {
                /* No cpuidle driver: busy time, and interrupts as the wakeups. */
                for (unsigned cpu = 0; cpu < s->n_idle_stats; cpu++) {
                        const CpuStatCpu *c = cpustat_cpu(s->cpustat, cpu);
                        if (idle_cpu_derive_stateless(c, (now_ns - s->last_cpus_ns) / NSEC_PER_USEC,
                                                      &st) > 0 ||
                            !cpustat_no_news(c))
                                s->idle_stats[cpu] = st;
                }
                (void)energy_estimate(&s->energy_model, NULL, s->idle_stats, s->n_idle_stats,
                                      &s->energy);
        }
        s->last_cpus_ns = now_ns;
        if (s->rapl)
                (void)energy_rapl_refresh(s->rapl, now_ns / NSEC_PER_USEC, &s->rapl_watts);
}

int tick_sample_read(TickSample *s, WakeSource *source, WakeGraph *graph, News *news,
                     const Topology *topo, uint64_t now_ns) {
        if (source) {
                int r = wake_source_read(source, now_ns, &s->batch);
                if (r < 0)
                        log_debug("Reading the wake sampler failed: %s", strerror(-r));
                (void)wake_graph_ingest(graph, &s->batch, now_ns);

                WakeSourceCost c;
                if (wake_source_get_cost(source, &c) > 0 && c.run_cnt > s->cost.run_cnt)
                        s->sampler_ns_per_wakeup = (double)(c.run_time_ns - s->cost.run_time_ns) /
                                                   (double)(c.run_cnt - s->cost.run_cnt);
                if (wake_source_get_cost(source, &c) > 0)
                        s->cost = c;
        }
        int r = tick_sample_tasks(s, source, graph, news, now_ns);
        tick_sample_cpus(s, topo, now_ns);
        return r;
}

/*
 * Where each group's tasks may run now and where they ran during the tick,
 * as sampled; and the CPUs its members' cpusets allow all of them (limit),
 * the policy's bound: the CPUs common to every member's cpuset, or where
 * the members' cpusets share none, all of their CPUs (each member is then
 * clamped to its own by the actuator). Unknown cpusets bound nothing.
 */
void tick_sample_fill_group_cpus(const TickSample *s, const Topology *topo, Group *g,
                                 CpuSet *limit) {
        CpuSet common = topo->online, any;
        cpuset_zero(&g->cpus);
        cpuset_zero(&g->ran_on);
        cpuset_zero(&any);
        for (unsigned i = 0; i < g->n_tasks; i++) {
                const TaskFacts *t = tick_sample_facts(s, &g->tasks[i]);
                if (!t)
                        continue;
                if (t->processor >= 0)
                        cpuset_set(&g->ran_on, t->processor);
                cpuset_or(&g->cpus, &g->cpus, &t->allowed);
                if (cpuset_is_empty(&t->cpuset_cpus))
                        continue;
                cpuset_and(&common, &common, &t->cpuset_cpus);
                cpuset_or(&any, &any, &t->cpuset_cpus);
        }
        *limit = !cpuset_is_empty(&common) ? common : any;
        if (cpuset_is_empty(limit))
                *limit = topo->online;
}
