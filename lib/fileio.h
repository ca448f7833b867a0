/* SPDX-License-Identifier: MIT */
/*
 * One reader for the files placed reads from procfs, sysfs, cgroupfs and
 * the trees and snapshots it is pointed at (a stat line, a cpulist, a
 * latency, a cache type, a snapshot): no stdio, a size stated by the
 * caller, and an error, not a silent cut, when the file does not fit.
 * Callers build the path from their root (docs/CODING_STYLE.md: every
 * reader takes a root).
 *
 * Every open is O_NONBLOCK|O_CLOEXEC|O_NOCTTY and every file must be a
 * regular one (sysfs, procfs and cgroupfs attributes are): a FIFO, a
 * device such as /dev/zero or a socket left in a --sysfs-root tree is
 * refused at once instead of blocking the reader or feeding it forever,
 * after systemd's read_virtual_file().
 */
#pragma once

#include <stddef.h>

/*
 * read_small_file() - read all of path into buf (NUL-terminated).
 *
 * Return: the number of bytes read; -EFBIG when the file does not fit in
 * size - 1 bytes; -EISDIR for a directory, -EBADFD for anything else that
 * is not a regular file; -ENOENT, -ESRCH (a task that exited) or other
 * negative errno from open(2), fstat(2) and read(2).
 */
int read_small_file(const char *path, char *buf, size_t size);

/*
 * read_small_file_line() - read_small_file(), with the trailing newlines
 * and spaces cut off, for files of text.
 *
 * Return: the length left; -EBADMSG when the text holds a NUL byte; or
 * negative errno as read_small_file().
 */
int read_small_file_line(const char *path, char *buf, size_t size);

/*
 * read_small_file_alloc() - read all of path, at most max_size bytes, into
 * a new NUL-terminated buffer, for files whose size the caller cannot know
 * (a snapshot, /proc/stat on a large machine).
 *
 * Return: 0, *ret (caller frees) and *ret_size (bytes read, may be NULL)
 * set; -EFBIG over max_size; -ENOMEM; or negative errno as
 * read_small_file().
 */
int read_small_file_alloc(const char *path, size_t max_size, char **ret, size_t *ret_size);

/*
 * read_small_file_strerror() - what a reader's error says of the file:
 * "not a regular file" (-EBADFD), "a directory" (-EISDIR), "larger than
 * placed reads" (-EFBIG), "holds a NUL byte" (-EBADMSG), else the errno's
 * description.
 *
 * Return: a static string, never NULL.
 */
const char *read_small_file_strerror(int error);
