/* SPDX-License-Identifier: MIT */
/*
 * The value parsers of the configuration's key tables (config.c): each turns
 * one "key = value" into its field, or says on the file's line what was
 * wrong with it (config_parse_error()).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config-internal.h"
#include "macro.h"

int config_parse_bool(ParseFile *pf, const ConfigItem *item, const char *value, void *field) {
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(value, yes[i]) == 0) {
                        *(bool *)field = true;
                        return 0;
                }
                if (strcasecmp(value, no[i]) == 0) {
                        *(bool *)field = false;
                        return 0;
                }
        }
        return config_parse_error(pf,
                                  "invalid [%s] %s \"%s\": expected a boolean (yes/no, true/false, "
                                  "on/off, 1/0)",
                                  item->section, item->key, value);
}

#define BAD_VALUE "invalid [%s] %s \"%s\": %s"

int config_parse_unsigned(ParseFile *pf, const ConfigItem *item, const char *value, void *field) {
        if (value[0] == '-')
                return config_parse_error(pf, BAD_VALUE, item->section, item->key, value,
                                          "negative numbers are not allowed");
        if (value[0] < '0' || value[0] > '9')
                return config_parse_error(pf, BAD_VALUE, item->section, item->key, value,
                                          "expected a non-negative integer");

        char *end;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (errno == ERANGE || v > UINT_MAX)
                return config_parse_error(pf, BAD_VALUE, item->section, item->key, value,
                                          "number too large");
        if (*end != '\0')
                return config_parse_error(pf, BAD_VALUE, item->section, item->key, value,
                                          "trailing characters after the number");
        if (v < item->min || v > item->max)
                return config_parse_error(pf, "invalid [%s] %s \"%s\": out of range %u..%u",
                                          item->section, item->key, value, item->min, item->max);
        *(unsigned *)field = (unsigned)v;
        return 0;
}

int config_parse_nice(ParseFile *pf, const ConfigItem *item, const char *value, void *field) {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (end == value || *end != '\0' || errno == ERANGE || v < -20 || v > 19)
                return config_parse_error(pf, BAD_VALUE, item->section, item->key, value,
                                          "expected a nice value, -20..19");
        *(int *)field = (int)v;
        return 0;
}

/* A key placed no longer uses: checked like a number, then ignored, so old files still load. */
int config_parse_obsolete(ParseFile *pf, const ConfigItem *item, const char *value, void *field) {
        unsigned ignored;
        return config_parse_unsigned(pf, item, value, &ignored);
}

/* The enums in config.h are all int-sized; this writes them through one parser. */
_Static_assert(sizeof(PairPlacement) == sizeof(int), "enum size");
_Static_assert(sizeof(SpreadPlacement) == sizeof(int), "enum size");
_Static_assert(sizeof(IdleConstraint) == sizeof(int), "enum size");
_Static_assert(sizeof(WakeSourceKind) == sizeof(int), "enum size");
_Static_assert(sizeof(FollowKind) == sizeof(int), "enum size");

int config_parse_enum(ParseFile *pf, const ConfigItem *item, const char *value, void *field) {
        char accepted[256] = "";
        size_t len = 0;

        for (size_t i = 0; i < item->n_names; i++) {
                if (!item->names[i] || (item->refused & (1u << i)))
                        continue;
                if (strcmp(item->names[i], value) == 0) {
                        *(int *)field = (int)i;
                        return 0;
                }
                int n = snprintf(accepted + len, sizeof(accepted) - len, "%s%s", len ? ", " : "",
                                 item->names[i]);
                if (n > 0 && (size_t)n < sizeof(accepted) - len)
                        len += (size_t)n;
        }
        return config_parse_error(pf, "invalid [%s] %s \"%s\": expected one of %s", item->section,
                                  item->key, value, accepted);
}

int config_parse_string(ParseFile *pf, const ConfigItem *item, const char *value, void *field) {
        if (strlen(value) >= item->size)
                return config_parse_error(pf, "invalid [%s] %s: longer than %zu characters",
                                          item->section, item->key, item->size - 1);
        memcpy(field, value, strlen(value) + 1);
        return 0;
}

int config_parse_abs_path(ParseFile *pf, const ConfigItem *item, const char *value, void *field) {
        if (value[0] != '/')
                return config_parse_error(pf, "invalid [%s] %s \"%s\": not an absolute path",
                                          item->section, item->key, value);
        return config_parse_string(pf, item, value, field);
}

/*
 * [metrics] textfile: empty for none, else an absolute path to a file (not a
 * directory). node_exporter's textfile collector reads only *.prom files: any
 * other name is accepted (another reader may want it) with a warning.
 */
int config_parse_textfile_path(ParseFile *pf, const ConfigItem *item, const char *value,
                               void *field) {
        if (value[0] == '\0') {
                *(char *)field = '\0';
                return 0;
        }
        int r = config_parse_abs_path(pf, item, value, field);
        if (r < 0)
                return r;
        const char *base = strrchr(value, '/') + 1;
        if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
                return config_parse_error(pf,
                                          "invalid [%s] %s \"%s\": names a directory, not a file",
                                          item->section, item->key, value);
        if (strlen(base) > NAME_MAX - 5) /* the temporary file is ".NAME.tmp" */
                return config_parse_error(
                        pf, "invalid [%s] %s \"%s\": file name longer than %d characters",
                        item->section, item->key, value, NAME_MAX - 5);
        size_t len = strlen(base);
        if (len < 5 || strcmp(base + len - 5, ".prom") != 0)
                config_loader_diag(
                        pf->loader, CONFIG_DIAG_WARNING,
                        "%s:%u: [%s] %s \"%s\" does not end in \".prom\": node_exporter's "
                        "textfile collector reads only *.prom files",
                        pf->path, pf->in.lineno, item->section, item->key, value);
        return 0;
}

bool config_profile_name_is_valid(const char *name) {
        size_t len = strlen(name);
        return len > 0 && len < PROFILE_NAME_MAX &&
               strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == len;
}

int config_parse_profile_name(ParseFile *pf, const ConfigItem *item, const char *value,
                              void *field) {
        if (!config_profile_name_is_valid(value))
                return config_parse_error(
                        pf,
                        "invalid [%s] %s \"%s\": a profile name is 1 to %d of a-z, "
                        "0-9, '_' and '-'",
                        item->section, item->key, value, PROFILE_NAME_MAX - 1);

        /* Where it was set, for the check that the profile exists once all are loaded. */
        char **set_at = &pf->loader->profile_set_at;
        if (strcmp(item->section, "follow") == 0)
                for (size_t i = 0; i < FOLLOW_PPD_PROFILES; i++)
                        if (strcmp(item->key, follow_ppd_profiles[i]) == 0)
                                set_at = &pf->loader->follow_set_at[i];
        char *at;
        if (asprintf(&at, "%s:%u", pf->path, pf->in.lineno) < 0)
                return config_parse_error(pf, "out of memory");
        free(*set_at);
        *set_at = at;
        return config_parse_string(pf, item, value, field);
}

/*
 * [exclude] lists: each line adds its space-separated words; an empty value
 * clears what earlier lines and files added (like systemd's list settings).
 * field is the array; the count follows it at item->size bytes further on.
 */
int config_parse_exclude_list(ParseFile *pf, const ConfigItem *item, const char *value,
                              void *field) {
        char **v = field;
        unsigned *n = (unsigned *)((char *)field + item->size);
        bool cgroup = strcmp(item->key, "cgroup") == 0;

        if (value[0] == '\0') {
                config_strv_clear(v, n);
                return 0;
        }
        for (const char *p = value + strspn(value, SPACE); *p; p += strspn(p, SPACE)) {
                size_t len = strcspn(p, SPACE);
                if (cgroup && p[0] != '/')
                        return config_parse_error(pf,
                                                  "invalid [%s] %s \"%.*s\": a cgroup path prefix "
                                                  "starts with '/'",
                                                  item->section, item->key, (int)len, p);
                if (*n >= CONFIG_MAX_EXCLUDES)
                        return config_parse_error(pf, "[%s] %s: more than %d entries",
                                                  item->section, item->key, CONFIG_MAX_EXCLUDES);
                v[*n] = strndup(p, len);
                if (!v[*n])
                        return config_parse_error(pf, "out of memory");
                (*n)++;
                p += len;
        }
        return 0;
}
