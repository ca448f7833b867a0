/* SPDX-License-Identifier: MIT */
/*
 * The CPU topology placed reasons about: online CPUs, SMT cores, clusters,
 * last-level-cache (LLC) domains, packages, NUMA nodes, and each CPU's kind
 * of core and relative capacity, read from a sysfs root so tests run on
 * fixture trees of machines we do not have.
 *
 * Domains are numbered densely (0..n-1) in order of their lowest CPU, so the
 * same machine always yields the same ids. Only online CPUs belong to a
 * domain; a domain with no online CPU is not listed.
 *
 * Only cpu/possible and cpu/online are required; every other file is an
 * optional figure (docs/design.md, "Required and optional topology files").
 * One that exists but cannot be used is set aside as if it were missing and
 * listed in Topology.set_aside, for the caller to report: the library does
 * not log.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>

#include "cpuset.h"

/*
 * The kind of a core, from what the kernel shows (docs/design.md, "Kinds of
 * core and capacity"). A machine whose cores are all alike has only
 * performance cores: the kind names the biggest cores present, not a
 * particular microarchitecture.
 */
typedef enum TopoCoreKind {
        TOPO_CORE_PERFORMANCE, /* P-cores, AMD's full cores, big */
        TOPO_CORE_EFFICIENT,   /* E-cores, AMD's compact "c" cores, LITTLE */
        TOPO_CORE_LOW_POWER,   /* LP E-cores off the compute die; any third tier */
        _TOPO_CORE_KIND_MAX,
        _TOPO_CORE_KIND_INVALID = -EINVAL, /* an offline CPU: nothing read */
} TopoCoreKind;

/* Which file decided the capacities (topology-kinds.c says why in this order). */
typedef enum TopoCapacitySource {
        TOPO_CAPACITY_NONE,         /* nothing told the CPUs apart: all 1024 */
        TOPO_CAPACITY_CPU_CAPACITY, /* cpuN/cpu_capacity, values that differ */
        TOPO_CAPACITY_CPPC,         /* CPPC highest_perf, per kind */
        TOPO_CAPACITY_PMU,          /* the hybrid PMU's kinds, at default ratios */
        _TOPO_CAPACITY_SOURCE_MAX,
        _TOPO_CAPACITY_SOURCE_INVALID = -EINVAL,
} TopoCapacitySource;

typedef struct TopoCpu {
        int cpu; /* CPU number */
        bool online;
        int core;          /* dense index into Topology.cores, -1 when offline */
        int cluster;       /* dense index into Topology.clusters, -1 when offline */
        int llc;           /* dense index into Topology.llcs, -1 when offline */
        int package;       /* dense index into Topology.packages, -1 when offline */
        int node;          /* dense index into Topology.nodes, -1 when offline */
        TopoCoreKind kind; /* _TOPO_CORE_KIND_INVALID when offline */
        unsigned capacity; /* relative capacity, 1024 = the biggest CPU; 1024 when offline */
} TopoCpu;

typedef struct TopoDomain {
        int id;      /* dense index */
        int hw_id;   /* the kernel's id (core, package, node, cache id); -1 if none */
        CpuSet cpus; /* online CPUs in this domain */
} TopoDomain;

/* An optional file that could not be used, and why; its figure falls back as if it were missing. */
typedef struct TopoSetAside {
        char *path;   /* the file, under the sysfs root */
        char *reason; /* the value it held and what is wrong with it, or the read error */
} TopoSetAside;

/* Files listed in Topology.set_aside at most; the rest are only counted. */
#define TOPO_SET_ASIDE_MAX 64u

typedef struct Topology {
        CpuSet possible;
        CpuSet online;
        CpuSet offline; /* possible but not online */

        unsigned n_cpus; /* entries in cpus[]: highest possible CPU + 1 */
        TopoCpu *cpus;   /* indexed by CPU number */

        TopoDomain *cores;
        unsigned n_cores;
        TopoDomain *clusters;
        unsigned n_clusters;
        TopoDomain *llcs;
        unsigned n_llcs;
        TopoDomain *packages;
        unsigned n_packages;
        TopoDomain *nodes;
        unsigned n_nodes;

        /* Cache level the LLCs were taken from; 0 when caches were not
         * described and LLC = package was assumed. */
        unsigned llc_level;

        CpuSet kind_cpus[_TOPO_CORE_KIND_MAX]; /* online CPUs of each kind */
        TopoCapacitySource capacity_source;
        bool asymmetric; /* CPUs differ in kind or capacity (big.LITTLE, hybrid) */

        TopoSetAside *set_aside; /* optional files set aside, each once, in the order read; owned */
        unsigned n_set_aside;
        unsigned n_set_aside_unlisted; /* set aside past TOPO_SET_ASIDE_MAX */
} Topology;

/*
 * topo_load_full() - read the topology under sysfs_root ("/" for the live
 * system). Optional files that cannot be used are set aside
 * (Topology.set_aside), never an error.
 * @error_path: where not NULL, set on failure to the required file that
 *   stopped the load (caller frees), or NULL where no file is to blame
 *   (-ENOMEM, a root too long for a path).
 *
 * Return: 0 and *ret set; -ENOENT when cpu/possible (nor cpu/present or
 * cpu/online in its place) is missing or no possible CPU is online; -EINVAL
 * when cpu/possible or cpu/online is no cpulist; other negative errno when
 * one cannot be read (-EFBIG, -EBADFD as read_small_file()). *ret untouched
 * on failure.
 */
int topo_load_full(const char *sysfs_root, Topology **ret, char **error_path);

/* topo_load() - topo_load_full() without the failed file's name. */
int topo_load(const char *sysfs_root, Topology **ret);

/*
 * topo_new_uniform() - a synthetic symmetric machine, for benchmarks and tests:
 * packages x llcs_per_package x cores_per_llc x threads_per_core CPUs, all
 * online, one NUMA node per package, clusters = cores.
 *
 * Return: 0, -EINVAL for zero sizes or more than CPUSET_MAX_CPUS CPUs, -ENOMEM.
 */
int topo_new_uniform(unsigned packages, unsigned llcs_per_package, unsigned cores_per_llc,
                     unsigned threads_per_core, Topology **ret);

Topology *topo_free(Topology *t);

/*
 * topo_to_json() - the topology as a JSON object string (keys "online",
 * "offline", "llcs" [{id, cpus, level}], "cores", "clusters", "packages",
 * "nodes", "asymmetric", "capacity_source", "kinds" {performance, efficient,
 * low-power: cpulists}, "cpus" [{cpu, core, cluster, llc, package, node,
 * kind (null when offline), capacity}], "set_aside" [{path, reason}],
 * "set_aside_unlisted"). Caller frees *ret.
 *
 * Return: 0 or -ENOMEM.
 */
int topo_to_json(const Topology *t, char **ret);

/* Names as the JSON form and docs write them ("performance", "low-power"); NULL out of range. */
const char *topo_core_kind_to_string(TopoCoreKind k);
int topo_core_kind_from_string(const char *s);
/* "none", "cpu_capacity", "cppc", "pmu"; NULL out of range. */
const char *topo_capacity_source_to_string(TopoCapacitySource s);
int topo_capacity_source_from_string(const char *s);

/* Iterates over the online CPUs of t in ascending order. */
#define TOPO_FOREACH_CPU(cpu, t) CPUSET_FOREACH (cpu, &(t)->online)

static inline void topo_freep(Topology **t) {
        topo_free(*t);
}
