/* SPDX-License-Identifier: MIT */
/*
 * Where the load is while a decision goes on (policy.c's Ctx): per CPU its
 * background and the claims of the groups placed so far, per unit (LLC, or
 * core on a one-LLC machine) the sums over its CPUs, the units kept in
 * each order the policy ranks them by, and an index of the CPUs by load.
 *
 * Why it is shaped so: a decision used to rank every unit for every group
 * (a set operation and a sum over each unit's CPUs, then a sort) and to
 * scan every allowed CPU for a pair that did not fit where it ran: on 512
 * CPUs that was 10 us a group (issue 25). A claim changes the load of a
 * few CPUs and one or two units, so the sums are refreshed there, each
 * order moves those units, and a group reads the front of an order and
 * the index's minimum: what it costs grows with what it is placed on, not
 * with the machine.
 *
 * Everything here gives the answers the plain scans gave, bit for bit:
 * a unit's sum is recomputed over its CPUs in CPU order, as set_load()
 * sums; an order is exact (ties by unit number) and each group's ranking
 * regroups near-ties (1e-9) by the same rules as rank_cmp(); the index
 * finds the least loaded CPU and then the first one within 1e-9 of it, as
 * the scan keeps the first of equals. Only a chain of near-ties that each
 * differ by less than 1e-9 but span more could rank otherwise; sums of
 * measured loads do not make those.
 *
 * Memory is taken at ctx_init(), sized by the topology, never by groups.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

static unsigned pow2_at_least(unsigned n) {
        unsigned p = 1;
        while (p < n)
                p <<= 1;
        return p;
}

/* Each allocation is checked at once, so the first that fails is the last made. */
#define ALLOC(p, n)                              \
        do {                                     \
                (p) = calloc((n), sizeof(*(p))); \
                if (!(p))                        \
                        return -ENOMEM;          \
        } while (0)

int policy_load_init(Ctx *c) {
        const Topology *t = c->t;
        unsigned n_cpus = MAX(t->n_cpus, 1u), n_units = MAX(c->n_units, 1u);

        ALLOC(c->cap, n_cpus);
        ALLOC(c->unit_first, n_units + 1);
        ALLOC(c->unit_cpus, n_cpus);
        ALLOC(c->unit_load, n_units);
        ALLOC(c->unit_cap, n_units);
        ALLOC(c->unit_min_load, n_units);
        ALLOC(c->unit_max_cap, n_units);
        ALLOC(c->unit_min_cap, n_units);
        ALLOC(c->unit_hk, n_units);
        ALLOC(c->unit_mark, n_units);
        ALLOC(c->unit_stamp, n_units);
        ALLOC(c->unit_dirty, n_units);
        ALLOC(c->dirty_units, n_units);
        ALLOC(c->cpu_dirty, n_cpus);
        ALLOC(c->cpu_indexed_claimed, n_cpus);
        ALLOC(c->dirty_cpus, n_cpus);
        ALLOC(c->unit_words, 2 * n_units);
        ALLOC(c->order_units, (size_t)_RANK_ORDER_MAX * n_units);
        ALLOC(c->order_pos, (size_t)_RANK_ORDER_MAX * n_units);

        /* Capacity as a share of the biggest CPU's; an offline CPU counts as one. */
        for (unsigned cpu = 0; cpu < t->n_cpus; cpu++)
                c->cap[cpu] = t->cpus[cpu].online && t->cpus[cpu].capacity > 0
                                      ? t->cpus[cpu].capacity / 1024.0
                                      : 1.0;

        /* The distinct capacities of online CPUs, biggest first. */
        c->n_classes = 0;
        TOPO_FOREACH_CPU (cpu, t) {
                unsigned k = 0;
                while (k < c->n_classes && c->class_cap[k] != c->cap[cpu])
                        k++;
                if (k < c->n_classes)
                        continue;
                if (c->n_classes == POLICY_CPU_CLASSES_MAX) {
                        c->n_classes = 0; /* too many kinds to index: pick_cpu() scans */
                        break;
                }
                c->class_cap[c->n_classes++] = c->cap[cpu];
        }
        c->tree_size = pow2_at_least(n_cpus);
        ALLOC(c->cpu_class, n_cpus);
        ALLOC(c->trees, (size_t)MAX(c->n_classes, 1u) * 2 * 2 * c->tree_size);
        return 0;
}

void policy_load_done(Ctx *c) {
        free(c->cap);
        free(c->unit_first);
        free(c->unit_cpus);
        free(c->unit_load);
        free(c->unit_cap);
        free(c->unit_min_load);
        free(c->unit_max_cap);
        free(c->unit_min_cap);
        free(c->unit_hk);
        free(c->unit_mark);
        free(c->unit_stamp);
        free(c->unit_dirty);
        free(c->dirty_units);
        free(c->cpu_dirty);
        free(c->cpu_indexed_claimed);
        free(c->dirty_cpus);
        free(c->unit_words);
        free(c->order_units);
        free(c->order_pos);
        free(c->cpu_class);
        free(c->trees);
}

/* ---- units ---- */

double policy_unit_free(const Ctx *c, unsigned u) {
        return c->unit_cap[u] - c->unit_load[u];
}

/* Recomputes the sums of unit u from its CPUs, in CPU order as set_load() adds. */
static void unit_refresh(Ctx *c, unsigned u) {
        double load = 0, cap = 0, min_load = INFINITY, max_cap = 0, min_cap = INFINITY;
        for (unsigned k = c->unit_first[u]; k < c->unit_first[u + 1]; k++) {
                int cpu = c->unit_cpus[k];
                double l = policy_cpu_load(c, cpu);
                load += l * c->cap[cpu];
                cap += c->cap[cpu];
                min_load = MIN(min_load, l);
                max_cap = MAX(max_cap, c->cap[cpu]);
                min_cap = MIN(min_cap, c->cap[cpu]);
        }
        double before = MAX(0.0, c->unit_cap[u] - c->unit_load[u]);
        c->unit_load[u] = load;
        c->unit_cap[u] = cap;
        c->unit_min_load[u] = min_load;
        c->unit_max_cap[u] = max_cap;
        c->unit_min_cap[u] = min_cap;
        c->free_total += MAX(0.0, cap - load) - before;
}

/* The exact order each RankOrder keeps (rank_cmp() without prev, ties by unit). */
static int order_cmp(const Ctx *c, RankOrder o, unsigned a, unsigned b) {
        if (o == RANK_ORDER_PACK_HK && c->unit_hk[a] != c->unit_hk[b])
                return c->unit_hk[a] ? -1 : 1;
        if (o == RANK_ORDER_PACK_HK || o == RANK_ORDER_PACK) {
                if (c->unit_load[a] != c->unit_load[b])
                        return c->unit_load[a] > c->unit_load[b] ? -1 : 1;
        } else {
                if (o == RANK_ORDER_HOME && c->homes[a] != c->homes[b])
                        return c->homes[a] < c->homes[b] ? -1 : 1;
                double fa = policy_unit_free(c, a), fb = policy_unit_free(c, b);
                if (fa != fb)
                        return fa > fb ? -1 : 1;
        }
        return a < b ? -1 : a > b;
}

static unsigned *order_of(const Ctx *c, RankOrder o) {
        return c->order_units + (size_t)o * c->n_units;
}

/* Moves unit u to its place in order o after its keys changed. */
static void order_fix(Ctx *c, RankOrder o, unsigned u) {
        unsigned *ord = order_of(c, o), *pos = c->order_pos + (size_t)o * c->n_units;
        unsigned at = pos[u], n = c->n_units;
        memmove(&ord[at], &ord[at + 1], (n - at - 1) * sizeof(unsigned));
        unsigned lo = 0, hi = n - 1; /* the first of the other n - 1 that goes after u */
        while (lo < hi) {
                unsigned mid = (lo + hi) / 2;
                if (order_cmp(c, o, ord[mid], u) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        memmove(&ord[lo + 1], &ord[lo], (n - 1 - lo) * sizeof(unsigned));
        ord[lo] = u;
        for (unsigned k = MIN(at, lo); k <= MAX(at, lo); k++)
                pos[ord[k]] = k;
}

typedef struct OrderSort {
        const Ctx *c;
        RankOrder o;
} OrderSort;

static int order_sort_cmp(const void *x, const void *y, void *userdata) {
        const OrderSort *s = ASSERT_PTR(userdata);
        return order_cmp(s->c, s->o, *(const unsigned *)x, *(const unsigned *)y);
}

/* Sorts every order of units afresh. */
static void orders_sort(Ctx *c) {
        for (RankOrder o = 0; o < _RANK_ORDER_MAX; o++) {
                unsigned *ord = order_of(c, o), *pos = c->order_pos + (size_t)o * c->n_units;
                OrderSort sort = { .c = c, .o = o };
                qsort_r(ord, c->n_units, sizeof(unsigned), order_sort_cmp, &sort);
                for (unsigned i = 0; i < c->n_units; i++)
                        pos[ord[i]] = i;
        }
}

/* ---- the CPU index: per capacity class and claimed or not, a min-tree of loads ---- */

static double *tree_of(const Ctx *c, unsigned k, bool claimed) {
        return c->trees + ((size_t)k * 2 + claimed) * 2 * c->tree_size;
}

static void tree_set(double *tr, unsigned size, int cpu, double v) {
        unsigned i = size + (unsigned)cpu;
        tr[i] = v;
        for (i /= 2; i >= 1; i /= 2)
                tr[i] = MIN(tr[2 * i], tr[2 * i + 1]);
}

static bool cpu_claimed(const Ctx *c, int cpu) {
        return c->claim[cpu] > POLICY_CLAIM_EPS;
}

static void index_cpu(Ctx *c, int cpu) {
        if (c->n_classes == 0 || !cpuset_isset(&c->t->online, cpu))
                return;
        unsigned k = c->cpu_class[cpu];
        bool claimed = cpu_claimed(c, cpu), was_claimed = c->cpu_indexed_claimed[cpu];
        if (claimed != was_claimed)
                tree_set(tree_of(c, k, was_claimed), c->tree_size, cpu, INFINITY);
        tree_set(tree_of(c, k, claimed), c->tree_size, cpu, policy_cpu_load(c, cpu));
        c->cpu_indexed_claimed[cpu] = claimed;
}

/* Return: whether s holds a CPU in [lo, hi). */
static bool range_has(const CpuSet *s, unsigned lo, unsigned hi) {
        while (lo < hi) {
                unsigned w = lo / 64, b = lo % 64, n = MIN(hi - lo, 64 - b);
                uint64_t bits = s->bits[w] >> b;
                if (n < 64)
                        bits &= (UINT64_C(1) << n) - 1;
                if (bits)
                        return true;
                lo += n;
        }
        return false;
}

/* The least value of tr over mask (NULL: every CPU), below best. */
static double tree_min(const double *tr, unsigned node, unsigned lo, unsigned hi,
                       const CpuSet *mask, double best) {
        if (tr[node] >= best || (mask && !range_has(mask, lo, hi)))
                return best;
        if (!mask || hi - lo == 1)
                return tr[node];
        unsigned mid = (lo + hi) / 2;
        best = tree_min(tr, 2 * node, lo, mid, mask, best);
        return tree_min(tr, 2 * node + 1, mid, hi, mask, best);
}

/* The first CPU at or after from in mask (NULL: every CPU) whose value is at most limit; -1. */
static int tree_first(const double *tr, unsigned node, unsigned lo, unsigned hi, const CpuSet *mask,
                      unsigned from, double limit) {
        if (hi <= from || tr[node] > limit || (mask && !range_has(mask, MAX(lo, from), hi)))
                return -1;
        if (hi - lo == 1)
                return (int)lo;
        unsigned mid = (lo + hi) / 2;
        int r = tree_first(tr, 2 * node, lo, mid, mask, from, limit);
        return r >= 0 ? r : tree_first(tr, 2 * node + 1, mid, hi, mask, from, limit);
}

/* ---- building and claims ---- */

void policy_load_build(Ctx *c) {
        const Topology *t = c->t;
        unsigned k = 0;
        for (unsigned u = 0; u < c->n_units; u++) {
                c->unit_first[u] = k;
                CPUSET_FOREACH (cpu, &c->units[u].cpus)
                        if ((unsigned)cpu < t->n_cpus)
                                c->unit_cpus[k++] = cpu;
                int first = cpuset_first(&c->units[u].cpus), last = cpuset_last(&c->units[u].cpus);
                c->unit_words[2 * u] = first >= 0 ? (unsigned)first / 64 : 1;
                c->unit_words[2 * u + 1] = last >= 0 ? (unsigned)last / 64 : 0;
                c->unit_hk[u] =
                        c->consolidate && cpuset_is_subset(&c->units[u].cpus, &c->housekeeping);
        }
        c->unit_first[c->n_units] = k;
        c->consolidate_at_start = c->consolidate;
        c->free_total = 0;
        for (unsigned u = 0; u < c->n_units; u++) {
                c->unit_load[u] = c->unit_cap[u] = 0;
                unit_refresh(c, u);
        }
        for (RankOrder o = 0; o < _RANK_ORDER_MAX; o++)
                for (unsigned u = 0; u < c->n_units; u++)
                        order_of(c, o)[u] = u;
        orders_sort(c);

        for (size_t i = 0; i < (size_t)MAX(c->n_classes, 1u) * 2 * 2 * c->tree_size; i++)
                c->trees[i] = INFINITY;
        if (c->n_classes == 0)
                return;
        TOPO_FOREACH_CPU (cpu, t) {
                if ((unsigned)cpu >= t->n_cpus)
                        continue;
                unsigned cls = 0;
                while (c->class_cap[cls] != c->cap[cpu])
                        cls++;
                c->cpu_class[cpu] = (unsigned char)cls;
                c->cpu_indexed_claimed[cpu] = cpu_claimed(c, cpu);
                double *tr = tree_of(c, cls, cpu_claimed(c, cpu));
                tr[c->tree_size + (unsigned)cpu] = policy_cpu_load(c, cpu);
        }
        for (unsigned cls = 0; cls < c->n_classes; cls++)
                for (int claimed = 0; claimed < 2; claimed++) {
                        double *tr = tree_of(c, cls, claimed);
                        for (unsigned i = c->tree_size - 1; i >= 1; i--)
                                tr[i] = MIN(tr[2 * i], tr[2 * i + 1]);
                }
}

/*
 * A claim only notes which CPUs and units changed; policy_load_flush()
 * brings the sums, orders and index up to date before the next group that
 * reads them, so a run of groups kept from the last plan costs a flush, not
 * one per claim.
 */
void policy_load_claim(Ctx *c, const CpuSet *s, double work) {
        double cap = 0;
        CPUSET_FOREACH (cpu, s)
                if ((unsigned)cpu < c->t->n_cpus)
                        cap += c->cap[cpu];
        if (cap <= 0)
                return;
        CPUSET_FOREACH (cpu, s) {
                if ((unsigned)cpu >= c->t->n_cpus)
                        break;
                c->claim[cpu] += work / cap;
                if (!c->cpu_dirty[cpu]) {
                        c->cpu_dirty[cpu] = true;
                        c->dirty_cpus[c->n_dirty_cpus++] = cpu;
                }
                int u = policy_unit_of(c, cpu);
                if (u >= 0 && !c->unit_dirty[u]) {
                        c->unit_dirty[u] = true;
                        c->dirty_units[c->n_dirty_units++] = (unsigned)u;
                }
        }
}

void policy_load_flush(Ctx *c) {
        for (unsigned k = 0; k < c->n_dirty_cpus; k++) {
                int cpu = c->dirty_cpus[k];
                c->cpu_dirty[cpu] = false;
                index_cpu(c, cpu);
        }
        c->n_dirty_cpus = 0;
        /* An order is exact (ties by unit number), so moving each changed unit and
         * sorting all afresh give the same order: sort when many changed. A unit
         * is moved right after its sums change, the others still in their places. */
        bool sort = c->n_dirty_units * 8 > c->n_units;
        for (unsigned k = 0; k < c->n_dirty_units; k++) {
                unsigned u = c->dirty_units[k];
                unit_refresh(c, u);
                for (RankOrder o = 0; o < _RANK_ORDER_MAX && !sort; o++)
                        if (o != RANK_ORDER_PACK_HK || c->consolidate_at_start)
                                order_fix(c, o, u);
        }
        if (sort)
                orders_sort(c);
        for (unsigned k = 0; k < c->n_dirty_units; k++)
                c->unit_dirty[c->dirty_units[k]] = false;
        c->n_dirty_units = 0;
}

void policy_load_home(Ctx *c, unsigned u) {
        assert(c->n_dirty_units == 0);
        c->homes[u]++;
        order_fix(c, RANK_ORDER_HOME, u);
}

/* ---- reading the orders: one group's ranking ---- */

int policy_unit_share(const Ctx *c, unsigned u, const CpuSet *allowed, const CpuSet *prev,
                      UnitRank *ret) {
        assert(policy_load_fresh(c));
        bool any = false, all = true, in_prev = false;
        for (unsigned w = c->unit_words[2 * u]; w <= c->unit_words[2 * u + 1]; w++) {
                uint64_t unit = c->units[u].cpus.bits[w], in = unit & allowed->bits[w];
                any = any || in;
                all = all && in == unit;
                in_prev = in_prev || (prev && (in & prev->bits[w]));
        }
        if (!any)
                return 0;
        *ret = (UnitRank){ .unit = u, .homes = c->homes[u], .prev = in_prev };
        if (all) {
                ret->load = c->unit_load[u];
                ret->cap = c->unit_cap[u];
                return 2;
        }
        for (unsigned k = c->unit_first[u]; k < c->unit_first[u + 1]; k++) {
                int cpu = c->unit_cpus[k];
                if (!cpuset_isset(allowed, cpu))
                        continue;
                ret->load += policy_cpu_load(c, cpu) * c->cap[cpu];
                ret->cap += c->cap[cpu];
        }
        return 1;
}

int policy_units_cover(Ctx *c, const CpuSet *allowed) {
        unsigned n = 0;
        if (++c->stamp == 0) { /* wrapped: no unit may keep an old stamp */
                memset(c->unit_stamp, 0, c->n_units * sizeof(unsigned));
                c->stamp = 1;
        }
        for (unsigned u = 0; u < c->n_units; u++) {
                bool any = false, all = true;
                for (unsigned w = c->unit_words[2 * u]; w <= c->unit_words[2 * u + 1]; w++) {
                        uint64_t unit = c->units[u].cpus.bits[w], in = unit & allowed->bits[w];
                        any = any || in;
                        all = all && in == unit;
                }
                if (any && !all)
                        return -1;
                if (any) {
                        c->unit_stamp[u] = c->stamp;
                        n++;
                }
        }
        return (int)n;
}

void policy_ranker_init(Ctx *c, Ranker *rk, RankOrder o, const PlanGroup *prev, int n_covered) {
        assert(policy_load_fresh(c));
        *rk = (Ranker){ .order = o,
                        .r = c->ranks,
                        .total = n_covered < 0 ? c->n_units : (unsigned)n_covered,
                        .whole = n_covered < 0,
                        .stamp = n_covered < 0 ? 0 : c->stamp };
        if (prev && prev->managed) {
                rk->prev = prev;
                CPUSET_FOREACH (cpu, &prev->cpus) {
                        int u = policy_unit_of(c, cpu);
                        if (u >= 0)
                                c->unit_mark[u] = true;
                }
        }
}

void policy_ranker_done(Ctx *c, Ranker *rk) {
        if (!rk->prev)
                return;
        CPUSET_FOREACH (cpu, &rk->prev->cpus) {
                int u = policy_unit_of(c, cpu);
                if (u >= 0)
                        c->unit_mark[u] = false;
        }
        rk->prev = NULL;
}

/* The key rank_cmp() compares with a 1e-9 tolerance, for order o. */
static double order_key(const Ctx *c, RankOrder o, unsigned u) {
        return o == RANK_ORDER_PACK_HK || o == RANK_ORDER_PACK ? c->unit_load[u]
                                                               : policy_unit_free(c, u);
}

/* Whether b ranks with a as a tie before prev and unit are asked (rank_cmp()). */
static bool order_tie(const Ctx *c, RankOrder o, unsigned a, unsigned b) {
        if (o == RANK_ORDER_PACK_HK && c->unit_hk[a] != c->unit_hk[b])
                return false;
        if (o == RANK_ORDER_HOME && c->homes[a] != c->homes[b])
                return false;
        return fabs(order_key(c, o, a) - order_key(c, o, b)) <= 1e-9;
}

static int tie_cmp(const void *x, const void *y) {
        const UnitRank *a = x, *b = y;
        if (a->prev != b->prev)
                return a->prev ? -1 : 1;
        return a->unit < b->unit ? -1 : a->unit > b->unit;
}

/* Emits the next run of tied units, prev first, then by number. Return: false at the end. */
static bool ranker_more(const Ctx *c, Ranker *rk) {
        const unsigned *ord = order_of(c, rk->order);
        while (rk->next < c->n_units && rk->stamp && c->unit_stamp[ord[rk->next]] != rk->stamp)
                rk->next++; /* not the group's */
        if (rk->next >= c->n_units)
                return false;
        unsigned first = ord[rk->next], start = rk->n;
        while (rk->next < c->n_units && order_tie(c, rk->order, first, ord[rk->next])) {
                unsigned u = ord[rk->next++];
                if (rk->stamp && c->unit_stamp[u] != rk->stamp)
                        continue;
                rk->r[rk->n++] = (UnitRank){
                        .unit = u,
                        .load = c->unit_load[u],
                        .cap = c->unit_cap[u],
                        .homes = c->homes[u],
                        .housekeeping = rk->order == RANK_ORDER_PACK_HK && c->unit_hk[u],
                        .prev = rk->prev && c->unit_mark[u],
                };
        }
        if (rk->n - start > 1)
                qsort(&rk->r[start], rk->n - start, sizeof(UnitRank), tie_cmp);
        return true;
}

bool policy_rank_get(const Ctx *c, Ranker *rk, unsigned k) {
        while (rk->n <= k && ranker_more(c, rk))
                ;
        return k < rk->n;
}

/* ---- the least loaded CPU that has room ---- */

int policy_load_pick_least(const Ctx *c, const CpuSet *cand, double need, double fit, int prefer,
                           bool (*fits)(const Ctx *c, int cpu, double need, double fit)) {
        assert(policy_load_fresh(c));
        unsigned size = c->tree_size;
        const CpuSet *mask = cpuset_is_subset(&c->t->online, cand) ? NULL : cand;
        double least = INFINITY;
        bool any = false;

        /* The least load per class and state that fits: a load that does not fit means
         * none above it does, as the checks grow with the load. */
        for (unsigned k = 0; k < c->n_classes; k++)
                for (int claimed = 0; claimed < 2; claimed++) {
                        const double *tr = tree_of(c, k, claimed);
                        double m = tree_min(tr, 1, 0, size, mask, INFINITY);
                        if (m == INFINITY)
                                continue;
                        int cpu = tree_first(tr, 1, 0, size, mask, 0, m);
                        if (cpu < 0 || !fits(c, cpu, need, fit))
                                continue;
                        least = MIN(least, m);
                        any = true;
                }
        if (!any)
                return -1;
        if (prefer >= 0 && cpuset_isset(cand, prefer) && fits(c, prefer, need, fit) &&
            policy_cpu_load(c, prefer) <= least + 1e-9)
                return prefer;
        /* The first CPU within 1e-9 of the least that fits, as the scan keeps the first. */
        int best = -1;
        for (unsigned k = 0; k < c->n_classes; k++)
                for (int claimed = 0; claimed < 2; claimed++) {
                        const double *tr = tree_of(c, k, claimed);
                        for (int cpu = tree_first(tr, 1, 0, size, mask, 0, least + 1e-9);
                             cpu >= 0 && (best < 0 || cpu < best);
                             cpu = tree_first(tr, 1, 0, size, mask, (unsigned)cpu + 1,
                                              least + 1e-9))
                                if (fits(c, cpu, need, fit)) {
                                        best = cpu;
                                        break;
                                }
                }
        return best;
}
