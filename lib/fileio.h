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

#include <stdbool.h>
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
 * read_small_file_head() - read_small_file() for a file whose start alone
 * matters (/proc/PID/cmdline): at most size - 1 bytes, the rest left
 * unread.
 *
 * Return: the number of bytes read; or negative errno as read_small_file(),
 * never -EFBIG.
 */
int read_small_file_head(const char *path, char *buf, size_t size);

/*
 * A file read line by line, for parsers of files too large to hold whole
 * every tick (/proc/interrupts) or read as a stream (a replay trace):
 * opened as read_small_file() opens, read with read(2) into a buffer that
 * grows to the longest line, and ended with -EFBIG past max_size bytes in
 * all or max_line bytes in one line. Memory is bounded by max_line.
 */
typedef struct FileioLines {
        int fd;
        size_t max_size; /* bytes the whole file may hold */
        size_t max_line; /* bytes one line may hold, its newline included */
        size_t n_read;   /* bytes read so far */
        char *buf;       /* owned */
        size_t buf_size, start, end;
        bool eof;
} FileioLines;

#define FILEIO_LINES_NULL ((FileioLines){ .fd = -1 })

/*
 * fileio_lines_open() - open path for fileio_lines_next(). *l is set in
 * every case, so fileio_lines_close() may always follow.
 *
 * Return: 0; or negative errno as read_small_file().
 */
int fileio_lines_open(FileioLines *l, const char *path, size_t max_size, size_t max_line);

/*
 * fileio_lines_next() - the next line, NUL-terminated, without its newline;
 * a last line without one counts. *ret_line stays valid, and may be
 * written to, until the next call.
 *
 * Return: 1 with *ret_line (and *ret_len, may be NULL) set; 0 at the end of
 * the file; -EFBIG past max_size or max_line; -EBADMSG for a NUL byte in
 * the line; -ENOMEM; or negative errno from read(2).
 */
int fileio_lines_next(FileioLines *l, char **ret_line, size_t *ret_len);

/* fileio_lines_close() - close the file and free the buffer; *l is FILEIO_LINES_NULL after. */
void fileio_lines_close(FileioLines *l);

/*
 * read_small_file_strerror() - what a reader's error says of the file:
 * "not a regular file" (-EBADFD), "a directory" (-EISDIR), "larger than
 * placed reads" (-EFBIG), "holds a NUL byte" (-EBADMSG), else the errno's
 * description.
 *
 * Return: a static string, never NULL.
 */
const char *read_small_file_strerror(int error);
