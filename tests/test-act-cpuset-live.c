/* SPDX-License-Identifier: MIT */
/*
 * Live test for lib/act-cpuset.c on the machine's real cgroup v1 cpuset
 * hierarchy (found in /proc/self/mountinfo): a child cpuset is created,
 * placed confines it (a task inside follows), the journal restores the
 * exact previous value, an administrator's later change wins. The child
 * cpuset and its task are removed at the end, also when a test fails
 * (teardown, and an atexit() handler for aborts).
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "act-cpuset.h"
#include "journal.h"
#include "macro.h"

static char mount_dir[256];
static char cg_name[64];
static char cg_dir[512];
static char jdir[64];
static pid_t child = -1;

static int write_file(const char *dir, const char *file, const char *value) {
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        fputs(value, f);
        return fclose(f) == 0 ? 0 : -errno;
}

static void cleanup(void) {
        if (child > 0) {
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                child = -1;
        }
        if (cg_dir[0]) {
                for (int i = 0; i < 50 && rmdir(cg_dir) < 0 && errno == EBUSY; i++)
                        usleep(20000); /* the killed task leaves the cgroup asynchronously */
                cg_dir[0] = '\0';
        }
        if (jdir[0]) {
                char cmd[128];
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", jdir);
                (void)!system(cmd);
                jdir[0] = '\0';
        }
}

static int setup(void **state) {
        snprintf(cg_name, sizeof(cg_name), "placed-test-%d", (int)getpid());
        snprintf(cg_dir, sizeof(cg_dir), "%s/%s", mount_dir, cg_name);
        assert_int_equal(mkdir(cg_dir, 0755), 0);
        _cleanup_free_ char *mems = NULL, *cpus = NULL;
        char path[300];
        snprintf(path, sizeof(path), "%s/cpuset.mems", mount_dir);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        size_t n = 0;
        assert_true(getline(&mems, &n, f) > 0);
        fclose(f);
        assert_int_equal(write_file(cg_dir, "cpuset.mems", mems), 0);
        assert_int_equal(act_cpuset_read_cpus(mount_dir, &cpus), 0);
        assert_int_equal(write_file(cg_dir, "cpuset.cpus", cpus), 0); /* the "admin's" value */
        strcpy(jdir, "/tmp/test-cpuset-live.XXXXXX");
        assert_non_null(mkdtemp(jdir));
        return 0;
}

static int teardown(void **state) {
        cleanup();
        return 0;
}

static CpuSet affinity_of(pid_t pid) {
        cpu_set_t set;
        CPU_ZERO(&set);
        assert_int_equal(sched_getaffinity(pid, sizeof(set), &set), 0);
        CpuSet s;
        cpuset_zero(&s);
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set))
                        cpuset_set(&s, c);
        return s;
}

static void test_v1_apply_restore(void **state) {
        _cleanup_free_ char *before = NULL, *now = NULL, *after = NULL;
        assert_int_equal(act_cpuset_read_cpus(cg_dir, &before), 0);
        CpuSet parent;
        char path[300];
        snprintf(path, sizeof(path), "%s/cpuset.effective_cpus", mount_dir);
        assert_int_equal(cpuset_read_file(path, &parent), 0);

        /* A task inside the cpuset follows it. */
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                for (;;)
                        pause();
        }
        char pid[32];
        snprintf(pid, sizeof(pid), "%d\n", (int)child);
        assert_int_equal(write_file(cg_dir, "tasks", pid), 0);

        Journal *j = NULL;
        ActCpuset *a = NULL;
        assert_int_equal(journal_open(jdir, &j), 0);
        ActCpusetOptions o = { .cgroup_root = mount_dir, .journal = j };
        assert_int_equal(act_cpuset_new(&o, &a), 0);
        assert_int_equal(act_cpuset_version(a), CGROUP_VERSION_1);

        CpuSet want;
        cpuset_zero(&want);
        cpuset_set(&want, cpuset_last(&parent));
        CpusetResult res;
        assert_int_equal(act_cpuset_apply(a, cg_name, &want, &res, NULL), 1);
        assert_int_equal(act_cpuset_read_cpus(cg_dir, &now), 0);
        CpuSet got;
        assert_int_equal(cpuset_parse(now, &got), 0);
        assert_true(cpuset_equal(&got, &want));
        CpuSet aff = affinity_of(child);
        assert_true(cpuset_equal(&aff, &want));
        assert_int_equal(act_cpuset_apply(a, cg_name, &want, &res, NULL), 0);
        assert_int_equal(res, CPUSET_UNCHANGED);

        /* Crash: the daemon is gone; "placed --restore" replays the journal. */
        act_cpuset_free(a);
        journal_free(j);
        assert_int_equal(journal_open(jdir, &j), 0);
        JournalKindOps ops;
        act_cpuset_kind_ops(&ops);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &ops, 1, &st), 0);
        assert_int_equal(st.restored, 1);
        journal_free(j);
        assert_int_equal(act_cpuset_read_cpus(cg_dir, &after), 0);
        assert_string_equal(after, before);
        aff = affinity_of(child);
        assert_true(cpuset_equal(&aff, &parent));
}

static void test_v1_admin_change_wins(void **state) {
        Journal *j = NULL;
        ActCpuset *a = NULL;
        assert_int_equal(journal_open(jdir, &j), 0);
        ActCpusetOptions o = { .cgroup_root = mount_dir, .journal = j };
        assert_int_equal(act_cpuset_new(&o, &a), 0);
        CpuSet parent, want;
        _cleanup_free_ char *now = NULL;
        assert_int_equal(cpuset_parse("0-1", &parent), 0);
        cpuset_zero(&want);
        cpuset_set(&want, 1);
        assert_int_equal(act_cpuset_apply(a, cg_name, &want, NULL, NULL), 1);
        assert_int_equal(write_file(cg_dir, "cpuset.cpus", "0"), 0); /* the admin */

        JournalKindOps ops;
        act_cpuset_kind_ops(&ops);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &ops, 1, &st), 0);
        assert_int_equal(st.skipped, 1);
        assert_int_equal(act_cpuset_read_cpus(cg_dir, &now), 0);
        assert_string_equal(now, "0");
        act_cpuset_free(a);
        journal_free(j);
}

int main(void) {
        if (geteuid() != 0) {
                printf("skipped: needs root to create cpusets\n");
                return 77;
        }
        _cleanup_free_ char *mnt = NULL;
        if (act_cpuset_find_mount("/proc", CGROUP_VERSION_1, &mnt) < 0) {
                printf("skipped: no cgroup v1 cpuset hierarchy mounted\n");
                return 77;
        }
        snprintf(mount_dir, sizeof(mount_dir), "%s", mnt);
        CpuSet online;
        char path[300];
        snprintf(path, sizeof(path), "%s/cpuset.effective_cpus", mount_dir);
        if (cpuset_read_file(path, &online) < 0 || cpuset_count(&online) < 2) {
                printf("skipped: the root cpuset needs at least two CPUs\n");
                return 77;
        }
        atexit(cleanup);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_v1_apply_restore, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v1_admin_change_wins, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
