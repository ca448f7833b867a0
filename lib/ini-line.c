/* SPDX-License-Identifier: MIT */
/*
 * See ini-line.h: the fgets() that placed's INI loaders give inih, and what
 * they say of an entry that is not a file to read.
 */
#include "ini-line.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

char *ini_line_next(IniLine *in, size_t max_bytes, char *str, int num, char *why, size_t why_size) {
        why[0] = '\0';
        ssize_t n = getline(&in->buf, &in->size, in->f);
        if (n < 0)
                return NULL; /* end of file or error; the caller checks ferror() */
        in->lineno++;
        in->bytes += (size_t)n;
        if (in->bytes > max_bytes) { /* it grew after the caller's size check */
                snprintf(why, why_size, "file larger than %zu bytes", max_bytes);
                return NULL;
        }
        if (strlen(in->buf) != (size_t)n) {
                /* inih would see the line cut at the NUL: a value silently shortened */
                snprintf(why, why_size, "NUL byte in the line");
                in->buf[0] = '\0';
        }

        const char *s = in->buf + strspn(in->buf, " \t\v\f");
        size_t len = strcspn(s, "\r\n");
        if (num < 2 || len > (size_t)num - 2) {
                snprintf(why, why_size, "line too long (at most %d characters)", num - 2);
                len = 0;
        }
        memcpy(str, s, len);
        str[len] = '\n';
        str[len + 1] = '\0';
        return str;
}

const char *ini_line_mode_kind(mode_t mode) {
        if (S_ISREG(mode))
                return NULL;
        if (S_ISDIR(mode))
                return "a directory";
        if (S_ISFIFO(mode))
                return "a FIFO";
        if (S_ISSOCK(mode))
                return "a socket";
        if (S_ISCHR(mode))
                return "a character device";
        if (S_ISBLK(mode))
                return "a block device";
        if (S_ISLNK(mode))
                return "a symbolic link";
        return "not a file";
}

bool ini_line_is_dev_null(const struct stat *st) {
        return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

int ini_line_entry_kind(int dir_fd, const char *name, const char **ret_what, bool *ret_is_dir) {
        struct stat st;
        bool is_dir = false;
        const char *what = NULL;
        int r = 0;

        if (fstatat(dir_fd, name, &st, 0) < 0) {
                int error = errno;
                /* the link itself, to tell a link that leads nowhere from an entry gone */
                if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                        what = !S_ISLNK(st.st_mode) ? "an entry that cannot be examined"
                               : error == ELOOP     ? "a loop of symbolic links"
                               : error == ENOENT    ? "a dangling symbolic link"
                                                    : "a symbolic link that cannot be followed";
        } else if (S_ISREG(st.st_mode))
                r = 1;
        else if (!ini_line_is_dev_null(&st)) {
                what = ini_line_mode_kind(st.st_mode);
                is_dir = S_ISDIR(st.st_mode);
        }
        *ret_what = what;
        if (ret_is_dir)
                *ret_is_dir = is_dir;
        return r;
}
