/* SPDX-License-Identifier: MIT */
/*
 * The trial of a placement (PlanTrial in policy.h): a group placed anew is
 * measured before it is kept. Its progress and run-queue delay left to the
 * kernel are the figures to beat; placed, it is kept when it does no worse
 * for the profile, else handed back and not tried again before a back-off
 * that doubles with each revert in a row. Part of the pure policy: no
 * syscalls, no clock, no logging.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"
#include "policy-internal.h"

/* Return: the back-off after the reverts-th revert in a row. */
static uint64_t trial_backoff_ns(const Profile *p, unsigned reverts) {
        return (uint64_t)p->trial_backoff_ms * 1000000ULL << MIN(MAX(reverts, 1u) - 1, 4u);
}

/* Return: a mean that weighs the newest figure as much as all before it. */
static double recent_mean(double mean, unsigned n, double x) {
        return n ? (mean + x) / 2 : x;
}

/* See policy-internal.h. */
void trial_step(const Profile *p, const PolicyInput *in, const Group *g, const PlanGroup *prev,
                PlanGroup *pg) {
        PlanTrial t = prev ? prev->trial : (PlanTrial){ 0 };
        bool was = prev && prev->managed && !prev->waiting;
        double delay = (double)g->runq_delay_us;
        const char *cls = group_class_to_string(g->class);

        if (g->unmeasured) {
                pg->trial = t; /* nothing to learn this tick */
                return;
        }
        if (!was) {
                t.before_rate = recent_mean(t.before_rate, t.before_ticks, g->handoff_rate);
                t.before_delay_us = recent_mean(t.before_delay_us, t.before_ticks, delay);
                t.before_ticks++;
                if (pg->managed && t.verdict == TRIAL_REVERTED && in->now_ns < t.retry_ns) {
                        policy_set_reason(
                                pg,
                                "%s: placed, it did worse (%.0f -> %.0f handoffs/s); not "
                                "tried again for %" PRIu64 " s after that",
                                cls, t.before_rate, t.after_rate,
                                (uint64_t)(trial_backoff_ns(p, t.reverts) / 1000000000ULL));
                        policy_leave(pg);
                } else if (pg->managed) {
                        t.verdict = TRIAL_RUNNING;
                        t.after_rate = t.after_delay_us = 0;
                        t.after_ticks = 0;
                }
                pg->trial = t;
                return;
        }
        if (t.verdict == TRIAL_RUNNING && !pg->managed) {
                t.verdict = TRIAL_NONE; /* cut short: widened out, or its CPUs went */
        } else if (t.verdict == TRIAL_RUNNING && in->advise) {
                ; /* nothing applied: nothing to measure */
        } else if (t.verdict == TRIAL_RUNNING) {
                t.after_rate =
                        (t.after_rate * t.after_ticks + g->handoff_rate) / (t.after_ticks + 1);
                t.after_delay_us = (t.after_delay_us * t.after_ticks + delay) / (t.after_ticks + 1);
                t.after_ticks++;
        }
        if (t.verdict == TRIAL_RUNNING && t.after_ticks >= p->trial_ticks) {
                bool slower = t.after_rate * 100 < t.before_rate * p->trial_keep_pct;
                bool waits = t.after_delay_us > p->runq_delay_budget_us &&
                             t.after_delay_us > t.before_delay_us;
                if (slower || waits) {
                        t.verdict = TRIAL_REVERTED;
                        t.reverts++;
                        uint64_t backoff = trial_backoff_ns(p, t.reverts);
                        t.retry_ns = in->now_ns + backoff;
                        t.before_ticks = 0; /* a fresh baseline after the revert */
                        policy_set_reason(
                                pg,
                                "%s: placed, it did worse (%.0f -> %.0f handoffs/s, run-queue "
                                "delay %.0f -> %.0f us); handed back, not tried again for "
                                "%" PRIu64 " s",
                                cls, t.before_rate, t.after_rate, t.before_delay_us,
                                t.after_delay_us, (uint64_t)(backoff / 1000000000ULL));
                        policy_leave(pg);
                } else {
                        t.verdict = TRIAL_KEPT;
                        t.reverts = 0;
                }
        }
        pg->trial = t;
}

const char *trial_verdict_to_string(TrialVerdict v) {
        static const char *const names[_TRIAL_VERDICT_MAX] = {
                [TRIAL_NONE] = "none",
                [TRIAL_RUNNING] = "running",
                [TRIAL_KEPT] = "kept",
                [TRIAL_REVERTED] = "reverted",
        };
        return (unsigned)v < _TRIAL_VERDICT_MAX ? names[v] : NULL;
}
