/* SPDX-License-Identifier: MIT */
/*
 * One string table per enum, and both directions of it from one macro, after
 * systemd's src/basic/string-table.h. A module writes its table once,
 *
 *     static const char *const group_class_table[_GROUP_CLASS_MAX] = {
 *             [GROUP_SOLO] = "solo", [GROUP_PAIR] = "pair", ...
 *     };
 *     DEFINE_STRING_TABLE_LOOKUP(group_class, GroupClass);
 *
 * and gets
 *
 *     const char *group_class_to_string(GroupClass v);  // NULL out of range
 *     int group_class_from_string(const char *s);       // the value, or -EINVAL
 *
 * Out of range, or a hole in the table, is always NULL: the one answer a
 * caller has to handle. An unknown or NULL name is always -EINVAL.
 * DEFINE_STRING_TABLE_LOOKUP_TO_STRING() makes only the first, for enums no
 * file or message ever names back.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "macro.h"

/* The index of s in table[0..n), or -EINVAL. */
static inline int string_table_lookup(const char *const *table, size_t n, const char *s) {
        for (size_t i = 0; s && i < n; i++)
                if (table[i] && strcmp(table[i], s) == 0)
                        return (int)i;
        return -EINVAL;
}

#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                      \
        const char *name##_to_string(type v) {                                                \
                return (size_t)v < ELEMENTSOF(name##_table) ? name##_table[(size_t)v] : NULL; \
        }

#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name)                                   \
        int name##_from_string(const char *s) {                                        \
                return string_table_lookup(name##_table, ELEMENTSOF(name##_table), s); \
        }

#define DEFINE_STRING_TABLE_LOOKUP(name, type)           \
        DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type) \
        DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name)
