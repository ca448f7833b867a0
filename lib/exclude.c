/* SPDX-License-Identifier: MIT */
/*
 * The owner's exclusions from the configuration. Matching is by the task's
 * comm (what ps shows, at most 15 characters) and by its cgroup, so an
 * administrator can fence off a service ("/system.slice/postgresql.service")
 * or a whole slice without knowing its threads.
 */
#include "exclude.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

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

int exclude_read_cgroup(const char *procfs_root, pid_t tid, char *buf, size_t size) {
        char path[4096];
        _cleanup_free_ char *line = NULL;
        size_t n = 0;
        bool found = false;

        snprintf(path, sizeof(path), "%s/%d/cgroup", procfs_root, (int)tid);
        FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? -ESRCH : negative_errno();

        /* Lines are "ID:CONTROLLERS:PATH"; v2 is "0::PATH". Prefer v2. */
        while (getline(&line, &n, f) > 0) {
                char *first = strchr(line, ':');
                char *second = first ? strchr(first + 1, ':') : NULL;
                if (!second)
                        continue;
                second[strcspn(second, "\n")] = '\0';
                *first = '\0';
                *second = '\0';
                const char *controllers = first + 1, *cgpath = second + 1;
                bool v2 = strcmp(line, "0") == 0 && *controllers == '\0';
                bool v1_cpuset = false;
                for (char *tok = strtok(first + 1, ","); tok; tok = strtok(NULL, ","))
                        if (strcmp(tok, "cpuset") == 0)
                                v1_cpuset = true;
                if (!v2 && (found || !v1_cpuset))
                        continue;
                if (strlen(cgpath) >= size) {
                        fclose(f);
                        return -ENOBUFS;
                }
                strcpy(buf, cgpath);
                found = true;
                if (v2)
                        break;
        }
        fclose(f);
        return found ? 0 : -ENOENT;
}
