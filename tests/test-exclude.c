/* SPDX-License-Identifier: MIT */
/* The owner's exclusions: comm globs, cgroup prefixes, and /proc/TID/cgroup parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "exclude.h"

static void add(char **list, unsigned *n, const char *s) {
        list[(*n)++] = strdup(s);
}

static void test_match(void **state) {
        Config c;
        config_defaults(&c);
        add(c.exclude_comm, &c.n_exclude_comm, "postgres*");
        add(c.exclude_comm, &c.n_exclude_comm, "java");
        add(c.exclude_cgroup, &c.n_exclude_cgroup, "/system.slice/db.service");
        add(c.exclude_cgroup, &c.n_exclude_cgroup, "/machine.slice/");

        assert_true(exclude_match(&c, "postgres", NULL));
        assert_true(exclude_match(&c, "postgres: wal", "/user.slice"));
        assert_true(exclude_match(&c, "java", NULL));
        assert_false(exclude_match(&c, "javac", NULL));
        assert_false(exclude_match(&c, "mypostgres", NULL));

        assert_true(exclude_match(&c, "x", "/system.slice/db.service"));
        assert_true(exclude_match(&c, "x", "/system.slice/db.service/worker"));
        assert_false(exclude_match(&c, "x", "/system.slice/db.service2"));
        assert_false(exclude_match(&c, "x", "/system.slice"));
        assert_true(exclude_match(&c, "x", "/machine.slice"));
        assert_true(exclude_match(&c, "x", "/machine.slice/vm1.scope"));
        assert_false(exclude_match(&c, "x", "/machine.slicer"));
        config_done(&c);

        config_defaults(&c);
        assert_false(exclude_match(&c, "anything", "/"));
        add(c.exclude_cgroup, &c.n_exclude_cgroup, "/");
        assert_true(exclude_match(&c, "anything", "/user.slice"));
        config_done(&c);
}

static char root[] = "/tmp/placed-exclude-XXXXXX";

static void write_cgroup(pid_t tid, const char *content) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%d", root, (int)tid);
        mkdir(path, 0755);
        strcat(path, "/cgroup");
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static void test_read_cgroup(void **state) {
        char buf[256];
        assert_non_null(mkdtemp(root));

        write_cgroup(10, "12:cpuset:/v1/path\n0::/system.slice/a.service\n");
        assert_int_equal(exclude_read_cgroup(root, 10, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/system.slice/a.service");

        write_cgroup(11, "3:cpu,cpuacct:/x\n4:cpuset,cpu:/only/v1\n");
        assert_int_equal(exclude_read_cgroup(root, 11, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/only/v1");

        write_cgroup(12, "3:memory:/m\n");
        assert_int_equal(exclude_read_cgroup(root, 12, buf, sizeof(buf)), -ENOENT);

        write_cgroup(13, "0::/a/very/long/path\n");
        assert_int_equal(exclude_read_cgroup(root, 13, buf, 8), -ENOBUFS);

        assert_int_equal(exclude_read_cgroup(root, 99, buf, sizeof(buf)), -ESRCH);

        /* The live system: our own task has a cgroup. */
        assert_int_equal(exclude_read_cgroup("/proc", getpid(), buf, sizeof(buf)), 0);
        assert_int_equal(buf[0], '/');

        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_read_cgroup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
