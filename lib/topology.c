/* SPDX-License-Identifier: MIT */
/*
 * Reads the CPU topology from a sysfs root into dense domain tables (cores,
 * clusters, LLCs, packages, NUMA nodes), and builds synthetic symmetric ones.
 * The kinds of core and capacities are read in topology-kinds.c.
 *
 * Every domain kind is built the same way: each online CPU gets a key (the
 * lowest online CPU of its sibling list, or a kernel id), and CPUs with
 * equal keys form one domain. Walking CPUs in ascending order numbers the
 * domains by their lowest CPU, and keying each CPU once guarantees that the
 * domains partition the online set even when sysfs lists disagree.
 *
 * sysfs is not uniform across kernels and architectures, so every file but
 * the CPU lists is optional: offline CPUs have no topology/ or cache/
 * directory, older x86 kernels (Debian 12's 6.1) have no cpu_capacity,
 * device-tree arm64 has no cache ids, and kernels without NUMA have no node/
 * directory. A missing file falls back to a sane default. Firmware gets
 * these figures wrong in the field (partial CPPC tables, zero or all-ones
 * values), so an optional file that exists but is empty, unparsable, out of
 * range, unreadable or not a regular file falls back the same way and is
 * set aside, named, for the daemon to report (docs/design.md, "Required and
 * optional topology files"). Only cpu/possible and cpu/online stop the
 * load, and the failed file is named then too. Every read is bounded
 * (fileio.h): a FIFO or an endless file in a tree is refused, not waited on.
 */
#include "topology.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "topology-internal.h"

#define CAPACITY_DEFAULT     1024u
#define TOPO_MAX_CACHES      16 /* cache/indexM entries looked at per CPU */
#define TOPO_MAX_CACHE_LEVEL 16

struct CacheInfo {
        unsigned level;
        int key;         /* lowest online CPU sharing this cache */
        int hw_id;       /* cache/indexM/id, -1 when not exposed */
        bool multi_core; /* shared by CPUs of more than one core */
};

static void loader_done(Loader *l) {
        topo_free(l->t);
        for (size_t k = 0; k < _DOMAIN_MAX; k++) {
                free(l->keys[k]);
                free(l->hw[k]);
        }
        free(l->caches);
        free(l->n_caches);
}

/* The longest text a decimal figure or a cache type is read from. */
#define FIGURE_TEXT_MAX 64
/* The longest cpulist file: every CPU, four digits and a comma each, with room to spare. */
#define CPULIST_TEXT_MAX (CPUSET_MAX_CPUS * 6 + 2)
/* How much of a value a reason quotes. */
#define QUOTE_MAX 32

__attribute__((format(printf, 3, 0))) static int loader_vpath(Loader *l, const char *dir,
                                                              const char *fmt, va_list ap) {
        int n = snprintf(l->path, sizeof(l->path), "%s/", dir);
        if (n < 0 || (size_t)n >= sizeof(l->path))
                return -ENAMETOOLONG;
        int m = vsnprintf(l->path + n, sizeof(l->path) - (size_t)n, fmt, ap);
        if (m < 0 || (size_t)m >= sizeof(l->path) - (size_t)n)
                return -ENAMETOOLONG;
        return 0;
}

_printf_(3, 4) static int loader_path(Loader *l, const char *dir, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = loader_vpath(l, dir, fmt, ap);
        va_end(ap);
        return r;
}

_printf_(2, 3) int topo_loader_set_aside(Loader *l, const char *fmt, ...) {
        Topology *t = l->t;

        for (unsigned i = 0; i < t->n_set_aside; i++)
                if (strcmp(t->set_aside[i].path, l->path) == 0)
                        return 0;
        if (t->n_set_aside >= TOPO_SET_ASIDE_MAX) {
                t->n_set_aside_unlisted++;
                return 0;
        }
        if (t->n_set_aside == 0) {
                t->set_aside = calloc(TOPO_SET_ASIDE_MAX, sizeof(TopoSetAside));
                if (!t->set_aside)
                        return -ENOMEM;
        }
        TopoSetAside *e = &t->set_aside[t->n_set_aside];
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&e->reason, fmt, ap);
        va_end(ap);
        if (r < 0) {
                e->reason = NULL;
                return -ENOMEM;
        }
        e->path = strdup(l->path);
        if (!e->path) {
                e->reason = mfree(e->reason);
                return -ENOMEM;
        }
        t->n_set_aside++;
        return 0;
}

/* Sets l->path aside for reason; it then reads as missing. Return: -ENOENT or -ENOMEM. */
#define SET_ASIDE(l, ...)                                       \
        ({                                                      \
                int _r = topo_loader_set_aside(l, __VA_ARGS__); \
                _r < 0 ? _r : -ENOENT;                          \
        })

/* What a reason quotes of a value: its start, what is not printable as \xNN. */
static const char *quote(const char *s, char buf[static QUOTE_MAX * 4 + 4]) {
        size_t n = 0, i;
        for (i = 0; s[i] && i < QUOTE_MAX; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
                        buf[n++] = (char)c;
                else
                        n += (size_t)sprintf(buf + n, "\\x%02x", c);
        }
        if (s[i])
                n += (size_t)sprintf(buf + n, "...");
        buf[n] = '\0';
        return buf;
}

/* Sets l->path aside for the read error r. Return: -ENOENT or -ENOMEM. */
static int set_aside_read_error(Loader *l, int r, size_t max) {
        if (r == -EFBIG)
                return SET_ASIDE(l, "longer than %zu bytes", max);
        if (r == -EBADFD || r == -EISDIR)
                return SET_ASIDE(l, "%s", read_small_file_strerror(r));
        return SET_ASIDE(l, "cannot be read: %s", read_small_file_strerror(r));
}

/*
 * The optional text file at l->path, at most max bytes, without its
 * trailing newlines and spaces.
 *
 * Return: 0 and *ret (caller frees); -ENOENT when missing or set aside; -ENOMEM.
 */
static int optional_text(Loader *l, size_t max, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_small_file_alloc(l->path, max, &text, &len);
        if (r == -ENOENT || r == -ENOMEM)
                return r;
        if (r < 0)
                return set_aside_read_error(l, r, max);
        if (memchr(text, '\0', len))
                return SET_ASIDE(l, "%s", read_small_file_strerror(-EBADMSG));
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
                text[--len] = '\0';
        *ret = TAKE_PTR(text);
        return 0;
}

static int read_long_at(Loader *l, long lo, long hi, long *ret) {
        _cleanup_free_ char *text = NULL;
        char q[QUOTE_MAX * 4 + 4];
        int r = optional_text(l, FIGURE_TEXT_MAX, &text);
        if (r < 0)
                return r;
        if (!text[0])
                return SET_ASIDE(l, "empty, where a number was expected");

        char *end;
        errno = 0;
        long v = strtol(text, &end, 10);
        if (end == text || *end != '\0')
                return SET_ASIDE(l, "\"%s\" is not a decimal number", quote(text, q));
        if (errno == ERANGE || v < lo || v > hi)
                return SET_ASIDE(l, "\"%s\" is out of range %ld..%ld", quote(text, q), lo, hi);
        *ret = v;
        return 0;
}

_printf_(5, 6) int topo_loader_read_long(Loader *l, long lo, long hi, long *ret, const char *fmt,
                                         ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = loader_vpath(l, l->base, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        return read_long_at(l, lo, hi, ret);
}

/* The first line of the optional cpulist at l->path. Return: as topo_loader_read_cpuset(). */
static int read_cpuset_at(Loader *l, CpuSet *ret) {
        _cleanup_free_ char *text = NULL;
        char q[QUOTE_MAX * 4 + 4];
        int r = optional_text(l, CPULIST_TEXT_MAX, &text);
        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = '\0';
        if (cpuset_parse(text, ret) < 0)
                return SET_ASIDE(l, "\"%s\" is no list of CPUs 0..%d", quote(text, q),
                                 CPUSET_MAX_CPUS - 1);
        return 0;
}

_printf_(3, 4) int topo_loader_read_cpuset(Loader *l, CpuSet *ret, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = loader_vpath(l, l->base, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        return read_cpuset_at(l, ret);
}

_printf_(3, 4) int topo_loader_read_device_cpuset(Loader *l, CpuSet *ret, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = loader_vpath(l, l->devices, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        return read_cpuset_at(l, ret);
}

/* The cache types the kernel writes (cache_type_string). Return: as topo_loader_read_long(). */
static int read_cache_type(Loader *l, int cpu, int idx, bool *ret_instruction) {
        static const char *const types[] = { "Data", "Instruction", "Unified" };
        _cleanup_free_ char *text = NULL;
        char q[QUOTE_MAX * 4 + 4];
        int r = loader_path(l, l->base, "cpu/cpu%d/cache/index%d/type", cpu, idx);
        if (r < 0)
                return r;
        r = optional_text(l, FIGURE_TEXT_MAX, &text);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(types); i++)
                if (strcmp(text, types[i]) == 0) {
                        *ret_instruction = i == 1;
                        return 0;
                }
        return SET_ASIDE(l, "\"%s\" is no cache type (Data, Instruction, Unified)", quote(text, q));
}

/* A kernel id as a domain hw_id: -1 when absent, set aside or -1 (the kernel's "none"). */
static int read_hw_id(Loader *l, int cpu, const char *file, int *ret) {
        long v;
        int r = topo_loader_read_long(l, -1, INT_MAX, &v, "cpu/cpu%d/%s", cpu, file);
        if (r == -ENOENT) {
                *ret = -1;
                return 0;
        }
        if (r < 0)
                return r;
        *ret = (int)v;
        return 0;
}

/*
 * The first of the sibling files that exists and can be used, restricted to
 * online CPUs and always holding cpu itself; fallback (or {cpu}) when none.
 */
static int read_siblings(Loader *l, int cpu, const char *const *files, const CpuSet *fallback,
                         CpuSet *ret) {
        CpuSet set;
        int r = -ENOENT;
        for (; *files && r == -ENOENT; files++)
                r = topo_loader_read_cpuset(l, &set, "cpu/cpu%d/%s", cpu, *files);
        if (r == -ENOENT) {
                if (fallback)
                        set = *fallback;
                else
                        cpuset_zero(&set);
        } else if (r < 0)
                return r;
        cpuset_and(&set, &set, &l->t->online);
        cpuset_set(&set, cpu);
        *ret = set;
        return 0;
}

/* A required cpulist, cpu/NAME; on failure l->path names it. Return: as cpuset_read_file(). */
static int read_required_cpuset(Loader *l, const char *name, CpuSet *ret) {
        int r = loader_path(l, l->base, "cpu/%s", name);
        if (r < 0)
                return r;
        r = cpuset_read_file(l->path, ret);
        l->path_failed = r < 0;
        return r;
}

/*
 * cpu/possible and cpu/online, the two files placed needs. Old or partial
 * trees without possible have present or online in its place; without
 * online, whatever is possible minus cpuN/online = 0. Online CPUs are taken
 * only within the possible ones: others have no cpuN/ directory.
 */
static int load_cpu_lists(Loader *l) {
        Topology *t = l->t;
        const char *const lists[] = { "possible", "present", "online" };
        int r = -ENOENT;

        for (size_t i = 0; i < ELEMENTSOF(lists) && r == -ENOENT; i++)
                r = read_required_cpuset(l, lists[i], &t->possible);
        if (r == -ENOENT) /* name the file that is required */
                (void)read_required_cpuset(l, "possible", &t->possible);
        if (r < 0)
                return r;
        if (cpuset_is_empty(&t->possible)) {
                l->path_failed = true;
                return -ENOENT;
        }

        r = read_required_cpuset(l, "online", &t->online);
        if (r == -ENOENT) {
                l->path_failed = false;
                t->online = t->possible;
                CPUSET_FOREACH (cpu, &t->possible) {
                        long v;
                        r = topo_loader_read_long(l, 0, 1, &v, "cpu/cpu%d/online", cpu);
                        if (r == 0 && v == 0)
                                cpuset_clear(&t->online, cpu);
                        else if (r < 0 && r != -ENOENT)
                                return r;
                }
        } else if (r < 0)
                return r;

        if (!cpuset_is_subset(&t->online, &t->possible)) {
                _cleanup_free_ char *outside = NULL, *possible = NULL;
                CpuSet extra;
                cpuset_andnot(&extra, &t->online, &t->possible);
                r = loader_path(l, l->base, "cpu/online");
                if (r >= 0)
                        r = cpuset_to_string(&extra, &outside);
                if (r >= 0)
                        r = cpuset_to_string(&t->possible, &possible);
                if (r >= 0)
                        r = topo_loader_set_aside(
                                l, "names CPUs %s outside cpu/possible (%s), which are left out",
                                outside, possible);
                if (r < 0)
                        return r;
                cpuset_and(&t->online, &t->online, &t->possible);
        }
        if (cpuset_is_empty(&t->online)) {
                r = loader_path(l, l->base, "cpu/online");
                l->path_failed = r >= 0;
                return r < 0 ? r : -ENOENT;
        }
        cpuset_andnot(&t->offline, &t->possible, &t->online);
        t->n_cpus = (unsigned)cpuset_last(&t->possible) + 1;
        return 0;
}

static int loader_alloc(Loader *l, unsigned n_cpus) {
        l->t->cpus = calloc(n_cpus, sizeof(TopoCpu));
        l->caches = calloc((size_t)n_cpus * TOPO_MAX_CACHES, sizeof(CacheInfo));
        l->n_caches = calloc(n_cpus, sizeof(unsigned));
        if (!l->t->cpus || !l->caches || !l->n_caches)
                return -ENOMEM;
        for (size_t k = 0; k < _DOMAIN_MAX; k++) {
                l->keys[k] = calloc(n_cpus, sizeof(int));
                l->hw[k] = calloc(n_cpus, sizeof(int));
                if (!l->keys[k] || !l->hw[k])
                        return -ENOMEM;
        }
        for (unsigned cpu = 0; cpu < n_cpus; cpu++) {
                TopoCpu *c = &l->t->cpus[cpu];
                *c = (TopoCpu){ .cpu = (int)cpu,
                                .core = -1,
                                .cluster = -1,
                                .llc = -1,
                                .package = -1,
                                .node = -1,
                                .capacity = CAPACITY_DEFAULT };
                c->online = cpuset_isset(&l->t->online, (int)cpu);
                c->kind = c->online ? TOPO_CORE_PERFORMANCE : _TOPO_CORE_KIND_INVALID;
        }
        return 0;
}

/* Core, cluster and package keys and ids of one online CPU. */
static int load_cpu_topology(Loader *l, int cpu) {
        static const char *const core_files[] = { "topology/core_cpus_list",
                                                  "topology/thread_siblings_list", NULL };
        static const char *const cluster_files[] = { "topology/cluster_cpus_list", NULL };
        CpuSet core, cluster;
        int r;

        r = read_siblings(l, cpu, core_files, NULL, &core);
        if (r < 0)
                return r;
        l->keys[DOMAIN_CORE][cpu] = cpuset_first(&core);
        r = read_hw_id(l, cpu, "topology/core_id", &l->hw[DOMAIN_CORE][cpu]);
        if (r < 0)
                return r;

        /* No cluster information: every core is its own cluster. */
        r = read_siblings(l, cpu, cluster_files, &core, &cluster);
        if (r < 0)
                return r;
        cpuset_or(&cluster, &cluster, &core);
        l->keys[DOMAIN_CLUSTER][cpu] = cpuset_first(&cluster);
        r = read_hw_id(l, cpu, "topology/cluster_id", &l->hw[DOMAIN_CLUSTER][cpu]);
        if (r < 0)
                return r;
        if (l->hw[DOMAIN_CLUSTER][cpu] == 65535) /* x86 without an L2 id (BAD_APICID) */
                l->hw[DOMAIN_CLUSTER][cpu] = -1;

        r = read_hw_id(l, cpu, "topology/physical_package_id", &l->hw[DOMAIN_PACKAGE][cpu]);
        if (r < 0)
                return r;
        l->keys[DOMAIN_PACKAGE][cpu] = l->hw[DOMAIN_PACKAGE][cpu];
        return 0;
}

/* Node of each online CPU from node/nodeN/cpulist; -1 without NUMA information. */
static int load_nodes(Loader *l) {
        int r;

        CPUSET_FOREACH (cpu, &l->t->online) {
                l->hw[DOMAIN_NODE][cpu] = -1;
        }
        r = loader_path(l, l->base, "node");
        if (r < 0)
                return r;
        DIR *d = opendir(l->path);
        if (!d) {
                if (errno == ENOENT || errno == ENOTDIR)
                        return 0;
                r = set_aside_read_error(l, negative_errno(), 0);
                return r == -ENOENT ? 0 : r;
        }

        r = 0;
        for (struct dirent *de; r >= 0 && (de = readdir(d));) {
                unsigned node;
                int len;
                if (sscanf(de->d_name, "node%u%n", &node, &len) != 1 || de->d_name[len] != '\0' ||
                    node > INT_MAX)
                        continue;
                CpuSet cpus;
                r = topo_loader_read_cpuset(l, &cpus, "node/%s/cpulist", de->d_name);
                if (r == -ENOENT) {
                        r = 0;
                        continue;
                }
                if (r < 0)
                        break;
                cpuset_and(&cpus, &cpus, &l->t->online);
                CPUSET_FOREACH (cpu, &cpus) {
                        int *cur = &l->hw[DOMAIN_NODE][cpu];
                        if (*cur < 0 || (int)node < *cur)
                                *cur = (int)node; /* lowest node wins if lists overlap */
                }
        }
        closedir(d);
        if (r < 0)
                return r;
        CPUSET_FOREACH (cpu, &l->t->online) {
                l->keys[DOMAIN_NODE][cpu] = l->hw[DOMAIN_NODE][cpu];
        }
        return 0;
}

static void domain_tables(Topology *t, TopoDomainKind domain, TopoDomain ***ret_doms,
                          unsigned **ret_n, size_t *ret_field) {
        switch (domain) {
        case DOMAIN_CORE:
                *ret_doms = &t->cores, *ret_n = &t->n_cores;
                *ret_field = offsetof(TopoCpu, core);
                break;
        case DOMAIN_CLUSTER:
                *ret_doms = &t->clusters, *ret_n = &t->n_clusters;
                *ret_field = offsetof(TopoCpu, cluster);
                break;
        case DOMAIN_LLC:
                *ret_doms = &t->llcs, *ret_n = &t->n_llcs;
                *ret_field = offsetof(TopoCpu, llc);
                break;
        case DOMAIN_PACKAGE:
                *ret_doms = &t->packages, *ret_n = &t->n_packages;
                *ret_field = offsetof(TopoCpu, package);
                break;
        default:
                *ret_doms = &t->nodes, *ret_n = &t->n_nodes;
                *ret_field = offsetof(TopoCpu, node);
                break;
        }
}

/*
 * Groups the online CPUs by their key into dense domains, numbered in order of
 * their lowest CPU, and stores each CPU's domain index in its TopoCpu.
 */
static int domains_build(Loader *l, TopoDomainKind domain) {
        Topology *t = l->t;
        TopoDomain **doms;
        unsigned *n;
        size_t field;
        domain_tables(t, domain, &doms, &n, &field);

        /* Keys that are CPU numbers (sibling lists) map through by_cpu in O(1);
         * kernel ids (packages, nodes, fallbacks) are few and searched. */
        unsigned n_online = cpuset_count(&t->online);
        _cleanup_free_ int *dom_keys = malloc(n_online * sizeof(int));
        _cleanup_free_ int *by_cpu = malloc(t->n_cpus * sizeof(int));
        if (!dom_keys || !by_cpu)
                return -ENOMEM;
        for (unsigned cpu = 0; cpu < t->n_cpus; cpu++)
                by_cpu[cpu] = -1;

        unsigned count = 0;
        CPUSET_FOREACH (cpu, &t->online) {
                int key = l->keys[domain][cpu], i = -1;
                bool direct = key >= 0 && (unsigned)key < t->n_cpus;
                if (direct)
                        i = by_cpu[key];
                else
                        for (unsigned j = count; j-- > 0;)
                                if (dom_keys[j] == key) {
                                        i = (int)j;
                                        break;
                                }
                if (i < 0) {
                        i = (int)count++;
                        dom_keys[i] = key;
                        if (direct)
                                by_cpu[key] = i;
                }
                *(int *)((char *)&t->cpus[cpu] + field) = i;
        }

        TopoDomain *d = calloc(MAX(count, 1u), sizeof(TopoDomain));
        if (!d)
                return -ENOMEM;
        for (unsigned i = 0; i < count; i++)
                d[i].id = (int)i, d[i].hw_id = INT_MIN;
        CPUSET_FOREACH (cpu, &t->online) {
                TopoDomain *dom = &d[*(int *)((char *)&t->cpus[cpu] + field)];
                cpuset_set(&dom->cpus, cpu);
                if (dom->hw_id == INT_MIN) /* the lowest CPU's id */
                        dom->hw_id = l->hw[domain][cpu];
        }
        free(*doms);
        *doms = d;
        *n = count;
        return 0;
}

/* The data and unified caches of one online CPU; needs the cores built. */
static int load_cpu_caches(Loader *l, int cpu) {
        const Topology *t = l->t;
        const CpuSet *core = &t->cores[t->cpus[cpu].core].cpus;
        CacheInfo *ci = &l->caches[(size_t)cpu * TOPO_MAX_CACHES];
        unsigned n = 0;
        int r;

        for (int idx = 0; idx < TOPO_MAX_CACHES; idx++) {
                long level;
                bool instruction = false;
                CpuSet shared;

                /* A level that is missing or set aside ends the CPU's caches. */
                r = topo_loader_read_long(l, 1, TOPO_MAX_CACHE_LEVEL, &level,
                                          "cpu/cpu%d/cache/index%d/level", cpu, idx);
                if (r == -ENOENT)
                        break;
                if (r < 0)
                        return r;
                r = read_cache_type(l, cpu, idx, &instruction);
                if (r < 0 && r != -ENOENT)
                        return r;
                if (instruction)
                        continue;
                r = topo_loader_read_cpuset(l, &shared, "cpu/cpu%d/cache/index%d/shared_cpu_list",
                                            cpu, idx);
                if (r == -ENOENT)
                        cpuset_zero(&shared);
                else if (r < 0)
                        return r;
                cpuset_and(&shared, &shared, &t->online);
                cpuset_set(&shared, cpu);

                char name[32];
                snprintf(name, sizeof(name), "cache/index%d/id", idx);
                ci[n] = (CacheInfo){ .level = (unsigned)level,
                                     .key = cpuset_first(&shared),
                                     .multi_core = !cpuset_is_subset(&shared, core) };
                r = read_hw_id(l, cpu, name, &ci[n].hw_id);
                if (r < 0)
                        return r;
                n++;
        }
        l->n_caches[cpu] = n;
        return 0;
}

/*
 * The LLC level is the highest cache level shared by more than one core;
 * where no cache is shared by cores, the highest level (one LLC per core);
 * where no cache is described, LLC = package and llc_level = 0.
 */
static void choose_llcs(Loader *l) {
        Topology *t = l->t;
        unsigned shared_level = 0, any_level = 0;

        TOPO_FOREACH_CPU (cpu, t) {
                const CacheInfo *ci = &l->caches[(size_t)cpu * TOPO_MAX_CACHES];
                for (unsigned i = 0; i < l->n_caches[cpu]; i++) {
                        any_level = MAX(any_level, ci[i].level);
                        if (ci[i].multi_core)
                                shared_level = MAX(shared_level, ci[i].level);
                }
        }
        t->llc_level = shared_level ? shared_level : any_level;

        TOPO_FOREACH_CPU (cpu, t) {
                const CacheInfo *ci = &l->caches[(size_t)cpu * TOPO_MAX_CACHES];
                const CacheInfo *best = NULL;
                /* This CPU's cache at llc_level, else its highest one below it. */
                for (unsigned i = 0; i < l->n_caches[cpu]; i++)
                        if (ci[i].level <= t->llc_level &&
                            (!best || ci[i].level > best->level ||
                             (ci[i].level == best->level && ci[i].multi_core)))
                                best = &ci[i];
                if (best) {
                        l->keys[DOMAIN_LLC][cpu] = best->key;
                        l->hw[DOMAIN_LLC][cpu] = best->hw_id;
                } else {
                        /* Negative keys never collide with the CPU-number keys of caches. */
                        l->keys[DOMAIN_LLC][cpu] = -2 - l->hw[DOMAIN_PACKAGE][cpu];
                        l->hw[DOMAIN_LLC][cpu] = l->hw[DOMAIN_PACKAGE][cpu];
                }
        }
}

/*
 * The threads of a core share its cluster, LLC and package: each CPU takes
 * the keys of its core's lowest CPU. Consistent trees already agree; where a
 * file was missing or set aside for one thread, this keeps the domains
 * nested.
 */
static void keys_follow_cores(Loader *l) {
        static const TopoDomainKind domains[] = { DOMAIN_CLUSTER, DOMAIN_LLC, DOMAIN_PACKAGE };
        const Topology *t = l->t;

        TOPO_FOREACH_CPU (cpu, t) {
                int first = cpuset_first(&t->cores[t->cpus[cpu].core].cpus);
                for (size_t i = 0; first != cpu && i < ELEMENTSOF(domains); i++) {
                        l->keys[domains[i]][cpu] = l->keys[domains[i]][first];
                        l->hw[domains[i]][cpu] = l->hw[domains[i]][first];
                }
        }
}

static int build_all(Loader *l) {
        static const TopoDomainKind order[] = { DOMAIN_CLUSTER, DOMAIN_LLC, DOMAIN_PACKAGE,
                                                DOMAIN_NODE };

        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                int r = domains_build(l, order[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int loader_init(Loader *l, const char *sysfs_root) {
        size_t len = strlen(sysfs_root);
        while (len > 0 && sysfs_root[len - 1] == '/')
                len--;
        int n = snprintf(l->devices, sizeof(l->devices), "%.*s/sys/devices", (int)len, sysfs_root);
        if (n < 0 || (size_t)n >= sizeof(l->devices))
                return -ENAMETOOLONG;
        n = snprintf(l->base, sizeof(l->base), "%s/system", l->devices);
        if (n < 0 || (size_t)n >= sizeof(l->base))
                return -ENAMETOOLONG;
        l->t = calloc(1, sizeof(Topology));
        return l->t ? 0 : -ENOMEM;
}

/* Everything after the CPU lists: each file here is optional. */
static int load_optional(Loader *l) {
        int r = loader_alloc(l, l->t->n_cpus);
        if (r < 0)
                return r;

        TOPO_FOREACH_CPU (cpu, l->t) {
                r = load_cpu_topology(l, cpu);
                if (r < 0)
                        return r;
        }
        r = load_nodes(l);
        if (r < 0)
                return r;
        r = domains_build(l, DOMAIN_CORE);
        if (r < 0)
                return r;
        TOPO_FOREACH_CPU (cpu, l->t) {
                r = load_cpu_caches(l, cpu);
                if (r < 0)
                        return r;
        }
        choose_llcs(l);
        keys_follow_cores(l);
        r = build_all(l);
        if (r < 0)
                return r;
        return topo_kinds_load(l);
}

int topo_load_full(const char *sysfs_root, Topology **ret, char **error_path) {
        _cleanup_(loader_done) Loader l = {};
        int r;

        if (error_path)
                *error_path = NULL;
        if (!sysfs_root || !ret)
                return -EINVAL;
        r = loader_init(&l, sysfs_root);
        if (r < 0)
                return r;
        r = load_cpu_lists(&l);
        if (r >= 0) {
                l.path_failed = false;
                r = load_optional(&l);
        }
        if (r < 0) {
                if (error_path && l.path_failed)
                        *error_path = strdup(l.path);
                return r;
        }

        *ret = TAKE_PTR(l.t);
        return 0;
}

int topo_load(const char *sysfs_root, Topology **ret) {
        return topo_load_full(sysfs_root, ret, NULL);
}

int topo_new_uniform(unsigned packages, unsigned llcs_per_package, unsigned cores_per_llc,
                     unsigned threads_per_core, Topology **ret) {
        _cleanup_(loader_done) Loader l = {};
        int r;

        if (!ret || packages == 0 || llcs_per_package == 0 || cores_per_llc == 0 ||
            threads_per_core == 0)
                return -EINVAL;
        uint64_t n = (uint64_t)packages * llcs_per_package;
        n = n > CPUSET_MAX_CPUS ? n : n * cores_per_llc;
        n = n > CPUSET_MAX_CPUS ? n : n * threads_per_core;
        if (n > CPUSET_MAX_CPUS)
                return -EINVAL;

        l.t = calloc(1, sizeof(Topology));
        if (!l.t)
                return -ENOMEM;
        Topology *t = l.t;
        for (int cpu = 0; cpu < (int)n; cpu++)
                cpuset_set(&t->possible, cpu);
        t->online = t->possible;
        t->n_cpus = (unsigned)n;
        t->llc_level = 3;
        r = loader_alloc(&l, t->n_cpus);
        if (r < 0)
                return r;

        /* Threads of a core are numbered next to each other, cores of an LLC too. */
        for (int cpu = 0; cpu < (int)n; cpu++) {
                int core = cpu / (int)threads_per_core;
                int llc = core / (int)cores_per_llc;
                int package = llc / (int)llcs_per_package;
                int cores_per_package = (int)(cores_per_llc * llcs_per_package);
                l.keys[DOMAIN_CORE][cpu] = l.keys[DOMAIN_CLUSTER][cpu] = core;
                l.hw[DOMAIN_CORE][cpu] = l.hw[DOMAIN_CLUSTER][cpu] = core % cores_per_package;
                l.keys[DOMAIN_LLC][cpu] = l.hw[DOMAIN_LLC][cpu] = llc;
                l.keys[DOMAIN_PACKAGE][cpu] = l.hw[DOMAIN_PACKAGE][cpu] = package;
                l.keys[DOMAIN_NODE][cpu] = l.hw[DOMAIN_NODE][cpu] = package;
        }
        r = domains_build(&l, DOMAIN_CORE);
        if (r < 0)
                return r;
        r = build_all(&l);
        if (r < 0)
                return r;
        topo_kinds_finish(t);

        *ret = TAKE_PTR(l.t);
        return 0;
}

Topology *topo_free(Topology *t) {
        if (!t)
                return NULL;
        free(t->cpus);
        free(t->cores);
        free(t->clusters);
        free(t->llcs);
        free(t->packages);
        free(t->nodes);
        for (unsigned i = 0; i < t->n_set_aside; i++) {
                free(t->set_aside[i].path);
                free(t->set_aside[i].reason);
        }
        free(t->set_aside);
        free(t);
        return NULL;
}

static void json_putp(json_object **j) {
        json_object_put(*j);
}

/* Adds val (owned; released on failure) under key. */
static int json_add(json_object *obj, const char *key, json_object *val) {
        if (!val)
                return -ENOMEM;
        if (json_object_object_add(obj, key, val) < 0) {
                json_object_put(val);
                return -ENOMEM;
        }
        return 0;
}

static int json_add_cpuset(json_object *obj, const char *key, const CpuSet *s) {
        _cleanup_free_ char *text = NULL;
        int r = cpuset_to_string(s, &text);
        if (r < 0)
                return r;
        return json_add(obj, key, json_object_new_string(text));
}

static int json_array_append(json_object *array, json_object *val) {
        if (!val)
                return -ENOMEM;
        if (json_object_array_add(array, val) < 0) {
                json_object_put(val);
                return -ENOMEM;
        }
        return 0;
}

static json_object *json_llc(const Topology *t, const TopoDomain *d) {
        _cleanup_(json_putp) json_object *o = json_object_new_object();
        if (!o || json_add(o, "id", json_object_new_int(d->id)) < 0 ||
            json_add(o, "hw_id", json_object_new_int(d->hw_id)) < 0 ||
            json_add_cpuset(o, "cpus", &d->cpus) < 0 ||
            json_add(o, "level", json_object_new_int((int)t->llc_level)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

/* Adds s under key, or null where s is NULL (an offline CPU's kind). */
static int json_add_string_or_null(json_object *obj, const char *key, const char *s) {
        if (s)
                return json_add(obj, key, json_object_new_string(s));
        return json_object_object_add(obj, key, NULL) < 0 ? -ENOMEM : 0;
}

static json_object *json_cpu(const TopoCpu *c) {
        _cleanup_(json_putp) json_object *o = json_object_new_object();
        if (!o || json_add(o, "cpu", json_object_new_int(c->cpu)) < 0 ||
            json_add(o, "online", json_object_new_boolean(c->online)) < 0 ||
            json_add(o, "core", json_object_new_int(c->core)) < 0 ||
            json_add(o, "cluster", json_object_new_int(c->cluster)) < 0 ||
            json_add(o, "llc", json_object_new_int(c->llc)) < 0 ||
            json_add(o, "package", json_object_new_int(c->package)) < 0 ||
            json_add(o, "node", json_object_new_int(c->node)) < 0 ||
            json_add_string_or_null(o, "kind", topo_core_kind_to_string(c->kind)) < 0 ||
            json_add(o, "capacity", json_object_new_int64(c->capacity)) < 0)
                return NULL;
        return TAKE_PTR(o);
}

/* "kinds": {"performance": cpulist, "efficient": ..., "low-power": ...}, every kind named. */
static int json_add_kinds(json_object *obj, const Topology *t) {
        _cleanup_(json_putp) json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        for (TopoCoreKind k = 0; k < _TOPO_CORE_KIND_MAX; k++) {
                int r = json_add_cpuset(o, topo_core_kind_to_string(k), &t->kind_cpus[k]);
                if (r < 0)
                        return r;
        }
        int r = json_add(obj, "kinds", TAKE_PTR(o));
        if (r < 0)
                return r;
        return json_add(obj, "capacity_source",
                        json_object_new_string(topo_capacity_source_to_string(t->capacity_source)));
}

static int json_add_counts(json_object *o, const Topology *t) {
        const struct {
                const char *key;
                unsigned n;
        } counts[] = {
                { "cores", t->n_cores },    { "clusters", t->n_clusters },
                { "llc_count", t->n_llcs }, { "packages", t->n_packages },
                { "nodes", t->n_nodes },    { "llc_level", t->llc_level },
        };
        for (size_t i = 0; i < ELEMENTSOF(counts); i++) {
                int r = json_add(o, counts[i].key, json_object_new_int64(counts[i].n));
                if (r < 0)
                        return r;
        }
        return json_add(o, "asymmetric", json_object_new_boolean(t->asymmetric));
}

/* "set_aside": [{path, reason}], and how many more were not listed. */
static int json_add_set_aside(json_object *obj, const Topology *t) {
        _cleanup_(json_putp) json_object *list = json_object_new_array();
        if (!list)
                return -ENOMEM;
        for (unsigned i = 0; i < t->n_set_aside; i++) {
                _cleanup_(json_putp) json_object *e = json_object_new_object();
                if (!e || json_add(e, "path", json_object_new_string(t->set_aside[i].path)) < 0 ||
                    json_add(e, "reason", json_object_new_string(t->set_aside[i].reason)) < 0 ||
                    json_array_append(list, TAKE_PTR(e)) < 0)
                        return -ENOMEM;
        }
        int r = json_add(obj, "set_aside", TAKE_PTR(list));
        if (r < 0)
                return r;
        return json_add(obj, "set_aside_unlisted", json_object_new_int64(t->n_set_aside_unlisted));
}

int topo_to_json(const Topology *t, char **ret) {
        _cleanup_(json_putp) json_object *o = json_object_new_object();
        json_object *llcs, *cpus;
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_cpuset(o, "possible", &t->possible);
        if (r >= 0)
                r = json_add_cpuset(o, "online", &t->online);
        if (r >= 0)
                r = json_add_cpuset(o, "offline", &t->offline);
        if (r >= 0)
                r = json_add_counts(o, t);
        if (r >= 0)
                r = json_add_kinds(o, t);
        if (r >= 0)
                r = json_add(o, "llcs", llcs = json_object_new_array());
        for (unsigned i = 0; r >= 0 && i < t->n_llcs; i++)
                r = json_array_append(llcs, json_llc(t, &t->llcs[i]));
        if (r >= 0)
                r = json_add(o, "cpus", cpus = json_object_new_array());
        for (unsigned cpu = 0; r >= 0 && cpu < t->n_cpus; cpu++)
                if (cpuset_isset(&t->possible, (int)cpu))
                        r = json_array_append(cpus, json_cpu(&t->cpus[cpu]));
        if (r >= 0)
                r = json_add_set_aside(o, t);
        if (r < 0)
                return r;

        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        char *copy = text ? strdup(text) : NULL;
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}
