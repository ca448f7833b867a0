/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/config.c: built-in defaults; the shipped conf/ files (as
 * shipped, and with every commented default uncommented, which proves that
 * the comments state the real defaults); drop-in order; /etc profiles
 * replacing /usr ones; every error path with its exact "FILE:LINE:" prefix
 * and an untouched previous Config; warnings; exclude lists.
 *
 * Files are written into a mkdtemp() directory per test and removed after.
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

#include "config.h"
#include "macro.h"

/* ---- Helpers ---- */

/* snprintf() that fails the test on truncation. */
_printf_(3, 4) static void xsprintf(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        assert_true(n >= 0 && (size_t)n < size);
}

#define MAX_DIAGS 16

typedef struct Diags {
        unsigned n_errors, n_warnings;
        ConfigDiagLevel level[MAX_DIAGS];
        char *msg[MAX_DIAGS];
        unsigned n;
} Diags;

static void diag_collect(void *userdata, ConfigDiagLevel level, const char *message) {
        Diags *d = userdata;
        if (level == CONFIG_DIAG_ERROR)
                d->n_errors++;
        else
                d->n_warnings++;
        if (d->n < MAX_DIAGS) {
                d->level[d->n] = level;
                d->msg[d->n] = strdup(message);
                assert_non_null(d->msg[d->n]);
                d->n++;
        }
}

static void diags_clear(Diags *d) {
        for (unsigned i = 0; i < d->n; i++)
                free(d->msg[i]);
        memset(d, 0, sizeof(*d));
}

/* The first message of level, or NULL. */
static const char *diags_first(const Diags *d, ConfigDiagLevel level) {
        for (unsigned i = 0; i < d->n; i++)
                if (d->level[i] == level)
                        return d->msg[i];
        return NULL;
}

typedef struct TestDir {
        char root[64];
        char main_file[PATH_MAX], dropin_dir[PATH_MAX], usr[PATH_MAX], etc[PATH_MAX];
        char rules_dir[PATH_MAX];
        ConfigPaths paths;
        Diags diags;
} TestDir;

static const char *src_dir(void) {
        const char *s = getenv("PLACED_SRC");
        return s && *s ? s : ".";
}

static void write_path(const char *path, const char *content) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fputs(content, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static void write_file(const char *dir, const char *name, const char *content) {
        char path[PATH_MAX];
        xsprintf(path, sizeof(path), "%s/%s", dir, name);
        write_path(path, content);
}

/* A tree with placed.conf, placed.conf.d/, usr/ and etc/ profile dirs (only usr/ exists). */
static int setup_dir(void **state) {
        TestDir *t = calloc(1, sizeof(*t));
        assert_non_null(t);
        xsprintf(t->root, sizeof(t->root), "/tmp/test-config.XXXXXX");
        assert_non_null(mkdtemp(t->root));
        xsprintf(t->main_file, sizeof(t->main_file), "%s/placed.conf", t->root);
        xsprintf(t->dropin_dir, sizeof(t->dropin_dir), "%s/placed.conf.d", t->root);
        xsprintf(t->usr, sizeof(t->usr), "%s/usr", t->root);
        xsprintf(t->etc, sizeof(t->etc), "%s/etc", t->root);
        assert_int_equal(mkdir(t->usr, 0755), 0);
        xsprintf(t->rules_dir, sizeof(t->rules_dir), "%s/rules.d", t->root);
        t->paths = (ConfigPaths){ t->main_file, t->dropin_dir, t->usr, t->etc, t->rules_dir };
        /* the three built-in profiles, empty: their defaults */
        write_file(t->usr, "balanced.conf", "");
        write_file(t->usr, "power-first.conf", "");
        write_file(t->usr, "latency-first.conf", "# only a comment\n");
        *state = t;
        return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int teardown_dir(void **state) {
        TestDir *t = *state;
        nftw(t->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        diags_clear(&t->diags);
        free(t);
        return 0;
}

static void make_dir(const char *path) {
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void assert_profile_equal(const Profile *a, const Profile *b) {
        assert_string_equal(a->name, b->name);
        assert_string_equal(a->description, b->description);
        assert_int_equal(a->pair_placement, b->pair_placement);
        assert_int_equal(a->pair_max_overlap_pct, b->pair_max_overlap_pct);
        assert_int_equal(a->pair_min_wake_rate, b->pair_min_wake_rate);
        assert_int_equal(a->trial_ticks, b->trial_ticks);
        assert_int_equal(a->trial_max_ticks, b->trial_max_ticks);
        assert_int_equal(a->trial_recheck_max_ticks, b->trial_recheck_max_ticks);
        assert_int_equal(a->trial_recheck_s, b->trial_recheck_s);
        assert_int_equal(a->trial_recheck_drift_pct, b->trial_recheck_drift_pct);
        assert_int_equal(a->trial_keep_pct, b->trial_keep_pct);
        assert_int_equal(a->trial_max_run_loss_pct, b->trial_max_run_loss_pct);
        assert_int_equal(a->trial_backoff_ms, b->trial_backoff_ms);
        assert_int_equal(a->fanout_placement, b->fanout_placement);
        assert_int_equal(a->fanout_min_workers, b->fanout_min_workers);
        assert_int_equal(a->mesh_placement, b->mesh_placement);
        assert_int_equal(a->llc_headroom_pct, b->llc_headroom_pct);
        assert_int_equal(a->busy_pct, b->busy_pct);
        assert_int_equal(a->busy_cores, b->busy_cores);
        assert_int_equal(a->light_cores, b->light_cores);
        assert_int_equal(a->low_power, b->low_power);
        assert_int_equal(a->consolidate, b->consolidate);
        assert_int_equal(a->consolidate_below_load_pct, b->consolidate_below_load_pct);
        assert_int_equal(a->housekeeping_min_cpus, b->housekeeping_min_cpus);
        assert_int_equal(a->idle_constraint, b->idle_constraint);
        assert_int_equal(a->idle_max_exit_latency_us, b->idle_max_exit_latency_us);
        assert_int_equal(a->runq_delay_budget_us, b->runq_delay_budget_us);
        assert_int_equal(a->dwell_ms, b->dwell_ms);
        assert_int_equal(a->min_gain_pct, b->min_gain_pct);
}

/* The [daemon] and [exclude] parts of two Configs are equal. */
static void assert_settings_equal(const Config *a, const Config *b) {
        assert_string_equal(a->profile, b->profile);
        assert_int_equal(a->interval_ms, b->interval_ms);
        assert_int_equal(a->quick_interval_ms, b->quick_interval_ms);
        assert_int_equal(a->quick_ticks_per_sec, b->quick_ticks_per_sec);
        assert_int_equal(a->settled_factor, b->settled_factor);
        assert_int_equal(a->dry_run, b->dry_run);
        assert_string_equal(a->journal_dir, b->journal_dir);
        assert_int_equal(a->wake_source, b->wake_source);
        assert_int_equal(a->sample_period, b->sample_period);
        assert_int_equal(a->wake_rest_ms, b->wake_rest_ms);
        assert_int_equal(a->wake_look_s, b->wake_look_s);
        assert_string_equal(a->metrics_textfile, b->metrics_textfile);
        assert_int_equal(a->metrics_every_ticks, b->metrics_every_ticks);
        assert_int_equal(a->follow, b->follow);
        assert_int_equal(a->nice, b->nice);
        for (unsigned i = 0; i < FOLLOW_PPD_PROFILES; i++)
                assert_string_equal(a->follow_map[i], b->follow_map[i]);
        assert_int_equal(a->n_exclude_comm, b->n_exclude_comm);
        for (unsigned i = 0; i < a->n_exclude_comm; i++)
                assert_string_equal(a->exclude_comm[i], b->exclude_comm[i]);
        assert_int_equal(a->n_exclude_cgroup, b->n_exclude_cgroup);
        for (unsigned i = 0; i < a->n_exclude_cgroup; i++)
                assert_string_equal(a->exclude_cgroup[i], b->exclude_cgroup[i]);
}

static void assert_builtin_profiles(const Config *c) {
        static const char *const sorted[] = { "balanced", "latency-first", "power-first" };
        assert_int_equal(c->n_profiles, 3);
        for (unsigned i = 0; i < 3; i++) {
                Profile p;
                assert_int_equal(profile_defaults(sorted[i], &p), 0);
                assert_profile_equal(&c->profiles[i], &p);
        }
}

static int load(TestDir *t, Config *c) {
        diags_clear(&t->diags);
        return config_load(&t->paths, diag_collect, &t->diags, c);
}

/* ---- Defaults ---- */

static void test_defaults(void **state) {
        Config c;
        memset(&c, 0xaa, sizeof(c));
        config_defaults(&c);
        assert_string_equal(c.profile, "balanced");
        assert_int_equal(c.interval_ms, 1000);
        assert_int_equal(c.settled_factor, 3);
        assert_false(c.dry_run);
        assert_string_equal(c.journal_dir, "/run/placed");
        assert_int_equal(c.wake_source, WAKE_SOURCE_AUTO);
        assert_int_equal(c.sample_period, 1);
        assert_int_equal(c.wake_rest_ms, 2000);
        assert_int_equal(c.wake_look_s, 10);
        assert_int_equal(c.nice, -10);
        assert_string_equal(c.metrics_textfile, "");
        assert_int_equal(c.metrics_every_ticks, 15);
        assert_int_equal(c.n_exclude_comm, 0);
        assert_int_equal(c.n_exclude_cgroup, 0);
        assert_int_equal(c.n_profiles, 0);
        assert_null(config_find_profile(&c, "balanced"));
        config_done(&c);
        config_done(NULL);
}

static void test_profile_defaults(void **state) {
        Profile p;

        assert_int_equal(profile_defaults("power-first", &p), 0);
        assert_string_equal(p.name, "power-first");
        assert_int_equal(p.pair_placement, PAIR_PLACEMENT_SAME_CPU);
        assert_int_equal(p.pair_max_overlap_pct, 30);
        assert_int_equal(p.pair_min_wake_rate, 50);
        assert_int_equal(p.trial_keep_pct, 90); /* may trade a bounded loss for fewer busy CPUs */
        assert_int_equal(p.fanout_placement, SPREAD_PLACEMENT_PACK);
        assert_int_equal(p.mesh_placement, SPREAD_PLACEMENT_PACK);
        assert_true(p.consolidate);
        assert_int_equal(p.consolidate_below_load_pct, 30);
        assert_int_equal(p.housekeeping_min_cpus, 2);
        assert_int_equal(p.idle_constraint, IDLE_CONSTRAINT_NEVER);
        assert_int_equal(p.runq_delay_budget_us, 5000);
        assert_int_equal(p.dwell_ms, 10000);

        assert_int_equal(profile_defaults("balanced", &p), 0);
        assert_string_equal(p.name, "balanced");
        assert_int_equal(p.fanout_placement, SPREAD_PLACEMENT_SPREAD);
        assert_int_equal(p.fanout_min_workers, 0);
        assert_int_equal(p.mesh_placement, SPREAD_PLACEMENT_HOME);
        assert_false(p.consolidate);
        assert_int_equal(p.idle_constraint, IDLE_CONSTRAINT_ON_DELAY);
        assert_int_equal(p.idle_max_exit_latency_us, 20);
        assert_int_equal(p.runq_delay_budget_us, 1000);

        assert_int_equal(profile_defaults("latency-first", &p), 0);
        assert_string_equal(p.name, "latency-first");
        assert_int_equal(p.pair_placement, PAIR_PLACEMENT_SAME_CORE);
        assert_int_equal(p.mesh_placement, SPREAD_PLACEMENT_SPREAD);
        assert_int_equal(p.fanout_min_workers, 1);
        assert_int_equal(p.llc_headroom_pct, 30);
        assert_int_equal(p.idle_constraint, IDLE_CONSTRAINT_LATENCY_CRITICAL);
        assert_int_equal(p.idle_max_exit_latency_us, 2);
        assert_int_equal(p.runq_delay_budget_us, 200);

        /* unknown names fail and leave *ret alone */
        Profile before = p;
        assert_int_equal(profile_defaults("turbo", &p), -ENOENT);
        assert_int_equal(profile_defaults(NULL, &p), -ENOENT);
        assert_profile_equal(&p, &before);
}

static void test_to_string(void **state) {
        assert_string_equal(pair_placement_to_string(PAIR_PLACEMENT_SAME_CORE), "same-core");
        assert_string_equal(spread_placement_to_string(SPREAD_PLACEMENT_HOME), "home");
        assert_string_equal(idle_constraint_to_string(IDLE_CONSTRAINT_ON_DELAY), "on-delay");
        assert_string_equal(wake_source_kind_to_string(WAKE_SOURCE_REPLAY), "replay");
        assert_null(pair_placement_to_string((PairPlacement)42));
        assert_null(spread_placement_to_string((SpreadPlacement)-1));
}

static void test_paths_default(void **state) {
        ConfigPaths p;
        config_paths_default(&p);
        assert_string_equal(p.main_file, PLACED_SYSCONFDIR "/placed/placed.conf");
        assert_string_equal(p.dropin_dir, PLACED_SYSCONFDIR "/placed/placed.conf.d");
        assert_string_equal(p.profiles_dir_usr, PLACED_DATADIR "/placed/profiles");
        assert_string_equal(p.profiles_dir_etc, PLACED_SYSCONFDIR "/placed/profiles");
        assert_string_equal(p.rules_dir, PLACED_SYSCONFDIR "/placed/rules.d");
}

/* ---- The shipped files ---- */

static void test_shipped_files(void **state) {
        TestDir *t = *state;
        char main_file[PATH_MAX], usr[PATH_MAX];
        Config c, defaults;

        xsprintf(main_file, sizeof(main_file), "%s/conf/placed.conf", src_dir());
        xsprintf(usr, sizeof(usr), "%s/conf/profiles", src_dir());
        t->paths = (ConfigPaths){ .main_file = main_file, .profiles_dir_usr = usr };

        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n, 0);
        config_defaults(&defaults);
        assert_settings_equal(&c, &defaults);
        assert_builtin_profiles(&c);
        config_done(&c);
}

/*
 * Copies src to dst with every "#key = value" line uncommented and checks
 * that each of the keys appears that way.
 */
static void uncomment_file(const char *src, const char *dst, const char *const *keys) {
        FILE *in = fopen(src, "re"), *out = fopen(dst, "we");
        char line[512], key[64];
        bool seen[32] = {};

        assert_non_null(in);
        assert_non_null(out);
        while (fgets(line, sizeof(line), in)) {
                int n = 0;
                const char *text = line;
                if (sscanf(line, "#%63[a-z_-] =%n", key, &n) == 1 && n > 0) {
                        text = line + 1;
                        for (unsigned i = 0; keys[i]; i++)
                                if (strcmp(keys[i], key) == 0)
                                        seen[i] = true;
                }
                fputs(text, out);
        }
        fclose(in);
        assert_int_equal(fclose(out), 0);
        for (unsigned i = 0; keys[i]; i++)
                if (!seen[i])
                        fail_msg("%s does not document key \"%s\"", src, keys[i]);
}

static void test_shipped_files_uncommented(void **state) {
        static const char *const daemon_keys[] = { "profile",
                                                   "interval_ms",
                                                   "dry_run",
                                                   "journal_dir",
                                                   "wake_source",
                                                   "sample_period",
                                                   "follow",
                                                   "power-saver",
                                                   "performance",
                                                   "comm",
                                                   "cgroup",
                                                   "textfile",
                                                   "every_ticks",
                                                   "quick_interval_ms",
                                                   "quick_ticks_per_sec",
                                                   "settled_factor",
                                                   "wake_rest_ms",
                                                   "wake_look_s",
                                                   "nice",
                                                   NULL };
        static const char *const profile_keys[] = { "description",
                                                    "placement", /* [pair], [fanout], [mesh] */
                                                    "max_overlap_pct",
                                                    "min_wakeups_per_sec",
                                                    "ticks",
                                                    "max_ticks",
                                                    "keep_pct",
                                                    "max_run_loss_pct",
                                                    "backoff_ms",
                                                    "recheck_s",
                                                    "recheck_drift_pct",
                                                    "recheck_max_ticks",
                                                    "min_workers",
                                                    "llc_headroom_pct",
                                                    "busy_pct",
                                                    "busy_cores",
                                                    "light_cores",
                                                    "low_power",
                                                    "consolidate",
                                                    "consolidate_below_load_pct",
                                                    "housekeeping_min_cpus",
                                                    "constraint",
                                                    "max_exit_latency_us",
                                                    "runq_delay_budget_us",
                                                    "dwell_ms",
                                                    "min_gain_pct",
                                                    NULL };
        static const char *const names[] = { "balanced", "latency-first", "power-first" };
        TestDir *t = *state;
        char src[PATH_MAX], dst[PATH_MAX];
        Config c, defaults;

        xsprintf(src, sizeof(src), "%s/conf/placed.conf", src_dir());
        uncomment_file(src, t->main_file, daemon_keys);
        for (unsigned i = 0; i < ELEMENTSOF(names); i++) {
                xsprintf(src, sizeof(src), "%s/conf/profiles/%s.conf", src_dir(), names[i]);
                xsprintf(dst, sizeof(dst), "%s/%s.conf", t->usr, names[i]);
                uncomment_file(src, dst, profile_keys);
        }

        assert_int_equal(load(t, &c), 0);
        if (t->diags.n > 0)
                fail_msg("unexpected diagnostic: %s", t->diags.msg[0]);
        config_defaults(&defaults);
        assert_settings_equal(&c, &defaults);
        assert_builtin_profiles(&c);
        config_done(&c);
}

/* ---- Precedence ---- */

static void test_dropins(void **state) {
        TestDir *t = *state;
        Config c;

        write_file(t->root, "placed.conf",
                   "[daemon]\ninterval_ms = 2000\nwake_source = perf\nsample_period = 7\n"
                   "nice = -20\n");
        make_dir(t->dropin_dir);
        /* readdir() order is arbitrary: create the later one first */
        write_file(t->dropin_dir, "20-b.conf", "[daemon]\ninterval_ms = 4000\n");
        write_file(t->dropin_dir, "10-a.conf",
                   "[daemon]\ninterval_ms = 3000\n  dry_run = yes\nsample_period = 9\n"
                   "nice = 19\n");
        write_file(t->dropin_dir, "README", "not ini at all\n");       /* not *.conf */
        write_file(t->dropin_dir, "99-z.conf.bak", "[daemon]\nbad\n"); /* not *.conf */

        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n, 0);
        assert_int_equal(c.interval_ms, 4000);             /* 20-b is read last */
        assert_true(c.dry_run);                            /* from 10-a, indented */
        assert_int_equal(c.sample_period, 9);              /* 10-a after the main file */
        assert_int_equal(c.wake_source, WAKE_SOURCE_PERF); /* main file, untouched */
        assert_int_equal(c.nice, 19);                      /* both ends of its range */
        config_done(&c);

        /* a drop-in masked by a symlink to /dev/null is not read */
        char masked[PATH_MAX];
        xsprintf(masked, sizeof(masked), "%s/20-b.conf", t->dropin_dir);
        assert_int_equal(unlink(masked), 0);
        assert_int_equal(symlink("/dev/null", masked), 0);
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n, 0);
        assert_int_equal(c.interval_ms, 3000);
        config_done(&c);
}

/*
 * Issue 25: a drop-in that is not a regular file is skipped with a warning
 * naming it and what it is (they were skipped without a word), in name
 * order, and never opened (a FIFO would block); the rest still applies.
 */
static void test_dropins_not_regular(void **state) {
        TestDir *t = *state;
        char path[PATH_MAX];
        Config c;

        make_dir(t->dropin_dir);
        write_file(t->dropin_dir, "10-a.conf", "[daemon]\ninterval_ms = 3000\n");
        write_file(t->dropin_dir, "90-z.conf", "[daemon]\nsample_period = 9\n");
        xsprintf(path, sizeof(path), "%s/20-fifo.conf", t->dropin_dir);
        assert_int_equal(mkfifo(path, 0644), 0);
        xsprintf(path, sizeof(path), "%s/30-dangling.conf", t->dropin_dir);
        assert_int_equal(symlink("no-such-file", path), 0);
        xsprintf(path, sizeof(path), "%s/40-zero.conf", t->dropin_dir);
        assert_int_equal(symlink("/dev/zero", path), 0);
        xsprintf(path, sizeof(path), "%s/50-dir.conf", t->dropin_dir);
        make_dir(path);

        assert_int_equal(load(t, &c), 0);
        static const char *const want[] = {
                "20-fifo.conf: not a regular file (a FIFO), skipped",
                "30-dangling.conf: not a regular file (a dangling symbolic link), skipped",
                "40-zero.conf: not a regular file (a character device), skipped",
                "50-dir.conf: not a regular file (a directory), skipped",
        };
        assert_int_equal(t->diags.n_errors, 0);
        assert_int_equal(t->diags.n_warnings, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                char msg[PATH_MAX + 128];
                xsprintf(msg, sizeof(msg), "%s/%s", t->dropin_dir, want[i]);
                assert_string_equal(t->diags.msg[i], msg);
        }
        assert_int_equal(c.interval_ms, 3000);
        assert_int_equal(c.sample_period, 9);
        config_done(&c);
}

static void test_missing_files(void **state) {
        TestDir *t = *state;
        Config c, defaults;

        /* neither the main file nor the drop-in dir exists */
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n, 0);
        config_defaults(&defaults);
        assert_settings_equal(&c, &defaults);
        assert_builtin_profiles(&c);
        config_done(&c);

        /* NULL paths are skipped */
        t->paths.main_file = NULL;
        t->paths.dropin_dir = NULL;
        t->paths.profiles_dir_etc = NULL;
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n, 0);
        assert_builtin_profiles(&c);
        config_done(&c);
}

static void test_profile_override(void **state) {
        TestDir *t = *state;
        Config c;
        Profile want;

        write_file(t->usr, "balanced.conf",
                   "[hysteresis]\ndwell_ms = 7000\nmin_gain_pct = 7\n[mesh]\nplacement = pack\n");
        write_file(t->usr, "quiet.conf",
                   "[profile]\ndescription = Quiet nights\n[pair]\nplacement = none\n");
        make_dir(t->etc);
        write_file(t->etc, "balanced.conf", "[hysteresis]\nmin_gain_pct = 9\n");
        write_file(t->etc, "power-first.conf", "[system]\nconsolidate = off\n");
        write_file(t->etc, "zz-extra.conf", "[capacity]\nllc_headroom_pct = 0\n");

        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n, 0);
        assert_int_equal(c.n_profiles, 5);
        static const char *const sorted[] = { "balanced", "latency-first", "power-first", "quiet",
                                              "zz-extra" };
        for (unsigned i = 0; i < 5; i++)
                assert_string_equal(c.profiles[i].name, sorted[i]);

        /* /etc replaces /usr wholesale: dwell_ms and mesh from /usr are gone */
        assert_int_equal(profile_defaults("balanced", &want), 0);
        want.min_gain_pct = 9;
        assert_profile_equal(config_find_profile(&c, "balanced"), &want);

        assert_int_equal(profile_defaults("power-first", &want), 0);
        want.consolidate = false;
        assert_profile_equal(config_find_profile(&c, "power-first"), &want);

        /* a new profile starts from balanced, under its own name */
        assert_int_equal(profile_defaults("balanced", &want), 0);
        xsprintf(want.name, sizeof(want.name), "quiet");
        xsprintf(want.description, sizeof(want.description), "Quiet nights");
        want.pair_placement = PAIR_PLACEMENT_NONE;
        assert_profile_equal(config_find_profile(&c, "quiet"), &want);

        const Profile *extra = config_find_profile(&c, "zz-extra");
        assert_non_null(extra);
        assert_string_equal(extra->description, "");
        assert_int_equal(extra->llc_headroom_pct, 0);
        assert_null(config_find_profile(&c, "nope"));
        config_done(&c);
}

static void test_default_profile_from_file(void **state) {
        TestDir *t = *state;
        Config c;

        write_file(t->root, "placed.conf", "[daemon]\nprofile = latency-first\n");
        assert_int_equal(load(t, &c), 0);
        assert_string_equal(c.profile, "latency-first");
        config_done(&c);
}

/* ---- Errors ---- */

typedef struct ErrorCase {
        const char *name;
        const char *file;    /* "main", "dropin" or "profile" */
        const char *content; /* of that file */
        int ret;
        unsigned line;
        const char *contains;
} ErrorCase;

static const ErrorCase error_cases[] = {
        { "missing =", "main", "[daemon]\ninterval_ms = 500\nfoo\n", -EINVAL, 3,
          "syntax error: expected \"key = value\"" },
        { "unterminated section", "main", "# x\n[daemon\ninterval_ms = 500\n", -EINVAL, 2,
          "syntax error: section header without closing ']'" },
        { "bad bool", "main", "[daemon]\ndry_run = maybe\n", -EINVAL, 2,
          "invalid [daemon] dry_run \"maybe\": expected a boolean" },
        { "bad enum", "main", "[daemon]\n\nwake_source = ebpf\n", -EINVAL, 3,
          "invalid [daemon] wake_source \"ebpf\": expected one of auto, bpf, perf, none" },
        { "replay not configurable", "main", "[daemon]\nwake_source = replay\n", -EINVAL, 2,
          "expected one of" },
        { "out of range", "main", "[daemon]\ninterval_ms = 50\n", -EINVAL, 2,
          "invalid [daemon] interval_ms \"50\": out of range 100..60000" },
        { "above range", "main", "[daemon]\nsample_period = 1000001\n", -EINVAL, 2,
          "out of range 1..1000000" },
        { "trailing junk", "main", "[daemon]\ninterval_ms = 100ms\n", -EINVAL, 2,
          "trailing characters" },
        { "negative", "main", "[daemon]\ninterval_ms = -100\n", -EINVAL, 2, "negative" },
        { "nice below -20", "main", "[daemon]\nnice = -21\n", -EINVAL, 2,
          "invalid [daemon] nice \"-21\": expected a nice value, -20..19" },
        { "nice above 19", "dropin", "[daemon]\nnice = 20\n", -EINVAL, 2, "-20..19" },
        { "nice not a number", "main", "[daemon]\nnice = high\n", -EINVAL, 2, "-20..19" },
        { "nice empty", "main", "[daemon]\nnice =\n", -EINVAL, 2, "-20..19" },
        { "nice with junk", "main", "[daemon]\nnice = -5x\n", -EINVAL, 2, "-20..19" },
        { "overflow", "main", "[daemon]\ninterval_ms = 99999999999999999999999\n", -EINVAL, 2,
          "too large" },
        { "above UINT_MAX", "main", "[daemon]\ninterval_ms = 4294967296\n", -EINVAL, 2,
          "too large" },
        { "not a number", "main", "[daemon]\ninterval_ms = fast\n", -EINVAL, 2,
          "expected a non-negative integer" },
        { "empty number", "main", "[daemon]\ninterval_ms =\n", -EINVAL, 2,
          "expected a non-negative integer" },
        { "relative journal_dir", "main", "[daemon]\njournal_dir = run/placed\n", -EINVAL, 2,
          "not an absolute path" },
        { "cgroup without /", "main", "[exclude]\ncgroup = /ok.slice system.slice\n", -EINVAL, 2,
          "\"system.slice\": a cgroup path prefix starts with '/'" },
        { "relative textfile", "main", "[metrics]\ntextfile = placed.prom\n", -EINVAL, 2,
          "invalid [metrics] textfile \"placed.prom\": not an absolute path" },
        { "textfile names a directory", "main", "[metrics]\n\ntextfile = /var/lib/prom/\n", -EINVAL,
          3, "invalid [metrics] textfile \"/var/lib/prom/\": names a directory" },
        { "textfile is ..", "main", "[metrics]\ntextfile = /var/lib/..\n", -EINVAL, 2,
          "names a directory" },
        { "every_ticks 0", "main", "[metrics]\nevery_ticks = 0\n", -EINVAL, 2,
          "invalid [metrics] every_ticks \"0\": out of range 1..3600" },
        { "every_ticks too big", "dropin", "[metrics]\nevery_ticks = 3601\n", -EINVAL, 2,
          "out of range 1..3600" },
        { "bad follow", "main", "[daemon]\nfollow = tuned\n", -EINVAL, 2,
          "invalid [daemon] follow \"tuned\": expected one of none, power-profiles" },
        { "bad follow profile name", "main", "[follow]\nperformance = Turbo!\n", -EINVAL, 2,
          "invalid [follow] performance \"Turbo!\": a profile name is" },
        { "unknown follow profile", "main",
          "[daemon]\nfollow = power-profiles\n[follow]\n\npower-saver = eco\n", -ENOENT, 5,
          "[follow] power-saver: profile \"eco\" not found" },
        { "unknown follow profile, not following", "dropin", "[follow]\nbalanced = nosuch\n",
          -ENOENT, 2, "[follow] balanced: profile \"nosuch\" not found" },
        { "bad profile name", "main", "[daemon]\nprofile = Fast!\n", -EINVAL, 2,
          "a profile name is" },
        { "unknown default profile", "main", "[daemon]\n\nprofile = nosuch\n", -ENOENT, 3,
          "profile \"nosuch\" not found (searched " },
        { "error in a drop-in", "dropin", "[daemon]\ndry_run = yes\ndry_run = 2\n", -EINVAL, 3,
          "expected a boolean" },
        { "error in a profile", "profile", "[pair]\nmax_overlap_pct = 101\n", -EINVAL, 2,
          "invalid [pair] max_overlap_pct \"101\": out of range 0..100" },
        { "obsolete key still checked", "profile", "[pair]\nmax_util_pct = 0\n", -EINVAL, 2,
          "invalid [pair] max_util_pct \"0\": out of range 1..100" },
        { "bad trial key", "profile", "[trial]\nkeep_pct = 0\n", -EINVAL, 2,
          "invalid [trial] keep_pct \"0\": out of range 1..1000" },
        { "bad run loss", "profile", "[trial]\nmax_run_loss_pct = 10001\n", -EINVAL, 2,
          "invalid [trial] max_run_loss_pct \"10001\": out of range 0..10000" },
        { "bad placement", "profile", "[mesh]\nplacement = diagonal\n", -EINVAL, 2,
          "expected one of none, pack, home, spread" },
        { "bad idle constraint", "profile", "[idle]\nconstraint = always\n", -EINVAL, 2,
          "expected one of never, on-delay, latency-critical" },
        { "syntax error before a bad value", "main", "[daemon]\nx\ninterval_ms = 1\n", -EINVAL, 2,
          "syntax error" },
        { "bad value before a syntax error", "main", "[daemon]\ninterval_ms = 1\nx\n", -EINVAL, 2,
          "out of range" },
        { "line too long", "main",
          "[daemon]\njournal_dir = "
          "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
          -EINVAL, 2, "line too long" },
};

static void run_error_case(TestDir *t, const ErrorCase *ec) {
        Config c, before;
        char path[PATH_MAX], prefix[PATH_MAX + 16];

        /* a previously loaded, non-default configuration */
        write_file(t->root, "placed.conf",
                   "[daemon]\ninterval_ms = 2500\n[exclude]\ncomm = keep*\ncgroup = /keep\n");
        assert_int_equal(load(t, &c), 0);
        config_defaults(&before);
        before.interval_ms = 2500;
        before.n_exclude_comm = 1;
        before.exclude_comm[0] = "keep*";
        before.n_exclude_cgroup = 1;
        before.exclude_cgroup[0] = "/keep";

        if (strcmp(ec->file, "main") == 0) {
                xsprintf(path, sizeof(path), "%s", t->main_file);
        } else if (strcmp(ec->file, "dropin") == 0) {
                make_dir(t->dropin_dir);
                xsprintf(path, sizeof(path), "%s/50-x.conf", t->dropin_dir);
        } else {
                xsprintf(path, sizeof(path), "%s/latency-first.conf", t->usr);
        }
        write_path(path, ec->content);

        int r = load(t, &c);
        if (r != ec->ret)
                fail_msg("%s: config_load() returned %d, expected %d", ec->name, r, ec->ret);
        const char *msg = diags_first(&t->diags, CONFIG_DIAG_ERROR);
        if (!msg)
                fail_msg("%s: no error reported", ec->name);
        xsprintf(prefix, sizeof(prefix), "%s:%u: ", path, ec->line);
        if (strncmp(msg, prefix, strlen(prefix)) != 0 || !strstr(msg, ec->contains))
                fail_msg("%s: got \"%s\", expected \"%s...%s...\"", ec->name, msg, prefix,
                         ec->contains);
        assert_int_equal(t->diags.n_errors, 1);

        /* the earlier configuration survives, with its profiles */
        assert_settings_equal(&c, &before);
        assert_builtin_profiles(&c);
        config_done(&c);
        if (strcmp(ec->file, "profile") == 0)
                write_path(path, ""); /* back to the built-in defaults */
        else
                assert_int_equal(unlink(path), 0);
}

static void test_errors(void **state) {
        TestDir *t = *state;
        for (size_t i = 0; i < ELEMENTSOF(error_cases); i++)
                run_error_case(t, &error_cases[i]);
}

/* [daemon] follow and the [follow] mapping: defaults, a change, and a missing default target. */
static void test_follow(void **state) {
        TestDir *t = *state;
        Config c;

        assert_int_equal(load(t, &c), 0);
        assert_int_equal(c.follow, FOLLOW_NONE);
        assert_string_equal(config_follow_profile(&c, "power-saver"), "power-first");
        assert_string_equal(config_follow_profile(&c, "balanced"), "balanced");
        assert_string_equal(config_follow_profile(&c, "performance"), "latency-first");
        assert_null(config_follow_profile(&c, "turbo"));
        assert_null(config_follow_profile(&c, NULL));
        assert_string_equal(follow_kind_to_string(FOLLOW_POWER_PROFILES), "power-profiles");
        config_done(&c);

        write_file(t->root, "placed.conf",
                   "[daemon]\nfollow = power-profiles\n[follow]\nperformance = power-first\n"
                   "balanced = latency-first\n");
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n, 0);
        assert_int_equal(c.follow, FOLLOW_POWER_PROFILES);
        assert_string_equal(config_follow_profile(&c, "power-saver"), "power-first");
        assert_string_equal(config_follow_profile(&c, "balanced"), "latency-first");
        assert_string_equal(config_follow_profile(&c, "performance"), "power-first");
        config_done(&c);

        /* Following with the default mapping needs its profiles; not following does not. */
        char path[PATH_MAX];
        xsprintf(path, sizeof(path), "%s/latency-first.conf", t->usr);
        assert_int_equal(unlink(path), 0);
        write_file(t->root, "placed.conf", "[daemon]\nfollow = none\n");
        assert_int_equal(load(t, &c), 0);
        config_done(&c);
        write_file(t->root, "placed.conf", "[daemon]\nfollow = power-profiles\n");
        assert_int_equal(load(t, &c), -ENOENT);
        const char *msg = diags_first(&t->diags, CONFIG_DIAG_ERROR);
        assert_non_null(msg);
        if (!strstr(msg, "maps \"performance\" to profile \"latency-first\" by default"))
                fail_msg("unexpected error: %s", msg);
}

static void test_no_profiles(void **state) {
        TestDir *t = *state;
        Config c;

        /* the built-in default profile has no file: no "FILE:LINE:" to give */
        t->paths.profiles_dir_usr = NULL;
        t->paths.profiles_dir_etc = NULL;
        config_defaults(&c);
        c.interval_ms = 4242;
        assert_int_equal(load(t, &c), -ENOENT);
        assert_int_equal(c.interval_ms, 4242);
        assert_string_equal(diags_first(&t->diags, CONFIG_DIAG_ERROR),
                            "default profile \"balanced\" not found (no profile directory "
                            "configured)");

        char empty[PATH_MAX + 8];
        xsprintf(empty, sizeof(empty), "%s/empty", t->root);
        make_dir(empty);
        t->paths.profiles_dir_usr = empty;
        t->paths.profiles_dir_etc = t->etc;
        assert_int_equal(load(t, &c), -ENOENT);
        char want[3 * PATH_MAX];
        /* etc/ is not there, and the message says so */
        xsprintf(want, sizeof(want),
                 "default profile \"balanced\" not found (searched %s, which does not exist and "
                 "%s)",
                 t->etc, empty);
        assert_string_equal(diags_first(&t->diags, CONFIG_DIAG_ERROR), want);
}

/* ---- Warnings ---- */

static void test_unknown_keys(void **state) {
        TestDir *t = *state;
        Config c;
        char want[PATH_MAX + 128];

        write_file(t->root, "placed.conf",
                   "[daemon]\nfrobnicate = 1\n[gadgets]\na = 1\nb = 2\n[daemon]\n"
                   "interval_ms = 200\n");
        write_file(t->usr, "balanced.conf", "orphan = 1\n[pair]\nplacement = none\n");

        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n_errors, 0);
        assert_int_equal(t->diags.n_warnings, 3); /* once for [gadgets] */
        xsprintf(want, sizeof(want), "%s:2: unknown key \"frobnicate\" in [daemon], ignored",
                 t->main_file);
        assert_string_equal(t->diags.msg[0], want);
        xsprintf(want, sizeof(want), "%s:4: unknown section [gadgets], ignored", t->main_file);
        assert_string_equal(t->diags.msg[1], want);
        xsprintf(want, sizeof(want), "%s/balanced.conf:1: \"orphan\" outside any section, ignored",
                 t->usr);
        assert_string_equal(t->diags.msg[2], want);

        assert_int_equal(c.interval_ms, 200); /* the rest still applies */
        assert_int_equal(config_find_profile(&c, "balanced")->pair_placement, PAIR_PLACEMENT_NONE);
        config_done(&c);
}

/* [metrics]: a textfile node_exporter would not read is a warning with FILE:LINE, not an error. */
static void test_metrics_keys(void **state) {
        TestDir *t = *state;
        Config c;
        char want[PATH_MAX + 256];

        write_file(t->root, "placed.conf",
                   "[metrics]\ntextfile = /var/lib/prometheus/node-exporter/placed.prom\n"
                   "every_ticks = 1\n");
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n, 0);
        assert_string_equal(c.metrics_textfile, "/var/lib/prometheus/node-exporter/placed.prom");
        assert_int_equal(c.metrics_every_ticks, 1);
        config_done(&c);

        make_dir(t->dropin_dir);
        write_file(t->dropin_dir, "10-txt.conf", "[metrics]\n\ntextfile = /run/placed.txt\n");
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n_errors, 0);
        assert_int_equal(t->diags.n_warnings, 1);
        xsprintf(want, sizeof(want),
                 "%s/10-txt.conf:3: [metrics] textfile \"/run/placed.txt\" does not end in "
                 "\".prom\": node_exporter's textfile collector reads only *.prom files",
                 t->dropin_dir);
        assert_string_equal(t->diags.msg[0], want);
        assert_string_equal(c.metrics_textfile, "/run/placed.txt");
        config_done(&c);
        diags_clear(&t->diags);

        /* an empty value turns the textfile off again */
        write_file(t->dropin_dir, "20-off.conf", "[metrics]\ntextfile =\n");
        assert_int_equal(load(t, &c), 0);
        assert_string_equal(c.metrics_textfile, "");
        config_done(&c);
}

static void test_invalid_profile_name(void **state) {
        TestDir *t = *state;
        Config c;
        char want[PATH_MAX + 128];

        write_file(t->usr, "Fast Lane.conf", "[pair]\nplacement = bogus\n");
        make_dir(t->etc);
        write_file(t->etc, "UPPER.conf", "");
        write_file(t->etc, ".conf", ""); /* no name at all: not a profile */
        write_file(t->etc, "ok_2-b.conf", "");

        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n_errors, 0);
        assert_int_equal(t->diags.n_warnings, 2);
        xsprintf(want, sizeof(want), "%s/Fast Lane.conf: invalid profile name \"Fast Lane\"",
                 t->usr);
        assert_non_null(strstr(t->diags.msg[0], want));
        assert_non_null(strstr(t->diags.msg[0], "skipped"));
        xsprintf(want, sizeof(want), "%s/UPPER.conf: invalid profile name \"UPPER\"", t->etc);
        assert_non_null(strstr(t->diags.msg[1], want));
        assert_int_equal(c.n_profiles, 4);
        assert_non_null(config_find_profile(&c, "ok_2-b"));
        assert_null(config_find_profile(&c, "UPPER"));
        config_done(&c);
}

/* ---- Files that are not plain configuration files ---- */

/* The first error, which must start with prefix and contain want. */
static void assert_error(TestDir *t, const char *prefix, const char *want) {
        const char *msg = diags_first(&t->diags, CONFIG_DIAG_ERROR);
        if (!msg)
                fail_msg("no error reported, expected \"%s...%s\"", prefix, want);
        if (strncmp(msg, prefix, strlen(prefix)) != 0 || !strstr(msg, want))
                fail_msg("got \"%s\", expected \"%s...%s...\"", msg, prefix, want);
}

/* A FIFO, /dev/zero, a huge file: refused at once, never read forever. */
static void test_file_not_regular(void **state) {
        TestDir *t = *state;
        Config c;
        char prefix[PATH_MAX + 8];

        assert_int_equal(mkfifo(t->main_file, 0644), 0);
        xsprintf(prefix, sizeof(prefix), "%s: ", t->main_file);
        assert_int_equal(load(t, &c), -EINVAL); /* returns: no writer needed */
        assert_error(t, prefix, "not a regular file");
        assert_int_equal(unlink(t->main_file), 0);

        t->paths.main_file = "/dev/zero";
        assert_int_equal(load(t, &c), -EINVAL);
        assert_error(t, "/dev/zero: ", "not a regular file");
        t->paths.main_file = "/dev/null"; /* a masked file: empty */
        assert_int_equal(load(t, &c), 0);
        config_done(&c);
        t->paths.main_file = t->main_file;

        FILE *f = fopen(t->main_file, "we");
        assert_non_null(f);
        assert_int_equal(fputs("[daemon]\n", f) >= 0, 1);
        for (int i = 0; i < CONFIG_FILE_MAX / 10 + 1; i++)
                assert_int_equal(fputs("# comment\n", f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(load(t, &c), -EFBIG);
        assert_error(t, prefix, "larger than");
}

/* A NUL inside a value would cut it silently: an error naming FILE:LINE. */
static void test_nul_in_value(void **state) {
        TestDir *t = *state;
        Config c;
        char prefix[PATH_MAX + 8];

        FILE *f = fopen(t->main_file, "we");
        assert_non_null(f);
        static const char text[] = "[daemon]\n\njournal_dir = /run/pla\0ced-evil\n";
        assert_int_equal(fwrite(text, 1, sizeof(text) - 1, f), sizeof(text) - 1);
        assert_int_equal(fclose(f), 0);
        xsprintf(prefix, sizeof(prefix), "%s:3: ", t->main_file);
        assert_int_equal(load(t, &c), -EINVAL);
        assert_error(t, prefix, "NUL");
}

/* A directory where a profile should be is an error, not silently skipped. */
static void test_profile_is_directory(void **state) {
        TestDir *t = *state;
        Config c;
        char path[PATH_MAX], prefix[PATH_MAX + 8];

        xsprintf(path, sizeof(path), "%s/quiet.conf", t->usr);
        make_dir(path);
        xsprintf(prefix, sizeof(prefix), "%s: ", path);
        assert_int_equal(load(t, &c), -EISDIR);
        assert_error(t, prefix, "is a directory");
}

/*
 * Issue 25: so is a FIFO, a device or a dangling link where a profile should
 * be, named as what it is: a FIFO profile chosen in placed.conf was "not
 * found". The Config passed in is left as it was.
 */
static void test_profile_not_regular(void **state) {
        TestDir *t = *state;
        char path[PATH_MAX], want[PATH_MAX + 64];
        Config c = { .interval_ms = 1234 };

        write_file(t->root, "placed.conf", "[daemon]\nprofile = quiet\n");
        make_dir(t->etc);
        xsprintf(path, sizeof(path), "%s/quiet.conf", t->etc);
        assert_int_equal(mkfifo(path, 0644), 0);
        assert_int_equal(load(t, &c), -EINVAL);
        xsprintf(want, sizeof(want), "%s: not a regular file (a FIFO)", path);
        assert_string_equal(diags_first(&t->diags, CONFIG_DIAG_ERROR), want);
        assert_int_equal(t->diags.n_errors, 1);
        assert_int_equal(c.interval_ms, 1234);

        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("/dev/zero", path), 0);
        assert_int_equal(load(t, &c), -EINVAL);
        xsprintf(want, sizeof(want), "%s: not a regular file (a character device)", path);
        assert_string_equal(diags_first(&t->diags, CONFIG_DIAG_ERROR), want);

        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("gone.conf", path), 0);
        assert_int_equal(load(t, &c), -EINVAL);
        xsprintf(want, sizeof(want), "%s: not a regular file (a dangling symbolic link)", path);
        assert_string_equal(diags_first(&t->diags, CONFIG_DIAG_ERROR), want);

        assert_int_equal(unlink(path), 0);
        write_file(t->etc, "quiet.conf", "");
        assert_int_equal(load(t, &c), 0);
        assert_non_null(config_find_profile(&c, "quiet"));
        config_done(&c);
}

/* ---- Rules (rules.d) ---- */

static void test_rules(void **state) {
        TestDir *t = *state;
        Config c;

        /* the old [exclude] keys become ignore rules, ahead of rules.d's, whose
         * files are read in name order */
        write_file(t->root, "placed.conf", "[exclude]\ncomm = a* b\ncgroup = /system.slice/x\n");
        make_dir(t->rules_dir);
        write_file(t->rules_dir, "20-b.conf",
                   "[db]\nunit = postgresql*.service\naction = latency-critical\n");
        write_file(t->rules_dir, "10-a.conf",
                   "; a comment\n[client]\ncomm = bench\nexe = /usr/bin/*\naction = pack-with\n"
                   "partner = db\n\n[spread]\n  cgroup = /batch.slice\n  action = never-pack\n");
        write_file(t->rules_dir, "ignored.txt", "[x]\nnonsense\n");
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(c.rules.n_rules, 6);
        const char *names[] = { "exclude.comm[1]", "exclude.comm[2]", "exclude.cgroup[1]",
                                "client",          "spread",          "db" };
        for (unsigned i = 0; i < 6; i++)
                assert_string_equal(c.rules.rules[i].name, names[i]);
        assert_int_equal(c.rules.rules[1].action, RULE_ACTION_IGNORE);
        assert_string_equal(c.rules.rules[1].comm, "b");
        assert_string_equal(c.rules.rules[2].cgroup, "/system.slice/x");
        assert_int_equal(c.rules.rules[3].action, RULE_ACTION_PACK_WITH);
        assert_string_equal(c.rules.rules[3].exe, "/usr/bin/*");
        assert_string_equal(c.rules.rules[3].partner, "db");
        assert_string_equal(c.rules.rules[4].cgroup, "/batch.slice");
        assert_int_equal(c.rules.rules[5].action, RULE_ACTION_LATENCY_CRITICAL);
        char origin[PATH_MAX + 16];
        xsprintf(origin, sizeof(origin), "%s/10-a.conf:2", t->rules_dir);
        assert_string_equal(c.rules.rules[3].origin, origin);
        config_done(&c);
        assert_int_equal(c.rules.n_rules, 0);

        /* each mistake names FILE:LINE, and the load fails */
        static const struct {
                const char *text;
                unsigned line;
                const char *what;
        } bad[] = {
                { "[r]\ncomm = x\naction = pack\n", 3, "rule [r]: invalid action \"pack\"" },
                { "[r]\ncomm = x\n", 1, "rule [r]: no action" },
                { "[r]\naction = ignore\n", 1, "rule [r]: no match key" },
                { "[r]\ncomm = x\ncolor = red\naction = ignore\n", 3,
                  "rule [r]: unknown key \"color\"" },
                { "[r]\ncgroup = system.slice\naction = ignore\n", 2,
                  "rule [r]: cgroup \"system.slice\": a cgroup path prefix starts with '/'" },
                { "[r]\ncomm = x\ncomm = y\naction = ignore\n", 3, "rule [r]: comm given twice" },
                { "[r]\ncomm = x\naction = pack-with\n", 1,
                  "rule [r]: action pack-with needs partner = RULE" },
                { "[r]\ncomm = x\naction = ignore\npartner = db\n", 1,
                  "rule [r]: partner is only for action pack-with" },
                { "[r]\ncomm = x\naction = pack-with\npartner = nobody\n", 1,
                  "rule [r]: partner \"nobody\" is not a rule" },
                { "[r]\ncomm = x\naction = pack-with\npartner = spread\n", 1,
                  "rule [r]: partner [spread]" },
                { "[db]\ncomm = x\naction = ignore\n", 1, "rule [db] is already defined at" },
                { "[bad name]\ncomm = x\naction = ignore\n", 1, "invalid rule name \"bad name\"" },
                { "[r]\ncomm = x\naction ignore\n", 3, "syntax error" },
                { "comm = x\n", 1, "\"comm\" outside any rule" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char want[PATH_MAX + 64];
                write_file(t->rules_dir, "30-bad.conf", bad[i].text);
                diags_clear(&t->diags);
                assert_int_equal(load(t, &c), -EINVAL);
                const char *got = diags_first(&t->diags, CONFIG_DIAG_ERROR);
                assert_non_null(got);
                xsprintf(want, sizeof(want), "%s/30-bad.conf:%u: %s", t->rules_dir, bad[i].line,
                         bad[i].what);
                if (strncmp(got, want, strlen(want)) != 0)
                        fail_msg("case %zu: got \"%s\", want \"%s...\"", i, got, want);
        }
        remove(strcat(strcpy((char[PATH_MAX]){ 0 }, t->rules_dir), "/30-bad.conf"));
        assert_int_equal(load(t, &c), 0);
        config_done(&c);
}

/*
 * Issue 25: what rules.d holds that is not a rules file. A FIFO and a
 * dangling link are skipped with a warning (they were skipped without a
 * word), a link to /dev/null masks quietly, a link inside rules.d to a
 * regular file is read. A link that leads outside is refused and never
 * read: one to /etc/shadow was read, and its error quoted the first word.
 */
static void test_rules_not_regular(void **state) {
        TestDir *t = *state;
        char path[PATH_MAX], want[3 * PATH_MAX], real_dir[PATH_MAX], secret[PATH_MAX];
        Config c = { .interval_ms = 1234 };

        make_dir(t->rules_dir);
        assert_non_null(realpath(t->rules_dir, real_dir));
        write_file(t->rules_dir, "10-a.conf", "[a]\ncomm = a\naction = ignore\n");
        xsprintf(path, sizeof(path), "%s/20-fifo.conf", t->rules_dir);
        assert_int_equal(mkfifo(path, 0644), 0);
        xsprintf(path, sizeof(path), "%s/30-dangling.conf", t->rules_dir);
        assert_int_equal(symlink("no-such-file", path), 0);
        xsprintf(path, sizeof(path), "%s/40-masked.conf", t->rules_dir);
        assert_int_equal(symlink("/dev/null", path), 0);
        xsprintf(path, sizeof(path), "%s/shared", t->rules_dir);
        make_dir(path);
        write_file(path, "b.rules", "[b]\ncomm = b\naction = never-pack\n");
        xsprintf(path, sizeof(path), "%s/50-inside.conf", t->rules_dir);
        assert_int_equal(symlink("shared/b.rules", path), 0);

        assert_int_equal(load(t, &c), 0);
        assert_int_equal(t->diags.n_errors, 0);
        assert_int_equal(t->diags.n_warnings, 2);
        xsprintf(want, sizeof(want), "%s/20-fifo.conf: not a regular file (a FIFO), skipped",
                 t->rules_dir);
        assert_string_equal(t->diags.msg[0], want);
        xsprintf(want, sizeof(want),
                 "%s/30-dangling.conf: not a regular file (a dangling symbolic link), skipped",
                 t->rules_dir);
        assert_string_equal(t->diags.msg[1], want);
        assert_int_equal(c.rules.n_rules, 2);
        assert_string_equal(c.rules.rules[0].name, "a");
        assert_string_equal(c.rules.rules[1].name, "b");
        xsprintf(want, sizeof(want), "%s/50-inside.conf:1", t->rules_dir);
        assert_string_equal(c.rules.rules[1].origin, want);
        config_done(&c);

        /* a link out of rules.d, to a secret or a device: refused, nothing quoted */
        xsprintf(secret, sizeof(secret), "%s/shadow", t->root);
        write_path(secret, "hunter2:$6$salt$hash:19000:0:99999:7:::\n");
        xsprintf(path, sizeof(path), "%s/60-shadow.conf", t->rules_dir);
        assert_int_equal(symlink(secret, path), 0);
        c = (Config){ .interval_ms = 1234 };
        assert_int_equal(load(t, &c), -EPERM);
        assert_int_equal(c.interval_ms, 1234); /* untouched: a reload keeps what runs */
        char real_secret[PATH_MAX];
        assert_non_null(realpath(secret, real_secret));
        xsprintf(want, sizeof(want),
                 "%s/60-shadow.conf: a symbolic link to %s (a regular file) outside %s: refused",
                 t->rules_dir, real_secret, real_dir);
        assert_error(t, want, "");
        for (unsigned i = 0; i < t->diags.n; i++)
                assert_null(strstr(t->diags.msg[i], "hunter2"));

        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("/dev/zero", path), 0);
        assert_int_equal(load(t, &c), -EPERM);
        xsprintf(want, sizeof(want),
                 "%s/60-shadow.conf: a symbolic link to /dev/zero (a character device) outside",
                 t->rules_dir);
        assert_error(t, want, "");
        assert_int_equal(unlink(path), 0);
}

/* The shipped example: no rule as shipped; each commented rule, uncommented, loads. */
static void test_shipped_rules(void **state) {
        TestDir *t = *state;
        char src[PATH_MAX], line[512];
        Config c;

        xsprintf(src, sizeof(src), "%s/conf/rules.d/example.conf", src_dir());
        FILE *in = fopen(src, "re");
        assert_non_null(in);
        make_dir(t->rules_dir);
        char dst[PATH_MAX + 32];
        xsprintf(dst, sizeof(dst), "%s/example.conf", t->rules_dir);
        FILE *plain = fopen(dst, "we"), *out = NULL;
        assert_non_null(plain);
        bool below = false;
        while (fgets(line, sizeof(line), in)) {
                fputs(line, plain);
                if (strstr(line, "Every line below is commented out"))
                        below = true;
                else if (below && strncmp(line, "# ", 2) == 0 && !out) {
                        char un[PATH_MAX + 32];
                        xsprintf(un, sizeof(un), "%s/uncommented.txt", t->root);
                        out = fopen(un, "we");
                        assert_non_null(out);
                }
                /* "# [NAME]" and "# key = value" lines; prose has no " = " */
                if (out && strncmp(line, "# ", 2) == 0 &&
                    (line[2] == '[' || (line[2] >= 'a' && line[2] <= 'z' && strstr(line, " = "))))
                        fputs(line + 2, out);
        }
        fclose(in);
        fclose(plain);
        assert_non_null(out);
        fclose(out);
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(c.rules.n_rules, 0);
        config_done(&c);

        char un[PATH_MAX + 32];
        xsprintf(un, sizeof(un), "%s/uncommented.txt", t->root);
        assert_int_equal(rename(un, dst), 0);
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(c.rules.n_rules, 5);
        assert_string_equal(c.rules.rules[0].name, "database");
        assert_int_equal(c.rules.rules[3].action, RULE_ACTION_PACK_WITH);
        assert_string_equal(c.rules.rules[4].partner, "loadgen");
        config_done(&c);
}

/* ---- Exclude lists ---- */

static void test_exclude_lists(void **state) {
        TestDir *t = *state;
        Config c;

        write_file(t->root, "placed.conf",
                   "[exclude]\ncomm = a* b\ncomm = c\ncgroup = /system.slice\n");
        make_dir(t->dropin_dir);
        write_file(t->dropin_dir, "10.conf", "[exclude]\ncomm = d\ncgroup = /x /y\n");
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(c.n_exclude_comm, 4);
        assert_string_equal(c.exclude_comm[0], "a*");
        assert_string_equal(c.exclude_comm[1], "b");
        assert_string_equal(c.exclude_comm[2], "c");
        assert_string_equal(c.exclude_comm[3], "d");
        assert_int_equal(c.n_exclude_cgroup, 3);
        assert_string_equal(c.exclude_cgroup[2], "/y");
        config_done(&c);
        assert_int_equal(c.n_exclude_comm, 0); /* config_done() resets */
        assert_null(c.exclude_comm[0]);

        /* an empty value clears what came before, also from earlier files */
        write_file(t->dropin_dir, "20.conf", "[exclude]\ncomm =\ncomm = e   f\ncgroup =\n");
        assert_int_equal(load(t, &c), 0);
        assert_int_equal(c.n_exclude_comm, 2);
        assert_string_equal(c.exclude_comm[0], "e");
        assert_string_equal(c.exclude_comm[1], "f");
        assert_int_equal(c.n_exclude_cgroup, 0);
        config_done(&c);

        /* more than CONFIG_MAX_EXCLUDES entries */
        char big[CONFIG_MAX_EXCLUDES * 4 + 32], want[PATH_MAX + 64];
        xsprintf(big, sizeof(big), "[exclude]\ncomm =\n");
        for (unsigned line = 0; line < 5; line++) {
                strcat(big, "comm =");
                for (unsigned i = 0; i < CONFIG_MAX_EXCLUDES / 4; i++)
                        strcat(big, " x");
                strcat(big, "\n");
        }
        write_file(t->dropin_dir, "30.conf", big);
        assert_int_equal(load(t, &c), -EINVAL);
        xsprintf(want, sizeof(want), "%s/30.conf:7: [exclude] comm: more than %d entries",
                 t->dropin_dir, CONFIG_MAX_EXCLUDES);
        assert_string_equal(diags_first(&t->diags, CONFIG_DIAG_ERROR), want);
}

/* excluded(c, comm, cgroup): an [exclude] entry's ignore rule matches. */
static bool excluded(const Config *c, const char *comm, const char *cgroup) {
        const Rule *r = rules_match(&c->rules, &(RuleSubject){ .comm = comm, .cgroup = cgroup });
        return r && r->action == RULE_ACTION_IGNORE;
}

/* The old [exclude] keys keep working: each entry becomes an ignore rule
 * (comm globs, cgroup prefixes at a path boundary). */
static void test_exclude_as_rules(void **state) {
        TestDir *t = *state;
        Config c;
        write_path(t->main_file, "[exclude]\ncomm = postgres* java\n"
                                 "cgroup = /system.slice/db.service /machine.slice/\n");
        assert_int_equal(load(t, &c), 0);
        assert_true(excluded(&c, "postgres", NULL));
        assert_true(excluded(&c, "postgres: wal", "/user.slice"));
        assert_true(excluded(&c, "java", NULL));
        assert_false(excluded(&c, "javac", NULL));
        assert_false(excluded(&c, "mypostgres", NULL));
        assert_true(excluded(&c, "x", "/system.slice/db.service"));
        assert_true(excluded(&c, "x", "/system.slice/db.service/worker"));
        assert_false(excluded(&c, "x", "/system.slice/db.service2"));
        assert_false(excluded(&c, "x", "/system.slice"));
        assert_true(excluded(&c, "x", "/machine.slice"));
        assert_true(excluded(&c, "x", "/machine.slice/vm1.scope"));
        assert_false(excluded(&c, "x", "/machine.slicer"));
        config_done(&c);

        write_path(t->main_file, "[daemon]\n");
        assert_int_equal(load(t, &c), 0);
        assert_false(excluded(&c, "anything", "/"));
        config_done(&c);
        write_path(t->main_file, "[exclude]\ncgroup = /\n");
        assert_int_equal(load(t, &c), 0);
        assert_true(excluded(&c, "anything", "/user.slice"));
        config_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_profile_defaults),
                cmocka_unit_test(test_to_string),
                cmocka_unit_test(test_paths_default),
#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)
                T(test_file_not_regular),
                T(test_exclude_as_rules),
                T(test_nul_in_value),
                T(test_profile_is_directory),
                T(test_profile_not_regular),
                T(test_dropins_not_regular),
                T(test_shipped_files),
                T(test_shipped_files_uncommented),
                T(test_dropins),
                T(test_missing_files),
                T(test_profile_override),
                T(test_default_profile_from_file),
                T(test_errors),
                T(test_follow),
                T(test_no_profiles),
                T(test_unknown_keys),
                T(test_metrics_keys),
                T(test_invalid_profile_name),
                T(test_exclude_lists),
                T(test_rules),
                T(test_shipped_rules),
                T(test_rules_not_regular),
#undef T
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
