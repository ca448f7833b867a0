/* SPDX-License-Identifier: MIT */
/*
 * Hostile files for the tests of bounded readers (lib/fileio.h): a FIFO with
 * no writer, a link to /dev/zero, or good lines followed by 100 MB of NULs
 * (sparse) without a newline, in place of a file placed reads; what each
 * reader must answer; and a mark around each read that shows it read little
 * (the process's own count of bytes read, /proc/self/io) and never waited (a
 * watchdog that fails the test, instead of the runner's timeout).
 *
 * No clock: a bound in seconds passes or fails by the luck of the host (CI's
 * sanitizer build once took more than the second allowed, as the BTF probe
 * read 64 MB of a 100 MB vmlinux before it said too big). A reader that
 * reads 100 MB or waits on a FIFO fails these marks on any host.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

/* A bounded read of the 100 MB file stops at its reader's cap (16 MiB for /proc/stat's), far
 * short of the file's end; the bound leaves room for what else the call reads (the kernel's
 * BTF, about 5 MB, when a wake source probes the kernel). Reading the file or /dev/zero
 * through would pass it. */
#define HOSTILE_READ_MAX ((uint64_t)50 << 20)

/* A read that waits (a FIFO opened for reading waits for a writer forever) is stopped here. */
#define HOSTILE_WATCHDOG_SEC 30

/* Return: the bytes this process has read through read(2) and its kin (rchar in /proc/self/io). */
static inline uint64_t hostile_bytes_read(void) {
        uint64_t rchar = 0;
        FILE *f = fopen("/proc/self/io", "re");
        assert_non_null(f);
        assert_int_equal(fscanf(f, "rchar: %" SCNu64, &rchar), 1);
        fclose(f);
        return rchar;
}

static inline void hostile_watchdog_fired(int sig) {
        static const char msg[] = "hostile.h: a reader waited on a hostile file (watchdog)\n";
        (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
        _exit(1);
}

/* Marks the start of reads of a hostile file. Return: the bytes read before it. */
static inline uint64_t hostile_begin(void) {
        signal(SIGALRM, hostile_watchdog_fired);
        alarm(HOSTILE_WATCHDOG_SEC);
        return hostile_bytes_read();
}

/* Ends the reads begun at mark: none waited, and together they read under HOSTILE_READ_MAX. */
static inline void hostile_end(uint64_t mark) {
        alarm(0);
        uint64_t n = hostile_bytes_read() - mark;
        if (n >= HOSTILE_READ_MAX)
                fprintf(stderr, "hostile.h: %" PRIu64 " bytes read\n", n);
        assert_true(n < HOSTILE_READ_MAX);
}
