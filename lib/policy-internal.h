/* SPDX-License-Identifier: MIT */
/*
 * What the policy's decision shares with its rules' side, its load state,
 * its kinds of core and its slices and idle caps (policy.c, policy-rules.c,
 * policy-load.c, policy-kinds.c and policy-system.c, one module); not part
 * of the library's interface.
 */
#pragma once

#include "macro.h"
#include "policy.h"

/* A load below this is no claim: a group of zero utilisation takes nothing. */
#define POLICY_CLAIM_EPS 1e-9
/* Capacities the CPU index keeps apart; a machine with more is scanned. */
#define POLICY_CPU_CLASSES_MAX 8

/* A unit ranked for one group (rank_cmp() in policy.c says the orders). */
typedef struct UnitRank {
        unsigned unit;
        double load; /* background + claims, in CPUs of capacity 1 */
        double cap;  /* its allowed CPUs' capacity */
        unsigned homes;
        bool housekeeping;
        bool prev;
} UnitRank;

/* The orders units are kept in (policy-load.c), one per way of ranking them. */
typedef enum RankOrder {
        RANK_ORDER_PACK_HK, /* housekeeping first, then busiest (consolidating) */
        RANK_ORDER_PACK,    /* busiest first */
        RANK_ORDER_HOME,    /* fewest homes, then most free */
        RANK_ORDER_SPREAD,  /* most free */
        _RANK_ORDER_MAX,
} RankOrder;

/* One group's ranking, read from the front of an order as far as it is needed. */
typedef struct Ranker {
        RankOrder order;
        const PlanGroup *prev; /* its units rank first among ties */
        UnitRank *r;           /* the units ranked so far (Ctx.ranks) */
        unsigned n;            /* ... how many */
        unsigned next;         /* the next position in the order */
        unsigned total;        /* units it may use */
        bool whole;            /* every unit: read from an order */
        unsigned stamp;        /* only the units of this stamp (Ctx.unit_stamp); 0 = all */
} Ranker;

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
        double *bg;      /* per CPU: load not from placed groups */
        double *claim;   /* per CPU: utilisation placed here this tick */
        unsigned *homes; /* per unit: groups anchored on it this tick */
        UnitRank *ranks; /* per unit: scratch of rank_units(), one group's at a time */
        /* Load state (policy-load.c), kept as claims change */
        double *cap;           /* per CPU: capacity, 1 = the biggest CPU */
        unsigned *unit_first;  /* per unit + 1: where its CPUs start in unit_cpus */
        int *unit_cpus;        /* the units' online CPUs, each ascending */
        double *unit_load;     /* per unit: sum of its CPUs' load x capacity */
        double *unit_cap;      /* per unit: sum of its CPUs' capacity */
        double *unit_min_load; /* per unit: its least loaded CPU's load */
        double *unit_max_cap;  /* per unit: its biggest CPU's capacity */
        double *unit_min_cap;  /* per unit: its smallest CPU's capacity */
        bool *unit_hk;         /* per unit: inside the housekeeping set */
        bool *unit_mark;       /* per unit: scratch, all false between uses */
        unsigned *unit_stamp;  /* per unit: the last stamp of a group that may use it whole */
        unsigned stamp;        /* ... the stamp of the group being ranked */
        unsigned *unit_words;  /* per unit: the first and last word of its CPU bits */
        bool *unit_dirty;      /* per unit: claimed on since the last flush */
        unsigned *dirty_units; /* ... which, n_dirty_units of them */
        unsigned n_dirty_units;
        bool *cpu_dirty;           /* per CPU: claimed on since the last flush */
        bool *cpu_indexed_claimed; /* per CPU: claimed, as the index has it */
        int *dirty_cpus;           /* ... which, n_dirty_cpus of them */
        unsigned n_dirty_cpus;
        unsigned *order_units;     /* _RANK_ORDER_MAX orders of n_units units */
        unsigned *order_pos;       /* ... and each unit's place in each */
        double free_total;         /* sum of the units' free capacity (never below 0 each) */
        bool consolidate_at_start; /* RANK_ORDER_PACK_HK is kept */
        unsigned n_classes;        /* capacities the CPU index keeps apart; 0 = none */
        double class_cap[POLICY_CPU_CLASSES_MAX]; /* ... each one's capacity */
        unsigned char *cpu_class;                 /* per CPU: its class */
        unsigned tree_size;  /* leaves of each min-tree: a power of 2 >= n_cpus */
        double *trees;       /* per class, unclaimed and claimed: min-trees of loads */
        unsigned *order;     /* per group: the order groups are decided in */
        CpuSet housekeeping; /* power-first: units slices are confined to */
        bool consolidate;
        /* Rules (policy-rules.c) */
        const Profile
                *profile;    /* the profile in force (p is latency for a latency-critical group) */
        Profile latency;     /* what latency-critical groups are decided with */
        int *joint;          /* per group index: first index of its pack-with set, -1 none */
        int *joint_next;     /* per group index: the next member of its set, -1 the last */
        bool *joint_latency; /* per first index: the set has a latency-critical member */
        PlanGroup **joint_placed; /* per group index: the set's decision this tick, NULL yet */
        bool joint_deciding;      /* a pack-with set is being decided: the owner asked to pack it */
} Ctx;

/* ---- Load state (policy-load.c) ---- */

int policy_load_init(Ctx *c);
void policy_load_done(Ctx *c);
/* After the background is known: unit sums, orders and the CPU index. */
void policy_load_build(Ctx *c);
/* Claims work (CPUs of capacity 1) on s, shared in proportion to capacity. */
void policy_load_claim(Ctx *c, const CpuSet *s, double work);
/* Brings the unit sums, orders and CPU index up to the claims; before a group reads them. */
void policy_load_flush(Ctx *c);
static inline bool policy_load_fresh(const Ctx *c) {
        return c->n_dirty_units == 0 && c->n_dirty_cpus == 0;
}
/* One more group anchored on unit u. */
void policy_load_home(Ctx *c, unsigned u);

static inline double policy_cpu_load(const Ctx *c, int cpu) {
        return c->bg[cpu] + c->claim[cpu];
}
static inline int policy_unit_of(const Ctx *c, int cpu) {
        if (cpu < 0 || (unsigned)cpu >= c->t->n_cpus)
                return -1;
        return c->core_level ? c->t->cpus[cpu].core : c->t->cpus[cpu].llc;
}
double policy_unit_free(const Ctx *c, unsigned u);

/*
 * policy_unit_share() - unit u as a group allowed on allowed ranks it: the
 * load and capacity of its allowed CPUs, and whether prev (NULL: none)
 * holds one of them; ret->housekeeping is left false. Return: 0 when it
 * may use none of the unit (ret untouched), 1 part of it, 2 all of it.
 */
int policy_unit_share(const Ctx *c, unsigned u, const CpuSet *allowed, const CpuSet *prev,
                      UnitRank *ret);
/*
 * policy_units_cover() - stamps the units allowed holds whole, when it holds
 * no unit in part. Return: how many, or -1 when it holds one in part.
 */
int policy_units_cover(Ctx *c, const CpuSet *allowed);
/* A ranking in order o of every unit (n_covered < 0) or of the n_covered
 * units policy_units_cover() just stamped; prev: the group's last placement. */
void policy_ranker_init(Ctx *c, Ranker *rk, RankOrder o, const PlanGroup *prev, int n_covered);
void policy_ranker_done(Ctx *c, Ranker *rk);
/* Return: whether the ranking has a k-th unit (rk->r[k], ranked as far as k). */
bool policy_rank_get(const Ctx *c, Ranker *rk, unsigned k);

/*
 * policy_load_pick_least() - what a scan of cand in CPU order for the least
 * loaded CPU that fits() gives (prefer wins ties within 1e-9, else the
 * first), from the CPU index. fits() must grow stricter with the load.
 * Return: the CPU, or -1.
 */
int policy_load_pick_least(const Ctx *c, const CpuSet *cand, double need, double fit, int prefer,
                           bool (*fits)(const Ctx *c, int cpu, double need, double fit));

static inline double policy_headroom(const Ctx *c) {
        return 1.0 - MIN(c->p->llc_headroom_pct, 90u) / 100.0;
}

/* ---- Slices and idle caps (policy-system.c) ---- */

/* Sets c->consolidate and c->housekeeping, before the groups are decided. */
void policy_choose_housekeeping(Ctx *c);
/* The slices' confinement, once the groups are decided. */
void policy_decide_slices(Ctx *c, Plan *plan);
/* The idle exit-latency caps, once the groups are decided. */
void policy_decide_idle(Ctx *c, Plan *plan);

/* ---- Kinds of core (policy-kinds.c) ---- */

/* Where a group is tried, in order, on a machine with kinds of core. */
typedef struct KindScope {
        const CpuSet *cpus[2]; /* the kinds its profile asks for, then the rest it may use */
        unsigned n;       /* how many; 0: it may use only low-power cores the profile keeps out */
        CpuSet want_cpus; /* storage cpus[] may point to, besides the group's allowed */
        CpuSet base_cpus;
        ProfileCores want; /* what the profile asks for it */
        bool busy;         /* its demand passes busy_pct of an efficient core */
        bool latency;      /* latency-critical: performance cores whatever the profile */
        bool no_low_power; /* low-power cores were taken out */
} KindScope;

/* cpus of run time of g, where it ran, in CPUs of capacity 1. */
double policy_group_work(const Ctx *c, const Group *g, double cpus);
/* What g needs, in CPUs of capacity 1: a pair at most one CPU; others what ran and waited. */
double policy_group_demand(const Ctx *c, const Group *g);
/* The CPUs g is tried on, in order (c->p is the profile it is decided by). */
void policy_kind_scopes(const Ctx *c, const Group *g, bool latency, const CpuSet *allowed,
                        KindScope *ret);
/* "performance " and so on before "CPU N"; "" on a machine whose cores are alike. */
const char *policy_cpu_kind_word(const Ctx *c, int cpu);
/* Appends to pg->reason which kinds it went to and why (cpus[used] of ks). */
void policy_kind_reason(const Ctx *c, const KindScope *ks, unsigned used, PlanGroup *pg);

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
