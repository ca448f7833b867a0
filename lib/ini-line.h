/* SPDX-License-Identifier: MIT */
/*
 * The line reader that placed's INI loaders (config.c, rules.c) hand to
 * inih's ini_parse_stream() in place of fgets(): one physical line per call,
 * counted (inih as Debian builds it passes no line numbers), leading white
 * space dropped (so an indented "key = value" is not taken for inih's
 * continuation of the previous value), and a line inih would cut or split
 * (a NUL byte, over-long) refused instead. And what both say of a directory
 * entry that is not a file to read (a FIFO, a device, a dangling link).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

typedef struct IniLine {
        FILE *f;
        char *buf; /* getline() buffer; owned by the caller, free() it */
        size_t size;
        unsigned lineno; /* lines read so far = the line inih sees */
        size_t bytes;    /* read so far */
} IniLine;

/*
 * ini_line_next() - the next line of in->f into str (num bytes, as inih's
 * fgets() would get it: newline-terminated), without leading white space or
 * line end.
 *
 * Return: str; NULL at the end of the file or on a read error (the caller
 * checks ferror()), and when the file grew past max_bytes. why (why_size
 * bytes) says what was refused, "" when nothing: a line with a NUL byte or
 * longer than num - 2 characters comes back empty; a file past max_bytes
 * ends there.
 */
char *ini_line_next(IniLine *in, size_t max_bytes, char *str, int num, char *why, size_t why_size);

/*
 * ini_line_entry_kind() - what DIR/name is, following symbolic links, for a
 * loader that reads regular files only; nothing is opened (a FIFO would
 * block).
 *
 * Return: 1 for a regular file; 0 for one not to read, with *ret_what in
 * words ("a FIFO", "a character device", "a directory", "a dangling symbolic
 * link", ...), or NULL where nothing need be said: /dev/null (a link to it
 * masks a file of that name) and an entry gone since it was listed.
 * *ret_is_dir tells a directory (may be NULL).
 */
int ini_line_entry_kind(int dir_fd, const char *name, const char **ret_what, bool *ret_is_dir);

/* ini_line_mode_kind() - "a FIFO", "a directory", ... for st_mode; NULL for a regular file. */
const char *ini_line_mode_kind(mode_t mode);

/* ini_line_is_dev_null() - st is /dev/null, which reads as empty (a masked file). */
bool ini_line_is_dev_null(const struct stat *st);
