/* SPDX-License-Identifier: MIT */
/*
 * Live tests for lib/act-affinity.c, as root on the real kernel: a child
 * process is placed with sched_setaffinity(), checked with
 * sched_getaffinity(), and restored through the undo journal; tasks placed
 * must never touch (RT, PID 1, kernel threads, itself, narrowed by someone
 * else) are refused, in the initial PID namespace or in a child one. Only the test's own children
 * are changed, and they are killed at the end of every test, so nothing is left changed.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "act-affinity.h"
#include "cpuset.h"
#include "journal.h"
#include "macro.h"
#include "task-facts.h"

typedef struct Fixture {
        char dir[64];
        pid_t child;
        TaskId id;
        CpuSet online;
        Journal *journal;
        ActAffinity *act;
        TaskFactsReader *reader;
        JournalKindOps ops;
} Fixture;

static CpuSet affinity_of(pid_t tid) {
        cpu_set_t *set = CPU_ALLOC(CPUSET_MAX_CPUS);
        size_t size = CPU_ALLOC_SIZE(CPUSET_MAX_CPUS);
        assert_non_null(set);
        assert_int_equal(sched_getaffinity(tid, size, set), 0);
        CpuSet s;
        cpuset_zero(&s);
        for (int c = 0; c < CPUSET_MAX_CPUS; c++)
                if (CPU_ISSET_S(c, size, set))
                        cpuset_set(&s, c);
        CPU_FREE(set);
        return s;
}

static void set_affinity_of(pid_t tid, int cpu) {
        cpu_set_t *set = CPU_ALLOC(CPUSET_MAX_CPUS);
        size_t size = CPU_ALLOC_SIZE(CPUSET_MAX_CPUS);
        assert_non_null(set);
        CPU_ZERO_S(size, set);
        CPU_SET_S(cpu, size, set);
        assert_int_equal(sched_setaffinity(tid, size, set), 0);
        CPU_FREE(set);
}

static int sched_setaffinity_set(pid_t tid, const CpuSet *cpus) {
        cpu_set_t *set = CPU_ALLOC(CPUSET_MAX_CPUS);
        size_t size = CPU_ALLOC_SIZE(CPUSET_MAX_CPUS);
        assert_non_null(set);
        CPU_ZERO_S(size, set);
        for (int cpu = 0; cpu < CPUSET_MAX_CPUS; cpu++)
                if (cpuset_isset(cpus, cpu))
                        CPU_SET_S(cpu, size, set);
        int r = sched_setaffinity(tid, size, set);
        CPU_FREE(set);
        return r;
}

static CpuSet one_cpu(int cpu) {
        CpuSet s;
        cpuset_zero(&s);
        cpuset_set(&s, cpu);
        return s;
}

/* As a tick does: sample the task's facts, check it is the task meant, apply. */
static int apply(Fixture *f, const TaskId *id, const CpuSet *want, AffinityResult *ret_result,
                 CpuSet *ret_applied) {
        TaskFacts t;
        task_facts_reader_new_tick(f->reader);
        int r = task_facts_read(f->reader, 0, id->tid, &t);
        if (r < 0)
                return r;
        if (!task_facts_is(&t, id))
                return -ESRCH;
        return act_affinity_apply(f->act, &t, want, ret_result, ret_applied);
}

static int make_act(Fixture *f, bool dry_run) {
        ActuatorEnv o = {
                .procfs_root = "/proc",
                .online = f->online,
                .dry_run = dry_run,
                .journal = f->journal,
        };
        f->act = act_affinity_free(f->act);
        return act_affinity_new(&o, &f->act);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        assert_non_null(f);
        assert_int_equal(cpuset_read_file("/sys/devices/system/cpu/online", &f->online), 0);
        strcpy(f->dir, "/tmp/test-affinity.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(journal_open(f->dir, &f->journal), 0);
        assert_int_equal(make_act(f, false), 0);
        assert_int_equal(act_affinity_kind_ops(f->act, &f->ops, 1), 1);
        const char *cpuset_root = access("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", F_OK) == 0
                                          ? "/sys/fs/cgroup/cpuset"
                                          : NULL;
        assert_int_equal(task_facts_reader_new("/proc", cpuset_root, &f->reader), 0);

        f->child = fork();
        assert_true(f->child >= 0);
        if (f->child == 0) {
                for (;;)
                        pause();
        }
        TaskFacts t;
        assert_int_equal(task_facts_read(f->reader, 0, f->child, &t), 0);
        assert_int_equal(t.tgid, f->child);
        assert_int_equal(t.ppid, getpid());
        f->id = t.id;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        kill(f->child, SIGKILL);
        waitpid(f->child, NULL, 0);
        act_affinity_free(f->act);
        task_facts_reader_free(f->reader);
        journal_free(f->journal);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

static void test_apply_and_restore(void **state) {
        Fixture *f = *state;
        CpuSet before = affinity_of(f->child);
        int last = cpuset_last(&f->online);
        CpuSet want = one_cpu(last), applied;
        AffinityResult res;

        assert_int_equal(apply(f, &f->id, &want, &res, &applied), 1);
        assert_int_equal(res, AFFINITY_SET);
        assert_true(cpuset_equal(&applied, &want));
        CpuSet now = affinity_of(f->child);
        assert_true(cpuset_equal(&now, &want));
        assert_int_equal(journal_size(f->journal), 1);

        /* Unchanged: nothing written. */
        assert_int_equal(apply(f, &f->id, &want, &res, NULL), 0);
        assert_int_equal(res, AFFINITY_UNCHANGED);

        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 1);
        now = affinity_of(f->child);
        assert_true(cpuset_equal(&now, &before));
}

static void test_crash_then_restore(void **state) {
        Fixture *f = *state;
        CpuSet before = affinity_of(f->child);
        CpuSet want = one_cpu(cpuset_first(&f->online));
        assert_int_equal(apply(f, &f->id, &want, NULL, NULL), 1);
        f->act = act_affinity_free(f->act);
        f->journal = journal_free(f->journal); /* "crash" */

        /* A new run restores with its own actuator. */
        assert_int_equal(journal_open(f->dir, &f->journal), 0);
        assert_int_equal(make_act(f, false), 0);
        assert_int_equal(act_affinity_kind_ops(f->act, &f->ops, 1), 1);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 1);
        CpuSet now = affinity_of(f->child);
        assert_true(cpuset_equal(&now, &before));
}

static void test_narrowed_after_us_left_alone(void **state) {
        Fixture *f = *state;
        int first = cpuset_first(&f->online), last = cpuset_last(&f->online);
        CpuSet want = one_cpu(last);
        assert_int_equal(apply(f, &f->id, &want, NULL, NULL), 1);
        set_affinity_of(f->child, first); /* the owner steps in */

        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
        assert_int_equal(st.skipped, 1);
        assert_int_equal(st.restored, 0);
        CpuSet now = affinity_of(f->child), theirs = one_cpu(first);
        assert_true(cpuset_equal(&now, &theirs));
}

static void test_narrowed_is_let_go(void **state) {
        Fixture *f = *state;
        int first = cpuset_first(&f->online), last = cpuset_last(&f->online);
        CpuSet want = one_cpu(last);
        AffinityResult res;
        assert_int_equal(apply(f, &f->id, &want, NULL, NULL), 1);
        char k[64];
        act_affinity_format_key(&f->id, k, sizeof(k));
        assert_true(journal_has(f->journal, ACT_AFFINITY_KIND, k));
        set_affinity_of(f->child, first);

        /* Next tick: placed sees the change, lets the task go. */
        assert_int_equal(apply(f, &f->id, &want, &res, NULL), 0);
        assert_int_equal(res, AFFINITY_REFUSED_CHANGED);
        char key[64];
        act_affinity_format_key(&f->id, key, sizeof(key));
        assert_false(journal_has(f->journal, ACT_AFFINITY_KIND, key));
        assert_int_equal(journal_size(f->journal), 0);
        CpuSet now = affinity_of(f->child), theirs = one_cpu(first);
        assert_true(cpuset_equal(&now, &theirs));
}

static void test_widened_is_let_go(void **state) {
        Fixture *f = *state;
        CpuSet before = affinity_of(f->child), want = one_cpu(cpuset_last(&f->online));
        AffinityResult res;
        if (cpuset_count(&f->online) < 2)
                skip();
        assert_int_equal(apply(f, &f->id, &want, NULL, NULL), 1);
        /* The owner widens it back to every CPU: placed must not re-pin it. */
        assert_int_equal(sched_setaffinity_set(f->child, &before), 0);
        for (int tick = 0; tick < 3; tick++) {
                assert_int_equal(apply(f, &f->id, &want, &res, NULL), 0);
                assert_int_equal(res, AFFINITY_REFUSED_CHANGED);
                CpuSet now = affinity_of(f->child);
                assert_true(cpuset_equal(&now, &before));
        }
        assert_int_equal(journal_size(f->journal), 0);
        assert_int_equal(act_affinity_n_let_go(f->act), 1);

        /* Its tid, once it exits, is forgotten. */
        act_affinity_task_gone(f->act, f->id.tid);
        assert_int_equal(act_affinity_n_let_go(f->act), 0);
}

static void test_narrowed_before_us(void **state) {
        Fixture *f = *state;
        int first = cpuset_first(&f->online), last = cpuset_last(&f->online);
        set_affinity_of(f->child, first);
        CpuSet want = one_cpu(last);
        AffinityResult res;
        assert_int_equal(apply(f, &f->id, &want, &res, NULL), 0);
        assert_int_equal(res, AFFINITY_REFUSED_NARROWED);
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_release(void **state) {
        Fixture *f = *state;
        CpuSet before = affinity_of(f->child);
        CpuSet want = one_cpu(cpuset_last(&f->online));
        assert_int_equal(act_affinity_release(f->act, &f->id), 0); /* never placed */
        assert_int_equal(apply(f, &f->id, &want, NULL, NULL), 1);
        assert_int_equal(act_affinity_release(f->act, &f->id), 1);
        CpuSet now = affinity_of(f->child);
        assert_true(cpuset_equal(&now, &before));
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_rt_refused(void **state) {
        Fixture *f = *state;
        struct sched_param sp = { .sched_priority = 1 };
        assert_int_equal(sched_setscheduler(f->child, SCHED_FIFO, &sp), 0);
        CpuSet before = affinity_of(f->child);
        CpuSet want = one_cpu(cpuset_last(&f->online));
        AffinityResult res;
        assert_int_equal(apply(f, &f->id, &want, &res, NULL), 0);
        assert_int_equal(res, AFFINITY_REFUSED_RT);
        CpuSet now = affinity_of(f->child);
        assert_true(cpuset_equal(&now, &before));
        assert_int_equal(journal_size(f->journal), 0);
}

static void refused(Fixture *f, pid_t tid, AffinityResult expected) {
        TaskFacts t;
        assert_int_equal(task_facts_read(f->reader, 0, tid, &t), 0);
        TaskId id = t.id;
        CpuSet before = affinity_of(tid);
        CpuSet want = one_cpu(cpuset_first(&f->online));
        AffinityResult res;
        assert_int_equal(apply(f, &id, &want, &res, NULL), 0);
        assert_int_equal(res, expected);
        CpuSet now = affinity_of(tid);
        assert_true(cpuset_equal(&now, &before));
}

/*
 * PID 1 is init as placed sees it: the machine's, or in a PID namespace (a
 * container, make check-pidns) the namespace's, which placed refuses alike.
 * Kernel threads are visible only in the initial namespace (kthreadd is PID
 * 2 there); in a child one PID 2 is a user task like any other, and not
 * taken for a kernel thread.
 */
static void test_never_touched(void **state) {
        Fixture *f = *state;
        int initial = pid_ns_is_initial(NULL);
        assert_true(initial >= 0);
        refused(f, 1, AFFINITY_REFUSED_INIT);
        if (initial) {
                refused(f, 2, AFFINITY_REFUSED_KTHREAD); /* kthreadd */
        } else {
                TaskFacts t;
                if (task_facts_read(f->reader, 0, 2, &t) == 0)
                        assert_int_not_equal(task_facts_owner(&t, getpid()), TASK_OWNER_KTHREAD);
        }
        /* Run as PID 1 of a namespace, the test is that namespace's init. */
        refused(f, getpid(), getpid() == 1 ? AFFINITY_REFUSED_INIT : AFFINITY_REFUSED_SELF);
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_identity(void **state) {
        Fixture *f = *state;
        CpuSet want = one_cpu(cpuset_last(&f->online));
        TaskId wrong = { .tid = f->id.tid, .start_time = f->id.start_time + 1 };
        assert_int_equal(apply(f, &wrong, &want, NULL, NULL), -ESRCH);
        assert_true(actuator_error_is_transient(-ESRCH));
        assert_false(actuator_error_is_transient(-EPERM));

        /* Facts sampled, then the task exits before the change: nothing journaled. */
        TaskFacts t;
        assert_int_equal(task_facts_read(f->reader, 0, f->id.tid, &t), 0);
        kill(f->child, SIGKILL);
        waitpid(f->child, NULL, 0);
        assert_int_equal(act_affinity_apply(f->act, &t, &want, NULL, NULL), -ESRCH);
        assert_int_equal(apply(f, &f->id, &want, NULL, NULL), -ESRCH);
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_dry_run(void **state) {
        Fixture *f = *state;
        assert_int_equal(make_act(f, true), 0);
        CpuSet before = affinity_of(f->child);
        CpuSet want = one_cpu(cpuset_last(&f->online)), applied;
        AffinityResult res;
        assert_int_equal(apply(f, &f->id, &want, &res, &applied), 0);
        assert_int_equal(res, AFFINITY_WOULD_SET);
        assert_true(cpuset_equal(&applied, &want));
        CpuSet now = affinity_of(f->child);
        assert_true(cpuset_equal(&now, &before));
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_clamped(void **state) {
        Fixture *f = *state;
        CpuSet want = one_cpu(cpuset_last(&f->online)), applied;
        cpuset_set(&want, CPUSET_MAX_CPUS - 1); /* not online: dropped */
        assert_int_equal(apply(f, &f->id, &want, NULL, &applied), 1);
        CpuSet expect = one_cpu(cpuset_last(&f->online));
        assert_true(cpuset_equal(&applied, &expect));

        CpuSet offline = one_cpu(CPUSET_MAX_CPUS - 1);
        AffinityResult res;
        assert_int_equal(apply(f, &f->id, &offline, &res, NULL), 0);
        assert_int_equal(res, AFFINITY_EMPTY);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
}

/* A process that forks a pausing child when told to, and reports its pid. */
static pid_t spawn_forker(int *ret_cmd, int *ret_reply) {
        int cmd[2], reply[2];
        assert_int_equal(pipe(cmd), 0);
        assert_int_equal(pipe(reply), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char b;
                /* Only the test holds the write end: its close() ends the loop. */
                close(cmd[1]);
                close(reply[0]);
                while (read(cmd[0], &b, 1) == 1) {
                        pid_t g = fork();
                        if (g == 0) {
                                close(cmd[0]);
                                close(reply[1]);
                                for (;;)
                                        pause();
                        }
                        if (write(reply[1], &g, sizeof(g)) != sizeof(g))
                                _exit(1);
                }
                _exit(0);
        }
        close(cmd[0]);
        close(reply[1]);
        *ret_cmd = cmd[1];
        *ret_reply = reply[0];
        return pid;
}

static TaskId task_id(pid_t pid) {
        TaskFacts t;
        assert_int_equal(task_facts_read_stat("/proc", 0, pid, &t), 0);
        return t.id;
}

static void test_adopt_inherited(void **state) {
        Fixture *f = *state;
        int cmd, reply;
        pid_t forker = spawn_forker(&cmd, &reply), grandchild;
        CpuSet before = affinity_of(forker);
        TaskId creator = task_id(forker);
        CpuSet want = one_cpu(cpuset_last(&f->online));

        /* Not narrowed by placed yet: a child has nothing to inherit. */
        assert_int_equal(write(cmd, "x", 1), 1);
        assert_int_equal(read(reply, &grandchild, sizeof(grandchild)), sizeof(grandchild));
        TaskId first = task_id(grandchild);
        assert_int_equal(act_affinity_adopt(f->act, &first, &creator), 0);
        kill(grandchild, SIGKILL);

        /* Narrowed: the fork inherits placed's mask and is adopted. */
        assert_int_equal(apply(f, &creator, &want, NULL, NULL), 1);
        assert_int_equal(write(cmd, "x", 1), 1);
        assert_int_equal(read(reply, &grandchild, sizeof(grandchild)), sizeof(grandchild));
        TaskId child = task_id(grandchild);
        CpuSet inherited = affinity_of(grandchild);
        assert_true(cpuset_equal(&inherited, &want));
        assert_int_equal(act_affinity_adopt(f->act, &child, &creator), 1);
        assert_int_equal(journal_size(f->journal), 2);

        /* A stop restores both the creator and the child it made. */
        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 2);
        CpuSet now = affinity_of(forker);
        assert_true(cpuset_equal(&now, &before));
        now = affinity_of(grandchild);
        assert_true(cpuset_equal(&now, &before));

        /* A child that changed its mask itself is not placed's to restore. */
        assert_int_equal(apply(f, &creator, &want, NULL, NULL), 1);
        assert_int_equal(write(cmd, "x", 1), 1);
        pid_t other;
        assert_int_equal(read(reply, &other, sizeof(other)), sizeof(other));
        set_affinity_of(other, cpuset_first(&f->online));
        TaskId oid = task_id(other);
        if (cpuset_count(&f->online) > 1)
                assert_int_equal(act_affinity_adopt(f->act, &oid, &creator), 0);

        kill(grandchild, SIGKILL);
        kill(other, SIGKILL);
        close(cmd);
        close(reply);
        kill(forker, SIGKILL);
        waitpid(forker, NULL, 0);
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
}

int main(void) {
        if (geteuid() != 0) {
                printf("skipped: needs root to change other tasks' affinity and scheduling "
                       "policy\n");
                return 77;
        }
        CpuSet online;
        if (cpuset_read_file("/sys/devices/system/cpu/online", &online) < 0 ||
            cpuset_count(&online) < 2) {
                printf("skipped: needs at least two online CPUs\n");
                return 77;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_apply_and_restore, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crash_then_restore, setup, teardown),
                cmocka_unit_test_setup_teardown(test_narrowed_after_us_left_alone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_narrowed_is_let_go, setup, teardown),
                cmocka_unit_test_setup_teardown(test_widened_is_let_go, setup, teardown),
                cmocka_unit_test_setup_teardown(test_narrowed_before_us, setup, teardown),
                cmocka_unit_test_setup_teardown(test_release, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rt_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_never_touched, setup, teardown),
                cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
                cmocka_unit_test_setup_teardown(test_clamped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_adopt_inherited, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
