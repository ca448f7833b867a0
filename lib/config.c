/* SPDX-License-Identifier: MIT */
/*
 * Configuration loading: placed.conf, its drop-ins and the profile files,
 * parsed over inih by two tables of {section, key, parser, offset} entries.
 *
 * Why a table: every key is declared once, with its parser and range, so the
 * parser, the unknown-key warning and the documentation cannot drift apart
 * (tests/test-config.c checks the shipped files against the built-in
 * defaults).
 *
 * inih as Debian builds it does not pass line numbers to the handler, so the
 * files are fed through ini_parse_stream() with our own reader, which counts
 * lines, drops leading white space (so an indented "key = value" line is not
 * taken for inih's continuation of the previous value) and turns an over-long
 * line into an error instead of letting it split into two. The handler reads
 * the reader's count. inih returns the first line it found wrong; the
 * handler keeps the first line it rejected and why, so a message is the
 * handler's when the lines agree and "syntax error" when inih saw the line
 * first.
 *
 * Everything is loaded into a temporary Config that replaces the caller's
 * only on success, so a bad reload keeps the running configuration.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-internal.h"
#include "macro.h"
#include "string-table.h"

#ifndef PLACED_SYSCONFDIR
#define PLACED_SYSCONFDIR "/etc"
#endif
#ifndef PLACED_DATADIR
#define PLACED_DATADIR "/usr/local/share"
#endif

static const char *const pair_placement_table[_PAIR_PLACEMENT_MAX] = {
        [PAIR_PLACEMENT_NONE] = "none",
        [PAIR_PLACEMENT_SAME_CPU] = "same-cpu",
        [PAIR_PLACEMENT_SAME_CORE] = "same-core",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(pair_placement, PairPlacement);

static const char *const spread_placement_table[_SPREAD_PLACEMENT_MAX] = {
        [SPREAD_PLACEMENT_NONE] = "none",
        [SPREAD_PLACEMENT_PACK] = "pack",
        [SPREAD_PLACEMENT_HOME] = "home",
        [SPREAD_PLACEMENT_SPREAD] = "spread",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(spread_placement, SpreadPlacement);

static const char *const profile_cores_table[_PROFILE_CORES_MAX] = {
        [PROFILE_CORES_ANY] = "any",
        [PROFILE_CORES_PERFORMANCE] = "performance",
        [PROFILE_CORES_EFFICIENT] = "efficient",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(profile_cores, ProfileCores);

static const char *const idle_constraint_table[_IDLE_CONSTRAINT_MAX] = {
        [IDLE_CONSTRAINT_NEVER] = "never",
        [IDLE_CONSTRAINT_ON_DELAY] = "on-delay",
        [IDLE_CONSTRAINT_LATENCY_CRITICAL] = "latency-critical",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(idle_constraint, IdleConstraint);

static const char *const wake_source_kind_table[_WAKE_SOURCE_KIND_MAX] = {
        [WAKE_SOURCE_AUTO] = "auto",     [WAKE_SOURCE_BPF] = "bpf",   [WAKE_SOURCE_PERF] = "perf",
        [WAKE_SOURCE_REPLAY] = "replay", [WAKE_SOURCE_NONE] = "none",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(wake_source_kind, WakeSourceKind);

static const char *const follow_kind_table[_FOLLOW_KIND_MAX] = {
        [FOLLOW_NONE] = "none",
        [FOLLOW_POWER_PROFILES] = "power-profiles",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(follow_kind, FollowKind);

const char *const follow_ppd_profiles[FOLLOW_PPD_PROFILES] = { "power-saver", "balanced",
                                                               "performance" };
/* The default [follow] mapping, index for index. */
static const char *const follow_default_map[FOLLOW_PPD_PROFILES] = { "power-first", "balanced",
                                                                     "latency-first" };

const char *config_follow_profile(const Config *c, const char *ppd_profile) {
        for (size_t i = 0; ppd_profile && i < FOLLOW_PPD_PROFILES; i++)
                if (strcmp(follow_ppd_profiles[i], ppd_profile) == 0)
                        return c->follow_map[i];
        return NULL;
}

/*
 * The built-in profiles; conf/profiles/NAME.conf repeats these numbers,
 * commented out, with the reasons.
 */
static const Profile builtin_profiles[] = {
        {
                .name = "power-first",
                .description = "Save energy: pack groups onto few CPUs and LLCs, consolidate "
                               "at low load",
                .pair_placement = PAIR_PLACEMENT_SAME_CPU,
                .pair_max_overlap_pct = 30,
                .pair_min_wake_rate = 50,
                .fanout_placement = SPREAD_PLACEMENT_PACK,
                .fanout_min_workers = 0,
                .mesh_placement = SPREAD_PLACEMENT_PACK,
                .llc_headroom_pct = 20,
                .busy_pct = 50,
                .busy_cores = PROFILE_CORES_ANY,
                .light_cores = PROFILE_CORES_EFFICIENT,
                .low_power = true,
                .consolidate = true,
                .consolidate_below_load_pct = 30,
                .housekeeping_min_cpus = 2,
                .idle_constraint = IDLE_CONSTRAINT_NEVER,
                .idle_max_exit_latency_us = 0,
                .runq_delay_budget_us = 5000,
                .dwell_ms = 10000,
                .min_gain_pct = 10,
                .trial_ticks = 4,
                .trial_max_ticks = 16,
                .trial_recheck_max_ticks = 8,
                .trial_keep_pct = 90,
                .trial_max_run_loss_pct = 25,
                .trial_backoff_ms = 30000,
                .trial_recheck_s = 30,
                .trial_recheck_drift_pct = 50,
        },
        {
                .name = "balanced",
                .description = "Default: pairs on one CPU when they fit, stable LLC homes for "
                               "groups, spread large fan-outs",
                .pair_placement = PAIR_PLACEMENT_SAME_CPU,
                .pair_max_overlap_pct = 30,
                .pair_min_wake_rate = 50,
                .fanout_placement = SPREAD_PLACEMENT_SPREAD,
                .fanout_min_workers = 0,
                .mesh_placement = SPREAD_PLACEMENT_HOME,
                .llc_headroom_pct = 20,
                .busy_pct = 50,
                .busy_cores = PROFILE_CORES_PERFORMANCE,
                .light_cores = PROFILE_CORES_ANY,
                .low_power = true,
                .consolidate = false,
                .consolidate_below_load_pct = 30,
                .housekeeping_min_cpus = 2,
                .idle_constraint = IDLE_CONSTRAINT_ON_DELAY,
                .idle_max_exit_latency_us = 20,
                .runq_delay_budget_us = 1000,
                .dwell_ms = 5000,
                .min_gain_pct = 5,
                .trial_ticks = 4,
                .trial_max_ticks = 16,
                .trial_recheck_max_ticks = 8,
                .trial_keep_pct = 100,
                .trial_max_run_loss_pct = 25,
                .trial_backoff_ms = 30000,
                .trial_recheck_s = 30,
                .trial_recheck_drift_pct = 50,
        },
        {
                .name = "latency-first",
                .description = "Lowest latency: spread over idle LLCs, cap idle exit latency "
                               "where latency-critical groups run",
                .pair_placement = PAIR_PLACEMENT_SAME_CORE,
                .pair_max_overlap_pct = 30,
                .pair_min_wake_rate = 50,
                .fanout_placement = SPREAD_PLACEMENT_SPREAD,
                .fanout_min_workers = 1,
                .mesh_placement = SPREAD_PLACEMENT_SPREAD,
                .llc_headroom_pct = 30,
                .busy_pct = 50,
                .busy_cores = PROFILE_CORES_PERFORMANCE,
                .light_cores = PROFILE_CORES_ANY,
                .low_power = false,
                .consolidate = false,
                .consolidate_below_load_pct = 30,
                .housekeeping_min_cpus = 2,
                .idle_constraint = IDLE_CONSTRAINT_LATENCY_CRITICAL,
                .idle_max_exit_latency_us = 2,
                .runq_delay_budget_us = 200,
                .dwell_ms = 3000,
                .min_gain_pct = 3,
                .trial_ticks = 4,
                .trial_max_ticks = 16,
                .trial_recheck_max_ticks = 8,
                .trial_keep_pct = 103,
                .trial_max_run_loss_pct = 25,
                .trial_backoff_ms = 30000,
                .trial_recheck_s = 30,
                .trial_recheck_drift_pct = 50,
        },
};

#define DEFAULT_PROFILE "balanced"

/**
 * profile_defaults() - the built-in values of one of the shipped profiles.
 * @name: "power-first", "balanced" or "latency-first"
 * @ret: filled on success, untouched otherwise
 *
 * Return: 0, or -ENOENT when @name is not a built-in profile.
 */
int profile_defaults(const char *name, Profile *ret) {
        for (size_t i = 0; i < ELEMENTSOF(builtin_profiles); i++)
                if (name && strcmp(builtin_profiles[i].name, name) == 0) {
                        *ret = builtin_profiles[i];
                        return 0;
                }
        return -ENOENT;
}

/**
 * config_paths_default() - the locations used by an installed placed.
 * @ret: filled with static strings
 */
void config_paths_default(ConfigPaths *ret) {
        *ret = (ConfigPaths){
                .main_file = PLACED_SYSCONFDIR "/placed/placed.conf",
                .dropin_dir = PLACED_SYSCONFDIR "/placed/placed.conf.d",
                .profiles_dir_usr = PLACED_DATADIR "/placed/profiles",
                .profiles_dir_etc = PLACED_SYSCONFDIR "/placed/profiles",
                .rules_dir = PLACED_SYSCONFDIR "/placed/rules.d",
        };
}

/**
 * config_defaults() - the built-in daemon settings, no exclusions and no
 * profiles (those come only from the profile directories).
 * @ret: overwritten; it owns nothing afterwards
 */
void config_defaults(Config *ret) {
        memset(ret, 0, sizeof(*ret));
        snprintf(ret->profile, sizeof(ret->profile), "%s", DEFAULT_PROFILE);
        ret->interval_ms = 1000;
        ret->quick_interval_ms = 100;
        ret->quick_ticks_per_sec = 5;
        ret->settled_factor = 3;
        ret->dry_run = false;
        snprintf(ret->journal_dir, sizeof(ret->journal_dir), "%s", "/run/placed");
        ret->wake_source = WAKE_SOURCE_AUTO;
        ret->sample_period = 1;
        ret->wake_rest_ms = 2000;
        ret->wake_look_s = 10;
        ret->nice = -10;
        ret->metrics_textfile[0] = '\0';
        ret->metrics_every_ticks = 15;
        ret->follow = FOLLOW_NONE;
        for (size_t i = 0; i < FOLLOW_PPD_PROFILES; i++)
                snprintf(ret->follow_map[i], sizeof(ret->follow_map[i]), "%s",
                         follow_default_map[i]);
}

void config_strv_clear(char **v, unsigned *n) {
        for (unsigned i = 0; i < *n; i++) {
                free(v[i]);
                v[i] = NULL;
        }
        *n = 0;
}

/**
 * config_done() - frees what @c owns and resets it to the defaults.
 * @c: a Config from config_load() or config_defaults(); NULL is fine
 */
void config_done(Config *c) {
        if (!c)
                return;
        config_strv_clear(c->exclude_comm, &c->n_exclude_comm);
        config_strv_clear(c->exclude_cgroup, &c->n_exclude_cgroup);
        rules_done(&c->rules);
        config_defaults(c);
}

/**
 * config_find_profile() - look a profile up by name.
 * @c: the configuration
 * @name: profile name
 *
 * Return: the profile inside @c, or NULL when there is none of that name.
 */
const Profile *config_find_profile(const Config *c, const char *name) {
        if (!c || !name)
                return NULL;
        for (unsigned i = 0; i < c->n_profiles; i++)
                if (strcmp(c->profiles[i].name, name) == 0)
                        return &c->profiles[i];
        return NULL;
}

/* ---- One load: diagnostics and the state shared by all files ---- */

void config_loader_diag(ConfigLoader *l, ConfigDiagLevel level, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        if (!l->diag)
                return;
        va_start(ap, fmt);
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0) /* still say something */
                l->diag(l->userdata, level, "out of memory while formatting a message");
        else
                l->diag(l->userdata, level, msg);
}

int config_parse_error(ParseFile *pf, const char *fmt, ...) {
        if (pf->error_line == 0) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(pf->error, sizeof(pf->error), fmt, ap);
                va_end(ap);
                pf->error_line = pf->in.lineno;
        }
        return -EINVAL;
}

/* inih's fgets(): ini_line_next(), its refusals kept as the file's error. */
static char *pf_read_line(char *str, int num, void *stream) {
        ParseFile *pf = stream;
        char why[96];

        char *line = ini_line_next(&pf->in, CONFIG_FILE_MAX, str, num, why, sizeof(why));
        if (why[0])
                config_parse_error(pf, "%s", why);
        return line;
}

/* Describes what inih rejected on line lineno, reading the line again. */
static void pf_describe_syntax_error(ParseFile *pf, unsigned lineno, char *buf, size_t size) {
        const char *what = "syntax error";

        if (fseek(pf->in.f, 0, SEEK_SET) == 0) {
                for (unsigned i = 1; i <= lineno; i++)
                        if (getline(&pf->in.buf, &pf->in.size, pf->in.f) < 0)
                                break;
                        else if (i == lineno) {
                                const char *s = pf->in.buf + strspn(pf->in.buf, SPACE);
                                what = *s == '[' ? "syntax error: section header without "
                                                   "closing ']'"
                                                 : "syntax error: expected \"key = value\"";
                        }
        }
        snprintf(buf, size, "%s", what);
}

static const ConfigItem *pf_find_item(const ParseFile *pf, const char *section, const char *key,
                                      bool *ret_section_known) {
        bool known = false;
        for (size_t i = 0; i < pf->n_items; i++) {
                if (strcmp(pf->items[i].section, section) != 0)
                        continue;
                known = true;
                if (strcmp(pf->items[i].key, key) == 0)
                        return &pf->items[i];
        }
        *ret_section_known = known;
        return NULL;
}

static int pf_handler(void *user, const char *section, const char *key, const char *value) {
        ParseFile *pf = user;
        ConfigLoader *l = pf->loader;
        bool section_known;

        const ConfigItem *item = pf_find_item(pf, section, key, &section_known);
        if (item) {
                void *field = (char *)pf->target + item->offset;
                return item->parse(pf, item, value, field) >= 0;
        }

        if (section_known)
                config_loader_diag(l, CONFIG_DIAG_WARNING,
                                   "%s:%u: unknown key \"%s\" in [%s], ignored", pf->path,
                                   pf->in.lineno, key, section);
        else if (section[0] == '\0')
                config_loader_diag(l, CONFIG_DIAG_WARNING,
                                   "%s:%u: \"%s\" outside any section, ignored", pf->path,
                                   pf->in.lineno, key);
        else if (!pf->ignored_section || strcmp(pf->ignored_section, section) != 0) {
                /* once per run of keys in the same unknown section */
                config_loader_diag(l, CONFIG_DIAG_WARNING, "%s:%u: unknown section [%s], ignored",
                                   pf->path, pf->in.lineno, section);
                free(pf->ignored_section);
                pf->ignored_section = strdup(section);
        }
        return 1;
}

/*
 * Opens a configuration file for reading, refusing what is not a regular file
 * of at most CONFIG_FILE_MAX bytes: a FIFO would hang start and reload, and
 * /dev/zero would be read forever. O_NONBLOCK keeps the open itself from
 * waiting on a FIFO. /dev/null (a masked file) reads as empty.
 * Return: 0 with *ret, -ENOENT (no diag), or negative errno after a diag.
 */
static int config_open_file(ConfigLoader *l, const char *path, FILE **ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                int r = negative_errno();
                if (r != -ENOENT)
                        config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: cannot open: %s", path,
                                           strerror(-r));
                return r;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: cannot stat: %s", path, strerror(-r));
                return r;
        }
        if (S_ISDIR(st.st_mode)) {
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: is a directory, not a file", path);
                return -EISDIR;
        }
        if (!S_ISREG(st.st_mode) && !ini_line_is_dev_null(&st)) {
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: not a regular file (%s)", path,
                                   ini_line_mode_kind(st.st_mode));
                return -EINVAL;
        }
        if (st.st_size > CONFIG_FILE_MAX) {
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: larger than %d bytes", path,
                                   CONFIG_FILE_MAX);
                return -EFBIG;
        }
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                return negative_errno();
        FILE *f = fdopen(fd, "re");
        if (!f)
                return negative_errno();
        TAKE_FD(fd);
        *ret = f;
        return 0;
}

/*
 * Applies the file at path to target through items. A missing file is fine
 * when missing_ok. Return: 1 if read, 0 if missing, negative errno (after a
 * diag) otherwise.
 */
static int parse_file(ConfigLoader *l, const char *path, const ConfigItem *items, size_t n_items,
                      void *target, bool missing_ok) {
        ParseFile pf = {
                .loader = l, .path = path, .items = items, .n_items = n_items, .target = target
        };
        char syntax[128];
        int r;

        r = config_open_file(l, path, &pf.in.f);
        if (r == -ENOENT && missing_ok)
                return 0;
        if (r == -ENOENT)
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: cannot open: %s", path, strerror(-r));
        if (r < 0)
                return r;

        r = ini_parse_stream(pf_read_line, &pf, pf_handler, &pf);
        if (r == -2) {
                r = -ENOMEM;
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: out of memory", path);
        } else if (r < 0 || ferror(pf.in.f)) {
                r = -EIO;
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: read error", path);
        } else if (r > 0 && (pf.error_line == 0 || (unsigned)r < pf.error_line)) {
                pf_describe_syntax_error(&pf, (unsigned)r, syntax, sizeof(syntax));
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s:%d: %s", path, r, syntax);
                r = -EINVAL;
        } else if (pf.error_line > 0) {
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s:%u: %s", path, pf.error_line,
                                   pf.error);
                r = -EINVAL;
        } else
                r = 1;

        fclose(pf.in.f);
        free(pf.in.buf);
        free(pf.ignored_section);
        return r;
}

/* ---- The tables ---- */

#define ITEM(sec, k, fn, type, field, ...) \
        { .section = sec, .key = k, .parse = fn, .offset = offsetof(type, field), __VA_ARGS__ }
#define ITEM_UINT(sec, k, type, field, lo, hi) \
        ITEM(sec, k, config_parse_unsigned, type, field, .min = lo, .max = hi)
#define ITEM_BOOL(sec, k, type, field) \
        ITEM(sec, k, config_parse_bool, type, field, .size = sizeof(bool))
/* An enum key takes the names of the enum's string table (string-table.h). */
#define ITEM_ENUM(sec, k, type, field, name, ...)                           \
        ITEM(sec, k, config_parse_enum, type, field, .names = name##_table, \
             .n_names = ELEMENTSOF(name##_table), __VA_ARGS__)
#define ITEM_STR(sec, k, fn, type, field) \
        ITEM(sec, k, fn, type, field, .size = sizeof(((type *)0)->field))
/* The count follows the array; .size is the distance to it. */
#define ITEM_LIST(sec, k, field, count)                        \
        ITEM(sec, k, config_parse_exclude_list, Config, field, \
             .size = offsetof(Config, count) - offsetof(Config, field))

static const ConfigItem config_items[] = {
        ITEM_STR("daemon", "profile", config_parse_profile_name, Config, profile),
        ITEM_UINT("daemon", "interval_ms", Config, interval_ms, 100, 60000),
        ITEM_UINT("daemon", "quick_interval_ms", Config, quick_interval_ms, 0, 10000),
        ITEM_UINT("daemon", "quick_ticks_per_sec", Config, quick_ticks_per_sec, 1, 100),
        ITEM_UINT("daemon", "settled_factor", Config, settled_factor, 1, 60),
        ITEM_BOOL("daemon", "dry_run", Config, dry_run),
        ITEM_STR("daemon", "journal_dir", config_parse_abs_path, Config, journal_dir),
        /* The replay source needs a file: only the command line selects it. */
        ITEM_ENUM("daemon", "wake_source", Config, wake_source, wake_source_kind,
                  .refused = 1u << WAKE_SOURCE_REPLAY),
        ITEM_UINT("daemon", "sample_period", Config, sample_period, 1, 1000000),
        ITEM_UINT("daemon", "wake_rest_ms", Config, wake_rest_ms, 0, 3600000),
        ITEM_UINT("daemon", "wake_look_s", Config, wake_look_s, 1, 3600),
        ITEM_ENUM("daemon", "follow", Config, follow, follow_kind),
        ITEM("daemon", "nice", config_parse_nice, Config, nice),
        ITEM_STR("follow", "power-saver", config_parse_profile_name, Config, follow_map[0]),
        ITEM_STR("follow", "balanced", config_parse_profile_name, Config, follow_map[1]),
        ITEM_STR("follow", "performance", config_parse_profile_name, Config, follow_map[2]),
        ITEM_LIST("exclude", "comm", exclude_comm, n_exclude_comm),
        ITEM_LIST("exclude", "cgroup", exclude_cgroup, n_exclude_cgroup),
        ITEM_STR("metrics", "textfile", config_parse_textfile_path, Config, metrics_textfile),
        ITEM_UINT("metrics", "every_ticks", Config, metrics_every_ticks, 1, 3600),
};

static const ConfigItem profile_items[] = {
        ITEM_STR("profile", "description", config_parse_string, Profile, description),
        ITEM_ENUM("pair", "placement", Profile, pair_placement, pair_placement),
        ITEM_UINT("pair", "max_overlap_pct", Profile, pair_max_overlap_pct, 0, 100),
        ITEM_UINT("pair", "min_wakeups_per_sec", Profile, pair_min_wake_rate, 0, 1000000),
        /* 0.1's utilisation gate; pairs are judged by measured outcome now. */
        ITEM("pair", "max_util_pct", config_parse_obsolete, Profile, pair_max_overlap_pct, .min = 1,
             .max = 100),
        ITEM_ENUM("fanout", "placement", Profile, fanout_placement, spread_placement),
        ITEM_UINT("fanout", "min_workers", Profile, fanout_min_workers, 0, 4096),
        ITEM_ENUM("mesh", "placement", Profile, mesh_placement, spread_placement),
        ITEM_UINT("capacity", "llc_headroom_pct", Profile, llc_headroom_pct, 0, 90),
        ITEM_UINT("capacity", "busy_pct", Profile, busy_pct, 0, 1000),
        ITEM_ENUM("capacity", "busy_cores", Profile, busy_cores, profile_cores),
        ITEM_ENUM("capacity", "light_cores", Profile, light_cores, profile_cores),
        ITEM_BOOL("capacity", "low_power", Profile, low_power),
        ITEM_BOOL("system", "consolidate", Profile, consolidate),
        ITEM_UINT("system", "consolidate_below_load_pct", Profile, consolidate_below_load_pct, 0,
                  100),
        ITEM_UINT("system", "housekeeping_min_cpus", Profile, housekeeping_min_cpus, 1, 4096),
        ITEM_ENUM("idle", "constraint", Profile, idle_constraint, idle_constraint),
        ITEM_UINT("idle", "max_exit_latency_us", Profile, idle_max_exit_latency_us, 0, 100000000),
        ITEM_UINT("feedback", "runq_delay_budget_us", Profile, runq_delay_budget_us, 1, 10000000),
        ITEM_UINT("hysteresis", "dwell_ms", Profile, dwell_ms, 0, 3600000),
        ITEM_UINT("hysteresis", "min_gain_pct", Profile, min_gain_pct, 0, 100),
        ITEM_UINT("trial", "ticks", Profile, trial_ticks, 2, 60),
        ITEM_UINT("trial", "max_ticks", Profile, trial_max_ticks, 1, 600),
        ITEM_UINT("trial", "keep_pct", Profile, trial_keep_pct, 1, 1000),
        ITEM_UINT("trial", "max_run_loss_pct", Profile, trial_max_run_loss_pct, 0, 10000),
        ITEM_UINT("trial", "backoff_ms", Profile, trial_backoff_ms, 0, 86400000),
        ITEM_UINT("trial", "recheck_s", Profile, trial_recheck_s, 1, 86400),
        ITEM_UINT("trial", "recheck_drift_pct", Profile, trial_recheck_drift_pct, 1, 10000),
        ITEM_UINT("trial", "recheck_max_ticks", Profile, trial_recheck_max_ticks, 1, 600),
};

/* ---- Directories ---- */

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strv_free(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

static int strv_push(char ***v, size_t *n, size_t *allocated, const char *s) {
        if (*n == *allocated) {
                size_t a = *allocated ? *allocated * 2 : 16;
                char **nv = reallocarray(*v, a, sizeof(**v));
                if (!nv)
                        return -ENOMEM;
                *v = nv;
                *allocated = a;
        }
        (*v)[*n] = strdup(s);
        if (!(*v)[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

/*
 * Lists the names of the regular files DIR/ *.conf in strcmp() order. A
 * link to /dev/null masks a file of its name and is skipped quietly; any
 * other entry that is not a regular file (a FIFO, a device, a socket, a
 * directory, a dangling link) is skipped with a warning naming it and what
 * it is, or, where strict (where a profile should be), is an error. Nothing
 * is opened here (a FIFO would block); config_open_file() checks the file
 * again once open. Return: 0 with *ret (NULL when the directory does not
 * exist), or negative errno after a diag.
 */
static int list_conf_files(ConfigLoader *l, const char *dir, bool strict, char ***ret,
                           size_t *ret_n) {
        DIR *d = opendir(dir);
        if (!d) {
                int r = negative_errno();
                if (r == -ENOENT || r == -ENOTDIR) {
                        *ret = NULL;
                        *ret_n = 0;
                        return 0;
                }
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: cannot open directory: %s", dir,
                                   strerror(-r));
                return r;
        }

        /* The names first, then the checks in name order: messages come out in that order. */
        char **v = NULL;
        size_t n = 0, allocated = 0;
        int r = 0;
        struct dirent *de;
        while (r == 0 && (errno = 0, de = readdir(d))) {
                size_t len = strlen(de->d_name);
                if (len > 5 && strcmp(de->d_name + len - 5, ".conf") == 0)
                        r = strv_push(&v, &n, &allocated, de->d_name);
        }
        if (r == 0 && errno != 0)
                r = negative_errno();
        if (r < 0) {
                closedir(d);
                strv_free(v, n);
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: cannot list: %s", dir, strerror(-r));
                return r;
        }
        if (n > 0)
                qsort(v, n, sizeof(*v), strcmp_ptr);

        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
                const char *what;
                bool is_dir;
                if (ini_line_entry_kind(dirfd(d), v[i], &what, &is_dir) > 0) {
                        v[kept++] = v[i];
                        continue;
                }
                if (what && strict && is_dir) {
                        config_loader_diag(l, CONFIG_DIAG_ERROR,
                                           "%s/%s: is a directory, not a file", dir, v[i]);
                        r = -EISDIR;
                } else if (what && strict) {
                        config_loader_diag(l, CONFIG_DIAG_ERROR, "%s/%s: not a regular file (%s)",
                                           dir, v[i], what);
                        r = -EINVAL;
                } else if (what)
                        config_loader_diag(l, CONFIG_DIAG_WARNING,
                                           "%s/%s: not a regular file (%s), skipped", dir, v[i],
                                           what);
                free(v[i]);
                if (r < 0) {
                        for (size_t k = i + 1; k < n; k++)
                                free(v[k]);
                        n = kept;
                        break;
                }
        }
        closedir(d);
        if (r < 0) {
                strv_free(v, kept);
                return r;
        }
        *ret = v;
        *ret_n = kept;
        return 0;
}

static int config_load_dropins(ConfigLoader *l, const char *dir) {
        char **names;
        size_t n;
        int r = list_conf_files(l, dir, false, &names, &n);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
                        r = -ENOMEM;
                else
                        r = parse_file(l, path, config_items, ELEMENTSOF(config_items), l->config,
                                       true);
        }
        strv_free(names, n);
        return r < 0 ? r : 0;
}

/* One profile file found on disk; a later directory replaces an earlier one's entry. */
typedef struct ProfileFile {
        char name[PROFILE_NAME_MAX];
        char *path; /* owned */
} ProfileFile;

typedef struct ProfileFiles {
        ProfileFile *v;
        size_t n, allocated;
} ProfileFiles;

static void profile_files_done(ProfileFiles *pfs) {
        for (size_t i = 0; i < pfs->n; i++)
                free(pfs->v[i].path);
        free(pfs->v);
}

static int profile_files_add(ProfileFiles *pfs, const char *name, char *path) {
        for (size_t i = 0; i < pfs->n; i++)
                if (strcmp(pfs->v[i].name, name) == 0) {
                        free(pfs->v[i].path);
                        pfs->v[i].path = path;
                        return 0;
                }
        if (pfs->n == pfs->allocated) {
                size_t a = pfs->allocated ? pfs->allocated * 2 : 8;
                ProfileFile *nv = reallocarray(pfs->v, a, sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                pfs->v = nv;
                pfs->allocated = a;
        }
        snprintf(pfs->v[pfs->n].name, PROFILE_NAME_MAX, "%s", name);
        pfs->v[pfs->n++].path = path;
        return 0;
}

static int profile_files_scan(ConfigLoader *l, const char *dir, ProfileFiles *pfs) {
        char **names;
        size_t n;
        int r = list_conf_files(l, dir, true, &names, &n);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n && r >= 0; i++) {
                names[i][strlen(names[i]) - 5] = '\0'; /* drop ".conf" */
                if (!config_profile_name_is_valid(names[i])) {
                        config_loader_diag(
                                l, CONFIG_DIAG_WARNING,
                                "%s/%s.conf: invalid profile name \"%s\" (1 to %d of a-z, "
                                "0-9, '_' and '-'), skipped",
                                dir, names[i], names[i], PROFILE_NAME_MAX - 1);
                        continue;
                }
                char *path;
                if (asprintf(&path, "%s/%s.conf", dir, names[i]) < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = profile_files_add(pfs, names[i], path);
                if (r < 0)
                        free(path);
        }
        strv_free(names, n);
        return r;
}

static int profile_file_cmp(const void *a, const void *b) {
        return strcmp(((const ProfileFile *)a)->name, ((const ProfileFile *)b)->name);
}

static int config_load_profiles(ConfigLoader *l) {
        const char *dirs[] = { l->paths->profiles_dir_usr, l->paths->profiles_dir_etc };
        ProfileFiles pfs = {};
        int r = 0;

        for (size_t i = 0; i < ELEMENTSOF(dirs) && r >= 0; i++)
                if (dirs[i])
                        r = profile_files_scan(l, dirs[i], &pfs);
        if (r >= 0 && pfs.n > 0)
                qsort(pfs.v, pfs.n, sizeof(*pfs.v), profile_file_cmp);

        Config *c = l->config;
        for (size_t i = 0; i < pfs.n && r >= 0; i++) {
                if (c->n_profiles >= CONFIG_MAX_PROFILES) {
                        config_loader_diag(l, CONFIG_DIAG_WARNING,
                                           "%s: more than %d profiles, skipped", pfs.v[i].path,
                                           CONFIG_MAX_PROFILES);
                        continue;
                }
                Profile *p = &c->profiles[c->n_profiles];
                if (profile_defaults(pfs.v[i].name, p) < 0) {
                        /* a new profile starts from balanced, but is not called that */
                        (void)profile_defaults(DEFAULT_PROFILE, p);
                        snprintf(p->name, sizeof(p->name), "%s", pfs.v[i].name);
                        p->description[0] = '\0';
                }
                r = parse_file(l, pfs.v[i].path, profile_items, ELEMENTSOF(profile_items), p,
                               false);
                if (r > 0)
                        c->n_profiles++;
        }
        profile_files_done(&pfs);
        return r < 0 ? r : 0;
}

static int config_check_default_profile(ConfigLoader *l) {
        const Config *c = l->config;
        const char *usr = l->paths->profiles_dir_usr, *etc = l->paths->profiles_dir_etc;

        if (config_find_profile(c, c->profile))
                return 0;

        _cleanup_free_ char *where = NULL;
        int r;
        const char *etc_state = etc && access(etc, F_OK) < 0 ? ", which does not exist" : "";
        const char *usr_state = usr && access(usr, F_OK) < 0 ? ", which does not exist" : "";
        if (etc && usr)
                r = asprintf(&where, "searched %s%s and %s%s", etc, etc_state, usr, usr_state);
        else if (etc || usr)
                r = asprintf(&where, "searched %s%s", etc ? etc : usr, etc ? etc_state : usr_state);
        else
                r = asprintf(&where, "no profile directory configured");
        if (r < 0)
                return -ENOMEM;

        if (l->profile_set_at)
                config_loader_diag(l, CONFIG_DIAG_ERROR, "%s: profile \"%s\" not found (%s)",
                                   l->profile_set_at, c->profile, where);
        else
                config_loader_diag(l, CONFIG_DIAG_ERROR, "default profile \"%s\" not found (%s)",
                                   c->profile, where);
        return -ENOENT;
}

static void rules_diag(void *userdata, bool error, const char *message) {
        ConfigLoader *l = ASSERT_PTR(userdata);
        config_loader_diag(l, error ? CONFIG_DIAG_ERROR : CONFIG_DIAG_WARNING, "%s", message);
}

/* The [exclude] entries as ignore rules, then rules_dir's; checked as a whole. */
static int config_load_rules(ConfigLoader *l) {
        Config *c = l->config;
        int r = 0;

        for (unsigned i = 0; i < c->n_exclude_comm && r >= 0; i++)
                r = rules_add_ignore(&c->rules, "exclude.comm", i, c->exclude_comm[i], NULL);
        for (unsigned i = 0; i < c->n_exclude_cgroup && r >= 0; i++)
                r = rules_add_ignore(&c->rules, "exclude.cgroup", i, NULL, c->exclude_cgroup[i]);
        if (r < 0) {
                config_loader_diag(l, CONFIG_DIAG_ERROR, "[exclude]: %s", strerror(-r));
                return r;
        }
        if (l->paths->rules_dir) {
                r = rules_load_dir(l->paths->rules_dir, &c->rules, rules_diag, l);
                if (r < 0)
                        return r;
        }
        return rules_check(&c->rules, rules_diag, l);
}

/*
 * Every profile the [follow] mapping names must exist: checked when placed
 * follows, and for each key a file set whether it follows or not.
 */
static int config_check_follow_profiles(ConfigLoader *l) {
        const Config *c = l->config;
        for (size_t i = 0; i < FOLLOW_PPD_PROFILES; i++) {
                if (config_find_profile(c, c->follow_map[i]))
                        continue;
                if (l->follow_set_at[i])
                        config_loader_diag(l, CONFIG_DIAG_ERROR,
                                           "%s: [follow] %s: profile \"%s\" not found (known: %u "
                                           "profiles in the profile directories)",
                                           l->follow_set_at[i], follow_ppd_profiles[i],
                                           c->follow_map[i], c->n_profiles);
                else if (c->follow == FOLLOW_POWER_PROFILES)
                        config_loader_diag(
                                l, CONFIG_DIAG_ERROR,
                                "follow = power-profiles maps \"%s\" to profile \"%s\" by "
                                "default, and there is no such profile; set [follow] %s",
                                follow_ppd_profiles[i], c->follow_map[i], follow_ppd_profiles[i]);
                else
                        continue;
                return -ENOENT;
        }
        return 0;
}

static int config_load_all(ConfigLoader *l) {
        const ConfigPaths *paths = l->paths;
        int r;

        if (paths->main_file) {
                r = parse_file(l, paths->main_file, config_items, ELEMENTSOF(config_items),
                               l->config, true);
                if (r < 0)
                        return r;
        }
        if (paths->dropin_dir) {
                r = config_load_dropins(l, paths->dropin_dir);
                if (r < 0)
                        return r;
        }
        r = config_load_rules(l);
        if (r < 0)
                return r;
        r = config_load_profiles(l);
        if (r < 0)
                return r;
        r = config_check_default_profile(l);
        if (r < 0)
                return r;
        return config_check_follow_profiles(l);
}

/**
 * config_load() - read the configuration: defaults, main file, drop-ins in
 * lexical order, then the profiles (/etc replacing /usr by name).
 * @paths: where to look; a NULL member is not read
 * @diag: receives every error and warning (may be NULL)
 * @userdata: passed to @diag
 * @ret: filled on success (its previous contents are overwritten, not
 *       freed); untouched on failure
 *
 * Return: 0; -EINVAL on a syntax error or invalid value; -ENOENT when the
 * default profile is not found; another negative errno on I/O errors.
 */
int config_load(const ConfigPaths *paths, ConfigDiag diag, void *userdata, Config *ret) {
        Config *c = malloc(sizeof(*c));
        if (!c)
                return -ENOMEM;
        config_defaults(c);

        ConfigLoader l = { .paths = paths, .diag = diag, .userdata = userdata, .config = c };
        int r = config_load_all(&l);
        free(l.profile_set_at);
        for (size_t i = 0; i < FOLLOW_PPD_PROFILES; i++)
                free(l.follow_set_at[i]);
        if (r < 0) {
                config_done(c);
                free(c);
                return r;
        }
        *ret = *c; /* the lists move over */
        free(c);
        return 0;
}
