/* SPDX-License-Identifier: MIT */
/*
 * The D-Bus contract between placed and its clients, in one place: the
 * names, the object, the error names, the polkit actions and the signatures
 * of the methods and of the containers inside their replies. daemon/bus.c
 * serves it, placectl and the test helpers call it. What each method and
 * property means is documented at the top of daemon/bus.c and in placed(8).
 *
 * Container signatures come twice: FOO_FIELDS is the inside of a struct, for
 * sd_bus_message_{open,enter}_container(m, 'r', FOO_FIELDS); FOO is the
 * struct itself, for arrays and appends.
 */
#pragma once

#include <systemd/sd-bus.h>

#define PLACED_BUS_NAME      "org.placed1"
#define PLACED_BUS_PATH      "/org/placed1"
#define PLACED_BUS_INTERFACE "org.placed1.Manager"

/* Errors placed replies with, besides the org.freedesktop.DBus.Error.* ones. */
#define PLACED_ERROR_UNKNOWN_PROFILE "org.placed1.Error.UnknownProfile"
#define PLACED_ERROR_UNKNOWN_TASK    "org.placed1.Error.UnknownTask"
#define PLACED_ERROR_UNKNOWN_HOLD    "org.placed1.Error.UnknownHold"
#define PLACED_ERROR_CONFIG_INVALID  "org.placed1.Error.ConfigInvalid"
#define PLACED_ERROR_TOO_MANY_HOLDS  "org.placed1.Error.TooManyHolds"

/* polkit actions (systemd/org.placed1.policy) that guard the methods that change things. */
#define PLACED_ACTION_SET_PROFILE  "org.placed1.set-profile"
#define PLACED_ACTION_RELOAD       "org.placed1.reload"
#define PLACED_ACTION_RESTORE      "org.placed1.restore"
#define PLACED_ACTION_HOLD_PROFILE "org.placed1.hold-profile" /* HoldProfile, ReleaseProfile */

/* polkit's authority, which placed asks (and the tests stand in for). */
#define POLKIT_BUS_NAME      "org.freedesktop.PolicyKit1"
#define POLKIT_BUS_PATH      "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_BUS_INTERFACE "org.freedesktop.PolicyKit1.Authority"
#define POLKIT_CHECK_IN      "(sa{sv})sa{ss}us" /* subject, action, details, flags, cancel id */
#define POLKIT_RESULT_FIELDS "bba{ss}"          /* is_authorized, is_challenge, details */
#define POLKIT_CHECK_OUT     "(" POLKIT_RESULT_FIELDS ")"

/* Follow property: state (off, waiting, following, gone), daemon, its profile. */
#define PLACED_FOLLOW "(sss)"

/* Holds property: cookie, profile, reason. */
#define PLACED_HOLD      "(uss)"
#define PLACED_SIG_HOLDS "a" PLACED_HOLD

/* ListGroups(): per group, see bus.c. The trial: verdict, rates and delays left to the kernel
 * and placed, gain and its 95% interval, windows.
 * The rule that decided: name ("" = none), action. */
#define PLACED_TRIAL_FIELDS    "sdddddddu"
#define PLACED_TRIAL           "(" PLACED_TRIAL_FIELDS ")"
#define PLACED_RULE            "(ss)"
#define PLACED_GROUP_FIELDS    "tsaudtdss" PLACED_TRIAL PLACED_RULE
#define PLACED_GROUP           "(" PLACED_GROUP_FIELDS ")"
#define PLACED_SIG_LIST_GROUPS "a" PLACED_GROUP

/* WakeGraph(): tasks (tid, tgid, comm, class, rate, group), edges (waker, wakee, rate, strong). */
#define PLACED_GRAPH_TASK     "(uussdt)"
#define PLACED_GRAPH_EDGE     "(uudb)"
#define PLACED_SIG_WAKE_GRAPH "a" PLACED_GRAPH_TASK "a" PLACED_GRAPH_EDGE

/* CpuStats(): per CPU, and per idle state name, residency, exit latency. */
#define PLACED_IDLE_STATE    "(sdt)"
#define PLACED_CPU_FIELDS    "udddua" PLACED_IDLE_STATE
#define PLACED_CPU           "(" PLACED_CPU_FIELDS ")"
#define PLACED_SIG_CPU_STATS "a" PLACED_CPU

/* CpuTopology(): per online CPU: cpu, kind ("performance", "efficient", "low-power"),
 * capacity (1024 = the biggest CPU), and the dense indexes of its core, LLC and NUMA node. */
#define PLACED_CPU_TOPO_FIELDS  "usuuuu"
#define PLACED_CPU_TOPO         "(" PLACED_CPU_TOPO_FIELDS ")"
#define PLACED_SIG_CPU_TOPOLOGY "a" PLACED_CPU_TOPO

/* TickStagesUSec property: per stage of the last tick, in the pipeline's order
 * ("sample", "model", "decide", "apply"), its name and CPU time (us). */
#define PLACED_TICK_STAGE      "(st)"
#define PLACED_SIG_TICK_STAGES "a" PLACED_TICK_STAGE

/* The PlacementChanged signal: placement changes so far, groups. */
#define PLACED_SIG_PLACEMENT_CHANGED "tu"

/*
 * placed_bus_connect() - connect as a client: address is "system", "session"
 * or a D-Bus address ("unix:path=..."); NULL means the system bus.
 *
 * Return: 0 and *ret; negative errno (-ENOENT or -ECONNREFUSED: no bus
 * there). *ret untouched on failure.
 */
int placed_bus_connect(const char *address, sd_bus **ret);

/* Return: "the system bus", "the session bus" or address: where a connection went, for messages. */
const char *placed_bus_describe(const char *address);
