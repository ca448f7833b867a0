/* SPDX-License-Identifier: MIT */
/*
 * Names of the group classes as they appear on D-Bus, in placectl output and
 * in JSON.
 */
#include <errno.h>
#include <string.h>

#include "group.h"
#include "macro.h"

static const char *const group_class_names[_GROUP_CLASS_MAX] = {
        [GROUP_SOLO] = "solo",
        [GROUP_PAIR] = "pair",
        [GROUP_FANOUT] = "fanout",
        [GROUP_MESH] = "mesh",
};

/* Return: the class name, or NULL for a value out of range. */
const char *group_class_to_string(GroupClass c) {
        if ((unsigned)c >= ELEMENTSOF(group_class_names))
                return NULL;
        return group_class_names[c];
}

/* Return: the GroupClass named s, or -EINVAL. */
int group_class_from_string(const char *s) {
        for (unsigned i = 0; s && i < ELEMENTSOF(group_class_names); i++)
                if (strcmp(s, group_class_names[i]) == 0)
                        return (int)i;
        return -EINVAL;
}
