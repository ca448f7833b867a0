/* SPDX-License-Identifier: MIT */
/*
 * What the policy's own files share (policy.c, policy-trial.c,
 * policy-rules.c); not part of the library's interface.
 */
#pragma once

#include "macro.h"
#include "policy.h"

/* Sets pg->reason, printf-style, cut to PLAN_REASON_MAX. */
_printf_(2, 3) void policy_set_reason(PlanGroup *pg, const char *fmt, ...);

/* Hands the group to the kernel: unmanaged, no CPUs, no home. */
void policy_leave(PlanGroup *pg);

/*
 * trial_step() - the trial (see PlanTrial in policy.h), after the tick's
 * decision for g under profile p: learn the figures to beat while the
 * kernel places the group, start a trial when the decision places it anew
 * (unless a revert's back-off runs), and judge the trial once measured. A
 * revert is feedback: it overrides the dwell, and hands the group back
 * (pg left, its reason saying why).
 */
void trial_step(const Profile *p, const PolicyInput *in, const Group *g, const PlanGroup *prev,
                PlanGroup *pg);
