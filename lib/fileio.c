/* SPDX-License-Identifier: MIT */
/*
 * Small-file reading (see fileio.h). procfs files such as stat and status
 * are generated on each read(2), so the loop keeps reading until end of
 * file: a file that fills the buffer is an error (-EFBIG) rather than a
 * half-read line parsed as whole.
 */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "macro.h"

int read_small_file(const char *path, char *buf, size_t size) {
        if (!path || !buf || size < 2)
                return -EINVAL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
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
                        n = read(fd, &extra, 1);
                        if (n < 0)
                                return negative_errno();
                        if (n > 0)
                                return -EFBIG;
                        break;
                }
        }
        buf[len] = '\0';
        return (int)len;
}

int read_small_file_line(const char *path, char *buf, size_t size) {
        int n = read_small_file(path, buf, size);
        if (n < 0)
                return n;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return n;
}
