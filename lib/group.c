/* SPDX-License-Identifier: MIT */
/*
 * Names of the group classes as they appear on D-Bus, in placectl output and
 * in JSON.
 */
#include "group.h"

#include "string-table.h"

static const char *const group_class_table[_GROUP_CLASS_MAX] = {
        [GROUP_SOLO] = "solo",
        [GROUP_PAIR] = "pair",
        [GROUP_FANOUT] = "fanout",
        [GROUP_MESH] = "mesh",
};

DEFINE_STRING_TABLE_LOOKUP(group_class, GroupClass);
