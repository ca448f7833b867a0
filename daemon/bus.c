/* SPDX-License-Identifier: MIT */
/*
 * The D-Bus object: org.placed1 at /org/placed1, interface
 * org.placed1.Manager. One static vtable; each handler parses, checks who is
 * asking, calls the manager and replies. State lives in the manager only.
 *
 * API (see also placectl(1) and placed(8); the names, error names and
 * signatures clients share are defined once, in lib/bus-contract.h):
 *
 *   properties
 *     ActiveProfile s     the profile in force (newest hold, else chosen, else
 *                         followed, else configured)                           emits
 *     ActiveProfileSource s  why, as a word: "held", "chosen", "followed",
 *                         "configured"                                         emits
 *     ActiveProfileReason s  why, in words: 'held by placectl (pid 42) for "x"',
 *                         "set by placectl (pid 42)", 'followed from
 *                         power-profiles-daemon's "power-saver"', "configured"  emits
 *     Follow        (sss) the followed power-profiles daemon: state ("off",
 *                         "waiting", "following", "gone": left, its last
 *                         profile kept), who ("power-profiles-daemon"), its
 *                         last profile ("power-saver")                         emits
 *     Profiles      as    profiles found in the profile directories          emits
 *     Mode          s     "enforce" or "advise"                               emits
 *     Version       s                                                         const
 *     WakeSource    s     sampler in use ("bpf", "perf", "replay", "none")    emits
 *     Holds         a(uss) cookie, profile, reason of every hold, oldest first emits
 *     Groups        u     task groups of the last tick                        emits
 *     PlacementChanges t  placement changes applied (or advised) so far       emits
 *     Reloads       t     successful reloads                                  emits
 *     Ticks         t     pipeline passes; changes every tick: not emitted, poll it
 *     QuickTicks    t     of those, quick ones (brought forward: docs/design.md) poll it
 *     TickCostUSec  t     how long the last tick took; not emitted, poll it
 *     TickStagesUSec a(st)  the last tick's stages in order ("sample", "model",
 *                         "decide", "apply") and the CPU time each took (us)  poll it
 *     EnergyEstimate d    estimated power of the last tick in active-CPU
 *                         equivalents (1.0 = one CPU flat out; energy.h)  poll it
 *     EnergyWatts   d     RAPL measured package power (W), -1 without RAPL  poll it
 *     SamplerNsPerWakeup d  wake sampler's run time per wakeup (ns) over the last
 *                         tick; 0 when unknown (perf, or bpf_stats off)   poll it
 *     SamplerWakeups t    wakeups the sampler attributed since start      poll it
 *     SamplerSoftirqWakeups t  of those, made in softirq context (counted
 *                         for the task current there, as the kernel does) poll it
 *     SamplerSkipped t    wakeups not attributed (hard IRQ, idle, kernel
 *                         threads, exited tasks)                          poll it
 *     SamplerLost    t    wakeups lost (full maps or rings)               poll it
 *     SamplerResting b    the BPF sampler rests (wake-rest.h)              poll it
 *     SamplerRestedUSec t how long it has rested since start              poll it
 *     CapacitySource s    what told the CPUs' capacities apart: "none", "cpu_capacity",
 *                         "cppc", "pmu" (lib/topology.h)                  const
 *     Asymmetric    b     the CPUs differ in kind or capacity             const
 *     TopologySetAside as  optional topology files set aside, each "FILE: REASON"
 *                         (docs/design.md, "Required and optional topology files")  const
 *   ("poll it": changes every tick, so no PropertiesChanged; clients poll.
 *   "const": the topology is read once, at start.)
 *
 *   methods
 *     SetProfile(s name)                        UnknownProfile
 *                     a person's choice: wins over the followed and the
 *                     configured profile until ResetProfile()
 *     ResetProfile()  forget that choice (returns to following)
 *     Reload()                                  ConfigInvalid ("FILE:LINE: ...")
 *     Restore()       undo every change, switch to advise mode
 *     ListGroups() -> a(tsaudtdss(sdddddddu)(ss))  per group: id, class, tids, util
 *                     (CPUs' worth), run-queue delay (us), wake rate (1/s),
 *                     allowed CPUs (cpulist), CPUs run on in the last tick
 *                     (cpulist), and its placement's trial (a switchback):
 *                     verdict ("none", "running", "kept", "reverted"),
 *                     progress/s in the windows left to the kernel and in
 *                     those placed (handoffs, or bytes for a stream),
 *                     run-queue delay (us) in each, the gain (placed over
 *                     kernel) and its 95% interval, and the windows measured;
 *                     and the rule that decided: name ("" = none, the
 *                     profile did) and action ("ignore", "latency-critical",
 *                     "never-pack", "pack-with", "none")
 *     Explain(u tid) -> s                       UnknownTask
 *     WakeGraph() -> (a(uussdt) tasks, a(uudb) edges)  the model's wake graph:
 *                     per task tid, tgid, comm, class of its group ("" for
 *                     none), wakeups/s it causes, group id (0 = none); per
 *                     edge waker tid, wakee tid, wakeups/s (decayed), strong
 *                     (counted in grouping)
 *     Snapshot() -> s   the policy's input of the last tick as JSON (format in
 *                     lib/policy.h); "placed --plan --snapshot FILE" replays it
 *     CpuStats() -> a(udddua(sdt))  per CPU with figures for the last tick
 *                     (online, after the second tick): cpu, busy fraction,
 *                     idle entries/s (without a cpuidle driver: estimated
 *                     from the interrupts that came while it was idle), deepest state's share
 *                     of idle time, number of states (0 without a cpuidle
 *                     driver), and per state name, residency fraction of the
 *                     tick, exit latency (us)
 *     CpuTopology() -> a(usuuuu)  per online CPU: cpu, kind ("performance",
 *                     "efficient", "low-power"), capacity (1024 = the
 *                     biggest CPU), and the dense indexes of its core, LLC
 *                     and NUMA node (as placed --dump-topology numbers them)
 *     Metrics(s format) -> s  the metrics of the last tick as text, in format
 *                     "openmetrics" (or "": OpenMetrics 1.0) or "prometheus"
 *                     (text format 0.0.4, as the [metrics] textfile); names
 *                     in placectl(1)
 *     HoldProfile(s profile, s reason) -> u cookie   UnknownProfile, TooManyHolds
 *     ReleaseProfile(u cookie)                  UnknownHold
 *
 *   signal
 *     PlacementChanged(t placement_changes, u groups)  after a tick changed
 *                     placement; carries the new counter so a client can tell
 *                     whether it missed one.
 *
 * Access: reading is open to everyone (the bus policy allows it). Every
 * method is SD_BUS_VTABLE_UNPRIVILEGED, so sd-bus's own CAP_SYS_ADMIN check
 * stays out of the way and bus_polkit_authorize() (bus-polkit.c) decides
 * alone. Changing (SetProfile, ResetProfile, Reload, Restore, HoldProfile,
 * ReleaseProfile) needs euid 0, or a yes from polkit for the matching
 * org.placed1.* action. polkit is asked
 * asynchronously (the method is answered when polkit has, so a hung polkit
 * delays only its caller) and non-interactively: a "challenge" answer
 * (authentication needed) is a denial that says to use sudo. Without polkit
 * on the bus, non-root callers are denied. Each client may hold at most
 * BUS_HOLDS_PER_CLIENT profiles, so one client cannot take every hold.
 *
 * Losing the bus (a restarted dbus-daemon) is logged; the holds end with
 * it, and placed reconnects every BUS_RECONNECT_USEC until it has its name
 * back.
 *
 * A hold ends when its client leaves the bus: one NameOwnerChanged match,
 * installed before the name is requested, sees every unique name that goes
 * away. The bus driver sends that signal after any method call the client
 * sent before leaving, so a hold cannot outlive its client.
 */
#include "bus.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-polkit.h"
#include "energy.h"
#include "follow.h"
#include "idle.h"
#include "log.h"
#include "loop.h"
#include "wake-graph.h"

#define BUS_REASON_MAX       256
#define BUS_EMIT_MAX         16
#define BUS_HOLDS_PER_CLIENT 8 /* of MANAGER_MAX_HOLDS in all */
#define BUS_RECONNECT_USEC   (2 * USEC_PER_SEC)

/*
 * Who sent msg, for people: "placectl (pid 42)", else its bus name. The
 * command name is read from /proc (racy, so only ever shown, never trusted).
 */
static char *bus_describe_sender(sd_bus_message *msg) {
        const char *sender = sd_bus_message_get_sender(msg), *comm = NULL;
        sd_bus_creds *creds = NULL;
        pid_t pid = 0;
        char *s = NULL;

        if (sd_bus_query_sender_creds(msg,
                                      SD_BUS_CREDS_PID | SD_BUS_CREDS_COMM | SD_BUS_CREDS_AUGMENT,
                                      &creds) >= 0) {
                (void)sd_bus_creds_get_pid(creds, &pid);
                (void)sd_bus_creds_get_comm(creds, &comm);
        }
        int r = comm && pid > 0 ? asprintf(&s, "%s (pid %d)", comm, (int)pid)
                : pid > 0       ? asprintf(&s, "%s (pid %d)", sender ? sender : "?", (int)pid)
                                : asprintf(&s, "%s", sender ? sender : "?");
        sd_bus_creds_unref(creds);
        return r < 0 ? NULL : s;
}

static int bus_error_unknown_profile(Manager *m, const char *name, sd_bus_error *error) {
        return sd_bus_error_setf(error, PLACED_ERROR_UNKNOWN_PROFILE,
                                 "Unknown profile \"%s\" (%u profiles are known; see the "
                                 "Profiles property).",
                                 name, m->config.n_profiles);
}

static int set_profile_authorized(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const char *name;
        int r = sd_bus_message_rewind(msg, 1);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;

        _cleanup_free_ char *by = bus_describe_sender(msg);
        r = manager_set_profile(m, name, by);
        if (r == -ENOENT)
                return bus_error_unknown_profile(m, name, error);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot select profile \"%s\": %m", name);
        log_info("Profile %s selected by %s.", name, by ? by : sd_bus_message_get_sender(msg));
        return sd_bus_reply_method_return(msg, NULL);
}

static int reset_profile_authorized(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        (void)manager_reset_profile(m);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_reset_profile(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_polkit_authorize(msg, PLACED_ACTION_SET_PROFILE, reset_profile_authorized,
                                    userdata, error);
}

static int method_set_profile(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *name;
        int r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        return bus_polkit_authorize(msg, PLACED_ACTION_SET_PROFILE, set_profile_authorized,
                                    userdata, error);
}

static int reload_authorized(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_free_ char *err = NULL;
        int r = manager_reload(m, &err);
        if (r < 0)
                return sd_bus_error_setf(error, PLACED_ERROR_CONFIG_INVALID,
                                         "%s; the running configuration is kept.",
                                         err ? err : strerror(-r));
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_polkit_authorize(msg, PLACED_ACTION_RELOAD, reload_authorized, userdata, error);
}

static int restore_authorized(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        log_notice("Restore requested by %s.", sd_bus_message_get_sender(msg));
        int r = manager_restore(m);
        if (r < 0)
                return sd_bus_error_set_errnof(
                        error, r, "Restore incomplete, some values could not be written back: %m");
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_restore(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_polkit_authorize(msg, PLACED_ACTION_RESTORE, restore_authorized, userdata,
                                    error);
}

/* One a(tsaudtdss(sdddddddu)(ss)) element; see the top of the file. */
static int bus_append_group(sd_bus_message *reply, const Manager *m, const Group *g) {
        const PlanGroup *pg = manager_group_decision(m, g->id);
        const PlanTrial t = pg ? pg->trial : (PlanTrial){ 0 };
        _cleanup_free_ char *cpus = NULL, *ran_on = NULL;
        int r;

        if (cpuset_to_string(&g->cpus, &cpus) < 0 || cpuset_to_string(&g->ran_on, &ran_on) < 0)
                return -ENOMEM;

        r = sd_bus_message_open_container(reply, 'r', PLACED_GROUP_FIELDS);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "ts", g->id, group_class_to_string(g->class));
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "u");
        if (r < 0)
                return r;
        for (unsigned i = 0; i < g->n_tasks; i++) {
                r = sd_bus_message_append(reply, "u", (uint32_t)g->tasks[i].tid);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "dtdss", g->util, g->runq_delay_us, g->wake_rate, cpus,
                                  ran_on);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, PLACED_TRIAL, trial_verdict_to_string(t.verdict),
                                  t.kernel.rate, t.placed.rate, t.kernel.delay_us,
                                  t.placed.delay_us, t.gain, t.gain_lo, t.gain_hi,
                                  (uint32_t)t.windows);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, PLACED_RULE, pg ? pg->rule : "",
                                  rule_action_to_string(pg ? pg->rule_action : RULE_ACTION_NONE));
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int method_list_groups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

        int r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', PLACED_GROUP);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < m->n_groups; i++) {
                r = bus_append_group(reply, m, &m->groups[i]);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_free_ char *text = NULL;
        uint32_t tid;

        int r = sd_bus_message_read(msg, "u", &tid);
        if (r < 0)
                return r;
        if (tid == 0 || tid > INT_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "%" PRIu32 " is not a task id.", tid);

        r = manager_explain(m, (pid_t)tid, &text);
        if (r == -ESRCH)
                return sd_bus_error_setf(error, PLACED_ERROR_UNKNOWN_TASK,
                                         "placed does not track task %" PRIu32
                                         " (not in any group of the last tick).",
                                         tid);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot explain task %" PRIu32 ": %m",
                                               tid);
        return sd_bus_reply_method_return(msg, "s", text);
}

/* The class of the group with id (from the last tick's groups), "" for none. */
static const char *bus_group_class(const Manager *m, uint64_t id) {
        for (unsigned i = 0; id != 0 && i < m->n_groups; i++)
                if (m->groups[i].id == id)
                        return group_class_to_string(m->groups[i].class);
        return "";
}

/* The a(uussdt) tasks of WakeGraph(); see the top of the file. */
static int bus_append_graph_tasks(sd_bus_message *reply, const Manager *m, const WakeGraph *g) {
        _cleanup_free_ TaskId *ids = NULL;
        size_t n = 0;
        int r;

        if (g) {
                r = wake_graph_get_tasks(g, &ids, &n);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_open_container(reply, 'a', PLACED_GRAPH_TASK);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                WakeGraphTask t;
                if (wake_graph_get_task(g, ids[i].tid, 0, &t) <= 0)
                        continue;
                r = sd_bus_message_append(reply, PLACED_GRAPH_TASK, (uint32_t)t.id.tid,
                                          (uint32_t)t.tgid, t.comm, bus_group_class(m, t.group_id),
                                          t.out_rate, t.group_id);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

/* The a(uudb) edges of WakeGraph(). */
static int bus_append_graph_edges(sd_bus_message *reply, const WakeGraph *g) {
        _cleanup_free_ WakeGraphEdge *edges = NULL;
        size_t n = 0;
        int r;

        if (g) {
                r = wake_graph_get_edges(g, &edges, &n);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_open_container(reply, 'a', PLACED_GRAPH_EDGE);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = sd_bus_message_append(reply, PLACED_GRAPH_EDGE, (uint32_t)edges[i].waker,
                                          (uint32_t)edges[i].wakee, edges[i].rate,
                                          (int)edges[i].strong);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int method_wake_graph(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const WakeGraph *g = manager_graph(m);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

        int r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = bus_append_graph_tasks(reply, m, g);
        if (r < 0)
                return r;
        r = bus_append_graph_edges(reply, g);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_free_ char *json = NULL;

        if (!m->pipeline || !m->profile)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "placed is not running yet.");
        int r = manager_snapshot(m, &json);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot take a snapshot: %m");
        return sd_bus_reply_method_return(msg, "s", json);
}

/* One (udddua(sdt)) element of CpuStats(); see the top of the file. */
static int bus_append_cpu(sd_bus_message *reply, const IdleCpuStats *st, const IdleCpu *ic) {
        int r = sd_bus_message_open_container(reply, 'r', PLACED_CPU_FIELDS);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "udddu", (uint32_t)st->cpu, st->busy_frac,
                                  st->wakeups_per_sec, st->deepest_idle_share,
                                  (uint32_t)st->n_states);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', PLACED_IDLE_STATE);
        if (r < 0)
                return r;
        for (unsigned s = 0; ic && s < st->n_states && s < ic->n_states; s++) {
                r = sd_bus_message_append(reply, PLACED_IDLE_STATE, ic->states[s].name,
                                          st->state_frac[s], ic->states[s].exit_latency_us);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int method_cpu_stats(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const IdleSampler *s = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        unsigned n = 0;
        const IdleCpuStats *stats = manager_cpu_stats(m, &s, &n);

        int r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', PLACED_CPU);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < n; i++) {
                /* Stats are indexed by CPU; no sampler: no cpuidle states. */
                const IdleCpu *ic = s ? idle_sampler_cpu(s, i) : NULL;
                if (!stats[i].valid || (s && !ic)) /* offline, or before the second tick */
                        continue;
                r = bus_append_cpu(reply, &stats[i], ic);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* CpuTopology(): one (usuuuu) per online CPU; see the top of the file. */
static int method_cpu_topology(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

        if (!m->topo)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "placed is not running yet.");
        int r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', PLACED_CPU_TOPO);
        if (r < 0)
                return r;
        TOPO_FOREACH_CPU (cpu, m->topo) {
                const TopoCpu *c = &m->topo->cpus[cpu];
                r = sd_bus_message_append(reply, PLACED_CPU_TOPO, (uint32_t)c->cpu,
                                          strna(topo_core_kind_to_string(c->kind)),
                                          (uint32_t)c->capacity, (uint32_t)c->core,
                                          (uint32_t)c->llc, (uint32_t)c->node);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_metrics(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        _cleanup_free_ char *text = NULL;
        const char *name;
        size_t len;

        int r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        int format = name[0] ? metrics_format_from_string(name) : METRICS_FORMAT_OPENMETRICS;
        if (format < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown metrics format \"%s\" (openmetrics or "
                                         "prometheus).",
                                         name);
        if (!m->pipeline || !m->profile)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "placed is not running yet.");
        r = manager_metrics_text(m, format, &text, &len);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot format the metrics: %m");
        return sd_bus_reply_method_return(msg, "s", text);
}

/* The holds owner has: each client may hold only a few, so none can take them all. */
static unsigned bus_count_holds(const Manager *m, const char *owner) {
        unsigned n = 0;
        for (unsigned i = 0; i < m->n_holds; i++)
                n += strcmp(m->holds[i].owner, owner) == 0;
        return n;
}

static int hold_profile_authorized(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const char *profile, *reason, *sender = sd_bus_message_get_sender(msg);
        uint32_t cookie;
        int r = sd_bus_message_rewind(msg, 1);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "ss", &profile, &reason);
        if (r < 0)
                return r;

        if (bus_count_holds(m, sender) >= BUS_HOLDS_PER_CLIENT)
                return sd_bus_error_setf(error, PLACED_ERROR_TOO_MANY_HOLDS,
                                         "This client holds %d profile holds already; release "
                                         "one first.",
                                         BUS_HOLDS_PER_CLIENT);
        _cleanup_free_ char *holder = bus_describe_sender(msg);
        r = manager_hold_profile(m, profile, reason, sender, holder, &cookie);
        if (r == -ENOENT)
                return bus_error_unknown_profile(m, profile, error);
        if (r == -E2BIG)
                return sd_bus_error_setf(error, PLACED_ERROR_TOO_MANY_HOLDS,
                                         "Too many profile holds (%u); release one first.",
                                         m->n_holds);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot hold profile \"%s\": %m", profile);
        return sd_bus_reply_method_return(msg, "u", cookie);
}

static int method_hold_profile(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *profile, *reason;

        int r = sd_bus_message_read(msg, "ss", &profile, &reason);
        if (r < 0)
                return r;
        if (strlen(reason) > BUS_REASON_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The reason is longer than %d bytes.", BUS_REASON_MAX);
        return bus_polkit_authorize(msg, PLACED_ACTION_HOLD_PROFILE, hold_profile_authorized,
                                    userdata, error);
}

static int release_profile_authorized(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        uint32_t cookie;
        int r = sd_bus_message_rewind(msg, 1);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "u", &cookie);
        if (r < 0)
                return r;

        /* Root may release any hold; others only their own. */
        const char *owner =
                bus_polkit_sender_is_root(msg) > 0 ? NULL : sd_bus_message_get_sender(msg);
        r = manager_release_profile(m, cookie, owner);
        if (r == 0)
                return sd_bus_error_setf(error, PLACED_ERROR_UNKNOWN_HOLD,
                                         "No profile hold %" PRIu32 "%s.", cookie,
                                         owner ? " of this client" : "");
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot release hold %" PRIu32 ": %m",
                                               cookie);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_release_profile(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        uint32_t cookie;
        int r = sd_bus_message_read(msg, "u", &cookie);
        if (r < 0)
                return r;
        return bus_polkit_authorize(msg, PLACED_ACTION_HOLD_PROFILE, release_profile_authorized,
                                    userdata, error);
}

static int property_get_active_profile(sd_bus *bus, const char *path, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "s", m->profile ? m->profile->name : "");
}

static int property_get_profile_source(sd_bus *bus, const char *path, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "s",
                                     strna(profile_source_to_string(m->profile_source)));
}

static int property_get_profile_reason(sd_bus *bus, const char *path, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "s", m->profile_reason);
}

static int property_get_follow(sd_bus *bus, const char *path, const char *interface,
                               const char *property, sd_bus_message *reply, void *userdata,
                               sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, PLACED_FOLLOW,
                                     strna(follow_state_to_string(m->followed.state)),
                                     m->followed.daemon, m->followed.ppd_profile);
}

static int property_get_profiles(sd_bus *bus, const char *path, const char *interface,
                                 const char *property, sd_bus_message *reply, void *userdata,
                                 sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        int r = sd_bus_message_open_container(reply, 'a', "s");
        if (r < 0)
                return r;
        for (unsigned i = 0; i < m->config.n_profiles; i++) {
                r = sd_bus_message_append(reply, "s", m->config.profiles[i].name);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int property_get_mode(sd_bus *bus, const char *path, const char *interface,
                             const char *property, sd_bus_message *reply, void *userdata,
                             sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "s", strna(manager_mode_to_string(m->mode)));
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface,
                                const char *property, sd_bus_message *reply, void *userdata,
                                sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", PLACED_VERSION);
}

static int property_get_wake_source(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply, void *userdata,
                                    sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "s", m->wake_source ? m->wake_source : "none");
}

static int property_get_holds(sd_bus *bus, const char *path, const char *interface,
                              const char *property, sd_bus_message *reply, void *userdata,
                              sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        int r = sd_bus_message_open_container(reply, 'a', PLACED_HOLD);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < m->n_holds; i++) {
                r = sd_bus_message_append(reply, PLACED_HOLD, m->holds[i].cookie,
                                          m->holds[i].profile, m->holds[i].reason);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int property_get_groups(sd_bus *bus, const char *path, const char *interface,
                               const char *property, sd_bus_message *reply, void *userdata,
                               sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "u", (uint32_t)m->n_groups);
}

static int property_get_energy(sd_bus *bus, const char *path, const char *interface,
                               const char *property, sd_bus_message *reply, void *userdata,
                               sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        EnergyEstimate estimate;
        double rapl_watts;

        manager_energy(m, &estimate, &rapl_watts);
        return sd_bus_message_append(
                reply, "d", strcmp(property, "EnergyWatts") == 0 ? rapl_watts : estimate.ace);
}

static int property_get_sampler_cost(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "d", manager_sampler_ns_per_wakeup(m));
}

static int property_get_sampler_counter(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply, void *userdata,
                                        sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const WakeGraph *g = manager_graph(m);
        WakeGraphIngested in = {};
        if (g)
                wake_graph_ingested(g, &in);
        uint64_t v = strcmp(property, "SamplerSoftirqWakeups") == 0 ? in.softirq
                     : strcmp(property, "SamplerSkipped") == 0      ? in.skipped
                     : strcmp(property, "SamplerLost") == 0         ? in.lost
                                                                    : in.wakeups;
        return sd_bus_message_append(reply, "t", v);
}

static int property_get_sampler_rest(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        double seconds;
        bool resting = manager_sampler_rested(m, &seconds);
        if (strcmp(property, "SamplerResting") == 0)
                return sd_bus_message_append(reply, "b", resting);
        return sd_bus_message_append(reply, "t", (uint64_t)(seconds * USEC_PER_SEC));
}

static int property_get_tick_stages(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply, void *userdata,
                                    sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        int r = sd_bus_message_open_container(reply, 'a', PLACED_TICK_STAGE);
        if (r < 0)
                return r;
        for (TickStage s = 0; s < _TICK_STAGE_MAX; s++) {
                r = sd_bus_message_append(reply, PLACED_TICK_STAGE, tick_stage_to_string(s),
                                          m->last_tick_stage_usec[s]);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int property_get_capacity_source(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply, void *userdata,
                                        sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        TopoCapacitySource s = m->topo ? m->topo->capacity_source : TOPO_CAPACITY_NONE;
        return sd_bus_message_append(reply, "s", strna(topo_capacity_source_to_string(s)));
}

static int property_get_topology_set_aside(sd_bus *bus, const char *path, const char *interface,
                                           const char *property, sd_bus_message *reply,
                                           void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        int r = sd_bus_message_open_container(reply, 'a', "s");
        if (r < 0)
                return r;
        for (unsigned i = 0; m->topo && i < m->topo->n_set_aside; i++) {
                _cleanup_free_ char *entry = NULL;
                if (asprintf(&entry, "%s: %s", m->topo->set_aside[i].path,
                             m->topo->set_aside[i].reason) < 0)
                        return -ENOMEM;
                r = sd_bus_message_append(reply, "s", entry);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int property_get_asymmetric(sd_bus *bus, const char *path, const char *interface,
                                   const char *property, sd_bus_message *reply, void *userdata,
                                   sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        return sd_bus_message_append(reply, "b", (int)(m->topo && m->topo->asymmetric));
}

#define EMITS SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE
#define CONST SD_BUS_VTABLE_PROPERTY_CONST

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("ActiveProfile", "s", property_get_active_profile, 0, EMITS),
        SD_BUS_PROPERTY("ActiveProfileSource", "s", property_get_profile_source, 0, EMITS),
        SD_BUS_PROPERTY("ActiveProfileReason", "s", property_get_profile_reason, 0, EMITS),
        SD_BUS_PROPERTY("Follow", PLACED_FOLLOW, property_get_follow, 0, EMITS),
        SD_BUS_PROPERTY("Profiles", "as", property_get_profiles, 0, EMITS),
        SD_BUS_PROPERTY("Mode", "s", property_get_mode, 0, EMITS),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, CONST),
        SD_BUS_PROPERTY("WakeSource", "s", property_get_wake_source, 0, EMITS),
        SD_BUS_PROPERTY("Holds", PLACED_SIG_HOLDS, property_get_holds, 0, EMITS),
        SD_BUS_PROPERTY("Groups", "u", property_get_groups, 0, EMITS),
        SD_BUS_PROPERTY("PlacementChanges", "t", NULL, offsetof(Manager, n_placement_changes),
                        EMITS),
        SD_BUS_PROPERTY("Reloads", "t", NULL, offsetof(Manager, n_reloads), EMITS),
        /* Change every tick: no signal, clients poll them. */
        SD_BUS_PROPERTY("Ticks", "t", NULL, offsetof(Manager, n_ticks), 0),
        SD_BUS_PROPERTY("QuickTicks", "t", NULL, offsetof(Manager, n_quick_ticks), 0),
        SD_BUS_PROPERTY("TickCostUSec", "t", NULL, offsetof(Manager, last_tick_cost_usec), 0),
        SD_BUS_PROPERTY("TickStagesUSec", PLACED_SIG_TICK_STAGES, property_get_tick_stages, 0, 0),
        SD_BUS_PROPERTY("EnergyEstimate", "d", property_get_energy, 0, 0),
        SD_BUS_PROPERTY("EnergyWatts", "d", property_get_energy, 0, 0),
        SD_BUS_PROPERTY("SamplerNsPerWakeup", "d", property_get_sampler_cost, 0, 0),
        SD_BUS_PROPERTY("SamplerWakeups", "t", property_get_sampler_counter, 0, 0),
        SD_BUS_PROPERTY("SamplerSoftirqWakeups", "t", property_get_sampler_counter, 0, 0),
        SD_BUS_PROPERTY("SamplerSkipped", "t", property_get_sampler_counter, 0, 0),
        SD_BUS_PROPERTY("SamplerLost", "t", property_get_sampler_counter, 0, 0),
        SD_BUS_PROPERTY("SamplerResting", "b", property_get_sampler_rest, 0, 0),
        SD_BUS_PROPERTY("SamplerRestedUSec", "t", property_get_sampler_rest, 0, 0),
        /* The topology is read once, at start. */
        SD_BUS_PROPERTY("CapacitySource", "s", property_get_capacity_source, 0, CONST),
        SD_BUS_PROPERTY("Asymmetric", "b", property_get_asymmetric, 0, CONST),
        SD_BUS_PROPERTY("TopologySetAside", "as", property_get_topology_set_aside, 0, CONST),

        SD_BUS_METHOD_WITH_NAMES("SetProfile", "s", SD_BUS_PARAM(profile), "", , method_set_profile,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("ResetProfile", "", "", method_reset_profile, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Reload", "", "", method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Restore", "", "", method_restore, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListGroups", "", , PLACED_SIG_LIST_GROUPS, SD_BUS_PARAM(groups),
                                 method_list_groups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Explain", "u", SD_BUS_PARAM(tid), "s", SD_BUS_PARAM(explanation),
                                 method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("WakeGraph", "", , PLACED_SIG_WAKE_GRAPH,
                                 SD_BUS_PARAM(tasks) SD_BUS_PARAM(edges), method_wake_graph,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Snapshot", "", , "s", SD_BUS_PARAM(snapshot), method_snapshot,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("CpuStats", "", , PLACED_SIG_CPU_STATS, SD_BUS_PARAM(cpus),
                                 method_cpu_stats, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("CpuTopology", "", , PLACED_SIG_CPU_TOPOLOGY, SD_BUS_PARAM(cpus),
                                 method_cpu_topology, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Metrics", "s", SD_BUS_PARAM(format), "s", SD_BUS_PARAM(text),
                                 method_metrics, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("HoldProfile", "ss", SD_BUS_PARAM(profile) SD_BUS_PARAM(reason),
                                 "u", SD_BUS_PARAM(cookie), method_hold_profile,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ReleaseProfile", "u", SD_BUS_PARAM(cookie), "", ,
                                 method_release_profile, SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_SIGNAL_WITH_NAMES("PlacementChanged", PLACED_SIG_PLACEMENT_CHANGED,
                                 SD_BUS_PARAM(placement_changes) SD_BUS_PARAM(groups), 0),
        SD_BUS_VTABLE_END,
};

/* A unique name left the bus: its holds end with it. */
static int bus_on_name_owner_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(msg, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (name[0] != ':' || new_owner[0] != '\0' || m->n_holds == 0)
                return 0;
        int n = manager_release_owner(m, name);
        if (n > 0)
                log_info("%s left the bus; %d profile hold(s) released.", name, n);
        return 0;
}

/* The connection dropped (sd-bus tells us so): say it once; the timer reconnects. */
static int bus_on_disconnected(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = ASSERT_PTR(userdata);
        log_warning("Lost the connection to %s; reconnecting every %llu s.",
                    m->bus_description ? m->bus_description : "D-Bus",
                    (unsigned long long)(BUS_RECONNECT_USEC / USEC_PER_SEC));
        /* Holders' names died with the connection: nothing would tell us they left. */
        while (m->n_holds > 0) {
                _cleanup_free_ char *owner = strdup(m->holds[0].owner);
                if (!owner || manager_release_owner(m, owner) <= 0)
                        break;
        }
        return 0;
}

static int bus_setup(Manager *m, const char *spec, int level);

/* The followed daemon's reports (follow.c) go to the manager. */
static void bus_follow_update(void *userdata, const char *daemon, const char *ppd_profile) {
        manager_follow_update(userdata, daemon, ppd_profile);
}

static void bus_follow_lost(void *userdata) {
        manager_follow_lost(userdata);
}

/* Watches the power-profiles API on m->bus, once; its slots live on this connection. */
static void bus_follow_start(Manager *m) {
        if (m->follow || !m->bus)
                return;
        const FollowReport report = { bus_follow_update, bus_follow_lost, m };
        (void)follow_new(m->bus, m->bus_description, m->opts.procfs_root, &report, &m->follow);
}

/* What the daemon said last stays in force: a reconnect asks again. */
static void bus_follow_stop(Manager *m) {
        m->follow = follow_free(m->follow);
}

/* Every BUS_RECONNECT_USEC while running on a bus: reconnect if it went away. */
static void bus_on_reconnect_timer(void *userdata) {
        Manager *m = ASSERT_PTR(userdata);
        if (m->bus && sd_bus_is_open(m->bus) > 0)
                return;
        bus_close(m);
        m->bus_description = mfree(m->bus_description);
        /* bus_setup()'s errors would repeat every try: logged for debugging only. */
        int r = bus_setup(m, m->opts.bus, LOG_DEBUG);
        if (r < 0 || !m->bus) {
                bus_close(m);
                m->bus_description = mfree(m->bus_description);
                log_debug("Reconnecting to D-Bus failed: %s", strerror(r < 0 ? -r : ENOTCONN));
                return;
        }
        loop_attach_bus(m->loop, m->bus);
        log_notice("Reconnected to %s; %s is served again.", m->bus_description, PLACED_BUS_NAME);
        if (m->config.follow == FOLLOW_POWER_PROFILES)
                bus_follow_start(m);
        bus_emit_properties_changed(m, "ActiveProfile", "ActiveProfileSource",
                                    "ActiveProfileReason", "Holds", "Mode", NULL);
}

/*
 * Connects as spec says; failures are logged at level (LOG_ERR, or
 * LOG_DEBUG for the reconnect timer's quiet tries), a missing system bus
 * at level's warning. Return: 0 with *ret (NULL: no system bus, carry on),
 * or negative errno.
 */
static int bus_connect(Manager *m, const char *spec, int level, sd_bus **ret) {
        bool named = strcmp(spec, "system") == 0 || strcmp(spec, "session") == 0;
        sd_bus *bus = NULL;

        int r = placed_bus_connect(spec, &bus);
        if ((r == -ENOENT || r == -ECONNREFUSED) && strcmp(spec, "system") == 0) {
                const char *addr = getenv("DBUS_SYSTEM_BUS_ADDRESS");
                log_full(MAX(level, LOG_WARNING),
                         "No system bus at %s; running without D-Bus (use --bus "
                         "session or --bus ADDRESS).",
                         addr ? addr : "/run/dbus/system_bus_socket");
                *ret = NULL;
                return 0;
        }
        if (r < 0 && named)
                return log_full_errno(level, r, "Failed to connect to %s: %m",
                                      placed_bus_describe(spec));
        if (r < 0)
                return log_full_errno(level, r, "Failed to connect to the bus at \"%s\": %m", spec);
        if (named)
                m->bus_description = strdup(placed_bus_describe(spec));
        else if (asprintf(&m->bus_description, "D-Bus at %s", spec) < 0)
                m->bus_description = NULL;
        *ret = bus;
        return 0;
}

/*
 * Connects, publishes the object and takes the name; failures are logged at
 * level (see bus_connect()). Return: 0 (m->bus may stay NULL), or negative.
 */
static int bus_setup(Manager *m, const char *spec, int level) {
        sd_bus *bus = NULL;
        int r;

        r = bus_connect(m, spec, level, &bus);
        if (r < 0 || !bus)
                return r;
        m->bus = bus;

        r = sd_bus_add_object_vtable(bus, NULL, PLACED_BUS_PATH, PLACED_BUS_INTERFACE,
                                     manager_vtable, m);
        if (r < 0)
                return log_full_errno(level, r, "Failed to publish %s: %m", PLACED_BUS_PATH);

        r = sd_bus_match_signal(bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                "org.freedesktop.DBus", "NameOwnerChanged",
                                bus_on_name_owner_changed, m);
        if (r < 0)
                return log_full_errno(level, r, "Failed to watch clients leaving the bus: %m");

        /* sd-bus synthesizes this local signal when the connection drops. */
        r = sd_bus_match_signal(bus, NULL, NULL, "/org/freedesktop/DBus/Local",
                                "org.freedesktop.DBus.Local", "Disconnected", bus_on_disconnected,
                                m);
        if (r < 0)
                return log_full_errno(level, r, "Failed to watch for losing the bus: %m");

        r = sd_bus_request_name(bus, PLACED_BUS_NAME, 0);
        if (r == -EEXIST)
                return log_full_errno(level, r,
                                      "The name %s is already taken on %s: is another placed "
                                      "running?",
                                      PLACED_BUS_NAME, m->bus_description);
        if (r < 0)
                return log_full_errno(level, r, "Failed to request the name %s on %s: %m",
                                      PLACED_BUS_NAME, m->bus_description);
        return 0;
}

int bus_open(Manager *m, const char *spec) {
        assert(m);
        if (!spec || strcmp(spec, "none") == 0)
                return 0;
        int r = bus_setup(m, spec, LOG_ERR);
        if (r < 0 || !m->bus)
                return r;
        /* Had a bus: get it back whenever it goes away. */
        if (m->loop) {
                r = loop_add_timer(m->loop, BUS_RECONNECT_USEC, bus_on_reconnect_timer, m);
                if (r < 0)
                        log_warning_errno(r, "Cannot watch the bus connection; a lost bus "
                                             "stays lost: %m");
        }
        return 0;
}

void bus_apply_follow(Manager *m) {
        assert(m);
        if (m->config.follow != FOLLOW_POWER_PROFILES)
                bus_follow_stop(m);
        else if (m->bus)
                bus_follow_start(m);
        else
                log_warning("follow = power-profiles needs D-Bus (--bus); not following.");
}

void bus_close(Manager *m) {
        assert(m);
        if (!m->bus)
                return;
        bus_follow_stop(m); /* its slots live on this connection */
        if (m->loop)
                loop_detach_bus(m->loop);
        m->bus = sd_bus_flush_close_unref(m->bus);
}

void bus_emit_properties_changed(Manager *m, const char *property, ...) {
        assert(m);
        char *names[BUS_EMIT_MAX + 1];
        unsigned n = 0;
        va_list ap;

        if (!m->bus)
                return;
        va_start(ap, property);
        for (const char *p = property; p && n < BUS_EMIT_MAX; p = va_arg(ap, const char *))
                names[n++] = (char *)p;
        va_end(ap);
        names[n] = NULL;

        int r = sd_bus_emit_properties_changed_strv(m->bus, PLACED_BUS_PATH, PLACED_BUS_INTERFACE,
                                                    names);
        if (r < 0)
                log_debug("Failed to emit PropertiesChanged for %s: %s", property, strerror(-r));
}

void bus_emit_placement_changed(Manager *m) {
        assert(m);
        if (!m->bus)
                return;
        int r = sd_bus_emit_signal(m->bus, PLACED_BUS_PATH, PLACED_BUS_INTERFACE,
                                   "PlacementChanged", PLACED_SIG_PLACEMENT_CHANGED,
                                   m->n_placement_changes, (uint32_t)m->n_groups);
        if (r >= 0)
                bus_emit_properties_changed(m, "PlacementChanges", "Groups", NULL);
        else
                log_debug("Failed to emit PlacementChanged: %s", strerror(-r));
}
