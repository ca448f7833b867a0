/* SPDX-License-Identifier: MIT */
/*
 * stderr logging with sd-daemon(3) priority prefixes. Under systemd stderr is
 * a stream to journald, which turns "<N>" into the entry's priority; on a
 * terminal the prefix would only be noise, so it is left out there.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_internal(int level, int error, const char *fmt, ...) {
        int saved = errno;
        int r = error > 0 ? -error : error;

        if (level > max_level) {
                errno = saved;
                return r;
        }

        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        /* %m in fmt means the errno text of error, as in systemd's log_*_errno(). */
        errno = error < 0 ? -error : error;
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        static int prefix = -1;
        if (prefix < 0)
                prefix = !isatty(STDERR_FILENO);
        if (prefix)
                fprintf(stderr, "<%d>%s\n", level, msg);
        else
                fprintf(stderr, "%s\n", msg);

        errno = saved;
        return r;
}
