/* SPDX-License-Identifier: MIT */
/*
 * placed's metrics as text for Prometheus: a pure formatter from a plain
 * struct of figures (MetricsFigures, filled by the daemon from its state),
 * and the atomic, symlink-safe writer of the textfile that node_exporter's
 * textfile collector reads.
 *
 * Two dialects come out of the one formatter, with the same families,
 * sample names, labels, values and order; they differ only where the two
 * formats' rules differ (see the top of metrics-text.c): OpenMetrics 1.0 for
 * placectl metrics, and the Prometheus text format 0.0.4 for the textfile,
 * which is what node_exporter and Debian's promtool 2.42 parse.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group.h"
#include "idle.h"
#include "plan.h"
#include "topology.h"

typedef enum MetricsFormat {
        METRICS_FORMAT_OPENMETRICS, /* OpenMetrics 1.0 text, application/openmetrics-text */
        METRICS_FORMAT_PROMETHEUS,  /* Prometheus text 0.0.4: node_exporter, promtool */
        _METRICS_FORMAT_MAX,
} MetricsFormat;

/* "openmetrics", "prometheus"; NULL out of range. */
const char *metrics_format_to_string(MetricsFormat f);
/* Return: the format, or -EINVAL for an unknown name. */
int metrics_format_from_string(const char *s);

/* One CPU's figures of the last tick. */
typedef struct MetricsCpu {
        int cpu;
        double busy_ratio;
        unsigned n_states; /* cpuidle states; 0 without a cpuidle driver */
        char state_names[IDLE_MAX_STATES][IDLE_NAME_MAX];
        double state_ratio[IDLE_MAX_STATES]; /* residency over the tick */
        double other_idle_ratio;             /* idle in no cpuidle state */
} MetricsCpu;

/* One online CPU's kind and capacity (the topology's, read once at start). */
typedef struct MetricsCpuCapacity {
        int cpu;
        TopoCoreKind kind;
        unsigned capacity; /* 1024 = the biggest CPU */
} MetricsCpuCapacity;

/* One stage of the last tick and the CPU time it took. */
typedef struct MetricsTickStage {
        const char *name; /* "sample", "model", "decide", "apply" */
        double cpu_seconds;
} MetricsTickStage;

/*
 * The buckets of placed_trial_verdict_gain: upper bounds of the gain
 * (progress placed over progress left to the kernel), dense around 1 where
 * keep_pct lies (power-first 0.9, balanced 1.0, latency-first 1.03), then a
 * clear gain, a 2x and a 4x; the last bucket is +Inf.
 */
#define METRICS_GAIN_BUCKETS 11
extern const double metrics_gain_bounds[METRICS_GAIN_BUCKETS - 1];

/* Observed gains: how many fell in each bucket (not cumulative), and their sum. */
typedef struct MetricsGains {
        uint64_t bucket[METRICS_GAIN_BUCKETS]; /* [i]: above bound i - 1, at most bound i */
        double sum;
} MetricsGains;

/*
 * What the trials' verdicts stood on (plan.h, PlanTrial), tallied over
 * ticks by metrics_trials_count() and metrics_trials_add(). Verdicts given
 * are KEPT and REVERTED, the arrays' other entries stay 0. Group ids are
 * not kept: the metrics label nothing per group.
 */
typedef struct MetricsTrials {
        uint64_t windows[_TRIAL_VERDICT_MAX]; /* switchback windows behind the verdicts given */
        MetricsGains gains[_TRIAL_VERDICT_MAX];
        uint64_t rechecks;         /* re-checks of kept placements started */
        uint64_t rechecks_drifted; /* of those, started at once by a drift */
        uint64_t ties;             /* handed back after the last window without a clear answer */
        TrialVerdict last_verdict; /* the last verdict given: KEPT, REVERTED; NONE before any */
        double last_gain, last_gain_lo, last_gain_hi;
        unsigned last_windows;
} MetricsTrials;

/*
 * metrics_trials_count() - tally one group's trial between two ticks: was
 * its verdict at the earlier (TRIAL_NONE for a group new to it), is its
 * trial at the later. A trial going from RUNNING to KEPT or REVERTED gave a
 * verdict: its windows and gain are counted, and it becomes the last; one
 * going from KEPT to RUNNING as a re-check started one.
 */
void metrics_trials_count(MetricsTrials *t, TrialVerdict was, const PlanTrial *is);

/* metrics_trials_add() - add the tally of a later span (one tick) to sum. */
void metrics_trials_add(MetricsTrials *sum, const MetricsTrials *t);

/* Everything the metrics say, as plain figures. Strings are borrowed. */
typedef struct MetricsFigures {
        const char *version;
        const char *mode;           /* "enforce", "advise" */
        const char *wake_source;    /* "bpf", "perf", "replay", "none" */
        const char *profile;        /* active profile */
        const char *profile_source; /* why: "held", "chosen", "followed", "configured" */
        unsigned n_holds;

        unsigned groups[_GROUP_CLASS_MAX][2]; /* [class][managed: 0 left alone, 1 placed] */
        uint64_t placement_changes;
        uint64_t trials_started;
        uint64_t trial_verdicts[_TRIAL_VERDICT_MAX]; /* trials that ended in KEPT, REVERTED,
                                                       NONE (cut short) */
        MetricsTrials trials; /* what the verdicts stood on, re-checks, ties */

        uint64_t wakeups_sampled, wakeups_softirq, wakeups_skipped, wakeups_lost;
        double sampler_ns_per_wakeup; /* 0 unknown */
        bool sampler_resting;         /* its wake path's program detached (wake-rest.h) */
        double sampler_rested_seconds;

        double process_cpu_seconds;
        uint64_t process_rss_bytes;
        double process_start_time_seconds; /* since the epoch */

        uint64_t ticks;
        uint64_t quick_ticks; /* of those, quick ones */
        uint64_t reloads;
        double last_tick_duration_seconds;
        double last_tick_timestamp_seconds;  /* since the epoch; 0 before the first tick */
        const MetricsTickStage *tick_stages; /* the last tick's, in the pipeline's order */
        unsigned n_tick_stages;

        const MetricsCpuCapacity *capacities; /* every online CPU */
        unsigned n_capacities;
        TopoCapacitySource capacity_source; /* what the capacities came from */

        const MetricsCpu *cpus; /* CPUs with figures for the last tick */
        unsigned n_cpus;

        bool have_energy;                 /* an estimate was made (after the second tick) */
        double energy_active_cpus;        /* the last tick's estimate (active-CPU equivalents) */
        double energy_active_cpu_seconds; /* its integral over time since start */
        double rapl_watts;                /* < 0: no RAPL */
} MetricsFigures;

/*
 * metrics_text_format() - the metrics in the given format, ending with the
 * line "# EOF" (in the Prometheus format a comment that marks a whole file).
 *
 * Return: 0 and *ret (malloc'd, NUL-terminated) and *ret_len; -EINVAL for
 * an unknown format; -ENOMEM.
 */
int metrics_text_format(const MetricsFigures *f, MetricsFormat format, char **ret, size_t *ret_len);

/*
 * metrics_textfile_write() - replace path with text atomically: the text is
 * written to ".NAME.tmp" in the same directory, which is then renamed over
 * path, so a reader sees the old file or the new one, never a part. Nothing
 * is followed: the directory is opened with O_NOFOLLOW, whatever sits at the
 * temporary name (a planted symbolic link) is removed and the file created
 * with O_EXCL|O_NOFOLLOW, and rename(2) replaces a link at path instead of
 * writing through it. On any error (-ENOSPC: a full disk) the temporary
 * file is removed and path keeps its previous content.
 *
 * Return: 0; -ENOENT the directory is missing; -ELOOP the directory is a
 * symbolic link; -ENOTDIR; -EACCES the directory is writable by group or
 * others and not sticky; -EISDIR path is a directory; other negative errno
 * from the writes (-ENOSPC, -EDQUOT, -EROFS ...).
 */
int metrics_textfile_write(const char *path, const char *text, size_t len);

/* Words for metrics_textfile_write()'s errors about the directory; NULL for others. */
const char *metrics_textfile_strerror(int r);

/*
 * metrics_read_process() - the calling process's CPU time (user + system,
 * getrusage()) and resident set (PROCFS_ROOT/self/statm).
 * Return: 0, or negative errno (then *ret_rss_bytes is 0).
 */
int metrics_read_process(const char *procfs_root, double *ret_cpu_seconds, uint64_t *ret_rss_bytes);
