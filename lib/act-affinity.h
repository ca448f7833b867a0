/* SPDX-License-Identifier: MIT */
/*
 * The affinity actuator: sets one thread's allowed CPUs with
 * sched_setaffinity(), from the facts the tick sampled about it
 * (task-facts.h: its identity, owner, affinity and cpuset); it reads nothing
 * itself. It refuses what is not placed's to touch, clamps the mask to the
 * thread's cpuset, and journals the original first.
 *
 * Per tick, for every task of a group the plan manages:
 *
 *     AffinityResult res;
 *     int r = act_affinity_apply(a, &facts, &plan_group->cpus, &res, NULL);
 *     if (r < 0 && !actuator_error_is_transient(r)) -> stop managing the task
 *     if (res >= AFFINITY_REFUSED_KTHREAD) -> never touch it again (log once)
 *
 * and for tasks of groups the plan leaves to the kernel (or that left a
 * managed group): act_affinity_release(a, &task_id).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "actuator.h"
#include "cpuset.h"
#include "group.h"
#include "journal.h"
#include "task-facts.h"

#define ACT_AFFINITY_KIND "affinity"

typedef struct ActAffinity ActAffinity;

/* What act_affinity_apply() did or would do. */
typedef enum AffinityResult {
        AFFINITY_SET,       /* the mask was written (return 1) */
        AFFINITY_WOULD_SET, /* dry run: it would have been written */
        AFFINITY_UNCHANGED, /* the task already has that mask */
        AFFINITY_EMPTY,     /* nothing left after clamping to the task's cpuset */
        /* Never touched (docs/design.md, "Respecting the owner's system"): */
        AFFINITY_REFUSED_KTHREAD,
        AFFINITY_REFUSED_INIT,     /* PID 1 and its threads */
        AFFINITY_REFUSED_SELF,     /* placed itself */
        AFFINITY_REFUSED_RT,       /* SCHED_FIFO, SCHED_RR, SCHED_DEADLINE */
        AFFINITY_REFUSED_NARROWED, /* someone else narrowed its affinity */
        AFFINITY_REFUSED_CHANGED,  /* someone changed the mask placed set */
        _AFFINITY_RESULT_MAX,
} AffinityResult;

/*
 * act_affinity_new() - an affinity actuator over env (procfs_root, online,
 * self_pid, dry_run, journal). Return: 0, -EINVAL (no journal outside dry
 * run, no online CPU), -ENOMEM.
 */
int act_affinity_new(const ActuatorEnv *env, ActAffinity **ret);
ActAffinity *act_affinity_free(ActAffinity *a);

/*
 * act_affinity_get() - tid's allowed CPUs now (sched_getaffinity()).
 *
 * Return: 0; -ESRCH when the thread is gone; other negative errno.
 */
int act_affinity_get(pid_t tid, CpuSet *ret);

/*
 * act_affinity_apply() - give the thread t (facts sampled this tick) the
 * CPUs want, clamped to its cpuset and the online set, unless it is never
 * to be touched (task_facts_owner()). The caller checked t is the task it
 * means (task_facts_is()).
 *
 * The original affinity is journaled (kind "affinity", key "TID:STARTTIME",
 * value a cpulist) before the first change. A thread narrowed by someone
 * else before placed came is AFFINITY_REFUSED_NARROWED. A thread whose
 * affinity was changed by someone else after placed set it, narrower or
 * wider, is let go for good: its journal record is forgotten (a stop does
 * not restore over the change) and it is AFFINITY_REFUSED_CHANGED from then
 * on, until it exits.
 *
 * Return: 1 when the mask was written; 0 when nothing was done (see
 * *ret_result); negative errno on failure: -ESRCH (thread gone: the
 * write failed and its journal record was dropped) and -EAGAIN are transient,
 * -EPERM and -EINVAL permanent (see
 * actuator_error_is_transient()). ret_result (may be NULL) is set
 * whenever the return is >= 0; ret_applied (may be NULL) receives the
 * clamped mask for AFFINITY_SET, _WOULD_SET and _UNCHANGED.
 */
int act_affinity_apply(ActAffinity *a, const TaskFacts *t, const CpuSet *want,
                       AffinityResult *ret_result, CpuSet *ret_applied);

/*
 * act_affinity_release() - hand a thread back to the kernel: put its
 * original affinity back if it still holds what placed set, and forget it.
 * In dry run nothing is written.
 *
 * Return: 1 when the original was written back; 0 when there was nothing to
 * do (not journaled, changed by someone else, or gone); negative errno when
 * the write failed (the record is kept).
 */
int act_affinity_release(ActAffinity *a, const TaskId *id);

/*
 * act_affinity_task_gone() - tid exited: forget that it was let go.
 * act_affinity_n_let_go() - how many live tasks were let go.
 */
void act_affinity_task_gone(ActAffinity *a, pid_t tid);
unsigned act_affinity_n_let_go(const ActAffinity *a);

/*
 * act_affinity_adopt() - a new task (fork or clone) inherits its creator's
 * affinity; where placed narrowed the creator, the child carries placed's
 * mask too, and must be restored like it. Records the child in the journal
 * with the creator's original value, if the child still holds the mask
 * placed gave the creator. Nothing in dry run.
 *
 * Return: 1 adopted, 0 nothing to adopt, negative errno (-ESRCH: gone).
 */
int act_affinity_adopt(ActAffinity *a, const TaskId *child, const TaskId *creator);

/*
 * act_affinity_kind_ops() - the journal operations for kind "affinity":
 * read and write check the thread's identity first (-ESRCH when it is gone
 * or its tid was reused), equal compares cpulists. a must outlive the ops.
 * Return: 1 (entries filled), or -ENOBUFS when max is 0.
 */
int act_affinity_kind_ops(ActAffinity *a, JournalKindOps *ret, unsigned max);

/* Formats the journal key "TID:STARTTIME" into buf. */
void act_affinity_format_key(const TaskId *id, char *buf, size_t size);

/* Return: a short name ("set", "refused-rt", ...); NULL out of range. */
const char *affinity_result_to_string(AffinityResult r);
