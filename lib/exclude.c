/* SPDX-License-Identifier: MIT */
/*
 * The owner's exclusions from the configuration. Matching is by the task's
 * comm (what ps shows, at most 15 characters) and by its cgroup, so an
 * administrator can fence off a service ("/system.slice/postgresql.service")
 * or a whole slice without knowing its threads.
 */
#include "exclude.h"

#include <fnmatch.h>
#include <string.h>

static bool cgroup_under(const char *cgroup, const char *prefix) {
        size_t n = strlen(prefix);
        while (n > 1 && prefix[n - 1] == '/') /* "/a/" covers what "/a" does */
                n--;
        if (strncmp(cgroup, prefix, n) != 0)
                return false;
        return n == 1 || cgroup[n] == '\0' || cgroup[n] == '/';
}

bool exclude_match(const Config *c, const char *comm, const char *cgroup) {
        for (unsigned i = 0; i < c->n_exclude_comm; i++)
                if (comm && fnmatch(c->exclude_comm[i], comm, 0) == 0)
                        return true;
        for (unsigned i = 0; cgroup && i < c->n_exclude_cgroup; i++)
                if (cgroup_under(cgroup, c->exclude_cgroup[i]))
                        return true;
        return false;
}
