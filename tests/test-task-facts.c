/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/task-facts.c on a fake procfs tree (tests/fixtures/proc-basic:
 * a comm with spaces and parentheses in a v1 + v2 cgroup, an RT thread in a
 * v2 session scope, a kernel thread, malformed stat, status, schedstat and
 * cgroup files) over the fixture cgroup trees (tests/fixtures/cgroup-v1,
 * cgroup-v2), and on the live /proc for this very thread.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpuset.h"
#include "macro.h"
#include "task-facts.h"

static char *fixture(const char *name) {
        const char *src = getenv("PLACED_SRC");
        char *path;
        assert_true(asprintf(&path, "%s/tests/fixtures/%s", src ? src : ".", name) > 0);
        return path;
}

static void assert_cpus(const CpuSet *s, const char *list) {
        char buf[64];
        assert_true(cpuset_format(s, buf, sizeof(buf)) >= 0);
        assert_string_equal(buf, list);
}

static TaskFactsReader *reader(const char *proc, const char *cgroup) {
        _cleanup_free_ char *p = fixture(proc), *c = cgroup ? fixture(cgroup) : NULL;
        TaskFactsReader *r;
        assert_int_equal(task_facts_reader_new(p, c, &r), 0);
        return r;
}

/* A process in a v1 cpuset and a v2 service cgroup. */
static void test_normal_task_v1(void **state) {
        TaskFactsReader *r = reader("proc-basic", "cgroup-v1");
        _cleanup_free_ TaskFacts *t = calloc(1, sizeof(*t));

        assert_int_equal(task_facts_read(r, 4242, 4242, t), 0);
        assert_int_equal(t->id.tid, 4242);
        assert_int_equal(t->id.start_time, 123456);
        assert_int_equal(t->tgid, 4242);
        assert_int_equal(t->ppid, 1);
        assert_string_equal(t->comm, "my (odd) app");
        assert_int_equal(t->state, 'S');
        assert_int_equal(t->processor, 1);
        assert_int_equal(t->run_ns, 600000000);
        assert_int_equal(t->run_delay_ns, 2000000);
        assert_int_equal(t->timeslices, 42);
        assert_cpus(&t->allowed, "0-3");
        /* The unified path names it; the v1 cpuset path finds its CPUs. */
        assert_string_equal(t->cgroup, "/system.slice/db.service/worker");
        assert_string_equal(t->unit, "db.service");
        assert_cpus(&t->cpuset_cpus, "1-3");
        assert_string_equal(t->exe, "/usr/lib/odd/app");
        assert_false(task_facts_is_realtime(t));
        assert_int_equal(task_facts_owner(t, 999), TASK_OWNER_PLACED);
        assert_int_equal(task_facts_owner(t, 4242), TASK_OWNER_SELF);
        assert_true(task_facts_is(t, &(TaskId){ .tid = 4242, .start_time = 123456 }));
        assert_false(task_facts_is(t, &(TaskId){ .tid = 4242, .start_time = 123457 }));
        task_facts_reader_free(r);
}

/* A thread of the same process, RT, in a v2 scope whose cgroup has no cpuset files. */
static void test_thread_v2(void **state) {
        TaskFactsReader *r = reader("proc-basic", "cgroup-v2");
        _cleanup_free_ TaskFacts *t = calloc(1, sizeof(*t));

        assert_int_equal(task_facts_read(r, 0, 4250, t), -ESRCH); /* not a process */
        assert_int_equal(task_facts_read(r, 4242, 4250, t), 0);
        assert_int_equal(t->tgid, 4242);
        assert_int_equal(t->id.start_time, 123500);
        assert_int_equal(t->policy, 1);
        assert_int_equal(t->rt_priority, 50);
        assert_true(task_facts_is_realtime(t));
        assert_int_equal(task_facts_owner(t, 999), TASK_OWNER_RT);
        assert_cpus(&t->allowed, "1");
        assert_string_equal(t->cgroup, "/user.slice/user-1000.slice/session-2.scope");
        assert_string_equal(t->unit, "session-2.scope");
        /* session-2.scope has no cpuset files: its parent's CPUs, not the root's 0-7. */
        assert_cpus(&t->cpuset_cpus, "2-7");
        /* The process's executable, read through its leader. */
        assert_string_equal(t->exe, "/usr/lib/odd/app");
        task_facts_reader_free(r);
}

static void test_kernel_thread(void **state) {
        TaskFactsReader *r = reader("proc-basic", NULL);
        _cleanup_free_ TaskFacts *t = calloc(1, sizeof(*t));

        assert_int_equal(task_facts_read(r, 2, 2, t), 0);
        assert_string_equal(t->comm, "kthreadd");
        assert_int_equal(task_facts_owner(t, 999), TASK_OWNER_KTHREAD);
        /* By its flag: PID 2 and its children without it are user tasks (a
         * PID namespace's), and with it any PID is a kernel thread. */
        TaskFacts u = *t;
        u.flags &= ~0x00200000U;
        u.policy = SCHED_OTHER;
        assert_int_equal(task_facts_owner(&u, 999), TASK_OWNER_PLACED);
        u.id.tid = u.tgid = 77, u.ppid = 2;
        assert_int_equal(task_facts_owner(&u, 999), TASK_OWNER_PLACED);
        u.flags = t->flags;
        assert_int_equal(task_facts_owner(&u, 999), TASK_OWNER_KTHREAD);
        assert_string_equal(t->exe, ""); /* kernel threads have none */
        assert_string_equal(t->cgroup, "/");
        assert_string_equal(t->unit, "");
        assert_true(cpuset_is_empty(&t->cpuset_cpus)); /* no cgroup root given */
        task_facts_reader_free(r);
}

static void test_vanished_and_malformed(void **state) {
        TaskFactsReader *r = reader("proc-basic", "cgroup-v1");
        TaskFacts *t = calloc(1, sizeof(*t)), *sentinel = calloc(1, sizeof(*t));
        memset(sentinel, 0x5a, sizeof(*sentinel));
        memcpy(t, sentinel, sizeof(*t));

        assert_int_equal(task_facts_read(r, 0, 9999, t), -ESRCH);    /* gone */
        assert_int_equal(task_facts_read(r, 4242, 9999, t), -ESRCH); /* gone from its process */
        assert_int_equal(task_facts_read(r, 0, 77, t), -EINVAL);     /* schedstat garbage */
        assert_int_equal(task_facts_read(r, 0, 78, t), -EINVAL);     /* stat without a comm */
        assert_int_equal(task_facts_read(r, 0, 79, t), -EINVAL);     /* Cpus_allowed_list garbage */
        assert_int_equal(task_facts_read(r, 0, 80, t), -EINVAL);     /* cgroup line garbage */
        assert_int_equal(task_facts_read_stat(NULL, 0, -1, t), -EINVAL);
        assert_memory_equal(t, sentinel, sizeof(*t));
        free(t);
        free(sentinel);
        task_facts_reader_free(r);
}

static void test_parse_cgroup(void **state) {
        char cg[64], cs[64];

        assert_int_equal(task_facts_parse_cgroup("12:cpuset:/v1/path\n0::/system.slice/a.service\n",
                                                 cg, cs, sizeof(cg)),
                         0);
        assert_string_equal(cg, "/system.slice/a.service");
        assert_string_equal(cs, "/v1/path");

        assert_int_equal(task_facts_parse_cgroup("3:cpu,cpuacct:/x\n4:cpuset,cpu:/only/v1\n", cg,
                                                 cs, sizeof(cg)),
                         0);
        assert_string_equal(cg, "/only/v1");
        assert_string_equal(cs, "/only/v1");

        assert_int_equal(task_facts_parse_cgroup("0::/unified\n", cg, cs, sizeof(cg)), 0);
        assert_string_equal(cs, "/unified");

        assert_int_equal(task_facts_parse_cgroup("3:memory:/m\n", cg, cs, sizeof(cg)), -ENOENT);
        assert_int_equal(task_facts_parse_cgroup("0::/a/very/long/path\n", cg, cs, 8), -ENOBUFS);
        assert_int_equal(task_facts_parse_cgroup("0:/no-second-colon\n", cg, cs, sizeof(cg)),
                         -EINVAL);
        assert_int_equal(task_facts_parse_cgroup("0::relative\n", cg, cs, sizeof(cg)), -EINVAL);
}

static void test_unit(void **state) {
        char u[32];
        assert_int_equal(task_facts_unit_from_cgroup("/system.slice/nginx.service", u, sizeof(u)),
                         0);
        assert_string_equal(u, "nginx.service");
        /* The innermost unit: a scope inside a service wins. */
        assert_int_equal(
                task_facts_unit_from_cgroup("/system.slice/a.service/b.scope/x", u, sizeof(u)), 0);
        assert_string_equal(u, "b.scope");
        assert_int_equal(task_facts_unit_from_cgroup("/user.slice/user-0.slice", u, sizeof(u)), 0);
        assert_string_equal(u, "");
        assert_int_equal(task_facts_unit_from_cgroup("/.service", u, sizeof(u)), 0);
        assert_string_equal(u, ""); /* a bare suffix names nothing */
        assert_int_equal(task_facts_unit_from_cgroup("/a-very-long-unit-name.service", u, 8),
                         -ENOBUFS);
        assert_string_equal(u, "");
}

/* The executable is read once per process: again after an exec, or for a reused pid. */
static void test_exe_cache(void **state) {
        _cleanup_free_ char *src = fixture("proc-basic");
        char dir[] = "/tmp/placed-facts.XXXXXX", cmd[512], proc[64], exe[128];
        _cleanup_free_ TaskFacts *t = calloc(1, sizeof(*t));
        TaskFactsReader *r;
        assert_non_null(mkdtemp(dir));
        snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s/proc'", src, dir);
        assert_int_equal(system(cmd), 0);
        snprintf(proc, sizeof(proc), "%s/proc", dir);
        snprintf(exe, sizeof(exe), "%s/4242/exe", proc);
        assert_int_equal(task_facts_reader_new(proc, NULL, &r), 0);

        assert_int_equal(task_facts_read(r, 4242, 4242, t), 0);
        assert_string_equal(t->exe, "/usr/lib/odd/app");
        assert_int_equal(unlink(exe), 0);
        assert_int_equal(symlink("/usr/bin/other", exe), 0);
        task_facts_reader_new_tick(r);
        assert_int_equal(task_facts_read(r, 4242, 4250, t), 0);
        assert_string_equal(t->exe, "/usr/lib/odd/app"); /* the same process: cached */

        task_facts_reader_forget_process(r, 4242); /* it exec()ed */
        assert_int_equal(task_facts_read(r, 4242, 4250, t), 0);
        assert_string_equal(t->exe, "/usr/bin/other");

        /* The pid reused by a new process (another leader start time): read afresh. */
        assert_int_equal(unlink(exe), 0);
        assert_int_equal(symlink("/usr/bin/third", exe), 0);
        snprintf(cmd, sizeof(cmd), "sed -i 's/ 123456 / 123999 /' '%s/4242/task/4242/stat'", proc);
        assert_int_equal(system(cmd), 0);
        task_facts_reader_new_tick(r);
        assert_int_equal(task_facts_read(r, 4242, 4242, t), 0);
        assert_int_equal(t->id.start_time, 123999);
        assert_string_equal(t->exe, "/usr/bin/third");

        task_facts_reader_free(r);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

/* A thread's /proc entry is there, though readdir lists only leaders; an
 * ended task's and one outside procfs_root's tree are not. */
static void *exit_at_once(void *arg) {
        *(pid_t *)arg = (pid_t)syscall(SYS_gettid);
        return NULL;
}

static void test_task_alive(void **state) {
        pid_t tid = (pid_t)syscall(SYS_gettid), ended = 0;
        pthread_t t;
        assert_true(task_alive(NULL, getpid()));
        assert_true(task_alive("/proc", tid));
        assert_int_equal(pthread_create(&t, NULL, exit_at_once, &ended), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(ended > 0 && ended != tid);
        assert_false(task_alive("/proc", ended));
        assert_false(task_alive("/proc", 0));
        assert_false(task_alive("/nonexistent-procfs", getpid()));
}

static void test_live_self(void **state) {
        pid_t tid = (pid_t)syscall(SYS_gettid);
        TaskFactsReader *r;
        _cleanup_free_ TaskFacts *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        assert_true(n > 0);
        self[n] = '\0';

        assert_int_equal(task_facts_reader_new("/proc", NULL, &r), 0);
        assert_int_equal(task_facts_read(r, getpid(), tid, a), 0);
        assert_int_equal(a->id.tid, tid);
        assert_int_equal(a->tgid, getpid());
        assert_true(a->id.start_time > 0);
        assert_false(cpuset_is_empty(&a->allowed));
        assert_int_equal(a->cgroup[0], '/');
        assert_string_equal(a->exe, self);
        volatile uint64_t x = 0;
        for (uint64_t i = 0; i < 50000000; i++) /* burn some CPU time */
                x += i;
        task_facts_reader_new_tick(r);
        assert_int_equal(task_facts_read(r, 0, tid, b), 0);
        assert_true(b->run_ns > a->run_ns);
        assert_int_equal(b->id.start_time, a->id.start_time);
        assert_string_equal(b->exe, self);
        task_facts_reader_free(r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_normal_task_v1),
                cmocka_unit_test(test_thread_v2),
                cmocka_unit_test(test_kernel_thread),
                cmocka_unit_test(test_vanished_and_malformed),
                cmocka_unit_test(test_parse_cgroup),
                cmocka_unit_test(test_unit),
                cmocka_unit_test(test_exe_cache),
                cmocka_unit_test(test_task_alive),
                cmocka_unit_test(test_live_self),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
