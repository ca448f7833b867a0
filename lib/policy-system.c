/* SPDX-License-Identifier: MIT */
/*
 * What a plan says beside its groups (policy.h): the housekeeping set
 * power-first confines the system slices to at low load, and the idle
 * exit-latency caps. Part of the pure policy (policy-internal.h): the
 * housekeeping set is chosen before the groups are decided, so that
 * consolidating pairs join it; the slices and the caps after, from what the
 * groups got. A quick tick (PolicyInput.focus) keeps the previous plan's
 * confinement: consolidation moves only on regular ticks.
 */
#include <stdio.h>
#include <string.h>

#include "policy-internal.h"

static double machine_busy(const Ctx *c) {
        double sum = 0;
        TOPO_FOREACH_CPU (cpu, c->t)
                if (c->in->loads && (unsigned)cpu < c->in->n_loads)
                        sum += MAX(0.0, MIN(1.0, c->in->loads[cpu].busy));
        return sum;
}

/* The machine's busy time in CPUs of capacity 1. */
static double machine_work(const Ctx *c) {
        double sum = 0;
        TOPO_FOREACH_CPU (cpu, c->t)
                if (c->in->loads && (unsigned)cpu < c->in->n_loads && (unsigned)cpu < c->t->n_cpus)
                        sum += MAX(0.0, MIN(1.0, c->in->loads[cpu].busy)) * c->cap[cpu];
        return sum;
}

static double set_capacity(const Ctx *c, const CpuSet *s) {
        double sum = 0;
        CPUSET_FOREACH (cpu, s)
                if ((unsigned)cpu < c->t->n_cpus)
                        sum += c->cap[cpu];
        return sum;
}

/*
 * Where light groups go to efficient cores, the slices go there first too,
 * so the two consolidate together and the performance cores can sleep:
 * units without a performance core (a Meteor Lake's LP E-cores, whose L2
 * is off the compute tile; a Strix Point's compact-core CCX; a LITTLE
 * cluster), then the efficient cores of the other units, then whole units,
 * lowest first, until they hold the machine's load (in CPUs of capacity 1)
 * with headroom.
 */
static void choose_housekeeping_efficient(Ctx *c) {
        const Topology *t = c->t;
        CpuSet efficient;
        cpuset_or(&efficient, &t->kind_cpus[TOPO_CORE_EFFICIENT],
                  c->p->low_power ? &t->kind_cpus[TOPO_CORE_LOW_POWER]
                                  : &t->kind_cpus[TOPO_CORE_EFFICIENT]);
        double busy = machine_work(c), room = 0;
        for (int pass = 0; pass < 3; pass++)
                for (unsigned u = 0; u < c->n_units; u++) {
                        if (room + 1e-9 >= busy &&
                            cpuset_count(&c->housekeeping) >= c->p->housekeeping_min_cpus)
                                return;
                        const CpuSet *unit = &c->units[u].cpus;
                        CpuSet add = *unit;
                        if (pass < 2) {
                                bool mixed = !cpuset_is_subset(unit, &efficient);
                                if (mixed != (pass == 1))
                                        continue;
                                cpuset_and(&add, unit, &efficient);
                        }
                        cpuset_andnot(&add, &add, &c->housekeeping);
                        cpuset_or(&c->housekeeping, &c->housekeeping, &add);
                        room += set_capacity(c, &add) * policy_headroom(c);
                }
}

/* Power-first: the fewest units, lowest first, that hold the machine's load with headroom. */
static void choose_housekeeping(Ctx *c) {
        const Plan *prev = c->in->prev;
        unsigned n_online = cpuset_count(&c->t->online);
        double busy = machine_busy(c), pct = n_online ? busy * 100 / n_online : 0;
        bool was = prev && !cpuset_is_empty(&prev->slice_cpus[PLAN_SLICE_SYSTEM]);
        unsigned limit = c->p->consolidate_below_load_pct + (was ? 10 : 0); /* hysteresis band */

        c->consolidate = c->p->consolidate && pct < limit;
        cpuset_zero(&c->housekeeping);
        if (!c->consolidate)
                return;
        if (c->t->asymmetric && c->p->light_cores == PROFILE_CORES_EFFICIENT)
                return choose_housekeeping_efficient(c);
        double room = 0;
        for (unsigned u = 0; u < c->n_units; u++) {
                if (room + 1e-9 >= busy &&
                    cpuset_count(&c->housekeeping) >= c->p->housekeeping_min_cpus)
                        break;
                cpuset_or(&c->housekeeping, &c->housekeeping, &c->units[u].cpus);
                room += cpuset_count(&c->units[u].cpus) * policy_headroom(c);
        }
}

/* A quick tick consolidates into the previous plan's confinement, if any. */
static void keep_housekeeping(Ctx *c) {
        const Plan *prev = c->in->prev;
        c->consolidate =
                c->p->consolidate && prev && !cpuset_is_empty(&prev->slice_cpus[PLAN_SLICE_SYSTEM]);
        cpuset_zero(&c->housekeeping);
        if (c->consolidate)
                cpuset_and(&c->housekeeping, &prev->slice_cpus[PLAN_SLICE_SYSTEM], &c->t->online);
}

/* A quick tick keeps the previous confinement, widened to the groups placed outside it. */
static void keep_slices(Ctx *c, Plan *plan) {
        const Plan *prev = c->in->prev;
        CpuSet hk;
        cpuset_zero(&hk);
        if (prev)
                hk = prev->slice_cpus[PLAN_SLICE_SYSTEM];
        bool confine = !cpuset_is_empty(&hk);
        for (unsigned i = 0; i < plan->n_groups && confine; i++)
                if (plan->groups[i].managed)
                        cpuset_or(&hk, &hk, &plan->groups[i].cpus);
        cpuset_and(&hk, &hk, &c->t->online);
        confine = confine && !cpuset_is_empty(&hk) && !cpuset_equal(&hk, &c->t->online);
        bool same = prev && cpuset_equal(&hk, &prev->slice_cpus[PLAN_SLICE_SYSTEM]) &&
                    confine == !cpuset_is_empty(&prev->slice_cpus[PLAN_SLICE_SYSTEM]);
        for (int s = 0; s < _PLAN_SLICE_MAX; s++) {
                if (!confine)
                        cpuset_zero(&plan->slice_cpus[s]);
                else if (same)
                        plan->slice_cpus[s] = prev->slice_cpus[s];
                else
                        plan->slice_cpus[s] = hk;
        }
        plan->slices_since_ns = same ? prev->slices_since_ns : c->in->now_ns;
        if (same)
                memcpy(plan->slice_reason, prev->slice_reason, sizeof(plan->slice_reason));
        else if (confine)
                snprintf(plan->slice_reason, sizeof(plan->slice_reason),
                         "slices kept confined as the last full decision had them, widened to "
                         "%u CPUs for the groups placed since",
                         cpuset_count(&hk));
        else
                snprintf(plan->slice_reason, sizeof(plan->slice_reason), "%s",
                         prev ? prev->slice_reason : "not confined before the first full decision");
}

void policy_decide_slices(Ctx *c, Plan *plan) {
        const Plan *prev = c->in->prev;
        if (c->in->focus)
                return keep_slices(c, plan);
        CpuSet hk = c->housekeeping;
        for (unsigned i = 0; i < plan->n_groups && c->consolidate; i++)
                if (plan->groups[i].managed) /* slices must keep every placed group's CPUs */
                        cpuset_or(&hk, &hk, &plan->groups[i].cpus);
        cpuset_and(&hk, &hk, &c->t->online);
        bool confine = c->consolidate && !cpuset_is_empty(&hk) && !cpuset_equal(&hk, &c->t->online);

        CpuSet prev_hk;
        cpuset_zero(&prev_hk);
        if (prev)
                prev_hk = prev->slice_cpus[PLAN_SLICE_SYSTEM];
        /* The previous confinement stands for dwell_ms, unless groups need more CPUs. */
        if (prev && c->in->now_ns < prev->slices_since_ns + (uint64_t)c->p->dwell_ms * 1000000ULL &&
            (cpuset_is_empty(&prev_hk) || !confine || cpuset_is_subset(&hk, &prev_hk))) {
                confine = !cpuset_is_empty(&prev_hk);
                hk = prev_hk;
        }
        for (int s = 0; s < _PLAN_SLICE_MAX; s++) {
                if (confine)
                        plan->slice_cpus[s] = hk;
                else
                        cpuset_zero(&plan->slice_cpus[s]);
        }
        bool same = prev && cpuset_equal(&prev_hk, &plan->slice_cpus[PLAN_SLICE_SYSTEM]);
        plan->slices_since_ns = same ? prev->slices_since_ns : c->in->now_ns;
        if (confine)
                snprintf(plan->slice_reason, sizeof(plan->slice_reason),
                         "load %.1f of %u CPUs is below consolidate_below_load_pct=%u%%: "
                         "slices confined to %u housekeeping CPUs",
                         machine_busy(c), cpuset_count(&c->t->online),
                         c->p->consolidate_below_load_pct, cpuset_count(&hk));
        else
                snprintf(plan->slice_reason, sizeof(plan->slice_reason), "%s",
                         c->p->consolidate ? "load too high to consolidate: slices unconfined"
                                           : "the profile does not consolidate");
}

void policy_decide_idle(Ctx *c, Plan *plan) {
        const Profile *p = c->p;
        for (unsigned i = 0; i < plan->n_cpus; i++)
                plan->idle_max_exit_latency_us[i] = PLAN_NO_IDLE_CAP;
        unsigned n = 0;
        for (unsigned i = 0; i < c->in->n_groups && p->idle_constraint != IDLE_CONSTRAINT_NEVER;
             i++) {
                const Group *g = &c->in->groups[i];
                const GroupRule *gr = policy_group_rule(c, i);
                if (gr && gr->action == RULE_ACTION_IGNORE)
                        continue; /* left alone, idle caps included */
                bool critical = p->idle_constraint == IDLE_CONSTRAINT_LATENCY_CRITICAL
                                        ? g->class == GROUP_PAIR || g->class == GROUP_FANOUT
                                        : g->class != GROUP_SOLO && p->runq_delay_budget_us > 0 &&
                                                  g->runq_delay_us > p->runq_delay_budget_us;
                if (!critical)
                        continue;
                const PlanGroup *pg = plan_find_group(plan, g->id);
                const CpuSet *where = pg && pg->managed ? &pg->cpus : &g->ran_on;
                CPUSET_FOREACH (cpu, where)
                        if ((unsigned)cpu < plan->n_cpus && cpuset_isset(&c->t->online, cpu)) {
                                plan->idle_max_exit_latency_us[cpu] =
                                        (int)MIN(p->idle_max_exit_latency_us, (unsigned)INT32_MAX);
                                n++;
                        }
        }
        unsigned n_rules = policy_rules_idle(c, plan);
        if (n == 0 && n_rules > 0)
                snprintf(plan->idle_reason, sizeof(plan->idle_reason),
                         "exit latency capped at %u us where latency-critical groups run "
                         "(rules)",
                         c->latency.idle_max_exit_latency_us);
        else if (n == 0)
                snprintf(plan->idle_reason, sizeof(plan->idle_reason), "no idle caps (%s)",
                         idle_constraint_to_string(p->idle_constraint));
        else
                snprintf(plan->idle_reason, sizeof(plan->idle_reason),
                         "exit latency capped at %u us where %s groups run (%s)",
                         p->idle_max_exit_latency_us,
                         p->idle_constraint == IDLE_CONSTRAINT_ON_DELAY ? "delayed"
                                                                        : "latency-critical",
                         idle_constraint_to_string(p->idle_constraint));
}

void policy_choose_housekeeping(Ctx *c) {
        if (c->in->focus)
                keep_housekeeping(c);
        else
                choose_housekeeping(c);
}
