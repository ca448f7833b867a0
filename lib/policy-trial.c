/* SPDX-License-Identifier: MIT */
/*
 * The trial of a placement (PlanTrial in plan.h): a switchback. A group
 * placed anew is not compared with what it did before, since a workload
 * changes pace on its own (a stream's rate swings by half between identical
 * runs, a backend reads its tables and then its buffers, a client warms
 * up); instead its placement and the kernel's own choice take turns, a tick
 * each, in the order placed, kernel, kernel, placed (ABBA, repeated), and
 * each pair of neighbouring windows is compared. A trend of the workload's
 * own then falls on both sides alike, and each pair's figure, the log of
 * progress placed over progress left to the kernel, is as good as the
 * windows are short. Part of the pure policy: no syscalls, no clock, no
 * logging; the same series of windows gives the same verdict every time.
 *
 * The first pair of windows is not weighed (TRIAL_BURN_IN_WINDOWS): its
 * placed window holds the move itself and, for a workload placed as it
 * starts, its warm-up. Measured on pg-1c, placed 64 ms after its first
 * wakeups: the first window ran 25k handoffs/s placed, the next 29k left to
 * the kernel, and every later pair 1.16-1.35x; that one pair widened the
 * interval of 14 windows from [1.17-1.25] to [1.03-1.30], and in runs where
 * it was worse, a real 1.2x gain came out a tie.
 *
 * The verdict weighs the mean of the other pairs' figures and its 95%
 * interval (Student's t over the pairs, so few pairs give a wide one): the
 * placement is kept only when the whole interval lies above the profile's
 * keep_pct, handed back as soon as it lies wholly below, and handed back too
 * when max_ticks weighed windows still leave it straddling keep_pct: ties go
 * to the kernel. A lockstep pair that runs 2x faster packed shows it in 6
 * windows (the first pair, then two weighed; at quick ticks 100 ms apart,
 * about 0.6 s), a tie is called after 18 (about 2-3 s at the quick ticks'
 * budget).
 *
 * A stream is judged by the bytes its two tasks move through read and
 * write calls (TRIAL_BY_BYTES): a pair whose tasks ran at once for more than
 * [pair] max_overlap_pct of a CPU while spread, and moved at least a byte
 * per handoff. Its handoffs mislead: packed, an iperf3 stream moved 1.65x
 * the bytes while its handoffs fell to 0.28x. Nowhere else, as those bytes
 * count files too (a PostgreSQL backend reading its tables).
 *
 * Elsewhere progress is the count of the members' times on a CPU, which
 * measures hand-offs, not work: two busy tasks packed onto one CPU take
 * turns more often while each gets half a CPU. Their run time shows it: it
 * falls from 1.5 CPUs' worth to 1 while their wait for the CPU grows. So a
 * placement whose tasks ran more than [trial] max_run_loss_pct of a CPU
 * less than in the kernel's windows while waiting more is handed back, and
 * so is one that started waiting for CPUs past the run-queue budget.
 *
 * A kept placement is re-checked: a switchback of its own recheck_s after
 * the verdict (doubling while it is kept again, up to 16 times), and at
 * once when its progress moves recheck_drift_pct away from its figure at
 * the verdict or its tasks wait for a CPU max_run_loss_pct of a CPU longer:
 * a lockstep pair that became a pipeline of two busy stages stops gaining
 * from one CPU, and the re-check hands it back. A re-check is a short
 * switchback, recheck_max_ticks (8) weighed windows at most where a trial
 * has max_ticks (16): it confirms a gain measured before, and one that
 * still straddles keep_pct after them is a tie and hands the placement back,
 * as a trial's tie does: what is kept is a gain measured now, not one
 * measured once. Ten windows fit in the quick ticks' burst, so a placement
 * that stopped helping is handed back within a second of its re-check; 18
 * outlast it (beside hackbench, ties came 2.2-2.5 s after the re-check).
 *
 * A kept placement is watched at regular ticks, a second apart, and a
 * change that begins within one tick's window shows only part of itself
 * there: beside hackbench, 7 of 16 drifts were seen a tick late, 1.4-1.55 s
 * after hackbench started. A tick that sees half a drift (the progress
 * 1.22x away, half the band in logs, or half the wait) marks it closer, and
 * a quick tick looks again: its window lies wholly after the change.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy-trial.h"

#include "macro.h"
#include "string-table.h"

/* Progress under this many per second counts as this many: a window in which
 * the group did nothing measurable neither wins nor loses infinitely. */
#define TRIAL_RATE_FLOOR 1.0

/* Re-checks' waits double at most this many times. */
#define TRIAL_RECHECK_DOUBLINGS 4u

TrialMeasure policy_trial_measure(const Profile *p, const Group *g) {
        assert(p);
        assert(g);
        bool stream = g->class == GROUP_PAIR && (g->util - 1.0) * 100 > p->pair_max_overlap_pct;
        return stream && g->io_rate > 0 && g->io_rate >= g->handoff_rate ? TRIAL_BY_BYTES
                                                                         : TRIAL_BY_HANDOFFS;
}

TrialArm policy_trial_arm(unsigned window) {
        unsigned k = window % 4;
        return k == 0 || k == 3 ? TRIAL_ARM_PLACED : TRIAL_ARM_KERNEL;
}

double policy_trial_t95(unsigned df) {
        /* Two-sided 95% quantiles of Student's t, df 1..30; 1.96 beyond. */
        static const double t[] = { 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                    2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                    2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                    2.060,  2.056, 2.052, 2.048, 2.045, 2.042 };
        assert(df > 0);
        return df <= ELEMENTSOF(t) ? t[df - 1] : 1.96;
}

double policy_trial_progress(const Group *g, TrialMeasure m) {
        assert(g);
        return m == TRIAL_BY_BYTES ? g->io_rate : g->handoff_rate;
}

/* Return: the back-off after the reverts-th revert in a row. */
static uint64_t trial_backoff_ns(const Profile *p, unsigned reverts) {
        return (uint64_t)p->trial_backoff_ms * 1000000ULL << MIN(MAX(reverts, 1u) - 1, 4u);
}

/* Return: the wait before the next re-check, after checks re-checks in a row kept it. */
static uint64_t trial_recheck_wait_ns(const Profile *p, unsigned checks) {
        return (uint64_t)p->trial_recheck_s * 1000000000ULL << MIN(checks, TRIAL_RECHECK_DOUBLINGS);
}

static void side_add(TrialSide *s, double rate, const Group *g) {
        double n = s->windows;
        s->rate = (s->rate * n + rate) / (n + 1);
        s->delay_us = (s->delay_us * n + (double)g->runq_delay_us) / (n + 1);
        s->util = (s->util * n + g->util) / (n + 1);
        s->wait = (s->wait * n + g->runq_wait) / (n + 1);
        s->windows++;
}

/* The gain so far and its interval, from the pairs' log ratios. */
static void trial_estimate(PlanTrial *t) {
        if (t->pairs == 0)
                return;
        double n = t->pairs, mean = t->log_sum / n;
        t->gain = exp(mean);
        if (t->pairs < 2) {
                t->gain_lo = t->gain_hi = t->gain;
                return;
        }
        double var = (t->log_sq - n * mean * mean) / (n - 1);
        double half = policy_trial_t95(t->pairs - 1) * sqrt(MAX(var, 0.0) / n);
        t->gain_lo = exp(mean - half);
        t->gain_hi = exp(mean + half);
}

/* Starts a switchback; its first window is placed. */
static void trial_start(PlanTrial *t, TrialMeasure m, bool recheck, bool drifted) {
        *t = (PlanTrial){ .verdict = TRIAL_RUNNING,
                          .measure = m,
                          .arm = TRIAL_ARM_PLACED,
                          .recheck = recheck,
                          .drifted = drifted,
                          .reverts = t->reverts,
                          .checks = t->checks };
}

/* Adds the window that just ended (its side: t->arm) and opens the next. */
static void trial_add_window(PlanTrial *t, const Group *g) {
        if (t->windows < TRIAL_BURN_IN_WINDOWS) {
                t->windows++;
                t->arm = policy_trial_arm(t->windows);
                return;
        }
        double x = policy_trial_progress(g, t->measure);
        side_add(t->arm == TRIAL_ARM_PLACED ? &t->placed : &t->kernel, x, g);
        if (t->windows % 2 == 0)
                t->open_rate = x;
        else {
                /* The pair (windows - 1, windows): one of each side. */
                double placed = t->arm == TRIAL_ARM_PLACED ? x : t->open_rate;
                double kernel = t->arm == TRIAL_ARM_PLACED ? t->open_rate : x;
                double d = log(MAX(placed, TRIAL_RATE_FLOOR) / MAX(kernel, TRIAL_RATE_FLOOR));
                t->log_sum += d;
                t->log_sq += d * d;
                t->pairs++;
                trial_estimate(t);
        }
        t->windows++;
        t->arm = policy_trial_arm(t->windows);
}

/* Whether a kept placement's figures moved share of the way to a drift: its
 * progress by that share of the band (in logs: 1.5x, 1.22x at half), or its
 * wait by that share of max_run_loss_pct. */
static bool trial_drifted_by(const Profile *p, const PlanTrial *t, const Group *g, double share) {
        if (t->verdict != TRIAL_KEPT || g->unmeasured)
                return false;
        double x = policy_trial_progress(g, t->measure), k = t->kept_rate;
        double band = pow(1.0 + p->trial_recheck_drift_pct / 100.0, share);
        bool moved = k > 0 && (x * band < k || x > k * band);
        bool waits = (g->runq_wait - t->kept_wait) * 100 > share * p->trial_max_run_loss_pct;
        return moved || waits;
}

bool policy_trial_drifted(const Profile *p, const PlanTrial *t, const Group *g) {
        assert(p);
        assert(t);
        assert(g);
        return trial_drifted_by(p, t, g, 1.0);
}

bool policy_trial_placed_before(const PlanTrial *t) {
        assert(t);
        return t->verdict != TRIAL_NONE || t->windows > 0 || t->reverts > 0;
}

/* Hands the group back after a verdict against it. */
static void trial_revert(const Profile *p, PlanTrial *t, const char *cls, TrialBack why,
                         uint64_t now_ns, PlanGroup *pg) {
        t->verdict = TRIAL_REVERTED;
        t->back = why;
        t->arm = TRIAL_ARM_PLACED;
        t->reverts++;
        t->checks = 0;
        uint64_t backoff = trial_backoff_ns(p, t->reverts);
        t->retry_ns = now_ns + backoff;
        plan_group_set_reason(pg,
                              "%s: placed, %s (%.2fx [%.2f-%.2f] the %s/s left to the kernel "
                              "over %u windows; ran %.2f -> %.2f CPUs, run-queue delay %.0f -> "
                              "%.0f us); handed back, not tried again for %" PRIu64 " s",
                              cls, trial_back_words(why), t->gain, t->gain_lo, t->gain_hi,
                              trial_measure_to_string(t->measure), t->windows, t->kernel.util,
                              t->placed.util, t->kernel.delay_us, t->placed.delay_us,
                              (uint64_t)(backoff / 1000000000ULL));
        plan_group_leave(pg);
}

/* Judges a running trial after its window was added. */
static void trial_judge(const Profile *p, PlanTrial *t, const char *cls, uint64_t now_ns,
                        PlanGroup *pg) {
        unsigned weighed = t->windows - MIN(t->windows, TRIAL_BURN_IN_WINDOWS);
        if (weighed < MAX(p->trial_ticks, 2u) || weighed % 2)
                return; /* a verdict weighs whole pairs */
        double keep = p->trial_keep_pct / 100.0;
        unsigned most = t->recheck ? p->trial_recheck_max_ticks : p->trial_max_ticks;
        bool last = weighed >= MAX(most, p->trial_ticks);
        bool waits = t->placed.delay_us > p->runq_delay_budget_us &&
                     t->placed.delay_us > t->kernel.delay_us;
        bool squeezed = t->measure == TRIAL_BY_HANDOFFS &&
                        (t->kernel.util - t->placed.util) * 100 > p->trial_max_run_loss_pct &&
                        t->placed.wait > t->kernel.wait;

        if (t->gain_hi < keep)
                trial_revert(p, t, cls, TRIAL_BACK_WORSE, now_ns, pg);
        else if (waits)
                trial_revert(p, t, cls, TRIAL_BACK_WAITED, now_ns, pg);
        else if (squeezed)
                trial_revert(p, t, cls, TRIAL_BACK_SQUEEZED, now_ns, pg);
        else if (t->gain_lo > keep) {
                t->verdict = TRIAL_KEPT;
                t->arm = TRIAL_ARM_PLACED;
                t->reverts = 0;
                t->checks = t->recheck ? t->checks + 1 : 0;
                t->recheck_ns = now_ns + trial_recheck_wait_ns(p, t->checks);
                t->kept_rate = t->placed.rate;
                t->kept_wait = t->placed.wait;
        } else if (last) {
                trial_revert(p, t, cls, TRIAL_BACK_TIE, now_ns, pg);
        }
}

void policy_trial_step(const Profile *p, const Group *g, const PlanGroup *memory,
                       const PlanGroup *prev, uint64_t now_ns, bool advise, PlanGroup *pg) {
        assert(p);
        assert(g);
        assert(pg);
        assert(!prev || prev == memory);
        /* A stream packed onto one CPU can look solo for a tick (its wakeups
         * fall): its back-off must not end there (a long-lived placed beside an
         * iperf3 stream tried it again 22 s into a 30 s back-off, and never
         * doubled it). */
        PlanTrial t = memory ? memory->trial : (PlanTrial){ 0 };
        bool closer = t.closer; /* this tick is the look again it asked for */
        t.closer = false;
        bool was = prev && prev->managed && !prev->waiting;
        const char *cls = group_class_to_string(g->class);

        if (!pg->managed) {
                if (t.verdict == TRIAL_RUNNING || t.verdict == TRIAL_KEPT)
                        t.verdict = TRIAL_NONE; /* cut short: widened out, or its CPUs went */
                t.arm = TRIAL_ARM_PLACED;
                pg->trial = t;
                return;
        }
        if (!was) {
                if (t.verdict == TRIAL_REVERTED && now_ns < t.retry_ns) {
                        plan_group_set_reason(
                                pg,
                                "%s: placed, %s (%.2fx [%.2f-%.2f] the %s/s left to the "
                                "kernel over %u windows); not tried again for %" PRIu64
                                " s after that",
                                cls, trial_back_words(t.back), t.gain, t.gain_lo, t.gain_hi,
                                trial_measure_to_string(t.measure), t.windows,
                                (uint64_t)(trial_backoff_ns(p, t.reverts) / 1000000000ULL));
                        plan_group_leave(pg);
                        pg->trial = t;
                        return;
                }
                /* Placed anew: at once, and the switchback measures it from here. */
                trial_start(&t, policy_trial_measure(p, g), false, false);
                pg->trial = t;
                return;
        }
        if (g->unmeasured || advise) {
                pg->trial = t; /* nothing to learn this tick (advised: nothing applied) */
                return;
        }
        bool drifted = policy_trial_drifted(p, &t, g);
        if (t.verdict == TRIAL_KEPT && (now_ns >= t.recheck_ns || drifted))
                trial_start(&t, t.measure, true, drifted); /* this tick opens its first window */
        else if (t.verdict == TRIAL_KEPT)
                /* A change that began within this tick's window shows part of
                 * itself: look again at a quick tick (once: a half drift that
                 * stays waits for the next regular tick). */
                t.closer = !closer && trial_drifted_by(p, &t, g, 0.5);
        else if (t.verdict == TRIAL_RUNNING) {
                trial_add_window(&t, g);
                /* A stream after all, by the kernel's first window: a whole window of it
                 * spread, where the tick that placed it may have seen a few milliseconds
                 * (a pipe stream placed 23 ms after its first wakeups: 0.95 CPUs' worth
                 * then, 1.73 in that window, and judged by handoffs it showed 386x).
                 * Only that way: the window may also find it still where placed put it
                 * (the kernel had not spread that stream within 100 ms in 2 of 6 live
                 * runs). Nothing was weighed before it. A re-check keeps its verdict's. */
                if (t.windows == TRIAL_BURN_IN_WINDOWS && !t.recheck &&
                    policy_trial_measure(p, g) == TRIAL_BY_BYTES)
                        t.measure = TRIAL_BY_BYTES;
                trial_judge(p, &t, cls, now_ns, pg);
        } else if (t.verdict != TRIAL_KEPT)
                trial_start(&t, policy_trial_measure(p, g), false,
                            false); /* placed, never judged */
        pg->trial = t;
}
