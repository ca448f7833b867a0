/* SPDX-License-Identifier: MIT */
/*
 * The affinity actuator (see act-affinity.h).
 *
 * The order of checks matters: identity first (a reused tid is never
 * touched), then the owner's intent (kernel threads, PID 1, placed itself,
 * RT/DL tasks, affinities narrowed by someone else), then "nothing to do",
 * then the journal, and only then the syscall. Masks go through a
 * CPU_ALLOC()ed set sized for CPUSET_MAX_CPUS so large machines work.
 */
#include "act-affinity.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "string-table.h"

struct ActAffinity {
        ActuatorEnv opts;
        char *procfs_root;
        /* Tasks whose mask someone changed after placed set it: theirs for
         * good, until they exit (act_affinity_task_gone()). */
        TaskId *let_go;
        unsigned n_let_go, cap_let_go;
};

/* Reads tid's identity from stat and checks it is still the task id names. */
static int read_task_checked(const char *procfs_root, const TaskId *id, TaskFacts *ret) {
        int r = task_facts_read_stat(procfs_root, 0, id->tid, ret);
        if (r < 0)
                return r;
        return task_facts_is(ret, id) ? 0 : -ESRCH;
}

int act_affinity_get(pid_t tid, CpuSet *ret) {
        cpu_set_t *set = CPU_ALLOC(CPUSET_MAX_CPUS);
        size_t size = CPU_ALLOC_SIZE(CPUSET_MAX_CPUS);
        if (!set)
                return -ENOMEM;
        CPU_ZERO_S(size, set);
        int r = sched_getaffinity(tid, size, set) < 0 ? negative_errno() : 0;
        if (r == 0) {
                /* Every tick, for every task of every group: stop at the last CPU set. */
                int left = CPU_COUNT_S(size, set);
                cpuset_zero(ret);
                for (int c = 0; c < CPUSET_MAX_CPUS && left > 0; c++)
                        if (CPU_ISSET_S(c, size, set)) {
                                cpuset_set(ret, c);
                                left--;
                        }
        }
        CPU_FREE(set);
        return r;
}

static int set_affinity(pid_t tid, const CpuSet *cpus) {
        cpu_set_t *set = CPU_ALLOC(CPUSET_MAX_CPUS);
        size_t size = CPU_ALLOC_SIZE(CPUSET_MAX_CPUS);
        if (!set)
                return -ENOMEM;
        CPU_ZERO_S(size, set);
        CPUSET_FOREACH (c, cpus)
                CPU_SET_S(c, size, set);
        int r = sched_setaffinity(tid, size, set) < 0 ? negative_errno() : 0;
        CPU_FREE(set);
        return r;
}

void act_affinity_format_key(const TaskId *id, char *buf, size_t size) {
        snprintf(buf, size, "%d:%" PRIu64, (int)id->tid, id->start_time);
}

static int parse_key(const char *key, TaskId *ret) {
        int tid;
        uint64_t start;
        char extra;
        if (sscanf(key, "%d:%" SCNu64 "%c", &tid, &start, &extra) != 2 || tid <= 0)
                return -EINVAL;
        *ret = (TaskId){ .tid = tid, .start_time = start };
        return 0;
}

int act_affinity_new(const ActuatorEnv *opts, ActAffinity **ret) {
        if (!opts || !ret || (!opts->dry_run && !opts->journal) || cpuset_is_empty(&opts->online))
                return -EINVAL;
        ActAffinity *a = calloc(1, sizeof(ActAffinity));
        if (!a)
                return -ENOMEM;
        a->opts = *opts;
        a->procfs_root = strdup(opts->procfs_root ? opts->procfs_root : "/proc");
        if (!a->procfs_root) {
                act_affinity_free(a);
                return -ENOMEM;
        }
        a->opts.procfs_root = a->procfs_root;
        a->opts.sysfs_root = a->opts.cgroup_root = NULL; /* not needed, not kept */
        if (a->opts.self_pid <= 0)
                a->opts.self_pid = getpid();
        *ret = a;
        return 0;
}

ActAffinity *act_affinity_free(ActAffinity *a) {
        if (!a)
                return NULL;
        free(a->procfs_root);
        free(a->let_go);
        free(a);
        return NULL;
}

static bool is_let_go(const ActAffinity *a, const TaskId *id) {
        for (unsigned i = 0; i < a->n_let_go; i++)
                if (a->let_go[i].tid == id->tid && a->let_go[i].start_time == id->start_time)
                        return true;
        return false;
}

static void let_go(ActAffinity *a, const TaskId *id) {
        if (is_let_go(a, id))
                return;
        if (a->n_let_go == a->cap_let_go) {
                unsigned cap = a->cap_let_go ? 2 * a->cap_let_go : 16;
                TaskId *grown = reallocarray(a->let_go, cap, sizeof(*grown));
                if (!grown)
                        return; /* the journal record is gone: at worst it is re-placed */
                a->let_go = grown;
                a->cap_let_go = cap;
        }
        a->let_go[a->n_let_go++] = *id;
}

void act_affinity_task_gone(ActAffinity *a, pid_t tid) {
        if (!a)
                return;
        for (unsigned i = 0; i < a->n_let_go; i++)
                if (a->let_go[i].tid == tid)
                        a->let_go[i--] = a->let_go[--a->n_let_go];
}

unsigned act_affinity_n_let_go(const ActAffinity *a) {
        return a ? a->n_let_go : 0;
}

/* The CPUs the task's cpuset allows, within the online set. */
static void task_cpuset(const ActAffinity *a, const TaskFacts *t, CpuSet *ret) {
        *ret = a->opts.online;
        if (!cpuset_is_empty(&t->cpuset_cpus))
                cpuset_and(ret, &a->opts.online, &t->cpuset_cpus);
}

static AffinityResult check_owner(const ActAffinity *a, const TaskFacts *t) {
        static const AffinityResult results[] = {
                [TASK_OWNER_PLACED] = AFFINITY_SET,
                [TASK_OWNER_KTHREAD] = AFFINITY_REFUSED_KTHREAD,
                [TASK_OWNER_INIT] = AFFINITY_REFUSED_INIT,
                [TASK_OWNER_SELF] = AFFINITY_REFUSED_SELF,
                [TASK_OWNER_RT] = AFFINITY_REFUSED_RT,
        };
        return results[task_facts_owner(t, a->opts.self_pid)];
}

/* 1: placed set key's mask and it still holds; 0: placed never set it; -1: changed since. */
static int ownership(const ActAffinity *a, const char *key, const CpuSet *current) {
        const char *applied;
        CpuSet s;
        if (!a->opts.journal ||
            journal_get(a->opts.journal, ACT_AFFINITY_KIND, key, NULL, &applied) < 0)
                return 0;
        return cpuset_parse(applied, &s) == 0 && cpuset_equal(&s, current) ? 1 : -1;
}

static int journal_and_set(ActAffinity *a, const char *key, pid_t tid, const CpuSet *current,
                           const CpuSet *target) {
        _cleanup_free_ char *orig = NULL, *applied = NULL;
        if (cpuset_to_string(current, &orig) < 0 || cpuset_to_string(target, &applied) < 0)
                return -ENOMEM;
        int first = journal_record_change(a->opts.journal, ACT_AFFINITY_KIND, key, orig, applied);
        if (first < 0)
                return first; /* not journaled: do not change */
        int r = set_affinity(tid, target);
        if (r < 0 && first == 1)
                (void)journal_forget(a->opts.journal, ACT_AFFINITY_KIND, key);
        return r;
}

int act_affinity_apply(ActAffinity *a, const TaskFacts *t, const CpuSet *want,
                       AffinityResult *ret_result, CpuSet *ret_applied) {
        assert(a);
        assert(t);
        assert(want);
        const TaskId *id = &t->id;
        char key[64];
        int r;
        act_affinity_format_key(id, key, sizeof(key));

        AffinityResult res = check_owner(a, t);
        CpuSet full, current = t->allowed, target;
        if (res == AFFINITY_SET) {
                task_cpuset(a, t, &full);
                int own = ownership(a, key, &current);
                if (is_let_go(a, id))
                        res = AFFINITY_REFUSED_CHANGED;
                else if (own < 0) {
                        /* Widened back or moved elsewhere: either way, the owner's now. */
                        res = AFFINITY_REFUSED_CHANGED;
                        if (!a->opts.dry_run)
                                (void)journal_forget(a->opts.journal, ACT_AFFINITY_KIND, key);
                        let_go(a, id);
                } else if (own == 0 && !cpuset_equal(&current, &full))
                        res = AFFINITY_REFUSED_NARROWED;
        }
        if (res == AFFINITY_SET) {
                cpuset_and(&target, want, &full);
                if (cpuset_is_empty(&target))
                        res = AFFINITY_EMPTY;
                else if (cpuset_equal(&target, &current))
                        res = AFFINITY_UNCHANGED;
                else if (a->opts.dry_run)
                        res = AFFINITY_WOULD_SET;
        }
        if (res == AFFINITY_SET) {
                r = journal_and_set(a, key, id->tid, &current, &target);
                if (r < 0)
                        return r;
        }
        if (ret_result)
                *ret_result = res;
        if (ret_applied && res <= AFFINITY_UNCHANGED)
                *ret_applied = target;
        return res == AFFINITY_SET ? 1 : 0;
}

int act_affinity_adopt(ActAffinity *a, const TaskId *child, const TaskId *creator) {
        char child_key[64], creator_key[64];
        const char *orig, *applied;
        CpuSet placed_mask, current;

        assert(a);
        assert(child);
        assert(creator);
        if (a->opts.dry_run || !a->opts.journal)
                return 0;
        act_affinity_format_key(creator, creator_key, sizeof(creator_key));
        if (journal_get(a->opts.journal, ACT_AFFINITY_KIND, creator_key, &orig, &applied) < 0)
                return 0; /* placed never narrowed the creator */
        if (cpuset_parse(applied, &placed_mask) < 0)
                return -EINVAL;

        TaskFacts t;
        int r = read_task_checked(a->procfs_root, child, &t);
        if (r < 0)
                return r;
        r = act_affinity_get(child->tid, &current);
        if (r < 0)
                return r;
        if (!cpuset_equal(&current, &placed_mask))
                return 0; /* it changed its own mask already: not ours */

        /* journal_get()'s pointers die with the next journal write: copy first. */
        _cleanup_free_ char *orig_copy = strdup(orig), *applied_copy = strdup(applied);
        if (!orig_copy || !applied_copy)
                return -ENOMEM;
        act_affinity_format_key(child, child_key, sizeof(child_key));
        r = journal_record_change(a->opts.journal, ACT_AFFINITY_KIND, child_key, orig_copy,
                                  applied_copy);
        return r < 0 ? r : 1;
}

int act_affinity_release(ActAffinity *a, const TaskId *id) {
        assert(a);
        assert(id);
        char key[64];
        act_affinity_format_key(id, key, sizeof(key));
        const char *orig;
        if (!a->opts.journal ||
            journal_get(a->opts.journal, ACT_AFFINITY_KIND, key, &orig, NULL) < 0)
                return 0;
        if (a->opts.dry_run)
                return 0;

        CpuSet current, original;
        TaskFacts t;
        int r = read_task_checked(a->procfs_root, id, &t);
        if (r == 0)
                r = act_affinity_get(id->tid, &current);
        if (r == -ESRCH || (r == 0 && ownership(a, key, &current) <= 0))
                return journal_forget(a->opts.journal, ACT_AFFINITY_KIND, key) < 0 ? -EIO : 0;
        if (r < 0)
                return r;
        r = cpuset_parse(orig, &original);
        if (r < 0)
                return r;
        r = set_affinity(id->tid, &original);
        if (r == -ESRCH)
                r = 0;
        else if (r < 0)
                return r;
        else
                r = 1;
        int k = journal_forget(a->opts.journal, ACT_AFFINITY_KIND, key);
        return k < 0 ? k : r;
}

static int ops_read(const char *key, char **ret, void *userdata) {
        TaskId id;
        TaskFacts t;
        CpuSet cur;
        int r = parse_key(key, &id);
        if (r < 0)
                return r;
        r = read_task_checked(userdata, &id, &t);
        if (r < 0)
                return r;
        r = act_affinity_get(id.tid, &cur);
        if (r < 0)
                return r;
        return cpuset_to_string(&cur, ret);
}

static int ops_write(const char *key, const char *value, void *userdata) {
        TaskId id;
        TaskFacts t;
        CpuSet s;
        int r = parse_key(key, &id);
        if (r < 0)
                return r;
        r = cpuset_parse(value, &s);
        if (r < 0)
                return r;
        r = read_task_checked(userdata, &id, &t);
        if (r < 0)
                return r;
        return set_affinity(id.tid, &s);
}

static bool ops_equal(const char *a, const char *b) {
        CpuSet x, y;
        if (cpuset_parse(a, &x) < 0 || cpuset_parse(b, &y) < 0)
                return strcmp(a, b) == 0;
        return cpuset_equal(&x, &y);
}

int act_affinity_kind_ops(ActAffinity *a, JournalKindOps *ret, unsigned max) {
        if (max < 1)
                return -ENOBUFS;
        *ret = (JournalKindOps){
                .kind = ACT_AFFINITY_KIND,
                .read = ops_read,
                .write = ops_write,
                .equal = ops_equal,
                .userdata = a->procfs_root,
        };
        return 1;
}

static const char *const affinity_result_table[_AFFINITY_RESULT_MAX] = {
        [AFFINITY_SET] = "set",
        [AFFINITY_WOULD_SET] = "would-set",
        [AFFINITY_UNCHANGED] = "unchanged",
        [AFFINITY_EMPTY] = "empty-after-clamp",
        [AFFINITY_REFUSED_KTHREAD] = "refused-kthread",
        [AFFINITY_REFUSED_INIT] = "refused-init",
        [AFFINITY_REFUSED_SELF] = "refused-self",
        [AFFINITY_REFUSED_RT] = "refused-rt",
        [AFFINITY_REFUSED_NARROWED] = "refused-narrowed",
        [AFFINITY_REFUSED_CHANGED] = "refused-changed",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(affinity_result, AffinityResult);
