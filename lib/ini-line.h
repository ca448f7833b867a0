/* SPDX-License-Identifier: MIT */
/*
 * The line reader that placed's INI loaders (config.c, rules.c) hand to
 * inih's ini_parse_stream() in place of fgets(): one physical line per call,
 * counted (inih as Debian builds it passes no line numbers), leading white
 * space dropped (so an indented "key = value" is not taken for inih's
 * continuation of the previous value), and a line inih would cut or split
 * (a NUL byte, over-long) refused instead.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

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
