/* SPDX-License-Identifier: MIT */
/*
 * What config.c (loading files over inih, the key tables) and
 * config-values.c (the value parsers) share; private to the two.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "ini-line.h"
#include "macro.h"

#define SPACE " \t\r\n\v\f"

/* ---- One load: diagnostics and the state shared by all files ---- */

typedef struct ConfigLoader {
        const ConfigPaths *paths;
        ConfigDiag diag;
        void *userdata;
        Config *config;       /* the temporary being filled */
        char *profile_set_at; /* "FILE:LINE" of the [daemon] profile= in force; owned */
        char *follow_set_at[FOLLOW_PPD_PROFILES]; /* the same for each [follow] key; owned */
} ConfigLoader;

/* Passes a formatted message to the loader's diag callback, if any. */
_printf_(3, 4) void config_loader_diag(ConfigLoader *l, ConfigDiagLevel level, const char *fmt,
                                       ...);

typedef struct ConfigItem ConfigItem;
typedef struct ParseFile ParseFile;

/* Parses value into field (item->offset into the table's target). Return: 0 or -EINVAL. */
typedef int (*ConfigParseFn)(ParseFile *pf, const ConfigItem *item, const char *value, void *field);

struct ConfigItem {
        const char *section;
        const char *key;
        ConfigParseFn parse;
        size_t offset;
        unsigned min, max;        /* config_parse_unsigned */
        const char *const *names; /* config_parse_enum: the enum's string table, index = value */
        size_t n_names;
        unsigned refused; /* config_parse_enum: bit 1 << value set: a name files may not select */
        size_t size;      /* string parsers: buffer size */
};

struct ParseFile {
        ConfigLoader *loader;
        const char *path;
        IniLine in; /* the file, read a line at a time; in.buf owned */
        const ConfigItem *items;
        size_t n_items;
        void *target;
        unsigned error_line;   /* first line we rejected, 0 = none */
        char error[512];       /* why */
        char *ignored_section; /* last unknown section warned about; owned */
};

/* Keeps the file's first rejected line and why. Return: -EINVAL. */
_printf_(2, 3) int config_parse_error(ParseFile *pf, const char *fmt, ...);

/* Frees the n strings of v and sets *n to 0. */
void config_strv_clear(char **v, unsigned *n);

/* Return: true for a profile name placed accepts (a-z, 0-9, "_" and "-"; not too long). */
bool config_profile_name_is_valid(const char *name);

int config_parse_bool(ParseFile *pf, const ConfigItem *item, const char *value, void *field);
int config_parse_unsigned(ParseFile *pf, const ConfigItem *item, const char *value, void *field);
/* A nice value, -20..19, into an int. */
int config_parse_nice(ParseFile *pf, const ConfigItem *item, const char *value, void *field);
int config_parse_obsolete(ParseFile *pf, const ConfigItem *item, const char *value, void *field);
int config_parse_enum(ParseFile *pf, const ConfigItem *item, const char *value, void *field);
int config_parse_string(ParseFile *pf, const ConfigItem *item, const char *value, void *field);
int config_parse_abs_path(ParseFile *pf, const ConfigItem *item, const char *value, void *field);
int config_parse_textfile_path(ParseFile *pf, const ConfigItem *item, const char *value,
                               void *field);
int config_parse_profile_name(ParseFile *pf, const ConfigItem *item, const char *value,
                              void *field);
int config_parse_exclude_list(ParseFile *pf, const ConfigItem *item, const char *value,
                              void *field);
