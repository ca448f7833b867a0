/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU busy time from /proc/stat, for the idle model: cpuidle reports how
 * long a CPU sat in each idle state, but not how long it ran, so the busy
 * share of a tick comes from here. /proc/stat counts in USER_HZ ticks (10 ms
 * on every Linux ABI), coarse but cheap: one read for all CPUs. The busy
 * share is a ratio of ticks, so the tick length never enters the result.
 *
 * The reader takes a procfs root so tests feed it fixture files, and reads
 * both files line by line through lib/fileio.h, within the sizes below.
 */
#include "cpustat.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "fileio.h"
#include "macro.h"

/*
 * /proc/stat: a cpuN line of 10 figures is at most 256 bytes, for each of
 * CPUSET_MAX_CPUS CPUs, and the "intr" line holds one figure per IRQ, up to
 * some 10^5 IRQs of at most 21 bytes on the largest machines: 16 MiB in all
 * and in one line.
 */
#define CPUSTAT_STAT_MAX ((size_t)16 << 20)
/*
 * /proc/interrupts: a row is 11 bytes per CPU and its name (45 KiB at
 * CPUSET_MAX_CPUS); 64 MiB holds some 1400 rows there, 23000 at 256 CPUs.
 */
#define CPUSTAT_IRQ_LINE_MAX ((size_t)CPUSET_MAX_CPUS * 11 + 4096)
#define CPUSTAT_IRQ_MAX      ((size_t)64 << 20)

struct CpuStat {
        char path[PATH_MAX];
        char irq_path[PATH_MAX];
        bool have_irqs;
        unsigned n_cpus;  /* entries in cpus[] */
        CpuStatCpu *cpus; /* owned; indexed by CPU number */
        bool have_read;
};

int cpustat_new(const char *procfs_root, CpuStat **ret) {
        if (!procfs_root || !ret)
                return -EINVAL;
        CpuStat *cs = calloc(1, sizeof(*cs));
        if (!cs)
                return -ENOMEM;
        int n = snprintf(cs->path, sizeof(cs->path), "%s/stat", procfs_root);
        int m = snprintf(cs->irq_path, sizeof(cs->irq_path), "%s/interrupts", procfs_root);
        if (n < 0 || (size_t)n >= sizeof(cs->path) || m < 0 || (size_t)m >= sizeof(cs->irq_path)) {
                free(cs);
                return -ENAMETOOLONG;
        }
        *ret = cs;
        return 0;
}

CpuStat *cpustat_free(CpuStat *cs) {
        if (cs) {
                free(cs->cpus);
                free(cs);
        }
        return NULL;
}

int cpustat_parse_line(const char *line, int *ret_cpu, uint64_t *ret_busy, uint64_t *ret_idle) {
        if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
                return 0;

        const char *p = line + 3;
        char *end;
        errno = 0;
        unsigned long cpu = strtoul(p, &end, 10);
        if (errno || end == p || cpu > INT_MAX)
                return -EBADMSG;

        /* user nice system idle iowait irq softirq steal guest guest_nice */
        uint64_t v[10] = { 0 };
        unsigned n = 0;
        for (p = end; n < ELEMENTSOF(v); n++) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '\n' || *p == '\0')
                        break;
                if (*p < '0' || *p > '9')
                        return -EBADMSG;
                errno = 0;
                v[n] = strtoull(p, &end, 10);
                if (errno)
                        return -EBADMSG;
                p = end;
        }
        if (n < 4)
                return -EBADMSG;

        *ret_cpu = (int)cpu;
        *ret_busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        *ret_idle = v[3] + v[4];
        return 1;
}

static int cpustat_grow(CpuStat *cs, unsigned cpu) {
        if (cpu < cs->n_cpus)
                return 0;
        unsigned n = cpu + 1;
        CpuStatCpu *c = realloc(cs->cpus, n * sizeof(*c));
        if (!c)
                return -ENOMEM;
        for (unsigned i = cs->n_cpus; i < n; i++)
                c[i] = (CpuStatCpu){ .cpu = (int)i };
        cs->cpus = c;
        cs->n_cpus = n;
        return 0;
}

static uint64_t delta_u64(uint64_t now, uint64_t before) {
        return now >= before ? now - before : 0;
}

static void cpustat_update(CpuStatCpu *c, bool had_read, uint64_t busy, uint64_t idle) {
        c->has_delta = had_read && c->present;
        c->delta_busy_ticks = c->has_delta ? delta_u64(busy, c->busy_ticks) : 0;
        c->delta_idle_ticks = c->has_delta ? delta_u64(idle, c->idle_ticks) : 0;
        c->busy_ticks = busy;
        c->idle_ticks = idle;
        c->present = true;
}

int cpustat_refresh(CpuStat *cs) {
        _cleanup_(fileio_lines_close) FileioLines f;
        int r = fileio_lines_open(&f, cs->path, CPUSTAT_STAT_MAX, CPUSTAT_STAT_MAX);
        if (r < 0)
                return r;

        /* Lines not seen this time mark a CPU absent (hot-unplugged). */
        _cleanup_free_ bool *seen = cs->n_cpus ? calloc(cs->n_cpus, sizeof(bool)) : NULL;
        if (cs->n_cpus && !seen)
                return -ENOMEM;
        unsigned n_seen_slots = cs->n_cpus;

        char *line;
        bool any_delta = false;
        while ((r = fileio_lines_next(&f, &line, NULL)) > 0) {
                int cpu;
                uint64_t busy, idle;
                r = cpustat_parse_line(line, &cpu, &busy, &idle);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                r = cpustat_grow(cs, (unsigned)cpu);
                if (r < 0)
                        return r;
                if ((unsigned)cpu < n_seen_slots)
                        seen[cpu] = true;
                cpustat_update(&cs->cpus[cpu], cs->have_read, busy, idle);
                any_delta = any_delta || cs->cpus[cpu].has_delta;
        }
        if (r < 0)
                return r;

        for (unsigned i = 0; i < n_seen_slots; i++)
                if (!seen[i]) {
                        cs->cpus[i].present = false;
                        cs->cpus[i].has_delta = false;
                }
        cs->have_read = true;
        return any_delta ? 1 : 0;
}

/* The header's "CPUn" columns: *ret[i] is column i's CPU. Return: columns, or -EBADMSG. */
static int irq_header(const char *line, unsigned **ret) {
        unsigned n = 0, *cols = NULL;
        for (const char *p = line; (p = strstr(p, "CPU")); n++) {
                char *end;
                errno = 0;
                unsigned long cpu = strtoul(p + 3, &end, 10);
                unsigned *grown = realloc(cols, (n + 1) * sizeof(*cols));
                if (errno || end == p + 3 || cpu > INT_MAX || !grown) {
                        free(grown ? grown : cols);
                        return grown ? -EBADMSG : -ENOMEM;
                }
                cols = grown;
                cols[n] = (unsigned)cpu;
                p = end;
        }
        if (n == 0)
                return -EBADMSG;
        *ret = cols;
        return (int)n;
}

int cpustat_refresh_irqs(CpuStat *cs) {
        _cleanup_(fileio_lines_close) FileioLines f;
        int r = fileio_lines_open(&f, cs->irq_path, CPUSTAT_IRQ_MAX, CPUSTAT_IRQ_LINE_MAX);
        if (r < 0)
                return r;
        char *line;
        _cleanup_free_ unsigned *cols = NULL;
        r = fileio_lines_next(&f, &line, NULL);
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        int n_cols = irq_header(line, &cols);
        if (n_cols < 0)
                return n_cols;
        _cleanup_free_ uint64_t *sum = calloc((size_t)n_cols, sizeof(uint64_t));
        _cleanup_free_ uint64_t *v = calloc((size_t)n_cols, sizeof(uint64_t));
        if (!sum || !v)
                return -ENOMEM;
        while ((r = fileio_lines_next(&f, &line, NULL)) > 0) {
                const char *p = strchr(line, ':');
                int k = 0;
                for (p = p ? p + 1 : line + strlen(line); k < n_cols; k++) {
                        char *end;
                        errno = 0;
                        v[k] = strtoull(p, &end, 10);
                        if (errno || end == p)
                                break;
                        p = end;
                }
                for (int i = 0; k == n_cols && i < n_cols; i++)
                        sum[i] += v[i];
        }
        if (r < 0)
                return r;
        for (int i = 0; i < n_cols; i++) {
                if (cols[i] >= cs->n_cpus)
                        continue;
                CpuStatCpu *c = &cs->cpus[cols[i]];
                c->has_irq_delta = cs->have_irqs;
                c->delta_irqs = cs->have_irqs ? delta_u64(sum[i], c->irqs) : 0;
                c->irqs = sum[i];
        }
        bool first = !cs->have_irqs;
        cs->have_irqs = true;
        return first ? 0 : 1;
}

const char *cpustat_path(const CpuStat *cs) {
        return cs->path;
}

const char *cpustat_irqs_path(const CpuStat *cs) {
        return cs->irq_path;
}

unsigned cpustat_n_cpus(const CpuStat *cs) {
        return cs ? cs->n_cpus : 0;
}

const CpuStatCpu *cpustat_cpu(const CpuStat *cs, unsigned cpu) {
        if (!cs || cpu >= cs->n_cpus)
                return NULL;
        return &cs->cpus[cpu];
}

double cpustat_busy_frac(const CpuStatCpu *c) {
        if (!c || !c->has_delta)
                return -1;
        uint64_t total = c->delta_busy_ticks + c->delta_idle_ticks;
        if (total == 0)
                return -1; /* shorter than one tick: no information */
        return (double)c->delta_busy_ticks / (double)total;
}

bool cpustat_no_news(const CpuStatCpu *c) {
        return c && c->has_delta && c->delta_busy_ticks + c->delta_idle_ticks == 0;
}
