/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/task-stats.c on a fake procfs tree (tests/fixtures/proc-basic:
 * a comm with spaces and parentheses, an RT thread, a malformed schedstat)
 * and on the live /proc for this very thread.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "task-stats.h"

static char *fixture_root(void) {
        const char *src = getenv("PLACED_SRC");
        char *path;
        assert_true(asprintf(&path, "%s/tests/fixtures/proc-basic", src ? src : ".") > 0);
        return path;
}

static void test_fixture(void **state) {
        _cleanup_free_ char *root = fixture_root();
        TaskStats s;

        assert_int_equal(task_stats_read(root, 4242, 4242, &s), 0);
        assert_int_equal(s.id.tid, 4242);
        assert_int_equal(s.id.start_time, 123456);
        assert_int_equal(s.tgid, 4242);
        assert_string_equal(s.comm, "my (odd) app");
        assert_int_equal(s.state, 'S');
        assert_int_equal(s.processor, 1);
        assert_int_equal(s.run_ns, 600000000);
        assert_int_equal(s.run_delay_ns, 2000000);
        assert_int_equal(s.timeslices, 42);
        assert_false(task_stats_is_realtime(&s));

        /* a thread read through its process, and through its own TID */
        assert_int_equal(task_stats_read(root, 4242, 4250, &s), 0);
        assert_int_equal(s.tgid, 4242);
        assert_int_equal(s.id.start_time, 123500);
        assert_int_equal(s.policy, 1);
        assert_int_equal(s.rt_priority, 50);
        assert_true(task_stats_is_realtime(&s));
}

static void test_errors(void **state) {
        _cleanup_free_ char *root = fixture_root();
        TaskStats s, sentinel;
        memset(&sentinel, 0x5a, sizeof(sentinel));
        s = sentinel;
        assert_int_equal(task_stats_read(root, 0, 9999, &s), -ENOENT);
        assert_int_equal(task_stats_read(root, 0, 77, &s), -EINVAL); /* schedstat garbage */
        assert_memory_equal(&s, &sentinel, sizeof(s));
}

static void test_live_self(void **state) {
        pid_t tid = (pid_t)syscall(SYS_gettid);
        TaskStats a, b;
        assert_int_equal(task_stats_read("/proc", getpid(), tid, &a), 0);
        assert_int_equal(a.id.tid, tid);
        assert_int_equal(a.tgid, getpid());
        assert_true(a.id.start_time > 0);
        volatile uint64_t x = 0;
        for (uint64_t i = 0; i < 50000000; i++) /* burn some CPU time */
                x += i;
        assert_int_equal(task_stats_read("/proc", 0, tid, &b), 0);
        assert_true(b.run_ns > a.run_ns);
        assert_int_equal(b.id.start_time, a.id.start_time);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fixture),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_live_self),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
