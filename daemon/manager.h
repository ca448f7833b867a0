/* SPDX-License-Identifier: MIT */
/*
 * The manager owns placed's state: configuration, active profile and holds,
 * topology, mode, the groups of the last tick and the counters published on
 * D-Bus. It runs the pipeline once a tick (manager_tick()) and is the only
 * thing the D-Bus object (bus.c) and the loop (loop.c) talk to.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "energy.h"
#include "group.h"
#include "idle.h"
#include "metrics-text.h"
#include "pipeline.h"
#include "policy.h"
#include "topology.h"
#include "wake-graph.h"

typedef struct Loop Loop;
typedef struct Journal Journal;

typedef struct ManagerOptions {
        ConfigPaths paths;
        bool config_required;    /* --config FILE: its absence is an error, not "defaults" */
        const char *profile;     /* --profile: overrides the configured default; NULL = config */
        bool dry_run;            /* --dry-run: advise mode from the start */
        const char *bus;         /* "system", "session", "none" or an address */
        const char *sysfs_root;  /* "/" */
        const char *procfs_root; /* "/proc" */
        unsigned interval_ms;    /* 0 = from config */
        const char *journal_dir; /* NULL = from config */
} ManagerOptions;

/* A profile held by a D-Bus client until it releases it or leaves the bus. */
typedef struct ProfileHold {
        uint32_t cookie;
        char profile[PROFILE_NAME_MAX];
        char *reason; /* owned */
        char *owner;  /* owned: the holder's unique bus name */
        char *holder; /* owned: who that is, for people ("placectl (pid 42)") */
} ProfileHold;

/* Why the active profile is in force, strongest first. */
typedef enum ProfileSource {
        PROFILE_SOURCE_HELD,       /* the newest hold's */
        PROFILE_SOURCE_CHOSEN,     /* SetProfile ("placectl profile NAME") or --profile */
        PROFILE_SOURCE_FOLLOWED,   /* [daemon] follow: mapped from the followed daemon's */
        PROFILE_SOURCE_CONFIGURED, /* [daemon] profile */
        _PROFILE_SOURCE_MAX,
} ProfileSource;

/* What placed knows of the followed power-profiles daemon (follow.c reports it). */
typedef enum FollowState {
        FOLLOW_STATE_OFF,       /* [daemon] follow = none */
        FOLLOW_STATE_WAITING,   /* no daemon owns the API (yet) */
        FOLLOW_STATE_FOLLOWING, /* a daemon owns it and its profile is known */
        FOLLOW_STATE_GONE,      /* it left: its last profile is kept */
        _FOLLOW_STATE_MAX,
} FollowState;

typedef struct ManagerFollow {
        FollowState state;
        char daemon[64];                    /* "power-profiles-daemon", ... or its bus name */
        char ppd_profile[PROFILE_NAME_MAX]; /* its last profile, "" before the first */
} ManagerFollow;

typedef struct Follow Follow;

typedef enum ManagerMode {
        MANAGER_ENFORCE, /* changes are applied */
        MANAGER_ADVISE,  /* everything is computed and published, nothing changed */
        _MANAGER_MODE_MAX,
} ManagerMode;

typedef struct Manager {
        ManagerOptions opts;
        Config config;
        char chosen_profile[PROFILE_NAME_MAX]; /* by --profile or SetProfile; "" = none */
        char *chosen_by;                       /* owned: who chose it, for people */
        const Profile *profile;                /* active: see manager_update_profile() */
        ProfileSource profile_source;
        char profile_reason[512]; /* why it is in force, in words */
        ManagerFollow followed;
        Follow *follow; /* the D-Bus watch on the power-profiles API (follow.c); NULL when off */
        ManagerMode mode;
        unsigned interval_ms;

        Topology *topo;
        Loop *loop;
        sd_bus *bus;           /* NULL when running without D-Bus */
        char *bus_description; /* where the bus connection went, for logs and status */
        Journal *journal;
        const char *journal_dir; /* opts.journal_dir or the configuration's */
        int journal_lock_fd;     /* held while running: "placed --restore" waits its turn */

        ProfileHold *holds; /* owned */
        unsigned n_holds;
        uint32_t next_cookie;

        Pipeline *pipeline; /* sample -> model -> decide -> apply, see pipeline.c */
        Group *groups;      /* owned: the groups of the last tick */
        unsigned n_groups;
        const char *wake_source; /* "none" until a sampler runs */

        uint64_t start_usec;
        uint64_t n_ticks;
        uint64_t n_quick_ticks;                         /* of those, quick ones (docs/design.md) */
        uint64_t last_tick_usec;                        /* CLOCK_MONOTONIC of the last tick */
        TickClock tick_clock;                           /* when the next tick comes, and its kind */
        uint64_t last_tick_stage_usec[_TICK_STAGE_MAX]; /* its stages' CPU time */
        uint64_t last_tick_cost_usec;                   /* how long the last tick took */
        uint64_t n_reloads;
        uint64_t n_placement_changes;

        /* Counters for the metrics (manager-metrics.c): monotonic for the life of the process. */
        uint64_t n_trials_started;
        uint64_t n_trial_verdicts[_TRIAL_VERDICT_MAX]; /* trials ended, by verdict */
        double energy_active_cpu_seconds;              /* the energy estimate summed over time */
        uint64_t start_realtime_usec;                  /* CLOCK_REALTIME at start */
        uint64_t last_tick_realtime_usec;
        int metrics_textfile_error; /* the last write's error, 0 ok: logged when it changes */
        /* What the trials' verdicts stood on, their re-checks and ties (a counter each). */
        MetricsTrials trials;
} Manager;

int manager_new(const ManagerOptions *opts, Manager **ret);
Manager *manager_free(Manager *m);

/*
 * manager_start() - load configuration and topology, open the journal, connect
 * to the bus, arm the tick. Errors are logged here (at the boundary).
 * Return: 0 or negative errno.
 */
int manager_start(Manager *m);

/*
 * manager_load_topology() - topo_load_full() under sysfs_root, said once,
 * for the daemon, --dump-topology and --plan alike: an error names the
 * required file that stopped it, and each optional file set aside is one
 * warning naming it and what was wrong.
 *
 * Return: as topo_load_full(), the error logged.
 */
int manager_load_topology(const char *sysfs_root, Topology **ret);

/* Runs the event loop until manager_exit(). Return: 0 or negative errno. */
int manager_run(Manager *m);
void manager_exit(Manager *m);

/* One pass of the pipeline: sample, model, decide, diff, apply, publish. */
/* One tick of the pipeline, of kind (regular or quick); arms the next one. */
void manager_tick(Manager *m, TickKind kind);

/*
 * manager_reload() - re-read configuration and profiles. On error the running
 * configuration is kept and the error logged with file and line; err (if not
 * NULL) receives the first error message.
 * Return: 0 or negative errno.
 */
int manager_reload(Manager *m, char **err);

/*
 * manager_set_profile() - a person chose a profile (by: who, for the status).
 * It wins over the followed and the configured one until
 * manager_reset_profile(). Return: 1 if the active profile changed, 0 if it
 * was already active (or a hold overrides it), -ENOENT for an unknown profile.
 */
int manager_set_profile(Manager *m, const char *name, const char *by);

/*
 * manager_reset_profile() - forget the chosen profile: the followed one, else
 * the configured one, is in force again (unless held).
 * Return: 1 if a chosen profile was dropped, 0 if there was none.
 */
int manager_reset_profile(Manager *m);

/*
 * manager_hold_profile() - hold profile for owner until released; holder
 * says who that is, for people.
 * Return: 0 and *ret_cookie; -ENOENT unknown profile; -E2BIG too many holds.
 */
int manager_hold_profile(Manager *m, const char *profile, const char *reason, const char *owner,
                         const char *holder, uint32_t *ret_cookie);

/*
 * What follow.c reports: the followed daemon's profile (ppd_profile, e.g.
 * "power-saver") as daemon said it, and that no daemon owns the API any more
 * (the last profile is kept). The mapping ([follow]) turns it into a profile.
 */
void manager_follow_update(Manager *m, const char *daemon, const char *ppd_profile);
void manager_follow_lost(Manager *m);

/* Why the active profile is in force, in one word for status, D-Bus
 * (ActiveProfileSource) and metrics: "held", "chosen", "followed",
 * "configured"; NULL out of range. */
const char *profile_source_to_string(ProfileSource s);
/* "off", "waiting", "following", "gone"; NULL out of range. */
const char *follow_state_to_string(FollowState s);
/* Return: 1 released, 0 no such hold (or not owner's when owner != NULL). */
int manager_release_profile(Manager *m, uint32_t cookie, const char *owner);
/* Drops every hold of owner (it left the bus). Return: number released. */
int manager_release_owner(Manager *m, const char *owner);

/*
 * manager_restore() - undo every change placed made and switch to advise mode.
 * Return: 0, or negative errno if some value could not be restored.
 */
int manager_restore(Manager *m);

/* "enforce" or "advise"; NULL out of range. */
const char *manager_mode_to_string(ManagerMode mode);

/*
 * What the bus reads, all of it from the last tick: the policy's input as
 * JSON (manager_snapshot(), the snapshot format of policy.h; Return: 0 and
 * *ret malloc'd, or -ENOMEM), the live wake graph, per-CPU figures (with
 * the idle sampler for state names; NULL without cpuidle), the energy
 * estimate (*ret_rapl_watts -1 without RAPL), the sampler's cost.
 */
int manager_snapshot(const Manager *m, char **ret);
const WakeGraph *manager_graph(const Manager *m);
const IdleCpuStats *manager_cpu_stats(const Manager *m, const IdleSampler **ret_sampler,
                                      unsigned *ret_n);
void manager_energy(const Manager *m, EnergyEstimate *ret_estimate, double *ret_rapl_watts);
double manager_sampler_ns_per_wakeup(const Manager *m);
/* Return: whether the wake sampler rests now; *ret_seconds: how long it has rested in all. */
bool manager_sampler_rested(const Manager *m, double *ret_seconds);

/* Return: the last tick's decision for group id (placement, reason, trial), or NULL. */
const PlanGroup *manager_group_decision(const Manager *m, uint64_t id);
/* Return: the group of the last tick holding tid, or NULL. */
const Group *manager_find_group(const Manager *m, pid_t tid);

/*
 * The metrics (manager-metrics.c). manager_metrics_text(): those of the last
 * tick in format; Return: 0 and *ret (malloc'd) and *ret_len, -EINVAL for an
 * unknown format, -ENOMEM. manager_metrics_tick(): after a tick, write
 * [metrics] textfile (Prometheus text format) on the first tick and every
 * [metrics] every_ticks after it; an error is logged when it first happens
 * and when it clears, not every tick.
 */
int manager_metrics_text(const Manager *m, MetricsFormat format, char **ret, size_t *ret_len);
void manager_metrics_tick(Manager *m);

/*
 * manager_explain() - a sentence or two on why tid is where it is.
 * Return: 0 and *ret (malloc'd), -ESRCH when placed does not know tid.
 */
int manager_explain(Manager *m, pid_t tid, char **ret);
