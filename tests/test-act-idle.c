/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/act-idle.c on temporary copies of the fixture trees
 * (idle-big32: 32 CPUs with POLL, C1, C6; idle-vm2: POLL and haltpoll):
 * caps become PM QoS values, the exact originals come back through the
 * journal (also from a journal reopened as after a crash), unchanged values
 * are not written, an administrator's change is left alone, the state-disable
 * fallback, dry-run, permanent errors and the /dev/cpu_dma_latency request.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
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

#include "act-idle.h"
#include "journal.h"
#include "macro.h"

typedef struct Ctx {
        char dir[PATH_MAX];          /* the sysfs root: a copy of the fixture */
        char journal[PATH_MAX + 16]; /* the journal directory */
        Journal *j;
        unsigned reports, dry_reports;
} Ctx;

static int copy_fixture(const char *name, Ctx *c) {
        const char *src = getenv("PLACED_SRC");
        char from[PATH_MAX];
        snprintf(from, sizeof(from), "%s/tests/fixtures/%s/.", src && *src ? src : ".", name);
        snprintf(c->dir, sizeof(c->dir), "/tmp/placed-act-idle-XXXXXX");
        if (!mkdtemp(c->dir))
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                execlp("cp", "cp", "-a", from, c->dir, (char *)NULL);
                _exit(127);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
                return -1;
        snprintf(c->journal, sizeof(c->journal), "%s/journal", c->dir);
        return journal_open(c->journal, &c->j) < 0 ? -1 : 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int setup_big32(void **state) {
        Ctx *c = calloc(1, sizeof(*c));
        if (!c || copy_fixture("idle-big32", c) < 0)
                return -1;
        *state = c;
        return 0;
}

static int setup_vm2(void **state) {
        Ctx *c = calloc(1, sizeof(*c));
        if (!c || copy_fixture("idle-vm2", c) < 0)
                return -1;
        *state = c;
        return 0;
}

static int teardown(void **state) {
        Ctx *c = *state;
        journal_free(c->j);
        nftw(c->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(c);
        return 0;
}

static void on_report(const char *kind, const char *key, const char *from, const char *to,
                      bool dry_run, void *userdata) {
        Ctx *c = userdata;
        if (dry_run)
                c->dry_reports++;
        else
                c->reports++;
}

static void cpu_path(const Ctx *c, char *buf, size_t size, const char *rel) {
        snprintf(buf, size, "%s/sys/devices/system/cpu/%s", c->dir, rel);
}

/* The file's text without the newline. */
_printf_(2, 3) static const char *get(const Ctx *c, const char *fmt, ...) {
        static char buf[64];
        char rel[128], path[PATH_MAX + 200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rel, sizeof(rel), fmt, ap);
        va_end(ap);
        cpu_path(c, path, sizeof(path), rel);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        if (!fgets(buf, sizeof(buf), f))
                buf[0] = '\0';
        fclose(f);
        buf[strcspn(buf, "\n")] = '\0';
        return buf;
}

_printf_(3, 4) static void put(const Ctx *c, const char *text, const char *fmt, ...) {
        char rel[128], path[PATH_MAX + 200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rel, sizeof(rel), fmt, ap);
        va_end(ap);
        cpu_path(c, path, sizeof(path), rel);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "%s\n", text);
        assert_int_equal(fclose(f), 0);
}

#define QOS(cpu)         "cpu%u/power/pm_qos_resume_latency_us", (unsigned)(cpu)
#define DISABLE(cpu, st) "cpu%u/cpuidle/state%u/disable", (unsigned)(cpu), (unsigned)(st)

static void restore_all(Ctx *c, ActIdle *a, JournalRestoreStats *st) {
        JournalKindOps ops[ACT_IDLE_N_KINDS];
        assert_int_equal(act_idle_kind_ops(a, ops, ACT_IDLE_N_KINDS), ACT_IDLE_N_KINDS);
        assert_int_equal(journal_restore(c->j, ops, ACT_IDLE_N_KINDS, st), 0);
}

static void test_qos_pure(void **state) {
        char buf[32];
        int64_t v;
        act_idle_qos_text(0, buf, sizeof(buf));
        assert_string_equal(buf, "n/a");
        act_idle_qos_text(75, buf, sizeof(buf));
        assert_string_equal(buf, "75");
        assert_int_equal(act_idle_qos_parse("n/a", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(act_idle_qos_parse("0", &v), 0);
        assert_int_equal(v, INT64_MAX);
        assert_int_equal(act_idle_qos_parse("20", &v), 0);
        assert_int_equal(v, 20);
        assert_int_equal(act_idle_qos_parse("-3", &v), -EINVAL);
        assert_int_equal(act_idle_qos_parse("abc", &v), -EINVAL);
        assert_true(actuator_error_is_transient(-EBUSY));
        assert_false(actuator_error_is_transient(-EACCES));
}

static void test_apply_restore(void **state) {
        Ctx *c = *state;
        _cleanup_(act_idle_freep) ActIdle *a = NULL;
        assert_int_equal(
                act_idle_new(
                        &(ActuatorEnv){ .sysfs_root = c->dir, .journal = c->j, .dry_run = false },
                        &a),
                0);
        act_idle_set_report(a, on_report, c);

        int64_t caps[32];
        for (unsigned i = 0; i < 32; i++)
                caps[i] = ACT_IDLE_NO_CAP;
        caps[0] = 0;
        caps[1] = 50;
        put(c, "10", QOS(2)); /* an administrator's stricter value */
        caps[2] = 50;
        assert_int_equal(act_idle_apply(a, caps, 32), 1);
        assert_string_equal(get(c, QOS(0)), "n/a");
        assert_string_equal(get(c, QOS(1)), "50");
        assert_string_equal(get(c, QOS(2)), "10"); /* already stricter: kept */
        assert_string_equal(get(c, QOS(3)), "0");
        assert_string_equal(get(c, DISABLE(0, 2)), "0"); /* PM QoS preferred */
        assert_int_equal(c->reports, 2);
        assert_int_equal(journal_size(c->j), 2);
        assert_true(journal_has(c->j, ACT_IDLE_KIND_QOS, "0"));

        /* Unchanged: no write at all (the file is not even rewritten). */
        char path[PATH_MAX + 128];
        cpu_path(c, path, sizeof(path), "cpu1/power/pm_qos_resume_latency_us");
        struct stat before, after;
        assert_int_equal(stat(path, &before), 0);
        usleep(10000);
        assert_int_equal(act_idle_apply(a, caps, 32), 0);
        assert_int_equal(stat(path, &after), 0);
        assert_int_equal(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
        assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
        assert_int_equal(c->reports, 2);

        /* Tighter than the admin's value: set; released: the exact original back. */
        caps[2] = 5;
        assert_int_equal(act_idle_apply(a, caps, 32), 1);
        assert_string_equal(get(c, QOS(2)), "5");
        caps[2] = ACT_IDLE_NO_CAP;
        assert_int_equal(act_idle_apply(a, caps, 32), 1);
        assert_string_equal(get(c, QOS(2)), "10");
        assert_false(journal_has(c->j, ACT_IDLE_KIND_QOS, "2"));

        JournalRestoreStats st;
        restore_all(c, a, &st);
        assert_int_equal(st.restored, 2);
        assert_string_equal(get(c, QOS(0)), "0");
        assert_string_equal(get(c, QOS(1)), "0");
        assert_int_equal(journal_size(c->j), 0);
}

static void test_admin_change_wins(void **state) {
        Ctx *c = *state;
        _cleanup_(act_idle_freep) ActIdle *a = NULL;
        assert_int_equal(
                act_idle_new(
                        &(ActuatorEnv){ .sysfs_root = c->dir, .journal = c->j, .dry_run = false },
                        &a),
                0);
        int64_t caps[2] = { 30, 40 };
        assert_int_equal(act_idle_apply(a, caps, 2), 1);
        put(c, "77", QOS(1)); /* the administrator takes cpu1 over */

        /* Not fought over: the next apply leaves it and forgets it. */
        assert_int_equal(act_idle_apply(a, caps, 2), 0);
        assert_string_equal(get(c, QOS(1)), "77");
        assert_false(journal_has(c->j, ACT_IDLE_KIND_QOS, "1"));

        put(c, "88", QOS(0)); /* and cpu0 too, found only at restore */
        JournalRestoreStats st;
        restore_all(c, a, &st);
        assert_int_equal(st.skipped, 1);
        assert_int_equal(st.restored, 0);
        assert_string_equal(get(c, QOS(0)), "88");
        assert_string_equal(get(c, QOS(1)), "77");
}

static void test_disable_fallback(void **state) {
        Ctx *c = *state;
        char path[PATH_MAX + 128];
        cpu_path(c, path, sizeof(path), "cpu3/power/pm_qos_resume_latency_us");
        assert_int_equal(unlink(path), 0);
        /* cpu4's PM QoS "file" cannot be used: a permanent error, then state disable. */
        cpu_path(c, path, sizeof(path), "cpu4/power/pm_qos_resume_latency_us");
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0755), 0);

        _cleanup_(act_idle_freep) ActIdle *a = NULL;
        assert_int_equal(
                act_idle_new(
                        &(ActuatorEnv){ .sysfs_root = c->dir, .journal = c->j, .dry_run = false },
                        &a),
                0);
        int64_t caps[5] = { -1, -1, -1, 2, 2 };
        int r = act_idle_apply(a, caps, 5);
        assert_true(r < 0 && !actuator_error_is_transient(r));
        for (unsigned cpu = 3; cpu <= 4; cpu++) {
                assert_string_equal(get(c, DISABLE(cpu, 0)), "0");
                assert_string_equal(get(c, DISABLE(cpu, 1)), "0"); /* C1: 2 us <= cap */
                assert_string_equal(get(c, DISABLE(cpu, 2)), "1"); /* C6: 133 us */
        }
        assert_true(journal_has(c->j, ACT_IDLE_KIND_CPUIDLE, "3:2"));
        assert_false(journal_has(c->j, ACT_IDLE_KIND_CPUIDLE, "3:1"));
        /* Next time cpu4 goes straight to state disable: no error. */
        assert_int_equal(act_idle_apply(a, caps, 5), 0);

        /* A looser cap re-enables C6. */
        caps[3] = 500;
        assert_int_equal(act_idle_apply(a, caps, 5), 1);
        assert_string_equal(get(c, DISABLE(3, 2)), "0");
        assert_string_equal(get(c, DISABLE(4, 2)), "1");
        assert_int_equal(act_idle_release_all(a), 1);
        assert_string_equal(get(c, DISABLE(4, 2)), "0");
        assert_int_equal(journal_size(c->j), 0);
        assert_int_equal(act_idle_release_all(a), 0);
}

static void test_vm2_both_and_crash_restore(void **state) {
        Ctx *c = *state;
        char orig_qos[64], orig_dis[64];
        snprintf(orig_qos, sizeof(orig_qos), "%s", get(c, QOS(1)));
        snprintf(orig_dis, sizeof(orig_dis), "%s", get(c, DISABLE(1, 1)));
        {
                _cleanup_(act_idle_freep) ActIdle *a = NULL;
                assert_int_equal(act_idle_new(&(ActuatorEnv){ .sysfs_root = c->dir,
                                                              .journal = c->j,
                                                              .dry_run = false },
                                              &a),
                                 0);
                act_idle_set_mechanism(a, ACT_IDLE_PM_QOS | ACT_IDLE_STATE_DISABLE);
                int64_t caps[2] = { ACT_IDLE_NO_CAP, 0 };
                assert_int_equal(act_idle_apply(a, caps, 2), 1);
                assert_string_equal(get(c, QOS(1)), "n/a");
                assert_string_equal(get(c, DISABLE(1, 1)), "1"); /* haltpoll: 1 us > 0 */
                assert_string_equal(get(c, DISABLE(1, 0)), "0"); /* POLL stays */
                assert_string_equal(get(c, QOS(0)), orig_qos);
        }
        /* "Crash": the journal is reopened from disk by a new process. */
        c->j = journal_free(c->j);
        assert_int_equal(journal_open(c->journal, &c->j), 0);
        assert_int_equal(journal_size(c->j), 2);
        _cleanup_(act_idle_freep) ActIdle *r = NULL;
        assert_int_equal(
                act_idle_new(
                        &(ActuatorEnv){ .sysfs_root = c->dir, .journal = NULL, .dry_run = false },
                        &r),
                0);
        JournalRestoreStats st;
        restore_all(c, r, &st);
        assert_int_equal(st.restored, 2);
        assert_string_equal(get(c, QOS(1)), orig_qos);
        assert_string_equal(get(c, DISABLE(1, 1)), orig_dis);
}

static void test_dry_run(void **state) {
        Ctx *c = *state;
        _cleanup_(act_idle_freep) ActIdle *a = NULL;
        assert_int_equal(
                act_idle_new(
                        &(ActuatorEnv){ .sysfs_root = c->dir, .journal = c->j, .dry_run = true },
                        &a),
                0);
        act_idle_set_report(a, on_report, c);
        int64_t caps[2] = { 0, 0 };
        act_idle_set_mechanism(a, ACT_IDLE_PM_QOS | ACT_IDLE_STATE_DISABLE);
        assert_int_equal(act_idle_apply(a, caps, 2), 1);
        assert_int_equal(act_idle_set_global(a, 5), 1);
        assert_int_equal(c->dry_reports, 5); /* 2 PM QoS, 2 haltpoll states, global */
        assert_int_equal(c->reports, 0);
        assert_string_equal(get(c, QOS(0)), "0");
        assert_string_equal(get(c, DISABLE(1, 1)), "0");
        assert_int_equal(journal_size(c->j), 0);
}

static void test_global(void **state) {
        Ctx *c = *state;
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/dev", c->dir);
        assert_int_equal(mkdir(path, 0755), 0);
        strcat(path, "/cpu_dma_latency");
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fclose(f);

        _cleanup_(act_idle_freep) ActIdle *a = NULL;
        assert_int_equal(
                act_idle_new(
                        &(ActuatorEnv){ .sysfs_root = c->dir, .journal = c->j, .dry_run = false },
                        &a),
                0);
        assert_int_equal(act_idle_set_global(a, -1), 0);
        assert_int_equal(act_idle_set_global(a, 20), 1);
        assert_int_equal(act_idle_set_global(a, 20), 0);
        assert_int_equal(act_idle_set_global(a, 7), 1);
        int32_t v = -1;
        f = fopen(path, "re");
        assert_non_null(f);
        assert_int_equal(fread(&v, sizeof(v), 1, f), 1);
        assert_int_equal(fgetc(f), EOF); /* 4 bytes, overwritten in place */
        fclose(f);
        assert_int_equal(v, 7);
        assert_int_equal(act_idle_set_global(a, -1), 1);
        assert_int_equal(act_idle_set_global(a, -1), 0);
        assert_int_equal(journal_size(c->j), 0); /* never journaled */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_qos_pure),
                cmocka_unit_test_setup_teardown(test_apply_restore, setup_big32, teardown),
                cmocka_unit_test_setup_teardown(test_admin_change_wins, setup_big32, teardown),
                cmocka_unit_test_setup_teardown(test_disable_fallback, setup_big32, teardown),
                cmocka_unit_test_setup_teardown(test_vm2_both_and_crash_restore, setup_vm2,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_dry_run, setup_vm2, teardown),
                cmocka_unit_test_setup_teardown(test_global, setup_vm2, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
