/* SPDX-License-Identifier: MIT */
/*
 * See ini-line.h: the fgets() that placed's INI loaders give inih.
 */
#include "ini-line.h"

#include <string.h>
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
