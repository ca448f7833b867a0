/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/act-cpuset.c on fixture cgroup trees (tests/fixtures/
 * cgroup-v2, cgroup-v1, copied to a temp dir before anything is written)
 * and fixture mountinfo files: clamping to the parent, no write when
 * unchanged, the exact previous text restored ("" = inherit in v2), an
 * administrator's later change winning, dry run, gone cgroups, and a
 * cpuset.cpus or mountinfo that is a FIFO, /dev/zero or 100 MB.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "act-cpuset.h"
#include "journal.h"
#include "macro.h"
#include "hostile.h"

typedef struct Fixture {
        char tmp[64];
        char root[128];
        char jdir[128];
        Journal *journal;
        ActCpuset *act;
        JournalKindOps ops;
} Fixture;

static const char *src_dir(void) {
        const char *s = getenv("PLACED_SRC");
        return s ? s : ".";
}

static void run(const char *cmd) {
        assert_int_equal(system(cmd), 0);
}

static int setup_tree(void **state, const char *fixture, bool dry_run) {
        Fixture *f = calloc(1, sizeof(Fixture));
        assert_non_null(f);
        strcpy(f->tmp, "/tmp/test-act-cpuset.XXXXXX");
        assert_non_null(mkdtemp(f->tmp));
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "cp -a '%s/tests/fixtures/%s' '%s/cg'", src_dir(), fixture,
                 f->tmp);
        run(cmd);
        snprintf(f->root, sizeof(f->root), "%s/cg", f->tmp);
        snprintf(f->jdir, sizeof(f->jdir), "%s/journal", f->tmp);
        assert_int_equal(journal_open(f->jdir, &f->journal), 0);
        ActCpusetOptions o = { .cgroup_root = f->root, .dry_run = dry_run, .journal = f->journal };
        assert_int_equal(act_cpuset_new(&o, &f->act), 0);
        act_cpuset_kind_ops(&f->ops);
        *state = f;
        return 0;
}

static int setup_v2(void **state) {
        return setup_tree(state, "cgroup-v2", false);
}
static int setup_v2_dry(void **state) {
        return setup_tree(state, "cgroup-v2", true);
}
static int setup_v1(void **state) {
        return setup_tree(state, "cgroup-v1", false);
}

static int teardown(void **state) {
        Fixture *f = *state;
        act_cpuset_free(f->act);
        journal_free(f->journal);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->tmp);
        run(cmd);
        free(f);
        return 0;
}

static CpuSet set_of(const char *text) {
        CpuSet s;
        assert_int_equal(cpuset_parse(text, &s), 0);
        return s;
}

static void assert_cpus(Fixture *f, const char *cgroup, const char *expected) {
        char dir[256];
        _cleanup_free_ char *v = NULL;
        snprintf(dir, sizeof(dir), "%s/%s", f->root, cgroup);
        assert_int_equal(act_cpuset_read_cpus(dir, &v), 0);
        assert_string_equal(v, expected);
}

static void test_find_mount(void **state) {
        char proc[256];
        _cleanup_free_ char *v1 = NULL, *v2 = NULL, *none = NULL, *only2 = NULL;
        snprintf(proc, sizeof(proc), "%s/tests/fixtures/cgroup-proc-hybrid", src_dir());
        assert_int_equal(act_cpuset_find_mount(proc, CGROUP_VERSION_1, &v1), 0);
        assert_string_equal(v1, "/sys/fs/cgroup/cpuset");
        assert_int_equal(act_cpuset_find_mount(proc, CGROUP_VERSION_2, &v2), 0);
        assert_string_equal(v2, "/sys/fs/cgroup/unified");

        snprintf(proc, sizeof(proc), "%s/tests/fixtures/cgroup-proc-v2", src_dir());
        assert_int_equal(act_cpuset_find_mount(proc, CGROUP_VERSION_1, &none), -ENOENT);
        assert_null(none);
        assert_int_equal(act_cpuset_find_mount(proc, CGROUP_VERSION_2, &only2), 0);
        assert_string_equal(only2, "/sys/fs/cgroup");
        assert_int_equal(act_cpuset_find_mount(proc, CGROUP_VERSION_DETECT, &none), -EINVAL);
}

static void test_v2_apply_restore_inherit(void **state) {
        Fixture *f = *state;
        assert_int_equal(act_cpuset_version(f->act), CGROUP_VERSION_2);
        CpuSet want = set_of("0-1"), applied;
        CpusetResult res;
        assert_int_equal(act_cpuset_apply(f->act, "system.slice", &want, &res, &applied), 1);
        assert_int_equal(res, CPUSET_SET);
        assert_true(cpuset_equal(&applied, &want));
        assert_cpus(f, "system.slice", "0-1");
        assert_int_equal(journal_size(f->journal), 1);

        assert_int_equal(act_cpuset_apply(f->act, "system.slice", &want, &res, NULL), 0);
        assert_int_equal(res, CPUSET_UNCHANGED);

        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 1);
        assert_cpus(f, "system.slice", ""); /* inherit again, not a full mask */
}

static void test_v2_unchanged_inherit_not_written(void **state) {
        Fixture *f = *state;
        CpuSet want = set_of("0-7");
        CpusetResult res;
        assert_int_equal(act_cpuset_apply(f->act, "/system.slice/", &want, &res, NULL), 0);
        assert_int_equal(res, CPUSET_UNCHANGED);
        assert_cpus(f, "system.slice", "");
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_v2_clamped_to_parent(void **state) {
        Fixture *f = *state;
        CpuSet want = set_of("0-3"), applied;
        assert_int_equal(
                act_cpuset_apply(f->act, "user.slice/user-1000.slice", &want, NULL, &applied), 1);
        CpuSet expect = set_of("2-3");
        assert_true(cpuset_equal(&applied, &expect));
        assert_cpus(f, "user.slice/user-1000.slice", "2-3");

        CpuSet outside = set_of("0-1");
        assert_int_equal(act_cpuset_release(f->act, "user.slice/user-1000.slice"), 1);
        assert_int_equal(
                act_cpuset_apply(f->act, "user.slice/user-1000.slice", &outside, NULL, NULL),
                -EINVAL);
        assert_cpus(f, "user.slice/user-1000.slice", "");
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_v2_admin_change_wins(void **state) {
        Fixture *f = *state;
        CpuSet want = set_of("4-5");
        assert_int_equal(act_cpuset_apply(f->act, "user.slice", &want, NULL, NULL), 1);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "echo 6 > '%s/user.slice/cpuset.cpus'", f->root);
        run(cmd);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
        assert_int_equal(st.skipped, 1);
        assert_cpus(f, "user.slice", "6");
}

/* A cpuset.cpus that is a FIFO, /dev/zero or 100 MB: apply fails at once, and nothing is
 * journaled or written; with the file back, apply works. */
static void test_v2_hostile_cpus(void **state) {
        Fixture *f = *state;
        char dir[256], path[300];
        snprintf(dir, sizeof(dir), "%s/system.slice", f->root);
        snprintf(path, sizeof(path), "%s/cpuset.cpus", dir);
        CpuSet want = set_of("0-1");
        for (int kind = 0; kind < _HOSTILE_MAX; kind++) {
                uint64_t mark = hostile_begin();
                _cleanup_free_ char *v = NULL;
                hostile_make(path, "0-7\n", kind);
                assert_int_equal(act_cpuset_apply(f->act, "system.slice", &want, NULL, NULL),
                                 hostile_error[kind]);
                assert_int_equal(act_cpuset_read_cpus(dir, &v), hostile_error[kind]);
                assert_null(v);
                hostile_end(mark);
                assert_int_equal(journal_size(f->journal), 0);
        }
        assert_int_equal(unlink(path), 0);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0); /* an empty file: inherit */
        assert_int_equal(act_cpuset_apply(f->act, "system.slice", &want, NULL, NULL), 1);
        assert_int_equal(journal_size(f->journal), 1);
        assert_cpus(f, "system.slice", "0-1");
}

/* A mountinfo that is a FIFO, /dev/zero or 100 MB: an error at once, not -ENOENT (no mount)
 * and not a hang. */
static void test_find_mount_hostile(void **state) {
        char tmp[] = "/tmp/test-act-cpuset-proc.XXXXXX", path[128];
        assert_non_null(mkdtemp(tmp));
        snprintf(path, sizeof(path), "%s/self", tmp);
        assert_int_equal(mkdir(path, 0700), 0);
        snprintf(path, sizeof(path), "%s/self/mountinfo", tmp);
        for (int kind = 0; kind < _HOSTILE_MAX; kind++) {
                uint64_t mark = hostile_begin();
                _cleanup_free_ char *mnt = NULL;
                hostile_make(path,
                             "22 1 0:21 / /proc rw - proc proc rw\n"
                             "23 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
                             kind);
                int r = act_cpuset_find_mount(tmp, CGROUP_VERSION_1, &mnt);
                assert_int_equal(r, hostile_error[kind]);
                assert_null(mnt);
                hostile_end(mark);
        }
        /* The mount is found before the NULs: nothing past it is read. */
        _cleanup_free_ char *v2 = NULL;
        assert_int_equal(act_cpuset_find_mount(tmp, CGROUP_VERSION_2, &v2), 0);
        assert_string_equal(v2, "/sys/fs/cgroup");
        unlink(path);
        snprintf(path, sizeof(path), "%s/self", tmp);
        rmdir(path);
        rmdir(tmp);
}

static void test_v2_release(void **state) {
        Fixture *f = *state;
        CpuSet want = set_of("4-5");
        assert_int_equal(act_cpuset_release(f->act, "user.slice"), 0);
        assert_int_equal(act_cpuset_apply(f->act, "user.slice", &want, NULL, NULL), 1);
        assert_cpus(f, "user.slice", "4-5");
        assert_int_equal(act_cpuset_release(f->act, "user.slice"), 1);
        assert_cpus(f, "user.slice", "2-7");
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_v2_gone_and_bad_paths(void **state) {
        Fixture *f = *state;
        CpuSet want = set_of("1");
        assert_int_equal(act_cpuset_apply(f->act, "system.slice", &want, NULL, NULL), 1);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/system.slice'", f->root);
        run(cmd);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
        assert_int_equal(st.gone, 1);

        assert_int_equal(act_cpuset_apply(f->act, "machine.slice", &want, NULL, NULL), -ENOENT);
        assert_int_equal(act_cpuset_apply(f->act, "", &want, NULL, NULL), -EINVAL);
        assert_int_equal(act_cpuset_apply(f->act, "/", &want, NULL, NULL), -EINVAL);
        assert_int_equal(act_cpuset_apply(f->act, "../etc", &want, NULL, NULL), -EINVAL);
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_v2_dry_run(void **state) {
        Fixture *f = *state;
        CpuSet want = set_of("0-1"), applied;
        CpusetResult res;
        assert_int_equal(
                act_cpuset_apply(f->act, "user.slice/user-1000.slice", &want, &res, &applied),
                -EINVAL);
        want = set_of("3");
        assert_int_equal(act_cpuset_apply(f->act, "user.slice", &want, &res, &applied), 0);
        assert_int_equal(res, CPUSET_WOULD_SET);
        assert_true(cpuset_equal(&applied, &want));
        assert_cpus(f, "user.slice", "2-7");
        assert_int_equal(journal_size(f->journal), 0);
}

static void test_v1_fixture(void **state) {
        Fixture *f = *state;
        assert_int_equal(act_cpuset_version(f->act), CGROUP_VERSION_1);
        CpuSet want = set_of("2-5"), applied;
        assert_int_equal(act_cpuset_apply(f->act, "placed-a", &want, NULL, &applied), 1);
        CpuSet expect = set_of("2-3"); /* parent has 0-3 */
        assert_true(cpuset_equal(&applied, &expect));
        assert_cpus(f, "placed-a", "2-3");
        JournalRestoreStats st;
        assert_int_equal(journal_restore(f->journal, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 1);
        assert_cpus(f, "placed-a", "1-3");
}

static void test_detect_fails_without_cpuset(void **state) {
        ActCpuset *a = NULL;
        ActCpusetOptions o = { .cgroup_root = "/nonexistent", .dry_run = true };
        assert_int_equal(act_cpuset_new(&o, &a), -ENOENT);
        assert_null(a);
        o.dry_run = false; /* a journal is required to change anything */
        o.version = CGROUP_VERSION_2;
        assert_int_equal(act_cpuset_new(&o, &a), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_find_mount),
                cmocka_unit_test(test_find_mount_hostile),
                cmocka_unit_test_setup_teardown(test_v2_hostile_cpus, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_apply_restore_inherit, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_unchanged_inherit_not_written, setup_v2,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v2_clamped_to_parent, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_admin_change_wins, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_release, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_gone_and_bad_paths, setup_v2, teardown),
                cmocka_unit_test_setup_teardown(test_v2_dry_run, setup_v2_dry, teardown),
                cmocka_unit_test_setup_teardown(test_v1_fixture, setup_v1, teardown),
                cmocka_unit_test(test_detect_fails_without_cpuset),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
