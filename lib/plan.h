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
 * A placement on trial. A group placed anew is measured before it is kept:
 * its progress (per second, the handoffs between its members, or for a
 * stream the bytes they move through read and write calls: measure)
 * and its run-queue
 * delay while the kernel alone placed it, then over [trial] ticks measured
 * ticks placed. It is kept when progress is at least [trial] keep_pct of
 * before, it did not start waiting for CPUs past the run-queue budget, and
 * its tasks did not lose more than [trial] max_run_loss_pct of a CPU of run
 * time while waiting more (two busy tasks squeezed onto one CPU; judged by
 * handoffs only, as bytes show that loss themselves);
 * otherwise it is reverted and not tried again before retry_ns, a back-off
 * that doubles with each revert in a row (up to 16 times [trial]
 * backoff_ms).
 *
 * Progress is noisy tick to tick (a VM's host, other work), so it is judged
 * against its noise: while progress placed is within two standard errors of
 * keep_pct of before (the figures' tick-to-tick deviations), the trial goes
 * on, up to [trial] max_ticks. Still within noise then, no change was
 * measured: kept where keep_pct <= 100 (it loses nothing measurable, and the
 * placement is what the profile asks for), reverted where keep_pct > 100
 * (the profile wants a gain it did not show); within_noise says so.
 */
typedef enum TrialVerdict {
        TRIAL_NONE,     /* not tried yet (or the last trial was cut short) */
        TRIAL_RUNNING,  /* placed, being measured */
        TRIAL_KEPT,     /* measured no worse for the profile */
        TRIAL_REVERTED, /* measured worse: handed back to the kernel */
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

typedef struct PlanTrial {
        TrialVerdict verdict;
        TrialMeasure measure;   /* what before_rate and after_rate count, per second */
        double before_rate;     /* progress left to the kernel (mean of its last ticks) */
        double before_delay_us; /* run-queue delay per scheduling then */
        unsigned before_ticks;
        double after_rate; /* progress placed, mean over the trial's ticks */
        double after_delay_us;
        unsigned after_ticks;
        double before_util; /* CPUs' worth of run time left to the kernel (as before_rate) */
        double before_wait; /* CPUs' worth of run-queue wait then */
        double after_util;  /* the same placed, means over the trial's ticks */
        double after_wait;
        double before_rate_sd; /* tick-to-tick standard deviation of before_rate's ticks */
        double after_rate_sd;  /* the same of after_rate's */
        bool within_noise;     /* the verdict came at max_ticks, the difference within noise */
        unsigned reverts;      /* in a row: each doubles the back-off */
        uint64_t retry_ns;     /* after a revert: not tried again before this */
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
