/* SPDX-License-Identifier: MIT */
/*
 * What the topology's own files share (topology.c: the loader, domains and
 * the JSON form; topology-kinds.c: kinds of core and capacities); not part
 * of the library's interface.
 */
#pragma once

#include <limits.h>

#include "macro.h"
#include "topology.h"

typedef enum TopoDomainKind {
        DOMAIN_CORE,
        DOMAIN_CLUSTER,
        DOMAIN_LLC,
        DOMAIN_PACKAGE,
        DOMAIN_NODE,
        _DOMAIN_MAX,
} TopoDomainKind;

typedef struct CacheInfo CacheInfo;

/* State of one topo_load() or topo_new_uniform(); owns everything it points to. */
typedef struct Loader {
        char devices[PATH_MAX]; /* SYSFS_ROOT/sys/devices */
        char base[PATH_MAX];    /* SYSFS_ROOT/sys/devices/system */
        Topology *t;
        int *keys[_DOMAIN_MAX]; /* per CPU: equal keys = same domain */
        int *hw[_DOMAIN_MAX];   /* per CPU: the kernel's id of its domain */
        CacheInfo *caches;      /* TOPO_MAX_CACHES per CPU */
        unsigned *n_caches;     /* per CPU */
} Loader;

/*
 * topo_loader_read_long() - a decimal file under l->base, the path formatted from
 * fmt ("cpu/cpu%d/cpu_capacity").
 *
 * Return: 0 and *ret set; -ENOENT when the file is missing; -EINVAL when it
 * does not hold one decimal number; other negative errno on read failures.
 */
_printf_(3, 4) int topo_loader_read_long(const Loader *l, long *ret, const char *fmt, ...);

/* topo_loader_read_cpuset() - a cpulist file under l->base. Return: as cpuset_read_file(). */
_printf_(3, 4) int topo_loader_read_cpuset(const Loader *l, CpuSet *ret, const char *fmt, ...);

/*
 * topo_kinds_load() - the kind and capacity of each online CPU, the capacity
 * source, the per-kind sets and the asymmetric flag (topology-kinds.c).
 * Needs the LLC domains built.
 *
 * Return: 0, -ENOMEM, or negative errno from a file that exists but cannot
 * be read or parsed.
 */
int topo_kinds_load(Loader *l);

/* topo_kinds_finish() - the per-kind sets and the asymmetric flag from the CPUs' kinds and
 * capacities. */
void topo_kinds_finish(Topology *t);
