/* SPDX-License-Identifier: MIT */
/*
 * Live test for lib/act-cpuset.c on a real cgroup v2 hierarchy with the
 * cpuset controller (the path every systemd host takes): under the v2 mount
 * found in /proc/self/mountinfo, a parent cgroup with cpuset enabled for its
 * children and a child holding a task. Checked against the kernel:
 *  - set and exact restore: an explicit cpuset.cpus comes back as the same
 *    text (by the journal, as placed --restore after a crash); an inherited
 *    (empty) one comes back empty where the kernel lets a cgroup with tasks
 *    be emptied, else (6.1, 6.12) as the parent's effective CPUs, and only
 *    then, by release and by the journal alike; the task inside follows
 *    each change;
 *  - the parent's effective CPUs are respected: a wish is clamped to them,
 *    one outside them is refused and nothing is written or journaled;
 *  - an administrator's later change wins: neither release nor restore
 *    writes over it.
 *
 * Skips (77, saying why) without root, without a cgroup v2 mount, or when
 * the cpuset controller is not available or not enabled at the v2 root (it
 * is bound to cgroup v1 on our development machines; make check-kernels
 * runs this inside qemu, where it is enabled). The cgroups and the task are
 * removed at the end, also when a test fails (teardown, and atexit()).
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
static char parent_name[64]; /* relative to mount_dir */
static char child_name[128];
static char parent_dir[512];
static char child_dir[512];
static char jdir[64];
static CpuSet root_cpus; /* the v2 root's effective CPUs: at least two */
static pid_t task = -1;

static int write_file(const char *dir, const char *file, const char *value) {
        char path[600];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        fputs(value, f);
        return fclose(f) == 0 ? 0 : -errno;
}

/* The first line of DIR/FILE without its newline ("" when empty); NULL if unreadable. */
static char *read_line(const char *dir, const char *file) {
        char path[600], *line = NULL;
        size_t n = 0;
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        ssize_t len = getline(&line, &n, f);
        fclose(f);
        if (len < 0) {
                free(line);
                return strdup("");
        }
        while (len > 0 && line[len - 1] == '\n')
                line[--len] = '\0';
        return line;
}

static bool word_in(const char *list, const char *word) {
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
                if (strcmp(w, word) == 0)
                        return true;
        return false;
}

static void remove_cgroup(const char *dir) {
        for (int i = 0; i < 50 && rmdir(dir) < 0 && errno == EBUSY; i++)
                usleep(20000); /* a killed task leaves its cgroup asynchronously */
}

static void cleanup(void) {
        if (task > 0) {
                kill(task, SIGKILL);
                waitpid(task, NULL, 0);
                task = -1;
        }
        if (child_dir[0]) {
                remove_cgroup(child_dir);
                child_dir[0] = '\0';
        }
        if (parent_dir[0]) {
                remove_cgroup(parent_dir);
                parent_dir[0] = '\0';
        }
        if (jdir[0]) {
                char cmd[128];
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", jdir);
                (void)!system(cmd);
                jdir[0] = '\0';
        }
}

/* A parent with cpuset enabled for its children, a child, a task in the child, a journal dir. */
static int setup(void **state) {
        snprintf(parent_name, sizeof(parent_name), "placed-test-v2-%d", (int)getpid());
        snprintf(child_name, sizeof(child_name), "%s/child", parent_name);
        snprintf(parent_dir, sizeof(parent_dir), "%s/%s", mount_dir, parent_name);
        assert_int_equal(mkdir(parent_dir, 0755), 0);
        assert_int_equal(write_file(parent_dir, "cgroup.subtree_control", "+cpuset"), 0);
        snprintf(child_dir, sizeof(child_dir), "%s/%s", mount_dir, child_name);
        assert_int_equal(mkdir(child_dir, 0755), 0);

        task = fork();
        assert_true(task >= 0);
        if (task == 0) {
                for (;;)
                        pause();
        }
        char pid[32];
        snprintf(pid, sizeof(pid), "%d\n", (int)task);
        assert_int_equal(write_file(child_dir, "cgroup.procs", pid), 0);

        strcpy(jdir, "/tmp/test-cpuset-v2-live.XXXXXX");
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

static CpuSet effective_of(const char *dir) {
        char path[600];
        CpuSet s;
        snprintf(path, sizeof(path), "%s/cpuset.cpus.effective", dir);
        assert_int_equal(cpuset_read_file(path, &s), 0);
        return s;
}

static void assert_cpus_text(const char *dir, const char *want) {
        _cleanup_free_ char *now = NULL;
        assert_int_equal(act_cpuset_read_cpus(dir, &now), 0);
        assert_string_equal(now, want);
}

static void assert_sets_equal(const CpuSet *a, const CpuSet *b) {
        char x[256], y[256];
        assert_true(cpuset_format(a, x, sizeof(x)) >= 0);
        assert_true(cpuset_format(b, y, sizeof(y)) >= 0);
        assert_string_equal(x, y);
}

static ActCpuset *actuator(Journal *j) {
        ActCpuset *a = NULL;
        ActCpusetOptions o = { .cgroup_root = mount_dir, .journal = j };
        assert_int_equal(act_cpuset_new(&o, &a), 0);
        assert_int_equal(act_cpuset_version(a), CGROUP_VERSION_2);
        return a;
}

/* Confines the child to the root's last CPU; the task follows; a second apply writes nothing. */
static CpuSet confine_to_last(ActCpuset *a) {
        CpuSet want, applied, got;
        CpusetResult res;
        cpuset_zero(&want);
        cpuset_set(&want, cpuset_last(&root_cpus));
        assert_int_equal(act_cpuset_apply(a, child_name, &want, &res, &applied), 1);
        assert_int_equal(res, CPUSET_SET);
        assert_sets_equal(&applied, &want);
        got = effective_of(child_dir);
        assert_sets_equal(&got, &want);
        got = affinity_of(task);
        assert_sets_equal(&got, &want);
        assert_int_equal(act_cpuset_apply(a, child_name, &want, &res, NULL), 0);
        assert_int_equal(res, CPUSET_UNCHANGED);
        return want;
}

/*
 * An inherited (empty) cpuset.cpus given back: empty again or, only where the
 * kernel refuses to empty a cgroup with tasks, the parent's effective CPUs;
 * the task may run on all CPUs again.
 */
static void assert_inherit_back(void) {
        _cleanup_free_ char *now = NULL, *parent_text = NULL;
        assert_int_equal(act_cpuset_read_cpus(child_dir, &now), 0);
        if (now[0] != '\0') {
                CpuSet parent_eff = effective_of(parent_dir);
                assert_int_equal(cpuset_to_string(&parent_eff, &parent_text), 0);
                assert_string_equal(now, parent_text);
                int r = write_file(child_dir, "cpuset.cpus", "\n");
                print_message("inherit came back as \"%s\": emptying it by hand: %s\n", now,
                              strerror(-r));
                assert_int_equal(r, -ENOSPC); /* the kernel refuses, so the fallback */
        }
        CpuSet got = affinity_of(task);
        assert_sets_equal(&got, &root_cpus);
}

/*
 * Inherited (empty) cpuset.cpus, released by the running daemon: empty
 * again, or, only where the kernel refuses to empty a cgroup with tasks,
 * the parent's effective CPUs.
 */
static void test_v2_inherit_restored_by_release(void **state) {
        Journal *j = NULL;
        assert_cpus_text(child_dir, "");
        assert_int_equal(journal_open(jdir, &j), 0);
        ActCpuset *a = actuator(j);
        confine_to_last(a);

        assert_int_equal(act_cpuset_release(a, child_name), 1);
        assert_inherit_back();
        CpuSet got = effective_of(child_dir);
        assert_sets_equal(&got, &root_cpus);
        assert_int_equal(journal_size(j), 0);
        assert_int_equal(act_cpuset_release(a, child_name), 0); /* nothing left to do */
        act_cpuset_free(a);
        journal_free(j);
}

/*
 * Inherited (empty) cpuset.cpus, restored from the journal after a crash
 * ("placed --restore"): as by release, empty again or, only where the kernel
 * refuses that, the parent's effective CPUs; the task gets all CPUs back
 * and a second restore has nothing left to do.
 */
static void test_v2_inherit_restored_by_journal(void **state) {
        Journal *j = NULL;
        assert_cpus_text(child_dir, "");
        assert_int_equal(journal_open(jdir, &j), 0);
        ActCpuset *a = actuator(j);
        confine_to_last(a);

        act_cpuset_free(a); /* the crash: nothing released */
        journal_free(j);
        assert_int_equal(journal_open(jdir, &j), 0);
        JournalKindOps ops;
        act_cpuset_kind_ops(&ops);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &ops, 1, &st), 0);
        assert_int_equal(st.restored, 1);
        assert_int_equal(journal_size(j), 0);
        assert_inherit_back();
        assert_int_equal(journal_restore(j, &ops, 1, &st), 0);
        assert_int_equal(st.restored, 0);
        journal_free(j);
}

/* An explicit value, restored from the journal after a crash: the same text. */
static void test_v2_explicit_restored_by_journal(void **state) {
        _cleanup_free_ char *explicit = NULL;
        assert_int_equal(cpuset_to_string(&root_cpus, &explicit), 0);
        assert_int_equal(write_file(child_dir, "cpuset.cpus", explicit), 0); /* the admin's */
        assert_cpus_text(child_dir, explicit);
        Journal *j = NULL;
        assert_int_equal(journal_open(jdir, &j), 0);
        ActCpuset *a = actuator(j);
        confine_to_last(a);

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
        assert_cpus_text(child_dir, explicit);
        CpuSet got = affinity_of(task);
        assert_sets_equal(&got, &root_cpus);
}

/*
 * The parent confined to one CPU: a wish it already gives is no write, one
 * outside it is refused, a wider one is clamped to it.
 */
static void test_v2_parent_effective_respected(void **state) {
        CpuSet first, want, applied, got;
        CpusetResult res;
        char first_text[32];
        _cleanup_free_ char *all_text = NULL;
        cpuset_zero(&first);
        cpuset_set(&first, cpuset_first(&root_cpus));
        assert_true(cpuset_format(&first, first_text, sizeof(first_text)) >= 0);
        assert_int_equal(write_file(parent_dir, "cpuset.cpus", first_text), 0);
        got = effective_of(child_dir); /* inherits the parent's one CPU */
        assert_sets_equal(&got, &first);

        Journal *j = NULL;
        assert_int_equal(journal_open(jdir, &j), 0);
        ActCpuset *a = actuator(j);

        /* The inherited set already is the wish: nothing written. */
        assert_int_equal(act_cpuset_apply(a, child_name, &first, &res, NULL), 0);
        assert_int_equal(res, CPUSET_UNCHANGED);
        assert_cpus_text(child_dir, "");

        /* Outside the parent's effective CPUs: refused, nothing written or journaled. */
        cpuset_zero(&want);
        cpuset_set(&want, cpuset_last(&root_cpus));
        assert_int_equal(act_cpuset_apply(a, child_name, &want, &res, NULL), -EINVAL);
        assert_cpus_text(child_dir, "");
        assert_int_equal(journal_size(j), 0);

        /* The child asks for all CPUs itself (v2 lets it; it gets the parent's
         * one): a wish for all is clamped to the parent's one and written. */
        assert_int_equal(cpuset_to_string(&root_cpus, &all_text), 0);
        assert_int_equal(write_file(child_dir, "cpuset.cpus", all_text), 0);
        assert_cpus_text(child_dir, all_text);
        assert_int_equal(act_cpuset_apply(a, child_name, &root_cpus, &res, &applied), 1);
        assert_int_equal(res, CPUSET_SET);
        assert_sets_equal(&applied, &first);
        assert_cpus_text(child_dir, first_text);
        got = affinity_of(task);
        assert_sets_equal(&got, &first);

        assert_int_equal(act_cpuset_release(a, child_name), 1);
        assert_cpus_text(child_dir, all_text);
        act_cpuset_free(a);
        journal_free(j);
}

/* An administrator changes the child after placed: release and restore leave it alone. */
static void test_v2_admin_change_wins(void **state) {
        Journal *j = NULL;
        assert_int_equal(journal_open(jdir, &j), 0);
        ActCpuset *a = actuator(j);
        confine_to_last(a);
        char admin[32];
        snprintf(admin, sizeof(admin), "%d", cpuset_first(&root_cpus));
        assert_int_equal(write_file(child_dir, "cpuset.cpus", admin), 0);

        /* The daemon path: released without a write, record dropped. */
        assert_int_equal(act_cpuset_release(a, child_name), 0);
        assert_cpus_text(child_dir, admin);
        assert_int_equal(journal_size(j), 0);

        /* The crash path: confined again, the admin changes it, --restore skips it. */
        confine_to_last(a);
        assert_int_equal(write_file(child_dir, "cpuset.cpus", admin), 0);
        act_cpuset_free(a);
        journal_free(j);
        assert_int_equal(journal_open(jdir, &j), 0);
        JournalKindOps ops;
        act_cpuset_kind_ops(&ops);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &ops, 1, &st), 0);
        assert_int_equal(st.skipped, 1);
        assert_int_equal(st.restored, 0);
        journal_free(j);
        assert_cpus_text(child_dir, admin);
        CpuSet want, got = affinity_of(task);
        cpuset_zero(&want);
        cpuset_set(&want, cpuset_first(&root_cpus));
        assert_sets_equal(&got, &want);
}

int main(void) {
        if (geteuid() != 0) {
                printf("skipped: needs root to create cgroups\n");
                return 77;
        }
        _cleanup_free_ char *mnt = NULL, *controllers = NULL, *enabled = NULL;
        if (act_cpuset_find_mount("/proc", CGROUP_VERSION_2, &mnt) < 0) {
                printf("skipped: no cgroup v2 hierarchy mounted\n");
                return 77;
        }
        snprintf(mount_dir, sizeof(mount_dir), "%s", mnt);
        controllers = read_line(mount_dir, "cgroup.controllers");
        if (!controllers || !word_in(controllers, "cpuset")) {
                printf("skipped: the cpuset controller is not available in the cgroup v2 "
                       "hierarchy at %s (controllers: \"%s\"; bound to cgroup v1?)\n",
                       mount_dir, controllers ? controllers : "unreadable");
                return 77;
        }
        enabled = read_line(mount_dir, "cgroup.subtree_control");
        if (!enabled || !word_in(enabled, "cpuset")) {
                printf("skipped: the cpuset controller is not enabled in "
                       "%s/cgroup.subtree_control\n",
                       mount_dir);
                return 77;
        }
        char path[300];
        snprintf(path, sizeof(path), "%s/cpuset.cpus.effective", mount_dir);
        if (cpuset_read_file(path, &root_cpus) < 0 || cpuset_count(&root_cpus) < 2) {
                printf("skipped: the v2 root cpuset needs at least two CPUs\n");
                return 77;
        }
        atexit(cleanup);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_v2_inherit_restored_by_release, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v2_inherit_restored_by_journal, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v2_explicit_restored_by_journal, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v2_parent_effective_respected, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_v2_admin_change_wins, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
