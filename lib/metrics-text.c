/* SPDX-License-Identifier: MIT */
/*
 * placed's metrics as text (see metrics-text.h), and the textfile writer.
 *
 * Why two dialects from one formatter. The issue asks for the OpenMetrics
 * text format and for Debian's promtool (2.42) to pass it. promtool 2.42's
 * "check metrics" parses the Prometheus text format 0.0.4 (the parser
 * node_exporter's textfile collector uses too) and lints it. The two agree on
 * everything placed emits but one thing, counters:
 *
 *   - OpenMetrics names the family without "_total" and its sample with it
 *     ("# TYPE placed_ticks counter" then "placed_ticks_total 5"); a family
 *     called placed_ticks_total would clash with its own sample, which a
 *     strict parser (python3-prometheus-client's) rejects.
 *   - The 0.0.4 format wants HELP and TYPE to name the sample itself
 *     ("# TYPE placed_ticks_total counter"); given the OpenMetrics lines,
 *     promtool takes placed_ticks_total for a second family without help or
 *     type and fails ("no help text"), and node_exporter would export an
 *     untyped series.
 *
 * No single text satisfies both, so the dialect is a parameter and only the
 * counters' HELP and TYPE lines and the "# UNIT" lines depend on it: the
 * families, sample names, labels, values and order are the same. What
 * promtool 2.42 accepts was checked by hand: "# EOF" and "# UNIT" lines are
 * comments to it (exit 0, no lint), "# TYPE x info" is a parse error, so the
 * info-style families are gauges named *_info in both dialects (valid
 * OpenMetrics too). The Prometheus dialect ends with "# EOF" as well: a
 * comment there, it lets a reader of the textfile see that it is whole.
 *
 * A histogram (the trials' gains) is "histogram" in both, its HELP and TYPE
 * naming the family and its samples ending in _bucket, _sum and _count. Its
 * le bounds are spelt as OpenMetrics wants them canonical ("1.0", "+Inf");
 * promtool and node_exporter read "1.0" as the same number, so both dialects
 * keep one spelling and the same series.
 *
 * HELP texts hold no double quote: OpenMetrics wants it escaped there, the
 * 0.0.4 format refuses the escape.
 *
 * Families without samples are left out (0.0.4 parsers warn about a HELP
 * with nothing under it); counters come from the daemon, which keeps them
 * across ticks and reloads, so they never go down while placed runs.
 */
#include "metrics-text.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "string-table.h"

static const char *const metrics_format_table[_METRICS_FORMAT_MAX] = {
        [METRICS_FORMAT_OPENMETRICS] = "openmetrics",
        [METRICS_FORMAT_PROMETHEUS] = "prometheus",
};

DEFINE_STRING_TABLE_LOOKUP(metrics_format, MetricsFormat);

typedef enum FamilyType {
        FAMILY_GAUGE,
        FAMILY_COUNTER,
        FAMILY_HISTOGRAM,
        _FAMILY_TYPE_MAX,
} FamilyType;

static const char *const family_type_table[_FAMILY_TYPE_MAX] = {
        [FAMILY_GAUGE] = "gauge",
        [FAMILY_COUNTER] = "counter",
        [FAMILY_HISTOGRAM] = "histogram",
};

/*
 * A metric family. name is the OpenMetrics family name: a counter's samples
 * add "_total", a histogram's "_bucket", "_sum" and "_count".
 */
typedef struct Family {
        const char *name;
        FamilyType type;
        const char *unit; /* OpenMetrics UNIT, a suffix of name; NULL none */
        const char *help;
} Family;

typedef struct Writer {
        FILE *f;
        MetricsFormat format;
        const Family *current; /* whose HELP and TYPE were written last */
} Writer;

/* Writes s with the escapes a label value (quote too) or a HELP text needs. */
static void write_escaped(FILE *f, const char *s, bool quote) {
        for (; *s; s++)
                if (*s == '\\')
                        fputs("\\\\", f);
                else if (*s == '\n')
                        fputs("\\n", f);
                else if (*s == '"' && quote)
                        fputs("\\\"", f);
                else
                        fputc(*s, f);
}

static void write_header(Writer *w, const Family *fam) {
        bool om = w->format == METRICS_FORMAT_OPENMETRICS;
        const char *suffix = fam->type == FAMILY_COUNTER && !om ? "_total" : "";

        fprintf(w->f, "# HELP %s%s ", fam->name, suffix);
        write_escaped(w->f, fam->help, false);
        assert((unsigned)fam->type < _FAMILY_TYPE_MAX);
        fprintf(w->f, "\n# TYPE %s%s %s\n", fam->name, suffix, family_type_table[fam->type]);
        if (om && fam->unit)
                fprintf(w->f, "# UNIT %s %s\n", fam->name, fam->unit);
        w->current = fam;
}

/* Sample value: integers as such; NaN and infinities spelt as both formats want. */
static void write_value(FILE *f, double v) {
        if (isnan(v))
                fputs("NaN", f);
        else if (isinf(v))
                fputs(v > 0 ? "+Inf" : "-Inf", f);
        else if (v == floor(v) && fabs(v) < 1e15)
                fprintf(f, "%.0f", v);
        else
                fprintf(f, "%.15g", v); /* a timestamp keeps its fraction */
}

/* One sample of fam named with suffix after the family's name; labels as sample()'s. */
static void sample_va(Writer *w, const Family *fam, const char *suffix, double value, va_list ap) {
        const char *name;
        bool first = true;

        if (w->current != fam)
                write_header(w, fam);
        fprintf(w->f, "%s%s", fam->name, suffix);
        while ((name = va_arg(ap, const char *))) {
                const char *v = va_arg(ap, const char *);
                fprintf(w->f, "%s%s=\"", first ? "{" : ",", name);
                write_escaped(w->f, v ? v : "", true);
                fputc('"', w->f);
                first = false;
        }
        fputs(first ? " " : "} ", w->f);
        write_value(w->f, value);
        fputc('\n', w->f);
}

/*
 * One sample of a gauge or counter fam; labels are name, value pairs ending
 * with NULL. The family's HELP and TYPE come first, once.
 */
static void sample(Writer *w, const Family *fam, double value, ...) {
        va_list ap;

        assert(fam->type != FAMILY_HISTOGRAM);
        va_start(ap, value);
        sample_va(w, fam, fam->type == FAMILY_COUNTER ? "_total" : "", value, ap);
        va_end(ap);
}

/* One sample of a histogram: suffix "_bucket" (the last label le), "_sum" or "_count". */
static void sample_part(Writer *w, const Family *fam, const char *suffix, double value, ...) {
        va_list ap;

        assert(fam->type == FAMILY_HISTOGRAM);
        va_start(ap, value);
        sample_va(w, fam, suffix, value, ap);
        va_end(ap);
}

/* A counter's value: uint64 figures go through double (exact up to 2^53). */
#define U(x) ((double)(x))

static const Family fam_info = { "placed_info", FAMILY_GAUGE, NULL,
                                 "placed's version, mode (enforce or advise) and wake sampler; "
                                 "always 1" };
static const Family fam_profile = { "placed_profile_info", FAMILY_GAUGE, NULL,
                                    "The active profile and why it is in force (source: held, "
                                    "chosen by a person, followed from power-profiles-daemon, "
                                    "or configured); always 1" };
static const Family fam_holds = { "placed_profile_holds", FAMILY_GAUGE, NULL,
                                  "Profile holds in force" };
static const Family fam_groups = { "placed_groups", FAMILY_GAUGE, NULL,
                                   "Task groups of the last tick by class; managed: placed by "
                                   "placed (true) or left to the kernel (false)" };
static const Family fam_changes = { "placed_placement_changes", FAMILY_COUNTER, NULL,
                                    "Groups placed, moved or handed back (advised in advise "
                                    "mode)" };
static const Family fam_trials = { "placed_trials_started", FAMILY_COUNTER, NULL,
                                   "Placements put on trial" };
static const Family fam_verdicts = { "placed_trial_verdicts", FAMILY_COUNTER, NULL,
                                     "Trials ended, by verdict: kept, reverted (measured worse, "
                                     "handed back) or cut_short (widened out or its CPUs went)" };
static const Family fam_windows = { "placed_trial_windows", FAMILY_COUNTER, NULL,
                                    "Switchback windows measured behind the verdicts given, by "
                                    "verdict: kept or reverted" };
static const Family fam_rechecks = { "placed_trial_rechecks", FAMILY_COUNTER, NULL,
                                     "Re-checks of kept placements started: a switchback run "
                                     "again, when due or at once after a drift" };
static const Family fam_rechecks_drifted = { "placed_trial_rechecks_drifted", FAMILY_COUNTER, NULL,
                                             "Of the re-checks, those started at once as the "
                                             "placement's progress or run-queue wait drifted "
                                             "from its figures at the verdict" };
static const Family fam_ties = { "placed_trial_ties", FAMILY_COUNTER, NULL,
                                 "Placements handed back as a tie: after the last window, no "
                                 "clear gain and no clear loss (ties go to the kernel)" };
static const Family fam_gain = { "placed_trial_verdict_gain", FAMILY_HISTOGRAM, NULL,
                                 "The gains behind the verdicts given, by verdict: progress "
                                 "placed over progress left to the kernel, the mean over a "
                                 "trial's pairs of windows" };
static const Family fam_last_gain = { "placed_trial_last_gain", FAMILY_GAUGE, NULL,
                                      "The last verdict's gain (placed over kernel): bound mean, "
                                      "and low and high of its 95% interval" };
static const Family fam_last_windows = { "placed_trial_last_windows", FAMILY_GAUGE, NULL,
                                         "Switchback windows behind the last verdict" };
static const Family fam_last_kept = { "placed_trial_last_kept", FAMILY_GAUGE, NULL,
                                      "1 when the last verdict kept the placement, 0 when it "
                                      "handed it back" };
static const Family fam_wakeups = { "placed_sampler_wakeups", FAMILY_COUNTER, NULL,
                                    "Wakeups the sampler saw: sampled (attributed to a waker), "
                                    "skipped (hard IRQ, idle, kernel threads, exited tasks) or "
                                    "lost (full maps or rings)" };
static const Family fam_softirq = { "placed_sampler_softirq_wakeups", FAMILY_COUNTER, NULL,
                                    "Sampled wakeups made in softirq context" };
static const Family fam_sampler_cost = { "placed_sampler_seconds_per_wakeup", FAMILY_GAUGE, NULL,
                                         "The BPF sampler's run time per wakeup over the last "
                                         "tick; 0 when unknown (perf, or bpf_stats off)" };
static const Family fam_resting = { "placed_sampler_resting", FAMILY_GAUGE, NULL,
                                    "1 while the BPF sampler rests: nothing new, waiting or on "
                                    "trial, its sched_waking program detached" };
static const Family fam_rested = { "placed_sampler_rested_seconds", FAMILY_COUNTER, "seconds",
                                   "Time the BPF sampler rested" };
static const Family fam_cpu_time = { "placed_process_cpu_seconds", FAMILY_COUNTER, "seconds",
                                     "CPU time placed itself used, user and system" };
static const Family fam_rss = { "placed_process_resident_memory_bytes", FAMILY_GAUGE, "bytes",
                                "placed's resident memory" };
static const Family fam_start = { "placed_process_start_time_seconds", FAMILY_GAUGE, "seconds",
                                  "When placed started, since the Unix epoch" };
static const Family fam_ticks = { "placed_ticks", FAMILY_COUNTER, NULL,
                                  "Ticks run (sample, model, decide, apply)" };
static const Family fam_quick_ticks = { "placed_quick_ticks", FAMILY_COUNTER, NULL,
                                        "Of the ticks, the quick ones: brought forward because "
                                        "something new appeared or a placement is measured" };
static const Family fam_reloads = { "placed_reloads", FAMILY_COUNTER, NULL,
                                    "Successful configuration reloads" };
static const Family fam_tick_cost = { "placed_tick_duration_seconds", FAMILY_GAUGE, "seconds",
                                      "How long the last tick took" };
static const Family fam_tick_stage = { "placed_tick_stage_cpu_seconds", FAMILY_GAUGE, "seconds",
                                       "CPU time placed spent in each stage of the last tick "
                                       "(its own thread's clock)" };
static const Family fam_tick_time = { "placed_last_tick_timestamp_seconds", FAMILY_GAUGE, "seconds",
                                      "When the last tick ran, since the Unix epoch" };
/* placed_cpu_capacity's HELP says where the figures came from: one per source. */
static const char *const capacity_help[_TOPO_CAPACITY_SOURCE_MAX] = {
        [TOPO_CAPACITY_NONE] = "Each online CPU's relative capacity, 1024 = the biggest CPU, "
                               "and its kind; nothing told the CPUs apart, so all are 1024",
        [TOPO_CAPACITY_CPU_CAPACITY] = "Each online CPU's relative capacity, 1024 = the biggest "
                                       "CPU, and its kind; from the kernel's cpu_capacity",
        [TOPO_CAPACITY_CPPC] = "Each online CPU's relative capacity, 1024 = the biggest CPU, and "
                               "its kind; from CPPC highest_perf, per kind",
        [TOPO_CAPACITY_PMU] = "Each online CPU's relative capacity, 1024 = the biggest CPU, and "
                              "its kind; from the hybrid PMU's kinds, at default ratios",
};
static const Family fam_busy = { "placed_cpu_busy_ratio", FAMILY_GAUGE, "ratio",
                                 "Share of the last tick each CPU was busy (/proc/stat)" };
static const Family fam_residency = { "placed_cpu_idle_residency_ratio", FAMILY_GAUGE, "ratio",
                                      "Share of the last tick each CPU spent in each idle state; "
                                      "state none: idle outside any cpuidle state (all idle "
                                      "time without a cpuidle driver)" };
static const Family fam_energy = { "placed_energy_estimate_active_cpus", FAMILY_GAUGE, NULL,
                                   "Estimated power of the last tick in active-CPU equivalents "
                                   "(1 = one CPU flat out), from busy time, idle-state "
                                   "residency and idle exits" };
static const Family fam_energy_total = { "placed_energy_estimate_active_cpu_seconds",
                                         FAMILY_COUNTER, "seconds",
                                         "The energy estimate summed over time: active-CPU "
                                         "seconds" };
static const Family fam_rapl = { "placed_rapl_power_watts", FAMILY_GAUGE, "watts",
                                 "Package power measured by RAPL over the last tick" };

static void write_state(Writer *w, const MetricsFigures *f) {
        sample(w, &fam_info, 1, "version", f->version, "mode", f->mode, "wake_source",
               f->wake_source, NULL);
        sample(w, &fam_profile, 1, "profile", f->profile, "source", f->profile_source, NULL);
        sample(w, &fam_holds, f->n_holds, NULL);
        for (int c = 0; c < _GROUP_CLASS_MAX; c++)
                for (int managed = 0; managed < 2; managed++)
                        sample(w, &fam_groups, f->groups[c][managed], "class",
                               group_class_to_string(c), "managed", managed ? "true" : "false",
                               NULL);
        sample(w, &fam_changes, U(f->placement_changes), NULL);
        sample(w, &fam_trials, U(f->trials_started), NULL);
        sample(w, &fam_verdicts, U(f->trial_verdicts[TRIAL_KEPT]), "verdict", "kept", NULL);
        sample(w, &fam_verdicts, U(f->trial_verdicts[TRIAL_REVERTED]), "verdict", "reverted", NULL);
        sample(w, &fam_verdicts, U(f->trial_verdicts[TRIAL_NONE]), "verdict", "cut_short", NULL);
}

/* A bucket's bound as OpenMetrics spells it, the same in both dialects: "1.0", "0.97", "+Inf". */
static void format_bound(char *buf, size_t size, double bound) {
        if (isinf(bound)) {
                snprintf(buf, size, "+Inf");
                return;
        }
        int n = snprintf(buf, size, "%.15g", bound);
        if (n > 0 && (size_t)n + 2 < size && !strpbrk(buf, ".e"))
                strcat(buf, ".0");
}

/* One verdict's histogram of gains: cumulative buckets, then the sum and the count. */
static void write_gains(Writer *w, const char *verdict, const MetricsGains *g) {
        uint64_t n = 0;
        char le[32];

        for (unsigned i = 0; i < METRICS_GAIN_BUCKETS; i++) {
                n += g->bucket[i];
                format_bound(le, sizeof(le),
                             i + 1 < METRICS_GAIN_BUCKETS ? metrics_gain_bounds[i] : INFINITY);
                sample_part(w, &fam_gain, "_bucket", U(n), "verdict", verdict, "le", le, NULL);
        }
        sample_part(w, &fam_gain, "_sum", g->sum, "verdict", verdict, NULL);
        sample_part(w, &fam_gain, "_count", U(n), "verdict", verdict, NULL);
}

static void write_trials(Writer *w, const MetricsTrials *t) {
        sample(w, &fam_windows, U(t->windows[TRIAL_KEPT]), "verdict", "kept", NULL);
        sample(w, &fam_windows, U(t->windows[TRIAL_REVERTED]), "verdict", "reverted", NULL);
        sample(w, &fam_rechecks, U(t->rechecks), NULL);
        sample(w, &fam_rechecks_drifted, U(t->rechecks_drifted), NULL);
        sample(w, &fam_ties, U(t->ties), NULL);
        write_gains(w, "kept", &t->gains[TRIAL_KEPT]);
        write_gains(w, "reverted", &t->gains[TRIAL_REVERTED]);
        if (t->last_verdict != TRIAL_KEPT && t->last_verdict != TRIAL_REVERTED)
                return; /* no verdict given yet */
        sample(w, &fam_last_gain, t->last_gain, "bound", "mean", NULL);
        sample(w, &fam_last_gain, t->last_gain_lo, "bound", "low", NULL);
        sample(w, &fam_last_gain, t->last_gain_hi, "bound", "high", NULL);
        sample(w, &fam_last_windows, t->last_windows, NULL);
        sample(w, &fam_last_kept, t->last_verdict == TRIAL_KEPT, NULL);
}

static void write_sampler(Writer *w, const MetricsFigures *f) {
        sample(w, &fam_wakeups, U(f->wakeups_sampled), "result", "sampled", NULL);
        sample(w, &fam_wakeups, U(f->wakeups_skipped), "result", "skipped", NULL);
        sample(w, &fam_wakeups, U(f->wakeups_lost), "result", "lost", NULL);
        sample(w, &fam_softirq, U(f->wakeups_softirq), NULL);
        sample(w, &fam_sampler_cost, f->sampler_ns_per_wakeup * 1e-9, NULL);
        sample(w, &fam_resting, f->sampler_resting, NULL);
        sample(w, &fam_rested, f->sampler_rested_seconds, NULL);
}

static void write_process(Writer *w, const MetricsFigures *f) {
        sample(w, &fam_cpu_time, f->process_cpu_seconds, NULL);
        if (f->process_rss_bytes > 0)
                sample(w, &fam_rss, U(f->process_rss_bytes), NULL);
        sample(w, &fam_start, f->process_start_time_seconds, NULL);
        sample(w, &fam_ticks, U(f->ticks), NULL);
        sample(w, &fam_quick_ticks, U(f->quick_ticks), NULL);
        sample(w, &fam_reloads, U(f->reloads), NULL);
        if (f->ticks > 0) {
                sample(w, &fam_tick_cost, f->last_tick_duration_seconds, NULL);
                for (unsigned i = 0; i < f->n_tick_stages; i++)
                        sample(w, &fam_tick_stage, f->tick_stages[i].cpu_seconds, "stage",
                               f->tick_stages[i].name, NULL);
                sample(w, &fam_tick_time, f->last_tick_timestamp_seconds, NULL);
        }
}

static void write_cpus(Writer *w, const MetricsFigures *f) {
        assert((unsigned)f->capacity_source < _TOPO_CAPACITY_SOURCE_MAX);
        const Family capacity = { "placed_cpu_capacity", FAMILY_GAUGE, NULL,
                                  capacity_help[f->capacity_source] };
        char cpu[16];

        for (unsigned i = 0; i < f->n_capacities; i++) {
                snprintf(cpu, sizeof(cpu), "%d", f->capacities[i].cpu);
                sample(w, &capacity, f->capacities[i].capacity, "cpu", cpu, "kind",
                       topo_core_kind_to_string(f->capacities[i].kind), NULL);
        }
        for (unsigned i = 0; i < f->n_cpus; i++) {
                snprintf(cpu, sizeof(cpu), "%d", f->cpus[i].cpu);
                sample(w, &fam_busy, f->cpus[i].busy_ratio, "cpu", cpu, NULL);
        }
        for (unsigned i = 0; i < f->n_cpus; i++) {
                const MetricsCpu *c = &f->cpus[i];
                snprintf(cpu, sizeof(cpu), "%d", c->cpu);
                for (unsigned s = 0; s < c->n_states && s < IDLE_MAX_STATES; s++)
                        sample(w, &fam_residency, c->state_ratio[s], "cpu", cpu, "state",
                               c->state_names[s], NULL);
                sample(w, &fam_residency, c->other_idle_ratio, "cpu", cpu, "state", "none", NULL);
        }
}

static void write_energy(Writer *w, const MetricsFigures *f) {
        if (f->have_energy)
                sample(w, &fam_energy, f->energy_active_cpus, NULL);
        sample(w, &fam_energy_total, f->energy_active_cpu_seconds, NULL);
        if (f->rapl_watts >= 0)
                sample(w, &fam_rapl, f->rapl_watts, NULL);
}

int metrics_text_format(const MetricsFigures *f, MetricsFormat format, char **ret,
                        size_t *ret_len) {
        char *buf = NULL;
        size_t len = 0;

        if (!metrics_format_to_string(format))
                return -EINVAL;
        Writer w = { .f = open_memstream(&buf, &len), .format = format };
        if (!w.f)
                return -ENOMEM;
        write_state(&w, f);
        write_trials(&w, &f->trials);
        write_sampler(&w, f);
        write_process(&w, f);
        write_cpus(&w, f);
        write_energy(&w, f);
        fputs("# EOF\n", w.f);
        bool failed = ferror(w.f);
        if (fclose(w.f) != 0 || failed) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

/* ---- The trials' tally ---- */

const double metrics_gain_bounds[METRICS_GAIN_BUCKETS - 1] = { 0.5,  0.8, 0.9, 0.97, 1.0,
                                                               1.03, 1.1, 1.5, 2.0,  4.0 };

/* A gain that is not a number is not observed: it would spoil the sum for good. */
static void gains_observe(MetricsGains *g, double gain) {
        unsigned i = 0;

        if (!isfinite(gain))
                return;
        while (i + 1 < METRICS_GAIN_BUCKETS && gain > metrics_gain_bounds[i])
                i++;
        g->bucket[i]++;
        g->sum += gain;
}

void metrics_trials_count(MetricsTrials *t, TrialVerdict was, const PlanTrial *is) {
        assert(t);
        assert(is);
        TrialVerdict v = is->verdict;

        if (was == TRIAL_KEPT && v == TRIAL_RUNNING && is->recheck) {
                t->rechecks++;
                if (is->drifted)
                        t->rechecks_drifted++;
                return;
        }
        if (was != TRIAL_RUNNING || (v != TRIAL_KEPT && v != TRIAL_REVERTED))
                return;
        t->windows[v] += is->windows;
        gains_observe(&t->gains[v], is->gain);
        if (v == TRIAL_REVERTED && is->back == TRIAL_BACK_TIE)
                t->ties++;
        t->last_verdict = v;
        t->last_gain = is->gain;
        t->last_gain_lo = is->gain_lo;
        t->last_gain_hi = is->gain_hi;
        t->last_windows = is->windows;
}

void metrics_trials_add(MetricsTrials *sum, const MetricsTrials *t) {
        assert(sum);
        assert(t);
        for (unsigned v = 0; v < _TRIAL_VERDICT_MAX; v++) {
                sum->windows[v] += t->windows[v];
                for (unsigned i = 0; i < METRICS_GAIN_BUCKETS; i++)
                        sum->gains[v].bucket[i] += t->gains[v].bucket[i];
                sum->gains[v].sum += t->gains[v].sum;
        }
        sum->rechecks += t->rechecks;
        sum->rechecks_drifted += t->rechecks_drifted;
        sum->ties += t->ties;
        if (t->last_verdict != TRIAL_NONE) {
                sum->last_verdict = t->last_verdict;
                sum->last_gain = t->last_gain;
                sum->last_gain_lo = t->last_gain_lo;
                sum->last_gain_hi = t->last_gain_hi;
                sum->last_windows = t->last_windows;
        }
}

/* ---- The textfile ---- */

const char *metrics_textfile_strerror(int r) {
        switch (r) {
        case -ENOENT:
                return "its directory does not exist";
        case -ELOOP:
                return "its directory is a symbolic link";
        case -ENOTDIR:
                return "its directory is not a directory";
        case -EACCES:
                return "its directory may be written by group or others and is not sticky";
        case -EISDIR:
                return "it is a directory";
        default:
                return NULL;
        }
}

/* Opens the directory of path, never through a link, and checks who may write there. */
static int textfile_open_dir(const char *path, int *ret_fd, const char **ret_base) {
        const char *slash = strrchr(path, '/');
        if (!slash || slash[1] == '\0')
                return -EINVAL;
        _cleanup_free_ char *dir = slash == path ? strdup("/") : strndup(path, slash - path);
        if (!dir)
                return -ENOMEM;

        struct stat st;
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int r = negative_errno();
                /* O_DIRECTORY reports a link as "not a directory": say what it is */
                if (r == -ENOTDIR && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
                        return -ELOOP;
                return r;
        }
        if (fstat(fd, &st) < 0)
                return negative_errno();
        /* Anyone who may write there could swap the file; sticky (/tmp) stops that. */
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
                return -EACCES;
        *ret_fd = TAKE_FD(fd);
        *ret_base = slash + 1;
        return 0;
}

static int write_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return -EIO;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

/*
 * Not fsync()ed: the file is rewritten every few ticks and a reader needs
 * only atomicity, which rename(2) gives; after a power cut the next write
 * replaces whatever the file system kept.
 */
int metrics_textfile_write(const char *path, const char *text, size_t len) {
        _cleanup_close_ int dir_fd = -1, fd = -1;
        const char *base;
        char tmp[NAME_MAX + 1];

        int r = textfile_open_dir(path, &dir_fd, &base);
        if (r < 0)
                return r;
        if (snprintf(tmp, sizeof(tmp), ".%s.tmp", base) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;

        /* Whatever is there (our leftover, or someone's link) goes; O_EXCL makes our own. */
        if (unlinkat(dir_fd, tmp, 0) < 0 && errno != ENOENT)
                return negative_errno();
        fd = openat(dir_fd, tmp,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                    0644);
        if (fd < 0)
                return negative_errno();
        /* 0644 whatever the umask: node_exporter runs as another user. */
        r = fchmod(fd, 0644) < 0 ? negative_errno() : 0;
        if (r >= 0)
                r = write_all(fd, text, len);
        if (r >= 0 && close(TAKE_FD(fd)) < 0) /* NFS reports a full disk here */
                r = negative_errno();
        if (r >= 0 && renameat(dir_fd, tmp, dir_fd, base) < 0)
                r = negative_errno();
        if (r < 0)
                (void)unlinkat(dir_fd, tmp, 0);
        return r;
}

/* ---- placed's own process ---- */

int metrics_read_process(const char *procfs_root, double *ret_cpu_seconds,
                         uint64_t *ret_rss_bytes) {
        struct rusage ru;
        _cleanup_free_ char *path = NULL;
        unsigned long long size, resident;

        *ret_cpu_seconds = 0;
        *ret_rss_bytes = 0;
        if (getrusage(RUSAGE_SELF, &ru) == 0)
                *ret_cpu_seconds = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                                   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;

        if (asprintf(&path, "%s/self/statm", procfs_root) < 0)
                return -ENOMEM;
        /* Seven numbers of up to 20 digits and their spaces. */
        char buf[256];
        int r = read_small_file(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
                return -EIO;
        long page = sysconf(_SC_PAGESIZE);
        *ret_rss_bytes = (uint64_t)resident * (uint64_t)(page > 0 ? page : 4096);
        return 0;
}
