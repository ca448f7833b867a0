/* SPDX-License-Identifier: MIT */
/*
 * stderr logging with sd-daemon(3) priority prefixes. Under systemd stderr is
 * a stream to journald, which turns "<N>" into the entry's priority: systemd
 * says so in JOURNAL_STREAM ("DEV:INODE" of that stream), which counts only
 * while stderr still is that stream (a child of the service may have
 * redirected it). Everywhere else (a terminal, a file, a pipe) a person or
 * a script reads the lines, and the prefix would only be noise: plain
 * lines, as systemd's own tools write them.
 *
 * Messages carry outside text (comms, hold reasons, file names, journal
 * keys). A newline in it would start a new journal entry with a priority of
 * its choosing ("\n<0>FAKE"), so every control character of the formatted
 * message is escaped ("\n", "\t", "\x1b") and one message is one line.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "string-table.h"

static int max_level = LOG_INFO;

static const char *const log_level_table[LOG_DEBUG + 1] = {
        [LOG_ERR] = "err",   [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(log_level);

void log_set_max_level(int level) {
        max_level = level;
}

size_t log_escape(const char *s, char *buf, size_t size) {
        size_t n = 0;
        if (size == 0)
                return 0;
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                char esc[5];
                if (c == '\n')
                        strcpy(esc, "\\n");
                else if (c == '\t')
                        strcpy(esc, "\\t");
                else if (c == '\r')
                        strcpy(esc, "\\r");
                else if (c < 0x20 || c == 0x7f)
                        snprintf(esc, sizeof(esc), "\\x%02x", c);
                else {
                        esc[0] = (char)c;
                        esc[1] = '\0';
                }
                size_t len = strlen(esc);
                if (n + len >= size)
                        break;
                memcpy(buf + n, esc, len);
                n += len;
        }
        buf[n] = '\0';
        return n;
}

/* Return: true if stderr is the journal stream systemd named in JOURNAL_STREAM. */
static bool log_stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;
        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Return: true when PLACED_LOG_TIME is set to 1, "yes" or "true": each line
 * then starts with CLOCK_MONOTONIC seconds, to line a debug log up with
 * what a benchmark or a test saw (as SYSTEMD_LOG_TIME does for systemd). */
static bool log_use_time(void) {
        static int use = -1;
        if (use < 0) {
                const char *e = getenv("PLACED_LOG_TIME");
                use = e && (strcmp(e, "1") == 0 || strcmp(e, "yes") == 0 || strcmp(e, "true") == 0);
        }
        return use;
}

bool log_use_prefix(void) {
        static int prefix = -1;
        if (prefix < 0)
                prefix = log_stderr_is_journal();
        return prefix;
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

        char safe[sizeof(msg) * 4];
        log_escape(msg, safe, sizeof(safe));

        char when[32] = "";
        if (log_use_time()) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                snprintf(when, sizeof(when), "[%lld.%06ld] ", (long long)ts.tv_sec,
                         ts.tv_nsec / 1000);
        }
        if (log_use_prefix())
                fprintf(stderr, "<%d>%s%s\n", level, when, safe);
        else
                fprintf(stderr, "%s%s\n", when, safe);

        errno = saved;
        return r;
}
