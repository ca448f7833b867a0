/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/journal.c with fake, in-memory objects: record and restore,
 * reverse order, a crash (free without restore, reopen), an administrator's
 * later change winning, objects that went away, failed writes kept for a
 * later attempt, an empty journal, and a journal cut mid-line by a crash.
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

static void test_failed_write_kept(void **state) {
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
        assert_int_equal(journal_size(j), 1);
        assert_true(journal_has(j, "fake", "bad"));
        journal_free(j);

        /* The kept record survives a reopen, and a later attempt succeeds. */
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_size(j), 1);
        bad->fail_write = false;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), 0);
        assert_int_equal(st.restored, 1);
        assert_string_equal(bad->value, "0-3");
        journal_free(j);
}

static void test_kind_without_ops_kept(void **state) {
        Fixture *f = *state;
        Journal *j = NULL;
        assert_int_equal(journal_open(f->dir, &j), 0);
        assert_int_equal(journal_record_change(j, "other", "k", "a", "b"), 1);
        JournalRestoreStats st;
        assert_int_equal(journal_restore(j, &f->ops, 1, &st), -EIO);
        assert_int_equal(st.failed, 1);
        assert_int_equal(journal_size(j), 1);
        assert_int_equal(journal_restore(j, NULL, 0, &st), -EIO);
        assert_int_equal(journal_size(j), 1);
        journal_free(j);
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_record_and_restore, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reverse_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crash_and_reopen, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admin_change_wins, setup, teardown),
                cmocka_unit_test_setup_teardown(test_object_gone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failed_write_kept, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kind_without_ops_kept, setup, teardown),
                cmocka_unit_test_setup_teardown(test_empty_journal, setup, teardown),
                cmocka_unit_test_setup_teardown(test_truncated_last_line, setup, teardown),
                cmocka_unit_test_setup_teardown(test_forget_and_invalid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compaction_keeps_state, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
