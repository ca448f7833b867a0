/* SPDX-License-Identifier: MIT */
/*
 * The trial of a placement (PlanTrial in plan.h): a group placed anew is
 * measured before it is kept. Its progress and run-queue delay left to the
 * kernel are the figures to beat; placed, it is kept when it does no worse
 * for the profile, else handed back and not tried again before a back-off
 * that doubles with each revert in a row. Part of the pure policy: no
 * syscalls, no clock, no logging.
 *
 * A stream is judged by the bytes its two tasks move through read and
 * write calls (TRIAL_BY_BYTES): a pair whose tasks ran at once for more than
 * [pair] max_overlap_pct of a CPU while spread, and moved at least a byte
 * per handoff. There its handoffs mislead: measured on kind C, an iperf3
 * stream packed moved 1.65x the bytes while its handoffs fell to 0.28x.
 * Nowhere else, as those bytes count files too: a PostgreSQL backend
 * reading its tables as it started moved 39 MB/s, then 8 MB/s from its
 * shared buffers while its queries ran 2.7x faster packed, and a trial by
 * bytes handed it back.
 *
 * Elsewhere (hand-off pairs, whose progress is their handoffs; fanouts and
 * meshes; send and recv, which the kernel does not count; no iterator and
 * no /proc/TID/io) progress is the count of the members' times on a
 * CPU, which measures hand-offs, not work: two busy tasks packed onto one
 * CPU take turns more often than spread, so the count rises while each
 * gets half a CPU and the work done drops by a third (measured:
 * redis-benchmark -c 32, 18.6k -> 21.7k times on a CPU per second, 58k ->
 * 39k GET/s). What shows it is their run time: it falls from 1.5 CPUs'
 * worth to 1 while their wait for the CPU grows. A hand-off pair packed
 * runs as long as before or longer (0.93 -> 1.0 for the pipe pair), or a
 * few percent less (what packing saves), so [trial] max_run_loss_pct of a
 * CPU lost while waiting more hands a placement back; judged by bytes, the
 * bytes show such a loss themselves.
 *
 * Progress is judged against its own noise. On the 2-CPU VM a pipe pair's
 * ticks left to the kernel ranged 95k-135k handoffs/s from one run to the
 * next (the kernel packs it now and then by itself), and one disturbed tick
 * placed took a two-tick mean 14% below the spread figure although packed
 * it runs about 1.1-1.6x faster. So a difference within two standard errors
 * (from the ticks' deviations) is no verdict yet: the trial measures on, up
 * to [trial] max_ticks, and what is still within noise then counts as no
 * change (see PlanTrial in plan.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy-trial.h"

#include "macro.h"
#include "string-table.h"

TrialMeasure policy_trial_measure(const Profile *p, const Group *g) {
        assert(p);
        assert(g);
        bool stream = g->class == GROUP_PAIR && (g->util - 1.0) * 100 > p->pair_max_overlap_pct;
        return stream && g->io_rate > 0 && g->io_rate >= g->handoff_rate ? TRIAL_BY_BYTES
                                                                         : TRIAL_BY_HANDOFFS;
}

/* Return: the group's progress this tick, in measure m. */
static double trial_progress(const Group *g, TrialMeasure m) {
        return m == TRIAL_BY_BYTES ? g->io_rate : g->handoff_rate;
}

/* Return: the back-off after the reverts-th revert in a row. */
static uint64_t trial_backoff_ns(const Profile *p, unsigned reverts) {
        return (uint64_t)p->trial_backoff_ms * 1000000ULL << MIN(MAX(reverts, 1u) - 1, 4u);
}

/* Return: a mean that weighs the newest figure as much as all before it. */
static double recent_mean(double mean, unsigned n, double x) {
        return n ? (mean + x) / 2 : x;
}

/* Its weights (1/2, 1/4, ...) make it as good as about 3 figures, no more. */
#define RECENT_MEAN_MAX_N 3u

/* Return: the standard deviation of mean's figures after x joins them,
 * given the mean before (mean) and after (mean_new) and their old sd. */
static double sd_step(double sd, double mean, double mean_new, double x, unsigned n, bool recent) {
        double sq = sd * sd + mean * mean; /* the mean of the squares before */
        sq = recent ? recent_mean(sq, n, x * x) : (sq * n + x * x) / (n + 1);
        double var = sq - mean_new * mean_new;
        return var > 0 && isfinite(var) ? sqrt(var) : 0;
}

/*
 * Return: the standard error of after - before, from the ticks' deviations.
 * One figure before (a group placed at its first measured tick) has no
 * deviation of its own; it is taken to be as noisy as a tick placed, not
 * exact: else two steady ticks placed made a 1% difference from it a clear
 * loss (measured: 141760 -> 140059 handoffs/s, handed back).
 */
static double trial_noise(const PlanTrial *t) {
        double nb = MIN(MAX(t->before_ticks, 1u), RECENT_MEAN_MAX_N);
        double na = MAX(t->after_ticks, 1u);
        double sd_before =
                t->before_ticks < 2 ? MAX(t->before_rate_sd, t->after_rate_sd) : t->before_rate_sd;
        return sqrt(sd_before * sd_before / nb + t->after_rate_sd * t->after_rate_sd / na);
}

void policy_trial_step(const Profile *p, const Group *g, const PlanGroup *prev, uint64_t now_ns,
                       bool advise, PlanGroup *pg) {
        assert(p);
        assert(g);
        assert(pg);
        PlanTrial t = prev ? prev->trial : (PlanTrial){ 0 };
        bool was = prev && prev->managed && !prev->waiting;
        double delay = (double)g->runq_delay_us;
        const char *cls = group_class_to_string(g->class);

        if (g->unmeasured) {
                pg->trial = t; /* nothing to learn this tick */
                return;
        }
        if (!was) {
                /* The baseline starts afresh when what it counts changes. */
                TrialMeasure m = policy_trial_measure(p, g);
                if (m != t.measure) {
                        t.measure = m;
                        t.before_ticks = 0;
                        t.before_rate = t.before_rate_sd = 0;
                }
                double x = trial_progress(g, m);
                double rate = recent_mean(t.before_rate, t.before_ticks, x);
                t.before_rate_sd =
                        sd_step(t.before_rate_sd, t.before_rate, rate, x, t.before_ticks, true);
                t.before_rate = rate;
                t.before_delay_us = recent_mean(t.before_delay_us, t.before_ticks, delay);
                t.before_util = recent_mean(t.before_util, t.before_ticks, g->util);
                t.before_wait = recent_mean(t.before_wait, t.before_ticks, g->runq_wait);
                t.before_ticks++;
                if (pg->managed && t.verdict == TRIAL_REVERTED && now_ns < t.retry_ns) {
                        plan_group_set_reason(
                                pg,
                                "%s: placed, it %s (%.0f -> %.0f %s/s, ran %.2f -> "
                                "%.2f CPUs); not tried again for %" PRIu64 " s after that",
                                cls, t.within_noise ? "gained nothing measurable" : "did worse",
                                t.before_rate, t.after_rate, trial_measure_to_string(t.measure),
                                t.before_util, t.after_util,
                                (uint64_t)(trial_backoff_ns(p, t.reverts) / 1000000000ULL));
                        plan_group_leave(pg);
                } else if (pg->managed) {
                        t.verdict = TRIAL_RUNNING;
                        t.after_rate = t.after_delay_us = t.after_util = t.after_wait = 0;
                        t.after_rate_sd = 0;
                        t.after_ticks = 0;
                        t.within_noise = false;
                }
                pg->trial = t;
                return;
        }
        if (t.verdict == TRIAL_RUNNING && !pg->managed) {
                t.verdict = TRIAL_NONE; /* cut short: widened out, or its CPUs went */
        } else if (t.verdict == TRIAL_RUNNING && advise) {
                ; /* nothing applied: nothing to measure */
        } else if (t.verdict == TRIAL_RUNNING) {
                double x = trial_progress(g, t.measure);
                double rate = (t.after_rate * t.after_ticks + x) / (t.after_ticks + 1);
                t.after_rate_sd =
                        sd_step(t.after_rate_sd, t.after_rate, rate, x, t.after_ticks, false);
                t.after_rate = rate;
                t.after_delay_us = (t.after_delay_us * t.after_ticks + delay) / (t.after_ticks + 1);
                t.after_util = (t.after_util * t.after_ticks + g->util) / (t.after_ticks + 1);
                t.after_wait = (t.after_wait * t.after_ticks + g->runq_wait) / (t.after_ticks + 1);
                t.after_ticks++;
        }
        if (t.verdict == TRIAL_RUNNING && t.after_ticks >= p->trial_ticks) {
                /* Progress against keep_pct of before, in standard errors. */
                double diff = t.after_rate - t.before_rate * p->trial_keep_pct / 100.0;
                bool clear = fabs(diff) >= 2 * trial_noise(&t);
                bool last = t.after_ticks >= MAX(p->trial_max_ticks, p->trial_ticks);
                bool slower = clear ? diff < 0 : p->trial_keep_pct > 100;
                bool waits = t.after_delay_us > p->runq_delay_budget_us &&
                             t.after_delay_us > t.before_delay_us;
                bool squeezed = t.measure == TRIAL_BY_HANDOFFS &&
                                (t.before_util - t.after_util) * 100 > p->trial_max_run_loss_pct &&
                                t.after_wait > t.before_wait;
                if (!clear && !last && !waits && !squeezed) {
                        pg->trial = t; /* within noise: measure on */
                        return;
                }
                t.within_noise = !clear && !waits && !squeezed;
                if (slower || waits || squeezed) {
                        t.verdict = TRIAL_REVERTED;
                        t.reverts++;
                        uint64_t backoff = trial_backoff_ns(p, t.reverts);
                        t.retry_ns = now_ns + backoff;
                        t.before_ticks = 0; /* a fresh baseline after the revert */
                        if (squeezed && !slower && !waits)
                                plan_group_set_reason(
                                        pg,
                                        "%s: placed, it did worse (ran %.2f -> %.2f CPUs, "
                                        "waited %.2f -> %.2f: squeezed, more than "
                                        "max_run_loss_pct=%u%%); handed back, not tried again "
                                        "for %" PRIu64 " s",
                                        cls, t.before_util, t.after_util, t.before_wait,
                                        t.after_wait, p->trial_max_run_loss_pct,
                                        (uint64_t)(backoff / 1000000000ULL));
                        else if (t.within_noise)
                                plan_group_set_reason(
                                        pg,
                                        "%s: placed, no gain measured (%.0f -> %.0f %s/s, "
                                        "within noise of +-%.0f after %u ticks; keep_pct=%u%% "
                                        "wants a gain); handed back, not tried again for %" PRIu64
                                        " s",
                                        cls, t.before_rate, t.after_rate,
                                        trial_measure_to_string(t.measure), trial_noise(&t),
                                        t.after_ticks, p->trial_keep_pct,
                                        (uint64_t)(backoff / 1000000000ULL));
                        else
                                plan_group_set_reason(
                                        pg,
                                        "%s: placed, it did worse (%.0f -> %.0f %s/s, "
                                        "run-queue delay %.0f -> %.0f us; noise +-%.0f); handed "
                                        "back, not tried again for %" PRIu64 " s",
                                        cls, t.before_rate, t.after_rate,
                                        trial_measure_to_string(t.measure), t.before_delay_us,
                                        t.after_delay_us, trial_noise(&t),
                                        (uint64_t)(backoff / 1000000000ULL));
                        plan_group_leave(pg);
                } else {
                        t.verdict = TRIAL_KEPT;
                        t.reverts = 0;
                }
        }
        pg->trial = t;
}
