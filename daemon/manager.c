/* SPDX-License-Identifier: MIT */
/*
 * The manager: placed's state and its life cycle.
 *
 * manager_start() loads configuration and topology, restores what a crashed
 * predecessor left in the undo journal, connects to the bus and arms the
 * tick; manager_tick() runs the pipeline; a clean stop undoes every change.
 * Reloads, profile changes, holds and the followed daemon all funnel through
 * manager_update_profile(), so the active profile has one definition: the
 * newest hold's profile, else the one a person chose (SetProfile, --profile),
 * else the followed daemon's mapped profile ([daemon] follow), else the
 * configured one; and one sentence says which and why.
 */
#include "manager.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "bus.h"
#include "fileio.h"
#include "journal.h"
#include "log.h"
#include "loop.h"
#include "pipeline.h"
#include "policy.h"
#include "string-table.h"
#include "undo.h"
#include "wake-graph.h"

#define MANAGER_MAX_HOLDS 64

static const char *const manager_mode_table[_MANAGER_MODE_MAX] = {
        [MANAGER_ENFORCE] = "enforce",
        [MANAGER_ADVISE] = "advise",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(manager_mode, ManagerMode);

/* What the pipeline works with this tick. */
static PipelineEnv manager_pipeline_env(const Manager *m) {
        return (PipelineEnv){
                .topo = m->topo,
                .config = &m->config,
                .profile = m->profile,
                .journal = m->journal,
                .advise = m->mode == MANAGER_ADVISE,
                .procfs_root = m->opts.procfs_root,
                .sysfs_root = m->opts.sysfs_root,
        };
}

static void manager_on_proc_events(void *userdata) {
        Manager *m = ASSERT_PTR(userdata);
        int fd = pipeline_proc_events_fd(m->pipeline);
        if (pipeline_dispatch_proc_events(m->pipeline) < 0) {
                (void)loop_remove_fd(m->loop, fd); /* unwatched before it is closed */
                pipeline_close_proc_events(m->pipeline);
        }
}

static void manager_watch_proc_events(Manager *m) {
        int fd = pipeline_proc_events_fd(m->pipeline);
        if (fd >= 0 && loop_add_fd(m->loop, fd, manager_on_proc_events, m) < 0) {
                log_warning("Cannot watch the proc connector: exits are noticed on the tick.");
                pipeline_close_proc_events(m->pipeline);
        }
}

static void manager_unwatch_proc_events(Manager *m) {
        int fd = m->pipeline ? pipeline_proc_events_fd(m->pipeline) : -1;
        if (fd >= 0 && m->loop)
                (void)loop_remove_fd(m->loop, fd);
}

static void manager_on_notes(void *userdata);

/* The wake sampler's notes bring a tick forward when something new appears. */
static void manager_watch_notes(Manager *m) {
        int fd = pipeline_notes_fd(m->pipeline);
        if (fd >= 0 && m->config.quick_interval_ms > 0 &&
            loop_add_fd(m->loop, fd, manager_on_notes, m) < 0)
                log_warning("Cannot watch the wake sampler's notes: new pairs wait for the tick.");
}

static void manager_unwatch_notes(Manager *m) {
        int fd = m->pipeline ? pipeline_notes_fd(m->pipeline) : -1;
        if (fd >= 0 && m->loop)
                (void)loop_remove_fd(m->loop, fd);
}

int manager_new(const ManagerOptions *opts, Manager **ret) {
        Manager *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->opts = *opts;
        if (!m->opts.sysfs_root)
                m->opts.sysfs_root = "/";
        if (!m->opts.procfs_root)
                m->opts.procfs_root = "/proc";
        if (!m->opts.bus)
                m->opts.bus = "system";
        config_defaults(&m->config);
        m->wake_source = "none";
        m->next_cookie = 1;
        m->journal_lock_fd = -1;
        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        bus_close(m);
        manager_unwatch_proc_events(m);
        manager_unwatch_notes(m);
        m->pipeline = pipeline_free(m->pipeline);
        m->loop = loop_free(m->loop);
        m->journal = journal_free(m->journal);
        closep(&m->journal_lock_fd);
        for (unsigned i = 0; i < m->n_holds; i++) {
                free(m->holds[i].reason);
                free(m->holds[i].owner);
                free(m->holds[i].holder);
        }
        free(m->holds);
        free(m->chosen_by);
        group_array_free(m->groups, m->n_groups);
        topo_free(m->topo);
        config_done(&m->config);
        free(m->bus_description);
        free(m);
        return NULL;
}

static void config_diag_log(void *userdata, ConfigDiagLevel level, const char *message) {
        char **first_error = userdata;
        if (level == CONFIG_DIAG_ERROR) {
                log_error("%s", message);
                if (first_error && !*first_error)
                        *first_error = strdup(message);
        } else
                log_warning("%s", message);
}

static void manager_notify_status(Manager *m) {
        sd_notifyf(0, "STATUS=Profile %s (%s), %u groups, tick %" PRIu64 " us", m->profile->name,
                   manager_mode_to_string(m->mode), m->n_groups, m->last_tick_cost_usec);
}

static const char *const profile_source_table[_PROFILE_SOURCE_MAX] = {
        [PROFILE_SOURCE_HELD] = "held",
        [PROFILE_SOURCE_CHOSEN] = "chosen",
        [PROFILE_SOURCE_FOLLOWED] = "followed",
        [PROFILE_SOURCE_CONFIGURED] = "configured",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(profile_source, ProfileSource);

static const char *const follow_state_table[_FOLLOW_STATE_MAX] = {
        [FOLLOW_STATE_OFF] = "off",
        [FOLLOW_STATE_WAITING] = "waiting",
        [FOLLOW_STATE_FOLLOWING] = "following",
        [FOLLOW_STATE_GONE] = "gone",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(follow_state, FollowState);

/* The followed daemon's profile mapped to one of ours; NULL when there is none to follow. */
static const char *manager_followed_profile(const Manager *m) {
        const ManagerFollow *f = &m->followed;
        if (m->config.follow != FOLLOW_POWER_PROFILES || f->ppd_profile[0] == '\0')
                return NULL;
        return config_follow_profile(&m->config, f->ppd_profile);
}

/* Picks the profile in force by precedence, and says why in words. Return: its name. */
static const char *manager_resolve_profile(Manager *m, ProfileSource *ret_source, char *reason,
                                           size_t size) {
        const ManagerFollow *f = &m->followed;
        const char *followed = manager_followed_profile(m);

        if (m->n_holds > 0) {
                const ProfileHold *h = &m->holds[m->n_holds - 1];
                *ret_source = PROFILE_SOURCE_HELD;
                snprintf(reason, size, "held by %s for \"%s\"", h->holder, h->reason);
                return h->profile;
        }
        if (m->chosen_profile[0] && config_find_profile(&m->config, m->chosen_profile)) {
                *ret_source = PROFILE_SOURCE_CHOSEN;
                snprintf(reason, size, "set by %s", m->chosen_by ? m->chosen_by : "a person");
                return m->chosen_profile;
        }
        if (followed && config_find_profile(&m->config, followed)) {
                *ret_source = PROFILE_SOURCE_FOLLOWED;
                snprintf(reason, size, "followed from %s's \"%s\"%s", f->daemon, f->ppd_profile,
                         f->state == FOLLOW_STATE_GONE ? "; it has left the bus, the last profile "
                                                         "is kept"
                                                       : "");
                return followed;
        }
        *ret_source = PROFILE_SOURCE_CONFIGURED;
        if (m->config.follow == FOLLOW_POWER_PROFILES && f->state == FOLLOW_STATE_WAITING)
                snprintf(reason, size,
                         "configured; following power-profiles, but no daemon owns "
                         "the power-profiles API yet");
        else if (m->config.follow == FOLLOW_POWER_PROFILES)
                snprintf(reason, size,
                         "configured; following power-profiles, but no profile of it that "
                         "[follow] maps yet");
        else
                snprintf(reason, size, "configured");
        return m->config.profile;
}

/* Resolves the active profile (see the top of the file). Return: 1 if it changed. */
static int manager_update_profile(Manager *m) {
        char reason[sizeof(m->profile_reason)];
        ProfileSource source;
        const char *name = manager_resolve_profile(m, &source, reason, sizeof(reason));
        const Profile *p = config_find_profile(&m->config, name);
        if (!p) /* only possible after a reload removed a held profile: fall back */
                p = config_find_profile(&m->config, m->config.profile);
        if (!p)
                return -ENOENT;

        bool changed = !m->profile || strcmp(m->profile->name, p->name) != 0;
        bool why_changed = source != m->profile_source || strcmp(reason, m->profile_reason) != 0;
        m->profile = p;
        m->profile_source = source;
        snprintf(m->profile_reason, sizeof(m->profile_reason), "%s", reason);
        if (changed || why_changed)
                log_info("Active profile: %s, %s.", p->name, reason);
        if (changed)
                bus_emit_properties_changed(m, "ActiveProfile", "ActiveProfileSource",
                                            "ActiveProfileReason", NULL);
        else if (why_changed)
                bus_emit_properties_changed(m, "ActiveProfileSource", "ActiveProfileReason", NULL);
        return changed;
}

void manager_follow_update(Manager *m, const char *daemon, const char *ppd_profile) {
        assert(m);
        ManagerFollow *f = &m->followed;
        bool news = f->state != FOLLOW_STATE_FOLLOWING || strcmp(f->daemon, daemon) != 0 ||
                    strcmp(f->ppd_profile, ppd_profile) != 0;
        if (!news)
                return;
        const char *mapped = config_follow_profile(&m->config, ppd_profile);
        if (!mapped) {
                log_warning("%s's profile is \"%s\", which [follow] does not map (power-saver, "
                            "balanced, performance); keeping the last one.",
                            daemon, ppd_profile);
                return;
        }
        snprintf(f->daemon, sizeof(f->daemon), "%s", daemon);
        snprintf(f->ppd_profile, sizeof(f->ppd_profile), "%s", ppd_profile);
        f->state = FOLLOW_STATE_FOLLOWING;
        log_info("%s's profile is %s: placed follows with %s%s.", daemon, ppd_profile, mapped,
                 m->n_holds > 0 || m->chosen_profile[0] ? " once holds and choices are released"
                                                        : "");
        (void)manager_update_profile(m);
        bus_emit_properties_changed(m, "Follow", NULL);
}

void manager_follow_lost(Manager *m) {
        assert(m);
        ManagerFollow *f = &m->followed;
        if (f->state == FOLLOW_STATE_GONE || f->state == FOLLOW_STATE_OFF)
                return;
        if (f->state == FOLLOW_STATE_FOLLOWING) {
                f->state = FOLLOW_STATE_GONE;
                log_notice("%s has left the bus; keeping its last profile, \"%s\" (%s).", f->daemon,
                           f->ppd_profile,
                           manager_followed_profile(m) ? manager_followed_profile(m) : "?");
        }
        (void)manager_update_profile(m);
        bus_emit_properties_changed(m, "Follow", NULL);
}

/*
 * placed's own nice ([daemon] nice), at start and when a reload changes it:
 * its ticks must come on time when the machine is busiest, as that is when a
 * placement may stop helping (docs/design.md, "Decisions judged by
 * outcome"). A nice it may not take (no CAP_SYS_NICE, as in a container) is
 * named and set aside: placed runs on at the one it has. PRIO_PROCESS sets
 * the calling thread's, and placed has one.
 */
static void manager_apply_nice(Manager *m) {
        errno = 0;
        int now = getpriority(PRIO_PROCESS, 0);
        if (now == -1 && errno != 0) {
                log_warning_errno(errno, "Cannot read placed's own nice: %m; left as it is.");
                return;
        }
        if (now == m->config.nice)
                return;
        if (setpriority(PRIO_PROCESS, 0, m->config.nice) < 0) {
                log_warning_errno(errno,
                                  "Cannot run at nice %d ([daemon] nice): %m; running at nice %d, "
                                  "so on a busy machine ticks may come late.",
                                  m->config.nice, now);
                return;
        }
        log_debug("Running at nice %d ([daemon] nice), was %d.", m->config.nice, now);
}

/* Starts or stops watching the power-profiles API as [daemon] follow says. */
static void manager_apply_follow(Manager *m) {
        if (m->config.follow == FOLLOW_POWER_PROFILES) {
                if (m->followed.state == FOLLOW_STATE_OFF)
                        m->followed.state = FOLLOW_STATE_WAITING;
        } else
                m->followed = (ManagerFollow){ .state = FOLLOW_STATE_OFF };
        bus_apply_follow(m);
}

static int manager_load_config(Manager *m, Config *ret, char **err) {
        return config_load(&m->opts.paths, config_diag_log, err, ret);
}

static void manager_on_tick(void *userdata) {
        Manager *m = ASSERT_PTR(userdata);
        manager_tick(m, m->tick_clock.next_kind);
}

/* What the tick clock keeps to, from the configuration in force. */
static TickClockConfig manager_tick_clock_config(const Manager *m) {
        return (TickClockConfig){
                .period_usec = (uint64_t)m->interval_ms * USEC_PER_MSEC,
                .quick_usec = (uint64_t)m->config.quick_interval_ms * USEC_PER_MSEC,
                .quick_ticks_per_sec = m->config.quick_ticks_per_sec,
                .settled_factor = m->config.settled_factor,
        };
}

/* Arms the tick timer as the tick clock said. */
static void manager_arm_tick(Manager *m, const TickClockNext *next) {
        (void)loop_set_tick_interval(m->loop, MAX(next->delay_usec, (uint64_t)1));
}

static void manager_on_notes(void *userdata) {
        Manager *m = ASSERT_PTR(userdata);
        TickClockConfig cfg = manager_tick_clock_config(m);
        TickClockNext next;
        if (pipeline_dispatch_notes(m->pipeline) > 0 &&
            tick_clock_after_note(&m->tick_clock, &cfg, clock_usec(CLOCK_MONOTONIC), &next) > 0)
                manager_arm_tick(m, &next);
}

static void manager_on_stop(void *userdata) {
        Manager *m = ASSERT_PTR(userdata);
        log_info("Stopping.");
        manager_exit(m);
}

static void manager_on_reload(void *userdata) {
        (void)manager_reload(userdata, NULL);
}

/* Puts back what an earlier, crashed instance changed and never restored. */
static int manager_restore_leftovers(Manager *m) {
        JournalRestoreStats stats = { 0 };
        if (journal_size(m->journal) == 0)
                return 0;
        log_notice("Undo journal in \"%s\" holds %u changes from an earlier run; restoring them.",
                   m->journal_dir, journal_size(m->journal));
        int r = restore_journal(m->journal, m->opts.procfs_root, m->opts.sysfs_root, &stats);
        log_info("Restored %u, left %u changed by others, %u gone, %u failed.", stats.restored,
                 stats.skipped, stats.gone, stats.failed);
        return r;
}

static int manager_open_journal(Manager *m) {
        const char *dir = m->opts.journal_dir ? m->opts.journal_dir : m->config.journal_dir;
        m->journal_dir = dir;

        int r = restore_open_journal(dir, &m->journal_lock_fd, &m->journal);
        if (r < 0)
                return r;
        return manager_restore_leftovers(m);
}

static int manager_setup_loop(Manager *m) {
        int r = loop_new(&m->loop);
        if (r < 0)
                return log_error_errno(r, "Failed to create the event loop: %m");

        r = loop_add_timer(m->loop, (uint64_t)m->interval_ms * USEC_PER_MSEC, manager_on_tick, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the tick: %m");
        TickClockConfig cfg = manager_tick_clock_config(m);
        TickClockNext next;
        tick_clock_start(&m->tick_clock, &cfg, clock_usec(CLOCK_MONOTONIC), &next);
        r = loop_add_signal(m->loop, SIGTERM, manager_on_stop, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGTERM: %m");
        r = loop_add_signal(m->loop, SIGINT, manager_on_stop, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGINT: %m");
        r = loop_add_signal(m->loop, SIGHUP, manager_on_reload, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGHUP: %m");
        r = loop_enable_watchdog(m->loop);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the watchdog: %m");
        return 0;
}

/*
 * What start-up needs and the configuration loader would take for "not
 * there, use the defaults": an explicit --config FILE and the --procfs-root
 * directory. Return: 0, or negative errno (logged with the path).
 */
static int manager_check_paths(Manager *m) {
        const char *main_file = m->opts.paths.main_file;

        if (main_file && access(main_file, F_OK) < 0) {
                int r = negative_errno();
                if (m->opts.config_required)
                        return log_error_errno(r,
                                               "Cannot read the configuration file \"%s\" "
                                               "(--config): %m",
                                               main_file);
                log_info("No configuration file \"%s\" (%s); using the built-in defaults.",
                         main_file, strerror(-r));
        }
        /* Only that it is there: a test gives an empty directory so nothing real is touched. */
        if (access(m->opts.procfs_root, F_OK) < 0)
                return log_error_errno(negative_errno(),
                                       "Cannot use \"%s\" as the proc file system "
                                       "(--procfs-root): %m",
                                       m->opts.procfs_root);
        return 0;
}

/* What stopped the load: a missing or empty required file is told apart. */
static const char *topology_error_text(int r, const char *path) {
        if (r == -EINVAL || r == -ERANGE)
                return "not a list of CPUs 0-4095";
        if (r == -ENOENT && access(path, F_OK) == 0)
                return "names no CPU that is possible and online";
        return read_small_file_strerror(r);
}

int manager_load_topology(const char *sysfs_root, Topology **ret) {
        _cleanup_free_ char *path = NULL;
        Topology *t;
        int r = topo_load_full(sysfs_root, &t, &path);
        if (r < 0 && path)
                return log_error_errno(r,
                                       "Failed to read the CPU topology under \"%s\": \"%s\": %s",
                                       sysfs_root, path, topology_error_text(r, path));
        if (r < 0)
                return log_error_errno(r, "Failed to read the CPU topology under \"%s\": %m",
                                       sysfs_root);
        for (unsigned i = 0; i < t->n_set_aside; i++)
                log_warning("Setting aside \"%s\": %s.", t->set_aside[i].path,
                            t->set_aside[i].reason);
        if (t->n_set_aside_unlisted > 0)
                log_warning("Setting aside %u more topology files, not listed.",
                            t->n_set_aside_unlisted);
        *ret = t;
        return 0;
}

int manager_start(Manager *m) {
        assert(m);
        int r;

        m->start_usec = clock_usec(CLOCK_MONOTONIC);
        m->start_realtime_usec = clock_usec(CLOCK_REALTIME);

        r = manager_check_paths(m);
        if (r < 0)
                return r;
        r = manager_load_config(m, &m->config, NULL);
        if (r < 0) /* the diagnostics above named the file, line and value */
                return log_error_errno(r,
                                       "Not starting: the configuration (main file \"%s\") did "
                                       "not load; the error above says why.",
                                       m->opts.paths.main_file ? m->opts.paths.main_file : "none");

        if (m->opts.profile) {
                if (!config_find_profile(&m->config, m->opts.profile))
                        return log_error_errno(ENOENT, "Unknown profile \"%s\" (--profile).",
                                               m->opts.profile);
                snprintf(m->chosen_profile, sizeof(m->chosen_profile), "%s", m->opts.profile);
                m->chosen_by = strdup("the command line (--profile)");
        }
        if (m->config.follow == FOLLOW_POWER_PROFILES)
                m->followed.state = FOLLOW_STATE_WAITING;
        (void)manager_update_profile(m);

        m->mode = (m->opts.dry_run || m->config.dry_run) ? MANAGER_ADVISE : MANAGER_ENFORCE;
        m->interval_ms = m->opts.interval_ms ? m->opts.interval_ms : m->config.interval_ms;
        manager_apply_nice(m);

        r = manager_load_topology(m->opts.sysfs_root, &m->topo);
        if (r < 0)
                return r;
        log_info("Topology: %u CPUs online in %u cores, %u LLCs, %u packages, %u NUMA nodes.",
                 cpuset_count(&m->topo->online), m->topo->n_cores, m->topo->n_llcs,
                 m->topo->n_packages, m->topo->n_nodes);

        r = manager_open_journal(m);
        if (r < 0)
                return r;

        r = manager_setup_loop(m);
        if (r < 0)
                return r;

        PipelineEnv env = manager_pipeline_env(m);
        r = pipeline_new(&env, &m->pipeline);
        if (r < 0)
                return r;
        m->wake_source = pipeline_wake_source(m->pipeline);
        manager_watch_proc_events(m);
        manager_watch_notes(m);

        r = bus_open(m, m->opts.bus);
        if (r < 0)
                return r;
        if (m->bus)
                loop_attach_bus(m->loop, m->bus);
        manager_apply_follow(m);

        log_info("placed %s started: profile %s, %s mode, tick %u ms, %s.", PLACED_VERSION,
                 m->profile->name, manager_mode_to_string(m->mode), m->interval_ms,
                 m->bus_description ? m->bus_description : "no D-Bus");
        sd_notify(0, "READY=1");
        manager_notify_status(m);
        return 0;
}

static int manager_undo(Manager *m);

int manager_run(Manager *m) {
        assert(m);
        int r = loop_run(m->loop);
        sd_notify(0, "STOPPING=1");
        if (m->mode == MANAGER_ENFORCE)
                (void)manager_undo(m);
        return r;
}

void manager_exit(Manager *m) {
        assert(m);
        loop_exit(m->loop);
}

/* Takes what a tick produced: the groups it saw, and signals on changes. */
static void manager_publish(Manager *m, TickResult *res) {
        unsigned old_n = m->n_groups;
        group_array_free(m->groups, m->n_groups);
        m->groups = TAKE_PTR(res->groups);
        m->n_groups = res->n_groups;
        m->n_trials_started += res->trials_started;
        for (int v = 0; v < _TRIAL_VERDICT_MAX; v++)
                m->n_trial_verdicts[v] += res->trial_verdicts[v];
        metrics_trials_add(&m->trials, &res->trials);
        if (res->placement_changes > 0) {
                m->n_placement_changes += res->placement_changes;
                bus_emit_placement_changed(m);
        } else if (m->n_groups != old_n)
                bus_emit_properties_changed(m, "Groups", NULL);
}

void manager_tick(Manager *m, TickKind kind) {
        assert(m);
        uint64_t start = clock_usec(CLOCK_MONOTONIC);
        PipelineEnv env = manager_pipeline_env(m);
        TickResult res;
        TickClockInput clock = { .kind = kind, .start_usec = start };

        if (kind == TICK_QUICK)
                m->n_quick_ticks++;
        if (pipeline_tick(m->pipeline, &env, start * NSEC_PER_USEC, kind, &res) >= 0) {
                clock.quick_wanted = res.quick_wanted;
                clock.quick_soon = res.quick_soon;
                clock.settled = res.settled;
                memcpy(m->last_tick_stage_usec, res.stage_usec, sizeof(res.stage_usec));
                manager_publish(m, &res);
        }

        /* The estimate covers the time since the last tick's sample. */
        EnergyEstimate energy;
        double rapl_watts;
        manager_energy(m, &energy, &rapl_watts);
        if (m->n_ticks > 0 && energy.n_cpus > 0)
                m->energy_active_cpu_seconds +=
                        energy.ace * (double)(start - m->last_tick_usec) / USEC_PER_SEC;

        m->n_ticks++;
        m->last_tick_usec = start;
        m->last_tick_realtime_usec = clock_usec(CLOCK_REALTIME);
        m->last_tick_cost_usec = clock_usec(CLOCK_MONOTONIC) - start;
        manager_notify_status(m);
        manager_metrics_tick(m);

        TickClockConfig cfg = manager_tick_clock_config(m);
        TickClockNext next;
        clock.now_usec = clock_usec(CLOCK_MONOTONIC);
        (void)tick_clock_after_tick(&m->tick_clock, &cfg, &clock, &next);
        manager_arm_tick(m, &next);
}

int manager_reload(Manager *m, char **err) {
        assert(m);
        char *first_error = NULL;
        Config fresh;

        sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, clock_usec(CLOCK_MONOTONIC));
        log_info("Reloading configuration.");

        int r = manager_load_config(m, &fresh, &first_error);
        if (r < 0) {
                log_error_errno(r, "Reload failed, keeping the running configuration: %m");
                sd_notify(0, "READY=1");
                manager_notify_status(m);
                if (err)
                        *err = first_error;
                else
                        free(first_error);
                return r;
        }

        /* m->profile points into the old config: resolve it again after the swap. */
        m->profile = NULL;
        config_done(&m->config);
        m->config = fresh;
        if (m->chosen_profile[0] && !config_find_profile(&m->config, m->chosen_profile)) {
                log_warning("Profile \"%s\" (set by %s) is gone after the reload.",
                            m->chosen_profile, m->chosen_by ? m->chosen_by : "a person");
                (void)manager_reset_profile(m);
        }
        manager_apply_follow(m);
        manager_apply_nice(m);
        (void)manager_update_profile(m);

        if (!m->opts.interval_ms && m->interval_ms != m->config.interval_ms) {
                m->interval_ms = m->config.interval_ms;
                TickClockConfig cfg = manager_tick_clock_config(m);
                TickClockNext next;
                tick_clock_reset_period(&m->tick_clock, &cfg, clock_usec(CLOCK_MONOTONIC), &next);
                manager_arm_tick(m, &next);
        }

        m->n_reloads++;
        m->metrics_textfile_error = 0; /* maybe another file now: say again what fails */
        bus_emit_properties_changed(m, "ActiveProfile", "ActiveProfileSource",
                                    "ActiveProfileReason", "Follow", "Profiles", "Reloads", NULL);
        sd_notify(0, "READY=1");
        manager_notify_status(m);
        return 0;
}

int manager_set_profile(Manager *m, const char *name, const char *by) {
        assert(m);
        if (!config_find_profile(&m->config, name))
                return -ENOENT;
        char *who = strdup(by ? by : "a person");
        if (!who)
                return -ENOMEM;
        free(m->chosen_by);
        m->chosen_by = who;
        snprintf(m->chosen_profile, sizeof(m->chosen_profile), "%s", name);
        return manager_update_profile(m);
}

int manager_reset_profile(Manager *m) {
        assert(m);
        if (!m->chosen_profile[0])
                return 0;
        log_info("Profile %s (set by %s) released.", m->chosen_profile,
                 m->chosen_by ? m->chosen_by : "a person");
        m->chosen_profile[0] = '\0';
        m->chosen_by = mfree(m->chosen_by);
        (void)manager_update_profile(m);
        return 1;
}

int manager_hold_profile(Manager *m, const char *profile, const char *reason, const char *owner,
                         const char *holder, uint32_t *ret_cookie) {
        assert(m);
        if (!config_find_profile(&m->config, profile))
                return -ENOENT;
        if (m->n_holds >= MANAGER_MAX_HOLDS)
                return -E2BIG;

        ProfileHold *holds = realloc(m->holds, (m->n_holds + 1) * sizeof(*holds));
        if (!holds)
                return -ENOMEM;
        m->holds = holds;

        ProfileHold *h = &m->holds[m->n_holds];
        *h = (ProfileHold){ .cookie = m->next_cookie };
        snprintf(h->profile, sizeof(h->profile), "%s", profile);
        h->reason = strdup(reason ? reason : "");
        h->owner = strdup(owner ? owner : "");
        h->holder = strdup(holder ? holder : h->owner ? h->owner : "");
        if (!h->reason || !h->owner || !h->holder) {
                free(h->reason);
                free(h->owner);
                free(h->holder);
                return -ENOMEM;
        }
        m->n_holds++;
        m->next_cookie++;

        log_info("Profile %s held by %s (cookie %u): %s", profile, h->holder, h->cookie, h->reason);
        (void)manager_update_profile(m);
        bus_emit_properties_changed(m, "Holds", NULL);
        *ret_cookie = h->cookie;
        return 0;
}

static void manager_drop_hold(Manager *m, unsigned i) {
        log_info("Profile hold %u (%s) released.", m->holds[i].cookie, m->holds[i].profile);
        free(m->holds[i].reason);
        free(m->holds[i].owner);
        free(m->holds[i].holder);
        memmove(&m->holds[i], &m->holds[i + 1], (m->n_holds - i - 1) * sizeof(*m->holds));
        m->n_holds--;
}

int manager_release_profile(Manager *m, uint32_t cookie, const char *owner) {
        assert(m);
        for (unsigned i = 0; i < m->n_holds; i++) {
                if (m->holds[i].cookie != cookie)
                        continue;
                if (owner && strcmp(m->holds[i].owner, owner) != 0)
                        return 0;
                manager_drop_hold(m, i);
                (void)manager_update_profile(m);
                bus_emit_properties_changed(m, "Holds", NULL);
                return 1;
        }
        return 0;
}

int manager_release_owner(Manager *m, const char *owner) {
        assert(m);
        int n = 0;
        for (unsigned i = m->n_holds; i-- > 0;)
                if (strcmp(m->holds[i].owner, owner) == 0) {
                        manager_drop_hold(m, i);
                        n++;
                }
        if (n > 0) {
                (void)manager_update_profile(m);
                bus_emit_properties_changed(m, "Holds", NULL);
        }
        return n;
}

/* Puts back every value placed changed (the journal), as at a clean stop. */
static int manager_undo(Manager *m) {
        JournalRestoreStats stats = { 0 };
        if (m->pipeline)
                pipeline_forget_applied(m->pipeline);
        int r = restore_journal(m->journal, m->opts.procfs_root, m->opts.sysfs_root, &stats);
        if (r < 0)
                log_warning_errno(r, "Restore incomplete: %u values could not be written back.",
                                  stats.failed);
        else if (stats.restored + stats.skipped + stats.gone > 0)
                log_info("Restored %u values (%u changed by others since, left alone; %u gone).",
                         stats.restored, stats.skipped, stats.gone);
        return r;
}

int manager_restore(Manager *m) {
        assert(m);
        int r = manager_undo(m);
        if (m->mode != MANAGER_ADVISE) {
                m->mode = MANAGER_ADVISE;
                log_notice("Switched to advise mode: changes are computed and published, not "
                           "applied.");
                bus_emit_properties_changed(m, "Mode", NULL);
        }
        return r;
}

const Group *manager_find_group(const Manager *m, pid_t tid) {
        assert(m);
        for (unsigned i = 0; i < m->n_groups; i++)
                for (unsigned j = 0; j < m->groups[i].n_tasks; j++)
                        if (m->groups[i].tasks[j].tid == tid)
                                return &m->groups[i];
        return NULL;
}

int manager_snapshot(const Manager *m, char **ret) {
        assert(m);
        unsigned n_loads = 0, n_rules = 0;
        const Plan *plan = pipeline_plan(m->pipeline);
        const GroupRule *rules = pipeline_group_rules_of(m->pipeline, &n_rules);
        PolicySnapshot s = {
                .topology = (char *)m->opts.sysfs_root,
                .now_ns = plan ? plan->now_ns : 0,
                .groups = m->groups,
                .n_groups = m->n_groups,
                /* the same tick's, when it produced these groups */
                .rules = n_rules == m->n_groups ? (GroupRule *)rules : NULL,
                .loads = (CpuLoad *)pipeline_loads(m->pipeline, &n_loads),
                .n_loads = n_loads,
                .prev = (Plan *)plan,
        };
        snprintf(s.profile, sizeof(s.profile), "%s", m->profile->name);
        return policy_snapshot_to_json(&s, ret);
}

const WakeGraph *manager_graph(const Manager *m) {
        assert(m);
        return pipeline_graph(m->pipeline);
}

const IdleCpuStats *manager_cpu_stats(const Manager *m, const IdleSampler **ret_sampler,
                                      unsigned *ret_n) {
        assert(m);
        *ret_sampler = pipeline_idle_sampler(m->pipeline);
        return pipeline_idle_stats(m->pipeline, ret_n);
}

void manager_energy(const Manager *m, EnergyEstimate *ret_estimate, double *ret_rapl_watts) {
        assert(m);
        pipeline_energy(m->pipeline, ret_estimate, ret_rapl_watts);
}

double manager_sampler_ns_per_wakeup(const Manager *m) {
        assert(m);
        return pipeline_sampler_ns_per_wakeup(m->pipeline);
}

bool manager_sampler_rested(const Manager *m, double *ret_seconds) {
        assert(m);
        return pipeline_sampler_rested(m->pipeline, ret_seconds);
}

const PlanGroup *manager_group_decision(const Manager *m, uint64_t id) {
        assert(m);
        return plan_find_group(pipeline_plan(m->pipeline), id);
}

/* The trial's figures in words, "" when the group was never tried. */
static void explain_trial(const PlanTrial *t, char *buf, size_t size) {
        if (t->verdict == TRIAL_NONE) {
                buf[0] = '\0';
                return;
        }
        const char *unit = trial_measure_to_string(t->measure);
        char back[96] = "";
        if (t->verdict == TRIAL_REVERTED)
                snprintf(back, sizeof(back), "; %s, so handed back", trial_back_words(t->back));
        int n = snprintf(buf, size, " %s %s", t->recheck ? "Re-check" : "Trial",
                         trial_verdict_to_string(t->verdict));
        if (n > 0 && (size_t)n < size && t->pairs > 0)
                snprintf(buf + n, size - (size_t)n,
                         ": %.2fx [%.2f-%.2f, 95%%] over %u windows (%.0f %s/s and %.0f us "
                         "run-queue delay placed, %.0f %s/s and %.0f us left to the kernel)%s.",
                         t->gain, t->gain_lo, t->gain_hi, t->windows, t->placed.rate, unit,
                         t->placed.delay_us, t->kernel.rate, unit, t->kernel.delay_us, back);
        else if (n > 0 && (size_t)n < size)
                snprintf(buf + n, size - (size_t)n, ": switchback not measured yet.");
}

int manager_explain(Manager *m, pid_t tid, char **ret) {
        assert(m);
        const Group *g = manager_find_group(m, tid);
        if (!g)
                return -ESRCH;

        char cpus[256];
        if (cpuset_format(&g->cpus, cpus, sizeof(cpus)) < 0)
                snprintf(cpus, sizeof(cpus), "(many)");
        const PlanGroup *pg = manager_group_decision(m, g->id);
        char trial[256] = "";
        if (pg)
                explain_trial(&pg->trial, trial, sizeof(trial));
        /* The rule that decided, and where it is written. */
        char rule[RULE_NAME_MAX + RULE_ORIGIN_MAX + 64] = "";
        if (pg && pg->rule_action != RULE_ACTION_NONE) {
                const char *origin = "";
                for (unsigned i = 0; i < m->config.rules.n_rules; i++)
                        if (strcmp(m->config.rules.rules[i].name, pg->rule) == 0)
                                origin = m->config.rules.rules[i].origin;
                snprintf(rule, sizeof(rule), " Rule \"%s\" (%s%s%s) decided.", pg->rule,
                         rule_action_to_string(pg->rule_action), origin[0] ? ", " : "", origin);
        }
        char *s;
        if (asprintf(&s,
                     "Task %d is in %s group %" PRIu64 " (%u tasks, %.2f CPUs, run-queue delay "
                     "%" PRIu64 " us, %.0f wakeups/s), allowed on CPUs %s. Profile %s%s: %s.%s%s",
                     (int)tid, group_class_to_string(g->class), g->id, g->n_tasks, g->util,
                     g->runq_delay_us, g->wake_rate, cpus, m->profile->name,
                     m->mode == MANAGER_ADVISE ? " (advise mode, nothing applied)" : "",
                     pg ? pg->reason : "no decision yet", rule, trial) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}
