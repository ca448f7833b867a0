/* SPDX-License-Identifier: MIT */
/*
 * One tick of placed, readable top to bottom in pipeline_tick():
 *
 *     tick_sample_read();  wakeups since the last tick, per-CPU busy time and
 *                          idle states, and each task's facts (task-facts.h),
 *                          read once: nothing later reads a task again
 *                          (tick-sample.h)
 *     pipeline_model();    decayed wake graph -> classified groups, with the
 *                          CPUs their members' cpusets allow
 *     pipeline_filter();   which tasks are placed's to touch: not kernel
 *                          threads, PID 1, placed, RT/DL, ignore rules
 *     pipeline_decide();   each group's rule decision from its members' rules
 *                          (rules.h), then policy_decide(): pure, from
 *                          topology, groups, rules, loads, profile, previous
 *                          plan and now
 *     pipeline_apply();    affinity per task, slice cpusets, idle caps; every
 *                          change journaled first by its actuator; in advise
 *                          mode the actuators only report
 *
 * and returns what it produced (TickResult) to the manager, which publishes
 * it (D-Bus, status) and asks the tick clock (tick-clock.h) when the next
 * tick comes: the pipeline knows neither the manager nor the bus. What is
 * new (news.h) is judged at each note (pipeline_dispatch_notes()), in a
 * quick tick's focus, and after apply, for the next tick. Out of memory in
 * the sample or the decision stops the tick before apply: every placement
 * stays as it was.
 *
 * Errors from actuators are sorted like irqbalance does: transient ones (a
 * task that exited, a busy file) are retried next tick without noise;
 * permanent ones are logged once per object.
 */
#include "pipeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "act-affinity.h"
#include "actuator.h"
#include "act-idle.h"
#include "act-slice.h"
#include "actuators.h"
#include "cpustat.h"
#include "energy.h"
#include "idle.h"
#include "journal.h"
#include "kernel-features.h"
#include "news.h"
#include "log.h"
#include "policy-trial.h"
#include "policy.h"
#include "proc-events.h"
#include "rules.h"
#include "string-table.h"
#include "task-facts.h"
#include "tick-sample.h"
#include "wake-graph.h"
#include "wake-rest.h"
#include "wake-source.h"

#define PIPELINE_NOTES_READ 64 /* notes taken from the source at once */

struct Pipeline {
        bool advise;             /* the actuators' mode: rebuilt when the caller's changes */
        const char *procfs_root; /* the caller's, living as long as the pipeline */
        const char *wake_source; /* name of the open wake source, "none" */

        WakeSource *source; /* NULL: no sampler could be opened */
        WakeGraph *graph;
        TickSample sample; /* this tick's: wakeups, per-CPU figures, each task's facts */

        Actuators act; /* affinity, idle states, slices (actuator.h) */

        Plan *plan;
        char plan_profile[PROFILE_NAME_MAX]; /* a new profile decides afresh */
        GroupRule *rules; /* the last tick's rule decision per group (parallel to its groups) */
        unsigned n_rules;

        /* The notes' first times and the fork storm: what is new (news.h). */
        News news;

        TaskId *managed; /* tasks whose affinity placed set (owned) */
        unsigned n_managed;
        pid_t *managed_tgids; /* their processes, for fork events (owned) */
        unsigned n_managed_tgids;

        ProcEvents *procev; /* NULL: exits are noticed on the tick only */
        uint64_t n_adopted; /* children that inherited a mask placed set */

        WakeRest rest; /* when the sampler watches the wake path (wake-rest.h) */
};

static int pipeline_open_actuators(Pipeline *p, const PipelineEnv *env) {
        _cleanup_free_ char *cgroup = NULL;
        int idle_error = 0;

        (void)actuator_find_cpuset_root(env->procfs_root, &cgroup);
        ActuatorEnv ae = {
                .procfs_root = env->procfs_root,
                .sysfs_root = env->sysfs_root,
                .cgroup_root = cgroup,
                .online = env->topo->online,
                .dry_run = env->advise,
                .journal = env->journal,
        };
        int r = actuators_open(&ae, &p->act, &idle_error);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the actuators: %m");
        if (idle_error < 0)
                log_warning_errno(idle_error, "No idle-state constraints: %m");
        SliceBackend picked = actuator_slice_backend_pick(&ae);
        r = act_slice_backend_error(p->act.slice);
        if (picked == SLICE_BACKEND_SYSTEMD && r < 0)
                log_warning_errno(r, "Cannot reach systemd, slices stay unconfined: %m");
        else if (picked == SLICE_BACKEND_CGROUPFS && r < 0)
                log_debug("No cpuset files under \"%s\": slices stay unconfined.", cgroup);
        p->advise = env->advise;
        return 0;
}

static void pipeline_close_actuators(Pipeline *p) {
        actuators_close(&p->act);
}

/*
 * What the kernel offers the samplers, said once at start with what placed
 * falls back to for each missing part. The samplers attach to the running
 * kernel whatever --sysfs-root says, so the real /sys and /proc are probed.
 * PLACED_KERNEL_FEATURES_OFF=btf,task-iter,... (a test hook) takes features
 * away, to exercise a fallback on a kernel that has them.
 */
static unsigned pipeline_probe_kernel(void) {
        _cleanup_free_ char *text = NULL;
        const char *off_env = getenv("PLACED_KERNEL_FEATURES_OFF"), *bad = NULL;
        unsigned have = 0, off = 0;

        if (kernel_features_probe(NULL, NULL, &have) < 0)
                return 0;
        if (off_env && kernel_features_parse(off_env, &off, &bad) < 0)
                log_warning("PLACED_KERNEL_FEATURES_OFF: unknown feature at \"%s\", ignored.", bad);
        have &= ~off;
        if (kernel_features_describe(have, &text) >= 0)
                log_info("Kernel features: %s%s.", text,
                         off ? " (some taken away by PLACED_KERNEL_FEATURES_OFF)" : "");
        return have;
}

/* The facts reader's way to the BPF task iterator's records (task-facts.h). */
static int pipeline_kernel_task(void *userdata, pid_t tid, WakeTaskView *ret) {
        const Pipeline *p = userdata;
        return wake_source_task(p->source, tid, ret);
}

static void pipeline_open_source(Pipeline *p, const PipelineEnv *env) {
        WakeSourceOptions o = { .ignore_tgid = getpid(),
                                .sample_period = env->config->sample_period,
                                .procfs_root = env->procfs_root };
        _cleanup_free_ char *reason = NULL;

        o.kernel_features = pipeline_probe_kernel();
        if (env->config->wake_source == WAKE_SOURCE_NONE) {
                log_info("Wake sampling is off (wake_source = none).");
                return;
        }
        int r = wake_source_open(env->config->wake_source, &o, &p->source, &reason);
        if (r < 0) {
                log_warning_errno(r, "No wake sampler, groups cannot be formed: %s (%m)",
                                  reason ? reason : "open failed");
                return;
        }
        log_info("Wake sampler: %s.", reason ? reason : wake_source_name(p->source));
        p->wake_source = wake_source_name(p->source);
        task_facts_reader_set_kernel(p->sample.facts_reader, pipeline_kernel_task, p);
}

static bool tgid_managed(const Pipeline *p, pid_t tgid) {
        for (unsigned i = 0; i < p->n_managed_tgids; i++)
                if (p->managed_tgids[i] == tgid)
                        return true;
        return false;
}

/*
 * A task created by a task placed narrowed inherits placed's mask: adopt it
 * into the journal so a stop restores it too. The next tick keeps it if it
 * joined its creator's group, and hands it back otherwise.
 */
static void pipeline_adopt(Pipeline *p, const ProcEvent *ev) {
        bool thread = ev->pid != ev->tgid;
        pid_t tgid = thread ? ev->tgid : ev->parent_tgid;
        TaskFacts ts;
        TaskId *grown;

        if (!p->act.affinity || !tgid_managed(p, tgid) ||
            task_facts_read_stat(p->procfs_root, ev->tgid, ev->pid, &ts) < 0)
                return;
        for (unsigned i = 0; i < p->n_managed; i++) {
                WakeGraphTask t;
                if (wake_graph_get_task(p->graph, p->managed[i].tid, 0, &t) <= 0 || t.tgid != tgid)
                        continue;
                if (!thread && p->managed[i].tid != ev->parent_pid)
                        continue;
                if (act_affinity_adopt(p->act.affinity, &ts.id, &p->managed[i]) <= 0)
                        continue;
                grown = realloc(p->managed, (p->n_managed + 1) * sizeof(*grown));
                if (!grown)
                        return;
                p->managed = grown;
                p->managed[p->n_managed++] = ts.id;
                p->n_adopted++;
                log_debug("Task %d inherited the mask placed gave task %d; adopted.", (int)ev->pid,
                          (int)p->managed[i].tid);
                return;
        }
}

/* The kernel threads' parent, in the initial PID namespace the proc connector speaks. */
#define KTHREADD_PID 2

/* Watches the wake path again, or rests it, as wanted; a failure is retried next tick. */
static void pipeline_rest_source(Pipeline *p, bool rest, WakeRestWhy why, uint64_t now_ns) {
        if (rest == wake_source_resting(p->source))
                return;
        uint64_t t0 = clock_usec(CLOCK_MONOTONIC);
        int r = wake_source_rest(p->source, rest, now_ns);
        if (r < 0)
                log_warning_errno(r, "Wake sampler: could not %s: %m",
                                  rest ? "rest" : "watch again");
        else
                log_debug("Wake sampler: %s: %s (%s in %" PRIu64 " us).",
                          rest ? "resting" : "watching", wake_rest_why_words(why),
                          rest ? "detached" : "attached", clock_usec(CLOCK_MONOTONIC) - t0);
}

/*
 * A task was created at now_ns (0: now): a resting sampler watches again.
 * Return: whether it was resting.
 */
static bool pipeline_task_created(Pipeline *p, uint64_t now_ns) {
        if (!p->source)
                return false;
        if (now_ns == 0)
                now_ns = clock_usec(CLOCK_MONOTONIC) * NSEC_PER_USEC;
        if (!wake_rest_task_created(&p->rest, now_ns / NSEC_PER_USEC))
                return false;
        pipeline_rest_source(p, false, WAKE_REST_CREATED, now_ns);
        return true;
}

/*
 * After a tick: rest the sampler, or watch again (wake-rest.h). Only a bpf
 * source rests, and only where new tasks are heard of at once (the proc
 * connector): without it a new pair would wait for a look.
 */
static void pipeline_rest(Pipeline *p, const PipelineEnv *env, bool needed, uint64_t now_ns) {
        WakeRestConfig cfg = {
                .after_usec = p->procev ? env->config->wake_rest_ms * USEC_PER_MSEC : 0,
                .look_usec = env->config->wake_look_s * USEC_PER_SEC,
        };
        WakeRestWhy why;
        if (!p->source || !wake_source_can_rest(p->source))
                return;
        bool rest = wake_rest_tick(&p->rest, &cfg, needed, now_ns / NSEC_PER_USEC, &why);
        pipeline_rest_source(p, rest, why, now_ns);
}

static int pipeline_on_proc_event(const ProcEvent *ev, void *userdata) {
        Pipeline *p = ASSERT_PTR(userdata);
        /* A new task wakes the resting sampler, unless it is a kernel thread
         * (kthreadd's child, a kworker), whose wakeups the sampler skips:
         * the kernel starts kworkers every few seconds on an idle machine. */
        if ((ev->type == PROC_EVENT_FORK || ev->type == PROC_EVENT_EXEC) &&
            ev->parent_tgid != KTHREADD_PID && ev->tgid != KTHREADD_PID &&
            pipeline_task_created(p, ev->timestamp_ns))
                log_debug("Wake sampler: task %d (process %d) was created.", (int)ev->pid,
                          (int)ev->tgid);
        if (ev->type == PROC_EVENT_EXIT) {
                (void)wake_graph_task_exit(p->graph, ev->pid);
                news_forget(&p->news, ev->pid); /* its TID's next task is new */
                act_affinity_task_gone(p->act.affinity, ev->pid);
                if (ev->pid == ev->tgid)
                        task_facts_reader_forget_process(p->sample.facts_reader, ev->tgid);
        } else if (ev->type == PROC_EVENT_EXEC)
                task_facts_reader_forget_process(p->sample.facts_reader, ev->tgid);
        else if (ev->type == PROC_EVENT_FORK)
                pipeline_adopt(p, ev);
        return 0;
}

int pipeline_notes_fd(const Pipeline *p) {
        return p ? wake_source_notes_fd(p->source) : -1;
}

int pipeline_dispatch_notes(Pipeline *p) {
        WakeNote notes[PIPELINE_NOTES_READ];
        int n = wake_source_read_notes(p->source, notes, ELEMENTSOF(notes));
        if (n < 0)
                return log_full_errno(LOG_DEBUG, n, "Reading the wake sampler's notes failed: %m");
        NewsView v = { .graph = p->graph,
                       .plan = p->plan,
                       .young_after = tick_sample_young_after() };
        int news = 0;
        for (int i = 0; i < n; i++) {
                if (news) { /* the rest are remembered, not judged */
                        news_remember(&p->news, notes[i].waker, notes[i].ts_ns);
                        news_remember(&p->news, notes[i].wakee, notes[i].ts_ns);
                        continue;
                }
                v.now_ns = notes[i].ts_ns;
                NewsReason why = news_note(&p->news, &v, &notes[i]);
                if (why != NEWS_NONE) {
                        log_debug("Note of %d waking %d: %s.", (int)notes[i].waker,
                                  (int)notes[i].wakee, news_reason_to_string(why));
                        news = 1;
                }
        }
        return news;
}

void pipeline_close_proc_events(Pipeline *p) {
        p->procev = proc_events_free(p->procev);
}

int pipeline_proc_events_fd(const Pipeline *p) {
        return p->procev ? proc_events_fd(p->procev) : -1;
}

int pipeline_dispatch_proc_events(Pipeline *p) {
        int r = proc_events_dispatch(p->procev);
        if (r == PROC_EVENTS_LOST) {
                log_debug("Proc connector lost events; the tick's scan catches up.");
                (void)pipeline_task_created(p, 0); /* some may have been new tasks */
        } else if (r < 0) {
                /* Stay correct without it: the tick notices exits by reading /proc. */
                log_warning_errno(r, "Proc connector failed, noticing exits on the tick only: %m");
                return r;
        }
        return 0;
}

static void pipeline_open_proc_events(Pipeline *p) {
        int r = proc_events_new(pipeline_on_proc_event, p, &p->procev);
        if (r < 0)
                log_info("No proc connector (%s%s): exits are noticed on the tick.", strerror(-r),
                         pid_ns_is_initial(p->procfs_root) == 0
                                 ? "; the kernel refuses it inside a PID namespace"
                                 : "");
}

int pipeline_new(const PipelineEnv *env, Pipeline **ret) {
        Pipeline *p = calloc(1, sizeof(*p));
        int r;

        if (!p)
                return log_error_errno(ENOMEM, "Out of memory.");
        r = tick_sample_init(&p->sample, env->topo, env->procfs_root, env->sysfs_root);
        if (r < 0) {
                pipeline_free(p);
                return r;
        }
        r = wake_graph_new(NULL, &p->graph);
        if (r < 0) {
                pipeline_free(p);
                return log_error_errno(r, "Failed to set up the model: %m");
        }
        p->procfs_root = env->procfs_root;
        p->wake_source = "none";
        r = pipeline_open_actuators(p, env);
        if (r < 0) {
                pipeline_free(p);
                return r;
        }
        pipeline_open_source(p, env);
        pipeline_open_proc_events(p);
        wake_rest_start(&p->rest, clock_usec(CLOCK_MONOTONIC));
        *ret = p;
        return 0;
}

Pipeline *pipeline_free(Pipeline *p) {
        if (!p)
                return NULL;
        pipeline_close_actuators(p);
        pipeline_close_proc_events(p);
        wake_source_free(p->source);
        wake_graph_free(p->graph);
        tick_sample_done(&p->sample);
        plan_free(p->plan);
        free(p->managed);
        free(p->managed_tgids);
        free(p->rules);
        free(p);
        return NULL;
}

static int pipeline_model(Pipeline *p, const Topology *topo, uint64_t now_ns, Group **ret,
                          CpuSet **ret_limits, unsigned *ret_n) {
        Group *groups = NULL;
        unsigned n = 0;
        int r = wake_graph_update(p->graph, now_ns, &groups, &n);
        if (r < 0)
                return r;
        CpuSet *limits = calloc(n + 1, sizeof(*limits));
        if (!limits) {
                group_array_free(groups, n);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < n; i++)
                tick_sample_fill_group_cpus(&p->sample, topo, &groups[i], &limits[i]);
        *ret = groups;
        *ret_limits = limits;
        *ret_n = n;
        return 0;
}

/*
 * Each group's rule decision: of the rules its members matched in the
 * filter, the strongest, and pack-with linked to the partner's group.
 * Return: 0 and *ret (parallel to groups; NULL without rules), -ENOMEM.
 */
static int pipeline_group_rules(const Pipeline *p, const PipelineEnv *env, const Group *groups,
                                unsigned n, GroupRule **ret) {
        const RuleSet *set = &env->config->rules;
        if (set->n_rules == 0 || n == 0) {
                *ret = NULL;
                return 0;
        }
        _cleanup_free_ GroupRule *v = calloc(n, sizeof(*v));
        _cleanup_free_ uint64_t *ids = calloc(n, sizeof(*ids));
        if (!v || !ids)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++) {
                _cleanup_free_ const Rule **matched =
                        calloc(MAX(groups[i].n_tasks, 1u), sizeof(*matched));
                if (!matched)
                        return -ENOMEM;
                for (unsigned k = 0; k < groups[i].n_tasks; k++) {
                        const TaskFacts *t = tick_sample_facts(&p->sample, &groups[i].tasks[k]);
                        matched[k] = t ? p->sample.task_rule[t - p->sample.facts] : NULL;
                }
                rules_group_decide(set, matched, groups[i].n_tasks, &v[i]);
                ids[i] = groups[i].id;
        }
        rules_link_partners(ids, v, n);
        *ret = TAKE_PTR(v);
        return 0;
}

static int pipeline_decide(Pipeline *p, const PipelineEnv *env, const Group *groups,
                           const CpuSet *limits, unsigned n, uint64_t now_ns, TickKind kind,
                           Plan **ret) {
        /* A new profile decides everything afresh: no dwell carried over. */
        const Plan *prev = strcmp(p->plan_profile, env->profile->name) == 0 ? p->plan : NULL;
        /* What latency-critical groups are decided with. */
        Profile latency;
        const Profile *lp = config_find_profile(env->config, "latency-first");
        if (!lp && profile_defaults("latency-first", &latency) >= 0)
                lp = &latency;

        GroupRule *rules;
        int r = pipeline_group_rules(p, env, groups, n, &rules);
        if (r < 0)
                return r; /* the last tick's stand, as its groups do */
        free(p->rules);
        p->rules = rules;
        p->n_rules = rules ? n : 0;
        /* A quick tick decides its focus; a regular one, or the first, all. */
        _cleanup_free_ bool *focus = NULL;
        if (kind == TICK_QUICK && prev && n > 0) {
                NewsView v = { .graph = p->graph, .plan = prev, .now_ns = now_ns };
                focus = news_focus(&p->news, &v, groups, n, env->advise);
        }
        if (focus) {
                unsigned k = 0;
                for (unsigned i = 0; i < n; i++)
                        k += focus[i];
                log_debug("Quick tick: deciding %u of %u groups (new, waiting, on trial or "
                          "noted); the others keep their placement.",
                          k, n);
        }
        PolicyInput in = {
                .topo = env->topo,
                .groups = groups,
                .n_groups = n,
                .group_limits = limits,
                .loads = p->sample.loads,
                .n_loads = env->topo->n_cpus,
                .profile = env->profile,
                .prev = prev,
                .now_ns = now_ns,
                .advise = env->advise,
                .rules = p->rules,
                .latency_profile = lp,
                .focus = focus,
        };
        return policy_decide(&in, ret);
}

/* What rules match a task by, from its facts ("" = unknown). */
static void pipeline_rule_subject(const TaskFacts *t, RuleSubject *ret) {
        *ret = (RuleSubject){
                .comm = t->comm,
                .exe = t->exe[0] ? t->exe : NULL,
                .cgroup = t->cgroup[0] ? t->cgroup : NULL,
                .unit = t->unit[0] ? t->unit : NULL,
        };
}

/*
 * The filters between the model and the decision: which sampled tasks are
 * placed's to touch this tick. Not: kernel threads, PID 1, placed itself,
 * RT/DL tasks, and what an ignore rule matches ([exclude] entries are such
 * rules). Each task's first matching rule is kept for its group's decision.
 * (Affinities narrowed or changed by someone else are told by the affinity
 * actuator, from its journal.)
 */
static void pipeline_filter(Pipeline *p, const PipelineEnv *env) {
        const RuleSet *set = &env->config->rules;
        for (size_t i = 0; i < p->sample.n_facts; i++) {
                const TaskFacts *t = &p->sample.facts[i];
                TaskOwner owner = task_facts_owner(t, p->sample.self_pid);
                RuleSubject s;
                pipeline_rule_subject(t, &s);
                p->sample.task_rule[i] = owner == TASK_OWNER_PLACED ? rules_match(set, &s) : NULL;
                p->sample.placeable[i] = owner == TASK_OWNER_PLACED &&
                                         !(p->sample.task_rule[i] &&
                                           p->sample.task_rule[i]->action == RULE_ACTION_IGNORE);
        }
}

/* This tick's facts about the task id names if it passed the filters, else NULL. */
static const TaskFacts *pipeline_placeable(const Pipeline *p, const TaskId *id) {
        const TaskFacts *t = tick_sample_facts(&p->sample, id);
        if (!t)
                return NULL; /* unknown now: leave it alone */
        if (!p->sample.placeable[t - p->sample.facts]) {
                TaskOwner owner = task_facts_owner(t, p->sample.self_pid);
                log_debug("Task %d left alone: %s.", (int)id->tid,
                          owner == TASK_OWNER_PLACED ? "ignored by a rule"
                                                     : strna(task_owner_to_string(owner)));
                return NULL;
        }
        return t;
}

/* Whether id is one of ids[0..n), index: tid -> position in ids. */
static bool taskid_in(const TaskId *ids, const U64Map *index, const TaskId *id) {
        uint32_t i;
        return u64map_get(index, (uint64_t)id->tid, &i) && ids[i].start_time == id->start_time;
}

/* What became of one group's placement (pipeline_apply_group). */
typedef struct GroupApplied {
        unsigned placed; /* its tasks that have its mask now (set, or already so) */
        int error;       /* the first error that kept a task from it; 0 none */
        int refused;     /* the first task left alone (an AffinityResult); -1 none */
} GroupApplied;

/*
 * Applies one managed group's mask to its tasks; appends the ones placed
 * manages. A task that is gone is no error: the group is what is left.
 */
static void pipeline_apply_group(Pipeline *p, const PipelineEnv *env, const Group *g,
                                 const PlanGroup *pg, TaskId *managed, unsigned *n_managed,
                                 GroupApplied *ret) {
        *ret = (GroupApplied){ .refused = -1 };
        for (unsigned i = 0; i < g->n_tasks; i++) {
                const TaskId *id = &g->tasks[i];
                const TaskFacts *t = pipeline_placeable(p, id);
                AffinityResult res;
                CpuSet applied;

                if (!t)
                        continue;
                int r = act_affinity_apply(p->act.affinity, t, &pg->cpus, &res, &applied);
                if (r < 0) {
                        /* A journal that cannot be written was reported once already. */
                        if (!actuator_error_is_transient(r) &&
                            journal_write_error(env->journal) == 0)
                                log_warning_errno(r, "Cannot set the affinity of task %d: %m",
                                                  (int)id->tid);
                        if (r != -ESRCH && ret->error == 0)
                                ret->error = r;
                        continue;
                }
                if (res == AFFINITY_SET || res == AFFINITY_WOULD_SET || res == AFFINITY_UNCHANGED) {
                        managed[(*n_managed)++] = *id;
                        ret->placed++;
                        continue;
                }
                log_debug("Task %d left alone: %s.", (int)id->tid,
                          strna(affinity_result_to_string(res)));
                if (ret->refused < 0)
                        ret->refused = (int)res;
        }
}

/*
 * A group whose placement could not be applied in full (the undo journal
 * cannot be written, say), or none of whose tasks are placed's to move
 * (someone else pinned them), is not where the plan says: the plan kept for
 * the next tick says where it is, or that tick would judge a trial of a
 * placement that never happened, hand the group back for "doing worse" and
 * back off. A group placed before that failed to move keeps its last entry
 * (its tasks are still there); any other is left to the kernel and
 * waiting, so that the next tick decides it afresh, and tries again.
 */
static void pipeline_unapplied(const Pipeline *p, const PipelineEnv *env, PlanGroup *pg,
                               const GroupApplied *ga) {
        const PlanGroup *old = p->plan ? plan_find_group(p->plan, pg->id) : NULL;
        if (ga->error < 0 && old && old->managed) {
                *pg = *old;
                return;
        }
        PlanGroup now = old ? *old : (PlanGroup){ .id = pg->id, .home = -1 };
        now.class = pg->class;
        now.managed = false;
        now.waiting = true;
        cpuset_zero(&now.cpus);
        const char *class = group_class_to_string(pg->class);
        int jr = journal_write_error(env->journal);
        if (ga->error < 0)
                snprintf(now.reason, sizeof(now.reason),
                         "%s: placing it failed (%s%s); left to the kernel", class,
                         jr < 0 ? "the undo journal cannot be written: " : "",
                         strerror(-(jr < 0 ? jr : ga->error)));
        else if (ga->refused >= 0)
                snprintf(now.reason, sizeof(now.reason),
                         "%s: its tasks are not placed's to move (%s); left alone", class,
                         strna(affinity_result_to_string((AffinityResult)ga->refused)));
        else
                snprintf(now.reason, sizeof(now.reason),
                         "%s: none of its tasks could be placed now; left to the kernel", class);
        *pg = now;
}

/* The processes of managed tasks, so a fork event is checked in a few compares. */
static void pipeline_index_tgids(Pipeline *p) {
        pid_t *tgids = realloc(p->managed_tgids, (p->n_managed + 1) * sizeof(*tgids));
        if (!tgids)
                return;
        p->managed_tgids = tgids;
        p->n_managed_tgids = 0;
        for (unsigned i = 0; i < p->n_managed; i++) {
                WakeGraphTask t;
                if (wake_graph_get_task(p->graph, p->managed[i].tid, 0, &t) > 0 &&
                    !tgid_managed(p, t.tgid))
                        tgids[p->n_managed_tgids++] = t.tgid;
        }
}

static void pipeline_apply_slices(Pipeline *p, const Plan *plan) {
        for (int s = 0; s < _PLAN_SLICE_MAX; s++) {
                const char *name = plan_slice_to_string(s);
                const CpuSet *cpus = &plan->slice_cpus[s];
                int r = cpuset_is_empty(cpus) ? act_slice_release(p->act.slice, name)
                                              : act_slice_apply(p->act.slice, name, cpus);
                if (r < 0 && r != -ENOENT)
                        log_debug("Cpuset of %s: %s", name, strerror(-r));
        }
}

static void pipeline_apply_idle(Pipeline *p, const Plan *plan) {
        if (!p->act.idle || !plan->idle_max_exit_latency_us)
                return;
        int64_t *caps = calloc(plan->n_cpus, sizeof(*caps));
        if (!caps)
                return;
        for (unsigned cpu = 0; cpu < plan->n_cpus; cpu++)
                caps[cpu] = plan->idle_max_exit_latency_us[cpu] == PLAN_NO_IDLE_CAP
                                    ? ACT_IDLE_NO_CAP
                                    : plan->idle_max_exit_latency_us[cpu];
        int r = act_idle_apply(p->act.idle, caps, plan->n_cpus);
        if (r < 0 && !actuator_error_is_transient(r))
                log_warning_errno(r, "Cannot set idle-state constraints: %m");
        free(caps);
}

/* Applies the plan; a group it could not place is marked so in it (see above). */
static void pipeline_apply(Pipeline *p, const PipelineEnv *env, const Group *groups, unsigned n,
                           Plan *plan) {
        unsigned total = 0, n_managed = 0;
        for (unsigned i = 0; i < n; i++)
                total += groups[i].n_tasks;
        TaskId *managed = calloc(total + 1, sizeof(*managed));
        if (!managed)
                return;

        for (unsigned i = 0; i < n; i++) {
                const PlanGroup *found = plan_find_group(plan, groups[i].id);
                PlanGroup *pg = found ? &plan->groups[found - plan->groups] : NULL;
                if (!pg || !plan_group_applied(pg))
                        continue; /* its tasks go back to the kernel below */
                GroupApplied ga;
                pipeline_apply_group(p, env, &groups[i], pg, managed, &n_managed, &ga);
                if (ga.error < 0 || ga.placed == 0)
                        pipeline_unapplied(p, env, pg, &ga);
        }
        /* Tasks placed managed last tick but not now go back to the kernel. */
        _cleanup_(u64map_freep) U64Map *index = NULL;
        bool indexed = u64map_new(&index) >= 0;
        for (unsigned i = 0; indexed && i < n_managed; i++)
                indexed = u64map_put(index, (uint64_t)managed[i].tid, i) >= 0;
        for (unsigned i = 0; indexed && i < p->n_managed; i++)
                if (!taskid_in(managed, index, &p->managed[i]))
                        (void)act_affinity_release(p->act.affinity, &p->managed[i]);
        free(p->managed);
        p->managed = managed;
        p->n_managed = n_managed;
        pipeline_index_tgids(p);

        pipeline_apply_slices(p, plan);
        pipeline_apply_idle(p, plan);
}

/*
 * Says, in the reason of each group placed anew this tick, how long after
 * its tasks' first notes it was placed, and whether at a quick tick: what
 * "placed in a blink" measures. The group as it is began no sooner than
 * the latest of them: a server's first note may have been with an
 * earlier client.
 */
static void pipeline_say_when(const Pipeline *p, const Group *groups, unsigned n, Plan *plan,
                              uint64_t now_ns, TickKind kind) {
        for (unsigned i = 0; i < n; i++) {
                const PlanGroup *found = plan_find_group(plan, groups[i].id);
                const PlanGroup *old = p->plan ? plan_find_group(p->plan, groups[i].id) : NULL;
                if (!found || !found->managed || (old && old->managed))
                        continue;
                uint64_t first = 0;
                for (unsigned k = 0; k < groups[i].n_tasks; k++) {
                        uint64_t t = news_noted_ns(&p->news, groups[i].tasks[k].tid);
                        first = MAX(first, t);
                }
                PlanGroup *pg = &plan->groups[found - plan->groups];
                size_t len = strlen(pg->reason);
                if (first && first <= now_ns)
                        snprintf(pg->reason + len, sizeof(pg->reason) - len,
                                 "; placed %" PRIu64 " ms after its first wakeups were noted, at "
                                 "a %s tick",
                                 (now_ns - first) / 1000000, tick_kind_to_string(kind));
                else
                        snprintf(pg->reason + len, sizeof(pg->reason) - len,
                                 "; placed at a %s tick", tick_kind_to_string(kind));
        }
}

/* Logs each group whose placement changed since the last plan. Return: how many. */
static unsigned pipeline_log_changes(Pipeline *p, bool advise, const Group *groups, unsigned n,
                                     const Plan *plan) {
        unsigned changes = 0;

        for (unsigned i = 0; i < n; i++) {
                const Group *g = &groups[i];
                const PlanGroup *pg = plan_find_group(plan, g->id);
                const PlanGroup *old = p->plan ? plan_find_group(p->plan, g->id) : NULL;
                bool was = old && old->managed, is = pg && pg->managed;

                if (!was && !is) {
                        /* Why a non-solo group stays with the kernel, when the why or
                         * what the group is changes (a solo that became a pair under the
                         * same never-pack rule keeps the rule's reason). */
                        if (pg && g->class != GROUP_SOLO &&
                            (!old || old->class != pg->class ||
                             strcmp(old->reason, pg->reason) != 0)) {
                                char tids[64];
                                group_format_tids(g, tids, sizeof(tids));
                                log_debug("Leaving %s group %" PRIu64 " (%s) to the kernel: %s",
                                          group_class_to_string(g->class), g->id, tids, pg->reason);
                        }
                        continue;
                }
                if (was && is && old->trial.verdict == TRIAL_KEPT &&
                    pg->trial.verdict == TRIAL_RUNNING && pg->trial.recheck)
                        log_info("Re-checking %s group %" PRIu64 " (first task %d): %s; a "
                                 "switchback of its placement against the kernel's choice.",
                                 group_class_to_string(g->class), g->id, (int)g->tasks[0].tid,
                                 pg->trial.drifted ? "its figures drifted from its verdict's"
                                                   : "its re-check is due");
                if (was && old->trial.verdict == TRIAL_RUNNING &&
                    pg->trial.windows > old->trial.windows)
                        log_debug("Trial of %s group %" PRIu64
                                  ": window %u, %s's, %.0f %s/s, %.2f CPUs' worth of run time.",
                                  group_class_to_string(g->class), g->id, old->trial.windows,
                                  trial_arm_to_string(old->trial.arm),
                                  policy_trial_progress(g, old->trial.measure),
                                  trial_measure_to_string(old->trial.measure), g->util);
                if (was && is && old->trial.verdict == TRIAL_RUNNING &&
                    pg->trial.verdict == TRIAL_KEPT) {
                        const PlanTrial *t = &pg->trial;
                        log_info("Keeping %s group %" PRIu64 " (first task %d) where placed%s: "
                                 "%.2fx [%.2f-%.2f, 95%%] the %s/s left to the kernel over %u "
                                 "windows (%.0f against %.0f), run-queue delay %.0f us against "
                                 "%.0f us.",
                                 group_class_to_string(g->class), g->id, (int)g->tasks[0].tid,
                                 t->recheck ? " after a re-check" : "", t->gain, t->gain_lo,
                                 t->gain_hi, trial_measure_to_string(t->measure), t->windows,
                                 t->placed.rate, t->kernel.rate, t->placed.delay_us,
                                 t->kernel.delay_us);
                }
                if (was && is && cpuset_equal(&old->cpus, &pg->cpus))
                        continue;
                changes++;

                WakeGraphTask t = { 0 };
                (void)wake_graph_get_task(p->graph, g->tasks[0].tid, 0, &t);
                char cpus[128] = "";
                if (is)
                        (void)cpuset_format(&pg->cpus, cpus, sizeof(cpus));
                if (is)
                        log_info("%s %s group %" PRIu64 " (%u tasks, first %s/%d) on CPUs %s: %s",
                                 advise ? "Would place" : "Placing",
                                 group_class_to_string(g->class), g->id, g->n_tasks, t.comm,
                                 (int)g->tasks[0].tid, cpus, pg->reason);
                else
                        log_info("%s %s group %" PRIu64 " (first %s/%d) to the kernel: %s",
                                 advise ? "Would hand" : "Handing", group_class_to_string(g->class),
                                 g->id, t.comm, (int)g->tasks[0].tid, pg ? pg->reason : "gone");
        }
        return changes;
}

/* Counts the trials that started and ended between the last plan and this one. */
static void pipeline_count_trials(const Plan *old_plan, const Plan *plan, TickResult *ret) {
        for (unsigned i = 0; i < plan->n_groups; i++) {
                const PlanGroup *pg = &plan->groups[i];
                const PlanGroup *old = old_plan ? plan_find_group(old_plan, pg->id) : NULL;
                TrialVerdict was = old ? old->trial.verdict : TRIAL_NONE, is = pg->trial.verdict;

                if (was == is)
                        continue;
                metrics_trials_count(&ret->trials, was, &pg->trial);
                if (is == TRIAL_RUNNING)
                        ret->trials_started++;
                else if (was == TRIAL_RUNNING)
                        ret->trial_verdicts[is]++;
        }
}

/* Keeps the plan for the next tick, and gives each placed group the CPUs it got. */
static void pipeline_result(Pipeline *p, const PipelineEnv *env, Group *groups, unsigned n,
                            Plan *plan, unsigned changes, TickResult *ret) {
        for (unsigned i = 0; i < n; i++) {
                const PlanGroup *pg = plan_find_group(plan, groups[i].id);
                if (pg && pg->managed)
                        groups[i].cpus = pg->cpus;
        }
        *ret = (TickResult){ .groups = groups, .n_groups = n, .placement_changes = changes };
        pipeline_count_trials(p->plan, plan, ret);
        plan_free(p->plan);
        p->plan = plan;
        snprintf(p->plan_profile, sizeof(p->plan_profile), "%s", env->profile->name);
}

/* Closes stage s of the tick: its time since *mark, which moves on. Time is
 * this thread's CPU time: what a stage costs, whatever else the machine runs. */
static void pipeline_stage_done(uint64_t *stage_usec, TickStage s, uint64_t *mark) {
        uint64_t now = clock_usec(CLOCK_THREAD_CPUTIME_ID);
        stage_usec[s] = now - *mark;
        *mark = now;
}

int pipeline_tick(Pipeline *p, const PipelineEnv *env, uint64_t now_ns, TickKind kind,
                  TickResult *ret) {
        Group *groups = NULL;
        _cleanup_free_ CpuSet *limits = NULL;
        uint64_t stage_usec[_TICK_STAGE_MAX] = { 0 }, mark = clock_usec(CLOCK_THREAD_CPUTIME_ID);
        unsigned n = 0;
        Plan *plan = NULL;
        int r;

        *ret = (TickResult){ 0 };
        if (p->advise != env->advise) { /* Restore() switched to advise: actuators only report */
                pipeline_close_actuators(p);
                pipeline_forget_applied(p);
                r = pipeline_open_actuators(p, env);
                if (r < 0)
                        return r;
        }

        r = tick_sample_read(&p->sample, p->source, p->graph, &p->news, env->topo, now_ns);
        if (r < 0)
                return log_warning_errno(
                        r, "Sampling the tasks failed, nothing is decided this tick: %m");
        pipeline_stage_done(stage_usec, TICK_STAGE_SAMPLE, &mark);
        r = pipeline_model(p, env->topo, now_ns, &groups, &limits, &n);
        if (r < 0)
                return log_warning_errno(r, "Updating the wake graph failed: %m");
        pipeline_filter(p, env);
        pipeline_stage_done(stage_usec, TICK_STAGE_MODEL, &mark);
        r = pipeline_decide(p, env, groups, limits, n, now_ns, kind, &plan);
        if (r < 0) {
                group_array_free(groups, n);
                return log_warning_errno(r, "Placement decision failed: %m");
        }
        pipeline_stage_done(stage_usec, TICK_STAGE_DECIDE, &mark);
        pipeline_apply(p, env, groups, n, plan);
        pipeline_say_when(p, groups, n, plan, now_ns, kind);
        unsigned changes = pipeline_log_changes(p, env->advise, groups, n, plan);
        unsigned looks = news_storm_look(&p->news, plan, env->advise);
        if (looks > 0)
                log_debug("A fork storm began: %u kept placement%s get%s a closer look at a "
                          "quick tick.",
                          looks, looks == 1 ? "" : "s", looks == 1 ? "s" : "");
        NewsView news = { .graph = p->graph,
                          .plan = plan,
                          .now_ns = now_ns,
                          .young_after = p->sample.young_after,
                          .alive = p->sample.noted_alive,
                          .n_alive = p->sample.n_noted_alive };
        bool quick_soon = news_pending(&p->news, &news, NULL) != NEWS_NONE;
        bool quick_wanted = quick_soon || news_quick_wanted(groups, n, plan, env->advise);
        bool settled = news_plan_settled(plan, env->advise);
        pipeline_rest(p, env, quick_soon || wake_rest_needed(plan, env->advise), now_ns);
        pipeline_result(p, env, groups, n, plan, changes, ret);
        ret->quick_wanted = quick_wanted;
        ret->quick_soon = quick_soon;
        ret->settled = settled && changes == 0 && ret->trials_started == 0;
        pipeline_stage_done(stage_usec, TICK_STAGE_APPLY, &mark);
        memcpy(ret->stage_usec, stage_usec, sizeof(stage_usec));
        log_debug("Tick: %zu tasks, %u groups, %s; CPU time: sample %" PRIu64 " us, model %" PRIu64
                  " us, decide %" PRIu64 " us, apply %" PRIu64 " us.",
                  p->sample.n_facts, n, tick_kind_to_string(kind), stage_usec[TICK_STAGE_SAMPLE],
                  stage_usec[TICK_STAGE_MODEL], stage_usec[TICK_STAGE_DECIDE],
                  stage_usec[TICK_STAGE_APPLY]);
        return 0;
}

void pipeline_forget_applied(Pipeline *p) {
        p->managed = mfree(p->managed);
        p->n_managed = 0;
        p->n_managed_tgids = 0;
        p->plan = plan_free(p->plan);
}

const Plan *pipeline_plan(const Pipeline *p) {
        return p ? p->plan : NULL;
}

const CpuLoad *pipeline_loads(const Pipeline *p, unsigned *ret_n) {
        *ret_n = p ? p->sample.n_loads : 0;
        return p ? p->sample.loads : NULL;
}

const char *pipeline_wake_source(const Pipeline *p) {
        return p ? p->wake_source : "none";
}

bool pipeline_sampler_rested(const Pipeline *p, double *ret_seconds) {
        uint64_t ns =
                p ? wake_source_rested_ns(p->source, clock_usec(CLOCK_MONOTONIC) * NSEC_PER_USEC)
                  : 0;
        *ret_seconds = (double)ns / 1e9;
        return p && wake_source_resting(p->source);
}

double pipeline_sampler_ns_per_wakeup(const Pipeline *p) {
        return p ? p->sample.sampler_ns_per_wakeup : 0;
}

const IdleCpuStats *pipeline_idle_stats(const Pipeline *p, unsigned *ret_n) {
        *ret_n = p && p->sample.idle_stats ? p->sample.n_idle_stats : 0;
        return *ret_n ? p->sample.idle_stats : NULL;
}

const IdleSampler *pipeline_idle_sampler(const Pipeline *p) {
        return p ? p->sample.idle : NULL;
}

void pipeline_energy(const Pipeline *p, EnergyEstimate *ret_estimate, double *ret_rapl_watts) {
        *ret_estimate = p ? p->sample.energy : (EnergyEstimate){ 0 };
        *ret_rapl_watts = p && p->sample.rapl ? p->sample.rapl_watts : -1;
}

const GroupRule *pipeline_group_rules_of(const Pipeline *p, unsigned *ret_n) {
        *ret_n = p ? p->n_rules : 0;
        return p ? p->rules : NULL;
}

const WakeGraph *pipeline_graph(const Pipeline *p) {
        return p ? p->graph : NULL;
}

static const char *const tick_stage_table[_TICK_STAGE_MAX] = {
        [TICK_STAGE_SAMPLE] = "sample",
        [TICK_STAGE_MODEL] = "model",
        [TICK_STAGE_DECIDE] = "decide",
        [TICK_STAGE_APPLY] = "apply",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(tick_stage, TickStage);
