/* SPDX-License-Identifier: MIT */
/*
 * One reader for the small files placed reads from procfs, sysfs and
 * cgroupfs (a stat line, a cpulist, a latency, a cache type): into a
 * caller's buffer, no stdio, and an error, not a silent cut, when the file
 * does not fit. Callers build the path from their root
 * (docs/CODING_STYLE.md: every reader takes a root).
 */
#pragma once

#include <stddef.h>

/*
 * read_small_file() - read all of path into buf (NUL-terminated).
 *
 * Return: the number of bytes read; -EFBIG when the file does not fit in
 * size - 1 bytes; -ENOENT, -ESRCH (a task that exited) or other negative
 * errno from open(2) and read(2).
 */
int read_small_file(const char *path, char *buf, size_t size);

/*
 * read_small_file_line() - read_small_file(), with the trailing newlines
 * and spaces cut off.
 *
 * Return: the length left, or negative errno as read_small_file().
 */
int read_small_file_line(const char *path, char *buf, size_t size);
