/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/actuator.c and the slice actuator's backends on fixture
 * trees: the one sorting of errors, the one choice of the slice backend,
 * the cgroupfs backend writing and releasing a slice's cpuset.cpus in a
 * copy of tests/fixtures/cgroup-v2, and the journal kinds the actuators
 * hand restore.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cmocka.h>

#include "act-slice.h"
#include "actuator.h"
#include "actuators.h"
#include "journal.h"
#include "macro.h"

static const char *src_dir(void) {
        return getenv("PLACED_SRC") ? getenv("PLACED_SRC") : ".";
}

static CpuSet cpus(const char *list) {
        CpuSet s;
        assert_int_equal(cpuset_parse(list, &s), 0);
        return s;
}

static void read_line(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        if (!fgets(buf, (int)size, f))
                buf[0] = '\0';
        fclose(f);
        buf[strcspn(buf, "\n")] = '\0';
}

static void test_transient(void **state) {
        int transient[] = { -ESRCH, -EAGAIN, -EBUSY, -EINTR, -ENOMEM, -ETIMEDOUT };
        int permanent[] = { -EPERM, -EINVAL, -ENOENT, -EACCES, -ENOSPC, -EIO };
        for (size_t i = 0; i < ELEMENTSOF(transient); i++)
                assert_true(actuator_error_is_transient(transient[i]));
        for (size_t i = 0; i < ELEMENTSOF(permanent); i++)
                assert_false(actuator_error_is_transient(permanent[i]));
}

static void test_backend_pick(void **state) {
        ActuatorEnv e = { .sysfs_root = "/tmp/a-fixture-root", .cgroup_root = "/sys/fs/cgroup" };
        /* A fixture root is never systemd's, whatever runs as PID 1. */
        assert_int_equal(actuator_slice_backend_pick(&e), SLICE_BACKEND_CGROUPFS);
        e.cgroup_root = NULL;
        assert_int_equal(actuator_slice_backend_pick(&e), SLICE_BACKEND_NONE);
        /* The live root: systemd whenever it is PID 1, even without a cpuset hierarchy. */
        e.sysfs_root = "/";
        assert_int_equal(actuator_slice_backend_pick(&e),
                         sd_booted() > 0 ? SLICE_BACKEND_SYSTEMD : SLICE_BACKEND_NONE);
        e.cgroup_root = "/sys/fs/cgroup";
        assert_int_equal(actuator_slice_backend_pick(&e),
                         sd_booted() > 0 ? SLICE_BACKEND_SYSTEMD : SLICE_BACKEND_CGROUPFS);
        assert_string_equal(slice_backend_to_string(SLICE_BACKEND_CGROUPFS), "cgroupfs");
        assert_null(slice_backend_to_string(_SLICE_BACKEND_MAX));
}

static void test_slice_cgroupfs(void **state) {
        char dir[] = "/tmp/placed-actuator.XXXXXX", cmd[512], cg[128], jdir[128], file[256];
        char buf[64];
        Journal *j;
        ActSlice *s;
        JournalKindOps ops[4];

        assert_non_null(mkdtemp(dir));
        snprintf(cg, sizeof(cg), "%s/cgroup", dir);
        snprintf(jdir, sizeof(jdir), "%s/journal", dir);
        snprintf(cmd, sizeof(cmd), "cp -r '%s/tests/fixtures/cgroup-v2' '%s'", src_dir(), cg);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(journal_open(jdir, &j), 0);

        ActuatorEnv e = {
                .sysfs_root = dir, .cgroup_root = cg, .online = cpus("0-7"), .journal = j
        };
        assert_int_equal(act_slice_new(&e, &s), 0);
        assert_int_equal(act_slice_backend(s), SLICE_BACKEND_CGROUPFS);
        assert_int_equal(act_slice_backend_error(s), 0);

        CpuSet want = cpus("2-3");
        snprintf(file, sizeof(file), "%s/system.slice/cpuset.cpus", cg);
        assert_int_equal(act_slice_apply(s, "system.slice", &want), 1);
        read_line(file, buf, sizeof(buf));
        assert_string_equal(buf, "2-3");
        assert_int_equal(journal_size(j), 1);
        assert_int_equal(act_slice_apply(s, "system.slice", &want), 0); /* holds it already */
        assert_int_equal(act_slice_apply(s, "nope.slice", &want), -ENOENT);

        assert_int_equal(act_slice_kind_ops(s, ops, ELEMENTSOF(ops)), 1);
        assert_string_equal(ops[0].kind, "cpuset");
        assert_int_equal(act_slice_kind_ops(s, ops, 0), -ENOBUFS);

        assert_int_equal(act_slice_release(s, "system.slice"), 1);
        read_line(file, buf, sizeof(buf));
        assert_string_equal(buf, ""); /* inherit again, as it was */
        assert_int_equal(journal_size(j), 0);
        act_slice_free(s);

        /* No cpuset files at the root: no backend, and it says why. */
        e.cgroup_root = dir;
        assert_int_equal(act_slice_new(&e, &s), 0);
        assert_int_equal(act_slice_backend(s), SLICE_BACKEND_NONE);
        assert_int_equal(act_slice_backend_error(s), -ENOENT);
        assert_int_equal(act_slice_apply(s, "system.slice", &want), 0);
        assert_int_equal(act_slice_release(s, "system.slice"), 0);
        act_slice_free(s);

        journal_free(j);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

/* Restore gets every kind the actuators journal, whichever backend is in use. */
static void test_kind_ops(void **state) {
        char dir[] = "/tmp/placed-actuator.XXXXXX", sys[512], jdir[128];
        JournalKindOps ops[ACTUATORS_KINDS_MAX];
        Actuators a;
        Journal *j;
        int idle_error = 1;

        assert_non_null(mkdtemp(dir));
        snprintf(jdir, sizeof(jdir), "%s/journal", dir);
        snprintf(sys, sizeof(sys), "%s/tests/fixtures/idle-vm2", src_dir());
        assert_int_equal(journal_open(jdir, &j), 0);
        ActuatorEnv e = {
                .procfs_root = "/proc", .sysfs_root = sys, .online = cpus("0-1"), .journal = j
        };
        assert_int_equal(actuators_open(&e, &a, &idle_error), 0);
        assert_int_equal(idle_error, 0);
        assert_non_null(a.affinity);
        assert_non_null(a.idle);
        assert_int_equal(act_slice_backend(a.slice), SLICE_BACKEND_NONE);

        int n = actuators_kind_ops(&a, ops, ELEMENTSOF(ops));
        assert_int_equal(n, 4);
        const char *kinds[] = { "affinity", "pm_qos", "cpuidle", "cpuset" };
        for (int i = 0; i < n; i++)
                assert_string_equal(ops[i].kind, kinds[i]);
        assert_int_equal(actuators_kind_ops(&a, ops, 2), -ENOBUFS);
        actuators_close(&a);
        assert_null(a.affinity);

        /* Without a journal, outside a dry run, nothing can be made. */
        e.journal = NULL;
        assert_int_equal(actuators_open(&e, &a, NULL), -EINVAL);
        journal_free(j);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_transient),
                cmocka_unit_test(test_backend_pick),
                cmocka_unit_test(test_slice_cgroupfs),
                cmocka_unit_test(test_kind_ops),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
