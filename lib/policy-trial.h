/* SPDX-License-Identifier: MIT */
/*
 * The trial of a placement (PlanTrial in plan.h), as the policy asks for it
 * once per group and tick; policy-trial.c says how a trial is judged. It
 * knows plans, profiles and groups, not the policy that calls it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "group.h"
#include "plan.h"

/* A trial's first windows, one of each side, are not weighed (policy-trial.c says why). */
#define TRIAL_BURN_IN_WINDOWS 2u

/* Return: what g's trial under p would count as progress (TrialMeasure in plan.h). */
TrialMeasure policy_trial_measure(const Profile *p, const Group *g);

/* Return: g's progress this tick, per second, in measure m. */
double policy_trial_progress(const Group *g, TrialMeasure m);

/*
 * Return: whether g's placement, kept by trial t, moved far from its
 * figures at the verdict (its progress by recheck_drift_pct either way, or
 * its wait for a CPU by max_run_loss_pct of a CPU): a re-check is due now.
 */
bool policy_trial_drifted(const Profile *p, const PlanTrial *t, const Group *g);

/*
 * Return: whether the group whose trial memory is t was ever placed: it
 * was tried (a switchback ran, a verdict came, or one was cut short after
 * its windows began). What placed did to a group stands for the dwell; a
 * group it never placed is decided afresh at each tick that decides it.
 */
bool policy_trial_placed_before(const PlanTrial *t);

/* Return: the side of a switchback's window-th window (0: placed; ABBA order). */
TrialArm policy_trial_arm(unsigned window);

/* Return: the two-sided 95% quantile of Student's t with df (> 0) degrees of freedom. */
double policy_trial_t95(unsigned df);

/*
 * policy_trial_step() - the trial, after the tick's decision pg for g under
 * profile p (memory: the group's entry in the previous plan under the same
 * rules, whatever its class then, or NULL: what its trials found, a back-off
 * included, is the group's and outlives a change of class; prev: that entry
 * when it was for the same class, or NULL): start
 * a switchback when the decision places the group anew (unless a revert's
 * back-off runs), add the window that just ended to a running one and
 * judge it, and start a re-check of a kept placement when it is due or its
 * figures drifted (at now_ns; in advise mode nothing was applied, so a
 * running trial is not measured). A revert is feedback: it overrides the
 * dwell, and hands the group back (pg left, its reason saying why).
 */
void policy_trial_step(const Profile *p, const Group *g, const PlanGroup *memory,
                       const PlanGroup *prev, uint64_t now_ns, bool advise, PlanGroup *pg);
