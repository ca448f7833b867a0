/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/metrics-text.c: the formatter on fixed figures (exact lines,
 * both dialects, escaping, families left out when they have nothing to say,
 * values), and the textfile writer on a real directory: atomic replacement
 * (a new inode, no temporary left), links at the temporary name and at the
 * path itself not followed, and the directory checks. A full disk is tested
 * for real, with a small tmpfs, by tests/test-metrics.sh.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "metrics-text.h"

static MetricsCpu test_cpus[2];

/* A hybrid machine's CPUs (CPU 5 is offline, so not listed) and a tick's stages. */
static const MetricsCpuCapacity test_capacities[] = {
        { .cpu = 0, .kind = TOPO_CORE_PERFORMANCE, .capacity = 1024 },
        { .cpu = 3, .kind = TOPO_CORE_EFFICIENT, .capacity = 597 },
        { .cpu = 4, .kind = TOPO_CORE_LOW_POWER, .capacity = 427 },
};
static const MetricsTickStage test_stages[] = {
        { "sample", 0.0004 },
        { "model", 0.00015 },
        { "decide", 0.0001 },
        { "apply", 0.000162 },
};

/* Figures of a made-up machine: two CPUs, the first with two idle states. */
static MetricsFigures figures(void) {
        memset(test_cpus, 0, sizeof(test_cpus));
        test_cpus[0] = (MetricsCpu){ .cpu = 0,
                                     .busy_ratio = 0.25,
                                     .n_states = 2,
                                     .state_ratio = { 0.125, 0.5 },
                                     .other_idle_ratio = 0.125 };
        snprintf(test_cpus[0].state_names[0], IDLE_NAME_MAX, "POLL");
        snprintf(test_cpus[0].state_names[1], IDLE_NAME_MAX, "haltpoll \"deep\"\\x\ny");
        test_cpus[1] = (MetricsCpu){ .cpu = 3, .busy_ratio = 1, .other_idle_ratio = 0 };

        MetricsFigures f = {
                .version = "9.8.7",
                .mode = "enforce",
                .wake_source = "bpf",
                .profile = "power-first",
                .profile_source = "held",
                .n_holds = 2,
                .placement_changes = 12,
                .trials_started = 5,
                .wakeups_sampled = (1ULL << 40) + 1, /* exact through a double */
                .wakeups_softirq = 7,
                .wakeups_skipped = 300,
                .wakeups_lost = 0,
                .sampler_ns_per_wakeup = 126,
                .sampler_resting = true,
                .sampler_rested_seconds = 30.25,
                .process_cpu_seconds = 1.5,
                .process_rss_bytes = 15 << 20,
                .process_start_time_seconds = 1700000000,
                .ticks = 42,
                .quick_ticks = 9,
                .reloads = 1,
                .last_tick_duration_seconds = 0.000812,
                .last_tick_timestamp_seconds = 1700000041.5,
                .tick_stages = test_stages,
                .n_tick_stages = ELEMENTSOF(test_stages),
                .capacities = test_capacities,
                .n_capacities = ELEMENTSOF(test_capacities),
                .capacity_source = TOPO_CAPACITY_CPPC,
                .cpus = test_cpus,
                .n_cpus = 2,
                .have_energy = true,
                .energy_active_cpus = 1.375,
                .energy_active_cpu_seconds = 57.75,
                .rapl_watts = -1,
        };
        f.groups[GROUP_PAIR][1] = 1;
        f.groups[GROUP_SOLO][0] = 30;
        f.trial_verdicts[TRIAL_KEPT] = 3;
        f.trial_verdicts[TRIAL_REVERTED] = 1;
        f.trial_verdicts[TRIAL_NONE] = 1;
        /* kept at gains 1.05, 1.5 and 2 (buckets 1.1, 1.5, 2.0); reverted at 0.85 and 1 (a tie) */
        f.trials = (MetricsTrials){ .windows = { [TRIAL_KEPT] = 24, [TRIAL_REVERTED] = 20 },
                                    .rechecks = 3,
                                    .rechecks_drifted = 1,
                                    .ties = 1,
                                    .last_verdict = TRIAL_KEPT,
                                    .last_gain = 2,
                                    .last_gain_lo = 1.625,
                                    .last_gain_hi = 2.5,
                                    .last_windows = 4 };
        f.trials.gains[TRIAL_KEPT] =
                (MetricsGains){ .bucket = { [6] = 1, [7] = 1, [8] = 1 }, .sum = 4.55 };
        f.trials.gains[TRIAL_REVERTED] =
                (MetricsGains){ .bucket = { [2] = 1, [4] = 1 }, .sum = 1.85 };
        return f;
}

static char *format(const MetricsFigures *f, MetricsFormat fmt) {
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(metrics_text_format(f, fmt, &text, &len), 0);
        assert_non_null(text);
        assert_int_equal(strlen(text), len);
        return text;
}

/* text holds line as a whole line. */
static bool has_line(const char *text, const char *line) {
        size_t n = strlen(line);
        for (const char *p = text; (p = strstr(p, line)); p++)
                if ((p == text || p[-1] == '\n') && p[n] == '\n')
                        return true;
        return false;
}

static void assert_line(const char *text, const char *line) {
        if (!has_line(text, line))
                fail_msg("no line \"%s\" in:\n%s", line, text);
}

static void assert_no_line_with(const char *text, const char *part) {
        if (strstr(text, part))
                fail_msg("\"%s\" should not appear in:\n%s", part, text);
}

/* text holds lines (each ending in a newline) one after another. */
static void assert_lines(const char *text, const char *lines) {
        const char *p = strstr(text, lines);
        if (!p || (p != text && p[-1] != '\n'))
                fail_msg("not these lines, in order:\n%s\nin:\n%s", lines, text);
}

/* The samples (every line not starting with '#'), which both dialects share. */
static char *samples_of(const char *text) {
        char *out = calloc(1, strlen(text) + 1), *o = out;
        assert_non_null(out);
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
                if (*p != '#') {
                        memcpy(o, p, n);
                        o += n;
                }
                p += n;
        }
        return out;
}

static void test_format_names(void **state) {
        assert_string_equal(metrics_format_to_string(METRICS_FORMAT_OPENMETRICS), "openmetrics");
        assert_string_equal(metrics_format_to_string(METRICS_FORMAT_PROMETHEUS), "prometheus");
        assert_null(metrics_format_to_string(_METRICS_FORMAT_MAX));
        assert_int_equal(metrics_format_from_string("openmetrics"), METRICS_FORMAT_OPENMETRICS);
        assert_int_equal(metrics_format_from_string("prometheus"), METRICS_FORMAT_PROMETHEUS);
        assert_int_equal(metrics_format_from_string("json"), -EINVAL);
        assert_int_equal(metrics_format_from_string(NULL), -EINVAL);

        MetricsFigures f = figures();
        char *text = NULL;
        size_t len;
        assert_int_equal(metrics_text_format(&f, _METRICS_FORMAT_MAX, &text, &len), -EINVAL);
        assert_null(text);
}

static void test_samples(void **state) {
        MetricsFigures f = figures();
        _cleanup_free_ char *text = format(&f, METRICS_FORMAT_OPENMETRICS);

        assert_line(text, "placed_info{version=\"9.8.7\",mode=\"enforce\",wake_source=\"bpf\"} 1");
        assert_line(text, "placed_profile_info{profile=\"power-first\",source=\"held\"} 1");
        assert_line(text, "placed_profile_holds 2");
        assert_line(text, "placed_groups{class=\"pair\",managed=\"true\"} 1");
        assert_line(text, "placed_groups{class=\"pair\",managed=\"false\"} 0");
        assert_line(text, "placed_groups{class=\"solo\",managed=\"false\"} 30");
        assert_line(text, "placed_groups{class=\"mesh\",managed=\"true\"} 0");
        assert_line(text, "placed_placement_changes_total 12");
        assert_line(text, "placed_trials_started_total 5");
        assert_line(text, "placed_trial_verdicts_total{verdict=\"kept\"} 3");
        assert_line(text, "placed_trial_verdicts_total{verdict=\"reverted\"} 1");
        assert_line(text, "placed_trial_verdicts_total{verdict=\"cut_short\"} 1");
        assert_line(text, "placed_trial_windows_total{verdict=\"kept\"} 24");
        assert_line(text, "placed_trial_windows_total{verdict=\"reverted\"} 20");
        assert_line(text, "placed_trial_rechecks_total 3");
        assert_line(text, "placed_trial_rechecks_drifted_total 1");
        assert_line(text, "placed_trial_ties_total 1");
        assert_lines(text, "placed_trial_last_gain{bound=\"mean\"} 2\n"
                           "placed_trial_last_gain{bound=\"low\"} 1.625\n"
                           "placed_trial_last_gain{bound=\"high\"} 2.5\n");
        assert_line(text, "placed_trial_last_windows 4");
        assert_line(text, "placed_trial_last_kept 1");
        assert_line(text, "placed_sampler_wakeups_total{result=\"sampled\"} 1099511627777");
        assert_line(text, "placed_sampler_wakeups_total{result=\"skipped\"} 300");
        assert_line(text, "placed_sampler_wakeups_total{result=\"lost\"} 0");
        assert_line(text, "placed_sampler_softirq_wakeups_total 7");
        assert_line(text, "placed_sampler_seconds_per_wakeup 1.26e-07");
        assert_line(text, "placed_sampler_resting 1");
        assert_line(text, "placed_sampler_rested_seconds_total 30.25");
        assert_line(text, "placed_process_cpu_seconds_total 1.5");
        assert_line(text, "placed_process_resident_memory_bytes 15728640");
        assert_line(text, "placed_process_start_time_seconds 1700000000");
        assert_line(text, "placed_ticks_total 42");
        assert_line(text, "placed_quick_ticks_total 9");
        assert_line(text, "placed_reloads_total 1");
        assert_line(text, "placed_tick_duration_seconds 0.000812");
        assert_line(text, "placed_tick_stage_cpu_seconds{stage=\"sample\"} 0.0004");
        assert_line(text, "placed_tick_stage_cpu_seconds{stage=\"model\"} 0.00015");
        assert_line(text, "placed_tick_stage_cpu_seconds{stage=\"decide\"} 0.0001");
        assert_line(text, "placed_tick_stage_cpu_seconds{stage=\"apply\"} 0.000162");
        /* the stages in the pipeline's order, after the tick's duration */
        const char *at = strstr(text, "\nplaced_tick_duration_seconds ");
        assert_non_null(at);
        for (size_t i = 0; i < ELEMENTSOF(test_stages); i++) {
                char label[32];
                snprintf(label, sizeof(label), "{stage=\"%s\"}", test_stages[i].name);
                const char *next = strstr(text, label);
                assert_true(next && next > at);
                at = next;
        }
        assert_line(text, "placed_cpu_capacity{cpu=\"0\",kind=\"performance\"} 1024");
        assert_line(text, "placed_cpu_capacity{cpu=\"3\",kind=\"efficient\"} 597");
        assert_line(text, "placed_cpu_capacity{cpu=\"4\",kind=\"low-power\"} 427");
        assert_no_line_with(text, "placed_cpu_capacity{cpu=\"5\"");
        assert_line(text, "placed_last_tick_timestamp_seconds 1700000041.5");
        assert_line(text, "placed_cpu_busy_ratio{cpu=\"0\"} 0.25");
        assert_line(text, "placed_cpu_busy_ratio{cpu=\"3\"} 1");
        assert_line(text, "placed_cpu_idle_residency_ratio{cpu=\"0\",state=\"POLL\"} 0.125");
        /* a label value's quote, backslash and newline escaped */
        assert_line(text, "placed_cpu_idle_residency_ratio{cpu=\"0\",state=\"haltpoll "
                          "\\\"deep\\\"\\\\x\\ny\"} 0.5");
        assert_line(text, "placed_cpu_idle_residency_ratio{cpu=\"0\",state=\"none\"} 0.125");
        assert_line(text, "placed_cpu_idle_residency_ratio{cpu=\"3\",state=\"none\"} 0");
        assert_line(text, "placed_energy_estimate_active_cpus 1.375");
        assert_line(text, "placed_energy_estimate_active_cpu_seconds_total 57.75");
        assert_no_line_with(text, "placed_rapl_power_watts"); /* no RAPL */
        /* no quote in a HELP text: the two formats escape it differently */
        for (const char *p = strstr(text, "# HELP "); p; p = strstr(p + 1, "# HELP ")) {
                size_t n = strcspn(p, "\n");
                if (memchr(p, '"', n))
                        fail_msg("a quote in \"%.*s\"", (int)n, p);
        }
        /* the end, once */
        size_t len = strlen(text);
        assert_true(len > 6 && strcmp(text + len - 6, "# EOF\n") == 0);
        assert_ptr_equal(strstr(text, "# EOF"), text + len - 6);
}

static void test_openmetrics_metadata(void **state) {
        MetricsFigures f = figures();
        _cleanup_free_ char *text = format(&f, METRICS_FORMAT_OPENMETRICS);

        /* counters: the family without _total, its sample with it */
        assert_line(text, "# TYPE placed_ticks counter");
        assert_line(text, "# HELP placed_ticks Ticks run (sample, model, decide, apply)");
        assert_line(text, "# TYPE placed_process_cpu_seconds counter");
        assert_line(text, "# UNIT placed_process_cpu_seconds seconds");
        assert_line(text, "# TYPE placed_process_resident_memory_bytes gauge");
        assert_line(text, "# UNIT placed_process_resident_memory_bytes bytes");
        assert_line(text, "# UNIT placed_cpu_busy_ratio ratio");
        assert_no_line_with(text, "# TYPE placed_ticks_total");
        assert_line(text, "# TYPE placed_quick_ticks counter");
        assert_line(text, "# HELP placed_quick_ticks Of the ticks, the quick ones: brought forward "
                          "because something new appeared or a placement is measured");
        assert_no_line_with(text, "# TYPE placed_quick_ticks_total");
        assert_line(text, "# TYPE placed_tick_stage_cpu_seconds gauge");
        assert_line(text, "# UNIT placed_tick_stage_cpu_seconds seconds");
        assert_line(text, "# HELP placed_tick_stage_cpu_seconds CPU time placed spent in each "
                          "stage of the last tick (its own thread's clock)");
        /* the capacity's HELP says what 1024 is and where the figures came from */
        assert_line(text, "# TYPE placed_cpu_capacity gauge");
        assert_line(text, "# HELP placed_cpu_capacity Each online CPU's relative capacity, 1024 = "
                          "the biggest CPU, and its kind; from CPPC highest_perf, per kind");
        assert_no_line_with(text, "# UNIT placed_cpu_capacity");
        /* info-style families are gauges: promtool 2.42 cannot parse "info" */
        assert_line(text, "# TYPE placed_profile_info gauge");
        /* each family's metadata once, before its samples */
        const char *type = strstr(text, "# TYPE placed_cpu_idle_residency_ratio gauge");
        assert_non_null(type);
        assert_null(strstr(type + 1, "# TYPE placed_cpu_idle_residency_ratio"));
        assert_true(type < strstr(text, "placed_cpu_idle_residency_ratio{"));
}

static void test_prometheus_metadata(void **state) {
        MetricsFigures f = figures();
        _cleanup_free_ char *om = format(&f, METRICS_FORMAT_OPENMETRICS);
        _cleanup_free_ char *text = format(&f, METRICS_FORMAT_PROMETHEUS);

        assert_line(text, "# TYPE placed_ticks_total counter");
        assert_line(text, "# HELP placed_ticks_total Ticks run (sample, model, decide, apply)");
        assert_line(text, "# TYPE placed_process_cpu_seconds_total counter");
        assert_line(text, "# TYPE placed_cpu_busy_ratio gauge");
        assert_line(text, "# TYPE placed_quick_ticks_total counter");
        assert_line(text, "# HELP placed_quick_ticks_total Of the ticks, the quick ones: brought "
                          "forward because something new appeared or a placement is measured");
        assert_line(text, "# TYPE placed_tick_stage_cpu_seconds gauge");
        assert_line(text, "# TYPE placed_cpu_capacity gauge");
        assert_line(text, "# HELP placed_cpu_capacity Each online CPU's relative capacity, 1024 = "
                          "the biggest CPU, and its kind; from CPPC highest_perf, per kind");
        assert_line(text, "placed_quick_ticks_total 9");
        assert_line(text, "placed_tick_stage_cpu_seconds{stage=\"decide\"} 0.0001");
        assert_line(text, "placed_cpu_capacity{cpu=\"4\",kind=\"low-power\"} 427");
        assert_no_line_with(text, "# UNIT");
        assert_no_line_with(text, "# TYPE placed_ticks counter");
        size_t len = strlen(text);
        assert_true(len > 6 && strcmp(text + len - 6, "# EOF\n") == 0);

        /* the same series with the same values in the same order */
        _cleanup_free_ char *a = samples_of(om), *b = samples_of(text);
        assert_string_equal(a, b);
        assert_true(strlen(a) > 1000);
}

/* Families with nothing to say are left out, not printed without samples. */
/* placed_cpu_capacity's HELP names each source of the capacities. */
static void test_capacity_sources(void **state) {
        static const struct {
                TopoCapacitySource source;
                const char *tail;
        } cases[] = {
                { TOPO_CAPACITY_NONE, "nothing told the CPUs apart, so all are 1024" },
                { TOPO_CAPACITY_CPU_CAPACITY, "from the kernel's cpu_capacity" },
                { TOPO_CAPACITY_CPPC, "from CPPC highest_perf, per kind" },
                { TOPO_CAPACITY_PMU, "from the hybrid PMU's kinds, at default ratios" },
        };
        char line[256];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                MetricsFigures f = figures();
                f.capacity_source = cases[i].source;
                _cleanup_free_ char *text = format(&f, METRICS_FORMAT_PROMETHEUS);
                snprintf(line, sizeof(line),
                         "# HELP placed_cpu_capacity Each online CPU's relative capacity, 1024 = "
                         "the biggest CPU, and its kind; %s",
                         cases[i].tail);
                assert_line(text, line);
                /* the family's metadata once, before its samples */
                const char *help = strstr(text, "# HELP placed_cpu_capacity ");
                assert_null(strstr(help + 1, "# HELP placed_cpu_capacity "));
                assert_true(help < strstr(text, "placed_cpu_capacity{"));
        }
}

static void test_left_out(void **state) {
        MetricsFigures f = figures();
        f.n_cpus = 0;
        f.have_energy = false;
        f.process_rss_bytes = 0;
        f.ticks = 0;
        f.n_capacities = 0;
        _cleanup_free_ char *text = format(&f, METRICS_FORMAT_PROMETHEUS);
        assert_no_line_with(text, "placed_cpu_busy_ratio");
        assert_no_line_with(text, "placed_cpu_idle_residency_ratio");
        assert_no_line_with(text, "placed_energy_estimate_active_cpus ");
        assert_no_line_with(text, "placed_process_resident_memory_bytes");
        assert_no_line_with(text, "placed_tick_duration_seconds");
        assert_no_line_with(text, "placed_last_tick_timestamp_seconds");
        assert_no_line_with(text, "placed_tick_stage_cpu_seconds"); /* no tick yet */
        assert_no_line_with(text, "placed_cpu_capacity");
        assert_line(text, "placed_ticks_total 0");
        assert_line(text, "placed_quick_ticks_total 9"); /* a counter is always written */
        assert_line(text, "placed_energy_estimate_active_cpu_seconds_total 57.75");

        f.rapl_watts = 23.5;
        f.sampler_ns_per_wakeup = 0.0 / 0.0;
        _cleanup_free_ char *rapl = format(&f, METRICS_FORMAT_OPENMETRICS);
        assert_line(rapl, "# UNIT placed_rapl_power_watts watts");
        assert_line(rapl, "placed_rapl_power_watts 23.5");
        assert_line(rapl, "placed_sampler_seconds_per_wakeup NaN");
}

/* The gains' histogram: cumulative buckets with OpenMetrics' bounds, then the sum and the count. */
static void test_gain_histogram(void **state) {
        static const char kept[] =
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"0.5\"} 0\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"0.8\"} 0\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"0.9\"} 0\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"0.97\"} 0\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"1.0\"} 0\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"1.03\"} 0\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"1.1\"} 1\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"1.5\"} 2\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"2.0\"} 3\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"4.0\"} 3\n"
                "placed_trial_verdict_gain_bucket{verdict=\"kept\",le=\"+Inf\"} 3\n"
                "placed_trial_verdict_gain_sum{verdict=\"kept\"} 4.55\n"
                "placed_trial_verdict_gain_count{verdict=\"kept\"} 3\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"0.5\"} 0\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"0.8\"} 0\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"0.9\"} 1\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"0.97\"} 1\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"1.0\"} 2\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"1.03\"} 2\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"1.1\"} 2\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"1.5\"} 2\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"2.0\"} 2\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"4.0\"} 2\n"
                "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"+Inf\"} 2\n"
                "placed_trial_verdict_gain_sum{verdict=\"reverted\"} 1.85\n"
                "placed_trial_verdict_gain_count{verdict=\"reverted\"} 2\n";
        static const char help[] =
                "The gains behind the verdicts given, by verdict: progress placed over progress "
                "left to the kernel, the mean over a trial's pairs of windows\n";
        MetricsFigures f = figures();

        for (MetricsFormat fmt = 0; fmt < _METRICS_FORMAT_MAX; fmt++) {
                _cleanup_free_ char *text = format(&f, fmt);
                /* the same name in HELP and TYPE in both dialects, then every sample */
                _cleanup_free_ char *block = NULL;
                assert_true(asprintf(&block,
                                     "# HELP placed_trial_verdict_gain %s"
                                     "# TYPE placed_trial_verdict_gain histogram\n%s",
                                     help, kept) > 0);
                assert_lines(text, block);
                assert_no_line_with(text, "# UNIT placed_trial_verdict_gain");
        }

        /* no verdict yet: the histograms at 0, the last verdict's gauges left out */
        f.trials = (MetricsTrials){ 0 };
        _cleanup_free_ char *text = format(&f, METRICS_FORMAT_PROMETHEUS);
        assert_lines(text, "placed_trial_verdict_gain_bucket{verdict=\"reverted\",le=\"+Inf\"} 0\n"
                           "placed_trial_verdict_gain_sum{verdict=\"reverted\"} 0\n"
                           "placed_trial_verdict_gain_count{verdict=\"reverted\"} 0\n");
        assert_line(text, "placed_trial_windows_total{verdict=\"kept\"} 0");
        assert_line(text, "placed_trial_ties_total 0");
        assert_no_line_with(text, "placed_trial_last_");

        /* handed back last: kept 0 */
        f.trials.last_verdict = TRIAL_REVERTED;
        f.trials.last_gain = 0.75;
        _cleanup_free_ char *reverted = format(&f, METRICS_FORMAT_PROMETHEUS);
        assert_line(reverted, "placed_trial_last_kept 0");
        assert_line(reverted, "placed_trial_last_gain{bound=\"mean\"} 0.75");
}

static PlanTrial trial(TrialVerdict v, unsigned windows, double gain) {
        return (PlanTrial){ .verdict = v,
                            .windows = windows,
                            .gain = gain,
                            .gain_lo = gain * 0.8,
                            .gain_hi = gain * 1.25 };
}

/* The tally counts verdicts given, re-checks and ties, and nothing else. */
static void test_trials_count(void **state) {
        MetricsTrials t = { 0 }, sum = { 0 };
        PlanTrial running = trial(TRIAL_RUNNING, 0, 0), p;

        metrics_trials_count(&t, TRIAL_NONE, &running); /* started: not a verdict */
        p = trial(TRIAL_NONE, 6, 1.5);
        metrics_trials_count(&t, TRIAL_RUNNING, &p); /* cut short: not a verdict */
        p = trial(TRIAL_KEPT, 4, 2.0);
        metrics_trials_count(&t, TRIAL_RUNNING, &p);
        assert_int_equal(t.windows[TRIAL_KEPT], 4);
        assert_int_equal(t.gains[TRIAL_KEPT].bucket[8], 1); /* 2.0 is in le="2.0" */
        assert_true(t.gains[TRIAL_KEPT].sum == 2.0);
        assert_int_equal(t.last_verdict, TRIAL_KEPT);
        assert_true(t.last_gain == 2.0 && t.last_gain_lo == 1.6 && t.last_gain_hi == 2.5);
        assert_int_equal(t.last_windows, 4);

        /* re-checks: due, drifted; a placement put on trial anew is none */
        running.recheck = true;
        metrics_trials_count(&t, TRIAL_KEPT, &running);
        running.drifted = true;
        metrics_trials_count(&t, TRIAL_KEPT, &running);
        running.recheck = running.drifted = false;
        metrics_trials_count(&t, TRIAL_KEPT, &running);
        metrics_trials_count(&t, TRIAL_REVERTED, &running);
        assert_int_equal(t.rechecks, 2);
        assert_int_equal(t.rechecks_drifted, 1);

        /* a tie at 1.0 (in le="1.0"), a loss at 0.5 (le="0.5"), a 5x gain (+Inf) */
        p = trial(TRIAL_REVERTED, 16, 1.0);
        p.back = TRIAL_BACK_TIE;
        metrics_trials_count(&t, TRIAL_RUNNING, &p);
        p = trial(TRIAL_REVERTED, 4, 0.5);
        metrics_trials_count(&t, TRIAL_RUNNING, &p);
        p = trial(TRIAL_KEPT, 8, 5.0);
        metrics_trials_count(&t, TRIAL_RUNNING, &p);
        /* a tie already counted: no change of verdict, not counted again */
        p = trial(TRIAL_REVERTED, 16, 1.0);
        p.back = TRIAL_BACK_TIE;
        metrics_trials_count(&t, TRIAL_REVERTED, &p);
        /* a gain that is no number: its windows count, the histogram stays whole */
        p = trial(TRIAL_REVERTED, 2, 0.0 / 0.0);
        metrics_trials_count(&t, TRIAL_RUNNING, &p);

        assert_int_equal(t.ties, 1);
        assert_int_equal(t.windows[TRIAL_KEPT], 12);
        assert_int_equal(t.windows[TRIAL_REVERTED], 22);
        assert_int_equal(t.windows[TRIAL_NONE], 0);
        assert_int_equal(t.gains[TRIAL_REVERTED].bucket[0], 1);
        assert_int_equal(t.gains[TRIAL_REVERTED].bucket[4], 1);
        assert_true(t.gains[TRIAL_REVERTED].sum == 1.5);
        assert_int_equal(t.gains[TRIAL_KEPT].bucket[METRICS_GAIN_BUCKETS - 1], 1);
        assert_true(t.gains[TRIAL_KEPT].sum == 7.0);
        for (unsigned i = 0; i < METRICS_GAIN_BUCKETS; i++)
                assert_int_equal(t.gains[TRIAL_NONE].bucket[i], 0);
        assert_int_equal(t.last_verdict, TRIAL_REVERTED);
        assert_int_equal(t.last_windows, 2);

        /* added over two ticks: sums, and the later tick's last verdict */
        metrics_trials_add(&sum, &t);
        MetricsTrials quiet = { .rechecks = 1 };
        metrics_trials_add(&sum, &quiet); /* a tick without a verdict keeps the last one */
        assert_int_equal(sum.last_verdict, TRIAL_REVERTED);
        assert_int_equal(sum.last_windows, 2);
        MetricsTrials later = { 0 };
        p = trial(TRIAL_KEPT, 4, 1.02);
        metrics_trials_count(&later, TRIAL_RUNNING, &p);
        metrics_trials_add(&sum, &later);
        assert_int_equal(sum.windows[TRIAL_KEPT], 16);
        assert_int_equal(sum.windows[TRIAL_REVERTED], 22);
        assert_int_equal(sum.rechecks, 3);
        assert_int_equal(sum.rechecks_drifted, 1);
        assert_int_equal(sum.ties, 1);
        assert_int_equal(sum.gains[TRIAL_KEPT].bucket[5], 1); /* 1.02: le="1.03" */
        assert_true(sum.gains[TRIAL_KEPT].sum == 8.02);
        assert_int_equal(sum.last_verdict, TRIAL_KEPT);
        assert_true(sum.last_gain == 1.02);
        assert_int_equal(sum.last_windows, 4);
}

/* ---- The textfile ---- */

typedef struct Dir {
        char root[64];
        char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX], victim[PATH_MAX];
} Dir;

_printf_(3, 4) static void xsprintf(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        assert_true(n >= 0 && (size_t)n < size);
}

static int setup_dir(void **state) {
        Dir *d = calloc(1, sizeof(*d));
        assert_non_null(d);
        xsprintf(d->root, sizeof(d->root), "/tmp/test-metrics-text.XXXXXX");
        assert_non_null(mkdtemp(d->root));
        xsprintf(d->dir, sizeof(d->dir), "%s/textfiles", d->root);
        assert_int_equal(mkdir(d->dir, 0755), 0);
        xsprintf(d->path, sizeof(d->path), "%s/placed.prom", d->dir);
        xsprintf(d->tmp, sizeof(d->tmp), "%s/.placed.prom.tmp", d->dir);
        xsprintf(d->victim, sizeof(d->victim), "%s/victim", d->root);
        *state = d;
        return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int teardown_dir(void **state) {
        Dir *d = *state;
        chmod(d->dir, 0755);
        nftw(d->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(d);
        return 0;
}

static char *read_file(const char *path) {
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        char *buf = calloc(1, 65536);
        assert_non_null(buf);
        size_t n = fread(buf, 1, 65535, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static void write_path(const char *path, const char *content) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_true(fputs(content, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static int write_text(const char *path, const char *text) {
        return metrics_textfile_write(path, text, strlen(text));
}

static void test_textfile_replaced(void **state) {
        Dir *d = *state;
        struct stat st1, st2;

        mode_t old_umask = umask(077);
        assert_int_equal(write_text(d->path, "a 1\n# EOF\n"), 0);
        umask(old_umask);
        _cleanup_free_ char *one = read_file(d->path);
        assert_string_equal(one, "a 1\n# EOF\n");
        assert_int_equal(lstat(d->path, &st1), 0);
        assert_true(S_ISREG(st1.st_mode));
        assert_int_equal(st1.st_mode & 07777, 0644); /* node_exporter reads it as another user */
        assert_int_equal(access(d->tmp, F_OK), -1);  /* no temporary left */

        assert_int_equal(write_text(d->path, "a 2\nb 3\n# EOF\n"), 0);
        _cleanup_free_ char *two = read_file(d->path);
        assert_string_equal(two, "a 2\nb 3\n# EOF\n");
        assert_int_equal(lstat(d->path, &st2), 0);
        assert_true(st1.st_ino != st2.st_ino); /* renamed over, not rewritten in place */
        assert_int_equal(access(d->tmp, F_OK), -1);

        /* a leftover temporary (a crash) is replaced */
        write_path(d->tmp, "half a fi");
        assert_int_equal(write_text(d->path, "a 3\n# EOF\n"), 0);
        _cleanup_free_ char *three = read_file(d->path);
        assert_string_equal(three, "a 3\n# EOF\n");
        assert_int_equal(access(d->tmp, F_OK), -1);
}

static void test_textfile_links(void **state) {
        Dir *d = *state;
        struct stat st;

        /* a link planted at the temporary name: removed, never written through */
        write_path(d->victim, "precious\n");
        assert_int_equal(symlink(d->victim, d->tmp), 0);
        assert_int_equal(write_text(d->path, "x 1\n# EOF\n"), 0);
        _cleanup_free_ char *v1 = read_file(d->victim);
        assert_string_equal(v1, "precious\n");
        _cleanup_free_ char *p1 = read_file(d->path);
        assert_string_equal(p1, "x 1\n# EOF\n");

        /* a dangling link there, to where a file would be created */
        char target[PATH_MAX + 8];
        xsprintf(target, sizeof(target), "%s/created", d->root);
        assert_int_equal(symlink(target, d->tmp), 0);
        assert_int_equal(write_text(d->path, "x 2\n# EOF\n"), 0);
        assert_int_equal(access(target, F_OK), -1);

        /* a link at the path itself: replaced by the file, the target untouched */
        assert_int_equal(unlink(d->path), 0);
        assert_int_equal(symlink(d->victim, d->path), 0);
        assert_int_equal(write_text(d->path, "x 3\n# EOF\n"), 0);
        assert_int_equal(lstat(d->path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        _cleanup_free_ char *v2 = read_file(d->victim);
        assert_string_equal(v2, "precious\n");
}

static void test_textfile_directory(void **state) {
        Dir *d = *state;
        char path[PATH_MAX + 32], link[PATH_MAX + 8];

        /* missing directory */
        xsprintf(path, sizeof(path), "%s/nowhere/placed.prom", d->root);
        assert_int_equal(write_text(path, "a 1\n"), -ENOENT);
        assert_non_null(metrics_textfile_strerror(-ENOENT));

        /* the directory is a symbolic link */
        xsprintf(link, sizeof(link), "%s/link", d->root);
        assert_int_equal(symlink(d->dir, link), 0);
        xsprintf(path, sizeof(path), "%s/placed.prom", link);
        assert_int_equal(write_text(path, "a 1\n"), -ELOOP);
        assert_int_equal(access(d->path, F_OK), -1);

        /* the "directory" is a file */
        xsprintf(path, sizeof(path), "%s/victim/placed.prom", d->root);
        write_path(d->victim, "precious\n");
        assert_int_equal(write_text(path, "a 1\n"), -ENOTDIR);

        /* anyone may write there: refused; sticky like /tmp: fine */
        assert_int_equal(chmod(d->dir, 0777), 0);
        assert_int_equal(write_text(d->path, "a 1\n"), -EACCES);
        assert_string_equal(metrics_textfile_strerror(-EACCES),
                            "its directory may be written by group or others and is not sticky");
        assert_int_equal(chmod(d->dir, 01777), 0);
        assert_int_equal(write_text(d->path, "a 1\n"), 0);
        assert_int_equal(chmod(d->dir, 0755), 0);

        /* the path is a directory: nothing replaced, no temporary left */
        xsprintf(path, sizeof(path), "%s/sub.prom", d->dir);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(write_text(path, "a 1\n"), -EISDIR);
        xsprintf(link, sizeof(link), "%s/.sub.prom.tmp", d->dir);
        assert_int_equal(access(link, F_OK), -1);

        /* no directory part at all */
        assert_int_equal(write_text("placed.prom", "a 1\n"), -EINVAL);
}

static void test_read_process(void **state) {
        double cpu = -1;
        uint64_t rss = 0;

        assert_int_equal(metrics_read_process("/proc", &cpu, &rss), 0);
        assert_true(cpu >= 0);
        assert_true(rss > 100 * 1024); /* a process with libc mapped */

        assert_int_equal(metrics_read_process("/nonexistent", &cpu, &rss), -ENOENT);
        assert_int_equal(rss, 0);
        assert_true(cpu >= 0); /* from getrusage(), whatever the root */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_names),
                cmocka_unit_test(test_samples),
                cmocka_unit_test(test_openmetrics_metadata),
                cmocka_unit_test(test_prometheus_metadata),
                cmocka_unit_test(test_capacity_sources),
                cmocka_unit_test(test_left_out),
                cmocka_unit_test(test_gain_histogram),
                cmocka_unit_test(test_trials_count),
                cmocka_unit_test_setup_teardown(test_textfile_replaced, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_textfile_links, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_textfile_directory, setup_dir, teardown_dir),
                cmocka_unit_test(test_read_process),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
