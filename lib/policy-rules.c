/* SPDX-License-Identifier: MIT */
/*
 * The policy's side of per-application rules (see "Rules" in policy.h):
 * which groups a pack-with links into one set, that set seen as one group,
 * the reason that names the rule, and the idle caps of latency-critical
 * groups. The decision itself stays in decide_group() (policy.c), which
 * asks these helpers. Pure, like the rest of the policy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

const GroupRule *policy_group_rule(const Ctx *c, unsigned i) {
        const GroupRule *gr = c->in->rules ? &c->in->rules[i] : NULL;
        return gr && gr->action != RULE_ACTION_NONE ? gr : NULL;
}

static int group_index(const PolicyInput *in, uint64_t id) {
        for (unsigned i = 0; i < in->n_groups; i++)
                if (in->groups[i].id == id)
                        return (int)i;
        return -1;
}

static int joint_find(int *parent, int i) {
        while (parent[i] != i)
                i = parent[i] = parent[parent[i]];
        return i;
}

/*
 * Union-find over the pack-with links: each set is named by its lowest
 * index. A link to a group that is not in the input is dropped, and a
 * group alone in its set has none (-1).
 */
int policy_rules_init(Ctx *c) {
        const PolicyInput *in = c->in;
        unsigned n = in->n_groups;

        if (in->latency_profile)
                c->latency = *in->latency_profile;
        else if (profile_defaults("latency-first", &c->latency) < 0)
                c->latency = *c->profile;
        c->joint = calloc(n ? n : 1, sizeof(int));
        if (!c->joint)
                return -ENOMEM;
        c->joint_placed = calloc(n ? n : 1, sizeof(PlanGroup *));
        if (!c->joint_placed)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                c->joint[i] = (int)i;
        for (unsigned i = 0; i < n; i++) {
                const GroupRule *gr = policy_group_rule(c, i);
                if (!gr || gr->action != RULE_ACTION_PACK_WITH || !gr->has_partner_group)
                        continue;
                int j = group_index(in, gr->partner_group);
                if (j < 0)
                        continue;
                int a = joint_find(c->joint, (int)i), b = joint_find(c->joint, j);
                if (a != b)
                        c->joint[MAX(a, b)] = MIN(a, b);
        }
        unsigned *size = calloc(n ? n : 1, sizeof(unsigned));
        if (!size)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                size[joint_find(c->joint, (int)i)]++;
        for (unsigned i = 0; i < n; i++) {
                int root = joint_find(c->joint, (int)i);
                c->joint[i] = size[root] > 1 ? root : -1;
        }
        free(size);
        return 0;
}

void policy_rules_done(Ctx *c) {
        free(c->joint);
        free(c->joint_placed);
}

void policy_joint_group(const Ctx *c, unsigned i, Group *ret) {
        const PolicyInput *in = c->in;
        *ret = (Group){ .id = in->groups[i].id, .class = GROUP_MESH };
        for (unsigned k = 0; k < in->n_groups; k++) {
                const Group *g = &in->groups[k];
                if (c->joint[k] != c->joint[i])
                        continue;
                ret->n_tasks += g->n_tasks;
                ret->util += g->util;
                ret->runq_wait += g->runq_wait;
                ret->runq_delay_us = MAX(ret->runq_delay_us, g->runq_delay_us);
                ret->wake_rate += g->wake_rate;
                ret->handoff_rate += g->handoff_rate;
                ret->unmeasured = ret->unmeasured || g->unmeasured;
                cpuset_or(&ret->cpus, &ret->cpus, &g->cpus);
                cpuset_or(&ret->ran_on, &ret->ran_on, &g->ran_on);
        }
}

void policy_rule_reason(PlanGroup *pg, const GroupRule *gr) {
        char prefix[RULE_NAME_MAX + 40];
        snprintf(prefix, sizeof(prefix), "rule \"%s\" (%s): ", gr->rule,
                 rule_action_to_string(gr->action));
        if (strncmp(pg->reason, prefix, strlen(prefix)) == 0)
                return;
        char reason[sizeof(prefix) + PLAN_REASON_MAX];
        snprintf(reason, sizeof(reason), "%s%s", prefix, pg->reason);
        memcpy(pg->reason, reason, PLAN_REASON_MAX - 1);
        pg->reason[PLAN_REASON_MAX - 1] = '\0';
}

unsigned policy_rules_idle(const Ctx *c, Plan *plan) {
        const PolicyInput *in = c->in;
        int cap = (int)MIN(c->latency.idle_max_exit_latency_us, (unsigned)INT32_MAX);
        unsigned n = 0;

        if (c->latency.idle_constraint == IDLE_CONSTRAINT_NEVER)
                return 0;
        for (unsigned i = 0; i < in->n_groups; i++) {
                const GroupRule *gr = policy_group_rule(c, i);
                if (!gr || gr->action != RULE_ACTION_LATENCY_CRITICAL)
                        continue;
                const Group *g = &in->groups[i];
                const PlanGroup *pg = plan_find_group(plan, g->id);
                const CpuSet *where = pg && pg->managed ? &pg->cpus : &g->ran_on;
                CPUSET_FOREACH (cpu, where) {
                        if ((unsigned)cpu >= plan->n_cpus || !cpuset_isset(&c->t->online, cpu))
                                continue;
                        int *v = &plan->idle_max_exit_latency_us[cpu];
                        if (*v == PLAN_NO_IDLE_CAP || *v > cap)
                                *v = cap;
                        n++;
                }
        }
        return n;
}
