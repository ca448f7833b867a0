/* SPDX-License-Identifier: MIT */
/* The owner's exclusions: comm globs and cgroup prefixes (the cgroup file: test-task-facts.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_match),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
