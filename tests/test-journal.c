/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/journal.c with fake, in-memory objects: record and restore,
 * reverse order, a crash (free without restore, reopen), an administrator's
 * later change winning, objects that went away, records that cannot be
 * restored set aside in journal.failed, an empty journal, a journal cut
 * mid-line by a crash; and the hardening: symbolic links and unsafe
 * directories refused, a full disk (a write seam, and a real one-page
 * tmpfs in a private mount namespace), bad lines and invalid records
 * reported by line, hard links planted as its files refused, and 100k
 * objects in linear time.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpuset.h"
#include "journal.h"
#include "macro.h"

#define MAX_OBJECTS 16

typedef struct FakeObject {
        char key[32];
        char value[64];
        bool exists;
        bool fail_write;
} FakeObject;

typedef struct FakeWorld {
        FakeObject objects[MAX_OBJECTS];
        unsigned n_objects;
        char write_log[256]; /* keys written, in order, space separated */
} FakeWorld;

static FakeObject *fake_find(FakeWorld *w, const char *key) {
        for (unsigned i = 0; i < w->n_objects; i++)
                if (strcmp(w->objects[i].key, key) == 0)
                        return &w->objects[i];
        return NULL;
}

static FakeObject *fake_add(FakeWorld *w, const char *key, const char *value) {
        assert_true(w->n_objects < MAX_OBJECTS);
        FakeObject *o = &w->objects[w->n_objects++];
        snprintf(o->key, sizeof(o->key), "%s", key);
        snprintf(o->value, sizeof(o->value), "%s", value);
        o->exists = true;
        return o;
}

static int fake_read(const char *key, char **ret, void *userdata) {
        FakeObject *o = fake_find(userdata, key);
        if (!o || !o->exists)
                return -ENOENT;
        *ret = strdup(o->value);
        return *ret ? 0 : -ENOMEM;
}

static int fake_write(const char *key, const char *value, void *userdata) {
        FakeWorld *w = userdata;
        FakeObject *o = fake_find(w, key);
        if (!o || !o->exists)
                return -ENOENT;
        if (o->fail_write)
                return -EBUSY;
        snprintf(o->value, sizeof(o->value), "%s", value);
        strncat(w->write_log, key, sizeof(w->write_log) - strlen(w->write_log) - 2);
        strcat(w->write_log, " ");
        return 0;
}

static bool cpulist_equal(const char *a, const char *b) {
        CpuSet x, y;
        if (cpuset_parse(a, &x) < 0 || cpuset_parse(b, &y) < 0)
                return strcmp(a, b) == 0;
        return cpuset_equal(&x, &y);
}

typedef struct Fixture {
        char dir[64];
        FakeWorld world;
        JournalKindOps ops;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        assert_non_null(f);
        strcpy(f->dir, "/tmp/test-journal.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->ops = (JournalKindOps){ .kind = "fake",
                                   .read = fake_read,
                                   .write = fake_write,
                                   .equal = cpulist_equal,
                                   .userdata = &f->world };
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

/* What placed does: record, then change. */
static void change(Journal *j, FakeWorld *w, const char *key, const char *value) {
        FakeObject *o = fake_find(w, key);
        assert_non_null(o);
        assert_true(journal_record_change(j, "fake", key, o->value, value) >= 0);
        snprintf(o->value, sizeof(o->value), "%s", value);
}

static void test_record_and_restore(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        fake_add(&f->world, "a", "0-3");

        assert_int_equal(journal_record_change(j, "fake", "a", "0-3", "1"), 1);
        assert_int_equal(journal_record_change(j, "fake", "a", "1", "2"), 0);
        strcpy(fake_find(&f->world, "a")->value, "2");
        assert_true(journal_has(j, "fake", "a"));
        assert_false(journal_has(j, "fake", "b"));
        const char *orig, *applied;
        assert_int_equal(journal_get(j, "fake", "a", &orig, &applied), 0);
        assert_string_equal(orig, "0-3");
        assert_string_equal(applied, "2");
        assert_int_equal(journal_size(j), 1);

        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 1);
        assert_string_equal(fake_find(&f->world, "a")->value, "0-3");
        assert_int_equal(journal_size(j), 0);

        /* Idempotent: nothing left, nothing written. */
        f->world.write_log[0] = '\0';
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored + st.skipped + st.gone + st.failed, 0);
        assert_string_equal(f->world.write_log, "");
        journal_free(j);

        /* The file was truncated. */
        char path[128];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/journal", f->dir);
        assert_int_equal(stat(path, &sb), 0);
        assert_int_equal(sb.st_size, 0);
}

static void test_reverse_order(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        fake_add(&f->world, "a", "0");
        fake_add(&f->world, "b", "0");
        fake_add(&f->world, "c", "0");
        change(j, &f->world, "b", "1");
        change(j, &f->world, "a", "1");
        change(j, &f->world, "c", "1");
        change(j, &f->world, "b", "2"); /* a later change keeps b's place */

        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 3);
        assert_string_equal(f->world.write_log, "c a b ");
        journal_free(j);
}

static void test_crash_and_reopen(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        fake_add(&f->world, "x", "0-1");
        fake_add(&f->world, "y", "");
        change(j, &f->world, "x", "1");
        change(j, &f->world, "y", "0");
        change(j, &f->world, "x", "0");
        journal_free(j); /* the daemon dies: no restore */

        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 2);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 2);
        assert_string_equal(fake_find(&f->world, "x")->value, "0-1");
        assert_string_equal(fake_find(&f->world, "y")->value, ""); /* empty original */
        journal_free(j);

        /* A second "placed --restore" finds nothing. */
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);
}

static void test_admin_change_wins(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        fake_add(&f->world, "a", "0-3");
        fake_add(&f->world, "b", "0-3");
        change(j, &f->world, "a", "1");
        change(j, &f->world, "b", "2");
        strcpy(fake_find(&f->world, "a")->value, "3");   /* administrator */
        strcpy(fake_find(&f->world, "b")->value, "2-2"); /* same set, other spelling: ours */

        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.skipped, 1);
        assert_int_equal(st.restored, 1);
        assert_string_equal(fake_find(&f->world, "a")->value, "3");
        assert_string_equal(fake_find(&f->world, "b")->value, "0-3");
        assert_int_equal(journal_size(j), 0);
        journal_free(j);
}

static void test_object_gone(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        FakeObject *o = fake_add(&f->world, "t", "0-3");
        change(j, &f->world, "t", "1");
        o->exists = false;

        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.gone, 1);
        assert_int_equal(st.restored, 0);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);
}

static char *read_text(const char *dir, const char *name) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *fp = fopen(path, "re");
        if (!fp)
                return NULL;
        char *buf = calloc(1, 65536);
        assert_non_null(buf);
        size_t n = fread(buf, 1, 65535, fp);
        buf[n] = '\0';
        fclose(fp);
        return buf;
}

/* A record that cannot be restored is set aside, not kept: it must never block a start. */
static void test_failed_write_set_aside(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        fake_add(&f->world, "ok", "0-3");
        FakeObject *bad = fake_add(&f->world, "bad", "0-3");
        change(j, &f->world, "bad", "1");
        change(j, &f->world, "ok", "2");
        bad->fail_write = true;

        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), -EIO);
        assert_int_equal(st.restored, 1);
        assert_int_equal(st.failed, 1);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);

        /* Nothing left to block the next start; a person finds it in journal.failed. */
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);
        _cleanup_free_ char *failed = read_text(f->dir, "journal.failed");
        assert_non_null(failed);
        assert_non_null(strstr(failed, "ORIG\tfake\tbad\t0-3\nSET\tfake\tbad\t1\n"));
        assert_non_null(strstr(failed, "writing the original value back failed"));
}

static void test_kind_without_ops_set_aside(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_record_change(j, "other", "k", "a", "b"), 1);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), -EIO);
        assert_int_equal(st.failed, 1);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);
        _cleanup_free_ char *failed = read_text(f->dir, "journal.failed");
        assert_non_null(failed);
        assert_non_null(strstr(failed, "no actuator knows this kind"));
        assert_non_null(strstr(failed, "ORIG\tother\tk\ta\n"));
}

static void test_empty_journal(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 0);
        JournalRestoreStats st = { .restored = 99 };
        assert_int_equal(journal_restore(j, NULL, 0, &st), 0);
        assert_int_equal(st.restored, 0);
        journal_free(j);
        assert_null(journal_free(NULL));
}

static void write_file(const char *dir, const char *text) {
        char path[128];
        snprintf(path, sizeof(path), "%s/journal", dir);
        FILE *fp = fopen(path, "we");
        assert_non_null(fp);
        fputs(text, fp);
        assert_int_equal(fclose(fp), 0);
}

static void test_truncated_last_line(void **state) {
        Fixture *f = *state;
        fake_add(&f->world, "a", "5");
        fake_add(&f->world, "b", "6");
        /* a's SET line and b's ORIG line were cut by a crash mid-write, plus a
         * garbage line in between that must be skipped. */
        write_file(f->dir, "ORIG\tfake\ta\t0-3\nSET\tfake\ta\t5\nnonsense\nSET\tfake\ta\t7\n"
                           "ORIG\tfake\tb\t1");
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 1);
        assert_false(journal_has(j, "fake", "b"));
        const char *applied;
        assert_int_equal(journal_get(j, "fake", "a", NULL, &applied), 0);
        assert_string_equal(applied, "7");

        /* New records start on a fresh line, not glued to the cut one. */
        change(j, &f->world, "b", "9");
        strcpy(fake_find(&f->world, "a")->value, "7");
        journal_free(j);

        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 2);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 2);
        assert_string_equal(fake_find(&f->world, "a")->value, "0-3");
        assert_string_equal(fake_find(&f->world, "b")->value, "6");
        journal_free(j);
}

static void test_forget_and_invalid(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_record_change(j, "fake", "a", "0", "1"), 1);
        assert_int_equal(journal_forget(j, "fake", "a"), 1);
        assert_int_equal(journal_forget(j, "fake", "a"), 0);
        assert_int_equal(journal_record_change(j, "fake", "tab\tkey", "0", "1"), -EINVAL);
        assert_int_equal(journal_record_change(j, "fake", "k", "0\n", "1"), -EINVAL);
        assert_int_equal(journal_record_change(j, "fake", "", "0", "1"), -EINVAL);
        assert_int_equal(journal_get(j, "fake", "a", NULL, NULL), -ENOENT);
        journal_free(j);

        /* The FORGET survives a reopen. */
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);
}

static void test_lock(void **state) {
        Fixture *f = *state;
        char sub[128];
        snprintf(sub, sizeof(sub), "%s/run/placed", f->dir); /* created on demand */
        int fd1 = -1, fd2 = -1;
        assert_int_equal(journal_lock(sub, &fd1), 0);
        assert_true(fd1 >= 0);
        assert_int_equal(journal_lock(sub, &fd2), -EWOULDBLOCK);
        assert_int_equal(fd2, -1);
        close(fd1);
        assert_int_equal(journal_lock(sub, &fd2), 0);
        close(fd2);
}

static void test_compaction_keeps_state(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        fake_add(&f->world, "a", "0-3");
        char v[16];
        for (int i = 0; i < 5000; i++) {
                snprintf(v, sizeof(v), "%d", i % 4);
                change(j, &f->world, "a", v);
        }
        journal_free(j);

        char path[128];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/journal", f->dir);
        assert_int_equal(stat(path, &sb), 0);
        assert_true(sb.st_size < 5000 * 10); /* rewritten at least once */

        assert_int_equal(journal_open(f->dir, &j), 0);
        const char *orig, *applied;
        assert_int_equal(journal_get(j, "fake", "a", &orig, &applied), 0);
        assert_string_equal(orig, "0-3");
        assert_string_equal(applied, v);
        journal_free(j);
}

/* Defect 1: no file of the journal is ever followed through a symbolic link. */
static void test_symlinks_refused(void **state) {
        Fixture *f = *state;
        char target[128], link[256], lock_target[128];
        snprintf(target, sizeof(target), "%s/victim", f->dir);
        snprintf(lock_target, sizeof(lock_target), "%s/created-by-lock", f->dir);
        char sub[128];
        snprintf(sub, sizeof(sub), "%s/j", f->dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        FILE *fp = fopen(target, "we");
        assert_non_null(fp);
        fputs("precious\nlast line without newline", fp);
        fclose(fp);

        /* journal -> victim: neither opened, nor truncated, nor cut. */
        snprintf(link, sizeof(link), "%s/journal", sub);
        assert_int_equal(symlink(target, link), 0);
        Journal *j = NULL;
        int r = journal_open(sub, &j);
        assert_int_equal(r, -ELOOP);
        assert_non_null(journal_strerror(r));
        assert_null(j);
        struct stat sb;
        assert_int_equal(stat(target, &sb), 0);
        assert_int_equal(sb.st_size, strlen("precious\nlast line without newline"));

        /* lock -> a file that does not exist yet: not created. */
        snprintf(link, sizeof(link), "%s/lock", sub);
        assert_int_equal(symlink(lock_target, link), 0);
        int fd = -1;
        assert_int_equal(journal_lock(sub, &fd), -ELOOP);
        assert_int_equal(fd, -1);
        assert_int_equal(access(lock_target, F_OK), -1);

        /* journal.tmp -> victim: a rewrite replaces the link, never writes through it. */
        snprintf(link, sizeof(link), "%s/journal", sub);
        assert_int_equal(unlink(link), 0);
        snprintf(link, sizeof(link), "%s/journal.tmp", sub);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(journal_open(sub, &j), 0);
        fake_add(&f->world, "a", "0-3");
        char v[16];
        for (int i = 0; i < 5000; i++) { /* compaction rewrites through journal.tmp */
                snprintf(v, sizeof(v), "%d", i % 4);
                change(j, &f->world, "a", v);
        }
        journal_free(j);
        assert_int_equal(stat(target, &sb), 0);
        assert_int_equal(sb.st_size, strlen("precious\nlast line without newline"));
        assert_int_equal(lstat(link, &sb), -1); /* the rename consumed our own temp file */
}

/* Defect 1: a directory someone else owns or may write to is refused, with the reason. */
static void test_unsafe_dir_refused(void **state) {
        Fixture *f = *state;
        char sub[128];
        snprintf(sub, sizeof(sub), "%s/j", f->dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(chmod(sub, 0777), 0);
        Journal *j = NULL;
        int fd = -1;
        assert_int_equal(journal_open(sub, &j), -EACCES);
        assert_int_equal(journal_lock(sub, &fd), -EACCES);
        assert_non_null(strstr(journal_strerror(-EACCES), "write"));
        assert_int_equal(chmod(sub, 0775), 0);
        assert_int_equal(journal_open(sub, &j), -EACCES);
        assert_int_equal(chmod(sub, 0755), 0);
        if (geteuid() == 0) {
                assert_int_equal(chown(sub, 65534, 65534), 0); /* nobody */
                assert_int_equal(journal_open(sub, &j), -EPERM);
                assert_int_equal(journal_lock(sub, &fd), -EPERM);
                assert_int_equal(chown(sub, 0, 0), 0);
        }
        assert_int_equal(journal_open(sub, &j), 0);
        journal_free(j);
}

typedef struct Faults {
        long budget; /* bytes write() may still take; < 0: no limit */
        unsigned n_failed, n_recovered, n_bad_lines, n_set_aside, n_refused;
        unsigned last_line;
        bool last_set_aside;
        char last_why[128];
        char last_key[64];
} Faults;

static Faults faults;

static ssize_t short_write(int fd, const void *buf, size_t len) {
        if (faults.budget < 0)
                return write(fd, buf, len);
        if (faults.budget == 0) {
                errno = ENOSPC;
                return -1;
        }
        size_t n = MIN(len, (size_t)faults.budget);
        ssize_t w = write(fd, buf, n);
        if (w > 0)
                faults.budget -= w;
        return w;
}

static void on_report(const JournalReport *rep, void *userdata) {
        Faults *fl = userdata;
        switch (rep->event) {
        case JOURNAL_EVENT_WRITE_FAILED:
                fl->n_failed++;
                break;
        case JOURNAL_EVENT_RECOVERED:
                fl->n_recovered++;
                break;
        case JOURNAL_EVENT_BAD_LINE:
                fl->n_bad_lines++;
                fl->last_line = rep->line;
                fl->last_set_aside = rep->set_aside;
                break;
        case JOURNAL_EVENT_SET_ASIDE:
                fl->n_set_aside++;
                fl->last_line = rep->line;
                fl->last_set_aside = rep->set_aside;
                snprintf(fl->last_why, sizeof(fl->last_why), "%s", rep->why ? rep->why : "");
                break;
        case JOURNAL_EVENT_FILE_REFUSED:
                fl->n_refused++;
                snprintf(fl->last_key, sizeof(fl->last_key), "%s", rep->key);
                snprintf(fl->last_why, sizeof(fl->last_why), "%s", rep->why);
                break;
        }
}

static off_t file_size(const char *dir) {
        char path[128];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/journal", dir);
        assert_int_equal(stat(path, &sb), 0);
        return sb.st_size;
}

/* Defect 3: a full disk cuts a record; it is cut back, not glued onto, and the change is refused.
 */
static void test_full_disk_fault_injection(void **state) {
        Fixture *f = *state;
        faults = (Faults){ .budget = -1 };
        JournalOptions o = { .report = on_report, .userdata = &faults, .write = short_write };
        Journal *j = NULL;
        assert_int_equal(journal_open_full(f->dir, &o, &j), 0);
        fake_add(&f->world, "a", "0-3");
        fake_add(&f->world, "b", "0-3");
        fake_add(&f->world, "c", "0-3");
        change(j, &f->world, "a", "1");
        off_t whole = file_size(f->dir);

        faults.budget = 6; /* "SET\tfa" fits, the rest does not */
        assert_int_equal(journal_record_change(j, "fake", "b", "0-3", "2"), -ENOSPC);
        assert_int_equal(file_size(f->dir), whole); /* the fragment is cut off */
        assert_int_equal(journal_record_change(j, "fake", "b", "0-3", "2"), -ENOSPC);
        assert_int_equal(faults.n_failed, 1); /* told once, not per record */
        assert_int_equal(faults.n_recovered, 0);
        assert_int_equal(journal_write_error(j), -ENOSPC);

        faults.budget = -1;
        change(j, &f->world, "c", "2");
        assert_int_equal(faults.n_recovered, 1);
        assert_int_equal(faults.n_failed, 1);
        assert_int_equal(journal_write_error(j), 0);
        journal_free(j);

        /* Every record in the file is whole: a and c restore, b was never changed. */
        assert_int_equal(journal_open_full(f->dir, &o, &j), 0);
        assert_int_equal(faults.n_bad_lines, 0);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 2);
        assert_int_equal(st.gone + st.failed + st.skipped, 0);
        assert_string_equal(fake_find(&f->world, "a")->value, "0-3");
        assert_string_equal(fake_find(&f->world, "c")->value, "0-3");
        journal_free(j);
}

/*
 * Defect 3, for real: a tmpfs of two pages, one taken by a filler file, so the
 * journal's records fill the other until the kernel says ENOSPC mid-record.
 * Then the filler goes: the next record must be whole and restorable, not
 * glued onto the fragment of the failed one (which lost it before).
 */
static void test_full_disk_tmpfs(void **state) {
        Fixture *f = *state;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* A private mount namespace: the tmpfs vanishes with this child. */
                if (unshare(CLONE_NEWNS) < 0 ||
                    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mount("tmpfs", f->dir, "tmpfs", 0, "size=8k,mode=0700") < 0)
                        _exit(77);
                char filler[128];
                snprintf(filler, sizeof(filler), "%s/filler", f->dir);
                FILE *fp = fopen(filler, "we");
                if (!fp || fputs("one page\n", fp) < 0 || fclose(fp) != 0)
                        _exit(9);
                faults = (Faults){ .budget = -1 };
                JournalOptions o = { .report = on_report, .userdata = &faults };
                Journal *j = NULL;
                if (journal_open_full(f->dir, &o, &j) < 0)
                        _exit(10);
                char key[32];
                int r = 0, n_ok = 0;
                for (int i = 0; i < 1000 && r >= 0; i++) {
                        snprintf(key, sizeof(key), "task-%d", i);
                        r = journal_record_change(j, "fake", key, "0-1023", "0");
                        n_ok += r >= 0;
                }
                if (r != -ENOSPC || faults.n_failed != 1 || n_ok < 10)
                        _exit(11);
                if (journal_record_change(j, "fake", "a-key-longer-than-any-before", "0-1023",
                                          "0") != -ENOSPC ||
                    faults.n_failed != 1)
                        _exit(12);
                /* Room again: the next record is whole, and writing says it recovered. */
                if (unlink(filler) < 0)
                        _exit(13);
                if (journal_record_change(j, "fake", "x", "0", "1") != 1 || faults.n_recovered != 1)
                        _exit(14);
                journal_free(j);
                if (journal_open_full(f->dir, &o, &j) < 0)
                        _exit(15);
                if (faults.n_bad_lines != 0 || !journal_has(j, "fake", "x") ||
                    journal_size(j) < (unsigned)n_ok + 1)
                        _exit(16);
                journal_free(j);
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77) {
                print_message("skipped: cannot mount a tmpfs here (not root?)\n");
                return;
        }
        assert_int_equal(WEXITSTATUS(status), 0);
}

static bool reject_key_bad(const char *key, const char *value) {
        return strcmp(key, "bad") == 0 || strcmp(value, "evil") == 0;
}

static int fake_validate(const char *key, const char *value, const char **ret_why, void *userdata) {
        if (reject_key_bad(key, value)) {
                *ret_why = "not a fake key";
                return -EINVAL;
        }
        return 0;
}

/* Defects 2 and 4: bad lines and invalid records are reported by line, set aside, never block. */
static void test_bad_records_reported_and_set_aside(void **state) {
        Fixture *f = *state;
        fake_add(&f->world, "good", "5");
        FakeObject *bad = fake_add(&f->world, "bad", "5");
        write_file(f->dir, "ORIG\tfake\tgood\t0-3\nSET\tfake\tgood\t5\n"
                           "ORIG\tfoo\tbar\tbaz\tqux\n"
                           "ORIG\tfake\tbad\tevil\nSET\tfake\tbad\t5\n");
        faults = (Faults){ .budget = -1 };
        JournalOptions o = { .report = on_report, .userdata = &faults };
        Journal *j = NULL;
        assert_int_equal(journal_open_full(f->dir, &o, &j), 0);
        assert_int_equal(faults.n_bad_lines, 1);
        assert_int_equal(faults.last_line, 3);
        assert_int_equal(journal_size(j), 2);

        f->ops.validate = fake_validate;
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), -EIO);
        assert_int_equal(st.restored, 1);
        assert_int_equal(st.failed, 1);
        assert_int_equal(faults.n_set_aside, 1);
        assert_int_equal(faults.last_line, 4); /* bad's ORIG record */
        assert_string_equal(faults.last_why, "not a fake key");
        assert_string_equal(bad->value, "5"); /* "evil" was never written */
        assert_string_equal(fake_find(&f->world, "good")->value, "0-3");
        assert_int_equal(journal_size(j), 0);
        journal_free(j);

        _cleanup_free_ char *failed = read_text(f->dir, "journal.failed");
        assert_non_null(failed);
        assert_non_null(strstr(failed, "# journal line 3: "));
        assert_non_null(strstr(failed, "ORIG\tfoo\tbar\tbaz\tqux\n"));
        assert_non_null(strstr(failed, "# journal line 4: not a fake key"));
        assert_non_null(strstr(failed, "ORIG\tfake\tbad\tevil\n"));

        /* The next start finds an empty journal. */
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 0);
        journal_free(j);
}

/*
 * Issue 25: a hard link planted as DIR/journal, journal.failed or lock (any
 * file on the same file system) is never used: loading would cut the
 * victim's last line and a restore would empty it. The file keeps its bytes,
 * and the journal says which file has how many links.
 */
static void test_hard_links_refused(void **state) {
        Fixture *f = *state;
        static const char precious[] = "precious\nlast line without newline";
        char victim[128], sub[128], path[256];
        snprintf(victim, sizeof(victim), "%s/victim", f->dir);
        snprintf(sub, sizeof(sub), "%s/j", f->dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        FILE *fp = fopen(victim, "we");
        assert_non_null(fp);
        fputs(precious, fp);
        assert_int_equal(fclose(fp), 0);
        faults = (Faults){ .budget = -1 };
        JournalOptions o = { .report = on_report, .userdata = &faults };
        Journal *j = NULL;

        /* journal -> victim: refused before it is read or cut. */
        snprintf(path, sizeof(path), "%s/journal", sub);
        assert_int_equal(link(victim, path), 0);
        assert_int_equal(journal_open_full(sub, &o, &j), -EMLINK);
        assert_null(j);
        assert_non_null(strstr(journal_strerror(-EMLINK), "more than one link"));
        assert_int_equal(faults.n_refused, 1);
        assert_string_equal(faults.last_key, "journal");
        assert_string_equal(faults.last_why, "has 2 links");
        _cleanup_free_ char *text = read_text(f->dir, "victim");
        assert_string_equal(text, precious);

        /* journal.failed -> victim: what would be set aside is not appended to it. */
        assert_int_equal(unlink(path), 0);
        write_file(sub, "ORIG\tno-such-kind\tk\t1\nSET\tno-such-kind\tk\t2\nnot a record\n");
        snprintf(path, sizeof(path), "%s/journal.failed", sub);
        assert_int_equal(link(victim, path), 0);
        assert_int_equal(journal_open_full(sub, &o, &j), 0);
        assert_int_equal(faults.n_bad_lines, 1);
        assert_false(faults.last_set_aside);
        assert_int_equal(faults.n_refused, 2);
        assert_string_equal(faults.last_key, "journal.failed");
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), -EIO);
        assert_int_equal(faults.n_set_aside, 1);
        assert_false(faults.last_set_aside);
        assert_int_equal(journal_size(j), 1); /* kept in the journal, as nowhere else can */
        journal_free(j);
        free(text);
        text = read_text(f->dir, "victim");
        assert_string_equal(text, precious);

        /* lock -> victim: no fd to it is handed out. */
        snprintf(path, sizeof(path), "%s/lock", sub);
        assert_int_equal(link(victim, path), 0);
        int fd = -1;
        assert_int_equal(journal_lock(sub, &fd), -EMLINK);
        assert_int_equal(fd, -1);
        free(text);
        text = read_text(f->dir, "victim");
        assert_string_equal(text, precious);
}

/*
 * Issue 25: journal.failed keeps a record with a NUL byte whole (it was cut at
 * the NUL, so what followed it was lost), byte for byte as the journal held it.
 */
static void test_nul_record_set_aside_whole(void **state) {
        Fixture *f = *state;
        static const char journal[] = "ORIG\tfake\tgood\t0-3\n"
                                      "SET\tfake\tgood\t5\0 and what follows the NUL\n"
                                      "SET\tfake\tgood\t6\n";
        static const char kept[] = "# journal line 2: a NUL byte inside the record\n"
                                   "SET\tfake\tgood\t5\0 and what follows the NUL\n";
        char path[256];
        snprintf(path, sizeof(path), "%s/journal", f->dir);
        FILE *fp = fopen(path, "we");
        assert_non_null(fp);
        assert_int_equal(fwrite(journal, 1, sizeof(journal) - 1, fp), sizeof(journal) - 1);
        assert_int_equal(fclose(fp), 0);

        faults = (Faults){ .budget = -1 };
        JournalOptions o = { .report = on_report, .userdata = &faults };
        Journal *j = NULL;
        assert_int_equal(journal_open_full(f->dir, &o, &j), 0);
        assert_int_equal(faults.n_bad_lines, 1);
        assert_int_equal(faults.last_line, 2);
        assert_true(faults.last_set_aside);
        const char *applied;
        assert_int_equal(journal_get(j, "fake", "good", NULL, &applied), 0);
        assert_string_equal(applied, "6");
        journal_free(j);

        snprintf(path, sizeof(path), "%s/journal.failed", f->dir);
        fp = fopen(path, "re");
        assert_non_null(fp);
        char buf[512];
        size_t n = fread(buf, 1, sizeof(buf), fp);
        fclose(fp);
        assert_int_equal(n, sizeof(kept) - 1);
        assert_memory_equal(buf, kept, sizeof(kept) - 1);
}

static int all_gone_read(const char *key, char **ret, void *userdata) {
        return -ESRCH;
}

/* The CPU time this process has used: what other load on the host does not inflate. */
static uint64_t cpu_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Loading and restoring are linear: 100k objects take well under a second (quadratic: minutes). */
static void test_linear_100k(void **state) {
        Fixture *f = *state;
        char path[128];
        snprintf(path, sizeof(path), "%s/journal", f->dir);
        FILE *fp = fopen(path, "we");
        assert_non_null(fp);
        for (int i = 1; i <= 100000; i++)
                fprintf(fp, "ORIG\taffinity\t%d:%d\t0-1\nSET\taffinity\t%d:%d\t0\n", i, i * 7, i,
                        i * 7);
        for (int i = 1; i <= 100000; i += 2)
                fprintf(fp, "FORGET\taffinity\t%d:%d\n", i, i * 7);
        assert_int_equal(fclose(fp), 0);

        uint64_t start = cpu_ms();
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 50000);
        const char *applied;
        assert_int_equal(journal_get(j, "affinity", "100000:700000", NULL, &applied), 0);
        assert_string_equal(applied, "0");
        JournalKindOps ops = { .kind = "affinity", .read = all_gone_read, .write = fake_write };
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &ops, 1, &st), 0);
        assert_int_equal(st.gone, 50000);
        journal_free(j);
        uint64_t took = cpu_ms() - start;
        print_message("100k records loaded and restored in %" PRIu64 " ms of CPU\n", took);
        /* CPU time, not wall time, so a busy host does not count; 394 ms under ASan on a 2-vCPU
         * VM, and the quadratic code took minutes. */
        assert_true(took < 5000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_record_and_restore, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reverse_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crash_and_reopen, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admin_change_wins, setup, teardown),
                cmocka_unit_test_setup_teardown(test_object_gone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failed_write_set_aside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kind_without_ops_set_aside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_empty_journal, setup, teardown),
                cmocka_unit_test_setup_teardown(test_truncated_last_line, setup, teardown),
                cmocka_unit_test_setup_teardown(test_forget_and_invalid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compaction_keeps_state, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlinks_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unsafe_dir_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_full_disk_fault_injection, setup, teardown),
                cmocka_unit_test_setup_teardown(test_full_disk_tmpfs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_records_reported_and_set_aside, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_hard_links_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_nul_record_set_aside_whole, setup, teardown),
                cmocka_unit_test_setup_teardown(test_linear_100k, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
