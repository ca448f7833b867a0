/* SPDX-License-Identifier: MIT */
/*
 * The global PID -> namespace TID map of the perf wake source (see
 * wake-pid-map.h).
 *
 * Why: inside a PID namespace (a container, `unshare --pid --mount-proc`)
 * placed's /proc shows the namespace's TIDs, and every number placed keeps
 * must be one of those. perf writes the sample's PERF_SAMPLE_TID in the PID
 * namespace of the event's opener (perf_event_pid_type() translates with
 * __task_pid_nr_ns(p, ..., event->ns); a task outside that namespace reads
 * 0), so the waker is right as it comes. The tracepoint's own payload is not
 * translated: sched_waking's `pid` field is the wakee's global p->pid. No
 * interface maps a global PID into a namespace from inside it: /proc/T/status
 * NSpid lists T's numbers from the namespace of that /proc mount down, which
 * inside the container starts at the container's, and there is no /proc of
 * the initial namespace to look in. What does carry both numbers of one task
 * is a sample taken in that task's own context whose payload names it:
 * sched_switch, where current is prev, its TID is in the namespace and its
 * prev_pid field is global. A task is woken only after it blocked, and it
 * blocked through sched_switch, so the map learns every wakee before its
 * wakeup, with the comm to check the number is still the same task.
 *
 * Entries live in a dense array (the hash map holds indexes); pruning
 * compacts the array and rebuilds the hash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "task-facts.h"
#include "util.h"
#include "wake-pid-map.h"

typedef struct PidEntry {
        pid_t global, local;
        char comm[WAKE_COMM_LEN];
} PidEntry;

struct WakePidMap {
        U64Map *index; /* global PID -> index into entries; owns only its table */
        PidEntry *entries;
        size_t n, alloc;
};

int wake_pid_map_new(WakePidMap **ret) {
        WakePidMap *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        if (u64map_new(&m->index) < 0) {
                free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

WakePidMap *wake_pid_map_free(WakePidMap *m) {
        if (!m)
                return NULL;
        u64map_free(m->index);
        free(m->entries);
        free(m);
        return NULL;
}

static void comm_copy(char dst[WAKE_COMM_LEN], const char *src) {
        strncpy(dst, src, WAKE_COMM_LEN - 1);
        dst[WAKE_COMM_LEN - 1] = 0;
}

int wake_pid_map_learn(WakePidMap *m, pid_t global, pid_t local, const char *comm) {
        uint32_t i;

        if (global <= 0 || local <= 0)
                return -EINVAL;
        if (!u64map_get(m->index, (uint64_t)global, &i)) {
                if (array_grow((void **)&m->entries, &m->alloc, m->n + 1, sizeof(PidEntry)) < 0)
                        return -ENOMEM;
                i = (uint32_t)m->n;
                if (u64map_put(m->index, (uint64_t)global, i) < 0)
                        return -ENOMEM;
                m->n++;
        }
        m->entries[i].global = global;
        m->entries[i].local = local;
        comm_copy(m->entries[i].comm, comm);
        return 0;
}

pid_t wake_pid_map_lookup(const WakePidMap *m, pid_t global, const char *comm) {
        char c[WAKE_COMM_LEN];
        uint32_t i;

        if (global <= 0 || !u64map_get(m->index, (uint64_t)global, &i))
                return 0;
        comm_copy(c, comm);
        return strcmp(m->entries[i].comm, c) == 0 ? m->entries[i].local : 0;
}

int wake_pid_map_prune(WakePidMap *m, const char *procfs_root) {
        size_t kept = 0;
        int forgotten = 0;

        for (size_t i = 0; i < m->n; i++) {
                if (!task_alive(procfs_root, m->entries[i].local)) {
                        forgotten++;
                        continue;
                }
                m->entries[kept++] = m->entries[i];
        }
        if (forgotten == 0)
                return 0;
        m->n = kept;
        u64map_clear(m->index);
        for (size_t i = 0; i < m->n; i++)
                if (u64map_put(m->index, (uint64_t)m->entries[i].global, (uint32_t)i) < 0)
                        return -ENOMEM;
        return forgotten;
}

size_t wake_pid_map_size(const WakePidMap *m) {
        return m->n;
}
