/* SPDX-License-Identifier: MIT */
/*
 * Wake sources (see wake-source.h): the BPF sampler's loader and reader, the
 * perf tracepoint fallback, the replay source, and the userspace aggregation
 * perf and replay share.
 *
 * Why a fallback at all: BPF needs BTF, CAP_BPF/CAP_PERFMON and a kernel
 * whose verifier takes the program; perf tracepoints need only tracefs and
 * CAP_PERFMON. The perf source sees a sample of the wakeups (period N) and
 * scales the counts by N; its flips are computed from the samples, so they
 * are exact only at period 1.
 *
 * libbpf may print to stderr while loading; the daemon routes that with
 * libbpf_set_print() if it wants it in its log.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "macro.h"
#include "wake-graph.h"
#include "wake-source.h"
#include "wake.skel.h"

void wake_batch_reset(WakeBatch *b) {
        b->n_tasks = b->n_edges = 0;
        b->n_events = b->n_skipped = b->n_lost = 0;
        b->now_ns = 0;
}

void wake_batch_done(WakeBatch *b) {
        free(b->tasks);
        free(b->edges);
        *b = (WakeBatch){};
}

static int batch_grow(void **array, size_t *alloc, size_t need, size_t size) {
        if (need <= *alloc)
                return 0;
        size_t n = MAX(MAX(need, *alloc * 2), (size_t)64);
        void *p = realloc(*array, n * size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *alloc = n;
        return 0;
}

int wake_batch_add_task(WakeBatch *b, const WakeTaskRecord *t) {
        int r = batch_grow((void **)&b->tasks, &b->n_tasks_alloc, b->n_tasks + 1, sizeof(*t));
        if (r < 0)
                return r;
        b->tasks[b->n_tasks++] = *t;
        return 0;
}

int wake_batch_add_edge(WakeBatch *b, pid_t waker, pid_t wakee, uint64_t count) {
        int r = batch_grow((void **)&b->edges, &b->n_edges_alloc, b->n_edges + 1,
                           sizeof(WakeEdgeRecord));
        if (r < 0)
                return r;
        b->edges[b->n_edges++] = (WakeEdgeRecord){ .waker = waker, .wakee = wakee, .count = count };
        return 0;
}

/* ---- userspace aggregation, shared by perf and replay ------------------ */

#define AGG_IDLE_NS (30 * NSEC_PER_SEC) /* forget a waker's flips after this long */

typedef struct AggTask {
        pid_t tid, tgid;
        char comm[WAKE_COMM_LEN];
        struct wake_flips flips;
        uint64_t last_ns;
        uint64_t wakeups; /* in the current batch */
        bool in_batch;
        bool waker; /* woke someone in the current batch */
} AggTask;

typedef struct WakeAgg {
        AggTask *tasks; /* owned; persistent: the flips outlive a batch */
        size_t n_tasks, n_tasks_alloc;
        U64Map *by_tid;    /* tid -> tasks index */
        U64Map *edge_slot; /* waker << 32 | wakee -> batch edge index, per batch */
} WakeAgg;

static void agg_done(WakeAgg *a) {
        free(a->tasks);
        u64map_free(a->by_tid);
        u64map_free(a->edge_slot);
        *a = (WakeAgg){};
}

static int agg_init(WakeAgg *a) {
        *a = (WakeAgg){};
        if (u64map_new(&a->by_tid) < 0 || u64map_new(&a->edge_slot) < 0) {
                agg_done(a);
                return -ENOMEM;
        }
        return 0;
}

static AggTask *agg_task(WakeAgg *a, pid_t tid, pid_t tgid, const char *comm) {
        uint32_t i;
        if (!u64map_get(a->by_tid, (uint64_t)tid, &i)) {
                if (batch_grow((void **)&a->tasks, &a->n_tasks_alloc, a->n_tasks + 1,
                               sizeof(AggTask)) < 0 ||
                    u64map_put(a->by_tid, (uint64_t)tid, (uint32_t)a->n_tasks) < 0)
                        return NULL;
                i = (uint32_t)a->n_tasks++;
                a->tasks[i] = (AggTask){ .tid = tid };
        }
        AggTask *t = &a->tasks[i];
        if (tgid > 0)
                t->tgid = tgid;
        if (comm && comm[0])
                snprintf(t->comm, sizeof(t->comm), "%s", comm);
        t->in_batch = true;
        return t;
}

/* One wakeup (or one sample standing for weight wakeups). */
static int agg_event(WakeAgg *a, WakeBatch *b, uint64_t ts_ns, pid_t waker, pid_t waker_tgid,
                     const char *waker_comm, pid_t wakee, pid_t wakee_tgid, const char *wakee_comm,
                     uint64_t weight) {
        AggTask *t = agg_task(a, wakee, wakee_tgid, wakee_comm);
        if (!t)
                return -ENOMEM;
        t = agg_task(a, waker, waker_tgid, waker_comm);
        if (!t)
                return -ENOMEM;
        wake_flips_record(&t->flips, (uint32_t)wakee, ts_ns);
        t->last_ns = ts_ns;
        t->wakeups += weight;
        t->waker = true;
        b->n_events += weight;

        uint64_t key = (uint64_t)waker << 32 | (uint32_t)wakee;
        uint32_t i;
        if (u64map_get(a->edge_slot, key, &i)) {
                b->edges[i].count += weight;
                return 0;
        }
        int r = u64map_put(a->edge_slot, key, (uint32_t)b->n_edges);
        if (r < 0)
                return r;
        return wake_batch_add_edge(b, waker, wakee, weight);
}

/* Adds the batch's task records and forgets wakers idle for long. */
static int agg_finish(WakeAgg *a, WakeBatch *b, uint64_t now_ns) {
        int r = 0;
        for (size_t i = 0; i < a->n_tasks; i++) {
                AggTask *t = &a->tasks[i];
                if (!t->in_batch)
                        continue;
                WakeTaskRecord rec = {
                        .id = { .tid = t->tid },
                        .tgid = t->tgid,
                        .wakeups = t->wakeups,
                        .flips = t->flips,
                        .has_flips = t->waker,
                };
                memcpy(rec.comm, t->comm, sizeof(rec.comm));
                if (r >= 0)
                        r = wake_batch_add_task(b, &rec);
                t->in_batch = t->waker = false;
                t->wakeups = 0;
        }
        for (size_t i = a->n_tasks; i-- > 0;) {
                if (a->tasks[i].last_ns + AGG_IDLE_NS >= now_ns)
                        continue;
                u64map_remove(a->by_tid, (uint64_t)a->tasks[i].tid);
                if (i != --a->n_tasks) {
                        a->tasks[i] = a->tasks[a->n_tasks];
                        (void)u64map_put(a->by_tid, (uint64_t)a->tasks[i].tid, (uint32_t)i);
                }
        }
        u64map_clear(a->edge_slot);
        return r;
}

/* ---- the source object -------------------------------------------------- */

/*
 * One kernel edge: its total (hash plus cache ways, summed over the CPUs) as
 * far as the reads saw it. The total only grows, except when a read misses a
 * count on the move from a cache way to the hash (made good by the next
 * read), when the hash is full (counted as lost) and when the edge is pruned
 * (and forgotten here too).
 */
typedef struct EdgeSeen {
        struct wake_edge_key key;
        uint64_t count;   /* the highest total read so far */
        uint64_t total;   /* this read's, summed as the hash and the ways are read */
        uint64_t logged;  /* this read's records of it in the wake logs */
        uint64_t read_no; /* last read it grew in */
        uint64_t seen_no; /* last read that found it (total and logged are that read's) */
        bool in_cache;    /* the read seen_no found it in a cache way */
        bool in_kernel;   /* ever found in the hash or a way: may have a hash entry */
} EdgeSeen;

typedef struct PerfRing {
        int fd;
        void *base; /* mmap: one metadata page + data pages */
        size_t data_size;
} PerfRing;

struct WakeSource {
        WakeSourceKind kind;
        WakeSourceOptions opts;
        WakeAgg agg;

        /* bpf */
        struct wake_bpf *skel;
        uint64_t seen_skipped, seen_lost; /* counter sums at the previous read */
        EdgeSeen *edge_seen; /* owned: kernel edges and their counts at the last read */
        size_t n_edge_seen, n_edge_seen_alloc;
        U64Map *edge_seen_map; /* edge_key_hash() -> edge_seen index */
        uint64_t n_reads;
        struct wake_cpu_ctl *ctl;              /* mmap of the cpu_ctl map; we write log_tail */
        const struct wake_edge_key *log;       /* mmap of the wake_log map, read-only */
        const struct wake_edge_set *cache;     /* mmap of the edge_cache map, read-only */
        size_t ctl_size, log_size, cache_size; /* bytes mapped */
        uint32_t log_records;                  /* per CPU */
        uint32_t cache_sets;                   /* per CPU */
        uint32_t *log_memo; /* owned: LOG_MEMO_SIZE EdgeSeen indexes + 1 by log_memo_slot() */
        unsigned n_cpus;
        uint64_t ns_per_tick;         /* start_boottime ns -> clock ticks (TaskId.start_time) */
        uint64_t ns_per_jiffy;        /* the kernel's tick; 0 = unknown */
        struct wake_task_info *infos; /* owned: the task iterator's latest output */
        size_t n_infos, infos_size;   /* records; bytes allocated */
        U64Map *info_by_task;         /* task_struct address -> infos index */

        /* perf */
        PerfRing *rings;
        unsigned n_rings;
        unsigned pid_offset, comm_offset, flags_offset;
        uint64_t period;

        /* replay */
        FILE *replay;
        char *line;
        size_t line_size;
        bool have_line; /* line holds the next, not yet consumed event */
        uint64_t line_ts_ns;
        unsigned line_no;
};

static uint64_t clock_tick_ns(void) {
        long hz = sysconf(_SC_CLK_TCK);
        return NSEC_PER_SEC / (uint64_t)(hz > 0 ? hz : 100);
}

/* ---- bpf ---------------------------------------------------------------- */

/* The kernel's tick (TICK_NSEC): the resolution of the coarse clocks. */
static uint64_t kernel_tick_ns(void) {
        struct timespec res;
        if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) < 0 || res.tv_sec != 0 || res.tv_nsec <= 0)
                return 0;
        return (uint64_t)res.tv_nsec;
}

/*
 * Memory of the BPF maps, bounded whatever the CPU count. The wake logs hold
 * a tick of wakeups on small machines (2 CPUs: 2 x 4 MiB, 262144 records a
 * CPU; hackbench and pipe make 100-300k wakeups a second); with 512 CPUs a
 * CPU gets 4096 records, and wakeups past them go to the edge cache (1024
 * sets a CPU there), which costs more per wakeup but is as exact.
 */
#define EDGE_MAP_BUDGET   (64ULL << 20) /* bytes of per-CPU edge counts, at most */
#define EDGE_CACHE_BUDGET (32ULL << 20) /* bytes of edge cache sets, at most (but see below) */
#define WAKE_LOG_BUDGET   (32ULL << 20) /* bytes of wake log records, at most (likewise) */
#define LOG_MEMO_SIZE     4096          /* direct-mapped: log record -> EdgeSeen */

_Static_assert(sizeof(struct wake_edge_set) == 64, "a cache set is one cache line");
_Static_assert(sizeof(struct wake_cpu_ctl) == 192, "a CPU's state is three cache lines");

/*
 * Elements per CPU in the log or the cache: a power of two, max while the
 * whole fits budget bytes, fewer on large machines but never below min; or
 * the caller's number (tests), at most max.
 */
static uint32_t per_cpu_elements(unsigned n_cpus, size_t element_size, uint64_t budget,
                                 uint32_t min, uint32_t max, unsigned wanted) {
        uint64_t fit = wanted > 0 ? wanted : budget / (element_size * n_cpus);
        uint32_t n = max;
        while (n > (wanted > 0 ? 1 : min) && n > fit)
                n >>= 1;
        return n;
}

/* Sizes the maps before the load: the hash by EDGE_MAP_BUDGET, the log and the cache per CPU. */
static int bpf_size_maps(WakeSource *s, struct wake_bpf *skel) {
        int r = libbpf_num_possible_cpus();
        s->n_cpus = r > 0 ? (unsigned)r : 1;
        s->log_records =
                per_cpu_elements(s->n_cpus, sizeof(struct wake_edge_key), WAKE_LOG_BUDGET,
                                 WAKE_LOG_RECORDS_MIN, WAKE_LOG_RECORDS_MAX, s->opts.log_records);
        s->cache_sets =
                per_cpu_elements(s->n_cpus, sizeof(struct wake_edge_set), EDGE_CACHE_BUDGET,
                                 WAKE_CACHE_SETS_MIN, WAKE_CACHE_SETS_MAX, s->opts.edge_cache_sets);
        skel->rodata->log_records = s->log_records;
        skel->rodata->cache_sets = s->cache_sets;
        skel->rodata->cache_set_shift = 64 - (uint32_t)__builtin_ctz(s->cache_sets);
        r = bpf_map__set_max_entries(skel->maps.cpu_ctl, s->n_cpus);
        if (r >= 0)
                r = bpf_map__set_max_entries(skel->maps.wake_log, s->log_records * s->n_cpus);
        if (r >= 0)
                r = bpf_map__set_max_entries(skel->maps.edge_cache, s->cache_sets * s->n_cpus);
        if (r < 0)
                return r;
        /* Preallocated (an allocation on the hot path can fail in a burst of
         * new edges): cap the per-CPU counts at EDGE_MAP_BUDGET bytes. */
        return bpf_map__set_max_entries(skel->maps.edges,
                                        (uint32_t)MIN((uint64_t)WAKE_MAX_EDGES,
                                                      EDGE_MAP_BUDGET / (8 * (uint64_t)s->n_cpus)));
}

/* Maps an mmap'able array map; Return: 0 and *ret, *ret_size, or negative errno. */
static int bpf_map_array(const struct bpf_map *map, size_t value_size, size_t n, int prot,
                         void **ret, size_t *ret_size) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t size = DIV_ROUND_UP(value_size * n, page) * page;
        void *p = mmap(NULL, size, prot, MAP_SHARED, bpf_map__fd(map), 0);
        if (p == MAP_FAILED)
                return negative_errno();
        *ret = p;
        *ret_size = size;
        return 0;
}

/* Maps the program's per-CPU state, log and cache: read each tick without a syscall. */
static int bpf_map_arrays(WakeSource *s) {
        void *p;
        int r = bpf_map_array(s->skel->maps.cpu_ctl, sizeof(struct wake_cpu_ctl), s->n_cpus,
                              PROT_READ | PROT_WRITE, &p, &s->ctl_size);
        if (r < 0)
                return r;
        s->ctl = p;
        r = bpf_map_array(s->skel->maps.wake_log, sizeof(struct wake_edge_key),
                          (size_t)s->log_records * s->n_cpus, PROT_READ, &p, &s->log_size);
        if (r < 0)
                return r;
        s->log = p;
        r = bpf_map_array(s->skel->maps.edge_cache, sizeof(struct wake_edge_set),
                          (size_t)s->cache_sets * s->n_cpus, PROT_READ, &p, &s->cache_size);
        if (r < 0)
                return r;
        s->cache = p;
        return 0;
}

static int bpf_source_open(WakeSource *s) {
        struct wake_bpf *skel = wake_bpf__open();
        int r;
        if (!skel)
                return negative_errno();
        skel->rodata->sample_shift =
                s->opts.sample_shift == 0 ? WAKE_SAMPLE_SHIFT_DEFAULT
                : s->opts.sample_shift < 0
                        ? 0
                        : MIN((unsigned)s->opts.sample_shift, WAKE_SAMPLE_SHIFT_MAX);
        skel->rodata->skip_kthreads = !s->opts.keep_kthreads;
        r = bpf_size_maps(s, skel);
        if (r < 0) {
                wake_bpf__destroy(skel);
                return r;
        }
        r = wake_bpf__load(skel);
        if (r == 0)
                r = wake_bpf__attach(skel);
        if (r < 0) {
                wake_bpf__destroy(skel);
                return r < 0 ? r : -EIO;
        }
        s->skel = skel;
        r = bpf_map_arrays(s);
        if (r < 0)
                return r;
        s->log_memo = calloc(LOG_MEMO_SIZE, sizeof(*s->log_memo));
        if (!s->log_memo || u64map_new(&s->edge_seen_map) < 0 || u64map_new(&s->info_by_task) < 0)
                return -ENOMEM;
        s->ns_per_tick = clock_tick_ns();
        s->ns_per_jiffy = kernel_tick_ns();
        return 0;
}

static int bpf_read_counters(WakeSource *s, WakeBatch *b) {
        uint64_t skipped = 0, lost = 0;
        unsigned shift = s->skel->rodata->sample_shift;
        for (unsigned i = 0; i < s->n_cpus; i++) {
                skipped += __atomic_load_n(&s->ctl[i].skipped, __ATOMIC_RELAXED);
                lost += __atomic_load_n(&s->ctl[i].lost, __ATOMIC_RELAXED);
        }
        b->n_skipped = (skipped - s->seen_skipped) << shift;
        b->n_lost = (lost - s->seen_lost) << shift;
        s->seen_skipped = skipped;
        s->seen_lost = lost;
        return 0;
}

/* Runs the task iterator: every task's identity and kernel flip state, by address. */
static int bpf_read_tasks(WakeSource *s) {
        _cleanup_close_ int fd = bpf_iter_create(bpf_link__fd(s->skel->links.wake_task_iter));
        size_t used = 0;
        if (fd < 0)
                return negative_errno();
        for (;;) {
                if (s->infos_size - used < 64 * sizeof(struct wake_task_info)) {
                        size_t n = MAX(s->infos_size * 2, 1024 * sizeof(struct wake_task_info));
                        void *p = realloc(s->infos, n);
                        if (!p)
                                return -ENOMEM;
                        s->infos = p;
                        s->infos_size = n;
                }
                ssize_t k = read(fd, (char *)s->infos + used, s->infos_size - used);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        break;
                used += (size_t)k;
        }
        s->n_infos = used / sizeof(struct wake_task_info);
        u64map_clear(s->info_by_task);
        for (size_t i = 0; i < s->n_infos; i++)
                if (u64map_put(s->info_by_task, s->infos[i].task, (uint32_t)i) < 0)
                        return -ENOMEM;
        return 0;
}

/* The iterator's record of the task at this address, or NULL (exited since). */
static const struct wake_task_info *bpf_task_info(const WakeSource *s, uint64_t task) {
        uint32_t i;
        return u64map_get(s->info_by_task, task, &i) ? &s->infos[i] : NULL;
}

/*
 * The kernel's flip state in wake_flips terms: wakee_flip_decay_ts moved from
 * jiffies to CLOCK_MONOTONIC by the (jiffies, ktime) pair the iterator took.
 * Without the kernel's tick length, no halving is assumed pending.
 */
static void bpf_flips_from_kernel(const WakeSource *s, const struct wake_task_info *in,
                                  struct wake_flips *ret) {
        uint64_t jiffies = s->skel->bss->clock_jiffies, mono_ns = s->skel->bss->clock_mono_ns;
        uint64_t age = jiffies > in->decay_ts_jiffies ? jiffies - in->decay_ts_jiffies : 0;
        uint64_t age_ns = s->ns_per_jiffy == 0                 ? 0
                          : age > UINT64_MAX / s->ns_per_jiffy ? UINT64_MAX
                                                               : age * s->ns_per_jiffy;
        *ret = (struct wake_flips){
                .decay_ts_ns = mono_ns > age_ns ? mono_ns - age_ns : 0,
                .flips = in->flips,
                .last_wakee = in->last_wakee,
        };
}

/* Turns one edge's growth into an edge record and the two task records. */
static int bpf_take_edge(WakeSource *s, U64Map *task_slot, WakeBatch *b,
                         const struct wake_task_info *ends[2], uint64_t count) {
        int r;
        for (int e = 0; e < 2; e++) {
                const struct wake_task_info *info = ends[e];
                uint32_t i;
                if (!u64map_get(task_slot, info->tid, &i)) {
                        WakeTaskRecord rec = {
                                .id = { .tid = (pid_t)info->tid,
                                        .start_time = info->start_ns / s->ns_per_tick },
                                .tgid = (pid_t)info->tgid,
                                .has_flips = true,
                        };
                        memcpy(rec.comm, info->comm, WAKE_COMM_LEN);
                        rec.comm[WAKE_COMM_LEN - 1] = 0;
                        bpf_flips_from_kernel(s, info, &rec.flips);
                        i = (uint32_t)b->n_tasks;
                        r = wake_batch_add_task(b, &rec);
                        if (r < 0)
                                return r;
                        r = u64map_put(task_slot, info->tid, i);
                        if (r < 0)
                                return r;
                }
                if (e == 0)
                        b->tasks[i].wakeups += count;
        }
        b->n_events += count;
        return wake_batch_add_edge(b, (pid_t)ends[0]->tid, (pid_t)ends[1]->tid, count);
}

#define BPF_READ_CHUNK 1024
#define BPF_IDLE_READS 5 /* delete an edge from the kernel map after this many idle reads */

static uint64_t edge_key_hash(const struct wake_edge_key *k) {
        return k->waker_task * 0x9e3779b97f4a7c15ULL ^ (k->wakee_task >> 6);
}

static bool edge_key_equal(const struct wake_edge_key *a, const struct wake_edge_key *b) {
        return a->waker_task == b->waker_task && a->wakee_task == b->wakee_task;
}

/* The EdgeSeen slot of key k: its index, or where to put it (hash collisions probe on). */
static bool edge_seen_find(const WakeSource *s, const struct wake_edge_key *k, uint64_t *ret_h,
                           uint32_t *ret_i) {
        uint64_t h = edge_key_hash(k);
        uint32_t i;
        while (u64map_get(s->edge_seen_map, h, &i)) {
                if (edge_key_equal(&s->edge_seen[i].key, k)) {
                        *ret_h = h;
                        *ret_i = i;
                        return true;
                }
                h++;
        }
        *ret_h = h;
        return false;
}

/* EdgeSeen of key k, created if new, with its total reset if this read had not seen it yet. */
static EdgeSeen *edge_seen_get(WakeSource *s, const struct wake_edge_key *k) {
        uint64_t h;
        uint32_t i;
        if (!edge_seen_find(s, k, &h, &i)) {
                if (batch_grow((void **)&s->edge_seen, &s->n_edge_seen_alloc, s->n_edge_seen + 1,
                               sizeof(EdgeSeen)) < 0 ||
                    u64map_put(s->edge_seen_map, h, (uint32_t)s->n_edge_seen) < 0)
                        return NULL;
                i = (uint32_t)s->n_edge_seen++;
                s->edge_seen[i] = (EdgeSeen){ .key = *k };
        }
        EdgeSeen *e = &s->edge_seen[i];
        if (e->seen_no != s->n_reads) {
                e->seen_no = s->n_reads;
                e->total = e->logged = 0;
                e->in_cache = false;
        }
        return e;
}

static size_t log_memo_slot(const struct wake_edge_key *k) {
        return (size_t)((k->waker_task * 0x9e3779b97f4a7c15ULL ^ k->wakee_task) >> 52) &
               (LOG_MEMO_SIZE - 1);
}

/*
 * Counts the records of each CPU's wake log since the previous read, then
 * hands the space back: the program writes a record before it moves
 * log_head, and never past log_tail + log_records. Consecutive records mostly
 * repeat a few edges: a small memo saves most EdgeSeen lookups.
 */
static int bpf_read_log(WakeSource *s) {
        uint32_t mask = s->log_records - 1;
        memset(s->log_memo, 0, LOG_MEMO_SIZE * sizeof(*s->log_memo));
        for (unsigned c = 0; c < s->n_cpus; c++) {
                struct wake_cpu_ctl *ctl = &s->ctl[c];
                const struct wake_edge_key *log = &s->log[(size_t)c * s->log_records];
                uint64_t head = __atomic_load_n(&ctl->log_head, __ATOMIC_ACQUIRE);
                uint64_t tail = ctl->log_tail;
                if (head - tail > s->log_records) /* cannot be: the program waits for us */
                        tail = head - s->log_records;
                for (uint64_t i = tail; i < head; i++) {
                        const struct wake_edge_key *k = &log[i & mask];
                        uint32_t *memo = &s->log_memo[log_memo_slot(k)];
                        EdgeSeen *e = *memo ? &s->edge_seen[*memo - 1] : NULL;
                        if (!e || !edge_key_equal(&e->key, k)) {
                                e = edge_seen_get(s, k);
                                if (!e)
                                        return -ENOMEM;
                                *memo = (uint32_t)(e - s->edge_seen) + 1;
                        }
                        e->logged++;
                }
                __atomic_store_n(&ctl->log_tail, head, __ATOMIC_RELEASE);
        }
        return 0;
}

/* Adds every edge's count in the per-CPU hash to its total. */
static int bpf_read_edge_hash(WakeSource *s) {
        size_t n_vals = (size_t)BPF_READ_CHUNK * s->n_cpus;
        _cleanup_free_ struct wake_edge_key *keys = malloc(BPF_READ_CHUNK * sizeof(*keys));
        _cleanup_free_ uint64_t *vals = malloc(n_vals * sizeof(*vals)); /* per CPU */
        int fd = bpf_map__fd(s->skel->maps.edges), r;
        uint32_t token = 0;
        bool first = true, done = false;

        if (!keys || !vals)
                return -ENOMEM;
        while (!done) {
                uint32_t count = BPF_READ_CHUNK;
                r = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys, vals, &count,
                                         NULL);
                if (r < 0 && r != -ENOENT)
                        return r;
                done = r == -ENOENT;
                first = false;
                for (uint32_t i = 0; i < count; i++) {
                        EdgeSeen *e = edge_seen_get(s, &keys[i]);
                        if (!e)
                                return -ENOMEM;
                        for (unsigned c = 0; c < s->n_cpus; c++)
                                e->total += vals[(size_t)i * s->n_cpus + c];
                        e->in_kernel = true;
                }
        }
        return 0;
}

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's, for "not supported by this map": not in libc */
#endif

#define BPF_SET_TRIES 1000 /* reads of a set being rewritten before it is skipped */

/*
 * Adds the count of every edge in a cache way to its total. A set is taken
 * between two equal even sequence values (the BPF program makes it odd while
 * it moves a count to the hash); called after the hash was read, so a count
 * on the move is seen in the way, or in neither. Return: 1 if a set had to be
 * skipped, 0, -ENOMEM.
 */
static int bpf_read_edge_cache(WakeSource *s) {
        size_t n_sets = (size_t)s->cache_sets * s->n_cpus;
        int skipped = 0;

        __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the hash read before the ways */
        for (size_t i = 0; i < n_sets; i++) {
                const struct wake_edge_set *set = &s->cache[i];
                struct wake_edge_way ways[2];
                bool ok = false;
                for (unsigned t = 0; t < BPF_SET_TRIES && !ok; t++) {
                        uint32_t seq = __atomic_load_n(&set->seq, __ATOMIC_ACQUIRE);
                        for (int w = 0; w < 2; w++)
                                ways[w] = (struct wake_edge_way){
                                        .waker_task = __atomic_load_n(&set->way[w].waker_task,
                                                                      __ATOMIC_RELAXED),
                                        .wakee_task = __atomic_load_n(&set->way[w].wakee_task,
                                                                      __ATOMIC_RELAXED),
                                        .count = __atomic_load_n(&set->way[w].count,
                                                                 __ATOMIC_RELAXED),
                                };
                        __atomic_thread_fence(__ATOMIC_ACQUIRE);
                        ok = !(seq & 1) && __atomic_load_n(&set->seq, __ATOMIC_RELAXED) == seq;
                }
                if (!ok) {
                        skipped = 1;
                        continue;
                }
                for (int w = 0; w < 2; w++) {
                        if (!ways[w].waker_task || !ways[w].count)
                                continue;
                        struct wake_edge_key k = { .waker_task = ways[w].waker_task,
                                                   .wakee_task = ways[w].wakee_task };
                        EdgeSeen *e = edge_seen_get(s, &k);
                        if (!e)
                                return -ENOMEM;
                        e->total += ways[w].count;
                        e->in_cache = e->in_kernel = true;
                }
        }
        return skipped;
}

/*
 * Puts delta wakeups of edge k into the batch, for whoever lives at the two
 * addresses now: after a task exited and its task_struct was reused, at worst
 * the old task's last wakeups. *skipped counts those of tasks that exited
 * before the read, and placed's own.
 */
static int bpf_attribute(WakeSource *s, U64Map *task_slot, WakeBatch *b,
                         const struct wake_edge_key *k, uint64_t delta, uint64_t *skipped) {
        const struct wake_task_info *ends[2] = {
                bpf_task_info(s, k->waker_task),
                bpf_task_info(s, k->wakee_task),
        };
        delta <<= s->skel->rodata->sample_shift;
        if (!ends[0] || !ends[1] ||
            (s->opts.ignore_tgid && (pid_t)ends[0]->tgid == s->opts.ignore_tgid)) {
                *skipped += delta;
                return 0;
        }
        return bpf_take_edge(s, task_slot, b, ends, delta);
}

/*
 * Deletes edges that did not grow for BPF_IDLE_READS reads and sit in no
 * cache way, here and in the kernel's hash. An edge still in a way keeps its
 * EdgeSeen, or the way's count would be taken as new when read again. The
 * hash entry is deleted with the lookup that returns its last counts, so
 * wakeups that moved into it from a way since the read are not lost. The
 * index is rebuilt, as removing one key could break the probe chain of a
 * colliding one.
 */
static int bpf_prune_edges(WakeSource *s, U64Map *task_slot, WakeBatch *b, uint64_t *skipped) {
        int fd = bpf_map__fd(s->skel->maps.edges), r;
        uint64_t vals[s->n_cpus];
        size_t kept = 0;
        bool pruned = false;
        for (size_t i = 0; i < s->n_edge_seen; i++) {
                EdgeSeen *e = &s->edge_seen[i];
                if (e->read_no + BPF_IDLE_READS > s->n_reads ||
                    (e->seen_no == s->n_reads && e->in_cache)) {
                        s->edge_seen[kept++] = *e;
                        continue;
                }
                pruned = true;
                if (!e->in_kernel)
                        continue; /* only ever in the logs */
                r = bpf_map_lookup_and_delete_elem(fd, &e->key, vals);
                if (r == -EINVAL || r == -ENOTSUPP || r == -EOPNOTSUPP) {
                        (void)bpf_map_delete_elem(fd, &e->key); /* before Linux 5.14 */
                        continue;
                }
                if (r < 0)
                        continue; /* -ENOENT: only ever in a way */
                uint64_t total = 0;
                for (unsigned c = 0; c < s->n_cpus; c++)
                        total += vals[c];
                if (total > e->count) {
                        r = bpf_attribute(s, task_slot, b, &e->key, total - e->count, skipped);
                        if (r < 0)
                                return r;
                }
        }
        s->n_edge_seen = kept;
        if (!pruned)
                return 0;
        u64map_clear(s->edge_seen_map);
        for (size_t i = 0; i < kept; i++) {
                uint64_t h;
                uint32_t j;
                (void)edge_seen_find(s, &s->edge_seen[i].key, &h, &j);
                if (u64map_put(s->edge_seen_map, h, (uint32_t)i) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/*
 * Puts the growth of each edge since the previous read into the batch, then
 * prunes idle edges (not after a read that skipped a set: unknown ways).
 */
static int bpf_take_edges(WakeSource *s, WakeBatch *b, bool prune) {
        _cleanup_(u64map_freep) U64Map *task_slot = NULL;
        uint64_t skipped = 0; /* wakeups on edges not attributed */
        int r = 0;

        if (u64map_new(&task_slot) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_edge_seen && r >= 0; i++) {
                EdgeSeen *e = &s->edge_seen[i];
                if (e->seen_no != s->n_reads)
                        continue;
                uint64_t growth = e->logged + (e->total > e->count ? e->total - e->count : 0);
                if (growth == 0)
                        continue;
                r = bpf_attribute(s, task_slot, b, &e->key, growth, &skipped);
                e->count = MAX(e->count, e->total);
                e->read_no = s->n_reads;
        }
        if (r >= 0 && prune)
                r = bpf_prune_edges(s, task_slot, b, &skipped);
        b->n_skipped += skipped;
        return r;
}

static int bpf_source_read(WakeSource *s, WakeBatch *b) {
        int r, partial;

        s->n_reads++;
        r = bpf_read_tasks(s);
        if (r < 0)
                return r;
        r = bpf_read_log(s);
        if (r < 0)
                return r;
        r = bpf_read_edge_hash(s);
        if (r < 0)
                return r;
        partial = bpf_read_edge_cache(s);
        if (partial < 0)
                return partial;
        r = bpf_read_counters(s, b); /* sets n_skipped: first */
        if (r < 0)
                return r;
        return bpf_take_edges(s, b, !partial);
}

/* ---- perf ----------------------------------------------------------------- */

#define PERF_RING_PAGES    128 /* data pages per CPU: 512 KiB, ~9000 samples */
#define TRACE_FLAG_HARDIRQ 0x08
#define TRACE_FLAG_SOFTIRQ 0x10
#define TRACE_FLAG_NMI     0x40

/* Reads the tracepoint id and the offsets of pid, comm and common_flags. */
static int perf_read_format(WakeSource *s, const char *tracefs, uint64_t *ret_id) {
        _cleanup_free_ char *path = NULL;
        char line[512];
        unsigned found = 0;

        if (asprintf(&path, "%s/events/sched/sched_waking/id", tracefs) < 0)
                return -ENOMEM;
        FILE *f = fopen(path, "re");
        if (!f)
                return negative_errno();
        int ok = fscanf(f, "%" SCNu64, ret_id) == 1;
        fclose(f);
        if (!ok)
                return -EINVAL;

        free(path);
        if (asprintf(&path, "%s/events/sched/sched_waking/format", tracefs) < 0)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return negative_errno();
        while (fgets(line, sizeof(line), f)) {
                char *field = strstr(line, "field:"), *semi, *name, *off = strstr(line, "offset:");
                if (!field || !off || !(semi = strchr(field, ';')))
                        continue;
                *semi = 0;
                name = strrchr(field, ' ');
                name = name ? name + 1 : field + 6;
                char *bracket = strchr(name, '[');
                if (bracket)
                        *bracket = 0;
                unsigned offset = (unsigned)strtoul(off + 7, NULL, 10);
                if (strcmp(name, "pid") == 0)
                        s->pid_offset = offset, found |= 1;
                else if (strcmp(name, "comm") == 0)
                        s->comm_offset = offset, found |= 2;
                else if (strcmp(name, "common_flags") == 0)
                        s->flags_offset = offset, found |= 4;
        }
        fclose(f);
        return found == 7 ? 0 : -EPROTO;
}

static int perf_source_open(WakeSource *s) {
        const char *candidates[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
        uint64_t id = 0;
        int r = -ENOENT;

        if (s->opts.tracefs)
                r = perf_read_format(s, s->opts.tracefs, &id);
        else
                for (size_t i = 0; i < ELEMENTSOF(candidates) && r < 0; i++)
                        r = perf_read_format(s, candidates[i], &id);
        if (r < 0)
                return r;

        s->period = MAX(s->opts.sample_period, 1u);
        long n = sysconf(_SC_NPROCESSORS_CONF);
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        s->rings = calloc((size_t)MAX(n, 1L), sizeof(PerfRing));
        if (!s->rings)
                return -ENOMEM;
        for (long cpu = 0; cpu < n; cpu++) {
                struct perf_event_attr attr = {
                        .type = PERF_TYPE_TRACEPOINT,
                        .size = sizeof(attr),
                        .config = id,
                        .sample_period = s->period,
                        .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
                        .use_clockid = 1,
                        .clockid = CLOCK_MONOTONIC,
                        .wakeup_events = 1u << 30, /* read on the tick; no wakeups */
                };
                int fd = (int)syscall(SYS_perf_event_open, &attr, -1, (int)cpu, -1,
                                      PERF_FLAG_FD_CLOEXEC);
                if (fd < 0) {
                        if (errno == ENODEV)
                                continue; /* offline CPU */
                        return negative_errno();
                }
                size_t size = page * (PERF_RING_PAGES + 1);
                void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                if (base == MAP_FAILED) {
                        r = negative_errno();
                        close(fd);
                        return r;
                }
                s->rings[s->n_rings++] =
                        (PerfRing){ .fd = fd, .base = base, .data_size = page * PERF_RING_PAGES };
        }
        return s->n_rings > 0 ? 0 : -ENODEV;
}

static void ring_copy(const PerfRing *ring, uint64_t pos, void *dst, size_t n) {
        const char *data = (const char *)ring->base + (size_t)sysconf(_SC_PAGESIZE);
        size_t off = pos % ring->data_size, first = MIN(n, ring->data_size - off);
        memcpy(dst, data + off, first);
        memcpy((char *)dst + first, data, n - first);
}

static int perf_take_sample(WakeSource *s, WakeBatch *b, const char *rec, size_t size) {
        struct {
                uint32_t pid, tid;
                uint64_t time;
                uint32_t raw_size;
        } __attribute__((packed)) h;
        if (size < sizeof(struct perf_event_header) + sizeof(h))
                return 0;
        memcpy(&h, rec + sizeof(struct perf_event_header), sizeof(h));
        const char *raw = rec + sizeof(struct perf_event_header) + sizeof(h);
        if (sizeof(struct perf_event_header) + sizeof(h) + h.raw_size > size ||
            h.raw_size < s->pid_offset + 4 || h.raw_size < s->comm_offset + WAKE_COMM_LEN)
                return 0;

        int32_t wakee;
        char comm[WAKE_COMM_LEN];
        memcpy(&wakee, raw + s->pid_offset, sizeof(wakee));
        memcpy(comm, raw + s->comm_offset, sizeof(comm));
        comm[WAKE_COMM_LEN - 1] = 0;
        uint8_t flags = (uint8_t)raw[s->flags_offset];
        if ((flags & (TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ | TRACE_FLAG_NMI)) || h.tid == 0 ||
            (pid_t)h.tid == wakee || (s->opts.ignore_tgid && (pid_t)h.pid == s->opts.ignore_tgid)) {
                b->n_skipped += s->period;
                return 0;
        }
        return agg_event(&s->agg, b, h.time, (pid_t)h.tid, (pid_t)h.pid, NULL, wakee, 0, comm,
                         s->period);
}

static int perf_drain_ring(WakeSource *s, PerfRing *ring, WakeBatch *b) {
        struct perf_event_mmap_page *meta = ring->base;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        char rec[1024];
        int r = 0;

        while (tail < head && r >= 0) {
                struct perf_event_header hdr;
                ring_copy(ring, tail, &hdr, sizeof(hdr));
                if (hdr.size < sizeof(hdr))
                        break;
                if (hdr.size <= sizeof(rec)) {
                        ring_copy(ring, tail, rec, hdr.size);
                        if (hdr.type == PERF_RECORD_SAMPLE)
                                r = perf_take_sample(s, b, rec, hdr.size);
                        else if (hdr.type == PERF_RECORD_LOST && hdr.size >= sizeof(hdr) + 16) {
                                uint64_t lost;
                                memcpy(&lost, rec + sizeof(hdr) + 8, sizeof(lost));
                                b->n_lost += lost * s->period;
                        }
                }
                tail += hdr.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
        return r;
}

/* ---- replay --------------------------------------------------------------- */

/* Parses s->line; Return: 1 an event, 0 a blank or comment line, -EINVAL. */
static int replay_parse(WakeSource *s, uint64_t *ts, pid_t *waker, pid_t *waker_tgid,
                        char *waker_comm, pid_t *wakee, pid_t *wakee_tgid, char *wakee_comm) {
        char *p = s->line + strspn(s->line, " \t");
        if (*p == '#' || *p == '\n' || *p == 0)
                return 0;
        wakee_comm[0] = 0;
        int n = sscanf(p, "%" SCNu64 " %d %d %15s %d %d %15s", ts, waker, waker_tgid, waker_comm,
                       wakee, wakee_tgid, wakee_comm);
        if (n < 6 || *waker <= 0 || *wakee <= 0)
                return -EINVAL;
        return 1;
}

static int replay_source_read(WakeSource *s, uint64_t now_ns, WakeBatch *b) {
        for (;;) {
                char waker_comm[WAKE_COMM_LEN], wakee_comm[WAKE_COMM_LEN];
                pid_t waker, waker_tgid, wakee, wakee_tgid;
                uint64_t ts;
                if (!s->have_line) {
                        if (getline(&s->line, &s->line_size, s->replay) < 0)
                                return feof(s->replay) ? 0 : -EIO;
                        s->line_no++;
                        s->have_line = true;
                }
                int r = replay_parse(s, &ts, &waker, &waker_tgid, waker_comm, &wakee, &wakee_tgid,
                                     wakee_comm);
                if (r < 0)
                        return r;
                if (r > 0 && ts > now_ns)
                        return 0; /* a later tick's */
                s->have_line = false;
                if (r == 0)
                        continue;
                r = agg_event(&s->agg, b, ts, waker, waker_tgid, waker_comm, wakee, wakee_tgid,
                              wakee_comm, 1);
                if (r < 0)
                        return r;
        }
}

/* ---- the interface ------------------------------------------------------ */

static int source_open_kind(WakeSourceKind kind, const WakeSourceOptions *opts, WakeSource **ret) {
        WakeSource *s = calloc(1, sizeof(*s));
        int r;
        if (!s)
                return -ENOMEM;
        s->kind = kind;
        s->opts = *opts;
        r = agg_init(&s->agg);
        if (r >= 0) {
                switch (kind) {
                case WAKE_SOURCE_BPF:
                        r = bpf_source_open(s);
                        break;
                case WAKE_SOURCE_PERF:
                        r = perf_source_open(s);
                        break;
                case WAKE_SOURCE_REPLAY:
                        s->replay = opts->replay_path ? fopen(opts->replay_path, "re") : NULL;
                        r = s->replay ? 0 : opts->replay_path ? negative_errno() : -EINVAL;
                        break;
                default:
                        r = -EOPNOTSUPP;
                }
        }
        if (r < 0) {
                wake_source_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* How much of the wakeups the source sees, for the reason: "" when all. */
static void sampling_note(const WakeSource *s, char *buf, size_t size) {
        unsigned long every = s->skel      ? 1UL << s->skel->rodata->sample_shift
                              : s->n_rings ? (unsigned long)s->period
                                           : 1;
        if (every > 1)
                snprintf(buf, size, ", sampling 1 in %lu wakeups (counts scaled by %lu)", every,
                         every);
        else
                buf[0] = 0;
}

int wake_source_open(WakeSourceKind kind, const WakeSourceOptions *opts, WakeSource **ret,
                     char **ret_reason) {
        WakeSourceOptions none = {};
        WakeSource *s = NULL;
        char *reason = NULL, note[96];
        int r;

        if (!opts)
                opts = &none;
        if (kind != WAKE_SOURCE_AUTO) {
                r = source_open_kind(kind, opts, &s);
                if (r < 0)
                        return r;
                sampling_note(s, note, sizeof(note));
                if (ret_reason &&
                    asprintf(&reason, "%s sampler requested%s", wake_source_name(s), note) < 0)
                        reason = NULL;
        } else {
                int rb = source_open_kind(WAKE_SOURCE_BPF, opts, &s);
                if (rb >= 0) {
                        sampling_note(s, note, sizeof(note));
                        if (ret_reason && asprintf(&reason, "BPF sampler loaded%s", note) < 0)
                                reason = NULL;
                } else {
                        r = source_open_kind(WAKE_SOURCE_PERF, opts, &s);
                        if (r < 0)
                                return r;
                        sampling_note(s, note, sizeof(note));
                        if (ret_reason &&
                            asprintf(&reason, "BPF sampler failed to load (%s), using perf%s",
                                     strerror(-rb), note) < 0)
                                reason = NULL;
                }
        }
        *ret = s;
        if (ret_reason)
                *ret_reason = reason;
        return 0;
}

WakeSource *wake_source_free(WakeSource *s) {
        if (!s)
                return NULL;
        if (s->ctl)
                munmap(s->ctl, s->ctl_size);
        if (s->log)
                munmap((void *)s->log, s->log_size);
        if (s->cache)
                munmap((void *)s->cache, s->cache_size);
        free(s->log_memo);
        wake_bpf__destroy(s->skel);
        size_t size = (size_t)sysconf(_SC_PAGESIZE) * (PERF_RING_PAGES + 1);
        for (unsigned i = 0; i < s->n_rings; i++) {
                munmap(s->rings[i].base, size);
                close(s->rings[i].fd);
        }
        free(s->rings);
        if (s->replay)
                fclose(s->replay);
        free(s->line);
        agg_done(&s->agg);
        free(s->edge_seen);
        u64map_free(s->edge_seen_map);
        free(s->infos);
        u64map_free(s->info_by_task);
        free(s);
        return NULL;
}

const char *wake_source_name(const WakeSource *s) {
        switch (s->kind) {
        case WAKE_SOURCE_BPF:
                return "bpf";
        case WAKE_SOURCE_PERF:
                return "perf";
        case WAKE_SOURCE_REPLAY:
                return "replay";
        default:
                return "none";
        }
}

int wake_source_fd(const WakeSource *s) {
        return -1;
}

int wake_source_read(WakeSource *s, uint64_t now_ns, WakeBatch *ret) {
        int r = 0;
        wake_batch_reset(ret);
        ret->now_ns = now_ns;
        switch (s->kind) {
        case WAKE_SOURCE_BPF:
                return bpf_source_read(s, ret);
        case WAKE_SOURCE_PERF:
                for (unsigned i = 0; i < s->n_rings && r >= 0; i++)
                        r = perf_drain_ring(s, &s->rings[i], ret);
                break;
        case WAKE_SOURCE_REPLAY:
                r = replay_source_read(s, now_ns, ret);
                break;
        default:
                return -EOPNOTSUPP;
        }
        int k = agg_finish(&s->agg, ret, now_ns);
        return r < 0 ? r : k;
}

int wake_source_get_cost(const WakeSource *s, WakeSourceCost *ret) {
        struct bpf_prog_info info = {};
        uint32_t len = sizeof(info);
        if (!s->skel)
                return 0;
        int r = bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.wake_sched_waking), &info,
                                       &len);
        if (r < 0)
                return r;
        *ret = (WakeSourceCost){ .run_time_ns = info.run_time_ns, .run_cnt = info.run_cnt };
        return 1;
}
