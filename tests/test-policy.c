/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/policy.c, table-driven on fixture topologies (the 2-CPU VM,
 * the 2-socket EPYC with 16 LLCs, the Intel hybrid laptop) and every
 * built-in profile: pairs, 40-task meshes, a master with 64 workers, a mix
 * and an overload, each checked against the invariants (masks non-empty and
 * inside online and the cpuset, power-first LLCs within headroom, the same
 * input gives the same plan, an unchanged input the next tick changes
 * nothing), plus targeted tests of hysteresis, feedback, consolidation,
 * idle caps and the JSON round trip.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "macro.h"
#include "policy.h"
#include "policy-trial.h"
#include "topology.h"

#define SEC_NS     1000000000ULL
#define MAX_GROUPS 256

static Topology *load_topo(const char *name) {
        const char *src = getenv("PLACED_SRC");
        char root[512];
        snprintf(root, sizeof(root), "%s/tests/fixtures/%s", src ? src : ".", name);
        Topology *t = NULL;
        assert_int_equal(topo_load(root, &t), 0);
        return t;
}

static Profile profile(const char *name) {
        Profile p;
        assert_int_equal(profile_defaults(name, &p), 0);
        return p;
}

static CpuSet set_of(const char *text) {
        CpuSet s;
        assert_int_equal(cpuset_parse(text, &s), 0);
        return s;
}

/* A scenario: groups + loads on one topology. */
typedef struct Scenario {
        Topology *t;
        Group groups[MAX_GROUPS];
        TaskId tasks[MAX_GROUPS][2]; /* group task arrays point here (only n_tasks counts) */
        unsigned n_groups;
        CpuLoad *loads;
        const CpuSet *limits; /* parallel to groups, or NULL */
        uint64_t next_id;
} Scenario;

static void scenario_init(Scenario *s, const char *topo, double busy) {
        memset(s, 0, sizeof(*s));
        s->t = load_topo(topo);
        s->loads = calloc(s->t->n_cpus, sizeof(CpuLoad));
        assert_non_null(s->loads);
        for (unsigned c = 0; c < s->t->n_cpus; c++)
                s->loads[c].busy = busy;
        s->next_id = 100;
}

static void scenario_done(Scenario *s) {
        topo_free(s->t);
        free(s->loads);
}

/* Adds a group that ran on ran_on (NULL = online) and accounts its load there. */
static Group *add_group(Scenario *s, GroupClass k, unsigned n_tasks, double util,
                        const CpuSet *ran_on) {
        assert_true(s->n_groups < MAX_GROUPS);
        Group *g = &s->groups[s->n_groups];
        *g = (Group){ .id = s->next_id++,
                      .class = k,
                      .tasks = s->tasks[s->n_groups],
                      .n_tasks = n_tasks,
                      .util = util,
                      .cpus = s->t->online,
                      .ran_on = ran_on ? *ran_on : s->t->online };
        s->n_groups++;
        unsigned n = cpuset_count(&g->ran_on);
        CPUSET_FOREACH (c, &g->ran_on)
                s->loads[c].busy = MIN(1.0, s->loads[c].busy + util / n);
        return g;
}

static PolicyInput input(Scenario *s, const Profile *p, const Plan *prev, uint64_t now) {
        return (PolicyInput){ .topo = s->t,
                              .groups = s->groups,
                              .n_groups = s->n_groups,
                              .loads = s->loads,
                              .n_loads = s->t->n_cpus,
                              .profile = p,
                              .prev = prev,
                              .now_ns = now,
                              .group_limits = s->limits };
}

static Plan *decide(Scenario *s, const Profile *p, const Plan *prev, uint64_t now) {
        PolicyInput in = input(s, p, prev, now);
        Plan *plan = NULL;
        assert_int_equal(policy_decide(&in, &plan), 0);
        assert_non_null(plan);
        return plan;
}

static const PlanGroup *pg_of(const Plan *p, const Group *g) {
        const PlanGroup *pg = plan_find_group(p, g->id);
        assert_non_null(pg);
        return pg;
}

/* LLC (or core on one-LLC machines) count a mask touches. */
static unsigned units_touched(const Topology *t, const CpuSet *m) {
        const TopoDomain *u = t->n_llcs > 1 ? t->llcs : t->cores;
        unsigned n = t->n_llcs > 1 ? t->n_llcs : t->n_cores, k = 0;
        for (unsigned i = 0; i < n; i++)
                k += cpuset_intersects(&u[i].cpus, m);
        return k;
}

static void check_invariants(Scenario *s, const Profile *p, const CpuSet *limits) {
        Plan *a = decide(s, p, NULL, SEC_NS), *b = decide(s, p, NULL, SEC_NS);
        assert_true(plan_equal(a, b)); /* deterministic */
        assert_int_equal(a->n_groups, s->n_groups);
        for (unsigned i = 0; i < s->n_groups; i++) {
                const PlanGroup *pg = pg_of(a, &s->groups[i]);
                if (!pg->managed)
                        continue;
                assert_false(cpuset_is_empty(&pg->cpus));
                assert_true(cpuset_is_subset(&pg->cpus, &s->t->online));
                if (limits)
                        assert_true(cpuset_is_subset(&pg->cpus, &limits[i]));
                assert_true(s->groups[i].class != GROUP_SOLO);
        }
        for (int sl = 0; sl < _PLAN_SLICE_MAX; sl++)
                assert_true(cpuset_is_subset(&a->slice_cpus[sl], &s->t->online));

        /* Power-first: each LLC used by packed groups stays within its headroom,
         * as long as the machine is not overloaded. */
        double total = 0;
        for (unsigned i = 0; i < s->n_groups; i++)
                total += s->groups[i].util;
        if (p->mesh_placement == SPREAD_PLACEMENT_PACK &&
            total < cpuset_count(&s->t->online) * (1 - p->llc_headroom_pct / 100.0)) {
                for (unsigned l = 0; l < s->t->n_llcs; l++) {
                        double load = 0;
                        for (unsigned i = 0; i < s->n_groups; i++) {
                                const PlanGroup *pg = pg_of(a, &s->groups[i]);
                                if (!pg->managed || s->groups[i].class == GROUP_PAIR)
                                        continue;
                                CpuSet in;
                                cpuset_and(&in, &pg->cpus, &s->t->llcs[l].cpus);
                                load += s->groups[i].util * cpuset_count(&in) /
                                        cpuset_count(&pg->cpus);
                        }
                        double cap = cpuset_count(&s->t->llcs[l].cpus) *
                                     (1 - p->llc_headroom_pct / 100.0);
                        assert_true(load <= cap + 1e-6);
                }
        }

        /* Stable: the next ticks with the same input change nothing. */
        Plan *c = decide(s, p, a, 2 * SEC_NS);
        assert_true(plan_equal(a, c));
        Plan *d = decide(s, p, c, 60 * SEC_NS); /* past every dwell */
        assert_true(plan_equal(a, d));
        for (unsigned i = 0; i < d->n_groups; i++)
                assert_int_equal(d->groups[i].since_ns, a->groups[i].since_ns);
        plan_free(a);
        plan_free(b);
        plan_free(c);
        plan_free(d);
}

/* ---- scenario tables ---- */

typedef enum Kind { N_PAIRS, MESHES, FANOUT64, MIX, OVERLOAD } Kind;

static void build(Scenario *s, Kind kind) {
        unsigned n = cpuset_count(&s->t->online);
        int first = cpuset_first(&s->t->online);
        switch (kind) {
        case N_PAIRS:
                for (unsigned i = 0; i < MAX(n / 2, 1u); i++) {
                        CpuSet ran;
                        cpuset_zero(&ran);
                        cpuset_set(&ran, first + (int)(2 * i) % (int)n);
                        cpuset_set(&ran, first + (int)(2 * i + 1) % (int)n);
                        add_group(s, GROUP_PAIR, 2, 0.5, &ran);
                }
                break;
        case MESHES:
                for (unsigned i = 0; i < 4; i++)
                        add_group(s, GROUP_MESH, 40, MIN(3.0, n / 8.0 + 0.25), NULL);
                break;
        case FANOUT64:
                add_group(s, GROUP_FANOUT, 65, MIN(20.0, n * 0.6), NULL);
                break;
        case MIX: {
                CpuSet ran = set_of("0-1");
                add_group(s, GROUP_PAIR, 2, 0.4, &ran);
                add_group(s, GROUP_MESH, 40, MIN(2.0, n * 0.3), NULL);
                add_group(s, GROUP_FANOUT, 9, MIN(4.0, n * 0.3), NULL);
                add_group(s, GROUP_SOLO, 1, 0.2, NULL);
                break;
        }
        case OVERLOAD:
                for (unsigned i = 0; i < n; i++) {
                        CpuSet ran;
                        cpuset_zero(&ran);
                        cpuset_set(&ran, first + (int)i);
                        add_group(s, GROUP_PAIR, 2, 0.7, &ran);
                }
                add_group(s, GROUP_MESH, 40, 2.0 * n, NULL);
                add_group(s, GROUP_FANOUT, 65, 1.5 * n, NULL);
                break;
        }
}

/* Return: how many groups the first tick's plan manages. */
static unsigned n_managed(Scenario *s, const Profile *p) {
        Plan *plan = decide(s, p, NULL, SEC_NS);
        unsigned n = 0;
        for (unsigned i = 0; i < plan->n_groups; i++)
                n += plan->groups[i].managed;
        plan_free(plan);
        return n;
}

static void test_scenario_table(void **state) {
        const char *topos[] = { "topo-vm2", "topo-epyc2s", "topo-hybrid" };
        const char *profiles[] = { "power-first", "balanced", "latency-first" };
        for (size_t ti = 0; ti < ELEMENTSOF(topos); ti++)
                for (size_t pi = 0; pi < ELEMENTSOF(profiles); pi++)
                        for (Kind k = N_PAIRS; k <= OVERLOAD; k++) {
                                Scenario s;
                                Profile p = profile(profiles[pi]);
                                print_message("%s %s scenario %d\n", topos[ti], profiles[pi], k);
                                scenario_init(&s, topos[ti], 0.05);
                                build(&s, k);
                                check_invariants(&s, &p, NULL);
                                /* Light pairs that fit are placed by every profile. */
                                if (k == N_PAIRS)
                                        assert_true(n_managed(&s, &p) > 0);
                                scenario_done(&s);
                        }
}

/* ---- pairs ---- */

static void test_pair_on_least_busy_ran_on_cpu(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-epyc2s", 0.1);
        CpuSet ran = set_of("8,40");
        Group *g = add_group(&s, GROUP_PAIR, 2, 0.6, &ran);
        s.loads[8].busy += 0.3; /* someone else is busy on CPU 8 */
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        const PlanGroup *pg = pg_of(plan, g);
        assert_true(pg->managed);
        CpuSet expect = set_of("40");
        assert_true(cpuset_equal(&pg->cpus, &expect));
        assert_true(strstr(pg->reason, "pair") != NULL);
        plan_free(plan);
        scenario_done(&s);
}

static void test_pair_stream_left_alone(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-vm2", 0.0);
        /* Both tasks ran at once for 0.49 of a CPU: a stream (iperf3 over
         * loopback measured 1.49 CPUs' worth), not tried. */
        Group *g = add_group(&s, GROUP_PAIR, 2, 1.49, NULL);
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        assert_false(pg_of(plan, g)->managed);
        assert_non_null(strstr(pg_of(plan, g)->reason, "max_overlap_pct=30"));
        plan_free(plan);

        /* 1.1 CPUs spread (a server and its client, say) is tried: what
         * packing removes is part of that run time. */
        g->util = 1.1;
        Plan *packed = decide(&s, &p, NULL, SEC_NS);
        assert_true(pg_of(packed, g)->managed);
        assert_int_equal(pg_of(packed, g)->trial.verdict, TRIAL_RUNNING);
        /* Once packed it stays packed whatever its utilisation: packing is
         * what saturates it. */
        g->util = 1.0;
        plan = decide(&s, &p, packed, 30 * SEC_NS);
        assert_true(pg_of(plan, g)->managed);
        assert_true(plan_equal(plan, packed));
        plan_free(plan);
        plan_free(packed);
        scenario_done(&s);

        /* Pinned to CPU 1 by someone else, it runs flat out (1.02 CPUs in a
         * tick, accounting noise): still a pair on one CPU, decided for, so
         * the actuator can see that it is not placed's to touch. */
        scenario_init(&s, "topo-vm2", 0.0);
        CpuSet one = set_of("1");
        g = add_group(&s, GROUP_PAIR, 2, 1.02, &one);
        g->cpus = one;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_true(pg_of(plan, g)->managed);
        assert_true(cpuset_equal(&pg_of(plan, g)->cpus, &one));
        plan_free(plan);

        /* Kept on CPU 1 by the kernel itself this time (both its tasks ran
         * there, free to go anywhere): placed makes that stick. */
        g->cpus = s.t->online;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_true(pg_of(plan, g)->managed);
        assert_true(cpuset_equal(&pg_of(plan, g)->cpus, &one));
        plan_free(plan);

        /* Two tasks running at once on two CPUs (1.6 CPUs) is not a stack. */
        CpuSet both = set_of("0-1");
        g->util = 1.6;
        g->ran_on = both;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_false(pg_of(plan, g)->managed);
        plan_free(plan);
        scenario_done(&s);
}

/* ---- trials: switchbacks, placements judged by measured outcome ---- */

/* One side's figures in a window of a switchback. */
typedef struct Fig {
        double rate;       /* handoffs/s */
        double util, wait; /* CPUs' worth of run time, of run-queue wait */
        uint64_t delay_us; /* run-queue delay */
        double bytes;      /* bytes/s through read and write */
} Fig;

#define WINDOW_NS (100 * 1000000ULL)

/*
 * One tick of a pair on the 2-CPU VM at now: the window that just ended ran
 * on the side the previous plan applied, so its figures are that side's.
 */
static Plan *switch_tick(Scenario *s, Group *g, const Profile *p, Plan *prev, uint64_t now,
                         const Fig *placed, const Fig *kernel) {
        const PlanGroup *was = prev ? plan_find_group(prev, g->id) : NULL;
        bool applied = was && plan_group_applied(was);
        const Fig *f = applied ? placed : kernel;
        g->handoff_rate = f->rate;
        g->util = f->util;
        g->runq_wait = f->wait;
        g->runq_delay_us = f->delay_us;
        g->io_rate = f->bytes;
        g->ran_on = applied ? was->cpus : s->t->online; /* packed: it ran where placed put it */
        Plan *next = decide(s, p, prev, now);
        plan_free(prev);
        return next;
}

/* Runs a pair from its first tick until its trial's verdict; Return: the windows it took. */
static unsigned run_trial(Scenario *s, Group *g, const Profile *p, Plan **plan, uint64_t *now,
                          const Fig *placed, const Fig *kernel) {
        unsigned k = 0;
        *plan = switch_tick(s, g, p, *plan, *now, placed, kernel);
        while (pg_of(*plan, g)->trial.verdict == TRIAL_RUNNING && k < 100) {
                const PlanTrial *t = &pg_of(*plan, g)->trial;
                assert_true(pg_of(*plan, g)->managed); /* on trial: placed, whatever the side */
                assert_int_equal(t->arm, policy_trial_arm(t->windows));
                *now += WINDOW_NS;
                *plan = switch_tick(s, g, p, *plan, *now, placed, kernel);
                k++;
        }
        return k;
}

/* The plan's names: both directions from one table, NULL and -EINVAL outside it. */
static void test_plan_names(void **state) {
        for (int v = 0; v < _TRIAL_VERDICT_MAX; v++)
                assert_int_equal(trial_verdict_from_string(trial_verdict_to_string(v)), v);
        assert_string_equal(trial_verdict_to_string(TRIAL_REVERTED), "reverted");
        assert_null(trial_verdict_to_string(_TRIAL_VERDICT_MAX));
        assert_int_equal(trial_verdict_from_string("judged"), -EINVAL);
        assert_int_equal(trial_verdict_from_string(NULL), -EINVAL);
        for (int m = 0; m < _TRIAL_MEASURE_MAX; m++)
                assert_int_equal(trial_measure_from_string(trial_measure_to_string(m)), m);
        assert_string_equal(trial_measure_to_string(TRIAL_BY_BYTES), "bytes");
        assert_null(trial_measure_to_string(_TRIAL_MEASURE_MAX));
        assert_int_equal(trial_measure_from_string("packets"), -EINVAL);
        for (int a = 0; a < _TRIAL_ARM_MAX; a++)
                assert_int_equal(trial_arm_from_string(trial_arm_to_string(a)), a);
        assert_string_equal(trial_arm_to_string(TRIAL_ARM_KERNEL), "kernel");
        assert_int_equal(trial_arm_from_string("spread"), -EINVAL);
        assert_string_equal(plan_slice_to_string(PLAN_SLICE_MACHINE), "machine.slice");
        assert_null(plan_slice_to_string(_PLAN_SLICE_MAX));
}

/* The switchback's order, placed first: ABBA ABBA; and Student's t. */
static void test_trial_order(void **state) {
        static const TrialArm order[] = { TRIAL_ARM_PLACED, TRIAL_ARM_KERNEL, TRIAL_ARM_KERNEL,
                                          TRIAL_ARM_PLACED, TRIAL_ARM_PLACED, TRIAL_ARM_KERNEL,
                                          TRIAL_ARM_KERNEL, TRIAL_ARM_PLACED };
        for (unsigned w = 0; w < ELEMENTSOF(order); w++)
                assert_int_equal(policy_trial_arm(w), order[w]);
        assert_true(fabs(policy_trial_t95(1) - 12.706) < 1e-3);
        assert_true(fabs(policy_trial_t95(2) - 4.303) < 1e-3);
        assert_true(fabs(policy_trial_t95(30) - 2.042) < 1e-3);
        assert_true(fabs(policy_trial_t95(1000) - 1.96) < 1e-3);
}

/*
 * Steady figures: the interval is the gain itself, so a verdict comes at
 * [trial] ticks (4 weighed windows, after the 2 of the first pair), except a
 * tie, which goes to the kernel after max_ticks (16, and the first 2).
 */
typedef struct TrialCase {
        const char *profile;
        double placed, kernel;               /* handoffs/s packed, then left to the kernel */
        uint64_t placed_delay, kernel_delay; /* run-queue delay, us */
        TrialVerdict expect;
        unsigned windows;
        const char *reason; /* in the reason, when handed back */
} TrialCase;

static void test_trial_verdicts(void **state) {
        static const TrialCase cases[] = {
                /* the lockstep pipe pair: 9x packed */
                { "balanced", 148000, 16000, 3, 5, TRIAL_KEPT, 6, NULL },
                { "latency-first", 148000, 16000, 3, 5, TRIAL_KEPT, 6, NULL },
                /* a server with one client: 1.3x */
                { "balanced", 39000, 30000, 6, 8, TRIAL_KEPT, 6, NULL },
                /* no change: a tie goes to the kernel; latency-first sees its 3% missing */
                { "balanced", 30000, 30000, 8, 8, TRIAL_REVERTED, 18, "no clear gain" },
                { "latency-first", 30000, 30000, 8, 8, TRIAL_REVERTED, 6, "did worse" },
                /* a 5% loss: power-first trades it for a sleeping CPU */
                { "power-first", 28500, 30000, 8, 8, TRIAL_KEPT, 6, NULL },
                { "balanced", 28500, 30000, 8, 8, TRIAL_REVERTED, 6, "did worse" },
                /* a 20% loss is too much even for power-first */
                { "power-first", 24000, 30000, 8, 8, TRIAL_REVERTED, 6, "did worse" },
                /* faster, but now waiting for the CPU past the budget */
                { "balanced", 30500, 30000, 3000, 8, TRIAL_REVERTED, 6, "past the budget" },
                /* waiting more, but within the budget */
                { "balanced", 30500, 30000, 400, 8, TRIAL_KEPT, 6, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const TrialCase *tc = &cases[i];
                Scenario s;
                Profile p = profile(tc->profile);
                Fig placed = { tc->placed, 0.96, 0, tc->placed_delay, 0 };
                Fig kernel = { tc->kernel, 0.96, 0, tc->kernel_delay, 0 };
                print_message("case %zu: %s %.0f vs %.0f\n", i, tc->profile, tc->placed,
                              tc->kernel);
                scenario_init(&s, "topo-vm2", 0.0);
                Group *g = add_group(&s, GROUP_PAIR, 2, 0.96, NULL);
                Plan *plan = NULL;
                uint64_t now = SEC_NS;
                unsigned k = run_trial(&s, g, &p, &plan, &now, &placed, &kernel);
                const PlanGroup *pg = pg_of(plan, g);
                assert_int_equal(pg->trial.verdict, tc->expect);
                assert_int_equal(k, tc->windows);
                assert_int_equal(pg->trial.windows, tc->windows);
                /* The first pair is not weighed: neither side counts it. */
                assert_int_equal(pg->trial.placed.windows,
                                 (tc->windows - TRIAL_BURN_IN_WINDOWS) / 2);
                assert_int_equal(pg->trial.kernel.windows,
                                 (tc->windows - TRIAL_BURN_IN_WINDOWS) / 2);
                assert_true(fabs(pg->trial.placed.rate - tc->placed) < 1e-6);
                assert_true(fabs(pg->trial.kernel.rate - tc->kernel) < 1e-6);
                assert_true(fabs(pg->trial.gain - tc->placed / tc->kernel) < 1e-9);
                assert_int_equal(pg->managed, tc->expect == TRIAL_KEPT);
                assert_int_equal(plan_group_applied(pg), tc->expect == TRIAL_KEPT);
                if (tc->reason)
                        assert_non_null(strstr(pg->reason, tc->reason));
                plan_free(plan);
                scenario_done(&s);
        }
}

/*
 * Noise and trends (policy-trial.c): a verdict needs the 95% interval of the
 * pairs' gain clear of keep_pct. The windows' figures are given in the order
 * they run, the placed windows' and the kernel's each in their own list.
 */
typedef struct NoiseCase {
        const char *what;
        const char *profile;
        double placed[9]; /* handoffs/s in the placed windows, in turn (the first: not weighed) */
        double kernel[9]; /* ... and in the kernel's */
        TrialVerdict expect;
        unsigned windows;
        const char *reason;
} NoiseCase;

/* Runs a trial over the figures of tc, and returns the verdict's plan. */
static Plan *noise_trial(Scenario *s, Group *g, const Profile *p, const NoiseCase *tc,
                         unsigned *ret_windows) {
        unsigned np = 0, nk = 0, k = 0;
        uint64_t now = SEC_NS;
        Fig kernel0 = { tc->kernel[0], 0.96, 0, 5, 0 };
        Plan *plan = switch_tick(s, g, p, NULL, now, &kernel0, &kernel0);
        while (pg_of(plan, g)->trial.verdict == TRIAL_RUNNING) {
                assert_true(k < 2 * ELEMENTSOF(tc->placed));
                bool placed = plan_group_applied(pg_of(plan, g));
                Fig f = { placed ? tc->placed[np++] : tc->kernel[nk++], 0.96, 0, 5, 0 };
                now += WINDOW_NS;
                plan = switch_tick(s, g, p, plan, now, &f, &f);
                if (k == 3) { /* mid-way through the plan's JSON: nothing lost */
                        _cleanup_free_ char *json = NULL;
                        Plan *back = NULL;
                        assert_int_equal(plan_to_json(plan, &json), 0);
                        assert_int_equal(plan_from_json(json, &back), 0);
                        plan_free(plan);
                        plan = back;
                }
                k++;
        }
        *ret_windows = k;
        return plan;
}

static void test_trial_noise(void **state) {
        static const NoiseCase cases[] = {
                { "a 2x gain in 20% noise is kept in 6 windows, the first pair not weighed",
                  "balanced",
                  { 30000, 140000, 118000, 152000, 131000, 140000, 118000, 152000, 131000 },
                  { 70000, 70000, 61000, 78000, 66000, 70000, 61000, 78000, 66000 },
                  TRIAL_KEPT,
                  6,
                  NULL },
                { "pg-1c placed as it starts: its warm-up in the first pair is not weighed",
                  "balanced",
                  /* A trial's windows as placed logged them at debug (bench pg-1c, rep 1);
                   * weighing the first pair too, it was kept only after 14 windows, at
                   * 1.16x [1.03-1.30]. */
                  { 25394, 40659, 44334, 43822, 43031, 46136, 46681 },
                  { 29134, 32729, 35595, 37180, 37218, 37574, 37843 },
                  TRIAL_KEPT,
                  6,
                  NULL },
                { "one disturbed window does not hand a 2x gain back",
                  "balanced",
                  { 140000, 140000, 60000, 140000, 140000, 138000, 141000, 139000, 140000 },
                  { 70000, 70000, 70000, 70000, 70000, 71000, 69000, 70000, 70000 },
                  TRIAL_KEPT,
                  12,
                  NULL },
                { "a tie in 40% noise goes to the kernel",
                  "balanced",
                  { 100000, 100000, 140000, 80000, 120000, 100000, 140000, 80000, 120000 },
                  { 100000, 120000, 80000, 140000, 100000, 120000, 80000, 140000, 100000 },
                  TRIAL_REVERTED,
                  18,
                  "no clear gain" },
                { "a 12% loss hidden in 40% noise is not kept",
                  "balanced",
                  { 100000, 88000, 123000, 70000, 106000, 88000, 123000, 70000, 106000 },
                  { 100000, 100000, 140000, 80000, 120000, 100000, 140000, 80000, 120000 },
                  TRIAL_REVERTED,
                  6,
                  "did worse" },
                { "a workload speeding up on its own is no gain",
                  "balanced",
                  /* 10% more each window, both sides alike: A B B A A B B A ... */
                  { 100000, 133100, 146410, 194872, 214359, 285312, 313843, 417725, 459497 },
                  { 110000, 121000, 161051, 177156, 235795, 259374, 345227, 379750, 505447 },
                  TRIAL_REVERTED,
                  18,
                  "no clear gain" },
                { "power-first keeps a tie: no loss past its tenth",
                  "power-first",
                  { 100000, 100000, 140000, 80000, 120000, 100000, 140000, 80000, 120000 },
                  { 110000, 110000, 130000, 90000, 110000, 110000, 130000, 90000, 110000 },
                  TRIAL_KEPT,
                  18,
                  NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const NoiseCase *tc = &cases[i];
                Scenario s;
                Profile p = profile(tc->profile);
                print_message("case %zu: %s (%s)\n", i, tc->what, tc->profile);
                assert_int_equal(p.trial_ticks, 4);
                assert_int_equal(p.trial_max_ticks, 16);
                scenario_init(&s, "topo-vm2", 0.0);
                Group *g = add_group(&s, GROUP_PAIR, 2, 0.96, NULL);
                unsigned k;
                Plan *plan = noise_trial(&s, g, &p, tc, &k);
                const PlanGroup *pg = pg_of(plan, g);
                print_message("  %.3fx [%.3f-%.3f] after %u windows\n", pg->trial.gain,
                              pg->trial.gain_lo, pg->trial.gain_hi, k);
                assert_int_equal(pg->trial.verdict, tc->expect);
                assert_int_equal(k, tc->windows);
                assert_int_equal(pg->trial.pairs, (tc->windows - TRIAL_BURN_IN_WINDOWS) / 2);
                assert_true(pg->trial.gain_lo <= pg->trial.gain);
                assert_true(pg->trial.gain <= pg->trial.gain_hi);
                assert_int_equal(pg->managed, tc->expect == TRIAL_KEPT);
                if (tc->expect == TRIAL_REVERTED)
                        assert_string_equal(trial_back_to_string(pg->trial.back),
                                            strstr(tc->reason, "no clear") ? "tie"
                                            : strstr(tc->reason, "budget") ? "waited"
                                                                           : "worse");
                if (tc->reason)
                        assert_non_null(strstr(pg->reason, tc->reason));
                /* Replayed, the same windows give the same verdict, to the bit. */
                Scenario s2;
                scenario_init(&s2, "topo-vm2", 0.0);
                Group *g2 = add_group(&s2, GROUP_PAIR, 2, 0.96, NULL);
                unsigned k2;
                Plan *again = noise_trial(&s2, g2, &p, tc, &k2);
                assert_int_equal(k2, k);
                assert_memory_equal(&pg_of(again, g2)->trial, &pg->trial, sizeof(PlanTrial));
                plan_free(again);
                scenario_done(&s2);
                plan_free(plan);
                scenario_done(&s);
        }
}

/*
 * Two busy tasks (a stream, a server with 32 clients) take turns on one CPU
 * more often than spread, so their count of times on a CPU rises when
 * packed while each gets half the CPU: what tells is their run time,
 * which falls, and their wait for the CPU, which grows. Figures of the
 * rows: measured on the 2-CPU VM (redis-benchmark -c 32: 18.6k -> 21.7k
 * times on a CPU per second, 1.54 -> 1.0 CPUs' worth, wait 0.07 -> 0.5;
 * the pipe pair: 0.93 -> 1.0, wait 0 -> 0.44). Busy pairs are tried when
 * the overlap gate lets them (1.29 CPUs' worth, under max_overlap_pct=30).
 */
typedef struct SqueezeCase {
        const char *what;
        const char *profile;
        double kernel, placed;           /* handoffs/s spread, then packed */
        double kernel_util, placed_util; /* CPUs' worth of run time */
        double kernel_wait, placed_wait; /* CPUs' worth of run-queue wait */
        TrialVerdict expect;
} SqueezeCase;

static void test_trial_squeezed(void **state) {
        static const SqueezeCase cases[] = {
                { "both busy: handoffs rise, run time drops", "balanced", 18600, 21700, 1.29, 1.00,
                  0.07, 0.50, TRIAL_REVERTED },
                { "both busy, latency-first", "latency-first", 18600, 21700, 1.29, 1.00, 0.07, 0.50,
                  TRIAL_REVERTED },
                { "both busy, power-first", "power-first", 18600, 21700, 1.29, 1.00, 0.07, 0.50,
                  TRIAL_REVERTED },
                { "the lockstep pair: runs longer packed", "balanced", 90700, 147600, 0.93, 1.00,
                  0.00, 0.44, TRIAL_KEPT },
                { "a server with one client: packing saves 8% of a CPU", "balanced", 30000, 39000,
                  1.08, 1.00, 0.02, 0.30, TRIAL_KEPT },
                { "a loss just within max_run_loss_pct", "balanced", 30000, 33000, 1.24, 1.00, 0.02,
                  0.30, TRIAL_KEPT },
                { "less run time but less waiting: it got cheaper", "balanced", 30000, 33000, 1.29,
                  1.00, 0.40, 0.10, TRIAL_KEPT },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const SqueezeCase *tc = &cases[i];
                Scenario s;
                Profile p = profile(tc->profile);
                Fig placed = { tc->placed, tc->placed_util, tc->placed_wait, 5, 0 };
                Fig kernel = { tc->kernel, tc->kernel_util, tc->kernel_wait, 5, 0 };
                print_message("case %zu: %s (%s)\n", i, tc->what, tc->profile);
                scenario_init(&s, "topo-vm2", 0.0);
                Group *g = add_group(&s, GROUP_PAIR, 2, tc->kernel_util, NULL);
                Plan *plan = NULL;
                uint64_t now = SEC_NS;
                (void)run_trial(&s, g, &p, &plan, &now, &placed, &kernel);
                const PlanGroup *pg = pg_of(plan, g);
                assert_int_equal(pg->trial.verdict, tc->expect);
                assert_true(fabs(pg->trial.placed.util - tc->placed_util) < 1e-9);
                assert_true(fabs(pg->trial.placed.wait - tc->placed_wait) < 1e-9);
                assert_true(fabs(pg->trial.kernel.util - tc->kernel_util) < 1e-9);
                assert_true(fabs(pg->trial.kernel.wait - tc->kernel_wait) < 1e-9);
                assert_int_equal(pg->managed, tc->expect == TRIAL_KEPT);
                /* The figures survive the plan's JSON (placectl snapshot, --plan). */
                _cleanup_free_ char *json = NULL;
                Plan *back = NULL;
                assert_int_equal(plan_to_json(plan, &json), 0);
                assert_int_equal(plan_from_json(json, &back), 0);
                assert_memory_equal(&pg_of(back, g)->trial, &pg->trial, sizeof(PlanTrial));
                plan_free(back);
                if (tc->expect == TRIAL_REVERTED) {
                        assert_non_null(strstr(pg->reason, "squeezed"));
                        assert_int_equal(pg->trial.back, TRIAL_BACK_SQUEEZED);
                        /* Spread again, busy as before: not tried before its back-off,
                         * whose reason still says why (not "did worse": it did not). */
                        uint64_t retry = pg->trial.retry_ns;
                        assert_int_equal(retry, now + 30 * SEC_NS);
                        for (now += SEC_NS; now < retry; now += SEC_NS) {
                                plan = switch_tick(&s, g, &p, plan, now, &placed, &kernel);
                                assert_false(pg_of(plan, g)->managed);
                                assert_non_null(strstr(pg_of(plan, g)->reason, "squeezed"));
                                assert_null(strstr(pg_of(plan, g)->reason, "did worse"));
                        }
                        plan = switch_tick(&s, g, &p, plan, retry, &placed, &kernel);
                        assert_true(pg_of(plan, g)->managed); /* tried once more */
                        assert_int_equal(pg_of(plan, g)->trial.verdict, TRIAL_RUNNING);
                        assert_int_equal(pg_of(plan, g)->trial.reverts, 1);
                }
                plan_free(plan);
                scenario_done(&s);
        }
}

/*
 * A stream is judged by the bytes it moves (TRIAL_BY_BYTES, policy-trial.c):
 * a pair that overlapped past max_overlap_pct (30) spread and moved at
 * least a byte per handoff. Measured on a haltpoll KVM guest: an iperf3
 * stream packed moved 1.65x the bytes while its handoffs fell to 0.28x
 * (kept, although its run time fell and it waited more: the bytes show what
 * it lost, so the squeeze rule does not apply); with no cpuidle driver the
 * same stream lost (handed back, though its handoffs rose); a busy redis
 * pair (1.54 CPUs' worth) moved 0.77x while its handoffs rose 1.46x. A
 * stream that shows no bytes (send and recv) is left to the kernel by the
 * overlap gate. Hand-off pairs are judged by handoffs whatever their bytes:
 * the pipe pair's move in step with its round trips, and a PostgreSQL
 * backend's count the tables it read as it started.
 */
typedef struct BytesCase {
        const char *what;
        double util;                       /* CPUs' worth spread (1.6: a stream) */
        double kernel, placed;             /* handoffs/s spread, then packed */
        double bytes_kernel, bytes_placed; /* bytes/s spread, then packed */
        TrialMeasure measure;
        TrialVerdict expect; /* _TRIAL_VERDICT_MAX: not tried */
} BytesCase;

static void test_trial_by_bytes(void **state) {
        static const BytesCase cases[] = {
                { "iperf3, haltpoll", 1.6, 40000, 11200, 2.0e9, 3.3e9, TRIAL_BY_BYTES, TRIAL_KEPT },
                { "iperf3, no cpuidle driver", 1.6, 40000, 52000, 2.0e9, 1.6e9, TRIAL_BY_BYTES,
                  TRIAL_REVERTED },
                { "redis -c 32", 1.54, 18600, 21700, 9.0e6, 6.9e6, TRIAL_BY_BYTES, TRIAL_REVERTED },
                { "the pipe pair, 16 bytes a round trip", 0.93, 90700, 147600, 725600, 1180800,
                  TRIAL_BY_HANDOFFS, TRIAL_KEPT },
                { "a stream over send and recv", 1.6, 40000, 11200, 0, 0, TRIAL_BY_HANDOFFS,
                  _TRIAL_VERDICT_MAX },
                { "fewer bytes than handoffs", 0.93, 90700, 147600, 1000, 500, TRIAL_BY_HANDOFFS,
                  TRIAL_KEPT },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const BytesCase *tc = &cases[i];
                Scenario s;
                Profile p = profile("balanced");
                Fig kernel = { tc->kernel, tc->util, 0.05, 5, tc->bytes_kernel };
                Fig placed = { tc->placed, 1.0, 0.5, 5, tc->bytes_placed };
                print_message("case %zu: %s\n", i, tc->what);
                scenario_init(&s, "topo-vm2", 0.0);
                Group *g = add_group(&s, GROUP_PAIR, 2, tc->util, NULL);
                g->runq_wait = 0.05;
                g->io_rate = tc->bytes_kernel;
                g->handoff_rate = tc->kernel;
                assert_int_equal(policy_trial_measure(&p, g), tc->measure);
                Plan *plan = NULL;
                uint64_t now = SEC_NS;
                if (tc->expect == _TRIAL_VERDICT_MAX) {
                        plan = switch_tick(&s, g, &p, NULL, now, &placed, &kernel);
                        assert_false(pg_of(plan, g)->managed);
                        assert_non_null(strstr(pg_of(plan, g)->reason, "no bytes to judge it by"));
                        plan_free(plan);
                        scenario_done(&s);
                        continue;
                }
                (void)run_trial(&s, g, &p, &plan, &now, &placed, &kernel);
                const PlanGroup *pg = pg_of(plan, g);
                assert_int_equal(pg->trial.verdict, tc->expect);
                assert_int_equal(pg->trial.measure, tc->measure);
                double k = tc->measure == TRIAL_BY_BYTES ? tc->bytes_kernel : tc->kernel;
                double pl = tc->measure == TRIAL_BY_BYTES ? tc->bytes_placed : tc->placed;
                assert_true(fabs(pg->trial.kernel.rate - k) < 1e-3);
                assert_true(fabs(pg->trial.placed.rate - pl) < 1e-3);
                if (tc->expect == TRIAL_REVERTED)
                        assert_non_null(strstr(pg->reason, tc->measure == TRIAL_BY_BYTES
                                                                   ? "bytes/s"
                                                                   : "handoffs/s"));
                /* The measure survives the plan's JSON; a plan without it counts handoffs. */
                _cleanup_free_ char *json = NULL;
                Plan *back = NULL;
                assert_int_equal(plan_to_json(plan, &json), 0);
                assert_int_equal(plan_from_json(json, &back), 0);
                assert_int_equal(pg_of(back, g)->trial.measure, tc->measure);
                assert_int_equal(strstr(json, "\"measure\"") != NULL,
                                 tc->measure == TRIAL_BY_BYTES);
                plan_free(back);
                plan_free(plan);
                scenario_done(&s);
        }
}

/*
 * A lockstep pipe pair (148k handoffs/s packed, 16k spread) placed and kept
 * by its trial on the 2-CPU VM: the start of the re-check tests. Returns its
 * group; *plan and *now are the verdict's.
 */
static Group *kept_pipe_pair(Scenario *s, const Profile *p, Plan **plan, uint64_t *now) {
        Fig placed = { 148000, 1.0, 0.01, 3, 0 };
        Fig kernel = { 16000, 0.9, 0.0, 5, 0 };
        scenario_init(s, "topo-vm2", 0.0);
        Group *g = add_group(s, GROUP_PAIR, 2, 0.96, NULL);
        *plan = NULL;
        *now = SEC_NS;
        (void)run_trial(s, g, p, plan, now, &placed, &kernel);
        assert_int_equal(pg_of(*plan, g)->trial.verdict, TRIAL_KEPT);
        return g;
}

/*
 * A kept placement is re-checked: by a switchback recheck_s (30 s) after
 * its verdict, 60 s after a re-check that kept it, and at once when it
 * drifts: a lockstep pair that became a pipeline of two busy stages (both
 * compute at once: packed, its handoffs drop and it waits for the CPU)
 * is handed back by the re-check, within 16 windows of the drift.
 */
static void test_trial_recheck(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        Fig placed = { 148000, 1.0, 0.01, 3, 0 };
        Fig kernel = { 16000, 0.9, 0.0, 5, 0 };
        Plan *plan;
        uint64_t now;
        Group *g = kept_pipe_pair(&s, &p, &plan, &now);
        const PlanTrial *t = &pg_of(plan, g)->trial;
        assert_false(t->recheck);
        uint64_t verdict = now;
        assert_int_equal(t->recheck_ns, verdict + 30 * SEC_NS);

        /* Steady: no re-check before it is due. */
        for (now += SEC_NS; now < verdict + 30 * SEC_NS; now += SEC_NS) {
                plan = switch_tick(&s, g, &p, plan, now, &placed, &kernel);
                assert_int_equal(pg_of(plan, g)->trial.verdict, TRIAL_KEPT);
        }
        plan = switch_tick(&s, g, &p, plan, verdict + 30 * SEC_NS, &placed, &kernel);
        t = &pg_of(plan, g)->trial;
        assert_int_equal(t->verdict, TRIAL_RUNNING);
        assert_true(t->recheck);
        assert_false(t->drifted); /* it was due */
        assert_int_equal(t->measure, TRIAL_BY_HANDOFFS);
        assert_true(plan_group_applied(pg_of(plan, g))); /* its first window is placed */
        now = verdict + 30 * SEC_NS;
        while (pg_of(plan, g)->trial.verdict == TRIAL_RUNNING) {
                now += WINDOW_NS;
                plan = switch_tick(&s, g, &p, plan, now, &placed, &kernel);
        }
        t = &pg_of(plan, g)->trial;
        assert_int_equal(t->verdict, TRIAL_KEPT);
        assert_int_equal(t->checks, 1);
        assert_int_equal(t->recheck_ns, now + 60 * SEC_NS); /* kept again: twice the wait */

        /* It becomes a pipeline: packed, both stages wait for the one CPU,
         * past the run-queue budget: re-checked, not widened blind. */
        Fig pipeline_placed = { 40000, 1.0, 0.6, 3000, 0 };
        Fig pipeline_kernel = { 70000, 1.8, 0.05, 5, 0 };
        now += SEC_NS;
        plan = switch_tick(&s, g, &p, plan, now, &pipeline_placed, &pipeline_kernel);
        t = &pg_of(plan, g)->trial;
        assert_int_equal(t->verdict, TRIAL_RUNNING); /* drifted: re-checked at once */
        assert_true(t->recheck);
        assert_int_equal(pg_of(plan, g)->widen, 0);
        assert_true(t->drifted);
        unsigned k = 0;
        while (pg_of(plan, g)->trial.verdict == TRIAL_RUNNING) {
                now += WINDOW_NS;
                plan = switch_tick(&s, g, &p, plan, now, &pipeline_placed, &pipeline_kernel);
                k++;
        }
        const PlanGroup *pg = pg_of(plan, g);
        assert_int_equal(pg->trial.verdict, TRIAL_REVERTED);
        assert_true(k <= p.trial_recheck_max_ticks + TRIAL_BURN_IN_WINDOWS);
        assert_false(pg->managed);
        assert_int_equal(pg->trial.checks, 0);
        assert_non_null(strstr(pg->reason, "did worse"));
        plan_free(plan);
        scenario_done(&s);
}

/*
 * A change that begins within a regular tick's window shows part of itself
 * there: a kept pipe pair (148k handoffs/s) whose neighbour starts 0.3 s
 * before the tick ends runs 104k in that window, 1.42x off, under the 1.5x
 * that re-checks it but past half that band (1.22x). Not re-checked, it
 * asks for a closer look: a quick tick (news.c), whose window lies wholly
 * after the change (30k), re-checks it at once, a second before the next
 * regular tick would. A half drift that stays asks once a regular tick;
 * steady figures or a 10% move ask for nothing.
 */
static void test_trial_recheck_closer(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        Plan *plan;
        uint64_t now;
        Group *g = kept_pipe_pair(&s, &p, &plan, &now);
        Fig steady = { 148000, 1.0, 0.01, 3, 0 }, moved = { 134000, 1.0, 0.01, 3, 0 };
        Fig straddled = { 104000, 1.0, 0.2, 300, 0 }, contended = { 30000, 0.6, 0.6, 3000, 0 };
        const PlanTrial *t;

        for (unsigned i = 0; i < 3; i++) {
                now += SEC_NS;
                plan = switch_tick(&s, g, &p, plan, now, i == 1 ? &moved : &steady, &steady);
                t = &pg_of(plan, g)->trial;
                assert_int_equal(t->verdict, TRIAL_KEPT);
                assert_false(t->closer);
        }

        now += SEC_NS;
        plan = switch_tick(&s, g, &p, plan, now, &straddled, &steady);
        t = &pg_of(plan, g)->trial;
        assert_int_equal(t->verdict, TRIAL_KEPT);
        assert_true(t->closer);
        assert_true(plan_group_applied(pg_of(plan, g)));

        now += WINDOW_NS;
        plan = switch_tick(&s, g, &p, plan, now, &contended, &steady);
        t = &pg_of(plan, g)->trial;
        assert_int_equal(t->verdict, TRIAL_RUNNING);
        assert_true(t->recheck);
        assert_true(t->drifted);
        assert_false(t->closer);
        plan_free(plan);
        scenario_done(&s);

        /* The same half drift, staying: one closer look, then the regular tick's. */
        g = kept_pipe_pair(&s, &p, &plan, &now);
        for (unsigned i = 0; i < 4; i++) {
                now += i % 2 ? WINDOW_NS : SEC_NS; /* regular, quick, regular, quick */
                plan = switch_tick(&s, g, &p, plan, now, &straddled, &steady);
                t = &pg_of(plan, g)->trial;
                assert_int_equal(t->verdict, TRIAL_KEPT);
                assert_int_equal(t->closer, i % 2 == 0); /* the quick ticks ask no more */
        }
        plan_free(plan);
        scenario_done(&s);
}

/*
 * A re-check that cannot tell is a tie, and a tie goes to the kernel, as
 * for a new placement: a kept pair whose neighbour (hackbench) drags it to
 * 60k handoffs/s placed and left to the kernel alike drifts, is re-checked,
 * and after recheck_max_ticks windows (8, half a trial's: a re-check is a
 * short switchback) with its interval straddling keep_pct is handed back
 * with the back-off. Kept on such a tie, it would stay placed
 * on a gain measured once, which the bench's mixed case showed is not one
 * there: pinned by hand beside hackbench -g 4 the pair ran at 0.71x.
 */
static void test_trial_recheck_undecided(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        Plan *plan;
        uint64_t now;
        Group *g = kept_pipe_pair(&s, &p, &plan, &now);

        Fig dragged = { 60000, 1.0, 0.01, 3, 0 };
        now += SEC_NS;
        unsigned k = run_trial(&s, g, &p, &plan, &now, &dragged, &dragged);
        const PlanGroup *pg = pg_of(plan, g);
        const PlanTrial *t = &pg->trial;
        /* On trial from the drift's tick: recheck_max_ticks weighed, after the
         * first pair, where a new placement's trial has max_ticks. */
        assert_int_equal(p.trial_recheck_max_ticks, 8);
        assert_int_equal(k, p.trial_recheck_max_ticks + TRIAL_BURN_IN_WINDOWS);
        assert_true(t->recheck);
        assert_true(t->drifted);
        assert_int_equal(t->verdict, TRIAL_REVERTED);
        assert_int_equal(t->back, TRIAL_BACK_TIE);
        assert_false(pg->managed);
        assert_int_equal(t->checks, 0);
        assert_int_equal(t->retry_ns, now + p.trial_backoff_ms * (uint64_t)1000000);
        assert_non_null(strstr(pg->reason, "no clear gain"));
        plan_free(plan);
        scenario_done(&s);
}

/*
 * A stream whose pinning stops paying: the iperf3 stream kept on the
 * haltpoll guest (3.3 GB/s packed, 2.0 spread) meets the host of the guest
 * without a cpuidle driver, where packed it moves 1.6 GB/s and spread
 * still 2.0. Its bytes leave recheck_drift_pct (50) of its verdict's at the
 * next tick; the re-check weighs bytes, as its verdict did (its handoffs,
 * 52k packed against 40k spread, would read as a gain), and hands it back
 * as worse within two seconds of the drift, with the back-off.
 */
static void test_trial_recheck_stream(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        Fig placed = { 11200, 1.0, 0.5, 5, 3.3e9 };
        Fig kernel = { 40000, 1.6, 0.05, 5, 2.0e9 };
        scenario_init(&s, "topo-vm2", 0.0);
        Group *g = add_group(&s, GROUP_PAIR, 2, 1.6, NULL);
        g->io_rate = kernel.bytes;
        g->handoff_rate = kernel.rate;
        Plan *plan = NULL;
        uint64_t now = SEC_NS;
        (void)run_trial(&s, g, &p, &plan, &now, &placed, &kernel);
        const PlanTrial *t = &pg_of(plan, g)->trial;
        assert_int_equal(t->verdict, TRIAL_KEPT);
        assert_int_equal(t->measure, TRIAL_BY_BYTES);
        assert_true(fabs(t->kept_rate - 3.3e9) < 1.0);
        uint64_t verdict = now;

        /* Steady for ten seconds: kept, no re-check. */
        for (now += SEC_NS; now <= verdict + 10 * SEC_NS; now += SEC_NS) {
                plan = switch_tick(&s, g, &p, plan, now, &placed, &kernel);
                assert_int_equal(pg_of(plan, g)->trial.verdict, TRIAL_KEPT);
        }

        Fig slow_placed = { 52000, 1.0, 0.5, 5, 1.6e9 };
        uint64_t drift = now;
        plan = switch_tick(&s, g, &p, plan, drift, &slow_placed, &kernel);
        t = &pg_of(plan, g)->trial;
        assert_int_equal(t->verdict, TRIAL_RUNNING);
        assert_true(t->recheck);
        assert_true(t->drifted);
        assert_int_equal(t->measure, TRIAL_BY_BYTES);
        unsigned k = 0;
        while (pg_of(plan, g)->trial.verdict == TRIAL_RUNNING && k < 100) {
                now += WINDOW_NS;
                plan = switch_tick(&s, g, &p, plan, now, &slow_placed, &kernel);
                k++;
        }
        print_message("stream handed back %u windows after its drift\n", k);
        const PlanGroup *pg = pg_of(plan, g);
        t = &pg->trial;
        assert_int_equal(t->verdict, TRIAL_REVERTED);
        assert_int_equal(t->back, TRIAL_BACK_WORSE);
        assert_int_equal(t->measure, TRIAL_BY_BYTES);
        assert_true(fabs(t->gain - 1.6 / 2.0) < 1e-6);
        assert_false(pg->managed);
        assert_true(now - drift <= 2 * SEC_NS);
        assert_int_equal(k, TRIAL_BURN_IN_WINDOWS + p.trial_ticks); /* 0.6 s at quick ticks */
        assert_int_equal(t->retry_ns, now + p.trial_backoff_ms * (uint64_t)1000000);
        assert_non_null(strstr(pg->reason, "did worse"));
        assert_non_null(strstr(pg->reason, "bytes/s"));
        plan_free(plan);
        scenario_done(&s);
}

/*
 * [pair] min_wakeups_per_sec (50): a pair waking each other 20 times a
 * second is left to the kernel, saying why; at 60 it is placed, and once
 * placed it stays down to half of it (40), after the dwell too, and is
 * handed back under that. 0 places every pair; an unknown rate (0, a
 * snapshot without it) is not light.
 */
static void test_pair_min_wake_rate(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        Fig light = { 40, 0.05, 0, 5, 0 };
        Fig placed = { 130, 0.05, 0, 5, 0 }, kernel = { 120, 0.05, 0, 5, 0 };
        scenario_init(&s, "topo-vm2", 0.0);
        Group *g = add_group(&s, GROUP_PAIR, 2, 0.05, NULL);
        g->wake_rate = 20;
        Plan *plan = switch_tick(&s, g, &p, NULL, SEC_NS, &light, &light);
        assert_false(pg_of(plan, g)->managed);
        assert_non_null(
                strstr(pg_of(plan, g)->reason, "20 wakeups/s, under min_wakeups_per_sec=50"));
        /* Busier once the dwell of that decision is over: placed, and kept for its gain. */
        uint64_t now = (2 + p.dwell_ms / 1000) * SEC_NS;
        g->wake_rate = 60;
        (void)run_trial(&s, g, &p, &plan, &now, &placed, &kernel);
        assert_int_equal(pg_of(plan, g)->trial.verdict, TRIAL_KEPT);
        now += (uint64_t)p.dwell_ms * 1000000ULL + SEC_NS;
        g->wake_rate = 40;
        plan = switch_tick(&s, g, &p, plan, now, &placed, &kernel);
        assert_true(pg_of(plan, g)->managed); /* half of the minimum keeps it */
        g->wake_rate = 19;
        plan = switch_tick(&s, g, &p, plan, now + SEC_NS, &placed, &kernel);
        assert_false(pg_of(plan, g)->managed);
        assert_non_null(strstr(pg_of(plan, g)->reason, "under min_wakeups_per_sec"));
        plan_free(plan);

        p.pair_min_wake_rate = 0;
        plan = switch_tick(&s, g, &p, NULL, SEC_NS, &light, &light);
        assert_true(pg_of(plan, g)->managed);
        plan_free(plan);
        p.pair_min_wake_rate = 50;
        g->wake_rate = 0;
        plan = switch_tick(&s, g, &p, NULL, SEC_NS, &light, &light);
        assert_true(pg_of(plan, g)->managed);
        plan_free(plan);
        scenario_done(&s);
}

/* What a trial counts comes from the group as the kernel ran it: where it starts, and a
 * stream shown by the kernel's first window is counted by bytes from there on. */
static void test_trial_measure_change(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-vm2", 0.0);
        Group *g = add_group(&s, GROUP_PAIR, 2, 1.5, NULL);
        g->handoff_rate = 30000;
        PlanGroup pg = { .id = g->id, .class = GROUP_PAIR, .home = -1, .managed = true };
        policy_trial_step(&p, g, NULL, NULL, SEC_NS, false, &pg);
        assert_int_equal(pg.trial.verdict, TRIAL_RUNNING);
        assert_int_equal(pg.trial.measure, TRIAL_BY_HANDOFFS); /* no bytes: handoffs */
        g->io_rate = 240000;
        PlanGroup fresh = { .id = g->id, .class = GROUP_PAIR, .home = -1, .managed = true };
        policy_trial_step(&p, g, NULL, NULL, SEC_NS, false, &fresh);
        assert_int_equal(fresh.trial.measure, TRIAL_BY_BYTES);
        /* Packed, it no longer overlaps: the running trial still counts handoffs. */
        g->util = 1.0;
        PlanGroup next = pg;
        policy_trial_step(&p, g, &pg, &pg, SEC_NS + WINDOW_NS, false, &next);
        assert_int_equal(next.trial.measure, TRIAL_BY_HANDOFFS);
        assert_int_equal(next.trial.windows, 1);
        assert_int_equal(next.trial.placed.windows, 0); /* the first pair is not weighed */
        /* The kernel's first window: spread, it runs 1.5 CPUs' worth and moves more bytes
         * than it hands off: a stream, counted by bytes from here. */
        g->util = 1.5;
        PlanGroup third = next;
        policy_trial_step(&p, g, &next, &next, SEC_NS + 2 * WINDOW_NS, false, &third);
        assert_int_equal(third.trial.windows, TRIAL_BURN_IN_WINDOWS);
        assert_int_equal(third.trial.measure, TRIAL_BY_BYTES);
        /* No longer overlapping, the weighed windows still count bytes: window 2, the
         * kernel's, is the first weighed, at its 240k bytes/s. */
        g->util = 1.0;
        PlanGroup fourth = third;
        policy_trial_step(&p, g, &third, &third, SEC_NS + 3 * WINDOW_NS, false, &fourth);
        assert_int_equal(fourth.trial.measure, TRIAL_BY_BYTES);
        assert_int_equal(fourth.trial.kernel.windows, 1);
        assert_true(fabs(fourth.trial.kernel.rate - 240000) < 1e-6);
        /* Not the other way: a trial by bytes stays one when that window shows no overlap
         * (the kernel had not spread it yet). */
        PlanGroup second = fresh, after = fresh;
        policy_trial_step(&p, g, &fresh, &fresh, SEC_NS + WINDOW_NS, false, &second);
        policy_trial_step(&p, g, &second, &second, SEC_NS + 2 * WINDOW_NS, false, &after);
        assert_int_equal(after.trial.windows, TRIAL_BURN_IN_WINDOWS);
        assert_int_equal(after.trial.measure, TRIAL_BY_BYTES);
        /* A re-check keeps its verdict's measure, whatever the kernel's first window shows. */
        PlanGroup recheck = next;
        recheck.trial.recheck = true;
        g->util = 1.5;
        PlanGroup rechecked = recheck;
        policy_trial_step(&p, g, &recheck, &recheck, SEC_NS + 2 * WINDOW_NS, false, &rechecked);
        assert_int_equal(rechecked.trial.windows, TRIAL_BURN_IN_WINDOWS);
        assert_int_equal(rechecked.trial.measure, TRIAL_BY_HANDOFFS);
        scenario_done(&s);
}

/* Two busy tasks the kernel happened to leave on one CPU at the tick (where
 * they last ran) still ran 1.54 CPUs' worth: a stream, not tried. */
static void test_pair_overlap_not_hidden_by_ran_on(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-vm2", 0.0);
        CpuSet one;
        cpuset_zero(&one);
        cpuset_set(&one, 1);
        Group *g = add_group(&s, GROUP_PAIR, 2, 1.54, &one);
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        assert_false(pg_of(plan, g)->managed);
        assert_non_null(strstr(pg_of(plan, g)->reason, "max_overlap_pct"));
        plan_free(plan);
        /* Pinned to one CPU by its owner, it cannot show overlap: placed keeps it there. */
        g->cpus = one;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_true(pg_of(plan, g)->managed);
        plan_free(plan);
        scenario_done(&s);
}

/* A pair that loses when packed is handed back at the verdict, not tried
 * again before its back-off, then tried once more, with a longer back-off
 * after a second loss: no flapping. One that wins stays. */
static void test_trial_revert_and_backoff(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        Fig kernel = { 30000, 0.96, 0, 10, 0 };
        Fig loses = { 20000, 0.96, 0, 10, 0 }, wins = { 90000, 0.96, 0, 10, 0 };
        scenario_init(&s, "topo-vm2", 0.0);
        Group *g = add_group(&s, GROUP_PAIR, 2, 0.96, NULL);
        Plan *plan = NULL;
        uint64_t now = SEC_NS;
        assert_int_equal(run_trial(&s, g, &p, &plan, &now, &loses, &kernel), 6);
        assert_false(pg_of(plan, g)->managed); /* the dwell does not hold a trial's revert */
        assert_int_equal(pg_of(plan, g)->trial.verdict, TRIAL_REVERTED);
        uint64_t retry = pg_of(plan, g)->trial.retry_ns;
        assert_int_equal(retry, now + 30 * SEC_NS);

        /* Spread again: not tried before the back-off ends, past any dwell, nor
         * after a tick in which it looked solo (a stream's wakeups fall). */
        for (unsigned k = 1; now + SEC_NS < retry; k++) {
                now += SEC_NS;
                g->class = k == 2 ? GROUP_SOLO : GROUP_PAIR;
                plan = switch_tick(&s, g, &p, plan, now, &loses, &kernel);
                assert_false(pg_of(plan, g)->managed);
                assert_int_equal(pg_of(plan, g)->trial.verdict, TRIAL_REVERTED);
        }
        assert_non_null(strstr(pg_of(plan, g)->reason, "not tried again"));

        /* Tried once more, it loses again: the back-off doubles. */
        now = retry;
        (void)run_trial(&s, g, &p, &plan, &now, &loses, &kernel);
        assert_false(pg_of(plan, g)->managed);
        assert_int_equal(pg_of(plan, g)->trial.reverts, 2);
        retry = pg_of(plan, g)->trial.retry_ns;
        assert_int_equal(retry, now + 60 * SEC_NS);
        g->class = GROUP_SOLO;
        plan = switch_tick(&s, g, &p, plan, now + SEC_NS, &loses, &kernel);
        g->class = GROUP_PAIR;
        plan = switch_tick(&s, g, &p, plan, now + 2 * SEC_NS, &loses, &kernel);
        assert_false(pg_of(plan, g)->managed);
        assert_int_equal(pg_of(plan, g)->trial.reverts, 2);
        plan = switch_tick(&s, g, &p, plan, retry - SEC_NS, &loses, &kernel);
        assert_false(pg_of(plan, g)->managed);

        /* This time it wins: kept, and the count of reverts starts over. */
        now = retry;
        (void)run_trial(&s, g, &p, &plan, &now, &wins, &kernel);
        assert_true(pg_of(plan, g)->managed);
        assert_int_equal(pg_of(plan, g)->trial.verdict, TRIAL_KEPT);
        assert_int_equal(pg_of(plan, g)->trial.reverts, 0);
        for (uint64_t k = 0; k < 20; k++) {
                now += SEC_NS;
                plan = switch_tick(&s, g, &p, plan, now, &wins, &kernel);
                assert_true(pg_of(plan, g)->managed);
                assert_true(plan_group_applied(pg_of(plan, g)));
        }
        plan_free(plan);
        scenario_done(&s);
}

/* Power-first at low load: pairs that ran all over a two-socket machine join
 * the consolidated work, so the other LLCs and the other package can sleep. */
static void test_power_first_consolidates_pairs(void **state) {
        static const char *const ran[] = { "8,9", "40,41", "70,71", "100,101", "20,21", "120,121" };
        Scenario s;
        Profile p = profile("power-first");
        scenario_init(&s, "topo-epyc2s", 0.02);
        Group *pairs[ELEMENTSOF(ran)];
        for (size_t i = 0; i < ELEMENTSOF(ran); i++) {
                CpuSet r = set_of(ran[i]);
                pairs[i] = add_group(&s, GROUP_PAIR, 2, 0.3, &r);
        }
        Group *mesh = add_group(&s, GROUP_MESH, 10, 0.8, NULL);
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        const CpuSet *hk = &plan->slice_cpus[PLAN_SLICE_SYSTEM];
        assert_false(cpuset_is_empty(hk));
        CpuSet used;
        cpuset_zero(&used);
        for (size_t i = 0; i < ELEMENTSOF(ran); i++) {
                const PlanGroup *pg = pg_of(plan, pairs[i]);
                assert_true(pg->managed);
                assert_int_equal(cpuset_count(&pg->cpus), 1);
                assert_true(cpuset_is_subset(&pg->cpus, hk));
                cpuset_or(&used, &used, &pg->cpus);
        }
        /* Light pairs share CPUs within the headroom: three CPUs for six. */
        assert_int_equal(cpuset_count(&used), 3);
        /* All of it, the mesh too, in one LLC of one package. */
        cpuset_or(&used, &used, &pg_of(plan, mesh)->cpus);
        assert_int_equal(units_touched(s.t, &used), 1);
        int pkg = s.t->cpus[cpuset_first(&used)].package;
        CPUSET_FOREACH (c, &used)
                assert_int_equal(s.t->cpus[c].package, pkg);
        plan_free(plan);

        /* Balanced leaves each pair where it ran. */
        Profile bal = profile("balanced");
        plan = decide(&s, &bal, NULL, SEC_NS);
        CpuSet where = set_of("8-9");
        assert_true(cpuset_is_subset(&pg_of(plan, pairs[0])->cpus, &where));
        plan_free(plan);
        scenario_done(&s);
}

static void test_pair_same_core_smt(void **state) {
        Scenario s;
        Profile p = profile("latency-first");
        scenario_init(&s, "topo-epyc2s", 0.0);
        CpuSet ran = set_of("3,70");
        Group *g = add_group(&s, GROUP_PAIR, 2, 0.5, &ran);
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        const PlanGroup *pg = pg_of(plan, g);
        assert_true(pg->managed);
        int cpu = cpuset_first(&pg->cpus);
        int core = s.t->cpus[cpu].core;
        assert_true(cpuset_equal(&pg->cpus, &s.t->cores[core].cpus)); /* the SMT siblings */
        assert_int_equal(cpuset_count(&pg->cpus), 2);
        /* Latency-first caps idle exit latency where the pair runs. */
        CPUSET_FOREACH (c, &pg->cpus)
                assert_int_equal(plan->idle_max_exit_latency_us[c],
                                 (int)p.idle_max_exit_latency_us);
        assert_int_equal(plan->idle_max_exit_latency_us[100], PLAN_NO_IDLE_CAP);
        plan_free(plan);
        scenario_done(&s);
}

static void test_pairs_do_not_share_a_full_cpu(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-vm2", 0.0);
        Group *g[3];
        for (int i = 0; i < 3; i++)
                g[i] = add_group(&s, GROUP_PAIR, 2, 0.7, NULL);
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        unsigned managed = 0;
        CpuSet used;
        cpuset_zero(&used);
        for (int i = 0; i < 3; i++) {
                const PlanGroup *pg = pg_of(plan, g[i]);
                if (!pg->managed)
                        continue;
                managed++;
                assert_int_equal(cpuset_count(&pg->cpus), 1);
                assert_false(cpuset_intersects(&used, &pg->cpus)); /* 0.7 + 0.7 > 1 CPU */
                cpuset_or(&used, &used, &pg->cpus);
        }
        assert_int_equal(managed, 2);
        plan_free(plan);
        scenario_done(&s);
}

/*
 * Issue 23: on a 250-CPU machine at 15% load, two pairs that both ran on
 * CPU 15 (0.69 and 0.43 of a CPU; the kernel packed them there) were both
 * placed on it: the second one's check asked for half its need free, and
 * 0.69 + 0.215 fits. Groups placed earlier in the plan count at their full
 * need: the second goes where it has room, as before the trials.
 */
static Topology *uniform_250(void) {
        Topology *t = NULL;
        assert_int_equal(topo_new_uniform(2, 5, 25, 1, &t), 0);
        assert_int_equal(cpuset_count(&t->online), 250);
        return t;
}

static void test_pairs_do_not_stack_past_capacity(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        memset(&s, 0, sizeof(s));
        s.t = uniform_250();
        s.loads = calloc(s.t->n_cpus, sizeof(CpuLoad));
        assert_non_null(s.loads);
        for (unsigned c = 0; c < s.t->n_cpus; c++)
                s.loads[c].busy = 0.15;
        s.next_id = 100;
        CpuSet fifteen = set_of("15");
        Group *a = add_group(&s, GROUP_PAIR, 2, 0.69, &fifteen);
        Group *b = add_group(&s, GROUP_PAIR, 2, 0.43, &fifteen);
        assert_true(s.loads[15].busy >= 1.0); /* 0.15 + 0.69 + 0.43, capped */

        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        const PlanGroup *pa = pg_of(plan, a), *pb = pg_of(plan, b);
        assert_true(pa->managed);
        assert_true(pb->managed);
        assert_int_equal(cpuset_count(&pa->cpus), 1);
        assert_int_equal(cpuset_count(&pb->cpus), 1);
        assert_true(cpuset_isset(&pa->cpus, 15)); /* the first stays where it ran */
        assert_false(cpuset_intersects(&pa->cpus, &pb->cpus));
        plan_free(plan);

        /* Both placed on CPU 15 by an earlier plan: past the dwell, the second moves. */
        Plan *stacked = decide(&s, &p, NULL, SEC_NS);
        PlanGroup *sb = (PlanGroup *)plan_find_group(stacked, b->id);
        sb->cpus = fifteen;
        sb->trial.verdict = TRIAL_KEPT;
        stacked->groups[0].trial.verdict = TRIAL_KEPT;
        plan = decide(&s, &p, stacked, 60 * SEC_NS);
        pa = pg_of(plan, a);
        pb = pg_of(plan, b);
        assert_true(pa->managed && pb->managed);
        assert_true(cpuset_isset(&pa->cpus, 15));
        assert_false(cpuset_intersects(&pa->cpus, &pb->cpus));
        plan_free(plan);
        plan_free(stacked);

        /* Lighter pairs that fit together still share the CPU they ran on. */
        a->util = 0.3;
        b->util = 0.25;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_true(cpuset_isset(&pg_of(plan, a)->cpus, 15));
        assert_true(cpuset_isset(&pg_of(plan, b)->cpus, 15));
        plan_free(plan);
        scenario_done(&s);

        /* With no room elsewhere they may still share: the trial judges it. */
        scenario_init(&s, "topo-vm2", 0.0);
        CpuSet zero = set_of("0");
        a = add_group(&s, GROUP_PAIR, 2, 0.69, &zero);
        b = add_group(&s, GROUP_PAIR, 2, 0.43, &zero);
        s.loads[1].busy = 0.9;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_true(cpuset_equal(&pg_of(plan, a)->cpus, &zero));
        assert_true(cpuset_equal(&pg_of(plan, b)->cpus, &zero));
        plan_free(plan);
        scenario_done(&s);
}

/* ---- hysteresis and feedback ---- */

static void test_dwell_and_gain(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-epyc2s", 0.0);
        CpuSet ran = set_of("8,9");
        Group *g = add_group(&s, GROUP_PAIR, 2, 0.5, &ran);
        Plan *a = decide(&s, &p, NULL, SEC_NS);
        int cpu = cpuset_first(&pg_of(a, g)->cpus);
        int other = cpu == 8 ? 9 : 8;

        /* Its CPU becomes busier: within the dwell nothing moves. */
        s.loads[cpu].busy += 0.4;
        Plan *b = decide(&s, &p, a, SEC_NS + (p.dwell_ms - 1) * 1000000ULL);
        assert_true(plan_equal(a, b));
        /* After the dwell it moves: the gain (40% of a CPU) passes min_gain_pct. */
        Plan *c = decide(&s, &p, b, SEC_NS + (p.dwell_ms + 1) * 1000000ULL);
        assert_true(cpuset_isset(&pg_of(c, g)->cpus, other));
        assert_int_equal(pg_of(c, g)->since_ns, SEC_NS + (p.dwell_ms + 1) * 1000000ULL);

        /* A gain below min_gain_pct does not move it back. */
        s.loads[cpu].busy -= 0.4;
        s.loads[other].busy += (p.min_gain_pct - 1) / 100.0;
        Plan *d = decide(&s, &p, c, 60 * SEC_NS);
        assert_true(plan_equal(c, d));
        plan_free(a);
        plan_free(b);
        plan_free(c);
        plan_free(d);
        scenario_done(&s);
}

/* The plan once the first placements passed their trial: each measured
 * twice the handoffs placed as left to the kernel, kept after the first pair
 * and trial_ticks windows of 100 ms from 1 s. */
static Plan *kept_after_trial(Scenario *s, const Profile *p) {
        Plan *plan = decide(s, p, NULL, SEC_NS);
        for (unsigned k = 0; k < TRIAL_BURN_IN_WINDOWS + p->trial_ticks; k++) {
                for (unsigned i = 0; i < s->n_groups; i++) {
                        const PlanGroup *pg = plan_find_group(plan, s->groups[i].id);
                        s->groups[i].handoff_rate = pg && plan_group_applied(pg) ? 2000 : 1000;
                }
                Plan *next = decide(s, p, plan, SEC_NS + (k + 1) * 100000000ULL);
                plan_free(plan);
                plan = next;
        }
        for (unsigned i = 0; i < plan->n_groups; i++)
                if (plan->groups[i].managed)
                        assert_int_equal(plan->groups[i].trial.verdict, TRIAL_KEPT);
        /* Kept, each runs at its placed figure from here (the last window was the kernel's). */
        for (unsigned i = 0; i < s->n_groups; i++) {
                const PlanGroup *pg = plan_find_group(plan, s->groups[i].id);
                s->groups[i].handoff_rate = pg && plan_group_applied(pg) ? 2000 : 1000;
        }
        return plan;
}

static void test_feedback_widens_next_tick(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-epyc2s", 0.0);
        CpuSet ran = set_of("8,72");
        Group *g = add_group(&s, GROUP_PAIR, 2, 0.5, &ran);
        Plan *a = kept_after_trial(&s, &p);
        assert_int_equal(cpuset_count(&pg_of(a, g)->cpus), 1);

        g->runq_delay_us = p.runq_delay_budget_us + 1;
        Plan *b = decide(&s, &p, a, 4 * SEC_NS); /* within dwell: feedback overrides */
        const PlanGroup *pb = pg_of(b, g);
        assert_true(pb->managed);
        assert_true(cpuset_is_subset(&pg_of(a, g)->cpus, &pb->cpus));
        assert_true(cpuset_count(&pb->cpus) > 1);
        assert_int_equal(pb->widen, 1);
        /* Balanced caps idle states where a group is delayed. */
        CPUSET_FOREACH (c, &pb->cpus)
                assert_int_equal(b->idle_max_exit_latency_us[c], (int)p.idle_max_exit_latency_us);

        /* Mesh: one more LLC. */
        Scenario m;
        scenario_init(&m, "topo-epyc2s", 0.0);
        Group *mesh = add_group(&m, GROUP_MESH, 40, 3.0, NULL);
        Plan *ma = kept_after_trial(&m, &p);
        unsigned before = units_touched(m.t, &pg_of(ma, mesh)->cpus);
        mesh->runq_delay_us = p.runq_delay_budget_us * 2;
        Plan *mb = decide(&m, &p, ma, 4 * SEC_NS);
        assert_int_equal(units_touched(m.t, &pg_of(mb, mesh)->cpus), before + 1);
        plan_free(a);
        plan_free(b);
        plan_free(ma);
        plan_free(mb);
        scenario_done(&s);
        scenario_done(&m);
}

/* ---- meshes and fan-outs ---- */

static void test_mesh_homes_distinct_or_packed(void **state) {
        Scenario s;
        scenario_init(&s, "topo-epyc2s", 0.02);
        Group *g[4];
        for (int i = 0; i < 4; i++)
                g[i] = add_group(&s, GROUP_MESH, 40, 1.5, NULL);

        Profile bal = profile("balanced");
        Plan *plan = decide(&s, &bal, NULL, SEC_NS);
        CpuSet used;
        cpuset_zero(&used);
        for (int i = 0; i < 4; i++) {
                const PlanGroup *pg = pg_of(plan, g[i]);
                assert_true(pg->managed);
                assert_int_equal(units_touched(s.t, &pg->cpus), 1); /* one home LLC */
                assert_false(cpuset_intersects(&used, &pg->cpus));  /* distinct homes */
                cpuset_or(&used, &used, &pg->cpus);
        }
        plan_free(plan);

        Profile pow = profile("power-first");
        plan = decide(&s, &pow, NULL, SEC_NS);
        cpuset_zero(&used);
        for (int i = 0; i < 4; i++)
                cpuset_or(&used, &used, &pg_of(plan, g[i])->cpus);
        /* 6 CPUs' worth fits in one 8-CPU LLC with 20% headroom. */
        assert_int_equal(units_touched(s.t, &used), 1);
        plan_free(plan);
        scenario_done(&s);
}

static void test_fanout_spread_vs_pack(void **state) {
        Scenario s;
        scenario_init(&s, "topo-epyc2s", 0.02);
        Group *g = add_group(&s, GROUP_FANOUT, 65, 20.0, NULL);
        Profile bal = profile("balanced"), pow = profile("power-first");
        Plan *a = decide(&s, &bal, NULL, SEC_NS), *b = decide(&s, &pow, NULL, SEC_NS);
        const PlanGroup *spread = pg_of(a, g), *pack = pg_of(b, g);
        assert_true(spread->managed);
        assert_true(pack->managed);
        /* Spread: an idle CPU for each busy worker (21) with headroom. */
        assert_true(cpuset_count(&spread->cpus) >= 21);
        assert_true(cpuset_count(&pack->cpus) >= 20);
        assert_true(units_touched(s.t, &pack->cpus) <= units_touched(s.t, &spread->cpus));
        plan_free(a);
        plan_free(b);
        scenario_done(&s);

        /* The VM: 8 workers on 2 CPUs need the whole machine -> the kernel decides. */
        scenario_init(&s, "topo-vm2", 0.0);
        g = add_group(&s, GROUP_FANOUT, 9, 1.9, NULL);
        a = decide(&s, &bal, NULL, SEC_NS);
        assert_false(pg_of(a, g)->managed);
        plan_free(a);
        scenario_done(&s);
}

static void test_mesh_on_vm_left_to_kernel(void **state) {
        /* hackbench on the 2-CPU VM: confining it to one CPU halves it. */
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-vm2", 0.0);
        Group *g = add_group(&s, GROUP_MESH, 40, 1.8, NULL);
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        assert_false(pg_of(plan, g)->managed);
        plan_free(plan);

        /* In its ramp it ran 0.6 CPUs' worth, and 6 of its tasks waited on
         * average: the demand is not 0.6, and one CPU would halve it. */
        g->util = 0.6;
        s.loads[0].busy = s.loads[1].busy = 0.3;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_true(pg_of(plan, g)->managed);
        plan_free(plan);
        g->runq_wait = 6.0;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_false(pg_of(plan, g)->managed);
        assert_non_null(strstr(pg_of(plan, g)->reason, "6.0 waited"));
        plan_free(plan);
        scenario_done(&s);
}

/*
 * The dwell holds what placed did, not a group it never placed: a new pair's
 * first decision comes at a quick tick from a window of a few milliseconds,
 * and a leave on that glimpse (its tasks ran at once for half a CPU) would
 * hold it spread for the dwell, 5 s. Measured again 100 ms later, it is
 * placed. A group placed before and then left to the kernel (too light)
 * stays left for the dwell, however busy it gets again.
 */
static void test_dwell_holds_what_placed_did(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        Fig glimpse = { 130, 1.5, 0, 5, 0 }, spread = { 120, 0.92, 0, 5, 0 };
        Fig placed = { 200, 0.95, 0, 5, 0 }, light = { 10, 0.01, 0, 5, 0 };
        scenario_init(&s, "topo-vm2", 0.0);
        Group *g = add_group(&s, GROUP_PAIR, 2, 1.5, NULL);
        g->wake_rate = 1000;
        Plan *plan = switch_tick(&s, g, &p, NULL, SEC_NS, &glimpse, &glimpse);
        assert_false(pg_of(plan, g)->managed);
        assert_non_null(strstr(pg_of(plan, g)->reason, "ran at once for 50% of a CPU"));
        plan = switch_tick(&s, g, &p, plan, SEC_NS + 100 * 1000000ULL, &spread, &spread);
        assert_true(pg_of(plan, g)->managed);

        /* Kept for its gain, then, past the dwell, left: too light. */
        uint64_t now = SEC_NS + 100 * 1000000ULL;
        (void)run_trial(&s, g, &p, &plan, &now, &placed, &spread);
        assert_int_equal(pg_of(plan, g)->trial.verdict, TRIAL_KEPT);
        g->wake_rate = 10;
        now += (uint64_t)p.dwell_ms * 1000000ULL + SEC_NS;
        plan = switch_tick(&s, g, &p, plan, now, &light, &light);
        assert_false(pg_of(plan, g)->managed);
        assert_non_null(strstr(pg_of(plan, g)->reason, "under min_wakeups_per_sec"));
        /* Busy again within the dwell: that hand-back stands. */
        g->wake_rate = 1000;
        plan = switch_tick(&s, g, &p, plan, now + SEC_NS, &spread, &spread);
        assert_false(pg_of(plan, g)->managed);
        plan = switch_tick(&s, g, &p, plan, now + (uint64_t)p.dwell_ms * 1000000ULL + SEC_NS,
                           &spread, &spread);
        assert_true(pg_of(plan, g)->managed);
        plan_free(plan);
        scenario_done(&s);
}

/* A group not yet measured over a whole tick looks idle; placing it on
 * that guess pinned a hackbench mesh to one CPU for the whole dwell. */
static void test_unmeasured_waits(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-epyc2s", 0.02);
        CpuSet ran = set_of("8,9");
        Group *pair = add_group(&s, GROUP_PAIR, 2, 0.0, &ran);
        Group *fan = add_group(&s, GROUP_FANOUT, 9, 0.0, NULL);
        pair->unmeasured = fan->unmeasured = true;
        Plan *a = decide(&s, &p, NULL, SEC_NS);
        assert_false(pg_of(a, pair)->managed);
        assert_false(pg_of(a, fan)->managed);
        assert_non_null(strstr(pg_of(a, pair)->reason, "not measured"));

        /* Measured: placed. */
        pair->unmeasured = fan->unmeasured = false;
        pair->util = 0.5;
        fan->util = 4.0;
        Plan *b = decide(&s, &p, a, 2 * SEC_NS);
        assert_true(pg_of(b, pair)->managed);
        assert_true(pg_of(b, fan)->managed);

        /* A new member makes it unmeasured again: the placement stands,
         * even after the dwell. */
        pair->unmeasured = true;
        pair->util = 0.0;
        Plan *c = decide(&s, &p, b, 60 * SEC_NS);
        assert_true(pg_of(c, pair)->managed);
        assert_true(cpuset_equal(&pg_of(c, pair)->cpus, &pg_of(b, pair)->cpus));
        plan_free(a);
        plan_free(b);
        plan_free(c);
        scenario_done(&s);
}

static void test_limits_respected(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-epyc2s", 0.0);
        CpuSet ran = set_of("0,1");
        add_group(&s, GROUP_PAIR, 2, 0.3, &ran);
        add_group(&s, GROUP_MESH, 40, 2.0, NULL);
        CpuSet limits[2] = { set_of("16-23"), set_of("64-79") };
        s.limits = limits;
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        for (int i = 0; i < 2; i++) {
                const PlanGroup *pg = pg_of(plan, &s.groups[i]);
                assert_true(pg->managed);
                assert_true(cpuset_is_subset(&pg->cpus, &limits[i]));
        }
        plan_free(plan);
        check_invariants(&s, &p, limits);
        scenario_done(&s);
}

/* ---- slices, idle ---- */

static void test_consolidation(void **state) {
        Scenario s;
        Profile p = profile("power-first");
        scenario_init(&s, "topo-epyc2s", 0.03);
        Group *mesh = add_group(&s, GROUP_MESH, 40, 2.0, NULL);
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        const CpuSet *hk = &plan->slice_cpus[PLAN_SLICE_SYSTEM];
        assert_false(cpuset_is_empty(hk));
        assert_false(cpuset_equal(hk, &s.t->online));
        assert_true(cpuset_count(hk) >= p.housekeeping_min_cpus);
        assert_true(cpuset_equal(hk, &plan->slice_cpus[PLAN_SLICE_USER]));
        assert_true(cpuset_is_subset(&pg_of(plan, mesh)->cpus, hk));
        /* Nothing capped in power-first. */
        for (unsigned c = 0; c < plan->n_cpus; c++)
                assert_int_equal(plan->idle_max_exit_latency_us[c], PLAN_NO_IDLE_CAP);
        plan_free(plan);

        /* High load: no confinement. */
        for (unsigned c = 0; c < s.t->n_cpus; c++)
                s.loads[c].busy = 0.6;
        plan = decide(&s, &p, NULL, SEC_NS);
        assert_true(cpuset_is_empty(&plan->slice_cpus[PLAN_SLICE_SYSTEM]));
        plan_free(plan);

        /* Balanced never confines. */
        Profile bal = profile("balanced");
        for (unsigned c = 0; c < s.t->n_cpus; c++)
                s.loads[c].busy = 0.01;
        plan = decide(&s, &bal, NULL, SEC_NS);
        assert_true(cpuset_is_empty(&plan->slice_cpus[PLAN_SLICE_MACHINE]));
        plan_free(plan);
        scenario_done(&s);
}

/* ---- quick ticks (policy.h, "Quick ticks") ---- */

/* The JSON of one plan entry, to compare entries byte for byte. */
static char *entry_json(const PlanGroup *pg) {
        Plan *one = NULL;
        char *json = NULL;
        assert_int_equal(plan_new(1, 0, &one), 0);
        one->groups[one->n_groups++] = *pg;
        assert_int_equal(plan_to_json(one, &json), 0);
        plan_free(one);
        return json;
}

static void assert_same_entry(const PlanGroup *a, const PlanGroup *b) {
        _cleanup_free_ char *x = entry_json(a), *y = entry_json(b);
        assert_string_equal(x, y);
}

static Plan *decide_focus(Scenario *s, const Profile *p, const Plan *prev, uint64_t now,
                          const bool *focus) {
        PolicyInput in = input(s, p, prev, now);
        in.focus = focus;
        Plan *plan = NULL;
        assert_int_equal(policy_decide(&in, &plan), 0);
        return plan;
}

/*
 * A quick tick decides the groups in focus (new ones, one on trial) as a
 * full decision would, keeps the others' entries byte for byte and their
 * load where it is, and leaves a new group out of focus waiting.
 */
static void test_quick_tick_focus(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-epyc2s", 0.05);
        CpuSet r8 = set_of("8"), r9 = set_of("9");
        Group *on_trial = add_group(&s, GROUP_PAIR, 2, 0.6, &r8);
        Group *kept = add_group(&s, GROUP_PAIR, 2, 0.3, &r9);
        Group *mesh = add_group(&s, GROUP_MESH, 20, 1.5, NULL);
        Plan *a = decide(&s, &p, NULL, SEC_NS);
        assert_int_equal(pg_of(a, on_trial)->trial.verdict, TRIAL_RUNNING);
        assert_int_equal(pg_of(a, on_trial)->seen_ns, SEC_NS);

        /* 200 ms later: a pair that ran on CPU 8 too, a mesh, and one more pair. */
        Group *new_pair = add_group(&s, GROUP_PAIR, 2, 0.5, &r8);
        Group *new_mesh = add_group(&s, GROUP_MESH, 10, 1.0, NULL);
        Group *later = add_group(&s, GROUP_PAIR, 2, 0.2, &r9);
        bool focus[MAX_GROUPS] = { false };
        focus[0] = true; /* on trial */
        focus[3] = focus[4] = true;
        uint64_t now = SEC_NS + 200000000ULL;
        Plan *full = decide(&s, &p, a, now), *quick = decide_focus(&s, &p, a, now, focus);

        const Group *decided[] = { on_trial, new_pair, new_mesh };
        for (size_t i = 0; i < ELEMENTSOF(decided); i++)
                assert_same_entry(pg_of(quick, decided[i]), pg_of(full, decided[i]));
        assert_same_entry(pg_of(quick, kept), pg_of(a, kept));
        assert_same_entry(pg_of(quick, mesh), pg_of(a, mesh));
        /* ... where a full decision would have measured their trials a tick on. */
        assert_int_equal(pg_of(a, kept)->trial.windows, 0);
        assert_int_equal(pg_of(full, kept)->trial.windows, 1);
        assert_int_equal(pg_of(quick, kept)->trial.windows, 0);
        /* The new pair saw the first one's claim on CPU 8 (0.6 + 0.5 > 1). */
        assert_true(pg_of(quick, new_pair)->managed);
        assert_false(cpuset_isset(&pg_of(quick, new_pair)->cpus, 8));
        assert_true(pg_of(quick, new_mesh)->managed);
        assert_int_equal(pg_of(quick, on_trial)->seen_ns, SEC_NS);
        assert_int_equal(pg_of(quick, new_pair)->seen_ns, now);

        /* Out of focus and new: left to the kernel until the next full decision. */
        assert_true(pg_of(full, later)->managed);
        const PlanGroup *w = pg_of(quick, later);
        assert_false(w->managed);
        assert_true(w->waiting);
        assert_int_equal(w->seen_ns, now);
        assert_non_null(strstr(w->reason, "until the next"));
        Plan *next = decide(&s, &p, quick, now + SEC_NS);
        assert_true(pg_of(next, later)->managed);
        assert_int_equal(pg_of(next, later)->seen_ns, now);

        /* A plan written before seen_ns: the group was seen by its decision. */
        PlanGroup *old = (PlanGroup *)plan_find_group(a, kept->id);
        old->seen_ns = 0;
        Plan *upgraded = decide(&s, &p, a, now);
        assert_int_equal(pg_of(upgraded, kept)->seen_ns, old->since_ns);
        plan_free(upgraded);
        old->seen_ns = SEC_NS;

        /* No focus given: every group decided, as before. */
        Plan *all = decide_focus(&s, &p, a, now, NULL);
        for (unsigned i = 0; i < s.n_groups; i++)
                assert_same_entry(pg_of(all, &s.groups[i]), pg_of(full, &s.groups[i]));
        plan_free(all);
        plan_free(next);
        plan_free(full);
        plan_free(quick);
        plan_free(a);
        scenario_done(&s);
}

/* A quick tick keeps power-first's confinement, widened for what it places outside. */
static void test_quick_tick_slices(void **state) {
        Scenario s;
        Profile p = profile("power-first");
        scenario_init(&s, "topo-epyc2s", 0.03);
        add_group(&s, GROUP_MESH, 10, 1.0, NULL);
        Plan *a = decide(&s, &p, NULL, SEC_NS);
        const CpuSet *hk = &a->slice_cpus[PLAN_SLICE_SYSTEM];
        assert_false(cpuset_is_empty(hk));

        /* The load rises past consolidate_below_load_pct: a full decision would
         * unconfine (after the dwell), a quick tick keeps the confinement. */
        for (unsigned c = 0; c < s.t->n_cpus; c++)
                s.loads[c].busy = 0.6;
        Group *g = add_group(&s, GROUP_PAIR, 2, 0.2, NULL);
        bool focus[MAX_GROUPS] = { false };
        focus[1] = true;
        uint64_t now = 20 * SEC_NS;
        Plan *full = decide(&s, &p, a, now), *quick = decide_focus(&s, &p, a, now, focus);
        assert_true(cpuset_is_empty(&full->slice_cpus[PLAN_SLICE_SYSTEM]));
        const PlanGroup *pg = pg_of(quick, g);
        assert_true(pg->managed);
        CpuSet want = *hk;
        cpuset_or(&want, &want, &pg->cpus);
        for (int sl = 0; sl < _PLAN_SLICE_MAX; sl++)
                assert_true(cpuset_equal(&quick->slice_cpus[sl], &want));
        if (cpuset_is_subset(&pg->cpus, hk)) {
                assert_int_equal(quick->slices_since_ns, a->slices_since_ns);
                assert_string_equal(quick->slice_reason, a->slice_reason);
        }
        plan_free(full);
        plan_free(quick);
        plan_free(a);
        scenario_done(&s);
}

/* ---- JSON ---- */

static void test_json_round_trip(void **state) {
        Scenario s;
        Profile p = profile("latency-first");
        scenario_init(&s, "topo-epyc2s", 0.05);
        build(&s, MIX);
        s.tasks[0][0] = (TaskId){ .tid = 1234, .start_time = 99999 };
        s.tasks[0][1] = (TaskId){ .tid = 1235, .start_time = 100000 };
        s.groups[0].tasks = s.tasks[0];
        s.groups[0].n_tasks = 2;
        for (unsigned i = 1; i < s.n_groups; i++)
                s.groups[i].n_tasks = 0; /* only the first group has task ids here */
        Plan *plan = decide(&s, &p, NULL, SEC_NS);

        _cleanup_free_ char *json = NULL, *json2 = NULL;
        assert_int_equal(plan_to_json(plan, &json), 0);
        Plan *back = NULL;
        assert_int_equal(plan_from_json(json, &back), 0);
        assert_true(plan_equal(plan, back));
        assert_string_equal(back->profile, "latency-first");
        assert_string_equal(back->groups[0].reason, plan->groups[0].reason);
        assert_int_equal(back->groups[0].seen_ns, SEC_NS);
        assert_non_null(strstr(json, "\"seen_ns\":1000000000"));
        assert_int_equal(plan_from_json("{\"groups\": 3}", &back), -EINVAL);

        /* Why a trial handed back: "back"; a plan that says only "tie" (before it)
         * reads as a tie; a "back" placed does not know is bad input. */
        {
                _cleanup_free_ char *text = NULL;
                plan->groups[0].trial =
                        (PlanTrial){ .verdict = TRIAL_REVERTED, .back = TRIAL_BACK_TIE };
                assert_int_equal(plan_to_json(plan, &text), 0);
                char *at = strstr(text, "\"back\":\"tie\"");
                assert_non_null(at);
                Plan *old = NULL, *bad = NULL;
                memcpy(at, "\"tie\":true  ", strlen("\"back\":\"tie\""));
                assert_int_equal(plan_from_json(text, &old), 0);
                assert_int_equal(old->groups[0].trial.back, TRIAL_BACK_TIE);
                plan_free(old);
                memcpy(at, "\"back\":\"wow\"", strlen("\"back\":\"tie\""));
                assert_int_equal(plan_from_json(text, &bad), -EINVAL);
                assert_null(bad);
                plan->groups[0].trial = (PlanTrial){ 0 };
        }
        assert_int_equal(plan_from_json("not json", &back), -EINVAL);

        PolicySnapshot snap = { .topology = (char *)"tests/fixtures/topo-epyc2s",
                                .now_ns = SEC_NS,
                                .groups = s.groups,
                                .n_groups = s.n_groups,
                                .loads = s.loads,
                                .n_loads = s.t->n_cpus,
                                .prev = plan };
        strcpy(snap.profile, "latency-first");
        assert_int_equal(policy_snapshot_to_json(&snap, &json2), 0);
        PolicySnapshot *rs = NULL;
        assert_int_equal(policy_snapshot_from_json(json2, &rs), 0);
        assert_string_equal(rs->topology, snap.topology);
        assert_int_equal(rs->n_groups, s.n_groups);
        assert_int_equal(rs->groups[0].n_tasks, 2);
        assert_int_equal(rs->groups[0].tasks[1].tid, 1235);
        assert_int_equal(rs->groups[0].tasks[1].start_time, 100000);
        assert_int_equal(rs->n_loads, s.t->n_cpus);
        assert_true(fabs(rs->loads[1].busy - s.loads[1].busy) < 1e-9);
        assert_true(plan_equal(rs->prev, plan));

        /* Groups that share their tasks (the model never writes them) are planned as
         * given: the policy counts tasks, it does not follow them. */
        {
                PolicySnapshot *shared = NULL;
                _cleanup_free_ char *text = NULL;
                for (unsigned i = 1; i < s.n_groups; i++) {
                        s.groups[i].tasks = s.tasks[0];
                        s.groups[i].n_tasks = 2;
                }
                assert_int_equal(policy_snapshot_to_json(&snap, &text), 0);
                assert_int_equal(policy_snapshot_from_json(text, &shared), 0);
                assert_int_equal(shared->groups[2].tasks[1].tid, 1235);
                PolicyInput sin = { .topo = s.t,
                                    .groups = shared->groups,
                                    .n_groups = shared->n_groups,
                                    .loads = shared->loads,
                                    .n_loads = shared->n_loads,
                                    .profile = &p,
                                    .now_ns = shared->now_ns };
                Plan *sp = NULL;
                assert_int_equal(policy_decide(&sin, &sp), 0);
                assert_int_equal(sp->n_groups, s.n_groups);
                plan_free(sp);
                policy_snapshot_free(shared);
                for (unsigned i = 1; i < s.n_groups; i++)
                        s.groups[i].n_tasks = 0;
        }

        /* Replaying the snapshot gives the same plan. */
        PolicyInput in = { .topo = s.t,
                           .groups = rs->groups,
                           .n_groups = rs->n_groups,
                           .loads = rs->loads,
                           .n_loads = rs->n_loads,
                           .profile = &p,
                           .now_ns = rs->now_ns };
        Plan *replay = NULL;
        assert_int_equal(policy_decide(&in, &replay), 0);
        assert_true(plan_equal(replay, plan));
        plan_free(replay);
        policy_snapshot_free(rs);
        plan_free(back);
        plan_free(plan);
        scenario_done(&s);
}

/* ---- rules (policy.h "Rules") ---- */

static GroupRule rule(const char *name, RuleAction a, const char *partner, const Group *with) {
        GroupRule r = { .action = a };
        snprintf(r.rule, sizeof(r.rule), "%s", name);
        if (partner)
                snprintf(r.partner, sizeof(r.partner), "%s", partner);
        if (with) {
                r.partner_group = with->id;
                r.has_partner_group = true;
        }
        return r;
}

static Plan *decide_rules(Scenario *s, const Profile *p, const Plan *prev, uint64_t now,
                          const GroupRule *rules) {
        PolicyInput in = input(s, p, prev, now);
        Profile latency = profile("latency-first");
        in.rules = rules;
        in.latency_profile = &latency;
        Plan *plan = NULL;
        assert_int_equal(policy_decide(&in, &plan), 0);
        return plan;
}

static void assert_rule(const PlanGroup *pg, const char *name, RuleAction a) {
        char prefix[128];
        snprintf(prefix, sizeof(prefix), "rule \"%s\" (%s): ", name, rule_action_to_string(a));
        assert_string_equal(pg->rule, name);
        assert_int_equal(pg->rule_action, a);
        if (strncmp(pg->reason, prefix, strlen(prefix)) != 0)
                fail_msg("reason \"%s\" does not start with \"%s\"", pg->reason, prefix);
}

/* ignore and never-pack: a pair every profile packs, and a mesh balanced
 * homes, are left to the kernel at once, also when placed before; ignore
 * also takes latency-first's idle caps away. */
static void test_rule_ignore_never_pack(void **state) {
        const char *profiles[] = { "power-first", "balanced", "latency-first" };
        for (size_t pi = 0; pi < ELEMENTSOF(profiles); pi++)
                for (RuleAction a = RULE_ACTION_IGNORE; a <= RULE_ACTION_NEVER_PACK;
                     a = a == RULE_ACTION_IGNORE ? RULE_ACTION_NEVER_PACK : _RULE_ACTION_MAX) {
                        Scenario s;
                        Profile p = profile(profiles[pi]);
                        scenario_init(&s, "topo-epyc2s", 0.05);
                        CpuSet ran = set_of("8,40"), mran = set_of("16-31");
                        Group *pair = add_group(&s, GROUP_PAIR, 2, 0.5, &ran);
                        Group *mesh = add_group(&s, GROUP_MESH, 10, 2.0, &mran);
                        Plan *before = decide(&s, &p, NULL, SEC_NS);
                        assert_true(pg_of(before, pair)->managed);

                        GroupRule rules[2] = { rule("quiet", a, NULL, NULL),
                                               rule("batch", a, NULL, NULL) };
                        Plan *plan = decide_rules(&s, &p, before, 2 * SEC_NS, rules);
                        const PlanGroup *pg = pg_of(plan, pair), *pm = pg_of(plan, mesh);
                        assert_false(pg->managed);
                        assert_false(pm->managed);
                        assert_rule(pg, "quiet", a);
                        assert_rule(pm, "batch", a);
                        assert_int_equal(pg->trial.verdict, TRIAL_NONE);
                        if (a == RULE_ACTION_IGNORE)
                                CPUSET_FOREACH (c, &ran)
                                        assert_int_equal(plan->idle_max_exit_latency_us[c],
                                                         PLAN_NO_IDLE_CAP);
                        /* stable: the next tick decides the same */
                        Plan *again = decide_rules(&s, &p, plan, 30 * SEC_NS, rules);
                        assert_true(plan_equal(plan, again));
                        assert_int_equal(pg_of(again, pair)->since_ns, pg->since_ns);
                        /* the rule gone, the profile decides again at once */
                        Plan *after = decide(&s, &p, again, 31 * SEC_NS);
                        assert_true(pg_of(after, pair)->managed);
                        assert_string_equal(pg_of(after, pair)->rule, "");
                        plan_free(before);
                        plan_free(plan);
                        plan_free(again);
                        plan_free(after);
                        scenario_done(&s);
                }
}

/* latency-critical under power-first: the pair gets latency-first's core
 * (SMT siblings), not a consolidated CPU, and latency-first's idle cap
 * there and where a latency-critical solo task ran, which power-first
 * alone never sets. */
static void test_rule_latency_critical(void **state) {
        Scenario s;
        Profile p = profile("power-first"), lf = profile("latency-first");
        scenario_init(&s, "topo-epyc2s", 0.02);
        CpuSet ran = set_of("3,70"), solo_ran = set_of("100");
        Group *pair = add_group(&s, GROUP_PAIR, 2, 0.5, &ran);
        Group *other = add_group(&s, GROUP_PAIR, 2, 0.5, &ran);
        Group *solo = add_group(&s, GROUP_SOLO, 1, 0.1, &solo_ran);

        Plan *plain = decide(&s, &p, NULL, SEC_NS);
        assert_int_equal(cpuset_count(&pg_of(plain, pair)->cpus), 1); /* power-first: one CPU */
        for (unsigned c = 0; c < plain->n_cpus; c++)
                assert_int_equal(plain->idle_max_exit_latency_us[c], PLAN_NO_IDLE_CAP);

        GroupRule rules[3] = { rule("rt-audio", RULE_ACTION_LATENCY_CRITICAL, NULL, NULL),
                               { .action = RULE_ACTION_NONE },
                               rule("rt-audio", RULE_ACTION_LATENCY_CRITICAL, NULL, NULL) };
        Plan *plan = decide_rules(&s, &p, NULL, SEC_NS, rules);
        const PlanGroup *pg = pg_of(plan, pair);
        assert_true(pg->managed);
        assert_rule(pg, "rt-audio", RULE_ACTION_LATENCY_CRITICAL);
        int core = s.t->cpus[cpuset_first(&pg->cpus)].core;
        assert_true(cpuset_equal(&pg->cpus, &s.t->cores[core].cpus));
        assert_int_equal(cpuset_count(&pg->cpus), 2);
        assert_int_equal(pg->trial.verdict, TRIAL_RUNNING); /* latency-first's trial */
        CPUSET_FOREACH (c, &pg->cpus)
                assert_int_equal(plan->idle_max_exit_latency_us[c],
                                 (int)lf.idle_max_exit_latency_us);
        assert_int_equal(plan->idle_max_exit_latency_us[100], (int)lf.idle_max_exit_latency_us);
        assert_false(pg_of(plan, solo)->managed);
        /* the group without a rule is still power-first's: one CPU, no cap */
        const PlanGroup *po = pg_of(plan, other);
        assert_int_equal(cpuset_count(&po->cpus), 1);
        assert_string_equal(po->rule, "");
        if (!cpuset_intersects(&po->cpus, &pg->cpus))
                assert_int_equal(plan->idle_max_exit_latency_us[cpuset_first(&po->cpus)],
                                 PLAN_NO_IDLE_CAP);
        assert_true(strstr(plan->idle_reason, "latency-critical") != NULL);
        plan_free(plain);
        plan_free(plan);
        scenario_done(&s);
}

/* pack-with: two pairs in different LLCs share one mask in one LLC (on the
 * 2-CPU VM: one CPU), not put on trial; a partner that is not running
 * leaves the group to the profile, under its rule's name. */
static void test_rule_pack_with(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-epyc2s", 0.05);
        CpuSet ra = set_of("8,9"), rb = set_of("40,41");
        Group *a = add_group(&s, GROUP_PAIR, 2, 0.3, &ra);
        Group *b = add_group(&s, GROUP_PAIR, 2, 0.3, &rb);
        Plan *plain = decide(&s, &p, NULL, SEC_NS);
        assert_int_equal(units_touched(s.t, &pg_of(plain, a)->cpus), 1);
        assert_false(cpuset_intersects(&pg_of(plain, a)->cpus, &pg_of(plain, b)->cpus));

        GroupRule rules[2] = { rule("client", RULE_ACTION_PACK_WITH, "server", b),
                               rule("server", RULE_ACTION_PACK_WITH, "client", a) };
        Plan *plan = decide_rules(&s, &p, NULL, SEC_NS, rules);
        const PlanGroup *pa = pg_of(plan, a), *pb = pg_of(plan, b);
        assert_true(pa->managed);
        assert_true(pb->managed);
        assert_true(cpuset_equal(&pa->cpus, &pb->cpus));
        assert_int_equal(units_touched(s.t, &pa->cpus), 1);
        assert_rule(pa, "client", RULE_ACTION_PACK_WITH);
        assert_rule(pb, "server", RULE_ACTION_PACK_WITH);
        assert_int_equal(pa->trial.verdict, TRIAL_NONE);
        Plan *again = decide_rules(&s, &p, plan, 60 * SEC_NS, rules);
        assert_true(plan_equal(plan, again));
        plan_free(again);
        plan_free(plain);
        plan_free(plan);

        /* one-sided: only the client names the server, whose own rule is latency-critical */
        GroupRule one[2] = { rule("client", RULE_ACTION_PACK_WITH, "server", b),
                             rule("server", RULE_ACTION_LATENCY_CRITICAL, NULL, NULL) };
        plan = decide_rules(&s, &p, NULL, SEC_NS, one);
        assert_true(cpuset_equal(&pg_of(plan, a)->cpus, &pg_of(plan, b)->cpus));
        assert_rule(pg_of(plan, b), "server", RULE_ACTION_LATENCY_CRITICAL);
        plan_free(plan);

        /* the partner is not running: decided as the profile says, rule named */
        GroupRule lonely[2] = { rule("client", RULE_ACTION_PACK_WITH, "server", NULL),
                                { .action = RULE_ACTION_NONE } };
        plan = decide_rules(&s, &p, NULL, SEC_NS, lonely);
        assert_true(pg_of(plan, a)->managed);
        assert_int_equal(cpuset_count(&pg_of(plan, a)->cpus), 1);
        assert_rule(pg_of(plan, a), "client", RULE_ACTION_PACK_WITH);
        plan_free(plan);
        scenario_done(&s);

        /* the 2-CPU VM: two light solo tasks packed onto one CPU */
        scenario_init(&s, "topo-vm2", 0.05);
        CpuSet r0 = set_of("0"), r1 = set_of("1");
        Group *x = add_group(&s, GROUP_SOLO, 1, 0.2, &r0);
        Group *y = add_group(&s, GROUP_SOLO, 1, 0.2, &r1);
        GroupRule vm[2] = { rule("x", RULE_ACTION_PACK_WITH, "y", y),
                            rule("y", RULE_ACTION_PACK_WITH, "x", x) };
        plan = decide_rules(&s, &p, NULL, SEC_NS, vm);
        assert_true(pg_of(plan, x)->managed);
        assert_int_equal(cpuset_count(&pg_of(plan, x)->cpus), 1);
        assert_true(cpuset_equal(&pg_of(plan, x)->cpus, &pg_of(plan, y)->cpus));
        plan_free(plan);
        scenario_done(&s);
}

/*
 * The 2-CPU VM, each CPU busy (0-1) besides: two light pairs, one on each
 * CPU, under rules "light-a" and "light-b" that pack each with the other.
 */
static void light_pairs(Scenario *s, double busy, GroupRule rules[2], Group **ret_a,
                        Group **ret_b) {
        scenario_init(s, "topo-vm2", busy);
        CpuSet r0 = set_of("0"), r1 = set_of("1");
        Group *a = add_group(s, GROUP_PAIR, 2, 0.05, &r0);
        Group *b = add_group(s, GROUP_PAIR, 2, 0.05, &r1);
        rules[0] = rule("light-a", RULE_ACTION_PACK_WITH, "light-b", b);
        rules[1] = rule("light-b", RULE_ACTION_PACK_WITH, "light-a", a);
        *ret_a = a;
        *ret_b = b;
}

/*
 * A pack-with set left to the kernel while one of its groups is not
 * measured yet is decided again at the next tick, whichever of its groups
 * comes first then: a follower left with it is waiting too, not a decision
 * that stands for the dwell. Here the unmeasured group comes back under a
 * new id (the model renames a group whose members changed), after its
 * follower; kept for the dwell, the follower held the set unplaced for 5 s.
 */
static void test_rule_pack_with_unmeasured(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        GroupRule rules[2];
        Group *a, *b;
        light_pairs(&s, 0.05, rules, &a, &b);
        a->unmeasured = true;
        Plan *first = decide_rules(&s, &p, NULL, SEC_NS, rules);
        assert_false(pg_of(first, a)->managed);
        assert_false(pg_of(first, b)->managed);
        assert_true(pg_of(first, a)->waiting);
        assert_true(pg_of(first, b)->waiting);

        a->unmeasured = false;
        a->id = s.next_id++;
        rules[1] = rule("light-b", RULE_ACTION_PACK_WITH, "light-a", a);
        Plan *next = decide_rules(&s, &p, first, SEC_NS + SEC_NS / 5, rules);
        const PlanGroup *pa = pg_of(next, a), *pb = pg_of(next, b);
        assert_true(pa->managed);
        assert_true(pb->managed);
        assert_int_equal(cpuset_count(&pa->cpus), 1);
        assert_true(cpuset_equal(&pa->cpus, &pb->cpus));
        plan_free(next);
        plan_free(first);
        scenario_done(&s);
}

/*
 * pack-with on a machine that other work keeps busy: two light pairs whose
 * tasks also waited for a CPU (0.1 ran, 0.1 waited between them), no CPU
 * with room for them. The owner asked for the set packed, so it goes on the
 * roomiest CPU, saying so; a mesh with no rule is still left to the kernel
 * there, and either CPU's being free takes the set there, as usual.
 */
static void test_rule_pack_with_busy(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        GroupRule rules[2];
        Group *a, *b;
        CpuSet r0 = set_of("0"), r1 = set_of("1");
        light_pairs(&s, 0.9, rules, &a, &b);
        a->runq_wait = b->runq_wait = 0.05;
        s.loads[1].busy = 0.85; /* the roomier CPU */
        Plan *plan = decide_rules(&s, &p, NULL, SEC_NS, rules);
        const PlanGroup *pa = pg_of(plan, a), *pb = pg_of(plan, b);
        assert_true(pa->managed);
        assert_true(pb->managed);
        assert_true(cpuset_equal(&pa->cpus, &pb->cpus));
        assert_true(cpuset_equal(&pa->cpus, &r1));
        if (!strstr(pa->reason, "none had room"))
                fail_msg("reason \"%s\" does not say the CPUs were full", pa->reason);
        assert_rule(pa, "light-a", RULE_ACTION_PACK_WITH);
        /* its tasks then wait past the run-queue budget: widened, on this
         * machine to every CPU, which is the kernel's */
        a->runq_delay_us = b->runq_delay_us = 10 * p.runq_delay_budget_us;
        Plan *waited = decide_rules(&s, &p, plan, 2 * SEC_NS, rules);
        assert_false(pg_of(waited, a)->managed);
        assert_false(pg_of(waited, b)->managed);
        assert_int_equal(pg_of(waited, a)->widen, 1);
        a->runq_delay_us = b->runq_delay_us = 0;
        plan_free(waited);
        plan_free(plan);

        /* the same two pairs as one mesh with no rule: left to the kernel */
        b->class = GROUP_MESH;
        GroupRule none[2] = { { .action = RULE_ACTION_NONE }, { .action = RULE_ACTION_NONE } };
        plan = decide_rules(&s, &p, NULL, SEC_NS, none);
        assert_false(pg_of(plan, b)->managed);
        plan_free(plan);
        b->class = GROUP_PAIR;

        /* room on CPU 0: taken as usual, without the note */
        s.loads[0].busy = 0.2;
        plan = decide_rules(&s, &p, NULL, SEC_NS, rules);
        pa = pg_of(plan, a);
        assert_true(cpuset_equal(&pa->cpus, &r0));
        assert_true(cpuset_equal(&pg_of(plan, b)->cpus, &r0));
        assert_null(strstr(pa->reason, "none had room"));
        plan_free(plan);
        scenario_done(&s);
}

/* The rule survives plan and snapshot JSON; a snapshot without rules loads. */
static void test_rule_json(void **state) {
        Scenario s;
        Profile p = profile("balanced");
        scenario_init(&s, "topo-vm2", 0.05);
        CpuSet ran = set_of("0-1");
        Group *g = add_group(&s, GROUP_PAIR, 2, 0.5, &ran);
        GroupRule rules[1] = { rule("quiet", RULE_ACTION_IGNORE, NULL, NULL) };
        Plan *plan = decide_rules(&s, &p, NULL, SEC_NS, rules);
        _cleanup_free_ char *json = NULL, *snap = NULL;
        assert_int_equal(plan_to_json(plan, &json), 0);
        Plan *back = NULL;
        assert_int_equal(plan_from_json(json, &back), 0);
        assert_string_equal(pg_of(back, g)->rule, "quiet");
        assert_int_equal(pg_of(back, g)->rule_action, RULE_ACTION_IGNORE);
        plan_free(back);

        GroupRule pw = rule("client", RULE_ACTION_PACK_WITH, "server", g);
        PolicySnapshot sn = { .topology = (char *)"x",
                              .groups = s.groups,
                              .n_groups = 1,
                              .rules = &pw,
                              .loads = s.loads,
                              .n_loads = s.t->n_cpus };
        assert_int_equal(policy_snapshot_to_json(&sn, &snap), 0);
        PolicySnapshot *in = NULL;
        assert_int_equal(policy_snapshot_from_json(snap, &in), 0);
        assert_non_null(in->rules);
        assert_int_equal(in->rules[0].action, RULE_ACTION_PACK_WITH);
        assert_string_equal(in->rules[0].rule, "client");
        assert_string_equal(in->rules[0].partner, "server");
        assert_true(in->rules[0].has_partner_group);
        assert_int_equal(in->rules[0].partner_group, g->id);
        policy_snapshot_free(in);
        sn.rules = NULL;
        free(snap);
        assert_int_equal(policy_snapshot_to_json(&sn, &snap), 0);
        assert_null(strstr(snap, "\"rule\""));
        assert_int_equal(policy_snapshot_from_json(snap, &in), 0);
        assert_null(in->rules);
        policy_snapshot_free(in);
        plan_free(plan);
        scenario_done(&s);
}

/* ---- out of memory ---- */

/*
 * This test is linked with -Wl,--wrap=calloc (the Makefile's
 * TEST_LDFLAGS_test-policy): every calloc() of the library and of this
 * file comes here. Armed, it counts the calls and fails the fail_at-th.
 */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

static struct {
        bool armed;
        unsigned calls;
        unsigned fail_at; /* 1-based; 0: none fails */
} alloc;

void *__wrap_calloc(size_t n, size_t size) {
        if (alloc.armed && ++alloc.calls == alloc.fail_at) {
                errno = ENOMEM;
                return NULL;
        }
        return __real_calloc(n, size);
}

/* policy_decide() with the fail_at-th allocation failing. Return: its result; *ret_calls. */
static int decide_failing(const PolicyInput *in, unsigned fail_at, Plan **ret,
                          unsigned *ret_calls) {
        alloc.armed = true;
        alloc.calls = 0;
        alloc.fail_at = fail_at;
        int r = policy_decide(in, ret);
        alloc.armed = false;
        *ret_calls = alloc.calls;
        return r;
}

/* ---- kinds of core (policy-kinds.c; docs/design.md, "Kinds of core and capacity") ---- */

static const char *const kind_fixtures[] = { "topo-hybrid", "topo-mtl", "topo-strix",
                                             "topo-biglittle" };

static CpuSet one_cpu(int cpu) {
        CpuSet s;
        cpuset_zero(&s);
        cpuset_set(&s, cpu);
        return s;
}

/* The i-th CPU of a kind (wrapping). */
static int kind_cpu(const Topology *t, TopoCoreKind k, unsigned i) {
        unsigned n = cpuset_count(&t->kind_cpus[k]), j = 0;
        assert_true(n > 0);
        CPUSET_FOREACH (cpu, &t->kind_cpus[k])
                if (j++ == i % n)
                        return cpu;
        return -1;
}

static CpuSet efficient_cpus(const Topology *t) {
        CpuSet e;
        cpuset_or(&e, &t->kind_cpus[TOPO_CORE_EFFICIENT], &t->kind_cpus[TOPO_CORE_LOW_POWER]);
        return e;
}

static void assert_reason_has(const PlanGroup *pg, const char *what) {
        if (!strstr(pg->reason, what))
                fail_msg("reason \"%s\" does not say \"%s\"", pg->reason, what);
}

/* Balanced and latency-first: a busy group goes to performance cores, wherever it ran. */
static void test_kinds_busy_to_performance(void **state) {
        const char *profiles[] = { "balanced", "latency-first" };
        for (size_t ti = 0; ti < ELEMENTSOF(kind_fixtures); ti++)
                for (size_t pi = 0; pi < ELEMENTSOF(profiles); pi++) {
                        Scenario s;
                        Profile p = profile(profiles[pi]);
                        print_message("%s %s\n", kind_fixtures[ti], profiles[pi]);
                        scenario_init(&s, kind_fixtures[ti], 0.05);
                        const CpuSet *P = &s.t->kind_cpus[TOPO_CORE_PERFORMANCE];
                        int e = kind_cpu(s.t, TOPO_CORE_EFFICIENT, 0);
                        CpuSet ran = one_cpu(e), on_e = s.t->kind_cpus[TOPO_CORE_EFFICIENT];
                        /* 0.8 of an efficient core: more than half of one. */
                        Group *pair = add_group(&s, GROUP_PAIR, 2, 0.8, &ran);
                        Group *mesh = add_group(&s, GROUP_MESH, 6, 1.5, &on_e);
                        /* Light: under a third of an efficient core's capacity. */
                        CpuSet ran_p = one_cpu(kind_cpu(s.t, TOPO_CORE_PERFORMANCE, 0));
                        Group *light = add_group(&s, GROUP_PAIR, 2, 0.1, &ran_p);
                        Plan *plan = decide(&s, &p, NULL, SEC_NS);
                        const PlanGroup *pg = pg_of(plan, pair);
                        assert_true(pg->managed);
                        assert_true(cpuset_is_subset(&pg->cpus, P));
                        assert_reason_has(pg, "performance CPU");
                        assert_reason_has(pg, "; busy, ");
                        assert_reason_has(pg, ": performance cores");
                        pg = pg_of(plan, mesh);
                        assert_true(pg->managed);
                        assert_true(cpuset_is_subset(&pg->cpus, P));
                        /* A light pair is placed as before: where it ran (its core
                         * under latency-first). */
                        assert_true(cpuset_is_subset(&ran_p, &pg_of(plan, light)->cpus));
                        assert_true(cpuset_is_subset(&pg_of(plan, light)->cpus, P));
                        assert_reason_has(pg_of(plan, light), "; light, ");
                        /* Placed on an efficient core when it was light, it moves
                         * once it is busy, within the dwell. */
                        Plan *next = NULL;
                        {
                                Plan *was = decide(&s, &p, NULL, SEC_NS);
                                PlanGroup *w = (PlanGroup *)plan_find_group(was, pair->id);
                                w->cpus = ran;
                                w->trial.verdict = TRIAL_KEPT;
                                next = decide(&s, &p, was, 2 * SEC_NS);
                                plan_free(was);
                        }
                        assert_true(cpuset_is_subset(&pg_of(next, pair)->cpus, P));
                        plan_free(next);

                        /* With every performance core full it goes elsewhere, and says so. */
                        CPUSET_FOREACH (c, P)
                                s.loads[c].busy = 1.0;
                        Plan *full = decide(&s, &p, NULL, SEC_NS);
                        pg = pg_of(full, pair);
                        assert_true(pg->managed);
                        assert_false(cpuset_intersects(&pg->cpus, P));
                        assert_reason_has(pg, "no performance core had room");
                        plan_free(full);
                        plan_free(plan);
                        scenario_done(&s);
                }
}

/* Latency-critical rules mean performance cores, whatever the profile. */
static void test_kinds_latency_critical(void **state) {
        static GroupRule rules[MAX_GROUPS];
        const char *profiles[] = { "power-first", "balanced" };
        for (size_t ti = 0; ti < ELEMENTSOF(kind_fixtures); ti++)
                for (size_t pi = 0; pi < ELEMENTSOF(profiles); pi++) {
                        Scenario s;
                        Profile p = profile(profiles[pi]);
                        scenario_init(&s, kind_fixtures[ti], 0.02);
                        CpuSet ran = efficient_cpus(s.t);
                        add_group(&s, GROUP_PAIR, 2, 0.05, &ran); /* light as can be */
                        memset(rules, 0, sizeof(rules));
                        rules[0] = rule("rt", RULE_ACTION_LATENCY_CRITICAL, NULL, NULL);
                        Plan *plan = decide_rules(&s, &p, NULL, SEC_NS, rules);
                        const PlanGroup *pg = pg_of(plan, &s.groups[0]);
                        assert_true(pg->managed);
                        assert_true(cpuset_is_subset(&pg->cpus,
                                                     &s.t->kind_cpus[TOPO_CORE_PERFORMANCE]));
                        assert_reason_has(pg, "latency-critical, any profile: performance cores");
                        plan_free(plan);
                        scenario_done(&s);
                }
}

/* Power-first: light groups go to efficient cores, consolidated; LP E-cores where
 * they keep up. Busy ones may stay where they are. */
static void test_kinds_power_first_light(void **state) {
        Profile p = profile("power-first");
        for (size_t ti = 0; ti < ELEMENTSOF(kind_fixtures); ti++) {
                Scenario s;
                scenario_init(&s, kind_fixtures[ti], 0.02);
                CpuSet eff = efficient_cpus(s.t);
                Group *pairs[3];
                for (unsigned i = 0; i < 3; i++) {
                        CpuSet ran = one_cpu(kind_cpu(s.t, TOPO_CORE_PERFORMANCE, 2 * i));
                        pairs[i] = add_group(&s, GROUP_PAIR, 2, 0.08, &ran);
                }
                CpuSet on_p = s.t->kind_cpus[TOPO_CORE_PERFORMANCE];
                Group *mesh = add_group(&s, GROUP_MESH, 4, 0.25, &on_p);
                CpuSet ran_busy = one_cpu(kind_cpu(s.t, TOPO_CORE_PERFORMANCE, 1));
                Group *busy = add_group(&s, GROUP_PAIR, 2, 0.7, &ran_busy);
                Plan *plan = decide(&s, &p, NULL, SEC_NS);
                /* The slices consolidate where the light groups go. */
                const CpuSet *hk = &plan->slice_cpus[PLAN_SLICE_SYSTEM];
                assert_false(cpuset_is_empty(hk));
                CpuSet used;
                cpuset_zero(&used);
                for (unsigned i = 0; i < 3; i++) {
                        const PlanGroup *pg = pg_of(plan, pairs[i]);
                        assert_true(pg->managed);
                        assert_true(cpuset_is_subset(&pg->cpus, &eff));
                        assert_reason_has(pg, "light, power-first: efficient cores");
                        cpuset_or(&used, &used, &pg->cpus);
                }
                assert_int_equal(cpuset_count(&used), 1); /* consolidated: 0.24 fits one */
                assert_true(cpuset_is_subset(&used, hk));
                assert_true(pg_of(plan, mesh)->managed);
                assert_true(cpuset_is_subset(&pg_of(plan, mesh)->cpus, &eff));
                /* 0.7 of a P-core is busy: power-first lets it stay on performance cores. */
                assert_true(pg_of(plan, busy)->managed);
                assert_true(cpuset_is_subset(&pg_of(plan, busy)->cpus, &on_p));
                plan_free(plan);
                scenario_done(&s);
        }

        /* Meteor Lake: with the E-cores full, a light pair that keeps up on an LP
         * E-core goes there; one that needs more than it has does not. */
        Scenario s;
        scenario_init(&s, "topo-mtl", 0.02);
        CPUSET_FOREACH (c, &s.t->kind_cpus[TOPO_CORE_EFFICIENT])
                s.loads[c].busy = 0.95;
        CpuSet ran = one_cpu(0);
        Group *fits = add_group(&s, GROUP_PAIR, 2, 0.2, &ran);
        Plan *plan = decide(&s, &p, NULL, SEC_NS);
        assert_true(
                cpuset_is_subset(&pg_of(plan, fits)->cpus, &s.t->kind_cpus[TOPO_CORE_LOW_POWER]));
        assert_reason_has(pg_of(plan, fits), "low-power CPU");
        plan_free(plan);
        scenario_done(&s);
}

/* Latency-first places nothing on low-power cores; balanced leaves light groups there. */
static void test_kinds_low_power(void **state) {
        Scenario s;
        scenario_init(&s, "topo-mtl", 0.05);
        const CpuSet *LP = &s.t->kind_cpus[TOPO_CORE_LOW_POWER];
        CpuSet ran = one_cpu(20);
        Group *pair = add_group(&s, GROUP_PAIR, 2, 0.1, &ran);
        Group *mesh = add_group(&s, GROUP_MESH, 4, 0.3, LP);
        Profile lat = profile("latency-first"), bal = profile("balanced");
        Plan *plan = decide(&s, &lat, NULL, SEC_NS);
        for (unsigned i = 0; i < plan->n_groups; i++)
                assert_false(cpuset_intersects(&plan->groups[i].cpus, LP));
        assert_true(pg_of(plan, pair)->managed);
        assert_reason_has(pg_of(plan, pair), "no low-power cores");
        plan_free(plan);
        plan = decide(&s, &bal, NULL, SEC_NS);
        assert_true(cpuset_equal(&pg_of(plan, pair)->cpus, &ran));
        assert_true(pg_of(plan, mesh)->managed);
        plan_free(plan);

        /* A cpuset of low-power cores only: latency-first leaves the group to the kernel. */
        CpuSet limits[2] = { *LP, *LP };
        s.limits = limits;
        plan = decide(&s, &lat, NULL, SEC_NS);
        assert_false(pg_of(plan, pair)->managed);
        assert_reason_has(pg_of(plan, pair), "only low-power cores");
        plan_free(plan);
        scenario_done(&s);
}

/* Capacity counts when checking room: 0.6 of a performance core does not fit an
 * efficient core of less capacity, and a claim there weighs by its capacity. */
static void test_kinds_capacity(void **state) {
        for (size_t ti = 0; ti < ELEMENTSOF(kind_fixtures); ti++) {
                Scenario s;
                Profile p = profile("power-first");
                p.busy_pct = 1000; /* every group is light: efficient cores asked for */
                p.consolidate = false;
                scenario_init(&s, kind_fixtures[ti], 0.02);
                int e = kind_cpu(s.t, TOPO_CORE_EFFICIENT, 0);
                double e_cap = s.t->cpus[e].capacity / 1024.0;
                CpuSet ran = one_cpu(kind_cpu(s.t, TOPO_CORE_PERFORMANCE, 0));
                Group *big = add_group(&s, GROUP_PAIR, 2, MIN(e_cap + 0.05, 0.95), &ran);
                Group *small = add_group(&s, GROUP_PAIR, 2, e_cap * 0.6, &ran);
                print_message("%s: efficient capacity %.2f\n", kind_fixtures[ti], e_cap);
                Plan *plan = decide(&s, &p, NULL, SEC_NS);
                const PlanGroup *pg = pg_of(plan, big);
                assert_true(pg->managed);
                assert_true(cpuset_is_subset(&pg->cpus, &s.t->kind_cpus[TOPO_CORE_PERFORMANCE]));
                assert_reason_has(pg, "no efficient core had room");
                pg = pg_of(plan, small);
                assert_true(pg->managed);
                assert_true(cpuset_is_subset(&pg->cpus, &s.t->kind_cpus[TOPO_CORE_EFFICIENT]));
                plan_free(plan);

                /* Run on an efficient core, 0.5 of it is 0.5 x its capacity of a P-core's
                 * work: light there, and the same CPU takes it back. */
                CpuSet on_e = one_cpu(e);
                small->ran_on = on_e;
                small->util = 0.5;
                plan = decide(&s, &p, NULL, SEC_NS);
                assert_true(cpuset_equal(&pg_of(plan, small)->cpus, &on_e));
                plan_free(plan);
                scenario_done(&s);
        }
}

/* On machines whose cores are alike the kind keys change nothing, reasons included. */
static void test_kinds_symmetric_unchanged(void **state) {
        const char *topos[] = { "topo-vm2", "topo-epyc2s", "topo-offline" };
        const char *profiles[] = { "power-first", "balanced", "latency-first" };
        for (size_t ti = 0; ti < ELEMENTSOF(topos); ti++)
                for (size_t pi = 0; pi < ELEMENTSOF(profiles); pi++) {
                        Scenario s;
                        Profile p = profile(profiles[pi]), q = p;
                        q.busy_pct = 0;
                        q.busy_cores = PROFILE_CORES_EFFICIENT;
                        q.light_cores = PROFILE_CORES_PERFORMANCE;
                        q.low_power = !p.low_power;
                        scenario_init(&s, topos[ti], 0.05);
                        assert_false(s.t->asymmetric);
                        build(&s, MIX);
                        Plan *a = decide(&s, &p, NULL, SEC_NS), *b = decide(&s, &q, NULL, SEC_NS);
                        assert_true(plan_equal(a, b));
                        for (unsigned i = 0; i < a->n_groups; i++)
                                assert_string_equal(a->groups[i].reason, b->groups[i].reason);
                        plan_free(a);
                        plan_free(b);
                        scenario_done(&s);
                }
}

/* Groups of every kind, rules of every kind, on the EPYC: every path of a decision. */
static void add_everything(Scenario *s, GroupRule *rules) {
        Group *first = NULL;
        for (unsigned i = 0; i < 8; i++) {
                CpuSet ran = set_of(i % 2 ? "8,9" : "16,40");
                Group *g = add_group(s,
                                     i % 4 == 3 ? GROUP_FANOUT
                                     : i % 2    ? GROUP_MESH
                                                : GROUP_PAIR,
                                     2, i % 4 == 3 ? 6.0 : 0.4 + 0.1 * i, &ran);
                g->handoff_rate = 1000 * (i + 1);
                first = first ? first : g;
        }
        rules[0] = rule("client", RULE_ACTION_PACK_WITH, "server", &s->groups[1]);
        rules[1] = rule("server", RULE_ACTION_PACK_WITH, "client", first);
        rules[2] = rule("rt", RULE_ACTION_LATENCY_CRITICAL, NULL, NULL);
        rules[3] = rule("quiet", RULE_ACTION_IGNORE, NULL, NULL);
        rules[4] = rule("apart", RULE_ACTION_NEVER_PACK, NULL, NULL);
}

/*
 * A decision allocates only before it starts (as many times for 8 groups
 * as for 48), and any allocation that fails makes policy_decide() return
 * -ENOMEM with *ret untouched, never a plan that shows it.
 */
static void test_out_of_memory(void **state) {
        static GroupRule rules[MAX_GROUPS];
        const char *profiles[] = { "power-first", "balanced" };
        Profile latency = profile("latency-first");
        Scenario s;

        for (size_t k = 0; k < ELEMENTSOF(profiles); k++) {
                Profile p = profile(profiles[k]);
                scenario_init(&s, "topo-epyc2s", 0.05); /* power-first consolidates */
                add_everything(&s, rules);
                PolicyInput in = input(&s, &p, NULL, SEC_NS);
                in.rules = rules;
                in.latency_profile = &latency;

                Plan *want = NULL;
                unsigned n = 0, calls;
                assert_int_equal(decide_failing(&in, 0, &want, &n), 0);
                assert_true(n > 0);
                Plan *again = decide(&s, &p, NULL, SEC_NS);
                plan_free(again);
                for (unsigned fail_at = 1; fail_at <= n; fail_at++) {
                        Plan *untouched = (Plan *)&s, *plan = untouched;
                        assert_int_equal(decide_failing(&in, fail_at, &plan, &calls), -ENOMEM);
                        assert_ptr_equal(plan, untouched);
                        assert_int_equal(calls, fail_at); /* it stopped at the failure */
                }
                /* The same calls for six times the groups, and a previous plan. */
                Plan *prev = want;
                for (unsigned i = 0; i < 5; i++)
                        add_everything(&s, rules + s.n_groups);
                in = input(&s, &p, prev, 2 * SEC_NS);
                in.rules = rules;
                in.latency_profile = &latency;
                Plan *more = NULL;
                assert_int_equal(decide_failing(&in, 0, &more, &calls), 0);
                assert_int_equal(calls, n);
                assert_int_equal(more->n_groups, s.n_groups);
                plan_free(more);
                plan_free(prev);
                scenario_done(&s);
        }
}

static void test_bad_input(void **state) {
        Plan *plan = NULL;
        PolicyInput in = { 0 };
        assert_int_equal(policy_decide(&in, &plan), -EINVAL);
        assert_null(plan);
        assert_null(plan_free(NULL));
        assert_null(plan_find_group(NULL, 1));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_scenario_table),
                cmocka_unit_test(test_pair_on_least_busy_ran_on_cpu),
                cmocka_unit_test(test_pair_overlap_not_hidden_by_ran_on),
                cmocka_unit_test(test_trial_squeezed),
                cmocka_unit_test(test_trial_by_bytes),
                cmocka_unit_test(test_trial_recheck),
                cmocka_unit_test(test_trial_recheck_undecided),
                cmocka_unit_test(test_trial_recheck_closer),
                cmocka_unit_test(test_trial_recheck_stream),
                cmocka_unit_test(test_trial_measure_change),
                cmocka_unit_test(test_pair_min_wake_rate),
                cmocka_unit_test(test_dwell_holds_what_placed_did),
                cmocka_unit_test(test_trial_noise),
                cmocka_unit_test(test_pair_stream_left_alone),
                cmocka_unit_test(test_plan_names),
                cmocka_unit_test(test_trial_order),
                cmocka_unit_test(test_trial_verdicts),
                cmocka_unit_test(test_trial_revert_and_backoff),
                cmocka_unit_test(test_power_first_consolidates_pairs),
                cmocka_unit_test(test_pair_same_core_smt),
                cmocka_unit_test(test_pairs_do_not_share_a_full_cpu),
                cmocka_unit_test(test_pairs_do_not_stack_past_capacity),
                cmocka_unit_test(test_kinds_busy_to_performance),
                cmocka_unit_test(test_kinds_latency_critical),
                cmocka_unit_test(test_kinds_power_first_light),
                cmocka_unit_test(test_kinds_low_power),
                cmocka_unit_test(test_kinds_capacity),
                cmocka_unit_test(test_kinds_symmetric_unchanged),
                cmocka_unit_test(test_dwell_and_gain),
                cmocka_unit_test(test_feedback_widens_next_tick),
                cmocka_unit_test(test_mesh_homes_distinct_or_packed),
                cmocka_unit_test(test_fanout_spread_vs_pack),
                cmocka_unit_test(test_mesh_on_vm_left_to_kernel),
                cmocka_unit_test(test_unmeasured_waits),
                cmocka_unit_test(test_limits_respected),
                cmocka_unit_test(test_consolidation),
                cmocka_unit_test(test_quick_tick_focus),
                cmocka_unit_test(test_quick_tick_slices),
                cmocka_unit_test(test_json_round_trip),
                cmocka_unit_test(test_rule_ignore_never_pack),
                cmocka_unit_test(test_rule_latency_critical),
                cmocka_unit_test(test_rule_pack_with),
                cmocka_unit_test(test_rule_pack_with_unmeasured),
                cmocka_unit_test(test_rule_pack_with_busy),
                cmocka_unit_test(test_rule_json),
                cmocka_unit_test(test_out_of_memory),
                cmocka_unit_test(test_bad_input),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
