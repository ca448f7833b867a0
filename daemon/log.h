/* SPDX-License-Identifier: MIT */
/*
 * Logging for the daemon and placectl: stderr, with sd-daemon priority
 * prefixes ("<3>") when stderr is the journal (JOURNAL_STREAM), so levels
 * are kept; plain lines on a terminal, into a file or a pipe.
 * lib/ does not log; daemon/ logs once, at the boundary, with quoted names
 * and the errno text.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

#include "macro.h"

/* Return: the syslog level named s ("err", "warning", "notice", "info", "debug"), or -EINVAL. */
int log_level_from_string(const char *s);

void log_set_max_level(int level);
/* Return: true when lines carry "<N>": stderr is the stream JOURNAL_STREAM names. */
bool log_use_prefix(void);

/*
 * log_escape() - copy s to buf (size bytes, always terminated) with every
 * control character escaped: "\n", "\t", "\r", else "\xHH". Cut at a whole
 * escape when buf is too small. Return: the length written.
 */
size_t log_escape(const char *s, char *buf, size_t size);

/* Logs at level; returns -abs(error) so callers can "return log_errno(...)". */
int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);

#define log_full_errno(level, error, ...) log_internal(level, error, __VA_ARGS__)
#define log_full(level, ...)              (void)log_internal(level, 0, __VA_ARGS__)
#define log_error_errno(error, ...)       log_internal(LOG_ERR, error, __VA_ARGS__)
#define log_warning_errno(error, ...)     log_internal(LOG_WARNING, error, __VA_ARGS__)
#define log_error(...)                    (void)log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_warning(...)                  (void)log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_notice(...)                   (void)log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_info(...)                     (void)log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...)                    (void)log_internal(LOG_DEBUG, 0, __VA_ARGS__)
