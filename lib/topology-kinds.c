/* SPDX-License-Identifier: MIT */
/*
 * The kind of each core (performance, efficient, low-power) and its relative
 * capacity, read from what kernels show. Laptops mix kinds of core: Intel
 * hybrid parts since Alder Lake (P- and E-cores; LP E-cores off the compute
 * die since Meteor Lake), AMD's compact "c" cores beside full ones (Phoenix 2,
 * Strix Point). Debian 12's kernel (6.1) gives x86 no cpu_capacity file at
 * all, so capacity alone called such a machine symmetric.
 *
 * Capacity: the first source that tells the online CPUs apart decides.
 *  1. cpuN/cpu_capacity, when its values differ: the scheduler's own view
 *     where the architecture sets it (arm64 always; x86 hybrid only since
 *     6.12, and only with SMT off, so equal values there say nothing).
 *  2. CPPC highest_perf: the firmware's per-CPU performance ceiling, the
 *     figure intel_pstate and amd-pstate rank cores by (ITMT, preferred
 *     cores). Capacity is per kind, the kind's highest value scaled so the
 *     highest CPU is 1024: preferred-core rankings within a kind never make
 *     CPUs unequal.
 *  3. The hybrid PMU's kinds, at default ratios (PMU_CAPACITY_*).
 *  4. None: every CPU 1024.
 *
 * Kind: from Intel's hybrid PMUs wherever they exist (they say P or E, only
 * no ratio); else from clear gaps in the deciding figures. Walking the
 * distinct values from the highest down, one below KIND_GAP_PCT percent of
 * the value above it starts the next kind. Preferred-core rankings move in
 * steps of a few percent (a Ryzen 9 7950X's cores rank 166 to 236 in steps
 * of 5, an i9-13950HX's favoured P-cores 70 against 68) and stay one kind,
 * however far the lowest falls from the top; the kinds shipped so far sit 35
 * to 45 percent apart (E/P 40/68 on that i9, Zen 5c/Zen 5 about 3.3/5.1 GHz).
 *
 * Where the files are, under SYSFS_ROOT/sys/devices: cpu_core/cpus and
 * cpu_atom/cpus (perf's hybrid PMUs, tools/perf/Documentation/intel-hybrid.txt);
 * system/cpu/cpuN/cpu_capacity; system/cpu/cpuN/acpi_cppc/highest_perf
 * (Documentation/admin-guide/acpi/cppc_sysfs.rst); and amd-pstate's
 * system/cpu/cpufreq/policyN/amd_pstate_highest_perf and
 * amd_pstate_prefcore_ranking (Documentation/admin-guide/pm/amd-pstate.rst).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpuset.h"
#include "macro.h"
#include "string-table.h"
#include "topology-internal.h"

#define CAPACITY_SCALE 1024u

/* A value below this percentage of the next higher one starts the next kind. */
#define KIND_GAP_PCT 80u

/*
 * Capacities when only the hybrid PMU tells kinds apart. intel_pstate turns
 * HWP performance into frequency at 78741 kHz a unit on P-cores and 100000
 * on E-cores, "approximately 100000/1.27" (drivers/cpufreq/intel_pstate.c,
 * HYBRID_SCALING_FACTOR_ADL; 80000 on Meteor Lake): a P-core does about
 * 1.25-1.27 times an E-core's work per clock. With the E/P clock ceilings of
 * shipped parts (i7-12700H 3.5/4.7 GHz, Core Ultra 7 155H 3.8/4.8 GHz) an
 * E-core is 0.59-0.63 of a P-core, the 155H's LP E-cores (2.5 GHz) 0.42.
 * Rounded: 0.6 and 0.4.
 */
#define PMU_CAPACITY_EFFICIENT 614u /* 0.6 x 1024 */
#define PMU_CAPACITY_LOW_POWER 410u /* 0.4 x 1024 */

static const char *const topo_core_kind_table[_TOPO_CORE_KIND_MAX] = {
        [TOPO_CORE_PERFORMANCE] = "performance",
        [TOPO_CORE_EFFICIENT] = "efficient",
        [TOPO_CORE_LOW_POWER] = "low-power",
};
DEFINE_STRING_TABLE_LOOKUP(topo_core_kind, TopoCoreKind);

static const char *const topo_capacity_source_table[_TOPO_CAPACITY_SOURCE_MAX] = {
        [TOPO_CAPACITY_NONE] = "none",
        [TOPO_CAPACITY_CPU_CAPACITY] = "cpu_capacity",
        [TOPO_CAPACITY_CPPC] = "cppc",
        [TOPO_CAPACITY_PMU] = "pmu",
};
DEFINE_STRING_TABLE_LOOKUP(topo_capacity_source, TopoCapacitySource);

/* One decimal file per CPU: DIR<cpu>/FILE under SYSFS_ROOT/sys/devices/system, in lo..hi. */
typedef struct FigureFile {
        const char *dir;
        const char *file;
        long hi; /* the highest value taken; the lowest is 1 */
} FigureFile;

/*
 * CPPC highest_perf, best first. amd_pstate_highest_perf is amd-pstate's own
 * figure: kernels that know heterogeneous AMD parts give it per core type
 * with the preferred-core ranking taken out (arch/x86/kernel/acpi/cppc.c),
 * older ones give every CPU the same 166 with preferred cores on (it then
 * says nothing) or the raw value. acpi_cppc/highest_perf is the firmware's
 * raw value, ranking included. amd_pstate_prefcore_ranking is that raw value
 * again but moves at run time (thermals, ageing): last. amd-pstate registers
 * one cpufreq policy per CPU, so policyN is CPU N's.
 */
static const FigureFile cppc_files[] = {
        { "cpu/cpufreq/policy", "amd_pstate_highest_perf", UINT32_MAX },
        { "cpu/cpu", "acpi_cppc/highest_perf", UINT32_MAX },
        { "cpu/cpufreq/policy", "amd_pstate_prefcore_ranking", UINT32_MAX },
};

/*
 * Reads f for every online CPU into fig[] (0 where it is missing or set
 * aside: 0 or less, or above f->hi, is no figure any kernel writes).
 *
 * Return: how many online CPUs have a figure, or -ENOMEM.
 */
static int figures_read(Loader *l, const FigureFile *f, unsigned *fig) {
        int n = 0;

        TOPO_FOREACH_CPU (cpu, l->t) {
                long v;
                int r = topo_loader_read_long(l, 1, f->hi, &v, "%s%d/%s", f->dir, cpu, f->file);
                fig[cpu] = 0;
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return r;
                fig[cpu] = (unsigned)v;
                n++;
        }
        return n;
}

static bool figures_differ(const Topology *t, const unsigned *fig) {
        int first = cpuset_first(&t->online);

        TOPO_FOREACH_CPU (cpu, t) {
                if (fig[cpu] != fig[first])
                        return true;
        }
        return false;
}

/*
 * The capacity source and its figure for each online CPU: cpu_capacity (a
 * CPU without the file counts as 1024, the kernel's default), else the first
 * CPPC file that every online CPU has. A source counts only where its
 * figures differ: equal values tell nothing apart.
 */
static int figures_load(Loader *l, unsigned *fig, TopoCapacitySource *ret) {
        /* The scheduler's capacities never exceed SCHED_CAPACITY_SCALE. */
        static const FigureFile cpu_capacity = { "cpu/cpu", "cpu_capacity", CAPACITY_SCALE };
        unsigned n_online = cpuset_count(&l->t->online);
        int r;

        r = figures_read(l, &cpu_capacity, fig);
        if (r < 0)
                return r;
        if (r > 0) {
                TOPO_FOREACH_CPU (cpu, l->t) {
                        if (fig[cpu] == 0)
                                fig[cpu] = CAPACITY_SCALE;
                }
                if (figures_differ(l->t, fig)) {
                        *ret = TOPO_CAPACITY_CPU_CAPACITY;
                        return 0;
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(cppc_files); i++) {
                r = figures_read(l, &cppc_files[i], fig);
                if (r < 0)
                        return r;
                if ((unsigned)r == n_online && figures_differ(l->t, fig)) {
                        *ret = TOPO_CAPACITY_CPPC;
                        return 0;
                }
        }
        *ret = TOPO_CAPACITY_NONE;
        return 0;
}

/* A hybrid PMU's cpus file (cpu_core, cpu_atom); a missing or set-aside one is an empty set. */
static int pmu_cpus_read(Loader *l, const char *pmu, CpuSet *ret) {
        int r = topo_loader_read_device_cpuset(l, ret, "%s/cpus", pmu);
        if (r == -ENOENT) {
                cpuset_zero(ret);
                return 0;
        }
        return r;
}

/*
 * Kinds from Intel's hybrid PMUs: cpu_core CPUs are performance, cpu_atom
 * ones efficient, or low-power where their LLC holds no cpu_core CPU
 * (Meteor Lake's LP E-cores on the SoC tile share no L3 with the compute
 * tile). Needs the LLC domains.
 *
 * Return: 1 when the PMUs name online CPUs, 0 when they name none (not a
 * hybrid part), or -ENOMEM.
 */
static int kinds_from_pmu(Loader *l) {
        Topology *t = l->t;
        CpuSet core, atom;
        int r;

        r = pmu_cpus_read(l, "cpu_core", &core);
        if (r < 0)
                return r;
        r = pmu_cpus_read(l, "cpu_atom", &atom);
        if (r < 0)
                return r;
        cpuset_and(&core, &core, &t->online);
        cpuset_and(&atom, &atom, &t->online);
        if (cpuset_is_empty(&core) && cpuset_is_empty(&atom))
                return 0;

        TOPO_FOREACH_CPU (cpu, t) {
                TopoCpu *c = &t->cpus[cpu];
                if (!cpuset_isset(&atom, cpu) || cpuset_isset(&core, cpu))
                        c->kind = TOPO_CORE_PERFORMANCE;
                else if (!cpuset_is_empty(&core) &&
                         !cpuset_intersects(&t->llcs[c->llc].cpus, &core))
                        c->kind = TOPO_CORE_LOW_POWER;
                else
                        c->kind = TOPO_CORE_EFFICIENT;
        }
        return 1;
}

static int unsigned_cmp_desc(const void *x, const void *y) {
        unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
        return a < b ? 1 : a > b ? -1 : 0;
}

/*
 * Kinds from clear gaps in the figures: sorted from the highest down, a value
 * below KIND_GAP_PCT percent of the one above it starts the next kind; a
 * third tier and any below it are low-power.
 */
static int kinds_from_gaps(Topology *t, const unsigned *fig) {
        unsigned n = 0, lowest[_TOPO_CORE_KIND_MAX] = {}; /* the lowest figure of each kind */
        size_t k = 0;
        _cleanup_free_ unsigned *sorted = malloc(cpuset_count(&t->online) * sizeof(unsigned));

        if (!sorted)
                return -ENOMEM;
        TOPO_FOREACH_CPU (cpu, t) {
                sorted[n++] = fig[cpu];
        }
        qsort(sorted, n, sizeof(unsigned), unsigned_cmp_desc);
        for (unsigned i = 0; i < n; i++) {
                if (i > 0 && (uint64_t)sorted[i] * 100 < (uint64_t)sorted[i - 1] * KIND_GAP_PCT &&
                    k + 1 < _TOPO_CORE_KIND_MAX)
                        k++;
                lowest[k] = sorted[i];
        }

        /* The last kind used holds the lowest figure, so the search ends there. */
        TOPO_FOREACH_CPU (cpu, t) {
                size_t kind = 0;
                while (fig[cpu] < lowest[kind])
                        kind++;
                t->cpus[cpu].kind = (TopoCoreKind)kind;
        }
        return 0;
}

/* How many kinds the online CPUs are of. */
static unsigned kinds_present(const Topology *t) {
        bool seen[_TOPO_CORE_KIND_MAX] = {};
        unsigned n = 0;

        TOPO_FOREACH_CPU (cpu, t) {
                TopoCoreKind k = t->cpus[cpu].kind;
                n += !seen[k];
                seen[k] = true;
        }
        return n;
}

/* Each online CPU's capacity, from its kind and the source's figures. */
static void capacities_set(Topology *t, const unsigned *fig) {
        static const unsigned pmu_capacity[_TOPO_CORE_KIND_MAX] = {
                [TOPO_CORE_PERFORMANCE] = CAPACITY_SCALE,
                [TOPO_CORE_EFFICIENT] = PMU_CAPACITY_EFFICIENT,
                [TOPO_CORE_LOW_POWER] = PMU_CAPACITY_LOW_POWER,
        };
        unsigned top[_TOPO_CORE_KIND_MAX] = {}, max = 0;

        TOPO_FOREACH_CPU (cpu, t) {
                TopoCoreKind k = t->cpus[cpu].kind;
                top[k] = MAX(top[k], fig[cpu]);
                max = MAX(max, fig[cpu]);
        }
        TOPO_FOREACH_CPU (cpu, t) {
                TopoCpu *c = &t->cpus[cpu];
                switch (t->capacity_source) {
                case TOPO_CAPACITY_CPU_CAPACITY:
                        c->capacity = fig[cpu];
                        break;
                case TOPO_CAPACITY_CPPC:
                        /* Rounded; a kind far below the top still has some. */
                        c->capacity = (unsigned)MAX(
                                ((uint64_t)top[c->kind] * CAPACITY_SCALE + max / 2) / max, 1);
                        break;
                case TOPO_CAPACITY_PMU:
                        c->capacity = pmu_capacity[c->kind];
                        break;
                default:
                        c->capacity = CAPACITY_SCALE;
                        break;
                }
        }
}

int topo_kinds_load(Loader *l) {
        Topology *t = l->t;
        _cleanup_free_ unsigned *fig = calloc(t->n_cpus, sizeof(unsigned));
        int r, pmu;

        if (!fig)
                return -ENOMEM;
        r = figures_load(l, fig, &t->capacity_source);
        if (r < 0)
                return r;
        pmu = kinds_from_pmu(l);
        if (pmu < 0)
                return pmu;
        if (pmu == 0 && t->capacity_source != TOPO_CAPACITY_NONE) {
                r = kinds_from_gaps(t, fig);
                if (r < 0)
                        return r;
        }
        if (t->capacity_source == TOPO_CAPACITY_NONE && kinds_present(t) > 1)
                t->capacity_source = TOPO_CAPACITY_PMU;
        capacities_set(t, fig);
        topo_kinds_finish(t);
        return 0;
}

void topo_kinds_finish(Topology *t) {
        unsigned lo = UINT_MAX, hi = 0;

        for (size_t k = 0; k < _TOPO_CORE_KIND_MAX; k++)
                cpuset_zero(&t->kind_cpus[k]);
        TOPO_FOREACH_CPU (cpu, t) {
                const TopoCpu *c = &t->cpus[cpu];
                cpuset_set(&t->kind_cpus[c->kind], cpu);
                lo = MIN(lo, c->capacity);
                hi = MAX(hi, c->capacity);
        }
        t->asymmetric = lo != hi || kinds_present(t) > 1;
}
