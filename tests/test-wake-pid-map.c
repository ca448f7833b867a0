/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/wake-pid-map.c (the perf source's global PID -> namespace
 * TID map): learning, the comm check that refuses a reused PID, pruning of
 * tasks gone from a procfs tree (a temporary directory standing for one),
 * bad input; and pid_ns_is_initial() (task-facts.c) on a tree without
 * self/, on the live /proc, and, as root, in a child PID namespace of its own.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "task-facts.h"
#include "wake-pid-map.h"

static void test_learn_lookup(void **state) {
        WakePidMap *m;
        assert_int_equal(wake_pid_map_new(&m), 0);
        assert_int_equal(wake_pid_map_lookup(m, 5000, "worker"), 0);
        assert_int_equal(wake_pid_map_learn(m, 5000, 12, "worker"), 0);
        assert_int_equal(wake_pid_map_learn(m, 5001, 13, "sched-pipe"), 0);
        assert_int_equal(wake_pid_map_lookup(m, 5000, "worker"), 12);
        assert_int_equal(wake_pid_map_lookup(m, 5001, "sched-pipe"), 13);
        assert_int_equal(wake_pid_map_size(m), 2);
        /* Another comm under the same PID: reused, or exec'd; not trusted. */
        assert_int_equal(wake_pid_map_lookup(m, 5000, "other"), 0);
        /* Learnt again: replaced, not added. */
        assert_int_equal(wake_pid_map_learn(m, 5000, 40, "other"), 0);
        assert_int_equal(wake_pid_map_lookup(m, 5000, "other"), 40);
        assert_int_equal(wake_pid_map_lookup(m, 5000, "worker"), 0);
        assert_int_equal(wake_pid_map_size(m), 2);
        /* A comm of 15 characters and more is compared as the kernel keeps it. */
        assert_int_equal(wake_pid_map_learn(m, 7, 3, "a-very-long-name-indeed"), 0);
        assert_int_equal(wake_pid_map_lookup(m, 7, "a-very-long-nam"), 3);
        wake_pid_map_free(m);
}

static void test_bad_input(void **state) {
        WakePidMap *m;
        assert_int_equal(wake_pid_map_new(&m), 0);
        assert_int_equal(wake_pid_map_learn(m, 0, 5, "x"), -EINVAL);
        assert_int_equal(wake_pid_map_learn(m, 5, 0, "x"), -EINVAL);
        assert_int_equal(wake_pid_map_learn(m, -1, 5, "x"), -EINVAL);
        assert_int_equal(wake_pid_map_lookup(m, 0, "x"), 0);
        assert_int_equal(wake_pid_map_lookup(m, -3, "x"), 0);
        assert_int_equal(wake_pid_map_size(m), 0);
        assert_null(wake_pid_map_free(m));
        assert_null(wake_pid_map_free(NULL));
}

static void mkdirf(const char *dir, int tid) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%d", dir, tid);
        assert_int_equal(mkdir(path, 0755), 0);
}

static void rmdirf(const char *dir, int tid) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%d", dir, tid);
        assert_int_equal(rmdir(path), 0);
}

/* Tasks whose namespace TID left procfs are forgotten; the others still map. */
static void test_prune(void **state) {
        char dir[] = "/tmp/test-wake-pid-map.XXXXXX";
        assert_non_null(mkdtemp(dir));
        WakePidMap *m;
        assert_int_equal(wake_pid_map_new(&m), 0);
        for (int i = 1; i <= 100; i++) {
                assert_int_equal(wake_pid_map_learn(m, 1000 + i, i, "t"), 0);
                mkdirf(dir, i);
        }
        assert_int_equal(wake_pid_map_prune(m, dir), 0);
        assert_int_equal(wake_pid_map_size(m), 100);
        for (int i = 1; i <= 100; i += 2)
                rmdirf(dir, i);
        assert_int_equal(wake_pid_map_prune(m, dir), 50);
        assert_int_equal(wake_pid_map_size(m), 50);
        for (int i = 1; i <= 100; i++)
                assert_int_equal(wake_pid_map_lookup(m, 1000 + i, "t"), i % 2 ? 0 : i);
        /* Still a map after the rebuild: learning and replacing work. */
        assert_int_equal(wake_pid_map_learn(m, 1002, 77, "t"), 0);
        assert_int_equal(wake_pid_map_size(m), 50);
        assert_int_equal(wake_pid_map_lookup(m, 1002, "t"), 77);
        for (int i = 2; i <= 100; i += 2)
                rmdirf(dir, i);
        assert_int_equal(wake_pid_map_prune(m, dir), 50);
        assert_int_equal(wake_pid_map_size(m), 0);
        assert_int_equal(rmdir(dir), 0);
        wake_pid_map_free(m);
}

static void test_pid_ns_is_initial(void **state) {
        char dir[] = "/tmp/test-wake-pid-map.XXXXXX";
        assert_non_null(mkdtemp(dir));
        assert_int_equal(pid_ns_is_initial(dir), -ENOENT);
        assert_int_equal(rmdir(dir), 0);

        int here = pid_ns_is_initial(NULL);
        assert_true(here == 0 || here == 1);
        print_message("this test runs in %s PID namespace\n", here ? "the initial" : "a child");
        if (geteuid() != 0) {
                print_message("not root: no child PID namespace of our own\n");
                return;
        }
        /*
         * A child in a PID namespace of its own (under ours) is never in the
         * initial one. Unshared in a child: after unshare(CLONE_NEWPID) a
         * process can no longer start threads (LeakSanitizer's, at exit).
         */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (unshare(CLONE_NEWPID) < 0)
                        _exit(2);
                pid_t inner = fork();
                if (inner == 0)
                        _exit(pid_ns_is_initial(NULL) == 0 && getpid() == 1 ? 0 : 1);
                int st;
                _exit(inner > 0 && waitpid(inner, &st, 0) == inner && WIFEXITED(st)
                              ? WEXITSTATUS(st)
                              : 3);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_learn_lookup),
                cmocka_unit_test(test_bad_input),
                cmocka_unit_test(test_prune),
                cmocka_unit_test(test_pid_ns_is_initial),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
