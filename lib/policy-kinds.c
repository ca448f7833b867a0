/* SPDX-License-Identifier: MIT */
/*
 * Which kinds of core a group goes to (docs/design.md, "Kinds of core and
 * capacity"; the profile's [capacity] keys), and what it weighs there.
 *
 * Demand is counted in CPUs of the biggest kind: a group that ran 0.5 of
 * a CPU on E-cores of capacity 0.58 did 0.29 of a P-core's work, and needs
 * 0.86 of one such E-core again (policy-load.c shares claims the same way).
 * A group is busy when that demand passes busy_pct of an efficient core's
 * capacity. Busy groups go where busy_cores says, the others where
 * light_cores says: performance cores (wherever the group ran before), or
 * efficient cores, the E-cores and the low-power ones where the group keeps
 * up (its need fits their capacity). Latency-critical groups go to
 * performance cores whatever the profile says, and a profile without
 * low_power places nothing on low-power cores. Where the kinds asked for
 * have no room, the group is decided on the other CPUs it may use (never
 * on low-power cores a profile keeps out): the trial judges that as any
 * placement.
 *
 * On a machine whose cores are all alike every capacity is 1 and every
 * group may use what its cpuset allows: decisions are what they were
 * before kinds, bit for bit.
 */
#include <stdio.h>
#include <string.h>

#include "policy-internal.h"

double policy_group_work(const Ctx *c, const Group *g, double cpus) {
        if (!c->t->asymmetric)
                return cpus;
        double cap = 0;
        unsigned n = 0;
        CPUSET_FOREACH (cpu, &g->ran_on) {
                if ((unsigned)cpu >= c->t->n_cpus)
                        break;
                if (!cpuset_isset(&c->t->online, cpu))
                        continue;
                cap += c->cap[cpu];
                n++;
        }
        /* Where it ran is not known: count it as run on the biggest cores. */
        return n > 0 ? cpus * cap / n : cpus;
}

double policy_group_demand(const Ctx *c, const Group *g) {
        if (g->class == GROUP_PAIR)
                return MIN(policy_group_work(c, g, g->util), 1.0);
        return policy_group_work(c, g, g->util + g->runq_wait);
}

/* The capacity of an efficient core: the biggest of that kind, else of low-power ones. */
static double efficient_capacity(const Ctx *c) {
        const Topology *t = c->t;
        for (TopoCoreKind k = TOPO_CORE_EFFICIENT; k <= TOPO_CORE_LOW_POWER; k++) {
                double cap = 0;
                CPUSET_FOREACH (cpu, &t->kind_cpus[k])
                        if ((unsigned)cpu < t->n_cpus)
                                cap = MAX(cap, c->cap[cpu]);
                if (cap > 0)
                        return cap;
        }
        return 1.0;
}

void policy_kind_scopes(const Ctx *c, const Group *g, bool latency, const CpuSet *allowed,
                        KindScope *ret) {
        const Topology *t = c->t;
        const Profile *p = c->p;
        /* Not a compound literal: its CpuSets need no zeroing, once per group. */
        ret->cpus[0] = ret->cpus[1] = allowed;
        ret->n = 1;
        ret->want = PROFILE_CORES_ANY;
        ret->busy = ret->latency = ret->no_low_power = false;
        if (!t->asymmetric)
                return;

        CpuSet *base = &ret->base_cpus;
        *base = *allowed;
        if (!p->low_power) {
                cpuset_andnot(base, allowed, &t->kind_cpus[TOPO_CORE_LOW_POWER]);
                ret->no_low_power = !cpuset_equal(base, allowed);
        }
        double demand = policy_group_demand(c, g);
        ret->busy = demand * 100 > p->busy_pct * efficient_capacity(c) + 1e-9;
        ret->latency = latency;
        ret->want = latency     ? PROFILE_CORES_PERFORMANCE
                    : ret->busy ? p->busy_cores
                                : p->light_cores;
        if (cpuset_is_empty(base)) {
                ret->n = 0;
                return;
        }
        CpuSet *want = &ret->want_cpus;
        *want = *base;
        if (ret->want == PROFILE_CORES_PERFORMANCE)
                cpuset_and(want, base, &t->kind_cpus[TOPO_CORE_PERFORMANCE]);
        else if (ret->want == PROFILE_CORES_EFFICIENT) {
                CpuSet efficient;
                cpuset_or(&efficient, &t->kind_cpus[TOPO_CORE_EFFICIENT],
                          &t->kind_cpus[TOPO_CORE_LOW_POWER]);
                cpuset_and(want, base, &efficient);
        }
        ret->cpus[0] = cpuset_is_empty(want) ? base : want;
        ret->n = 1;
        if (!cpuset_is_empty(want) && !cpuset_equal(want, base))
                ret->cpus[ret->n++] = base;
}

const char *policy_cpu_kind_word(const Ctx *c, int cpu) {
        if (!c->t->asymmetric || cpu < 0 || (unsigned)cpu >= c->t->n_cpus)
                return "";
        switch (c->t->cpus[cpu].kind) {
        case TOPO_CORE_PERFORMANCE:
                return "performance ";
        case TOPO_CORE_EFFICIENT:
                return "efficient ";
        case TOPO_CORE_LOW_POWER:
                return "low-power ";
        default:
                return "";
        }
}

void policy_kind_reason(const Ctx *c, const KindScope *ks, unsigned used, PlanGroup *pg) {
        if (!c->t->asymmetric || !pg->managed)
                return;
        const char *size = ks->latency ? "latency-critical" : ks->busy ? "busy" : "light";
        char clause[160];
        if (ks->want == PROFILE_CORES_ANY)
                snprintf(clause, sizeof(clause), "; %s, %s%s", size, c->p->name,
                         ks->no_low_power ? ": no low-power cores" : "");
        else if (used == 0)
                snprintf(clause, sizeof(clause), "; %s, %s: %s cores", size,
                         ks->latency ? "any profile" : c->p->name,
                         profile_cores_to_string(ks->want));
        else
                snprintf(clause, sizeof(clause), "; %s, %s: no %s core had room", size,
                         ks->latency ? "any profile" : c->p->name,
                         profile_cores_to_string(ks->want));
        size_t len = strlen(pg->reason);
        if (len < sizeof(pg->reason) - 1)
                snprintf(pg->reason + len, sizeof(pg->reason) - len, "%s", clause);
}
