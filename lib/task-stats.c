/* SPDX-License-Identifier: MIT */
/*
 * Readers for the per-task files the model needs each tick. They take a
 * procfs root so tests run on fake trees (tests/fixtures/proc-*), and they
 * parse stat after the last ')' because comm may contain spaces and
 * parentheses.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "task-stats.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* Reads procfs_root/TGID/task/TID/name into buf. Return: bytes read or negative errno. */
static int read_task_file(const char *root, pid_t tgid, pid_t tid, const char *name, char *buf,
                          size_t size) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%d/task/%d/%s", root, (int)(tgid > 0 ? tgid : tid), (int)tid,
                     name) < 0)
                return -ENOMEM;
        /* Every tick, for every task in the model: no stdio buffer, one read. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        ssize_t n = read(fd, buf, size - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        return (int)n;
}

static int parse_stat(const char *buf, TaskStats *s) {
        const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
        if (!open || !close || close < open)
                return -EINVAL;
        size_t len = MIN((size_t)(close - open - 1), sizeof(s->comm) - 1);
        memcpy(s->comm, open + 1, len);
        s->comm[len] = 0;
        s->id.tid = (pid_t)strtol(buf, NULL, 10);

        /* fields 3.. after the comm; we need 3, 9, 22, 39, 40, 41 */
        const char *p = close + 1;
        for (int field = 3; field <= 41; field++) {
                p += strspn(p, " ");
                if (!*p || *p == '\n')
                        return field > 22 ? 0 : -EINVAL; /* old kernels end early */
                char *end;
                if (field == 3)
                        s->state = *p;
                else if (field == 9)
                        s->flags = (unsigned)strtoul(p, &end, 10);
                else if (field == 22)
                        s->id.start_time = strtoull(p, &end, 10);
                else if (field == 39)
                        s->processor = (int)strtol(p, &end, 10);
                else if (field == 40)
                        s->rt_priority = (unsigned)strtoul(p, &end, 10);
                else if (field == 41)
                        s->policy = (unsigned)strtoul(p, &end, 10);
                p += strcspn(p, " \n");
        }
        return 0;
}

int task_stats_read(const char *procfs_root, pid_t tgid, pid_t tid, TaskStats *ret) {
        char buf[1024];
        TaskStats s = {};
        int r;

        r = read_task_file(procfs_root, tgid, tid, "stat", buf, sizeof(buf));
        if (r < 0)
                return r;
        r = parse_stat(buf, &s);
        if (r < 0)
                return r;

        r = read_task_file(procfs_root, tgid, tid, "schedstat", buf, sizeof(buf));
        if (r < 0)
                return r;
        if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64, &s.run_ns, &s.run_delay_ns,
                   &s.timeslices) != 3)
                return -EINVAL;

        if (tgid > 0)
                s.tgid = tgid; /* the path /proc/TGID/task/TID proved it */
        else {
                r = read_task_file(procfs_root, tgid, tid, "status", buf, sizeof(buf));
                if (r < 0)
                        return r;
                const char *t = strstr(buf, "\nTgid:");
                if (!t)
                        return -EINVAL;
                s.tgid = (pid_t)strtol(t + 6, NULL, 10);
        }

        *ret = s;
        return 0;
}

bool task_stats_is_realtime(const TaskStats *s) {
        return s->policy == SCHED_FIFO || s->policy == SCHED_RR || s->policy == SCHED_DEADLINE;
}
