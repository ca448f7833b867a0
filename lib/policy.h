/* SPDX-License-Identifier: MIT */
/*
 * The placement policy: a pure function from what placed knows (topology,
 * groups, per-CPU load, profile, the previous plan, now) to a Plan (plan.h:
 * where each group may run, which CPUs the system slices keep, which CPUs
 * get an idle exit-latency cap). The trial of each placement is
 * policy-trial.c's (policy-trial.h), the rules' side policy-rules.c's, the
 * load as a decision goes policy-load.c's, the kinds of core policy-kinds.c's,
 * the slices and idle caps policy-system.c's, the JSON of plans and
 * snapshots policy-json.c's. No syscalls, no clock, no logging: it is tested
 * table-driven on fixture topologies of machines we do not have.
 *
 * Per tick the pipeline does (daemon/pipeline.c, pipeline_decide()):
 *
 *     PolicyInput in = { .topo = topo, .groups = groups, .n_groups = n,
 *                        .group_limits = limits,   // each group's cpuset
 *                        .loads = loads, .n_loads = topo->n_cpus,
 *                        .profile = profile, .prev = p->plan, .now_ns = now,
 *                        .advise = advise,         // nothing is applied
 *                        .rules = rules,           // per group; NULL = none
 *                        .latency_profile = lp,    // for latency-critical
 *                        .focus = focus };         // quick ticks; NULL = all
 *     Plan *next = NULL;
 *     r = policy_decide(&in, &next);
 *     ... apply next (affinity per task of each managed PlanGroup, release the
 *         tasks of unmanaged ones, slices, idle caps) ...
 *     plan_free(p->plan); p->plan = next;          // the next tick's prev
 *
 * The previous plan carries the hysteresis state (when each decision was
 * made, widening steps); pass NULL on the first tick and after a profile
 * change, so everything is decided afresh.
 *
 * JSON (json-c), for the offline planner ("placed --plan --snapshot FILE")
 * and "placectl snapshot":
 *
 *   plan:     { "now_ns": N, "profile": "balanced",
 *               "groups": [ { "id": N, "class": "pair", "managed": true,
 *                             "rule": "NAME", "rule_action": "ignore",  // when a rule decided
 *                             "cpus": "3", "home": UNIT | -1, "widen": 0,
 *                             "since_ns": N, "seen_ns": N, "reason": "...",
 *                             "trial": { "verdict": "kept", "measure": "bytes",  // else handoffs
 *                                        "arm": "placed" | "kernel", "recheck": false,
 *                                        "drifted": false,
 *                                        "windows": N, "pairs": N, "open_rate": 1.0,
 *                                        "log_sum": 1.0, "log_sq": 1.0, "gain": 1.0,
 *                                        "gain_lo": 1.0, "gain_hi": 1.0,
 *                                        "placed": { "rate": 1.0, "delay_us": 1.0,
 *                                                    "util": 1.0, "wait": 1.0,
 *                                                    "windows": N },
 *                                        "kernel": { ...as placed... },
 *                                        "tie": false, "reverts": N, "retry_ns": N,
 *                                        "checks": N, "recheck_ns": N,
 *                                        "kept_rate": 1.0, "kept_wait": 1.0,
 *                                        "closer": false } }, ... ],
 *               "slices": { "system.slice": "0-7", "user.slice": "0-7",
 *                           "machine.slice": "0-7" },      // "" = not confined
 *               "slices_since_ns": N, "slice_reason": "...",
 *               "n_cpus": N,
 *               "idle": [ { "cpu": 3, "max_exit_latency_us": 20 }, ... ],
 *               "idle_reason": "..." }
 *
 *   snapshot: { "topology": "<sysfs root the topology was read from>",
 *               "profile": "balanced", "now_ns": N,
 *               "groups": [ { "id": N, "class": "mesh", "util": 1.5,
 *                             "runq_delay_us": N, "wake_rate": 1000.0,
 *                             "handoff_rate": 1000.0,
 *                             "cpus": "0-127", "ran_on": "0-3",
 *                             "tasks": [ [TID, START_TIME], ... ],
 *                             "rule": { "name": "NAME", "action": "pack-with",  // optional
 *                                       "partner": "NAME", "partner_group": N } }, ... ],
 *               "loads": [ { "cpu": 0, "busy": 0.25,
 *                            "idle_exit_latency_us": 10 }, ... ],
 *               "prev_plan": PLAN | null }
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "cpuset.h"
#include "group.h"
#include "plan.h"
#include "rules.h"
#include "topology.h"

/* What one CPU did over the last tick. */
typedef struct CpuLoad {
        double busy; /* fraction of the tick not idle, 0..1 */
        /* Exit latency of the deepest idle state the CPU may enter now (0 =
         * unknown). Informational: recorded in snapshots; the policy does not
         * use it, so its own idle caps cannot feed back into its decisions. */
        unsigned idle_exit_latency_us;
} CpuLoad;

typedef struct PolicyInput {
        const Topology *topo;
        const Group *groups;
        unsigned n_groups;
        /* Optional, parallel to groups: the CPUs each group's cpuset allows
         * (NULL = the online set). */
        const CpuSet *group_limits;
        const CpuLoad *loads; /* indexed by CPU number; NULL = all idle */
        unsigned n_loads;
        const Profile *profile;
        const Plan *prev; /* NULL on the first tick */
        uint64_t now_ns;
        /* Advise mode: nothing is applied, so a trial has nothing to
         * measure; placements are shown as tried, never judged. */
        bool advise;
        /* Optional, parallel to groups: each group's rule decision (NULL =
         * no rules). See "Rules" below. */
        const GroupRule *rules;
        /* What latency-critical groups are decided with; NULL = the
         * built-in latency-first. */
        const Profile *latency_profile;
        /* Optional, parallel to groups: a quick tick decides only the
         * groups in focus (NULL = every group). See "Quick ticks" below. */
        const bool *focus;
} PolicyInput;

/*
 * Quick ticks. Between the regular ticks the pipeline decides again soon
 * after something new appears and while a placement is on trial, for the
 * new groups, those waiting to be measured and those on trial only; focus
 * says which. A group out of focus keeps its entry of the previous plan
 * verbatim, and its claims count on its CPUs where it comes in the order
 * of a decision, so the groups in focus see the load they would see on a
 * regular tick that kept the others, and are decided as that tick would
 * decide them; one whose CPUs are no longer all allowed is decided afresh,
 * and one the previous plan does not know is left to the kernel, waiting,
 * until the next regular tick. The slices
 * keep the previous plan's confinement (consolidation moves only on
 * regular ticks), widened where a group in focus is placed outside it;
 * idle caps are decided as on every tick.
 */

/*
 * Rules (rules.h), honoured per group whatever the profile:
 *   ignore            left to the kernel; no trial, no idle cap
 *   never-pack        left to the kernel (no CPU, core or home is shared by
 *                     placed's choice); the profile's idle caps still apply
 *   latency-critical  decided with latency_profile (placement, dwell,
 *                     trial, no consolidation) and its idle exit-latency cap
 *                     on the CPUs it runs on, whatever its class
 *   pack-with         packed with the group of partner_group (and every
 *                     group linked to them) on the fewest units that hold
 *                     their joint utilisation; no trial (the owner asked)
 * The rule's name is recorded in PlanGroup.rule and leads its reason.
 */

/*
 * policy_decide() - the plan for this tick (see the top of this file and
 * the profile table in docs/design.md). Pure and deterministic: the same input
 * gives the same plan, and an unchanged input on the next tick gives an
 * identical plan (plan_equal()).
 *
 * Its memory is taken before the first group is decided, sized by the
 * input, so an allocation that fails never shows in a plan (as a group
 * left alone, say): it is -ENOMEM, whatever allocation it was.
 *
 * Return: 0 and *ret (free with plan_free()); -EINVAL for a missing
 * topology or profile; -ENOMEM. *ret untouched on failure.
 */
int policy_decide(const PolicyInput *in, Plan **ret);

/* plan_to_json() - see the format above. Return: 0 and *ret (malloc'd), or -ENOMEM. */
int plan_to_json(const Plan *p, char **ret);

/* plan_from_json() - parse plan_to_json() output. Return: 0, -EINVAL, -ENOMEM. */
int plan_from_json(const char *text, Plan **ret);

/*
 * A policy input as a file: what "placed --plan --snapshot FILE" replays.
 * The policy counts a group's tasks and never follows them, so a snapshot
 * whose groups share tasks (the model puts each task in one group) is
 * planned as written, in time linear in its size like any other.
 */
typedef struct PolicySnapshot {
        char *topology; /* sysfs root the topology comes from; owned */
        char profile[PROFILE_NAME_MAX];
        uint64_t now_ns;
        Group *groups; /* owned, with their tasks */
        unsigned n_groups;
        GroupRule *rules; /* owned; parallel to groups; NULL when no group had a rule */
        CpuLoad *loads;   /* owned; indexed by CPU */
        unsigned n_loads;
        Plan *prev; /* owned; may be NULL */
} PolicySnapshot;

/* Return: 0 and *ret (malloc'd JSON), or -ENOMEM. */
int policy_snapshot_to_json(const PolicySnapshot *s, char **ret);
/* Return: 0 and *ret; -EINVAL on malformed JSON or fields; -ENOMEM. */
int policy_snapshot_from_json(const char *text, PolicySnapshot **ret);
PolicySnapshot *policy_snapshot_free(PolicySnapshot *s);
