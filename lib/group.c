/* SPDX-License-Identifier: MIT */
/*
 * Names of the group classes as they appear on D-Bus, in placectl output and
 * in JSON.
 */
#include "group.h"

#include <assert.h>
#include <stdio.h>

#include "string-table.h"

static const char *const group_class_table[_GROUP_CLASS_MAX] = {
        [GROUP_SOLO] = "solo",
        [GROUP_PAIR] = "pair",
        [GROUP_FANOUT] = "fanout",
        [GROUP_MESH] = "mesh",
};

DEFINE_STRING_TABLE_LOOKUP(group_class, GroupClass);

void group_format_tids(const Group *g, char *buf, size_t size) {
        assert(g && buf && size > 0);
        if (g->n_tasks == 0 || g->n_tasks > 4) {
                snprintf(buf, size, "first task %d of %u", g->n_tasks ? (int)g->tasks[0].tid : 0,
                         g->n_tasks);
                return;
        }
        size_t len = (size_t)snprintf(buf, size, "tasks");
        for (unsigned i = 0; i < g->n_tasks && len < size; i++)
                len += (size_t)snprintf(buf + len, size - len, " %d", (int)g->tasks[i].tid);
}
