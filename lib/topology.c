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
 * directory. A missing file falls back to a sane default; a file that exists
 * but cannot be read or parsed is an error, because guessing then would hide
 * a real problem.
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

#define CAPACITY_DEFAULT 1024u
#define TOPO_MAX_CACHES  16 /* cache/indexM entries looked at per CPU */

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

__attribute__((format(printf, 4, 0))) static int
path_vformat(char *buf, size_t size, const char *base, const char *fmt, va_list ap) {
        int n = snprintf(buf, size, "%s/", base);
        if (n < 0 || (size_t)n >= size)
                return -ENAMETOOLONG;
        int m = vsnprintf(buf + n, size - (size_t)n, fmt, ap);
        if (m < 0 || (size_t)m >= size - (size_t)n)
                return -ENAMETOOLONG;
        return 0;
}

/* Reads a small file (an id, a type word) without the trailing newline. */
static int read_word(const char *path, char *buf, size_t size) {
        int r = read_small_file_line(path, buf, size);
        if (r == -EFBIG)
                return -EINVAL; /* longer than any word we expect */
        return r < 0 ? r : 0;
}

_printf_(4, 5) static int read_word_at(const Loader *l, char *buf, size_t size, const char *fmt,
                                       ...) {
        char path[PATH_MAX];
        va_list ap;
        va_start(ap, fmt);
        int r = path_vformat(path, sizeof(path), l->base, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        return read_word(path, buf, size);
}

_printf_(3, 4) int topo_loader_read_long(const Loader *l, long *ret, const char *fmt, ...) {
        char path[PATH_MAX], buf[64];
        va_list ap;
        va_start(ap, fmt);
        int r = path_vformat(path, sizeof(path), l->base, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        r = read_word(path, buf, sizeof(buf));
        if (r < 0)
                return r;

        char *end;
        errno = 0;
        long v = strtol(buf, &end, 10);
        if (errno != 0 || end == buf || *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

_printf_(3, 4) int topo_loader_read_cpuset(const Loader *l, CpuSet *ret, const char *fmt, ...) {
        char path[PATH_MAX];
        va_list ap;
        va_start(ap, fmt);
        int r = path_vformat(path, sizeof(path), l->base, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        return cpuset_read_file(path, ret);
}

/* A kernel id as a domain hw_id: -1 when absent or negative (the kernel prints -1 for none). */
static int read_hw_id(const Loader *l, int cpu, const char *file, int *ret) {
        long v;
        int r = topo_loader_read_long(l, &v, "cpu/cpu%d/%s", cpu, file);
        if (r == -ENOENT) {
                *ret = -1;
                return 0;
        }
        if (r < 0)
                return r;
        *ret = v < 0 || v > INT_MAX ? -1 : (int)v;
        return 0;
}

/*
 * The first of the sibling files that exists, restricted to online CPUs and
 * always holding cpu itself; fallback (or {cpu}) when none exists.
 */
static int read_siblings(const Loader *l, int cpu, const char *const *files, const CpuSet *fallback,
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

static int load_cpu_lists(Loader *l) {
        Topology *t = l->t;
        const char *const lists[] = { "possible", "present", "online" };
        int r = -ENOENT;

        for (size_t i = 0; i < ELEMENTSOF(lists) && r == -ENOENT; i++)
                r = topo_loader_read_cpuset(l, &t->possible, "cpu/%s", lists[i]);
        if (r < 0)
                return r;
        r = topo_loader_read_cpuset(l, &t->online, "cpu/online");
        if (r == -ENOENT) {
                /* Old or partial trees: whatever is possible, minus cpuN/online = 0. */
                t->online = t->possible;
                CPUSET_FOREACH (cpu, &t->possible) {
                        long v;
                        if (topo_loader_read_long(l, &v, "cpu/cpu%d/online", cpu) == 0 && v == 0)
                                cpuset_clear(&t->online, cpu);
                }
        } else if (r < 0)
                return r;

        cpuset_or(&t->possible, &t->possible, &t->online);
        if (cpuset_is_empty(&t->online))
                return -ENOENT;
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
        char path[PATH_MAX];
        int r;

        CPUSET_FOREACH (cpu, &l->t->online) {
                l->hw[DOMAIN_NODE][cpu] = -1;
        }
        r = snprintf(path, sizeof(path), "%s/node", l->base);
        if (r < 0 || (size_t)r >= sizeof(path))
                return -ENAMETOOLONG;
        DIR *d = opendir(path);
        if (!d)
                return errno == ENOENT || errno == ENOTDIR ? 0 : negative_errno();

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
                char type[32];
                CpuSet shared;

                r = topo_loader_read_long(l, &level, "cpu/cpu%d/cache/index%d/level", cpu, idx);
                if (r == -ENOENT)
                        break;
                if (r < 0)
                        return r;
                if (level <= 0 || level > 16)
                        return -EINVAL;
                r = read_word_at(l, type, sizeof(type), "cpu/cpu%d/cache/index%d/type", cpu, idx);
                if (r < 0 && r != -ENOENT)
                        return r;
                if (r == 0 && strcmp(type, "Instruction") == 0)
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

int topo_load(const char *sysfs_root, Topology **ret) {
        _cleanup_(loader_done) Loader l = {};
        int r;

        if (!sysfs_root || !ret)
                return -EINVAL;
        r = loader_init(&l, sysfs_root);
        if (r < 0)
                return r;
        r = load_cpu_lists(&l);
        if (r < 0)
                return r;
        r = loader_alloc(&l, l.t->n_cpus);
        if (r < 0)
                return r;

        TOPO_FOREACH_CPU (cpu, l.t) {
                r = load_cpu_topology(&l, cpu);
                if (r < 0)
                        return r;
        }
        r = load_nodes(&l);
        if (r < 0)
                return r;
        r = domains_build(&l, DOMAIN_CORE);
        if (r < 0)
                return r;
        TOPO_FOREACH_CPU (cpu, l.t) {
                r = load_cpu_caches(&l, cpu);
                if (r < 0)
                        return r;
        }
        choose_llcs(&l);
        r = build_all(&l);
        if (r < 0)
                return r;
        r = topo_kinds_load(&l);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(l.t);
        return 0;
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
        if (r < 0)
                return r;

        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        char *copy = text ? strdup(text) : NULL;
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}
