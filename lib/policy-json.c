/* SPDX-License-Identifier: MIT */
/*
 * The policy's JSON (json-c): plans and snapshots, the format documented in
 * policy.h. A snapshot is what "placed --plan --snapshot FILE" replays and
 * "placectl snapshot" writes; every field added later is optional when read,
 * so older files keep loading.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "macro.h"
#include "plan.h"
#include "policy.h"

static void json_objectp(json_object **o) {
        json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_objectp)

static int add_cpuset(json_object *o, const char *key, const CpuSet *s) {
        _cleanup_free_ char *text = NULL;
        if (cpuset_to_string(s, &text) < 0)
                return -ENOMEM;
        return json_object_object_add(o, key, json_object_new_string(text)) < 0 ? -ENOMEM : 0;
}

static int json_dup_string(json_object *o, char **ret) {
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        *ret = s ? strdup(s) : NULL;
        return *ret ? 0 : -ENOMEM;
}

static json_object *trial_side_to_json(const TrialSide *s) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "rate", json_object_new_double(s->rate));
        json_object_object_add(o, "delay_us", json_object_new_double(s->delay_us));
        json_object_object_add(o, "util", json_object_new_double(s->util));
        json_object_object_add(o, "wait", json_object_new_double(s->wait));
        json_object_object_add(o, "windows", json_object_new_int((int)s->windows));
        return o;
}

static json_object *trial_to_json(const PlanTrial *t) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "verdict",
                               json_object_new_string(trial_verdict_to_string(t->verdict)));
        if (t->measure != TRIAL_BY_HANDOFFS)
                json_object_object_add(o, "measure",
                                       json_object_new_string(trial_measure_to_string(t->measure)));
        json_object_object_add(o, "arm", json_object_new_string(trial_arm_to_string(t->arm)));
        json_object_object_add(o, "recheck", json_object_new_boolean(t->recheck));
        json_object_object_add(o, "drifted", json_object_new_boolean(t->drifted));
        json_object_object_add(o, "windows", json_object_new_int((int)t->windows));
        json_object_object_add(o, "pairs", json_object_new_int((int)t->pairs));
        json_object_object_add(o, "open_rate", json_object_new_double(t->open_rate));
        json_object_object_add(o, "log_sum", json_object_new_double(t->log_sum));
        json_object_object_add(o, "log_sq", json_object_new_double(t->log_sq));
        json_object_object_add(o, "gain", json_object_new_double(t->gain));
        json_object_object_add(o, "gain_lo", json_object_new_double(t->gain_lo));
        json_object_object_add(o, "gain_hi", json_object_new_double(t->gain_hi));
        json_object_object_add(o, "placed", trial_side_to_json(&t->placed));
        json_object_object_add(o, "kernel", trial_side_to_json(&t->kernel));
        if (t->verdict == TRIAL_REVERTED)
                json_object_object_add(o, "back",
                                       json_object_new_string(trial_back_to_string(t->back)));
        json_object_object_add(o, "reverts", json_object_new_int((int)t->reverts));
        json_object_object_add(o, "retry_ns", json_object_new_uint64(t->retry_ns));
        json_object_object_add(o, "checks", json_object_new_int((int)t->checks));
        json_object_object_add(o, "recheck_ns", json_object_new_uint64(t->recheck_ns));
        json_object_object_add(o, "kept_rate", json_object_new_double(t->kept_rate));
        json_object_object_add(o, "kept_wait", json_object_new_double(t->kept_wait));
        json_object_object_add(o, "closer", json_object_new_boolean(t->closer));
        return o;
}

static json_object *plan_group_to_json(const PlanGroup *g) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_uint64(g->id));
        json_object_object_add(o, "class", json_object_new_string(group_class_to_string(g->class)));
        json_object_object_add(o, "managed", json_object_new_boolean(g->managed));
        add_cpuset(o, "cpus", &g->cpus);
        json_object_object_add(o, "home", json_object_new_int(g->home));
        json_object_object_add(o, "widen", json_object_new_int((int)g->widen));
        json_object_object_add(o, "since_ns", json_object_new_uint64(g->since_ns));
        json_object_object_add(o, "seen_ns", json_object_new_uint64(g->seen_ns));
        if (g->waiting)
                json_object_object_add(o, "waiting", json_object_new_boolean(true));
        if (g->rule_action != RULE_ACTION_NONE) {
                json_object_object_add(o, "rule", json_object_new_string(g->rule));
                json_object_object_add(
                        o, "rule_action",
                        json_object_new_string(rule_action_to_string(g->rule_action)));
        }
        json_object_object_add(o, "reason", json_object_new_string(g->reason));
        json_object_object_add(o, "trial", trial_to_json(&g->trial));
        return o;
}

static json_object *plan_to_object(const Plan *p) {
        json_object *o = json_object_new_object(), *groups = json_object_new_array();
        json_object *slices = json_object_new_object(), *idle = json_object_new_array();
        json_object_object_add(o, "now_ns", json_object_new_uint64(p->now_ns));
        json_object_object_add(o, "profile", json_object_new_string(p->profile));
        for (unsigned i = 0; i < p->n_groups; i++)
                json_object_array_add(groups, plan_group_to_json(&p->groups[i]));
        json_object_object_add(o, "groups", groups);
        for (int s = 0; s < _PLAN_SLICE_MAX; s++)
                add_cpuset(slices, plan_slice_to_string(s), &p->slice_cpus[s]);
        json_object_object_add(o, "slices", slices);
        json_object_object_add(o, "slices_since_ns", json_object_new_uint64(p->slices_since_ns));
        json_object_object_add(o, "slice_reason", json_object_new_string(p->slice_reason));
        for (unsigned c = 0; c < p->n_cpus; c++) {
                if (p->idle_max_exit_latency_us[c] == PLAN_NO_IDLE_CAP)
                        continue;
                json_object *e = json_object_new_object();
                json_object_object_add(e, "cpu", json_object_new_int((int)c));
                json_object_object_add(e, "max_exit_latency_us",
                                       json_object_new_int(p->idle_max_exit_latency_us[c]));
                json_object_array_add(idle, e);
        }
        json_object_object_add(o, "n_cpus", json_object_new_int((int)p->n_cpus));
        json_object_object_add(o, "idle", idle);
        json_object_object_add(o, "idle_reason", json_object_new_string(p->idle_reason));
        return o;
}

int plan_to_json(const Plan *p, char **ret) {
        assert(p);
        assert(ret);
        _cleanup_json_ json_object *o = plan_to_object(p);
        return o ? json_dup_string(o, ret) : -ENOMEM;
}

/* Typed field lookups: Return 0 or -EINVAL when missing or of the wrong type. */
static int get_field(json_object *o, const char *key, json_type type, json_object **ret) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return -EINVAL;
        *ret = v;
        return 0;
}

static int get_cpuset(json_object *o, const char *key, CpuSet *ret) {
        json_object *v;
        int r = get_field(o, key, json_type_string, &v);
        return r < 0 ? r : cpuset_parse(json_object_get_string(v), ret);
}

static int get_u64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return -EINVAL;
        *ret = json_object_get_uint64(v);
        return 0;
}

static void get_string(json_object *o, const char *key, char *buf, size_t size) {
        json_object *v;
        if (get_field(o, key, json_type_string, &v) == 0)
                snprintf(buf, size, "%s", json_object_get_string(v));
}

static int get_class(json_object *o, GroupClass *ret) {
        json_object *v;
        int r = get_field(o, "class", json_type_string, &v);
        if (r < 0)
                return r;
        r = group_class_from_string(json_object_get_string(v));
        if (r < 0)
                return -EINVAL;
        *ret = (GroupClass)r;
        return 0;
}

static double get_double(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

static bool get_bool(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

static unsigned get_count(json_object *o, const char *key) {
        uint64_t n = 0;
        (void)get_u64(o, key, &n);
        return (unsigned)MIN(n, (uint64_t)UINT32_MAX);
}

static void trial_side_from_json(json_object *tr, const char *key, TrialSide *s) {
        json_object *o;
        if (!json_object_object_get_ex(tr, key, &o))
                return;
        s->rate = get_double(o, "rate");
        s->delay_us = get_double(o, "delay_us");
        s->util = get_double(o, "util");
        s->wait = get_double(o, "wait");
        s->windows = get_count(o, "windows");
}

/* Return: the value of the string table entry named by o's key, or -EINVAL; dflt when absent. */
static int get_enum(json_object *o, const char *key, int (*from_string)(const char *), int dflt) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v))
                return dflt;
        return json_object_is_type(v, json_type_string) ? from_string(json_object_get_string(v))
                                                        : -EINVAL;
}

/* An absent "trial" is a group never tried (plans of 0.1). Return: 0 or -EINVAL. */
static int trial_from_json(json_object *o, PlanTrial *t) {
        json_object *tr, *v;
        *t = (PlanTrial){ 0 };
        if (!json_object_object_get_ex(o, "trial", &tr))
                return 0;
        if (get_field(tr, "verdict", json_type_string, &v) < 0)
                return -EINVAL;
        int verdict = trial_verdict_from_string(json_object_get_string(v));
        int measure = get_enum(tr, "measure", trial_measure_from_string, TRIAL_BY_HANDOFFS);
        int arm = get_enum(tr, "arm", trial_arm_from_string, TRIAL_ARM_PLACED);
        /* Earlier plans said only "tie". */
        int back = get_enum(tr, "back", trial_back_from_string,
                            get_bool(tr, "tie") ? TRIAL_BACK_TIE : TRIAL_BACK_WORSE);
        if (verdict < 0 || measure < 0 || arm < 0 || back < 0)
                return -EINVAL;
        t->verdict = (TrialVerdict)verdict;
        t->measure = (TrialMeasure)measure;
        t->arm = (TrialArm)arm;
        t->recheck = get_bool(tr, "recheck");
        t->drifted = get_bool(tr, "drifted");
        t->windows = get_count(tr, "windows");
        t->pairs = get_count(tr, "pairs");
        t->open_rate = get_double(tr, "open_rate");
        t->log_sum = get_double(tr, "log_sum");
        t->log_sq = get_double(tr, "log_sq");
        t->gain = get_double(tr, "gain");
        t->gain_lo = get_double(tr, "gain_lo");
        t->gain_hi = get_double(tr, "gain_hi");
        trial_side_from_json(tr, "placed", &t->placed);
        trial_side_from_json(tr, "kernel", &t->kernel);
        t->back = (TrialBack)back;
        t->reverts = MIN(get_count(tr, "reverts"), 64u);
        (void)get_u64(tr, "retry_ns", &t->retry_ns);
        t->checks = MIN(get_count(tr, "checks"), 64u);
        (void)get_u64(tr, "recheck_ns", &t->recheck_ns);
        t->kept_rate = get_double(tr, "kept_rate");
        t->kept_wait = get_double(tr, "kept_wait");
        t->closer = get_bool(tr, "closer");
        return 0;
}

static int plan_group_from_json(json_object *o, PlanGroup *g) {
        json_object *v;
        uint64_t widen = 0;
        *g = (PlanGroup){ .home = -1 };
        if (get_u64(o, "id", &g->id) < 0 || get_class(o, &g->class) < 0 ||
            get_field(o, "managed", json_type_boolean, &v) < 0 ||
            get_cpuset(o, "cpus", &g->cpus) < 0)
                return -EINVAL;
        g->managed = json_object_get_boolean(v);
        if (g->managed && cpuset_is_empty(&g->cpus))
                return -EINVAL;
        if (json_object_object_get_ex(o, "home", &v))
                g->home = json_object_get_int(v);
        (void)get_u64(o, "widen", &widen);
        g->widen = (unsigned)widen;
        (void)get_u64(o, "since_ns", &g->since_ns);
        (void)get_u64(o, "seen_ns", &g->seen_ns); /* absent before quick ticks: 0 */
        if (json_object_object_get_ex(o, "waiting", &v))
                g->waiting = json_object_get_boolean(v);
        get_string(o, "reason", g->reason, sizeof(g->reason));
        if (json_object_object_get_ex(o, "rule_action", &v)) {
                int a = rule_action_from_string(json_object_get_string(v));
                if (a < 0)
                        return -EINVAL;
                g->rule_action = (RuleAction)a;
                get_string(o, "rule", g->rule, sizeof(g->rule));
        }
        return trial_from_json(o, &g->trial);
}

static int plan_from_object(json_object *o, Plan **ret) {
        json_object *groups, *slices, *idle, *v;
        uint64_t n_cpus = 0;
        if (!json_object_is_type(o, json_type_object) ||
            get_field(o, "groups", json_type_array, &groups) < 0 ||
            get_field(o, "slices", json_type_object, &slices) < 0 ||
            get_field(o, "idle", json_type_array, &idle) < 0 || get_u64(o, "n_cpus", &n_cpus) < 0 ||
            n_cpus > CPUSET_MAX_CPUS)
                return -EINVAL;
        size_t n = json_object_array_length(groups);
        _cleanup_(plan_freep) Plan *p = NULL;
        int r = plan_new((unsigned)n, (unsigned)n_cpus, &p);
        if (r < 0)
                return r;
        (void)get_u64(o, "now_ns", &p->now_ns);
        (void)get_u64(o, "slices_since_ns", &p->slices_since_ns);
        get_string(o, "profile", p->profile, sizeof(p->profile));
        get_string(o, "slice_reason", p->slice_reason, sizeof(p->slice_reason));
        get_string(o, "idle_reason", p->idle_reason, sizeof(p->idle_reason));
        for (size_t i = 0; i < n; i++) {
                r = plan_group_from_json(json_object_array_get_idx(groups, i),
                                         &p->groups[p->n_groups++]);
                if (r < 0)
                        return r;
        }
        for (int s = 0; s < _PLAN_SLICE_MAX; s++) {
                if (!json_object_object_get_ex(slices, plan_slice_to_string(s), &v))
                        continue;
                r = get_cpuset(slices, plan_slice_to_string(s), &p->slice_cpus[s]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < json_object_array_length(idle); i++) {
                json_object *e = json_object_array_get_idx(idle, i);
                uint64_t cpu, lat;
                if (get_u64(e, "cpu", &cpu) < 0 || get_u64(e, "max_exit_latency_us", &lat) < 0 ||
                    cpu >= p->n_cpus || lat > INT32_MAX)
                        return -EINVAL;
                p->idle_max_exit_latency_us[cpu] = (int)lat;
        }
        qsort(p->groups, p->n_groups, sizeof(PlanGroup), plan_group_cmp);
        *ret = TAKE_PTR(p);
        return 0;
}

int plan_from_json(const char *text, Plan **ret) {
        assert(text);
        assert(ret);
        _cleanup_json_ json_object *o = json_tokener_parse(text);
        return o ? plan_from_object(o, ret) : -EINVAL;
}

static json_object *group_rule_to_json(const GroupRule *gr) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(gr->rule));
        json_object_object_add(o, "action",
                               json_object_new_string(rule_action_to_string(gr->action)));
        if (gr->action == RULE_ACTION_PACK_WITH) {
                json_object_object_add(o, "partner", json_object_new_string(gr->partner));
                if (gr->has_partner_group)
                        json_object_object_add(o, "partner_group",
                                               json_object_new_uint64(gr->partner_group));
        }
        return o;
}

/* An absent "rule" is no rule (snapshots before rules). Return: 1 when one was read, 0, -EINVAL. */
static int group_rule_from_json(json_object *o, GroupRule *gr) {
        json_object *r, *v;
        *gr = (GroupRule){ .action = RULE_ACTION_NONE };
        if (!json_object_object_get_ex(o, "rule", &r) || !r)
                return 0;
        if (get_field(r, "action", json_type_string, &v) < 0)
                return -EINVAL;
        int a = rule_action_from_string(json_object_get_string(v));
        if (a < 0 || get_field(r, "name", json_type_string, &v) < 0 ||
            strlen(json_object_get_string(v)) >= RULE_NAME_MAX)
                return -EINVAL;
        gr->action = (RuleAction)a;
        snprintf(gr->rule, sizeof(gr->rule), "%s", json_object_get_string(v));
        get_string(r, "partner", gr->partner, sizeof(gr->partner));
        gr->has_partner_group = get_u64(r, "partner_group", &gr->partner_group) == 0;
        return a != RULE_ACTION_NONE;
}

static json_object *group_to_json(const Group *g, const GroupRule *gr) {
        json_object *o = json_object_new_object(), *tasks = json_object_new_array();
        json_object_object_add(o, "id", json_object_new_uint64(g->id));
        json_object_object_add(o, "class", json_object_new_string(group_class_to_string(g->class)));
        json_object_object_add(o, "util", json_object_new_double(g->util));
        json_object_object_add(o, "runq_delay_us", json_object_new_uint64(g->runq_delay_us));
        json_object_object_add(o, "wake_rate", json_object_new_double(g->wake_rate));
        json_object_object_add(o, "handoff_rate", json_object_new_double(g->handoff_rate));
        json_object_object_add(o, "runq_wait", json_object_new_double(g->runq_wait));
        if (g->io_rate > 0)
                json_object_object_add(o, "io_rate", json_object_new_double(g->io_rate));
        if (g->unmeasured)
                json_object_object_add(o, "measured", json_object_new_boolean(false));
        add_cpuset(o, "cpus", &g->cpus);
        add_cpuset(o, "ran_on", &g->ran_on);
        for (unsigned i = 0; i < g->n_tasks; i++) {
                json_object *t = json_object_new_array();
                json_object_array_add(t, json_object_new_int(g->tasks[i].tid));
                json_object_array_add(t, json_object_new_uint64(g->tasks[i].start_time));
                json_object_array_add(tasks, t);
        }
        json_object_object_add(o, "tasks", tasks);
        if (gr && gr->action != RULE_ACTION_NONE)
                json_object_object_add(o, "rule", group_rule_to_json(gr));
        return o;
}

int policy_snapshot_to_json(const PolicySnapshot *s, char **ret) {
        assert(s);
        assert(ret);
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *groups = json_object_new_array(), *loads = json_object_new_array();
        json_object_object_add(o, "topology",
                               json_object_new_string(s->topology ? s->topology : ""));
        json_object_object_add(o, "profile", json_object_new_string(s->profile));
        json_object_object_add(o, "now_ns", json_object_new_uint64(s->now_ns));
        for (unsigned i = 0; i < s->n_groups; i++)
                json_object_array_add(groups,
                                      group_to_json(&s->groups[i], s->rules ? &s->rules[i] : NULL));
        json_object_object_add(o, "groups", groups);
        for (unsigned c = 0; c < s->n_loads; c++) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "cpu", json_object_new_int((int)c));
                json_object_object_add(e, "busy", json_object_new_double(s->loads[c].busy));
                json_object_object_add(e, "idle_exit_latency_us",
                                       json_object_new_int((int)s->loads[c].idle_exit_latency_us));
                json_object_array_add(loads, e);
        }
        json_object_object_add(o, "loads", loads);
        json_object_object_add(o, "prev_plan", s->prev ? plan_to_object(s->prev) : NULL);
        return json_dup_string(o, ret);
}

static int group_from_json(json_object *o, Group *g) {
        json_object *v, *tasks;
        if (get_u64(o, "id", &g->id) < 0 || get_class(o, &g->class) < 0 ||
            get_cpuset(o, "cpus", &g->cpus) < 0 || get_cpuset(o, "ran_on", &g->ran_on) < 0 ||
            get_field(o, "tasks", json_type_array, &tasks) < 0)
                return -EINVAL;
        if (json_object_object_get_ex(o, "util", &v))
                g->util = json_object_get_double(v);
        if (json_object_object_get_ex(o, "wake_rate", &v))
                g->wake_rate = json_object_get_double(v);
        g->handoff_rate = get_double(o, "handoff_rate");
        g->io_rate = get_double(o, "io_rate");
        if (json_object_object_get_ex(o, "runq_wait", &v))
                g->runq_wait = json_object_get_double(v);
        if (json_object_object_get_ex(o, "measured", &v))
                g->unmeasured = !json_object_get_boolean(v);
        (void)get_u64(o, "runq_delay_us", &g->runq_delay_us);
        size_t n = json_object_array_length(tasks);
        g->tasks = calloc(MAX(n, 1u), sizeof(TaskId));
        if (!g->tasks)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *t = json_object_array_get_idx(tasks, i);
                if (!json_object_is_type(t, json_type_array) || json_object_array_length(t) != 2)
                        return -EINVAL;
                g->tasks[i].tid = json_object_get_int(json_object_array_get_idx(t, 0));
                g->tasks[i].start_time = json_object_get_uint64(json_object_array_get_idx(t, 1));
                g->n_tasks++;
        }
        return 0;
}

static int snapshot_loads_from_json(json_object *loads, PolicySnapshot *s) {
        size_t n = json_object_array_length(loads);
        unsigned max_cpu = 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t cpu;
                if (get_u64(json_object_array_get_idx(loads, i), "cpu", &cpu) < 0 ||
                    cpu >= CPUSET_MAX_CPUS)
                        return -EINVAL;
                max_cpu = MAX(max_cpu, (unsigned)cpu + 1);
        }
        s->loads = calloc(MAX(max_cpu, 1u), sizeof(CpuLoad));
        if (!s->loads)
                return -ENOMEM;
        s->n_loads = max_cpu;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(loads, i), *v;
                uint64_t cpu = 0, lat = 0;
                (void)get_u64(e, "cpu", &cpu);
                if (json_object_object_get_ex(e, "busy", &v))
                        s->loads[cpu].busy = json_object_get_double(v);
                (void)get_u64(e, "idle_exit_latency_us", &lat);
                s->loads[cpu].idle_exit_latency_us = (unsigned)lat;
        }
        return 0;
}

static int snapshot_from_object(json_object *o, PolicySnapshot *s) {
        json_object *groups, *loads, *v;
        if (!json_object_is_type(o, json_type_object) ||
            get_field(o, "groups", json_type_array, &groups) < 0 ||
            get_field(o, "loads", json_type_array, &loads) < 0 ||
            get_field(o, "topology", json_type_string, &v) < 0)
                return -EINVAL;
        s->topology = strdup(json_object_get_string(v));
        if (!s->topology)
                return -ENOMEM;
        get_string(o, "profile", s->profile, sizeof(s->profile));
        (void)get_u64(o, "now_ns", &s->now_ns);
        size_t n = json_object_array_length(groups);
        s->groups = calloc(MAX(n, 1u), sizeof(Group));
        s->rules = calloc(MAX(n, 1u), sizeof(GroupRule));
        if (!s->groups || !s->rules)
                return -ENOMEM;
        bool any_rule = false;
        for (size_t i = 0; i < n; i++) {
                json_object *go = json_object_array_get_idx(groups, i);
                int r = group_from_json(go, &s->groups[i]);
                s->n_groups++;
                if (r >= 0)
                        r = group_rule_from_json(go, &s->rules[i]);
                if (r < 0)
                        return r;
                any_rule = any_rule || r > 0;
        }
        if (!any_rule)
                s->rules = mfree(s->rules);
        int r = snapshot_loads_from_json(loads, s);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(o, "prev_plan", &v) && v)
                return plan_from_object(v, &s->prev);
        return 0;
}

int policy_snapshot_from_json(const char *text, PolicySnapshot **ret) {
        assert(text);
        assert(ret);
        _cleanup_json_ json_object *o = json_tokener_parse(text);
        if (!o)
                return -EINVAL;
        PolicySnapshot *s = calloc(1, sizeof(PolicySnapshot));
        if (!s)
                return -ENOMEM;
        int r = snapshot_from_object(o, s);
        if (r < 0) {
                policy_snapshot_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

PolicySnapshot *policy_snapshot_free(PolicySnapshot *s) {
        if (!s)
                return NULL;
        for (unsigned i = 0; i < s->n_groups; i++)
                free(s->groups[i].tasks);
        free(s->groups);
        free(s->rules);
        free(s->loads);
        free(s->topology);
        plan_free(s->prev);
        free(s);
        return NULL;
}
