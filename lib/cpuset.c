/* SPDX-License-Identifier: MIT */
/*
 * CPU bitmaps and the kernel cpulist format. See cpuset.h.
 *
 * The parser follows lib/bitmap.c's bitmap_parselist() in the kernel:
 * comma-separated items, each "N", "N-M" or "N-M:G" (G-sized groups,
 * taking the first CPU of each); white space only around the whole list.
 */
#include "cpuset.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"

/* The longest cpulist of CPUSET_MAX_CPUS CPUs ("0,2,4,...": at most four digits and a comma
 * each) and its newline, with room to spare. */
#define CPUSET_FILE_MAX (CPUSET_MAX_CPUS * 6 + 2)

unsigned cpuset_count(const CpuSet *s) {
        unsigned n = 0;
        /* Sets are sized for 4096 CPUs and machines have far fewer: skip the
         * zero words (popcount is a library call on baseline x86-64). */
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                if (s->bits[i])
                        n += (unsigned)__builtin_popcountll(s->bits[i]);
        return n;
}

bool cpuset_is_empty(const CpuSet *s) {
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                if (s->bits[i])
                        return false;
        return true;
}

bool cpuset_equal(const CpuSet *a, const CpuSet *b) {
        return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

bool cpuset_is_subset(const CpuSet *sub, const CpuSet *super) {
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                if (sub->bits[i] & ~super->bits[i])
                        return false;
        return true;
}

bool cpuset_intersects(const CpuSet *a, const CpuSet *b) {
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                if (a->bits[i] & b->bits[i])
                        return true;
        return false;
}

void cpuset_and(CpuSet *ret, const CpuSet *a, const CpuSet *b) {
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                ret->bits[i] = a->bits[i] & b->bits[i];
}

void cpuset_or(CpuSet *ret, const CpuSet *a, const CpuSet *b) {
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                ret->bits[i] = a->bits[i] | b->bits[i];
}

void cpuset_andnot(CpuSet *ret, const CpuSet *a, const CpuSet *b) {
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                ret->bits[i] = a->bits[i] & ~b->bits[i];
}

int cpuset_next(const CpuSet *s, int from) {
        if (from < 0)
                from = 0;
        for (size_t w = (size_t)from / 64; w < CPUSET_WORDS; w++) {
                uint64_t word = s->bits[w];
                if (w == (size_t)from / 64)
                        word &= ~UINT64_C(0) << (from % 64);
                if (word)
                        return (int)(w * 64) + __builtin_ctzll(word);
        }
        return -1;
}

int cpuset_first(const CpuSet *s) {
        return cpuset_next(s, 0);
}

int cpuset_last(const CpuSet *s) {
        for (size_t w = CPUSET_WORDS; w-- > 0;)
                if (s->bits[w])
                        return (int)(w * 64) + 63 - __builtin_clzll(s->bits[w]);
        return -1;
}

/* Parses a decimal CPU number at *p; advances *p. */
static int parse_number(const char **p, unsigned long *ret) {
        if (!isdigit((unsigned char)**p))
                return -EINVAL;
        char *end;
        errno = 0;
        unsigned long v = strtoul(*p, &end, 10);
        if (errno == ERANGE || v >= CPUSET_MAX_CPUS)
                return -ERANGE;
        *p = end;
        *ret = v;
        return 0;
}

static int parse_item(const char **p, CpuSet *s) {
        unsigned long first, last, group = 1;
        int r = parse_number(p, &first);
        if (r < 0)
                return r;
        last = first;
        if (**p == '-') {
                (*p)++;
                r = parse_number(p, &last);
                if (r < 0)
                        return r;
                if (last < first)
                        return -EINVAL;
                if (**p == ':') {
                        (*p)++;
                        r = parse_number(p, &group);
                        if (r < 0)
                                return r;
                        if (group == 0)
                                return -EINVAL;
                }
        }
        for (unsigned long cpu = first; cpu <= last; cpu += group)
                cpuset_set(s, (int)cpu);
        return 0;
}

int cpuset_parse(const char *text, CpuSet *ret) {
        CpuSet s;
        cpuset_zero(&s);

        const char *p = text;
        while (isspace((unsigned char)*p))
                p++;
        while (*p && !isspace((unsigned char)*p)) {
                int r = parse_item(&p, &s);
                if (r < 0)
                        return r;
                if (*p == ',') {
                        p++;
                        if (!isdigit((unsigned char)*p))
                                return -EINVAL;
                } else if (*p && !isspace((unsigned char)*p))
                        return -EINVAL;
        }
        while (isspace((unsigned char)*p))
                p++;
        if (*p)
                return -EINVAL;

        *ret = s;
        return 0;
}

int cpuset_format(const CpuSet *s, char *buf, size_t size) {
        size_t len = 0;
        bool truncated = false;

        if (size == 0)
                return -ENOBUFS;
        buf[0] = '\0';

        for (int first = cpuset_first(s); first >= 0;) {
                int last = first;
                while (cpuset_isset(s, last + 1))
                        last++;

                char item[32];
                int n;
                if (last == first)
                        n = snprintf(item, sizeof(item), "%s%d", len ? "," : "", first);
                else
                        n = snprintf(item, sizeof(item), "%s%d-%d", len ? "," : "", first, last);
                if (len + (size_t)n >= size) {
                        truncated = true;
                        break;
                }
                memcpy(buf + len, item, (size_t)n + 1);
                len += (size_t)n;
                first = cpuset_next(s, last + 1);
        }
        return truncated ? -ENOBUFS : (int)len;
}

int cpuset_to_string(const CpuSet *s, char **ret) {
        /* Worst case "0,2,4,...": at most 5 characters per CPU plus a comma. */
        size_t size = (size_t)cpuset_count(s) * 6 + 1;
        char *buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        int r = cpuset_format(s, buf, size);
        if (r < 0) {
                free(buf);
                return r;
        }
        *ret = buf;
        return 0;
}

int cpuset_read_file(const char *path, CpuSet *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_small_file_alloc(path, CPUSET_FILE_MAX, &text, &len);
        if (r < 0)
                return r;
        if (memchr(text, '\0', len))
                return -EINVAL;
        text[strcspn(text, "\n")] = '\0'; /* the first line: the kernel writes one */
        return cpuset_parse(text, ret);
}
