/* SPDX-License-Identifier: MIT */
/*
 * CpuSet: a fixed-size CPU bitmap with value semantics, and the kernel's
 * "cpulist" text form ("0-3,8,10-11") used throughout sysfs, cgroups and
 * placed's own output.
 *
 * A fixed size keeps the pure core (model, policy) free of allocation: sets
 * are copied, compared and returned by value. CPUSET_MAX_CPUS covers the
 * largest machines Debian's kernel is built for (NR_CPUS=8192 is rare in
 * practice; 4096 keeps a set at 512 bytes).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPUSET_MAX_CPUS 4096
#define CPUSET_WORDS    (CPUSET_MAX_CPUS / 64)

typedef struct CpuSet {
        uint64_t bits[CPUSET_WORDS];
} CpuSet;

static inline void cpuset_zero(CpuSet *s) {
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                s->bits[i] = 0;
}

static inline bool cpuset_valid_cpu(int cpu) {
        return cpu >= 0 && cpu < CPUSET_MAX_CPUS;
}

static inline void cpuset_set(CpuSet *s, int cpu) {
        if (cpuset_valid_cpu(cpu))
                s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

static inline void cpuset_clear(CpuSet *s, int cpu) {
        if (cpuset_valid_cpu(cpu))
                s->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

static inline bool cpuset_isset(const CpuSet *s, int cpu) {
        return cpuset_valid_cpu(cpu) && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned cpuset_count(const CpuSet *s);
bool cpuset_is_empty(const CpuSet *s);
bool cpuset_equal(const CpuSet *a, const CpuSet *b);
bool cpuset_is_subset(const CpuSet *sub, const CpuSet *super);
bool cpuset_intersects(const CpuSet *a, const CpuSet *b);
void cpuset_and(CpuSet *ret, const CpuSet *a, const CpuSet *b);
void cpuset_or(CpuSet *ret, const CpuSet *a, const CpuSet *b);
void cpuset_andnot(CpuSet *ret, const CpuSet *a, const CpuSet *b);

/* Return: the lowest CPU in s at or above from, or -1 when there is none. */
int cpuset_next(const CpuSet *s, int from);
int cpuset_first(const CpuSet *s);
int cpuset_last(const CpuSet *s);

#define CPUSET_FOREACH(cpu, s) \
        for (int cpu = cpuset_first(s); cpu >= 0; cpu = cpuset_next(s, cpu + 1))

/*
 * cpuset_parse() - parse a kernel cpulist ("0-3,8", "0-15:2", "" or "\n").
 * Accepts surrounding white space and a trailing newline, as sysfs files have.
 *
 * Return: 0 on success; -EINVAL on malformed text (ret untouched); -ERANGE for
 * a CPU number at or above CPUSET_MAX_CPUS.
 */
int cpuset_parse(const char *text, CpuSet *ret);

/*
 * cpuset_format() - write s as a canonical cpulist ("0-3,8"; "" when empty).
 *
 * Return: the length written (excluding NUL), or -ENOBUFS when buf is too
 * small (buf then holds a truncated, NUL-terminated prefix).
 */
int cpuset_format(const CpuSet *s, char *buf, size_t size);

/* cpuset_to_string() - allocating variant. Return: 0 or -ENOMEM. */
int cpuset_to_string(const CpuSet *s, char **ret);

/*
 * cpuset_read_file() - read a cpulist file such as .../cpu/online: its first
 * line, from a regular file of at most a cpulist of every CPU (fileio.h).
 *
 * Return: 0; -EINVAL for text that is no cpulist or holds a NUL byte;
 * -ERANGE as cpuset_parse(); -EFBIG for a longer file; or negative errno as
 * read_small_file().
 */
int cpuset_read_file(const char *path, CpuSet *ret);
