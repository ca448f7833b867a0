/* SPDX-License-Identifier: MIT */
/*
 * Configuration: the daemon settings (placed.conf and its drop-ins) and the
 * placement profiles (one INI file per profile), parsed table-driven over
 * inih.
 *
 * Precedence: built-in defaults, then the main file, then drop-ins in lexical
 * order. A profile named NAME is read from profiles_dir_etc/NAME.conf if that
 * exists, else profiles_dir_usr/NAME.conf.
 *
 * Errors are reported through a ConfigDiag callback as "FILE:LINE: message"
 * and fail the load (negative errno); unknown keys are warnings. A failed
 * load never touches the caller's Config: the running configuration stays.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "rules.h"

#define PROFILE_NAME_MAX    64
#define CONFIG_MAX_EXCLUDES 64
#define CONFIG_MAX_PROFILES 32
#define CONFIG_FILE_MAX     (1024 * 1024) /* bytes; a bigger file is refused */
#define CONFIG_PATH_MAX     256

/* Where a pair goes (see the profile table in docs/design.md). */
typedef enum PairPlacement {
        PAIR_PLACEMENT_NONE,      /* leave to the kernel */
        PAIR_PLACEMENT_SAME_CPU,  /* both tasks on one CPU */
        PAIR_PLACEMENT_SAME_CORE, /* one core (SMT siblings), or one CPU */
        _PAIR_PLACEMENT_MAX,
} PairPlacement;

/* How fanout and mesh groups are laid over LLCs. */
typedef enum SpreadPlacement {
        SPREAD_PLACEMENT_NONE,   /* leave to the kernel */
        SPREAD_PLACEMENT_PACK,   /* fewest LLCs that hold the utilisation with headroom */
        SPREAD_PLACEMENT_HOME,   /* one stable home per group, homes spread out */
        SPREAD_PLACEMENT_SPREAD, /* as many LLCs as have idle CPUs */
        _SPREAD_PLACEMENT_MAX,
} SpreadPlacement;

/* Which kinds of core a group goes to (topology.h), on a machine with more than one. */
typedef enum ProfileCores {
        PROFILE_CORES_ANY,         /* wherever there is room */
        PROFILE_CORES_PERFORMANCE, /* the biggest cores, while they have room */
        PROFILE_CORES_EFFICIENT,   /* efficient and low-power cores where it keeps up */
        _PROFILE_CORES_MAX,
} ProfileCores;

/* When idle-state constraints are set. */
typedef enum IdleConstraint {
        IDLE_CONSTRAINT_NEVER,
        IDLE_CONSTRAINT_ON_DELAY, /* only when a group's run-queue delay passes its budget */
        IDLE_CONSTRAINT_LATENCY_CRITICAL, /* on CPUs running latency-critical groups */
        _IDLE_CONSTRAINT_MAX,
} IdleConstraint;

typedef struct Profile {
        char name[PROFILE_NAME_MAX];
        char description[256];

        /* [pair] */
        PairPlacement pair_placement;
        /* Not tried when its two tasks ran at the same time for more than this
         * share of a CPU (run time beyond one CPU's worth, measured spread):
         * a stream, not hand-offs. */
        unsigned pair_max_overlap_pct;
        /* Left to the kernel when its tasks wake each other fewer times a
         * second (unless a rule names it): packing saves a pair a few
         * microseconds a wakeup, and under this that is less than placing
         * and judging it costs placed. 0 = every pair. */
        unsigned pair_min_wake_rate;

        /* [fanout] */
        SpreadPlacement fanout_placement;
        unsigned fanout_min_workers; /* spread only when workers outnumber this many CPUs of an LLC
                                        (0 = LLC size) */

        /* [mesh] */
        SpreadPlacement mesh_placement;

        /* [capacity] */
        unsigned llc_headroom_pct; /* keep this share of a packed LLC free */
        /* On a machine with kinds of core: a group is busy when its demand
         * passes this share of an efficient core's capacity. */
        unsigned busy_pct;
        ProfileCores busy_cores;  /* where busy groups go */
        ProfileCores light_cores; /* where the others go */
        bool low_power;           /* whether anything is placed on low-power cores */

        /* [system] */
        bool consolidate;                    /* confine slices to a housekeeping set at low load */
        unsigned consolidate_below_load_pct; /* machine busy share under which to consolidate */
        unsigned housekeeping_min_cpus;

        /* [idle] */
        IdleConstraint idle_constraint;
        unsigned idle_max_exit_latency_us;

        /* [feedback] */
        unsigned
                runq_delay_budget_us; /* per-tick mean run-queue delay that widens a packed group */

        /* [hysteresis] */
        unsigned dwell_ms;     /* minimum time a decision stands */
        unsigned min_gain_pct; /* change only when the estimated gain passes this */

        /* [trial]: a placement is kept only while switchbacks measure a gain */
        unsigned trial_ticks;     /* windows (ticks) weighed before any verdict */
        unsigned trial_max_ticks; /* ... and at most: still no clear gain then, handed back */
        unsigned trial_keep_pct;  /* keep when the gain's interval lies above this % */
        unsigned trial_max_run_loss_pct; /* hand back when its run time fell by more than this
                                            % of a CPU placed, while it waited more */
        unsigned trial_backoff_ms;       /* not tried again this long after a revert (doubling) */
        unsigned trial_recheck_s; /* a kept placement re-checked this long after (doubling) */
        unsigned trial_recheck_drift_pct; /* ... and at once when its progress moves this far */
        unsigned trial_recheck_max_ticks; /* a re-check's most weighed windows (a short one) */
} Profile;

typedef enum WakeSourceKind {
        WAKE_SOURCE_AUTO,
        WAKE_SOURCE_BPF,
        WAKE_SOURCE_PERF,
        WAKE_SOURCE_REPLAY,
        WAKE_SOURCE_NONE,
        _WAKE_SOURCE_KIND_MAX,
} WakeSourceKind;

/* Whose profile placed follows ([daemon] follow). */
typedef enum FollowKind {
        FOLLOW_NONE,
        FOLLOW_POWER_PROFILES, /* the power-profiles D-Bus API (power-profiles-daemon, tuned-ppd) */
        _FOLLOW_KIND_MAX,
} FollowKind;

/* The profiles of the power-profiles API, in the order of Config.follow_map. */
#define FOLLOW_PPD_PROFILES 3
extern const char *const follow_ppd_profiles[FOLLOW_PPD_PROFILES];

typedef struct Config {
        /* [daemon] */
        char profile[PROFILE_NAME_MAX]; /* default profile */
        unsigned interval_ms;           /* tick */
        unsigned quick_interval_ms;     /* a quick tick's measuring window; 0 = no quick ticks */
        unsigned quick_ticks_per_sec; /* quick ticks a second, sustained (twice that in a burst) */
        unsigned settled_factor;      /* ticks this many intervals apart while settled; 1 = never */
        bool dry_run;
        char journal_dir[256];
        WakeSourceKind wake_source;
        unsigned sample_period; /* perf fallback: one sample per N wakeups */
        unsigned wake_rest_ms;  /* the sampler rests after this long with nothing new; 0 never */
        unsigned wake_look_s;   /* resting, it looks again this often */
        FollowKind follow;
        int nice; /* placed's own nice (-20..19): its ticks on time on a busy machine */

        /* [follow]: placed's profile for power-saver, balanced and performance */
        char follow_map[FOLLOW_PPD_PROFILES][PROFILE_NAME_MAX];

        /* [metrics] */
        char metrics_textfile[CONFIG_PATH_MAX]; /* "" = no textfile (the default) */
        unsigned metrics_every_ticks;           /* write it on every Nth tick */

        /* [exclude] */
        char *exclude_comm[CONFIG_MAX_EXCLUDES]; /* fnmatch() globs on comm; owned */
        unsigned n_exclude_comm;
        char *exclude_cgroup[CONFIG_MAX_EXCLUDES]; /* cgroup path prefixes; owned */
        unsigned n_exclude_cgroup;

        /* Per-application rules: the [exclude] entries as ignore rules
         * ("exclude.comm[N]", "exclude.cgroup[N]"), then rules_dir's files
         * in name order (see rules.h). */
        RuleSet rules;

        /* Profiles found in the profile directories, sorted by name. */
        Profile profiles[CONFIG_MAX_PROFILES];
        unsigned n_profiles;
} Config;

/* Where configuration lives; every path can be overridden for tests. */
typedef struct ConfigPaths {
        const char *main_file;        /* /etc/placed/placed.conf */
        const char *dropin_dir;       /* /etc/placed/placed.conf.d */
        const char *profiles_dir_usr; /* /usr/share/placed/profiles */
        const char *profiles_dir_etc; /* /etc/placed/profiles */
        const char *rules_dir;        /* /etc/placed/rules.d */
} ConfigPaths;

typedef enum ConfigDiagLevel {
        CONFIG_DIAG_ERROR,
        CONFIG_DIAG_WARNING,
} ConfigDiagLevel;

/* Receives "FILE:LINE: message" (or "FILE: message" without a line). */
typedef void (*ConfigDiag)(void *userdata, ConfigDiagLevel level, const char *message);

/* The built-in default paths (PREFIX-dependent ones from the build). */
void config_paths_default(ConfigPaths *ret);

/*
 * Built-in defaults; no files read. Profiles come only from the profile
 * directories, so n_profiles is 0 here (see profile_defaults()).
 */
void config_defaults(Config *ret);

/* Built-in defaults of the profile NAME ("balanced" etc.); -ENOENT for others. */
int profile_defaults(const char *name, Profile *ret);

/*
 * config_load() - defaults, main file, drop-ins, the rules (rules.h), then
 * every profile in the profile directories. A missing main file or drop-in dir means defaults;
 * a NULL path in paths is not read. The configured default profile must
 * exist. Warnings (unknown section or key, invalid profile file name) go to
 * diag and do not fail the load. *ret is overwritten, not freed first.
 *
 * Return: 0 and *ret filled (free with config_done()); -EINVAL on a syntax
 * error or invalid value (reported through diag), -ENOENT when the default
 * profile is not found, other negative errno on I/O errors. *ret untouched
 * on failure.
 */
int config_load(const ConfigPaths *paths, ConfigDiag diag, void *userdata, Config *ret);

/* Frees what a Config owns and resets it to defaults. */
void config_done(Config *c);

/* Return: the profile named name, or NULL. */
const Profile *config_find_profile(const Config *c, const char *name);

/*
 * config_follow_profile() - placed's profile for a power-profiles profile
 * ("power-saver", "balanced", "performance") by the [follow] mapping.
 * Return: the profile name, or NULL for a name the mapping does not know.
 */
const char *config_follow_profile(const Config *c, const char *ppd_profile);

/* Names as they appear in the files; NULL for a value out of range. */
const char *pair_placement_to_string(PairPlacement p);
const char *spread_placement_to_string(SpreadPlacement p);
const char *idle_constraint_to_string(IdleConstraint c);
const char *profile_cores_to_string(ProfileCores c);
const char *wake_source_kind_to_string(WakeSourceKind k);
const char *follow_kind_to_string(FollowKind k);
