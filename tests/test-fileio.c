/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/fileio.c: every reader refuses a FIFO (with no writer, so a
 * blocking open would hang) and a link to /dev/zero at once, refuses a file
 * that states a size over its cap and a page without reading it, stops at its
 * cap, and reads procfs files, whose st_size is 0, and sysfs ones, which state
 * a page, to their end.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "hostile.h"
#include "macro.h"

typedef struct Ctx {
        char dir[64];
        char path[128];
        uint64_t read_mark; /* bytes the process had read at setup */
} Ctx;

static int setup(void **state) {
        Ctx *c = calloc(1, sizeof(*c));
        if (!c)
                return -1;
        snprintf(c->dir, sizeof(c->dir), "/tmp/placed-fileio-XXXXXX");
        if (!mkdtemp(c->dir))
                return -1;
        snprintf(c->path, sizeof(c->path), "%s/file", c->dir);
        c->read_mark = hostile_begin();
        *state = c;
        return 0;
}

static int teardown(void **state) {
        Ctx *c = *state;
        /* No test waited on a FIFO or read /dev/zero or 100 MB through. */
        uint64_t mark = c->read_mark;
        unlink(c->path);
        rmdir(c->dir);
        free(c);
        hostile_end(mark);
        return 0;
}

static void write_file(const Ctx *c, const char *text, size_t len) {
        FILE *f = fopen(c->path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
}

/* A sparse file of n NUL bytes, newline-free: a 100 MB cpulist, a line that never ends. */
static void write_big(const Ctx *c, size_t n) {
        _cleanup_close_ int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)n), 0);
}

enum { HOSTILE_DIR = _HOSTILE_MAX };

static void make_hostile(const Ctx *c, int kind) {
        if (kind != HOSTILE_DIR)
                hostile_make(c->path, "", kind);
        else {
                unlink(c->path);
                assert_int_equal(mkdir(c->path, 0700), 0);
        }
}

static void unmake_hostile(const Ctx *c) {
        if (unlink(c->path) < 0)
                assert_int_equal(rmdir(c->path), 0);
}

static void test_hostile_refused(void **state) {
        Ctx *c = *state;
        static const struct {
                int kind, error;
        } cases[] = { { HOSTILE_FIFO, -EBADFD },
                      { HOSTILE_ZERO, -EBADFD },
                      { HOSTILE_DIR, -EISDIR } };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char buf[64];
                _cleanup_free_ char *text = NULL;
                FileioLines l;

                make_hostile(c, cases[i].kind);
                assert_int_equal(read_small_file(c->path, buf, sizeof(buf)), cases[i].error);
                assert_int_equal(read_small_file_line(c->path, buf, sizeof(buf)), cases[i].error);
                assert_int_equal(read_small_file_head(c->path, buf, sizeof(buf)), cases[i].error);
                assert_int_equal(read_small_file_alloc(c->path, 1 << 20, &text, NULL),
                                 cases[i].error);
                assert_null(text);
                assert_int_equal(fileio_lines_open(&l, c->path, 1 << 20, 1 << 20), cases[i].error);
                assert_int_equal(l.fd, -1);
                fileio_lines_close(&l);
                unmake_hostile(c);
        }
        assert_string_equal(read_small_file_strerror(-EBADFD), "not a regular file");
}

static void test_over_size(void **state) {
        Ctx *c = *state;
        char buf[64];
        _cleanup_free_ char *text = NULL;

        write_big(c, 100 * 1024 * 1024);
        uint64_t before = hostile_bytes_read();
        assert_int_equal(read_small_file(c->path, buf, sizeof(buf)), -EFBIG);
        assert_int_equal(read_small_file_alloc(c->path, 1 << 20, &text, NULL), -EFBIG);
        assert_null(text);
        /* Refused by its stated size: none of it read (the count's own /proc/self/io aside). */
        assert_true(hostile_bytes_read() - before < 4096);
        /* The head of it is what read_small_file_head() is for. */
        assert_int_equal(read_small_file_head(c->path, buf, 5), 4);

        FileioLines l;
        char *line = NULL;
        assert_int_equal(fileio_lines_open(&l, c->path, 1 << 20, 1 << 20), 0);
        assert_int_equal(fileio_lines_next(&l, &line, NULL), -EFBIG);
        assert_true(l.buf_size <= (1 << 20) + 2); /* memory stays within the line's bound */
        assert_int_equal(fileio_lines_next(&l, &line, NULL), -EFBIG); /* and stays an error */
        fileio_lines_close(&l);
        assert_int_equal(l.fd, -1);
        assert_null(l.buf);
}

static void test_lines(void **state) {
        Ctx *c = *state;
        FileioLines l;
        char *line;
        size_t len;

        write_file(c, "cpu0 1 2\n\n  last", 16);
        assert_int_equal(fileio_lines_open(&l, c->path, 16, 9), 0);
        assert_int_equal(fileio_lines_next(&l, &line, &len), 1);
        assert_string_equal(line, "cpu0 1 2");
        assert_int_equal(len, 8);
        assert_int_equal(fileio_lines_next(&l, &line, &len), 1);
        assert_string_equal(line, "");
        assert_int_equal(fileio_lines_next(&l, &line, &len), 1); /* no newline: still a line */
        assert_string_equal(line, "  last");
        assert_int_equal(fileio_lines_next(&l, &line, &len), 0);
        assert_int_equal(fileio_lines_next(&l, &line, &len), 0);
        fileio_lines_close(&l);

        /* One byte more than max_size in all, or than max_line in one line: refused. */
        assert_int_equal(fileio_lines_open(&l, c->path, 15, 9), 0);
        assert_int_equal(fileio_lines_next(&l, &line, &len), 1);
        assert_int_equal(fileio_lines_next(&l, &line, &len), 1);
        assert_int_equal(fileio_lines_next(&l, &line, &len), -EFBIG);
        fileio_lines_close(&l);
        assert_int_equal(fileio_lines_open(&l, c->path, 16, 8), 0);
        assert_int_equal(fileio_lines_next(&l, &line, &len), -EFBIG);
        fileio_lines_close(&l);

        /* A line of exactly max_line bytes with its newline, and one without at the end. */
        write_file(c, "1234567\n12345678", 16);
        assert_int_equal(fileio_lines_open(&l, c->path, 16, 8), 0);
        assert_int_equal(fileio_lines_next(&l, &line, &len), 1);
        assert_string_equal(line, "1234567");
        assert_int_equal(fileio_lines_next(&l, &line, &len), 1);
        assert_string_equal(line, "12345678");
        assert_int_equal(fileio_lines_next(&l, &line, &len), 0);
        fileio_lines_close(&l);

        write_file(c, "ab\0cd\n", 6);
        assert_int_equal(fileio_lines_open(&l, c->path, 64, 64), 0);
        assert_int_equal(fileio_lines_next(&l, &line, &len), -EBADMSG);
        fileio_lines_close(&l);

        write_file(c, "", 0);
        assert_int_equal(fileio_lines_open(&l, c->path, 64, 64), 0);
        assert_int_equal(fileio_lines_next(&l, &line, &len), 0);
        fileio_lines_close(&l);
        fileio_lines_close(&l); /* twice is fine */
}

/* Lines longer than the first buffer, split across reads, come back whole. */
static void test_lines_long(void **state) {
        Ctx *c = *state;
        const size_t n_lines = 50, width = 10000;
        _cleanup_free_ char *text = malloc(n_lines * (width + 1));
        assert_non_null(text);
        for (size_t i = 0; i < n_lines; i++) {
                memset(text + i * (width + 1), 'a' + (int)(i % 26), width);
                text[i * (width + 1) + width] = '\n';
        }
        write_file(c, text, n_lines * (width + 1));

        FileioLines l;
        char *line;
        size_t len, n = 0;
        int r;
        assert_int_equal(fileio_lines_open(&l, c->path, n_lines * (width + 1), width + 1), 0);
        while ((r = fileio_lines_next(&l, &line, &len)) > 0) {
                assert_int_equal(len, width);
                assert_int_equal(line[0], 'a' + (int)(n % 26));
                assert_int_equal(line[width - 1], 'a' + (int)(n % 26));
                n++;
        }
        assert_int_equal(r, 0);
        assert_int_equal(n, n_lines);
        fileio_lines_close(&l);
}

/* procfs reports st_size 0: the readers read to the end all the same. */
static void test_procfs(void **state) {
        char buf[4096];
        int n = read_small_file_line("/proc/self/stat", buf, sizeof(buf));
        assert_true(n > 0);
        assert_true(strchr(buf, ')') != NULL);

        n = read_small_file_head("/proc/self/cmdline", buf, sizeof(buf));
        assert_true(n > 0);
        assert_string_equal(buf, program_invocation_name); /* argv[0], up to its NUL */

        FileioLines l;
        char *line;
        unsigned cpus = 0;
        assert_int_equal(fileio_lines_open(&l, "/proc/stat", 1 << 24, 1 << 24), 0);
        while (fileio_lines_next(&l, &line, NULL) > 0)
                cpus += strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9';
        fileio_lines_close(&l);
        assert_int_equal(cpus, (unsigned)sysconf(_SC_NPROCESSORS_CONF));
}

/* sysfs states a page for a text attribute that holds a few bytes: a small buffer reads it
 * all the same (the stated size refuses a file only past a page). */
static void test_sysfs(void **state) {
        const char *path = "/sys/devices/system/cpu/online";
        struct stat st;
        char buf[32];
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size >= (off_t)sizeof(buf)); /* states more than buf holds */
        assert_true(read_small_file_line(path, buf, sizeof(buf)) > 0);
        assert_true(buf[0] >= '0' && buf[0] <= '9');
        _cleanup_free_ char *text = NULL;
        assert_int_equal(read_small_file_alloc(path, sizeof(buf), &text, NULL), 0);
        assert_true(strncmp(text, buf, strlen(buf)) == 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_hostile_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_over_size, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lines, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lines_long, setup, teardown),
                cmocka_unit_test_setup_teardown(test_procfs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sysfs, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
