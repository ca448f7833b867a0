/* SPDX-License-Identifier: MIT */
/*
 * The placement policy (see policy.h): turns groups and load into a Plan.
 *
 * Model. CPUs are grouped into "units": LLCs, or cores on a machine with a
 * single LLC, so the same logic spreads over LLCs on a server and over cores
 * on a laptop or a small VM. Each CPU carries a background load (its busy
 * share minus what the placed groups that ran there account for) and a
 * claim (the utilisation of the groups placed on it so far this tick). A
 * group's own load is thus never held against its current CPUs, and groups
 * decided earlier in the tick steer later ones away or together.
 *
 * Order. Pairs first (they are small and gain the most), then meshes, then
 * fan-outs, by id within a class, so the same input always gives the same
 * plan.
 *
 * Kinds of core. On a machine with more than one, a group is tried on the
 * kinds its profile asks for (busy ones on performance cores, light ones
 * on efficient cores under power-first), then on the rest it may use;
 * demand and room are counted in capacity (policy-kinds.c).
 *
 * Cost. Where the load is lives in policy-load.c: each claim refreshes the
 * sums of the units it touches and moves them in the orders units are
 * ranked by, and an index of CPUs by load answers "the least loaded CPU
 * with room". A group reads the front of an order and the index instead of
 * scanning every unit and CPU, so a decision grows with the groups and what
 * they are placed on (issue 25: 40,000 groups on 512 CPUs in about 60 ms),
 * and gives the plans the scans gave.
 *
 * Stability. A decision stands for dwell_ms; after that a group moves only
 * when the new place is less loaded by min_gain_pct of a CPU per CPU (pairs)
 * or per unit (meshes, fan-outs). Feedback overrides the dwell: a managed
 * group whose run-queue delay passed the budget is widened one level on the
 * next tick (pair: CPU -> core -> LLC -> kernel; mesh/fan-out: one more
 * unit per step). Widening is not undone while the group lives: flapping
 * between packed and spread costs more than it saves (intel-lpmd's lesson).
 * A pair already packed stays packed regardless of its utilisation, which
 * saturates one CPU precisely because it is packed; only the run-queue
 * delay can widen it.
 *
 * Outcome. No utilisation figure decides alone: a group placed anew is on
 * trial (trial_step()), kept when its measured progress placed is no worse
 * for the profile than left to the kernel, else handed back with a back-off.
 * So a pair is tried wherever a CPU has room for half its spread run time,
 * unless its two tasks clearly ran at once (a stream), and power-first packs
 * pairs into the consolidated units like everything else. That half is a
 * bet on what packing saves, one per pair: a group placed earlier in the
 * plan counts at its full need, so two pairs share a CPU past its capacity
 * only when no CPU has room for them whole.
 */
#include "policy.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "plan.h"
#include "policy-internal.h"
#include "policy-trial.h"

/* The share of a pair's spread run time a CPU must have free to try it there. */
#define PAIR_FIT_SHARE 0.5

/* A candidate set this small is scanned; a larger one asks the CPU index. */
#define PICK_SCAN_MAX 16

/* The load on s in CPUs of capacity 1: each CPU's busy share times its capacity. */
static double set_load(const Ctx *c, const CpuSet *s) {
        double sum = 0;
        CPUSET_FOREACH (cpu, s)
                if ((unsigned)cpu < c->t->n_cpus)
                        sum += policy_cpu_load(c, cpu) * c->cap[cpu];
        return sum;
}

static void compute_background(Ctx *c) {
        const PolicyInput *in = c->in;
        TOPO_FOREACH_CPU (cpu, c->t)
                if ((unsigned)cpu < c->t->n_cpus)
                        c->bg[cpu] = in->loads && (unsigned)cpu < in->n_loads
                                             ? MAX(0.0, MIN(1.0, in->loads[cpu].busy))
                                             : 0.0;
        for (unsigned i = 0; i < in->n_groups; i++) {
                const Group *g = &in->groups[i];
                CpuSet ran;
                cpuset_and(&ran, &g->ran_on, &c->t->online);
                unsigned n = cpuset_count(&ran);
                if (g->class == GROUP_SOLO || n == 0)
                        continue;
                /* What else keeps its CPUs busy is what is left. */
                double share = g->util / n;
                CPUSET_FOREACH (cpu, &ran)
                        if ((unsigned)cpu < c->t->n_cpus)
                                c->bg[cpu] = MAX(0.0, c->bg[cpu] - share);
        }
}

/* ---- pairs ---- */

/* Whether cpu has room for a pair that needs need of a CPU (try it where fit is free). */
typedef bool (*CpuFits)(const Ctx *c, int cpu, double need, double fit);

/* need and fit are in CPUs of capacity 1; a smaller CPU spends longer on the same work. */
static bool pair_fits(const Ctx *c, int cpu, double need, double fit) {
        double cap = c->cap[cpu];
        if (need > cap + 1e-9)
                return false; /* it would not keep up there */
        return !(policy_cpu_load(c, cpu) + fit / cap > 1.0 + 1e-9);
}

/* Whether a group placed earlier in this plan holds cpu, and need on top overfills it. */
static bool pair_stacks(const Ctx *c, int cpu, double need) {
        return c->claim[cpu] > POLICY_CLAIM_EPS &&
               policy_cpu_load(c, cpu) + need / c->cap[cpu] > 1.0 + 1e-9;
}

/* pair_fits(), and no stack past the CPU's capacity with groups placed before it. */
static bool pair_fits_unstacked(const Ctx *c, int cpu, double need, double fit) {
        return pair_fits(c, cpu, need, fit) && !pair_stacks(c, cpu, need);
}

/* Consolidating: whether need fits cpu within headroom h, or on the CPU alone where need
 * passes h. */
static bool share_fits_within(double load, double share, double h) {
        return !(share > 1.0 + 1e-9) && !(load + share > MAX(h, share) + 1e-9);
}

static bool pair_fits_within(const Ctx *c, int cpu, double need, double h) {
        return share_fits_within(policy_cpu_load(c, cpu), need / c->cap[cpu], h);
}

/* Is cpu the better pick than best (at best_load)? prefer keeps ties. */
static bool pick_better(double l, double best_load, int best, int cpu, int prefer, bool busiest) {
        double better = busiest ? l - best_load : best_load - l;
        return best < 0 || better > 1e-9 || (fabs(l - best_load) <= 1e-9 && cpu == prefer);
}

/* The least (busiest: the most) loaded CPU of cand that fits, scanned in CPU order. */
static int pick_cpu_scan(const Ctx *c, const CpuSet *cand, CpuFits fits, double need, double x,
                         int prefer, bool busiest) {
        int best = -1;
        double best_load = 0;
        CPUSET_FOREACH (cpu, cand) {
                if ((unsigned)cpu >= c->t->n_cpus)
                        break;
                if (!fits(c, cpu, need, x))
                        continue;
                double l = policy_cpu_load(c, cpu);
                if (pick_better(l, best_load, best, cpu, prefer, busiest)) {
                        best = cpu;
                        best_load = l;
                }
        }
        return best;
}

/* The least loaded CPU of cand where the pair fits; prefer keeps ties. */
static int pick_cpu(const Ctx *c, const CpuSet *cand, CpuFits fits, double need, double fit,
                    int prefer) {
        if (c->n_classes > 0 && cpuset_count(cand) > PICK_SCAN_MAX)
                return policy_load_pick_least(c, cand, need, fit, prefer, fits);
        return pick_cpu_scan(c, cand, fits, need, fit, prefer, false);
}

/*
 * Where a pair is tried: the least loaded CPU it ran on with room, else the
 * least loaded allowed one. Groups placed earlier in the plan count at their
 * full need: a CPU one of them holds takes the pair only where both fit
 * whole, and only when no CPU has room that way do they share one past its
 * capacity (the trial judges it). Two pairs the kernel had packed on one CPU
 * (0.69 and 0.43 of it) went back there together while 249 CPUs were idle.
 * Return: the CPU or -1; *ret_room whether it has room for both whole.
 */
static int pick_pair_cpu(const Ctx *c, const Group *g, const CpuSet *allowed, double need,
                         double fit, int prefer, bool *ret_room) {
        CpuSet cand;
        cpuset_and(&cand, &g->ran_on, allowed);
        bool none = cpuset_is_empty(&cand);
        CpuFits checks[2] = { pair_fits_unstacked, pair_fits };
        for (unsigned k = 0; k < 2; k++) {
                int cpu = pick_cpu(c, none ? allowed : &cand, checks[k], need, fit, prefer);
                if (cpu < 0 && !none)
                        cpu = pick_cpu(c, allowed, checks[k], need, fit, prefer);
                if (cpu >= 0) {
                        *ret_room = k == 0;
                        return cpu;
                }
        }
        *ret_room = false;
        return -1;
}

/* The masks a pair widens through, narrowest first. Return: how many. */
static unsigned pair_levels(const Ctx *c, int cpu, const CpuSet *allowed, CpuSet levels[4]) {
        const TopoCpu *tc = &c->t->cpus[cpu];
        CpuSet cand[4];
        cpuset_zero(&cand[0]);
        cpuset_set(&cand[0], cpu);
        if (c->p->pair_placement == PAIR_PLACEMENT_SAME_CORE && tc->core >= 0)
                cand[0] = c->t->cores[tc->core].cpus;
        cand[1] = tc->core >= 0 ? c->t->cores[tc->core].cpus : cand[0];
        cand[2] = tc->llc >= 0 ? c->t->llcs[tc->llc].cpus : cand[1];
        cand[3] = *allowed;
        unsigned n = 0;
        for (unsigned i = 0; i < 4; i++) {
                CpuSet m;
                cpuset_and(&m, &cand[i], allowed);
                if (cpuset_is_empty(&m) || (n > 0 && cpuset_equal(&m, &levels[n - 1])))
                        continue;
                levels[n++] = m;
        }
        return n;
}

/*
 * Power-first at low load: the CPU with the least room left that still holds
 * the pair within [capacity] headroom, in the first unit that has one, units ranked housekeeping
 * first, then busiest (rank_units() in PACK mode), so pairs join the work already consolidated and
 * the other units and packages can sleep. prefer (the CPU it is on) wins when it is in that unit
 * and has room. Return: the CPU or -1.
 */
static int pick_cpu_consolidated(Ctx *c, const CpuSet *allowed, double need, int prefer);

/*
 * A pair is tried on one CPU (or core) and kept when it does better there
 * (see the trial at decide_group()). Spread, its run time includes what
 * packing removes (cross-CPU wakeups, idle exits, cache misses), so it says
 * little about whether it fits one CPU; only run time beyond one CPU's worth
 * is sure to be overlap, both tasks running at once: a stream that one CPU
 * may slow down rather than a hand-off. Such a pair is tried only where its
 * trial counts the bytes it moves (policy_trial_measure()): those tell
 * whether one CPU slowed it (an iperf3 stream packed moved 1.65x on one VM
 * kind and less on another), where its handoffs would not. scope: the CPUs of the kinds it
 * is tried on (policy-kinds.c), within what it may use. Return: false when
 * no CPU of scope has room (pg left to the kernel, saying so).
 */
static bool decide_pair(Ctx *c, const Group *g, const CpuSet *scope, const PlanGroup *prev,
                        PlanGroup *pg) {
        if (c->p->pair_placement == PAIR_PLACEMENT_NONE) {
                plan_group_set_reason(pg, "pair: the profile leaves pairs to the kernel");
                plan_group_leave(pg);
                return true;
        }
        /* Packed already (by placed or by its own mask), its run time cannot
         * show overlap. Where its tasks last ran (ran_on) is no sign of it:
         * two busy tasks that happen to sit on one CPU at the tick still ran
         * 1.5 CPUs' worth over it (measured, redis-benchmark -c 32). */
        bool packed = (prev && prev->managed) || cpuset_count(&g->cpus) == 1;
        double overlap = g->util - 1.0;
        if (!packed && overlap * 100 > c->p->pair_max_overlap_pct &&
            policy_trial_measure(c->p, g) != TRIAL_BY_BYTES) {
                plan_group_set_reason(
                        pg,
                        "pair: its tasks ran at once for %.0f%% of a CPU, more than "
                        "max_overlap_pct=%u (a stream, not hand-offs, and no bytes to judge it "
                        "by); left to the kernel",
                        overlap * 100, c->p->pair_max_overlap_pct);
                plan_group_leave(pg);
                return true;
        }
        int prev_cpu = prev && prev->managed ? cpuset_first(&prev->cpus) : -1;
        /* On one CPU it uses at most that CPU, and how much less than its
         * spread run time is what the trial measures: a CPU has room when
         * the rest of its load leaves half of that free. */
        double need = policy_group_demand(c, g), fit = need * PAIR_FIT_SHARE;
        int cpu = c->consolidate ? pick_cpu_consolidated(c, scope, need, prev_cpu) : -1;
        bool consolidated = cpu >= 0;
        if (!consolidated) {
                bool room;
                cpu = pick_pair_cpu(c, g, scope, need, fit, prev_cpu, &room);
                /* Stay unless the move gains min_gain_pct of a CPU, or the CPU it
                 * is on is stacked past capacity and another has room. */
                if (prev_cpu >= 0 && cpuset_isset(scope, prev_cpu) && cpu != prev_cpu &&
                    (cpu < 0 || (policy_cpu_load(c, prev_cpu) - policy_cpu_load(c, cpu)) * 100 <
                                        c->p->min_gain_pct) &&
                    !(room && pair_stacks(c, prev_cpu, need)))
                        cpu = prev_cpu;
        }
        if (cpu < 0) {
                plan_group_set_reason(pg, "pair: no allowed CPU has room for %.0f%% of a CPU",
                                      fit * 100);
                plan_group_leave(pg);
                return false;
        }
        CpuSet levels[4];
        unsigned n = pair_levels(c, cpu, scope, levels);
        if (pg->widen >= n - 1) {
                plan_group_set_reason(
                        pg, "pair: widened %u times for run-queue delay; left to the kernel",
                        pg->widen);
                plan_group_leave(pg);
                return true;
        }
        pg->managed = true;
        pg->cpus = levels[pg->widen];
        pg->home = policy_unit_of(c, cpu);
        plan_group_set_reason(
                pg, "pair (%.0f%% of a CPU) %s %sCPU %d, %s%s", g->util * 100,
                cpuset_count(&pg->cpus) == 1 ? "on" : "around", policy_cpu_kind_word(c, cpu), cpu,
                consolidated ? "with the consolidated work" : "the least busy where it ran",
                pg->widen ? ", widened for run-queue delay" : "");
        return true;
}

/* ---- meshes and fan-outs ---- */

static int rank_cmp(const void *x, const void *y, void *userdata) {
        const UnitRank *a = x, *b = y;
        SpreadPlacement rank_mode = *(const SpreadPlacement *)userdata;
        if (rank_mode == SPREAD_PLACEMENT_PACK) {
                /* Fill housekeeping and busy units first so the rest sleep. */
                if (a->housekeeping != b->housekeeping)
                        return a->housekeeping ? -1 : 1;
                if (fabs(a->load - b->load) > 1e-9)
                        return a->load > b->load ? -1 : 1;
        } else {
                if (rank_mode == SPREAD_PLACEMENT_HOME && a->homes != b->homes)
                        return a->homes < b->homes ? -1 : 1;
                double fa = a->cap - a->load, fb = b->cap - b->load;
                if (fabs(fa - fb) > 1e-9)
                        return fa > fb ? -1 : 1;
        }
        if (a->prev != b->prev)
                return a->prev ? -1 : 1;
        return a->unit < b->unit ? -1 : a->unit > b->unit;
}

/*
 * Ranks the units with allowed CPUs into rk. A group that may use every
 * online CPU, or whole units only, reads the order policy-load.c keeps for
 * mode; one its cpuset gives part of a unit has its share of each unit
 * summed and sorted here. Return: whether it may use each unit it ranks
 * whole.
 */
static bool rank_units(Ctx *c, const CpuSet *allowed, const PlanGroup *prev, SpreadPlacement mode,
                       Ranker *rk) {
        RankOrder o = mode == SPREAD_PLACEMENT_PACK
                              ? (c->consolidate ? RANK_ORDER_PACK_HK : RANK_ORDER_PACK)
                      : mode == SPREAD_PLACEMENT_HOME ? RANK_ORDER_HOME
                                                      : RANK_ORDER_SPREAD;
        if (cpuset_is_subset(&c->t->online, allowed)) {
                policy_ranker_init(c, rk, o, prev, -1);
                return true;
        }
        int n_covered = policy_units_cover(c, allowed);
        if (n_covered >= 0) {
                policy_ranker_init(c, rk, o, prev, n_covered);
                return true;
        }

        UnitRank *r = c->ranks;
        unsigned n = 0;
        for (unsigned u = 0; u < c->n_units; u++)
                if (policy_unit_share(c, u, allowed, prev && prev->managed ? &prev->cpus : NULL,
                                      &r[n]) > 0) {
                        r[n].housekeeping = c->consolidate && c->unit_hk[u];
                        n++;
                }
        qsort_r(r, n, sizeof(UnitRank), rank_cmp, &mode);
        *rk = (Ranker){ .order = o, .r = r, .n = n, .next = c->n_units, .total = n };
        return false;
}

/* The busiest CPU of unit u (its share in allowed) where need fits within cap. */
static int pick_in_unit(const Ctx *c, unsigned u, const CpuSet *allowed, bool whole, double need,
                        double h, int prefer) {
        if (whole && c->unit_min_cap[u] == c->unit_max_cap[u] &&
            !share_fits_within(c->unit_min_load[u], need / c->unit_max_cap[u], h))
                return -1; /* not even its least loaded CPU */
        int best = -1;
        double best_load = 0;
        for (unsigned k = c->unit_first[u]; k < c->unit_first[u + 1]; k++) {
                int cpu = c->unit_cpus[k];
                if ((!whole && !cpuset_isset(allowed, cpu)) || !pair_fits_within(c, cpu, need, h))
                        continue;
                double l = policy_cpu_load(c, cpu);
                if (pick_better(l, best_load, best, cpu, prefer, true)) {
                        best = cpu;
                        best_load = l;
                }
        }
        return best;
}

static int pick_cpu_consolidated(Ctx *c, const CpuSet *allowed, double need, int prefer) {
        Ranker rk;
        bool whole = rank_units(c, allowed, NULL, SPREAD_PLACEMENT_PACK, &rk);
        /* A pair that fills a CPU alone still gets one; smaller ones share with headroom. */
        double h = policy_headroom(c);
        for (unsigned k = 0; policy_rank_get(c, &rk, k); k++) {
                unsigned u = rk.r[k].unit;
                int best = pick_in_unit(c, u, allowed, whole, need, h, prefer);
                if (best >= 0) {
                        bool stay = prefer >= 0 && policy_unit_of(c, prefer) == (int)u &&
                                    cpuset_isset(allowed, prefer) &&
                                    pair_fits_within(c, prefer, need, h);
                        return stay ? prefer : best;
                }
        }
        return -1;
}

static double unit_room(const Ctx *c, const UnitRank *u, bool pack) {
        return pack ? u->cap * policy_headroom(c) - u->load : u->cap - u->load;
}

static int room_cmp(const void *x, const void *y, void *userdata) {
        const UnitRank *a = x, *b = y;
        const Ctx *c = ASSERT_PTR(userdata);
        double ra = unit_room(c, a, true), rb = unit_room(c, b, true);
        if (fabs(ra - rb) > 1e-9)
                return ra > rb ? -1 : 1;
        return a->unit < b->unit ? -1 : a->unit > b->unit;
}

/*
 * PACK wants the fewest units: the first unit in rank order (the busiest, so
 * the rest sleep) that holds the group alone; failing that, the roomiest
 * units first, so the group spans as few as it can. Reorders rk's units.
 */
static void pack_order(const Ctx *c, Ranker *rk, double need) {
        UnitRank *r = rk->r;
        for (unsigned k = 0; policy_rank_get(c, rk, k); k++)
                if (unit_room(c, &r[k], true) + 1e-9 >= need) {
                        UnitRank fit = r[k];
                        memmove(&r[1], &r[0], k * sizeof(*r));
                        r[0] = fit;
                        return;
                }
        qsort_r(r, rk->n, sizeof(*r), room_cmp, (void *)c);
}

/*
 * Takes ranked units until they hold need CPUs' worth with headroom (PACK)
 * or need idle CPUs (otherwise), plus extra units. Return: units taken, or
 * 0 when even all of them do not hold it.
 */
static unsigned take_units(const Ctx *c, Ranker *rk, double need, unsigned extra, bool pack,
                           CpuSet *ret) {
        double room = 0;
        unsigned k = 0;
        cpuset_zero(ret);
        /* Not even all units' free capacity holds it (an upper bound of what either
         * way of taking them finds, with room for its rounding): no need to rank them. */
        if (rk->whole && c->free_total + 1e-6 < need)
                return 0;
        if (pack)
                pack_order(c, rk, need);
        while (policy_rank_get(c, rk, k) && room + 1e-9 < need) {
                double free_cpus = unit_room(c, &rk->r[k], pack);
                if (pack && free_cpus <= 1e-9 && policy_rank_get(c, rk, k + 1)) {
                        k++; /* full: skip, but keep it last in line */
                        continue;
                }
                room += MAX(0.0, free_cpus);
                cpuset_or(ret, ret, &c->units[rk->r[k].unit].cpus);
                k++;
        }
        if (room + 1e-9 < need)
                return 0;
        for (unsigned i = 0; extra > 0 && policy_rank_get(c, rk, i); i++)
                if (!cpuset_is_subset(&c->units[rk->r[i].unit].cpus, ret)) {
                        cpuset_or(ret, ret, &c->units[rk->r[i].unit].cpus);
                        extra--;
                }
        return extra > 0 ? 0 : cpuset_count(ret);
}

/*
 * A pack-with set that no units have room for: its owner asked for it
 * packed, so it goes on the roomiest units whose capacity holds need, plus
 * extra units (the run-queue budget widens it, as any placement, if its
 * tasks then wait). Return: units taken, or 0 when all of them do not hold it.
 */
static unsigned take_roomiest(const Ctx *c, Ranker *rk, double need, unsigned extra, CpuSet *ret) {
        double cap = 0;
        cpuset_zero(ret);
        pack_order(c, rk, need); /* none fits: roomiest first */
        for (unsigned k = 0; policy_rank_get(c, rk, k) && (cap + 1e-9 < need || extra > 0); k++) {
                if (cap + 1e-9 >= need)
                        extra--;
                cap += rk->r[k].cap;
                cpuset_or(ret, ret, &c->units[rk->r[k].unit].cpus);
        }
        return cap + 1e-9 < need || extra > 0 ? 0 : cpuset_count(ret);
}

/*
 * mode: how to lay the group over units (the profile's for its class, or
 * PACK for a pack-with set); scope: the CPUs of the kinds it is tried on,
 * within allowed, all it may use. Return: false when the units of scope do
 * not hold it (pg left to the kernel, saying so).
 */
static bool decide_spread(Ctx *c, const Group *g, const CpuSet *scope, const CpuSet *allowed,
                          const PlanGroup *prev, SpreadPlacement mode, PlanGroup *pg) {
        const char *cls = group_class_to_string(g->class);
        if (mode == SPREAD_PLACEMENT_NONE) {
                plan_group_set_reason(pg, "%s: the profile leaves it to the kernel", cls);
                plan_group_leave(pg);
                return true;
        }
        bool pack = mode == SPREAD_PLACEMENT_PACK;
        /* Demand is what ran plus what waited to run (Little's law): forty
         * hackbench tasks on two CPUs show 0.8 CPUs of run time in a tick
         * of their ramp, and a run queue that says they want more. */
        double demand = g->util + g->runq_wait;
        double need = MAX(policy_group_demand(c, g), 0.5) / (pack ? 1.0 : policy_headroom(c));
        if (g->class == GROUP_FANOUT && !pack) {
                unsigned workers = g->n_tasks > 0 ? g->n_tasks - 1 : 0;
                unsigned unit_size = c->n_units ? cpuset_count(&c->units[0].cpus) : 1;
                unsigned limit = c->p->fanout_min_workers ? c->p->fanout_min_workers : unit_size;
                if (workers > limit) /* an idle CPU for each busy worker and the master */
                        need = MAX(need, MIN((double)workers, ceil(demand)) + 1);
        }

        Ranker rk;
        rank_units(c, scope, prev, mode, &rk);
        CpuSet mask;
        bool ok = take_units(c, &rk, need, pg->widen, pack, &mask) > 0;
        bool full = !ok && pack && c->joint_deciding;
        if (full)
                ok = take_roomiest(c, &rk, need, pg->widen, &mask) > 0;
        int home = ok && rk.n > 0 ? (int)rk.r[0].unit : -1;
        policy_ranker_done(c, &rk);
        cpuset_and(&mask, &mask, scope);

        /* Stay on the previous units unless the new ones are less loaded by min_gain_pct. */
        if (ok && prev && prev->managed && cpuset_is_subset(&prev->cpus, scope) &&
            !cpuset_equal(&mask, &prev->cpus) && cpuset_count(&mask) == cpuset_count(&prev->cpus)) {
                double gain =
                        (set_load(c, &prev->cpus) - set_load(c, &mask)) / cpuset_count(&mask) * 100;
                if (pack ? -gain < c->p->min_gain_pct : gain < c->p->min_gain_pct)
                        mask = prev->cpus;
        }
        if (!ok || cpuset_equal(&mask, allowed)) {
                plan_group_set_reason(
                        pg,
                        "%s: %.1f CPUs' worth (%.1f ran, %.1f waited) needs every allowed CPU; "
                        "left to the kernel",
                        cls, demand, g->util, g->runq_wait);
                plan_group_leave(pg);
                return ok;
        }
        pg->managed = true;
        pg->cpus = mask;
        pg->home = policy_unit_of(c, cpuset_first(&mask));
        if (home >= 0)
                policy_load_home(c, (unsigned)home);
        plan_group_set_reason(pg, "%s of %u tasks (%.1f CPUs) %s on %u %s%s%s%s", cls, g->n_tasks,
                              g->util, pack ? "packed" : "homed", cpuset_count(&mask),
                              c->core_level ? "CPUs of the cores" : "CPUs of the LLCs",
                              " with most room", pg->widen ? ", widened for run-queue delay" : "",
                              full ? ", though none had room for it: its rule asks it packed" : "");
        return true;
}

/* ---- per group ---- */

/*
 * The group's previous entry, when it was decided under the same rule, whatever
 * its class: its trial's memory (a back-off outlives a tick as solo). was: the
 * group's entry in the previous plan, or NULL.
 */
static const PlanGroup *find_memory(const PlanGroup *was, const GroupRule *gr) {
        if (!was)
                return NULL;
        if (gr ? was->rule_action != gr->action || strcmp(was->rule, gr->rule) != 0
               : was->rule_action != RULE_ACTION_NONE)
                return NULL; /* a rule came, went or changed: decided afresh */
        return was;
}

/* The previous decision, when it was for the same class under the same rule. */
static const PlanGroup *find_prev(const PlanGroup *memory, const Group *g) {
        return memory && memory->class == g->class ? memory : NULL;
}

/*
 * Decides g (a pair, or a group laid over units by mode) on the kinds of
 * core its profile asks for (ks, policy-kinds.c), and on the rest it may
 * use where those have no room.
 */
static void decide_on_kinds(Ctx *c, const Group *g, const KindScope *ks, const CpuSet *allowed,
                            const PlanGroup *prev, SpreadPlacement mode, PlanGroup *pg) {
        const char *cls = group_class_to_string(g->class);
        policy_load_flush(c); /* the claims of the groups before it */
        if (ks->n == 0) {
                plan_group_set_reason(pg,
                                      "%s: its cpuset holds only low-power cores, which %s does "
                                      "not use; left to the kernel",
                                      cls, c->p->name);
                return plan_group_leave(pg);
        }
        unsigned k = 0;
        for (; k < ks->n; k++) {
                bool decided = g->class == GROUP_PAIR
                                       ? decide_pair(c, g, ks->cpus[k], prev, pg)
                                       : decide_spread(c, g, ks->cpus[k], allowed, prev, mode, pg);
                if (decided)
                        break;
        }
        policy_kind_reason(c, ks, MIN(k, ks->n - 1), pg);
}

/*
 * A group of a pack-with set: the first member decided this tick places
 * the whole set (joint: the set as one group, packed); the others follow
 * it. Return: true when pg was decided here.
 */
static bool decide_joint(Ctx *c, unsigned i, const Group *joint, const KindScope *ks,
                         const CpuSet *allowed, const PlanGroup *prev, PlanGroup *pg) {
        if (c->joint[i] < 0)
                return false;
        const PlanGroup *first = c->joint_placed[c->joint[i]];
        if (first) {
                pg->managed = first->managed && cpuset_is_subset(&first->cpus, allowed);
                pg->cpus = pg->managed ? first->cpus : pg->cpus;
                pg->home = pg->managed ? first->home : -1;
                if (pg->managed)
                        plan_group_set_reason(pg, "packed with group %" PRIu64 " on its CPUs",
                                              first->id);
                else
                        plan_group_set_reason(pg,
                                              "group %" PRIu64 " of its set is left to the "
                                              "kernel, or its CPUs are not allowed here; left "
                                              "to the kernel",
                                              first->id);
                if (!pg->managed) {
                        plan_group_leave(pg);
                        /* left while its set waits to be measured: decided
                         * again next tick, whichever member comes first then */
                        pg->waiting = first->waiting;
                }
                return true;
        }
        if (joint->unmeasured) {
                plan_group_set_reason(
                        pg, "pack-with: utilisation not measured yet; left to the kernel");
                plan_group_leave(pg);
                pg->waiting = true;
        } else {
                c->joint_deciding = true;
                decide_on_kinds(c, joint, ks, allowed, prev, SPREAD_PLACEMENT_PACK, pg);
                c->joint_deciding = false;
        }
        c->joint_placed[c->joint[i]] = pg;
        return true;
}

static bool prev_still_valid(const PlanGroup *prev, const CpuSet *allowed) {
        return !prev->managed ||
               (!cpuset_is_empty(&prev->cpus) && cpuset_is_subset(&prev->cpus, allowed));
}

/* When the policy first saw a group: its entry in the previous plan says, else now. */
static uint64_t group_seen_ns(const Ctx *c, const PlanGroup *was) {
        if (was && was->seen_ns > 0)
                return was->seen_ns;
        if (was && was->since_ns > 0) /* a plan written before seen_ns: seen by then */
                return was->since_ns;
        return c->in->now_ns;
}

static void group_allowed(const Ctx *c, unsigned i, CpuSet *ret) {
        const CpuSet *limit = c->in->group_limits ? &c->in->group_limits[i] : NULL;
        cpuset_and(ret, &c->t->online, limit ? limit : &c->t->online);
}

/*
 * A quick tick's group out of focus (policy.h, "Quick ticks"): *ret_was is
 * its previous entry, kept verbatim, or NULL when it has none. Return:
 * false when it is decided as on every tick (in focus, no focus given, or
 * its previous CPUs are no longer all allowed).
 */
static bool out_of_focus(const Ctx *c, unsigned i, const PlanGroup **ret_was) {
        const PolicyInput *in = c->in;
        if (!in->focus || in->focus[i])
                return false;
        const PlanGroup *was = in->prev ? plan_find_group(in->prev, in->groups[i].id) : NULL;
        if (was && was->managed) {
                CpuSet allowed;
                group_allowed(c, i, &allowed);
                if (cpuset_is_empty(&was->cpus) || !cpuset_is_subset(&was->cpus, &allowed))
                        return false;
        }
        *ret_was = was;
        return true;
}

/* Keeps a group out of focus as the previous plan had it, its claims counted. */
static void keep_out_of_focus(Ctx *c, unsigned i, const PlanGroup *was, PlanGroup *pg) {
        const Group *g = &c->in->groups[i];
        if (!was) {
                const GroupRule *gr = policy_group_rule(c, i);
                *pg = (PlanGroup){ .id = g->id,
                                   .class = g->class,
                                   .since_ns = c->in->now_ns,
                                   .seen_ns = c->in->now_ns,
                                   .waiting = true };
                plan_group_set_reason(pg,
                                      "%s: new since the last full decision; left to the "
                                      "kernel until the next",
                                      group_class_to_string(g->class));
                plan_group_leave(pg);
                if (gr) {
                        pg->rule_action = gr->action;
                        snprintf(pg->rule, sizeof(pg->rule), "%s", gr->rule);
                        policy_rule_reason(pg, gr);
                }
                return;
        }
        *pg = *was;
        if (!pg->managed)
                return;
        policy_load_claim(c, &pg->cpus, policy_group_work(c, g, g->util));
        if (c->joint[i] >= 0 && !c->joint_placed[c->joint[i]])
                c->joint_placed[c->joint[i]] = pg; /* its set follows it, as a kept one */
}

/*
 * Whether a pair wakes too seldom to be worth placing ([pair]
 * min_wakeups_per_sec): one placed already only under half of it, so a rate
 * near it does not hand it back and forth. A wake rate of 0 is unknown (a
 * snapshot without it), not light.
 */
static bool pair_too_light(const Profile *p, const Group *g, const PlanGroup *prev) {
        double min = p->pair_min_wake_rate;
        if (prev && prev->managed)
                min /= 2;
        return g->wake_rate > 0 && g->wake_rate < min;
}

static void decide_group(Ctx *c, unsigned i, PlanGroup *pg) {
        const Group *g = &c->in->groups[i];
        const GroupRule *gr = policy_group_rule(c, i);
        RuleAction action = gr ? gr->action : RULE_ACTION_NONE;
        const PlanGroup *was = c->in->prev ? plan_find_group(c->in->prev, g->id) : NULL;
        const PlanGroup *memory = find_memory(was, gr);
        const PlanGroup *prev = find_prev(memory, g);
        uint64_t seen_ns = group_seen_ns(c, was);
        CpuSet allowed;
        group_allowed(c, i, &allowed);

        *pg = (PlanGroup){ .id = g->id,
                           .class = g->class,
                           .home = -1,
                           .since_ns = c->in->now_ns,
                           .seen_ns = seen_ns };
        if (gr) {
                pg->rule_action = gr->action;
                snprintf(pg->rule, sizeof(pg->rule), "%s", gr->rule);
        }
        if (action == RULE_ACTION_IGNORE || action == RULE_ACTION_NEVER_PACK) {
                plan_group_set_reason(pg, "%s",
                                      action == RULE_ACTION_IGNORE
                                              ? "left alone"
                                              : "never packed; left to the kernel");
                plan_group_leave(pg);
                if (prev) /* unchanged: the dwell keeps running */
                        pg->since_ns = prev->since_ns;
                policy_rule_reason(pg, gr);
                return;
        }
        /* A latency-critical group, or a set with one, is decided as
         * latency-first decides, whatever the profile. */
        bool latency = action == RULE_ACTION_LATENCY_CRITICAL;
        if (c->joint[i] >= 0)
                latency = latency || c->joint_latency[c->joint[i]];
        bool consolidate = c->consolidate;
        if (latency) {
                c->p = &c->latency;
                c->consolidate = false;
        }
        const Profile *p = c->p;
        /* The group as it is decided (the first member decided of a pack-with
         * set places the set), and the kinds of core it goes to. */
        Group joint;
        const Group *dg = g;
        if (c->joint[i] >= 0 && !c->joint_placed[c->joint[i]]) {
                policy_joint_group(c, i, &joint);
                dg = &joint;
        }
        KindScope ks;
        policy_kind_scopes(c, dg, latency, &allowed, &ks);
        bool over_budget =
                p->runq_delay_budget_us > 0 && g->runq_delay_us > p->runq_delay_budget_us;
        /* A placement on trial is judged by its verdict, delay included, and
         * so is a kept one that drifted: its re-check measures what widening
         * would guess. */
        bool widen = prev && prev->managed && over_budget && prev->trial.verdict != TRIAL_RUNNING &&
                     !policy_trial_drifted(p, &prev->trial, g);
        pg->widen = prev ? prev->widen + (widen ? 1 : 0) : 0;

        /* The previous decision stands for dwell_ms, and while a new member
         * keeps the group unmeasured; a pack-with set follows its first member.
         * Only what placed did stands: a group it never placed was left on a
         * glimpse (a new pair's first decision comes at a quick tick, from a
         * window of a few milliseconds), and leaving it moved nothing. */
        bool keep = prev && !prev->waiting && !widen && ks.n > 0 &&
                    (prev->managed || policy_trial_placed_before(&prev->trial)) &&
                    prev_still_valid(prev, ks.cpus[0]) &&
                    (g->unmeasured ||
                     c->in->now_ns < prev->since_ns + (uint64_t)p->dwell_ms * 1000000ULL) &&
                    (c->joint[i] < 0 || !c->joint_placed[c->joint[i]]);
        bool in_set = false;
        if (keep) {
                *pg = *prev;
                pg->seen_ns = seen_ns;
                if (c->joint[i] >= 0)
                        c->joint_placed[c->joint[i]] = pg;
        } else if ((in_set = decide_joint(c, i, dg, &ks, &allowed, prev, pg))) {
                ; /* decided with its set */
        } else if (g->class == GROUP_SOLO) {
                plan_group_set_reason(pg, "solo: no strong wake relation; left to the kernel");
                plan_group_leave(pg);
        } else if (g->unmeasured) {
                /* Zero run time is not "light": a hackbench mesh looks idle
                 * until its first full tick is measured. */
                plan_group_set_reason(pg, "%s: utilisation not measured yet; left to the kernel",
                                      group_class_to_string(g->class));
                plan_group_leave(pg);
                pg->waiting = true;
        } else if (g->class == GROUP_PAIR && action == RULE_ACTION_NONE &&
                   pair_too_light(p, g, prev)) {
                plan_group_set_reason(pg,
                                      "pair: %.0f wakeups/s, under min_wakeups_per_sec=%u "
                                      "(packing would save it less than placing it costs); "
                                      "left to the kernel",
                                      g->wake_rate, p->pair_min_wake_rate);
                plan_group_leave(pg);
        } else if (cpuset_is_empty(&allowed)) {
                plan_group_set_reason(pg, "%s: no online CPU in its cpuset",
                                      group_class_to_string(g->class));
                plan_group_leave(pg);
        } else {
                decide_on_kinds(c, g, &ks, &allowed, prev,
                                g->class == GROUP_MESH ? p->mesh_placement : p->fanout_placement,
                                pg);
        }
        /* The owner asked for a pack-with: it is not put on trial. A solo group
         * is never placed, and keeps what its trials found while it is one. */
        if (c->joint[i] < 0)
                policy_trial_step(c->p, g, memory, prev, c->in->now_ns, c->in->advise, pg);

        if (prev && !prev->waiting && !pg->waiting && prev->managed == pg->managed &&
            (!pg->managed || cpuset_equal(&prev->cpus, &pg->cpus)) && !widen) {
                pg->since_ns = prev->since_ns; /* unchanged: the dwell keeps running */
                if (pg->managed && !in_set)    /* why it went there; a "left alone" says why now */
                        memcpy(pg->reason, prev->reason, sizeof(pg->reason));
        }
        if (pg->managed)
                policy_load_claim(c, &pg->cpus, policy_group_work(c, g, g->util));
        if (gr)
                policy_rule_reason(pg, gr);
        c->p = c->profile;
        c->consolidate = consolidate;
}

static int class_rank(GroupClass k) {
        assert((unsigned)k < _GROUP_CLASS_MAX); /* the model's, or checked by the snapshot reader */
        return k == GROUP_PAIR ? 0 : k == GROUP_MESH ? 1 : k == GROUP_FANOUT ? 2 : 3;
}

static int order_cmp(const void *x, const void *y, void *userdata) {
        const Group *groups = ASSERT_PTR(userdata);
        const Group *a = &groups[*(const unsigned *)x];
        const Group *b = &groups[*(const unsigned *)y];
        if (class_rank(a->class) != class_rank(b->class))
                return class_rank(a->class) - class_rank(b->class);
        return a->id < b->id ? -1 : a->id > b->id;
}

/* ---- entry points ---- */

static void ctx_done(Ctx *c) {
        policy_rules_done(c);
        policy_load_done(c);
        free(c->bg);
        free(c->claim);
        free(c->homes);
        free(c->ranks);
        free(c->order);
}

/*
 * Everything a decision works in, allocated before it starts, sized by the
 * input (CPUs, units, groups): deciding allocates nothing, so a plan never
 * depends on the allocator. Return: 0, or -ENOMEM (ctx_done() frees what
 * was allocated).
 */
static int ctx_init(Ctx *c, const PolicyInput *in) {
        const Topology *t = in->topo;

        *c = (Ctx){ .in = in, .t = t, .p = in->profile, .profile = in->profile };
        c->core_level = t->n_llcs <= 1;
        c->units = c->core_level ? t->cores : t->llcs;
        c->n_units = c->core_level ? t->n_cores : t->n_llcs;
        c->bg = calloc(MAX(t->n_cpus, 1u), sizeof(double));
        if (!c->bg)
                return -ENOMEM;
        c->claim = calloc(MAX(t->n_cpus, 1u), sizeof(double));
        if (!c->claim)
                return -ENOMEM;
        c->homes = calloc(MAX(c->n_units, 1u), sizeof(unsigned));
        if (!c->homes)
                return -ENOMEM;
        c->ranks = calloc(MAX(c->n_units, 1u), sizeof(UnitRank));
        if (!c->ranks)
                return -ENOMEM;
        c->order = calloc(MAX(in->n_groups, 1u), sizeof(unsigned));
        if (!c->order)
                return -ENOMEM;
        int r = policy_load_init(c);
        if (r < 0)
                return r;
        return policy_rules_init(c);
}

int policy_decide(const PolicyInput *in, Plan **ret) {
        assert(in);
        assert(ret);
        if (!in->topo || !in->profile || (in->n_groups && !in->groups))
                return -EINVAL;
        Ctx c;
        Plan *plan = NULL;
        int r = ctx_init(&c, in);
        if (r >= 0)
                r = plan_new(in->n_groups, in->topo->n_cpus, &plan);
        if (r < 0) {
                ctx_done(&c);
                return r;
        }
        plan->now_ns = in->now_ns;
        snprintf(plan->profile, sizeof(plan->profile), "%s", in->profile->name);

        compute_background(&c);
        policy_choose_housekeeping(&c);
        policy_load_build(&c);
        for (unsigned i = 0; i < in->n_groups; i++)
                c.order[i] = i;
        qsort_r(c.order, in->n_groups, sizeof(unsigned), order_cmp, (void *)in->groups);
        for (unsigned k = 0; k < in->n_groups; k++) {
                const PlanGroup *was;
                PlanGroup *pg = &plan->groups[plan->n_groups++];
                if (out_of_focus(&c, c.order[k], &was))
                        keep_out_of_focus(&c, c.order[k], was, pg);
                else
                        decide_group(&c, c.order[k], pg);
        }
        qsort(plan->groups, plan->n_groups, sizeof(PlanGroup), plan_group_cmp);
        policy_decide_slices(&c, plan);
        policy_decide_idle(&c, plan);
        ctx_done(&c);
        *ret = plan;
        return 0;
}
