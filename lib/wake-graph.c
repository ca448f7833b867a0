/* SPDX-License-Identifier: MIT */
/*
 * The wake-graph model (see wake-graph.h for the per-tick protocol).
 *
 * Why it is shaped like this: a busy server has tens of thousands of tasks
 * and a few hundred thousand waker->wakee relations, so everything is a dense
 * array indexed through hash maps and every update is a few linear passes
 * (decay, union-find over strong edges, per-group sums): no O(n^2).
 *
 * Tasks get a private serial number (uid) when first seen; edges are keyed by
 * the two uids, not TIDs, so a TID reused by a new task (new start time) never
 * inherits the old task's edges. Edges whose task is gone are swept at the
 * next update.
 *
 * Rates are exponentially decayed (half-life edge_half_life_ns) and
 * bias-corrected for young edges, so an edge seen for one tick already shows
 * its true rate rather than a fraction of it.
 *
 * Grouping, in order:
 *  1. pair bonds: u and v whose edges each way carry at least pair_min_share
 *     of both tasks' out- and in-rates; such tasks bind only to each other, so
 *     a pair inside a busy mesh is told apart from the mesh;
 *  2. connected components over strong edges (strong_min_rate and
 *     strong_min_share; threads of one process need only the rate);
 *  3. classes: two tasks waking each other -> pair; a star whose master passes
 *     the wake_wide() flip test -> fanout; most members waking two or more
 *     others -> mesh; anything else -> solo.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "util.h"
#include "wake-graph.h"

/* ---- the model --------------------------------------------------------- */

typedef struct WgTask {
        TaskId id;
        pid_t tgid;
        uint32_t uid;
        char comm[WAKE_COMM_LEN];
        struct wake_flips flips;
        bool has_flips;
        uint64_t last_seen_ns;
        bool have_stats;
        bool have_delta; /* run time measured over a whole interval at least once */
        uint64_t run_ns, delay_ns, slices;                /* last cumulative values */
        uint64_t pend_run_ns, pend_delay_ns, pend_slices; /* growth since the last update */
        uint64_t io_bytes, pend_io_bytes;                 /* bytes read and written, likewise */
        double out_rate, in_rate;                         /* wakeups/s, at the last update */
        uint64_t group_id;
} WgTask;

typedef struct WgEdge {
        uint32_t waker_uid, wakee_uid;
        uint32_t waker, wakee; /* task indices, valid during an update */
        uint64_t pending;      /* wakeups since the last update */
        uint64_t first_ns;     /* start of the first interval it was seen in; 0 = not yet */
        double raw;            /* decayed rate, not bias-corrected */
        double rate;           /* bias-corrected rate at the last update */
        double tick_rate;      /* wakeups/s over the last update's interval alone */
        bool strong;
} WgEdge;

struct WakeGraph {
        WakeGraphParams p;
        WgTask *tasks; /* owned */
        size_t n_tasks, n_tasks_alloc;
        WgEdge *edges; /* owned */
        size_t n_edges, n_edges_alloc;
        U64Map *by_tid;    /* tid -> task index */
        U64Map *by_uid;    /* uid -> task index */
        U64Map *edge_map;  /* waker_uid << 32 | wakee_uid -> edge index */
        U64Map *prev_size; /* group id -> members at the last update */
        uint32_t next_uid;
        uint64_t next_group_id;
        uint64_t last_update_ns;    /* 0 = never */
        uint64_t pend_unwatched_ns; /* unwatched time the batches since the last update told */
        WakeGraphIngested ingested;
};

#define FIRST_TICK_NS NSEC_PER_SEC /* assumed length of the interval before the first update */

void wake_graph_ingested(const WakeGraph *g, WakeGraphIngested *ret) {
        *ret = g->ingested;
}

void wake_graph_params_default(WakeGraphParams *ret) {
        *ret = (WakeGraphParams){
                .edge_half_life_ns = 2 * NSEC_PER_SEC,
                .strong_min_rate = 4.0,
                .strong_min_share = 1.0 / 64,
                .pair_min_share = 0.5,
                .llc_size = 8,
                /* Not more: workers handing a contended lock to each other
                 * wake each other for a third of the group's wakeups. */
                .fanout_min_star = 0.6,
                .edge_min_rate = 0.05,
                .task_idle_ns = 10 * NSEC_PER_SEC,
        };
}

int wake_graph_new(const WakeGraphParams *params, WakeGraph **ret) {
        WakeGraphParams p;
        if (params)
                p = *params;
        else
                wake_graph_params_default(&p);
        if (p.edge_half_life_ns == 0 || p.llc_size == 0 || p.pair_min_share <= 0.5 - 1e-9 ||
            p.strong_min_share <= 0)
                return -EINVAL;

        WakeGraph *g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->p = p;
        g->next_uid = 1;
        g->next_group_id = 1;
        if (u64map_new(&g->by_tid) < 0 || u64map_new(&g->by_uid) < 0 ||
            u64map_new(&g->edge_map) < 0 || u64map_new(&g->prev_size) < 0) {
                wake_graph_free(g);
                return -ENOMEM;
        }
        *ret = g;
        return 0;
}

WakeGraph *wake_graph_free(WakeGraph *g) {
        if (!g)
                return NULL;
        free(g->tasks);
        free(g->edges);
        u64map_free(g->by_tid);
        u64map_free(g->by_uid);
        u64map_free(g->edge_map);
        u64map_free(g->prev_size);
        free(g);
        return NULL;
}

static uint64_t edge_key(uint32_t waker_uid, uint32_t wakee_uid) {
        return (uint64_t)waker_uid << 32 | wakee_uid;
}

/* Drops task i; its edges are swept at the next update. */
static void task_remove(WakeGraph *g, size_t i) {
        u64map_remove(g->by_tid, (uint64_t)g->tasks[i].id.tid);
        u64map_remove(g->by_uid, g->tasks[i].uid);
        size_t last = --g->n_tasks;
        if (i != last) {
                g->tasks[i] = g->tasks[last];
                /* cannot fail: the keys exist, only values change */
                (void)u64map_put(g->by_tid, (uint64_t)g->tasks[i].id.tid, (uint32_t)i);
                (void)u64map_put(g->by_uid, g->tasks[i].uid, (uint32_t)i);
        }
}

static void edge_remove(WakeGraph *g, size_t i) {
        u64map_remove(g->edge_map, edge_key(g->edges[i].waker_uid, g->edges[i].wakee_uid));
        size_t last = --g->n_edges;
        if (i != last) {
                g->edges[i] = g->edges[last];
                (void)u64map_put(g->edge_map,
                                 edge_key(g->edges[i].waker_uid, g->edges[i].wakee_uid),
                                 (uint32_t)i);
        }
}

/* Finds tid, or adds it. A differing known start time means a new task. */
static int task_get(WakeGraph *g, pid_t tid, uint64_t start_time, size_t *ret) {
        uint32_t i;
        if (u64map_get(g->by_tid, (uint64_t)tid, &i)) {
                WgTask *t = &g->tasks[i];
                if (!start_time || !t->id.start_time || t->id.start_time == start_time) {
                        if (!t->id.start_time)
                                t->id.start_time = start_time;
                        *ret = i;
                        return 0;
                }
                task_remove(g, i);
        }
        int r = array_grow((void **)&g->tasks, &g->n_tasks_alloc, g->n_tasks + 1, sizeof(WgTask));
        if (r < 0)
                return r;
        i = (uint32_t)g->n_tasks;
        WgTask *t = &g->tasks[i];
        *t = (WgTask){ .id = { .tid = tid, .start_time = start_time }, .uid = g->next_uid++ };
        if (g->next_uid == 0)
                g->next_uid = 1;
        r = u64map_put(g->by_tid, (uint64_t)tid, i);
        if (r >= 0)
                r = u64map_put(g->by_uid, t->uid, i);
        if (r < 0) {
                u64map_remove(g->by_tid, (uint64_t)tid);
                return r;
        }
        g->n_tasks++;
        *ret = i;
        return 1;
}

static int edge_add(WakeGraph *g, size_t waker, size_t wakee, uint64_t count) {
        uint64_t key = edge_key(g->tasks[waker].uid, g->tasks[wakee].uid);
        uint32_t i;
        if (u64map_get(g->edge_map, key, &i)) {
                g->edges[i].pending += count;
                return 0;
        }
        int r = array_grow((void **)&g->edges, &g->n_edges_alloc, g->n_edges + 1, sizeof(WgEdge));
        if (r < 0)
                return r;
        r = u64map_put(g->edge_map, key, (uint32_t)g->n_edges);
        if (r < 0)
                return r;
        g->edges[g->n_edges++] = (WgEdge){
                .waker_uid = g->tasks[waker].uid,
                .wakee_uid = g->tasks[wakee].uid,
                .pending = count,
        };
        return 1;
}

int wake_graph_ingest(WakeGraph *g, const WakeBatch *b, uint64_t now_ns) {
        size_t i;
        int r;

        g->ingested.wakeups += b->n_events;
        g->ingested.softirq += b->n_softirq;
        g->ingested.skipped += b->n_skipped;
        g->ingested.lost += b->n_lost;

        g->pend_unwatched_ns += b->unwatched_ns;
        for (size_t k = 0; k < b->n_tasks; k++) {
                const WakeTaskRecord *rec = &b->tasks[k];
                if (rec->id.tid <= 0)
                        continue;
                r = task_get(g, rec->id.tid, rec->id.start_time, &i);
                if (r < 0)
                        return r;
                WgTask *t = &g->tasks[i];
                if (rec->tgid > 0)
                        t->tgid = rec->tgid;
                if (rec->comm[0])
                        memcpy(t->comm, rec->comm, sizeof(t->comm));
                if (rec->has_flips) {
                        t->flips = rec->flips;
                        t->has_flips = true;
                }
                t->last_seen_ns = now_ns;
        }

        for (size_t k = 0; k < b->n_edges; k++) {
                const WakeEdgeRecord *e = &b->edges[k];
                size_t waker, wakee;
                if (e->waker <= 0 || e->wakee <= 0 || e->waker == e->wakee || e->count == 0)
                        continue;
                r = task_get(g, e->waker, 0, &waker);
                if (r < 0)
                        return r;
                r = task_get(g, e->wakee, 0, &wakee);
                if (r < 0)
                        return r;
                g->tasks[waker].last_seen_ns = g->tasks[wakee].last_seen_ns = now_ns;
                r = edge_add(g, waker, wakee, e->count);
                if (r < 0)
                        return r;
        }
        return 0;
}

int wake_graph_task_stats(WakeGraph *g, pid_t tid, uint64_t start_time, const WakeTaskCounters *c) {
        uint64_t run_ns = c->run_ns, run_delay_ns = c->run_delay_ns, timeslices = c->timeslices;
        uint32_t i;
        if (!u64map_get(g->by_tid, (uint64_t)tid, &i))
                return 0;
        WgTask *t = &g->tasks[i];
        if (start_time && t->id.start_time && start_time != t->id.start_time) {
                task_remove(g, i);
                return 0;
        }
        if (start_time)
                t->id.start_time = start_time;
        if (t->have_stats && run_ns >= t->run_ns && run_delay_ns >= t->delay_ns &&
            timeslices >= t->slices) {
                t->pend_run_ns += run_ns - t->run_ns;
                t->pend_delay_ns += run_delay_ns - t->delay_ns;
                t->pend_slices += timeslices - t->slices;
                t->pend_io_bytes += c->io_bytes >= t->io_bytes ? c->io_bytes - t->io_bytes : 0;
                t->have_delta = true;
        }
        t->io_bytes = c->io_bytes;
        t->run_ns = run_ns;
        t->delay_ns = run_delay_ns;
        t->slices = timeslices;
        t->have_stats = true;
        return 1;
}

int wake_graph_task_exit(WakeGraph *g, pid_t tid) {
        uint32_t i;
        if (!u64map_get(g->by_tid, (uint64_t)tid, &i))
                return 0;
        task_remove(g, i);
        return 1;
}

/*
 * Drops idle tasks, then decays every edge, resolves its endpoints and drops
 * dead ones. Time the source did not watch (unwatched_ns of the interval
 * dt_ns) neither ages nor decays anything: a rested sampler saw no
 * wakeups, which says nothing of the tasks, so every rate stays what the
 * last watched time made it and the groups stay as they were.
 */
static void decay_and_sweep(WakeGraph *g, uint64_t now_ns, uint64_t dt_ns, uint64_t unwatched_ns) {
        uint64_t watched_ns = dt_ns - MIN(unwatched_ns, dt_ns);
        double h = (double)g->p.edge_half_life_ns;
        double a = exp2(-(double)watched_ns / h), dt_s = (double)watched_ns / 1e9;

        for (size_t i = g->n_tasks; i-- > 0;) {
                WgTask *t = &g->tasks[i];
                t->out_rate = t->in_rate = 0;
                if (unwatched_ns)
                        t->last_seen_ns = MIN(t->last_seen_ns + unwatched_ns, now_ns);
                if (t->last_seen_ns + g->p.task_idle_ns < now_ns)
                        task_remove(g, i);
        }

        for (size_t i = g->n_edges; i-- > 0;) {
                WgEdge *e = &g->edges[i];
                uint32_t u, v;
                if (!u64map_get(g->by_uid, e->waker_uid, &u) ||
                    !u64map_get(g->by_uid, e->wakee_uid, &v)) {
                        edge_remove(g, i);
                        continue;
                }
                if (e->first_ns == 0)
                        e->first_ns = MAX(now_ns - watched_ns, (uint64_t)1);
                else if (unwatched_ns)
                        e->first_ns = MIN(e->first_ns + unwatched_ns, now_ns);
                if (watched_ns) {
                        e->tick_rate = (double)e->pending / dt_s;
                        e->raw = a * e->raw + (1 - a) * e->tick_rate;
                        e->pending = 0;
                        double age = (double)(now_ns - e->first_ns);
                        double seen = 1 - exp2(-MAX(age, (double)watched_ns) / h);
                        e->rate = e->raw / seen;
                }
                if (e->rate < g->p.edge_min_rate) {
                        edge_remove(g, i);
                        continue;
                }
                e->waker = u;
                e->wakee = v;
                e->strong = false;
                g->tasks[u].out_rate += e->rate;
                g->tasks[v].in_rate += e->rate;
        }
}

static uint32_t uf_find(uint32_t *parent, uint32_t x) {
        while (parent[x] != x) {
                parent[x] = parent[parent[x]];
                x = parent[x];
        }
        return x;
}

static void uf_union(uint32_t *parent, uint32_t a, uint32_t b) {
        a = uf_find(parent, a);
        b = uf_find(parent, b);
        if (a != b)
                parent[MAX(a, b)] = MIN(a, b);
}

/* The rate of the edge waker -> wakee, 0 when there is none. */
static double edge_rate(const WakeGraph *g, uint32_t waker_uid, uint32_t wakee_uid) {
        uint32_t i;
        return u64map_get(g->edge_map, edge_key(waker_uid, wakee_uid), &i) ? g->edges[i].rate : 0;
}

/* Pair bonds first, then components over strong edges; fills parent[]. */
static void form_components(WakeGraph *g, uint32_t *parent, int64_t *partner) {
        const WakeGraphParams *p = &g->p;

        for (size_t i = 0; i < g->n_tasks; i++) {
                parent[i] = (uint32_t)i;
                partner[i] = -1;
        }

        for (size_t i = 0; i < g->n_edges; i++) {
                WgEdge *e = &g->edges[i];
                const WgTask *u = &g->tasks[e->waker], *v = &g->tasks[e->wakee];
                if (e->waker > e->wakee)
                        continue; /* each unordered pair once */
                double back = edge_rate(g, e->wakee_uid, e->waker_uid);
                if (e->rate < p->strong_min_rate || back < p->strong_min_rate)
                        continue;
                double s = p->pair_min_share;
                if (e->rate >= s * u->out_rate && e->rate >= s * v->in_rate &&
                    back >= s * v->out_rate && back >= s * u->in_rate) {
                        partner[e->waker] = e->wakee;
                        partner[e->wakee] = e->waker;
                        uf_union(parent, e->waker, e->wakee);
                }
        }

        for (size_t i = 0; i < g->n_edges; i++) {
                WgEdge *e = &g->edges[i];
                const WgTask *u = &g->tasks[e->waker], *v = &g->tasks[e->wakee];
                if (e->rate < p->strong_min_rate)
                        continue;
                if (partner[e->waker] >= 0 || partner[e->wakee] >= 0) {
                        e->strong = partner[e->waker] == (int64_t)e->wakee;
                        continue;
                }
                bool same_process = u->tgid > 0 && u->tgid == v->tgid;
                if (!same_process && e->rate < p->strong_min_share * u->out_rate &&
                    e->rate < p->strong_min_share * v->in_rate)
                        continue;
                e->strong = true;
                uf_union(parent, e->waker, e->wakee);
        }
}

/* Per-component working data during an update. */
typedef struct WgComp {
        uint32_t first, n;      /* slice of the member array */
        uint32_t master;        /* task index */
        double intra_rate;      /* wakeups/s between members */
        double intra_tick_rate; /* the same over the last interval alone, not decayed */
        double master_rate;     /* ... of which on edges touching the master */
        GroupClass class;
        uint64_t id;
        uint32_t overlap; /* members that were in group `id` before */
} WgComp;

typedef struct WgScratch {
        uint32_t *parent;  /* union-find */
        int64_t *partner;  /* pair bond partner or -1 */
        uint32_t *comp_of; /* task -> component index, UINT32_MAX = singleton */
        uint32_t *members; /* task indices grouped by component */
        double *intra_out; /* per task: wakeups/s it causes inside its group */
        uint32_t *degree;  /* per task: group members it wakes at strong_min_rate */
        WgComp *comps;
        uint32_t n_comps;
} WgScratch;

static void scratch_done(WgScratch *s) {
        free(s->parent);
        free(s->partner);
        free(s->comp_of);
        free(s->members);
        free(s->intra_out);
        free(s->degree);
        free(s->comps);
}

static int scratch_alloc(WgScratch *s, size_t n) {
        size_t m = MAX(n, (size_t)1);
        *s = (WgScratch){
                .parent = malloc(m * sizeof(uint32_t)),
                .partner = malloc(m * sizeof(int64_t)),
                .comp_of = malloc(m * sizeof(uint32_t)),
                .members = malloc(m * sizeof(uint32_t)),
                .intra_out = calloc(m, sizeof(double)),
                .degree = calloc(m, sizeof(uint32_t)),
                .comps = calloc(m, sizeof(WgComp)),
        };
        if (!s->parent || !s->partner || !s->comp_of || !s->members || !s->intra_out ||
            !s->degree || !s->comps) {
                scratch_done(s);
                return -ENOMEM;
        }
        return 0;
}

/* Numbers the components of two or more tasks and lists their members. */
static void collect_members(WakeGraph *g, WgScratch *s) {
        uint32_t *size = s->members; /* borrowed as a counter, per root */
        memset(size, 0, g->n_tasks * sizeof(uint32_t));
        for (size_t i = 0; i < g->n_tasks; i++)
                size[uf_find(s->parent, (uint32_t)i)]++;
        for (size_t i = 0; i < g->n_tasks; i++)
                s->comp_of[i] = UINT32_MAX;
        s->n_comps = 0;
        uint32_t offset = 0;
        for (size_t i = 0; i < g->n_tasks; i++) {
                if (s->parent[i] != i || size[i] < 2)
                        continue; /* roots are their own parent after uf_find on all */
                s->comps[s->n_comps] = (WgComp){ .first = offset, .n = 0 };
                s->comp_of[i] = s->n_comps++;
                offset += size[i];
        }
        for (size_t i = 0; i < g->n_tasks; i++) {
                uint32_t root = uf_find(s->parent, (uint32_t)i);
                s->comp_of[i] = s->comp_of[root];
        }
        for (size_t i = 0; i < g->n_tasks; i++) {
                uint32_t c = s->comp_of[i];
                if (c != UINT32_MAX) {
                        WgComp *comp = &s->comps[c];
                        s->members[comp->first + comp->n++] = (uint32_t)i;
                }
        }
}

/* The flips value wake_wide() would use, or the degree when the source has no flips. */
static uint32_t task_flips(const WakeGraph *g, const WgScratch *s, uint32_t i, uint64_t now_ns) {
        const WgTask *t = &g->tasks[i];
        return t->has_flips ? wake_flips_peek(&t->flips, now_ns) : s->degree[i];
}

static GroupClass classify(const WakeGraph *g, const WgScratch *s, WgComp *c, uint64_t now_ns) {
        const uint32_t *m = &s->members[c->first];

        if (c->n == 2)
                return s->degree[m[0]] > 0 && s->degree[m[1]] > 0 ? GROUP_PAIR : GROUP_SOLO;

        uint32_t master_flips = task_flips(g, s, c->master, now_ns), other_flips = 0, waking = 0;
        for (uint32_t k = 0; k < c->n; k++) {
                if (s->degree[m[k]] >= 2)
                        waking++;
                if (m[k] != c->master)
                        other_flips = MAX(other_flips, task_flips(g, s, m[k], now_ns));
        }
        uint64_t llc = g->p.llc_size;
        if (c->intra_rate > 0 && c->master_rate >= g->p.fanout_min_star * c->intra_rate &&
            s->degree[c->master] >= 2 && master_flips >= llc &&
            master_flips >= llc * (uint64_t)other_flips)
                return GROUP_FANOUT;
        if (waking * 2 >= c->n)
                return GROUP_MESH;
        return GROUP_SOLO;
}

/* Per-member sums over intra-group edges, the master, then the class. */
static void classify_all(WakeGraph *g, WgScratch *s, uint64_t now_ns) {
        for (size_t i = 0; i < g->n_edges; i++) {
                const WgEdge *e = &g->edges[i];
                uint32_t c = s->comp_of[e->waker];
                if (c == UINT32_MAX || c != s->comp_of[e->wakee])
                        continue;
                s->comps[c].intra_rate += e->rate;
                s->comps[c].intra_tick_rate += e->tick_rate;
                s->intra_out[e->waker] += e->rate;
                if (e->rate >= g->p.strong_min_rate)
                        s->degree[e->waker]++;
        }
        for (uint32_t c = 0; c < s->n_comps; c++) {
                WgComp *comp = &s->comps[c];
                uint32_t best = s->members[comp->first];
                for (uint32_t k = 1; k < comp->n; k++) {
                        uint32_t t = s->members[comp->first + k];
                        uint32_t ft = task_flips(g, s, t, now_ns),
                                 fb = task_flips(g, s, best, now_ns);
                        if (ft > fb || (ft == fb && s->intra_out[t] > s->intra_out[best]))
                                best = t;
                }
                comp->master = best;
        }
        for (size_t i = 0; i < g->n_edges; i++) {
                const WgEdge *e = &g->edges[i];
                uint32_t c = s->comp_of[e->waker];
                if (c == UINT32_MAX || c != s->comp_of[e->wakee])
                        continue;
                if (e->waker == s->comps[c].master || e->wakee == s->comps[c].master)
                        s->comps[c].master_rate += e->rate;
        }
        for (uint32_t c = 0; c < s->n_comps; c++)
                s->comps[c].class = classify(g, s, &s->comps[c], now_ns);
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static int cmp_comp_overlap(const void *a, const void *b) {
        const WgComp *x = *(WgComp *const *)a, *y = *(WgComp *const *)b;
        if (x->overlap != y->overlap)
                return x->overlap > y->overlap ? -1 : 1;
        return x->first < y->first ? -1 : x->first > y->first;
}

/* Gives each component the id of the previous group most of whose members it holds. */
static int assign_ids(WakeGraph *g, WgScratch *s) {
        _cleanup_free_ uint64_t *ids = malloc(MAX(g->n_tasks, (size_t)1) * sizeof(uint64_t));
        _cleanup_free_ WgComp **order = malloc(MAX(s->n_comps, 1u) * sizeof(WgComp *));
        _cleanup_(u64map_freep) U64Map *taken = NULL;
        if (!ids || !order || u64map_new(&taken) < 0)
                return -ENOMEM;

        for (uint32_t c = 0; c < s->n_comps; c++) {
                WgComp *comp = &s->comps[c];
                for (uint32_t k = 0; k < comp->n; k++)
                        ids[k] = g->tasks[s->members[comp->first + k]].group_id;
                qsort(ids, comp->n, sizeof(uint64_t), cmp_u64);
                comp->id = 0;
                comp->overlap = 0;
                for (uint32_t k = 0, run = 0; k < comp->n; k++) {
                        run = k > 0 && ids[k] == ids[k - 1] ? run + 1 : 1;
                        if (ids[k] && run > comp->overlap) {
                                comp->overlap = run;
                                comp->id = ids[k];
                        }
                }
                uint32_t prev = 0;
                if (comp->id &&
                    (!u64map_get(g->prev_size, comp->id, &prev) || comp->overlap * 2 <= prev))
                        comp->id = 0, comp->overlap = 0; /* most of the old group left */
                order[c] = comp;
        }
        qsort(order, s->n_comps, sizeof(WgComp *), cmp_comp_overlap);
        for (uint32_t c = 0; c < s->n_comps; c++) {
                WgComp *comp = order[c];
                if (comp->id && u64map_get(taken, comp->id, NULL))
                        comp->id = 0;
                if (!comp->id)
                        comp->id = g->next_group_id++;
                if (u64map_put(taken, comp->id, 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int cmp_taskid(const void *a, const void *b) {
        const TaskId *x = a, *y = b;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_group_id(const void *a, const void *b) {
        const Group *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

Group *group_array_free(Group *groups, unsigned n) {
        for (unsigned i = 0; groups && i < n; i++)
                free(groups[i].tasks);
        free(groups);
        return NULL;
}

/* Builds the published groups; the master of a fanout goes first, the rest by TID. */
static int build_groups(WakeGraph *g, WgScratch *s, uint64_t dt_ns, Group **ret, unsigned *ret_n) {
        Group *groups = calloc(MAX(s->n_comps, 1u), sizeof(Group));
        if (!groups)
                return -ENOMEM;

        for (uint32_t c = 0; c < s->n_comps; c++) {
                const WgComp *comp = &s->comps[c];
                Group *out = &groups[c];
                out->tasks = malloc(comp->n * sizeof(TaskId));
                if (!out->tasks) {
                        group_array_free(groups, c);
                        return -ENOMEM;
                }
                uint64_t run_ns = 0, delay_ns = 0, slices = 0, io_bytes = 0;
                unsigned n = 0;
                bool measured = true;
                if (comp->class == GROUP_FANOUT)
                        out->tasks[n++] = g->tasks[comp->master].id;
                for (uint32_t k = 0; k < comp->n; k++) {
                        const WgTask *t = &g->tasks[s->members[comp->first + k]];
                        run_ns += t->pend_run_ns;
                        delay_ns += t->pend_delay_ns;
                        slices += t->pend_slices;
                        io_bytes += t->pend_io_bytes;
                        measured = measured && t->have_delta;
                        if (comp->class != GROUP_FANOUT ||
                            s->members[comp->first + k] != comp->master)
                                out->tasks[n++] = t->id;
                }
                unsigned sorted_from = comp->class == GROUP_FANOUT ? 1 : 0;
                qsort(out->tasks + sorted_from, n - sorted_from, sizeof(TaskId), cmp_taskid);
                out->id = comp->id;
                out->class = comp->class;
                out->n_tasks = n;
                out->util = (double)run_ns / (double)dt_ns;
                /* Per scheduling, not per tick: a packed lockstep pair waits a
                 * few microseconds at every hand-off, hundreds of thousands of
                 * times a second, and that is the point of packing it; what
                 * hurts is a long wait each time a task wants to run. */
                out->runq_delay_us = slices ? delay_ns / slices / NSEC_PER_USEC : 0;
                out->runq_wait = (double)delay_ns / (double)dt_ns;
                out->wake_rate = comp->intra_rate;
                /* Progress: how often its members got a CPU, per second. A
                 * lockstep pair runs each task once a round trip, spread or
                 * packed; its wakeups are no measure once packed, where the
                 * peer often has not gone to sleep yet when it is written
                 * to (measured: 129k -> 79k wakeups/s for a pair that ran
                 * 1.4x faster packed). Wakeups stand in where the run
                 * counts are not known. */
                out->handoff_rate = slices && measured ? (double)slices * 1e9 / (double)dt_ns
                                                       : comp->intra_tick_rate;
                out->io_rate = (double)io_bytes * 1e9 / (double)dt_ns;
                out->unmeasured = !measured;
        }
        qsort(groups, s->n_comps, sizeof(Group), cmp_group_id);
        *ret = groups;
        *ret_n = s->n_comps;
        return 0;
}

/* Remembers each task's group and each group's size for the next update's ids. */
static int remember_groups(WakeGraph *g, const WgScratch *s) {
        u64map_clear(g->prev_size);
        for (size_t i = 0; i < g->n_tasks; i++) {
                uint32_t c = s->comp_of[i];
                g->tasks[i].group_id = c == UINT32_MAX ? 0 : s->comps[c].id;
                g->tasks[i].pend_run_ns = g->tasks[i].pend_delay_ns = g->tasks[i].pend_slices = 0;
                g->tasks[i].pend_io_bytes = 0;
        }
        for (uint32_t c = 0; c < s->n_comps; c++)
                if (u64map_put(g->prev_size, s->comps[c].id, s->comps[c].n) < 0)
                        return -ENOMEM;
        return 0;
}

int wake_graph_update(WakeGraph *g, uint64_t now_ns, Group **ret_groups, unsigned *ret_n) {
        uint64_t dt_ns = g->last_update_ns && now_ns > g->last_update_ns
                                 ? now_ns - g->last_update_ns
                                 : FIRST_TICK_NS;
        _cleanup_(scratch_done) WgScratch s = {};
        Group *groups = NULL;
        unsigned n = 0;
        int r;

        decay_and_sweep(g, now_ns, dt_ns, g->pend_unwatched_ns);
        g->pend_unwatched_ns = 0;
        g->last_update_ns = now_ns;

        r = scratch_alloc(&s, g->n_tasks);
        if (r < 0)
                return r;
        form_components(g, s.parent, s.partner);
        collect_members(g, &s);
        classify_all(g, &s, now_ns);
        r = assign_ids(g, &s);
        if (r < 0)
                return r;
        r = build_groups(g, &s, dt_ns, &groups, &n);
        if (r < 0)
                return r;
        r = remember_groups(g, &s);
        if (r < 0) {
                group_array_free(groups, n);
                return r;
        }
        *ret_groups = groups;
        *ret_n = n;
        return 0;
}

size_t wake_graph_n_tasks(const WakeGraph *g) {
        return g->n_tasks;
}

size_t wake_graph_n_edges(const WakeGraph *g) {
        return g->n_edges;
}

int wake_graph_get_tasks(const WakeGraph *g, TaskId **ret, size_t *ret_n) {
        TaskId *ids = malloc(MAX(g->n_tasks, (size_t)1) * sizeof(TaskId));
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < g->n_tasks; i++)
                ids[i] = g->tasks[i].id;
        *ret = ids;
        *ret_n = g->n_tasks;
        return 0;
}

int wake_graph_get_task(const WakeGraph *g, pid_t tid, uint64_t now_ns, WakeGraphTask *ret) {
        uint32_t i;
        if (!u64map_get(g->by_tid, (uint64_t)tid, &i))
                return 0;
        const WgTask *t = &g->tasks[i];
        uint32_t size = 0;
        if (t->group_id)
                (void)u64map_get(g->prev_size, t->group_id, &size);
        *ret = (WakeGraphTask){
                .id = t->id,
                .tgid = t->tgid,
                .wakee_flips = t->has_flips ? wake_flips_peek(&t->flips, now_ns) : 0,
                .out_rate = t->out_rate,
                .in_rate = t->in_rate,
                .group_id = t->group_id,
                .group_size = size,
        };
        memcpy(ret->comm, t->comm, sizeof(ret->comm));
        return 1;
}

int wake_graph_get_edges(const WakeGraph *g, WakeGraphEdge **ret, size_t *ret_n) {
        WakeGraphEdge *edges = malloc(MAX(g->n_edges, (size_t)1) * sizeof(WakeGraphEdge));
        size_t n = 0;
        if (!edges)
                return -ENOMEM;
        for (size_t i = 0; i < g->n_edges; i++) {
                uint32_t u, v;
                const WgEdge *e = &g->edges[i];
                if (!u64map_get(g->by_uid, e->waker_uid, &u) ||
                    !u64map_get(g->by_uid, e->wakee_uid, &v))
                        continue; /* its task exited since the last update */
                edges[n++] = (WakeGraphEdge){
                        .waker = g->tasks[u].id.tid,
                        .wakee = g->tasks[v].id.tid,
                        .rate = e->rate,
                        .strong = e->strong,
                };
        }
        *ret = edges;
        *ret_n = n;
        return 0;
}
