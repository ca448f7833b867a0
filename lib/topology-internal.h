/* SPDX-License-Identifier: MIT */
/*
 * What the topology's own files share (topology.c: the loader, domains and
 * the JSON form; topology-kinds.c: kinds of core and capacities); not part
 * of the library's interface.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>

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
        char path[PATH_MAX];    /* the file read last: named when it is set aside or fails */
        bool path_failed;       /* a required file failed: path names it */
        Topology *t;
        int *keys[_DOMAIN_MAX]; /* per CPU: equal keys = same domain */
        int *hw[_DOMAIN_MAX];   /* per CPU: the kernel's id of its domain */
        CacheInfo *caches;      /* TOPO_MAX_CACHES per CPU */
        unsigned *n_caches;     /* per CPU */
} Loader;

/*
 * topo_loader_read_long() - an optional decimal figure in lo..hi under
 * l->base, the path formatted from fmt ("cpu/cpu%d/cpu_capacity"). A file
 * that cannot be read, is not one decimal number or lies outside lo..hi is
 * set aside (topo_loader_set_aside()) and reads as missing.
 *
 * Return: 0 and *ret set; -ENOENT when the file is missing or set aside;
 * -ENOMEM or -ENAMETOOLONG.
 */
_printf_(5, 6) int topo_loader_read_long(Loader *l, long lo, long hi, long *ret, const char *fmt,
                                         ...);

/* topo_loader_read_cpuset() - an optional cpulist file under l->base, set aside as
 * topo_loader_read_long() where it is no cpulist. Return: as topo_loader_read_long(). */
_printf_(3, 4) int topo_loader_read_cpuset(Loader *l, CpuSet *ret, const char *fmt, ...);

/* topo_loader_read_device_cpuset() - the same under l->devices (the hybrid PMUs). */
_printf_(3, 4) int topo_loader_read_device_cpuset(Loader *l, CpuSet *ret, const char *fmt, ...);

/*
 * topo_loader_set_aside() - note that the file at l->path cannot be used, and
 * why (the reason formatted from fmt); a file already noted is not noted again.
 *
 * Return: 0 or -ENOMEM.
 */
_printf_(2, 3) int topo_loader_set_aside(Loader *l, const char *fmt, ...);

/*
 * topo_kinds_load() - the kind and capacity of each online CPU, the capacity
 * source, the per-kind sets and the asymmetric flag (topology-kinds.c).
 * Needs the LLC domains built.
 *
 * Return: 0 or -ENOMEM; files that cannot be used are set aside.
 */
int topo_kinds_load(Loader *l);

/* topo_kinds_finish() - the per-kind sets and the asymmetric flag from the CPUs' kinds and
 * capacities. */
void topo_kinds_finish(Topology *t);
