/* SPDX-License-Identifier: MIT */
/*
 * Busy and idle time per CPU from PROCFS_ROOT/stat, and its deltas between
 * two reads. Busy is user + nice + system + irq + softirq + steal; idle is
 * idle + iowait (guest time is already inside user and nice).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct CpuStatCpu {
        int cpu;
        bool present;        /* had a cpuN line in the last read */
        uint64_t busy_ticks; /* cumulative, USER_HZ */
        uint64_t idle_ticks; /* cumulative, USER_HZ */
        bool has_delta;      /* present in the last two reads */
        uint64_t delta_busy_ticks;
        uint64_t delta_idle_ticks;
        /* Interrupts served, from PROCFS_ROOT/interrupts (cpustat_refresh_irqs()). */
        uint64_t irqs;
        bool has_irq_delta;
        uint64_t delta_irqs;
} CpuStatCpu;

typedef struct CpuStat CpuStat;

/*
 * cpustat_new() - a reader of procfs_root/stat ("/proc" for the live system).
 * Nothing is read until cpustat_refresh().
 *
 * Return: 0 or negative errno.
 */
int cpustat_new(const char *procfs_root, CpuStat **ret);
CpuStat *cpustat_free(CpuStat *cs);

/*
 * cpustat_refresh() - read the file again and compute per-CPU deltas. A
 * counter that went backwards (per-CPU iowait may) counts as 0.
 *
 * Return: 1 when deltas are available, 0 on the first read, negative errno
 * (-EBADMSG for a malformed cpuN line; -EBADFD, -EFBIG and the others of
 * fileio_lines_next() for a file that is not a regular one or too large).
 */
int cpustat_refresh(CpuStat *cs);

/*
 * cpustat_parse_line() - pure: parse one "cpuN user nice system idle ..."
 * line. Lines with fewer than 4 numbers are malformed; missing later fields
 * (old kernels) count as 0.
 *
 * Return: 1 and the CPU number, busy and idle ticks set; 0 when the line is
 * not a per-CPU line (the "cpu " total, "intr", ...); -EBADMSG.
 */
int cpustat_parse_line(const char *line, int *ret_cpu, uint64_t *ret_busy, uint64_t *ret_idle);

/*
 * cpustat_refresh_irqs() - read procfs_root/interrupts and compute each CPU's
 * interrupts since the last call (delta_irqs). Without a cpuidle driver
 * nothing counts idle entries, but a CPU halted in the idle loop leaves it
 * only on an interrupt (IPIs included), so this is the upper bound of its
 * idle exits that such machines offer. Rows with one figure for the whole
 * machine (ERR, MIS) are not counted. Only CPUs cpustat_refresh() has seen
 * are updated.
 *
 * Return: 1 when deltas are available, 0 on the first read, negative errno
 * (-EBADMSG for a file without its "CPUn" header).
 */
int cpustat_refresh_irqs(CpuStat *cs);

/* Return: the paths cpustat_refresh() and cpustat_refresh_irqs() read, for messages. */
const char *cpustat_path(const CpuStat *cs);
const char *cpustat_irqs_path(const CpuStat *cs);

unsigned cpustat_n_cpus(const CpuStat *cs);
/* Return: the CPU's entry, NULL when out of range. */
const CpuStatCpu *cpustat_cpu(const CpuStat *cs, unsigned cpu);

/* Return: busy share of the last interval in [0, 1], or -1 without a delta
 * (or when the interval was shorter than one tick). */
double cpustat_busy_frac(const CpuStatCpu *c);
/* Return: whether the CPU is online and was sampled twice, but its counters
 * did not move in between (an interval shorter than one of its ticks): no
 * new information, so the figures of the interval before still stand. */
bool cpustat_no_news(const CpuStatCpu *c);

static inline void cpustat_freep(CpuStat **p) {
        cpustat_free(*p);
}
