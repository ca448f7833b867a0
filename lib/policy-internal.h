/* SPDX-License-Identifier: MIT */
/*
 * What the policy's decision shares with its rules' side (policy.c and
 * policy-rules.c, one module); not part of the library's interface.
 */
#pragma once

#include "macro.h"
#include "policy.h"

typedef struct UnitRank UnitRank; /* policy.c: a unit ranked for one group */

/*
 * One policy_decide() call's working state (see policy.c's top comment).
 * Its arrays are allocated before the decision starts (ctx_init()), so
 * nothing is allocated while groups are decided.
 */
typedef struct Ctx {
        const PolicyInput *in;
        const Topology *t;
        const Profile *p;
        const TopoDomain *units;
        unsigned n_units;
        bool core_level;
        double *bg;          /* per CPU: load not from placed groups */
        double *claim;       /* per CPU: utilisation placed here this tick */
        unsigned *homes;     /* per unit: groups anchored on it this tick */
        UnitRank *ranks;     /* per unit: scratch of rank_units(), one group's at a time */
        unsigned *order;     /* per group: the order groups are decided in */
        CpuSet housekeeping; /* power-first: units slices are confined to */
        bool consolidate;
        /* Rules (policy-rules.c) */
        const Profile
                *profile; /* the profile in force (p is latency for a latency-critical group) */
        Profile latency;  /* what latency-critical groups are decided with */
        int *joint;       /* per group index: first index of its pack-with set, -1 none */
        PlanGroup **joint_placed; /* per group index: the set's decision this tick, NULL yet */
} Ctx;

/* ---- Rules (policy-rules.c) ---- */

/* Return: the rule decision of group i, or NULL when it has none. */
const GroupRule *policy_group_rule(const Ctx *c, unsigned i);

/* Sets up c->latency, c->joint and c->joint_placed (at the start of a
 * decision, like every allocation of one). Return: 0 or -ENOMEM. */
int policy_rules_init(Ctx *c);
void policy_rules_done(Ctx *c);

/* The members of group i's pack-with set as one group (class mesh, summed
 * utilisation, united CPUs; no tasks). */
void policy_joint_group(const Ctx *c, unsigned i, Group *ret);

/* Leads pg->reason with the rule that decided, once. */
void policy_rule_reason(PlanGroup *pg, const GroupRule *gr);

/* Idle caps for latency-critical groups: latency's cap, the lower of two.
 * Return: how many CPUs it capped. */
unsigned policy_rules_idle(const Ctx *c, Plan *plan);
