/* SPDX-License-Identifier: MIT */
/*
 * Live test of lib/act-idle.c (root): on the real machine, cap CPU 1's exit
 * latency through its PM QoS file and by disabling its deepest idle state
 * (haltpoll on the development VM) — through libcpupower — check the files,
 * restore through the journal and check that the exact original text is
 * back; then the same through act_idle_release_all(), and a machine-wide
 * request held on /dev/cpu_dma_latency and dropped by closing it.
 *
 * The original values of every file touched are recorded before the first
 * test; each test's teardown, the group teardown and an atexit() handler
 * write them back if they differ, so a failed assertion leaves nothing
 * changed. The last test asserts that nothing is.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "act-idle.h"
#include "idle.h"
#include "journal.h"
#include "macro.h"

#define CPU     1u
#define CPU_DIR "/sys/devices/system/cpu/"

typedef struct Saved {
        char path[PATH_MAX];
        char text[64];
} Saved;

static Saved saved[2 + 2 * IDLE_MAX_STATES];
static unsigned n_saved;
static unsigned deep_state; /* CPU 1's deepest state with a non-zero exit latency */
static char journal_dir[PATH_MAX];

static int read_text(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        if (!fgets(buf, (int)size, f))
                buf[0] = '\0';
        fclose(f);
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

static int write_text(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, text, strlen(text));
        int r = n == (ssize_t)strlen(text) ? 0 : -errno;
        close(fd);
        return r;
}

static void save(const char *path) {
        Saved *s = &saved[n_saved];
        snprintf(s->path, sizeof(s->path), "%s", path);
        if (read_text(path, s->text, sizeof(s->text)) == 0)
                n_saved++;
}

/* Return: how many files differed from their original (and were written back). */
static unsigned restore_originals(void) {
        unsigned changed = 0;
        for (unsigned i = 0; i < n_saved; i++) {
                char now[64];
                if (read_text(saved[i].path, now, sizeof(now)) == 0 &&
                    strcmp(now, saved[i].text) != 0) {
                        changed++;
                        if (write_text(saved[i].path, saved[i].text) < 0)
                                fprintf(stderr, "could not restore %s\n", saved[i].path);
                }
        }
        return changed;
}

static void restore_at_exit(void) {
        if (restore_originals() > 0)
                fprintf(stderr, "restored values left changed\n");
}

static const char *saved_text(const char *path) {
        for (unsigned i = 0; i < n_saved; i++)
                if (strcmp(saved[i].path, path) == 0)
                        return saved[i].text;
        return NULL;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/* Restores by hand and starts the next test with an empty journal. */
static int test_teardown(void **state) {
        restore_originals();
        nftw(journal_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
        return mkdir(journal_dir, 0700) < 0 ? -1 : 0;
}

static int group_teardown(void **state) {
        restore_originals();
        nftw(journal_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static char qos_path[] = CPU_DIR "cpu1/power/pm_qos_resume_latency_us";
static char disable_path[PATH_MAX];

static void test_apply_and_journal_restore(void **state) {
        _cleanup_(act_idle_freep) ActIdle *a = NULL;
        Journal *j = NULL;
        assert_int_equal(journal_open(journal_dir, &j), 0);
        assert_int_equal(
                act_idle_new(&(ActuatorEnv){ .sysfs_root = "/", .journal = j, .dry_run = false },
                             &a),
                0);
        act_idle_set_mechanism(a, ACT_IDLE_PM_QOS | ACT_IDLE_STATE_DISABLE);

        int64_t caps[CPU + 1] = { [0] = ACT_IDLE_NO_CAP, [CPU] = 0 };
        assert_int_equal(act_idle_apply(a, caps, CPU + 1), 1);
        char now[64];
        assert_int_equal(read_text(qos_path, now, sizeof(now)), 0);
        assert_string_equal(now, "n/a");
        assert_int_equal(read_text(disable_path, now, sizeof(now)), 0);
        assert_string_equal(now, "1");
        assert_int_equal(act_idle_apply(a, caps, CPU + 1), 0); /* nothing to do */

        JournalKindOps ops[ACT_IDLE_N_KINDS];
        act_idle_kind_ops(a, ops, ACT_IDLE_N_KINDS);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, ops, ACT_IDLE_N_KINDS, &st), 0);
        journal_free(j);
        assert_int_equal(st.restored, 2);
        assert_int_equal(read_text(qos_path, now, sizeof(now)), 0);
        assert_string_equal(now, saved_text(qos_path));
        assert_int_equal(read_text(disable_path, now, sizeof(now)), 0);
        assert_string_equal(now, saved_text(disable_path));
}

static void test_auto_and_release_all(void **state) {
        _cleanup_(act_idle_freep) ActIdle *a = NULL;
        Journal *j = NULL;
        assert_int_equal(journal_open(journal_dir, &j), 0);
        assert_int_equal(
                act_idle_new(&(ActuatorEnv){ .sysfs_root = "/", .journal = j, .dry_run = false },
                             &a),
                0);
        int64_t caps[CPU + 1] = { [0] = ACT_IDLE_NO_CAP, [CPU] = 50 };
        int r = act_idle_apply(a, caps, CPU + 1);
        char now[64];
        assert_int_equal(read_text(qos_path, now, sizeof(now)), 0);
        if (strcmp(saved_text(qos_path), "0") == 0) {
                assert_int_equal(r, 1);
                assert_string_equal(now, "50");
        }
        assert_int_equal(read_text(disable_path, now, sizeof(now)), 0);
        assert_string_equal(now, saved_text(disable_path)); /* AUTO: PM QoS only */
        assert_true(act_idle_release_all(a) >= 0);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);
        assert_int_equal(read_text(qos_path, now, sizeof(now)), 0);
        assert_string_equal(now, saved_text(qos_path));
}

static int32_t dma_read(void) {
        int fd = open("/dev/cpu_dma_latency", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        int32_t v = -1;
        assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
        close(fd);
        return v;
}

static void test_cpu_dma_latency(void **state) {
        if (access("/dev/cpu_dma_latency", F_OK) < 0)
                skip();
        int32_t before = dma_read();
        _cleanup_(act_idle_freep) ActIdle *a = NULL;
        assert_int_equal(
                act_idle_new(&(ActuatorEnv){ .sysfs_root = "/", .journal = NULL, .dry_run = false },
                             &a),
                0);
        assert_int_equal(act_idle_set_global(a, 3), 1);
        assert_true(dma_read() <= 3);
        assert_int_equal(act_idle_set_global(a, 3), 0);
        assert_int_equal(act_idle_set_global(a, -1), 1); /* closing releases it */
        assert_int_equal(dma_read(), before);
        assert_int_equal(act_idle_set_global(a, 2), 1);
        a = act_idle_free(a); /* so does freeing */
        assert_int_equal(dma_read(), before);
}

static void test_nothing_left_changed(void **state) {
        for (unsigned i = 0; i < n_saved; i++) {
                char now[64];
                assert_int_equal(read_text(saved[i].path, now, sizeof(now)), 0);
                assert_string_equal(now, saved[i].text);
        }
}

int main(void) {
        if (geteuid() != 0) {
                printf("needs root to write cpuidle and PM QoS files\n");
                return 77;
        }
        if (access(qos_path, W_OK) < 0 || idle_ops_pick("/") != &idle_ops_cpupower) {
                printf("CPU 1 has no writable PM QoS file or no cpuidle states\n");
                return 77;
        }
        int n = idle_ops_cpupower.state_count("/", CPU);
        for (int i = 0; i < n; i++) {
                IdleState st = { 0 };
                if (idle_ops_cpupower.read_info("/", CPU, (unsigned)i, &st) == 0 &&
                    st.exit_latency_us > 0)
                        deep_state = (unsigned)i;
        }
        if (deep_state == 0) {
                printf("CPU 1 has no idle state with an exit latency above 0\n");
                return 77;
        }
        snprintf(disable_path, sizeof(disable_path), CPU_DIR "cpu%u/cpuidle/state%u/disable", CPU,
                 deep_state);

        /* Record every original before anything can change. */
        for (unsigned cpu = 0; cpu <= CPU; cpu++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), CPU_DIR "cpu%u/power/pm_qos_resume_latency_us", cpu);
                save(path);
                for (int i = 0; i < n && i < IDLE_MAX_STATES; i++) {
                        snprintf(path, sizeof(path), CPU_DIR "cpu%u/cpuidle/state%d/disable", cpu,
                                 i);
                        save(path);
                }
        }
        if (!saved_text(qos_path) || !saved_text(disable_path)) {
                printf("could not read CPU 1's PM QoS or disable file\n");
                return 77;
        }
        atexit(restore_at_exit);
        snprintf(journal_dir, sizeof(journal_dir), "/tmp/placed-act-idle-live-XXXXXX");
        if (!mkdtemp(journal_dir))
                return 1;

        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(test_apply_and_journal_restore, test_teardown),
                cmocka_unit_test_teardown(test_auto_and_release_all, test_teardown),
                cmocka_unit_test_teardown(test_cpu_dma_latency, test_teardown),
                cmocka_unit_test(test_nothing_left_changed),
        };
        return cmocka_run_group_tests(tests, NULL, group_teardown);
}
