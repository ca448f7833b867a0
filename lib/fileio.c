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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

/* Opens path for reading without blocking on a FIFO; only a regular file is kept, and not
 * one that states a size over both max_size and a page: a 100 MB file is refused unread.
 * The page spares the pseudo-files, which the read loops bound: sysfs states a page for
 * every text attribute, whatever it holds, and procfs and cgroupfs state 0. */
static int open_regular(const char *path, size_t max_size) {
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
        uintmax_t stated = (uintmax_t)st.st_size;
        if (stated > max_size && stated > (uintmax_t)sysconf(_SC_PAGESIZE)) {
                close(fd);
                return -EFBIG;
        }
        return fd;
}

/* One read(2), again when a signal interrupted it. Return: bytes (0 at the end), -errno. */
static ssize_t read_some(int fd, void *buf, size_t size) {
        ssize_t n;
        do
                n = read(fd, buf, size);
        while (n < 0 && errno == EINTR);
        return n < 0 ? negative_errno() : n;
}

/* Reads fd into buf until its end or cap bytes. Return: bytes read, -errno. */
static ssize_t read_fill(int fd, char *buf, size_t cap) {
        size_t len = 0;
        while (len < cap) {
                ssize_t n = read_some(fd, buf + len, cap - len);
                if (n < 0)
                        return n;
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        return (ssize_t)len;
}

/* Reads fd to its end into buf, at most size - 1 bytes. Return: bytes, -EFBIG, -errno. */
static ssize_t read_bounded(int fd, char *buf, size_t size) {
        ssize_t len = read_fill(fd, buf, size - 1);
        if (len < 0)
                return len;
        if ((size_t)len == size - 1) {
                char extra;
                ssize_t n = read_some(fd, &extra, 1);
                if (n != 0)
                        return n < 0 ? n : -EFBIG;
        }
        buf[len] = '\0';
        return len;
}

int read_small_file(const char *path, char *buf, size_t size) {
        if (!path || !buf || size < 2 || size > INT_MAX)
                return -EINVAL;
        _cleanup_close_ int fd = open_regular(path, size - 1);
        if (fd < 0)
                return fd;
        return (int)read_bounded(fd, buf, size);
}

int read_small_file_head(const char *path, char *buf, size_t size) {
        if (!path || !buf || size < 2 || size > INT_MAX)
                return -EINVAL;
        _cleanup_close_ int fd = open_regular(path, SIZE_MAX);
        if (fd < 0)
                return fd;
        ssize_t len = read_fill(fd, buf, size - 1);
        if (len < 0)
                return (int)len;
        buf[len] = '\0';
        return (int)len;
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
        _cleanup_close_ int fd = open_regular(path, max_size);
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
                ssize_t n = read_some(fd, buf + len, size - len);
                if (n < 0)
                        return (int)n;
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

int fileio_lines_open(FileioLines *l, const char *path, size_t max_size, size_t max_line) {
        assert(l);
        *l = FILEIO_LINES_NULL;
        if (!path || max_size == 0 || max_size >= SSIZE_MAX || max_line == 0)
                return -EINVAL;
        int fd = open_regular(path, SIZE_MAX);
        if (fd < 0)
                return fd;
        l->fd = fd;
        l->max_size = max_size;
        l->max_line = MIN(max_line, max_size);
        return 0;
}

/* Moves the partial line to the front and makes room for more, at most max_line + 1 bytes
 * (the byte past max_line says the line is too long) and a NUL. */
static int lines_make_room(FileioLines *l) {
        if (l->start > 0) {
                memmove(l->buf, l->buf + l->start, l->end - l->start);
                l->end -= l->start;
                l->start = 0;
        }
        if (l->end > l->max_line)
                return -EFBIG;
        if (l->buf && l->end + 1 < l->buf_size)
                return 0;
        size_t size = MIN(MAX(l->buf_size * 2, (size_t)4096), l->max_line + 2);
        char *p = realloc(l->buf, size);
        if (!p)
                return -ENOMEM;
        l->buf = p;
        l->buf_size = size;
        return 0;
}

int fileio_lines_next(FileioLines *l, char **ret_line, size_t *ret_len) {
        assert(l && ret_line);
        for (;;) {
                char *line = l->buf ? l->buf + l->start : NULL;
                size_t avail = l->end - l->start;
                char *nl = line ? memchr(line, '\n', avail) : NULL;
                if (nl || (l->eof && avail > 0)) {
                        size_t len = nl ? (size_t)(nl - line) : avail;
                        if (len >= l->max_line + !nl)
                                return -EFBIG;
                        line[len] = '\0'; /* the newline, or the byte the buffer keeps free */
                        if (memchr(line, '\0', len))
                                return -EBADMSG;
                        l->start += len + !!nl;
                        *ret_line = line;
                        if (ret_len)
                                *ret_len = len;
                        return 1;
                }
                if (l->eof || l->fd < 0)
                        return 0;
                if (l->n_read > l->max_size)
                        return -EFBIG;
                int r = lines_make_room(l);
                if (r < 0)
                        return r;
                /* Up to one byte past max_size, which says the file is too large. */
                size_t want = MIN(l->buf_size - 1 - l->end, l->max_size + 1 - l->n_read);
                ssize_t n = read_some(l->fd, l->buf + l->end, want);
                if (n < 0)
                        return (int)n;
                if (n == 0)
                        l->eof = true;
                l->end += (size_t)n;
                l->n_read += (size_t)n;
                if (l->n_read > l->max_size)
                        return -EFBIG;
        }
}

void fileio_lines_close(FileioLines *l) {
        if (!l)
                return;
        if (l->fd >= 0)
                close(l->fd);
        free(l->buf);
        *l = FILEIO_LINES_NULL;
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
