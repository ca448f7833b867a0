/* SPDX-License-Identifier: MIT */
/*
 * A plan: what the policy decided for one tick (policy.h), and what the next
 * tick's decision starts from. Per group whether placed manages it and on
 * which CPUs, why, since when, and the trial of its placement; which CPUs
 * the system slices keep; which CPUs get an idle exit-latency cap. The
 * policy writes plans, the pipeline applies them, the bus and placectl show
 * them, and the JSON of policy-json.c carries them in snapshots.
 *
 * Plans keep their groups sorted by id (plan_group_cmp()), so that
 * plan_find_group() is a binary search.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "cpuset.h"
#include "group.h"
#include "macro.h"
#include "rules.h"

#define PLAN_REASON_MAX  240
#define PLAN_NO_IDLE_CAP (-1)

/* The system slices placed may confine (power-first consolidation). */
typedef enum PlanSlice {
        PLAN_SLICE_SYSTEM,
        PLAN_SLICE_USER,
        PLAN_SLICE_MACHINE,
        _PLAN_SLICE_MAX,
} PlanSlice;

/* "system.slice", "user.slice", "machine.slice"; NULL out of range. */
const char *plan_slice_to_string(PlanSlice s);

/*
 * A placement on trial. A group placed anew, or a kept placement due for a
 * re-check, runs a switchback: its placement and the kernel's own choice
 * (the owner's affinity: the group handed back) take turns in windows of
 * one tick each, in the order placed, kernel, kernel, placed, placed, ...
 * (ABBA), so that a trend of the workload's own falls on both alike. Each
 * pair of adjacent windows after the first (2-3, 4-5, ...; the first holds
 * the move and a new workload's warm-up) gives one figure, the log of
 * progress placed over progress left to the kernel; their mean and its 95%
 * interval (Student's t over the pairs) are the gain the verdict weighs.
 *
 * The placement is kept only when the whole interval clears [trial]
 * keep_pct (balanced 100: a gain; latency-first 103: a gain of 3% or more;
 * power-first 90: at most 10% lost for the CPUs it frees), it did not start
 * waiting for CPUs past the run-queue budget, and its tasks did not lose
 * more than [trial] max_run_loss_pct of a CPU of run time while waiting
 * more (two busy tasks squeezed onto one CPU; judged by handoffs only, as
 * bytes show that loss themselves). It is handed back as soon as the
 * interval lies wholly below keep_pct, and after [trial] max_ticks weighed
 * windows when it still holds keep_pct (a tie: ties go to the kernel).
 * Handed back, it is not tried again before retry_ns, a back-off that
 * doubles with each revert in a row (up to 16 times [trial] backoff_ms).
 *
 * A kept placement is re-checked by a switchback of its own [trial]
 * recheck_s after its verdict, doubling while re-checks keep it (up to 16
 * times), and at once when its progress moves more than [trial]
 * recheck_drift_pct away from its figure at the verdict, or its tasks wait
 * for a CPU more than max_run_loss_pct of a CPU longer than then. Its
 * verdict is a trial's: an undecided re-check is a tie, and hands back.
 * A tick whose window saw half such a drift (a change that began within it)
 * asks for a quick tick to look again (closer), not for a re-check.
 */
typedef enum TrialVerdict {
        TRIAL_NONE,     /* not tried yet (or the last trial was cut short) */
        TRIAL_RUNNING,  /* on trial: windows placed and left to the kernel take turns */
        TRIAL_KEPT,     /* measured a gain that clears the profile's keep_pct */
        TRIAL_REVERTED, /* measured worse, or no clear gain: handed back to the kernel */
        _TRIAL_VERDICT_MAX,
} TrialVerdict;

/*
 * What a trial counts as progress. Handoffs (times on a CPU of its members)
 * count turns, not work: two busy tasks packed onto one CPU take turns more
 * often while each does less. The bytes a stream moves through read and
 * write are its work (not send and recv, which the kernel does not count
 * there; and files count too, so only for streams): a pair whose tasks
 * overlapped past [pair] max_overlap_pct and that moved at least a byte per
 * handoff left to the kernel is judged by bytes (policy-trial.c).
 */
typedef enum TrialMeasure {
        TRIAL_BY_HANDOFFS,
        TRIAL_BY_BYTES,
        _TRIAL_MEASURE_MAX,
} TrialMeasure;

/* "handoffs", "bytes"; NULL out of range. */
const char *trial_measure_to_string(TrialMeasure m);
/* Return: the TrialMeasure named s, or -EINVAL. */
int trial_measure_from_string(const char *s);

/* Why a trial handed its group back (TRIAL_REVERTED): what its reasons say,
 * in the back-off too. */
typedef enum TrialBack {
        TRIAL_BACK_WORSE,    /* the interval lay wholly below keep_pct */
        TRIAL_BACK_WAITED,   /* it waited for the CPU past the run-queue budget */
        TRIAL_BACK_SQUEEZED, /* its tasks lost run time while waiting more (max_run_loss_pct) */
        TRIAL_BACK_TIE,      /* after max_ticks: no clear gain, no clear loss */
        _TRIAL_BACK_MAX,
} TrialBack;

/* "worse", "waited", "squeezed", "tie"; NULL out of range. */
const char *trial_back_to_string(TrialBack b);
/* Return: the TrialBack named s, or -EINVAL. */
int trial_back_from_string(const char *s);
/* Why, in the words of the reasons ("it did worse", ...): at the verdict, all
 * through the back-off, and in placectl explain. */
const char *trial_back_words(TrialBack b);

/* Which side of a switchback a trial's window runs. */
typedef enum TrialArm {
        TRIAL_ARM_PLACED, /* the placement applied */
        TRIAL_ARM_KERNEL, /* the group handed back: the kernel's own choice */
        _TRIAL_ARM_MAX,
} TrialArm;

/* "placed", "kernel"; NULL out of range. */
const char *trial_arm_to_string(TrialArm a);
/* Return: the TrialArm named s, or -EINVAL. */
int trial_arm_from_string(const char *s);

/* The figures of one side of a switchback: means over its windows. */
typedef struct TrialSide {
        double rate;     /* progress, per second */
        double delay_us; /* run-queue delay per scheduling */
        double util;     /* CPUs' worth of run time */
        double wait;     /* CPUs' worth of run-queue wait */
        unsigned windows;
} TrialSide;

typedef struct PlanTrial {
        TrialVerdict verdict;
        TrialMeasure measure; /* what the sides' rates count, per second */
        TrialArm arm;         /* the side of the window now running (the apply stage's) */
        bool recheck;         /* this trial re-checks a kept placement ... */
        bool drifted;         /* ... at once, as its figures drifted (else: it was due) */
        unsigned windows;     /* windows run in this trial (the first two not weighed) */
        unsigned pairs;       /* pairs of adjacent windows weighed */
        double open_rate;     /* progress of the first window of the pair now open */
        double log_sum;       /* over the pairs: sum of ln(placed / kernel) */
        double log_sq;        /* ... and of its squares */
        double gain;          /* placed / kernel: exp of the pairs' mean */
        double gain_lo;       /* its 95% interval (gain itself while under 2 pairs) */
        double gain_hi;
        TrialSide placed;    /* the placement's windows */
        TrialSide kernel;    /* the kernel's windows */
        TrialBack back;      /* reverted: why */
        unsigned reverts;    /* in a row: each doubles the back-off */
        uint64_t retry_ns;   /* after a revert: not tried again before this */
        unsigned checks;     /* re-checks that kept it, in a row: each doubles the next wait */
        uint64_t recheck_ns; /* kept: re-checked by a switchback at this time */
        double kept_rate;    /* kept: progress placed at the verdict, for drift */
        double kept_wait;    /* ... and run-queue wait */
        bool closer;         /* kept: half drifted this tick, not at the last: look again soon */
} PlanTrial;

/* "none", "running", "kept", "reverted"; NULL out of range. */
const char *trial_verdict_to_string(TrialVerdict v);
/* Return: the TrialVerdict named s, or -EINVAL. */
int trial_verdict_from_string(const char *s);

typedef struct PlanGroup {
        uint64_t id;
        GroupClass class;
        bool managed;   /* false: leave the group's tasks to the kernel */
        CpuSet cpus;    /* allowed CPUs when managed */
        int home;       /* LLC (or core, on one-LLC machines) the group is anchored on; -1 none */
        unsigned widen; /* feedback steps taken: each widens the mask one level */
        uint64_t since_ns;      /* when this decision was made (dwell) */
        uint64_t seen_ns;       /* when the policy first saw the group */
        bool waiting;           /* left alone until measured: no dwell, decided afresh next tick */
        PlanTrial trial;        /* the measured outcome of placing it */
        RuleAction rule_action; /* what the rule that decided said; NONE: no rule */
        char rule[RULE_NAME_MAX]; /* the rule that decided ("" = none, the profile did) */
        char reason[PLAN_REASON_MAX];
} PlanGroup;

typedef struct Plan {
        uint64_t now_ns;
        char profile[PROFILE_NAME_MAX];
        PlanGroup *groups; /* owned; sorted by id */
        unsigned n_groups;

        CpuSet slice_cpus[_PLAN_SLICE_MAX]; /* empty: not confined (the original value stands) */
        uint64_t slices_since_ns;
        char slice_reason[PLAN_REASON_MAX];

        unsigned n_cpus;               /* entries in idle_max_exit_latency_us */
        int *idle_max_exit_latency_us; /* owned; per CPU; PLAN_NO_IDLE_CAP = none */
        char idle_reason[PLAN_REASON_MAX];
} Plan;

/*
 * plan_new() - an empty plan with room for n_groups groups (none yet:
 * n_groups is 0) and n_cpus CPUs, none of them capped.
 * Return: 0 and *ret (free with plan_free()), or -ENOMEM.
 */
int plan_new(unsigned n_groups, unsigned n_cpus, Plan **ret);

Plan *plan_free(Plan *p);

/* Return: the decision for group id, or NULL. */
const PlanGroup *plan_find_group(const Plan *p, uint64_t id);

/*
 * plan_equal() - same decisions: per group managed and cpus, slices and
 * idle caps (timestamps and reasons are not compared).
 */
bool plan_equal(const Plan *a, const Plan *b);

DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free);

/* Orders plan groups by id, for qsort() and bsearch(). */
int plan_group_cmp(const void *x, const void *y);

/* Sets pg->reason, printf-style, cut to PLAN_REASON_MAX. */
_printf_(2, 3) void plan_group_set_reason(PlanGroup *pg, const char *fmt, ...);

/* Hands the group to the kernel: unmanaged, no CPUs, no home. */
void plan_group_leave(PlanGroup *pg);

/*
 * Return: whether pg's placement is applied in the window now running:
 * managed, and not in a trial's window left to the kernel.
 */
bool plan_group_applied(const PlanGroup *pg);

/*
 * Return: whether pg is being measured: waiting to be, or on trial (not
 * when advising, where no trial runs).
 */
bool plan_group_measuring(const PlanGroup *pg, bool advise);
