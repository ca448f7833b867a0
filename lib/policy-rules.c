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

/* A group's id and its index in the input, sorted by id then index. */
typedef struct GroupIndex {
        uint64_t id;
        unsigned i;
} GroupIndex;

static int group_index_cmp(const void *x, const void *y) {
        const GroupIndex *a = x, *b = y;
        if (a->id != b->id)
                return a->id < b->id ? -1 : 1;
        return a->i < b->i ? -1 : a->i > b->i;
}

/* Return: the first index of group id in the input, or -1. */
static int group_index(const GroupIndex *ix, unsigned n, uint64_t id) {
        unsigned lo = 0, hi = n;
        while (lo < hi) {
                unsigned mid = lo + (hi - lo) / 2;
                if (ix[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n && ix[lo].id == id ? (int)ix[lo].i : -1;
}

static int joint_find(int *parent, int i) {
        while (parent[i] != i)
                i = parent[i] = parent[parent[i]];
        return i;
}

/*
 * Union-find over the pack-with links: each set is named by its lowest
 * index. A link to a group that is not in the input is dropped, and a
 * group alone in its set has none (-1). Partners are found through an
 * index sorted by id, and each set's members are linked in index order,
 * so a set is read without a scan of every group (issue 25).
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
        c->joint_next = calloc(n ? n : 1, sizeof(int));
        if (!c->joint_next)
                return -ENOMEM;
        c->joint_latency = calloc(n ? n : 1, sizeof(bool));
        if (!c->joint_latency)
                return -ENOMEM;
        _cleanup_free_ GroupIndex *ix = calloc(n ? n : 1, sizeof(GroupIndex));
        if (!ix)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                ix[i] = (GroupIndex){ .id = in->groups[i].id, .i = i };
        qsort(ix, n, sizeof(GroupIndex), group_index_cmp);
        for (unsigned i = 0; i < n; i++)
                c->joint[i] = (int)i;
        for (unsigned i = 0; i < n; i++) {
                const GroupRule *gr = policy_group_rule(c, i);
                if (!gr || gr->action != RULE_ACTION_PACK_WITH || !gr->has_partner_group)
                        continue;
                int j = group_index(ix, n, gr->partner_group);
                if (j < 0)
                        continue;
                int a = joint_find(c->joint, (int)i), b = joint_find(c->joint, j);
                if (a != b)
                        c->joint[MAX(a, b)] = MIN(a, b);
        }
        _cleanup_free_ unsigned *size = calloc(n ? n : 1, sizeof(unsigned));
        if (!size)
                return -ENOMEM;
        _cleanup_free_ int *last = calloc(n ? n : 1, sizeof(int)); /* each set's last member */
        if (!last)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                size[joint_find(c->joint, (int)i)]++;
        for (unsigned i = 0; i < n; i++) {
                int root = joint_find(c->joint, (int)i);
                c->joint[i] = size[root] > 1 ? root : -1;
        }
        for (unsigned i = 0; i < n; i++) {
                c->joint_next[i] = -1;
                last[i] = -1;
        }
        for (unsigned i = 0; i < n; i++) {
                int root = c->joint[i];
                if (root < 0)
                        continue;
                if (last[root] >= 0)
                        c->joint_next[last[root]] = (int)i;
                last[root] = (int)i;
                const GroupRule *gr = policy_group_rule(c, i);
                if (gr && gr->action == RULE_ACTION_LATENCY_CRITICAL)
                        c->joint_latency[root] = true;
        }
        return 0;
}

void policy_rules_done(Ctx *c) {
        free(c->joint);
        free(c->joint_next);
        free(c->joint_latency);
        free(c->joint_placed);
}

void policy_joint_group(const Ctx *c, unsigned i, Group *ret) {
        const PolicyInput *in = c->in;
        *ret = (Group){ .id = in->groups[i].id, .class = GROUP_MESH };
        for (int k = c->joint[i]; k >= 0; k = c->joint_next[k]) {
                const Group *g = &in->groups[k];
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
