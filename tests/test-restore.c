/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/restore.c on fixture trees: a journal file as a crashed
 * placed leaves it, over a copy of a 2-CPU sysfs (tests/fixtures/idle-vm2),
 * a cgroup v2 tree (tests/fixtures/cgroup-v2) and a procfs whose mountinfo
 * names that tree. Restore writes the originals back where they still hold
 * what placed set, leaves an owner's later change alone, and refuses
 * tampered records with a report naming each and why, without writing them.
 */
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

#include "journal.h"
#include "macro.h"
#include "restore.h"

typedef struct Tree {
        char dir[64];
        char sys[128], proc[128], cgroup[128], journal[128];
        char reports[4096]; /* "KEY: WHY\n" for each record set aside */
} Tree;

static void run(const char *fmt, ...) {
        char cmd[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        assert_int_equal(system(cmd), 0);
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static void read_all(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        size_t n = fread(buf, 1, size - 1, f);
        buf[n] = '\0';
        fclose(f);
}

/* The first line of a file, without its newline. */
static void read_file(const char *path, char *buf, size_t size) {
        read_all(path, buf, size);
        buf[strcspn(buf, "\n")] = '\0';
}

static int setup(void **state) {
        Tree *t = calloc(1, sizeof(Tree));
        const char *src = getenv("PLACED_SRC") ? getenv("PLACED_SRC") : ".";
        char path[512];
        strcpy(t->dir, "/tmp/placed-restore.XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        snprintf(t->sys, sizeof(t->sys), "%s/sys", t->dir);
        snprintf(t->proc, sizeof(t->proc), "%s/proc", t->dir);
        snprintf(t->cgroup, sizeof(t->cgroup), "%s/cgroup", t->dir);
        snprintf(t->journal, sizeof(t->journal), "%s/journal", t->dir);
        run("cp -r '%s/tests/fixtures/idle-vm2' '%s'", src, t->sys);
        run("cp -r '%s/tests/fixtures/cgroup-v2' '%s'", src, t->cgroup);
        run("mkdir -p '%s/self' && mkdir -m 0700 '%s'", t->proc, t->journal);
        snprintf(path, sizeof(path), "%s/self/mountinfo", t->proc);
        char mountinfo[512];
        snprintf(mountinfo, sizeof(mountinfo),
                 "30 1 0:26 / %s rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw\n", t->cgroup);
        write_file(path, mountinfo);
        *state = t;
        return 0;
}

static int teardown(void **state) {
        Tree *t = *state;
        run("rm -rf '%s'", t->dir);
        free(t);
        return 0;
}

static void on_report(const JournalReport *rep, void *userdata) {
        Tree *t = userdata;
        size_t n = strlen(t->reports);
        if (rep->event == JOURNAL_EVENT_SET_ASIDE)
                snprintf(t->reports + n, sizeof(t->reports) - n, "%s %s: %s\n", rep->kind, rep->key,
                         rep->why ? rep->why : "?");
}

static void sysfs_qos(const Tree *t, int cpu, char *path, size_t size) {
        snprintf(path, size, "%s/sys/devices/system/cpu/cpu%d/power/pm_qos_resume_latency_us",
                 t->sys, cpu);
}

static void test_restore_fixture(void **state) {
        Tree *t = *state;
        char qos0[512], qos1[512], cpus[512], journal[512], text[4096], buf[256];
        sysfs_qos(t, 0, qos0, sizeof(qos0));
        sysfs_qos(t, 1, qos1, sizeof(qos1));
        snprintf(cpus, sizeof(cpus), "%s/user.slice/cpuset.cpus", t->cgroup);

        /* What placed had set when it crashed, and one change an admin made since. */
        write_file(qos1, "20\n");
        write_file(qos0, "50\n"); /* placed set 10; the owner wrote 50 */
        write_file(cpus, "1\n");
        snprintf(text, sizeof(text),
                 "ORIG\tpm_qos\t1\t0\nSET\tpm_qos\t1\t20\n"
                 "ORIG\tpm_qos\t0\t0\nSET\tpm_qos\t0\t10\n"
                 "ORIG\tcpuset\t%s/user.slice\t0-1\nSET\tcpuset\t%s/user.slice\t1\n"
                 /* tampered: a path out of the cgroup tree, a CPU the machine lacks */
                 "ORIG\tcpuset\t%s/../escape\t0\nSET\tcpuset\t%s/../escape\t1\n"
                 "ORIG\tpm_qos\t7\t0\nSET\tpm_qos\t7\t5\n",
                 t->cgroup, t->cgroup, t->cgroup, t->cgroup);
        snprintf(journal, sizeof(journal), "%s/journal", t->journal);
        write_file(journal, text);

        Journal *j;
        JournalOptions o = { .report = on_report, .userdata = t };
        assert_int_equal(journal_open_full(t->journal, &o, &j), 0);
        assert_int_equal(journal_size(j), 5);
        JournalRestoreStats st = { 0 };
        assert_int_equal(restore_journal(j, t->proc, t->sys, &st), 0);
        assert_int_equal(st.restored, 2);
        assert_int_equal(st.skipped, 1);
        assert_int_equal(st.failed, 2);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);

        read_file(qos1, buf, sizeof(buf));
        assert_string_equal(buf, "0");
        read_file(qos0, buf, sizeof(buf));
        assert_string_equal(buf, "50"); /* the owner's change wins */
        read_file(cpus, buf, sizeof(buf));
        assert_string_equal(buf, "0-1");

        /* Each tampered record is named, with why, and kept for a person. */
        snprintf(text, sizeof(text),
                 "cpuset %s/../escape: the key's path has a \".\" or \"..\" component\n",
                 t->cgroup);
        assert_non_null(strstr(t->reports, text));
        assert_non_null(strstr(t->reports, "pm_qos 7: the key is not a CPU this machine has\n"));
        snprintf(journal, sizeof(journal), "%s/journal.failed", t->journal);
        read_all(journal, text, sizeof(text));
        assert_non_null(strstr(text, "escape"));
        assert_non_null(strstr(text, "pm_qos\t7"));
        snprintf(journal, sizeof(journal), "%s/escape", t->dir);
        assert_int_equal(access(journal, F_OK), -1); /* nothing written there */
}

/* A cpuset key outside every cgroup mount is refused, however plausible. */
static void test_restore_outside_mount(void **state) {
        Tree *t = *state;
        char text[1024];
        snprintf(text, sizeof(text),
                 "ORIG\tcpuset\t%s/user.slice\t0\nSET\tcpuset\t%s/user.slice\t1\n", t->sys, t->sys);
        char journal[512];
        snprintf(journal, sizeof(journal), "%s/journal", t->journal);
        write_file(journal, text);

        Journal *j;
        JournalOptions o = { .report = on_report, .userdata = t };
        assert_int_equal(journal_open_full(t->journal, &o, &j), 0);
        JournalRestoreStats st = { 0 };
        assert_int_equal(restore_journal(j, t->proc, t->sys, &st), 0);
        assert_int_equal(st.failed, 1);
        assert_int_equal(st.restored, 0);
        journal_free(j);
        assert_non_null(strstr(t->reports, "the key is not a cgroup below a cgroup mount"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_restore_fixture, setup, teardown),
                cmocka_unit_test_setup_teardown(test_restore_outside_mount, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
