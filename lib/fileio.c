/* SPDX-License-Identifier: MIT */
/*
 * Bounded file reading (see fileio.h). procfs files such as stat and status
 * are generated on each read(2), so the loop keeps reading until end of
 * file: a file that fills the buffer is an error (-EFBIG) rather than a
 * half-read line parsed as whole. Nothing is read before the file is known
 * to be a regular one, and nothing past the stated size.
 */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

/* Opens path for reading without blocking on a FIFO; only a regular file is kept. */
static int open_regular(const char *path) {
        struct stat st;
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                close(fd);
                return S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
        }
        return fd;
}

/* Reads fd to its end into buf, at most size - 1 bytes. Return: bytes, -EFBIG, -errno. */
static ssize_t read_bounded(int fd, char *buf, size_t size) {
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == size - 1) {
                        char extra;
                        do
                                n = read(fd, &extra, 1);
                        while (n < 0 && errno == EINTR);
                        if (n < 0)
                                return negative_errno();
                        if (n > 0)
                                return -EFBIG;
                        break;
                }
        }
        buf[len] = '\0';
        return (ssize_t)len;
}

int read_small_file(const char *path, char *buf, size_t size) {
        if (!path || !buf || size < 2 || size > INT_MAX)
                return -EINVAL;
        _cleanup_close_ int fd = open_regular(path);
        if (fd < 0)
                return fd;
        return (int)read_bounded(fd, buf, size);
}

int read_small_file_line(const char *path, char *buf, size_t size) {
        int n = read_small_file(path, buf, size);
        if (n < 0)
                return n;
        if (memchr(buf, '\0', (size_t)n))
                return -EBADMSG;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return n;
}

int read_small_file_alloc(const char *path, size_t max_size, char **ret, size_t *ret_size) {
        if (!path || !ret || max_size == 0 || max_size >= SSIZE_MAX)
                return -EINVAL;
        _cleanup_close_ int fd = open_regular(path);
        if (fd < 0)
                return fd;

        /* Grown as it fills (st_size is 0 for procfs and sysfs files), up to one byte past
         * max_size: that byte read says the file is too large. */
        size_t size = MIN(max_size + 1, (size_t)4096), len = 0;
        _cleanup_free_ char *buf = malloc(size + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len == size) {
                        if (size > max_size)
                                return -EFBIG;
                        size_t grown = MIN(size * 2, max_size + 1);
                        char *p = realloc(buf, grown + 1);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        size = grown;
                }
                ssize_t n = read(fd, buf + len, size - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        if (ret_size)
                *ret_size = len;
        *ret = TAKE_PTR(buf);
        return 0;
}

const char *read_small_file_strerror(int error) {
        switch (error) {
        case -EBADFD:
                return "not a regular file";
        case -EISDIR:
                return "a directory";
        case -EFBIG:
                return "larger than placed reads";
        case -EBADMSG:
                return "holds a NUL byte";
        default: {
                const char *text = strerrordesc_np(error < 0 ? -error : error);
                return text ? text : "unknown error";
        }
        }
}
