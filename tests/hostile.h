/* SPDX-License-Identifier: MIT */
/*
 * Hostile files for the tests of bounded readers (lib/fileio.h): a FIFO with
 * no writer, a link to /dev/zero, or good lines followed by 100 MB of NULs
 * (sparse) without a newline, in place of a file placed reads; what each
 * reader must answer; and a clock to show it answers within a second.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"

enum { HOSTILE_FIFO, HOSTILE_ZERO, HOSTILE_BIG, _HOSTILE_MAX };

/* What a bounded reader returns for each: not a regular file, or too big. */
static const int hostile_error[_HOSTILE_MAX] = { -EBADFD, -EBADFD, -EFBIG };

/* Puts the hostile file of kind at path (good: the lines before the NULs). */
static inline void hostile_make(const char *path, const char *good, int kind) {
        unlink(path);
        if (kind == HOSTILE_FIFO)
                assert_int_equal(mkfifo(path, 0600), 0);
        else if (kind == HOSTILE_ZERO)
                assert_int_equal(symlink("/dev/zero", path), 0);
        else {
                _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
                assert_true(fd >= 0);
                assert_int_equal(write(fd, good, strlen(good)), (ssize_t)strlen(good));
                assert_int_equal(ftruncate(fd, 100 << 20), 0);
        }
}

/* Return: CLOCK_MONOTONIC in seconds. */
static inline double hostile_now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
