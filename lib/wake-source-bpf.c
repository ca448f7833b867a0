/* SPDX-License-Identifier: MIT */
/*
 * The BPF wake source (wake_source_bpf_ops, see wake-source-ops.h), the
 * default one: loads wake.bpf.c (one object per source), maps its
 * wake logs and edge caches, and turns what they hold each read into a
 * WakeBatch: exact per-edge growth (EdgeSeen), task records from the task
 * iterator, skipped, lost and softirq counts. wake.bpf.c says why the maps
 * are shaped as they are; this file is their reader.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "macro.h"
#include "util.h"
#include "wake-source-ops.h"
#include "wake.skel.h"

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

/*
 * What the reads took of a CPU's run so far (see wake_cpu_ctl): the run
 * whose record will be record id, count wakeups of it. The rest comes with
 * the record.
 */
typedef struct RunTaken {
        uint64_t id;
        uint64_t count;
        uint32_t seen_skipped, seen_softirq; /* the CPU's counters at the previous read */
        bool valid;
} RunTaken;

/* A task the caller watches, and its task_struct's address once a read reported it. */
typedef struct WatchedTask {
        TaskId id;
        uint64_t task; /* 0: not reported yet (it is, once it is an edge's end) */
} WatchedTask;

typedef struct BpfWake {
        WakeSourceOptions opts;
        struct wake_bpf *skel;
        uint64_t seen_lost;  /* the counter's sum at the previous read */
        RunTaken *taken;     /* owned: per CPU, what the reads took of its run */
        EdgeSeen *edge_seen; /* owned: kernel edges and their counts at the last read */
        size_t n_edge_seen, n_edge_seen_alloc;
        U64Map *edge_seen_map; /* edge_key_hash() -> edge_seen index */
        uint64_t n_reads;
        struct wake_cpu_ctl *ctl;              /* mmap of the cpu_ctl map; we write log_tail */
        const struct wake_log_rec *log;        /* mmap of the wake_log map, read-only */
        const struct wake_edge_set *cache;     /* mmap of the edge_cache map, read-only */
        size_t ctl_size, log_size, cache_size; /* bytes mapped */
        uint32_t log_records;                  /* per CPU */
        uint32_t cache_sets;                   /* per CPU */
        uint32_t *log_memo; /* owned: LOG_MEMO_SIZE EdgeSeen indexes + 1 by log_memo_slot() */
        unsigned n_cpus;
        uint64_t ns_per_tick;       /* start_boottime ns -> clock ticks (TaskId.start_time) */
        uint64_t ns_per_jiffy;      /* the kernel's tick; 0 = unknown */
        char *infos;                /* owned: the task iterator's latest output, records of */
        size_t info_size;           /* bytes: a wake_task_info and its CPU mask (wake.h) */
        size_t n_infos, infos_size; /* records; bytes allocated */
        U64Map *info_by_task;       /* task_struct address -> infos index */
        U64Map *info_by_tid;        /* tid -> infos index */
        U64Map *owner_before;       /* task_struct address -> tid, at the previous read */
        uint64_t *wanted; /* mmap of the task_wanted bitmap: the tasks the iterator reports */
        size_t wanted_size;
        struct ring_buffer *notes_ring; /* the notes ring (wake_note), NULL without */
        struct wake_note *notes;        /* owned: consumed, not yet taken by the caller */
        size_t n_notes;
        uint64_t notes_dropped; /* more than BPF_NOTES_MAX between two takes */
        WatchedTask *watch;     /* owned: the tasks the caller watches (wake_source_watch()) */
        size_t n_watch, n_watch_alloc;
        U64Map *watch_index; /* tid -> watch index */
} BpfWake;

static uint64_t clock_tick_ns(void) {
        long hz = sysconf(_SC_CLK_TCK);
        return NSEC_PER_SEC / (uint64_t)(hz > 0 ? hz : 100);
}

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
#define BPF_NOTES_MAX     256           /* notes kept between two takes by the caller */
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
static int bpf_size_maps(BpfWake *s, struct wake_bpf *skel) {
        int r = libbpf_num_possible_cpus();
        s->n_cpus = r > 0 ? (unsigned)r : 1;
        s->log_records =
                per_cpu_elements(s->n_cpus, sizeof(struct wake_log_rec), WAKE_LOG_BUDGET,
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
static int bpf_map_arrays(BpfWake *s) {
        void *p;
        int r = bpf_map_array(s->skel->maps.cpu_ctl, sizeof(struct wake_cpu_ctl), s->n_cpus,
                              PROT_READ | PROT_WRITE, &p, &s->ctl_size);
        if (r < 0)
                return r;
        s->ctl = p;
        r = bpf_map_array(s->skel->maps.wake_log, sizeof(struct wake_log_rec),
                          (size_t)s->log_records * s->n_cpus, PROT_READ, &p, &s->log_size);
        if (r < 0)
                return r;
        s->log = p;
        r = bpf_map_array(s->skel->maps.edge_cache, sizeof(struct wake_edge_set),
                          (size_t)s->cache_sets * s->n_cpus, PROT_READ, &p, &s->cache_size);
        if (r < 0)
                return r;
        s->cache = p;
        r = bpf_map_array(s->skel->maps.task_wanted, sizeof(uint64_t), WAKE_WANTED_BITS / 64,
                          PROT_READ | PROT_WRITE, &p, &s->wanted_size);
        if (r < 0)
                return r;
        s->wanted = p;
        return 0;
}

/*
 * Attaches the programs one by one, in an order that never leaves a context
 * marker set. The skeleton's own attach goes in declaration order, entry
 * before exit: a handler that ran between the two would set its CPU's
 * marker and never clear it, and every wakeup on that CPU would be taken
 * for the handler's (skipped) until the next handler of its kind, which on
 * an idle tickless CPU may be seconds away. So: every exit, then every
 * entry, then sched_waking (which reads the markers), then the iterator.
 * Return: 0, -EINVAL if the object has a program the list does not name,
 * or the attach's negative errno.
 */
static int bpf_attach_ordered(struct wake_bpf *skel) {
        const struct {
                struct bpf_program *prog;
                struct bpf_link **link;
        } order[] = {
                { skel->progs.wake_irq_exit, &skel->links.wake_irq_exit },
                { skel->progs.wake_hrtimer_exit, &skel->links.wake_hrtimer_exit },
                { skel->progs.wake_timer_exit, &skel->links.wake_timer_exit },
                { skel->progs.wake_irq_entry, &skel->links.wake_irq_entry },
                { skel->progs.wake_hrtimer_entry, &skel->links.wake_hrtimer_entry },
                { skel->progs.wake_timer_entry, &skel->links.wake_timer_entry },
                { skel->progs.wake_sched_waking, &skel->links.wake_sched_waking },
                { skel->progs.wake_task_iter, &skel->links.wake_task_iter },
        };
        struct bpf_program *prog;
        size_t n = 0;

        bpf_object__for_each_program(prog, skel->obj) {
                n++;
        }
        if (n != ELEMENTSOF(order))
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                struct bpf_link *link = bpf_program__attach(order[i].prog);
                if (!link)
                        return negative_errno();
                *order[i].link = link;
        }
        return 0;
}

/*
 * Rest: the sched_waking program detached, the rest attached as they were
 * (the markers' programs are cheap: 0.989x of sysbench threads with all of
 * them and no sched_waking program, docs/benchmarks.md). Attached again, it
 * goes last, as bpf_attach_ordered() attaches it.
 */
static int bpf_source_rest(void *impl, bool rest) {
        BpfWake *s = impl;
        struct bpf_link **link = &s->skel->links.wake_sched_waking;
        if (rest) {
                (void)bpf_link__destroy(*link); /* closing its fd detaches it, whatever it says */
                *link = NULL;
                return 0;
        }
        if (*link)
                return 0;
        struct bpf_link *l = bpf_program__attach(s->skel->progs.wake_sched_waking);
        if (!l)
                return negative_errno();
        *link = l;
        return 0;
}

/* ring_buffer__consume()'s callback: keeps the note for wake_source_read_notes(). */
static int bpf_on_note(void *ctx, void *data, size_t size) {
        BpfWake *s = ctx;
        if (size < sizeof(struct wake_note))
                return 0;
        if (s->n_notes >= BPF_NOTES_MAX) {
                s->notes_dropped++;
                return 0;
        }
        memcpy(&s->notes[s->n_notes++], data, sizeof(struct wake_note));
        return 0;
}

static int bpf_wake_load(BpfWake *s) {
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
        /* Without the fields (kernel-features.h) the iterator leaves the flips out. */
        skel->rodata->read_flips = !!(s->opts.kernel_features & KERNEL_FEATURE_WAKEE_FLIPS);
        r = bpf_size_maps(s, skel);
        if (r < 0) {
                wake_bpf__destroy(skel);
                return r;
        }
        skel->rodata->mask_words = MIN(WAKE_MASK_WORDS(s->n_cpus), WAKE_MASK_WORDS_MAX);
        s->info_size = sizeof(struct wake_task_info) + skel->rodata->mask_words * sizeof(uint64_t);
        r = wake_bpf__load(skel);
        if (r == 0)
                r = bpf_attach_ordered(skel);
        if (r < 0) {
                wake_bpf__destroy(skel);
                return r < 0 ? r : -EIO;
        }
        s->skel = skel;
        r = bpf_map_arrays(s);
        if (r < 0)
                return r;
        s->notes = calloc(BPF_NOTES_MAX, sizeof(*s->notes));
        if (!s->notes)
                return -ENOMEM;
        s->notes_ring = ring_buffer__new(bpf_map__fd(skel->maps.notes), bpf_on_note, s, NULL);
        if (!s->notes_ring)
                return negative_errno();
        s->log_memo = calloc(LOG_MEMO_SIZE, sizeof(*s->log_memo));
        s->taken = calloc(s->n_cpus, sizeof(*s->taken));
        if (!s->log_memo || !s->taken || u64map_new(&s->edge_seen_map) < 0 ||
            u64map_new(&s->info_by_task) < 0 || u64map_new(&s->info_by_tid) < 0 ||
            u64map_new(&s->owner_before) < 0 || u64map_new(&s->watch_index) < 0)
                return -ENOMEM;
        s->ns_per_tick = clock_tick_ns();
        s->ns_per_jiffy = kernel_tick_ns();
        return 0;
}

/* The skipped, lost and softirq counts since the previous read (the 32-bit ones wrap). */
static int bpf_read_counters(BpfWake *s, WakeBatch *b) {
        uint64_t skipped = 0, lost = 0, softirq = 0;
        unsigned shift = s->skel->rodata->sample_shift;
        for (unsigned i = 0; i < s->n_cpus; i++) {
                RunTaken *t = &s->taken[i];
                uint32_t sk = __atomic_load_n(&s->ctl[i].skipped, __ATOMIC_RELAXED);
                uint32_t so = __atomic_load_n(&s->ctl[i].softirq_taken, __ATOMIC_RELAXED);
                skipped += (uint32_t)(sk - t->seen_skipped);
                softirq += (uint32_t)(so - t->seen_softirq);
                t->seen_skipped = sk;
                t->seen_softirq = so;
                lost += __atomic_load_n(&s->ctl[i].lost, __ATOMIC_RELAXED);
        }
        b->n_skipped = skipped << shift;
        b->n_lost = (lost - s->seen_lost) << shift;
        b->n_softirq = softirq << shift;
        s->seen_lost = lost;
        return 0;
}

/* Record i of the task iterator's latest output. */
static const struct wake_task_info *bpf_info_at(const BpfWake *s, size_t i) {
        return (const struct wake_task_info *)(s->infos + i * s->info_size);
}

/* Runs the task iterator: every task's identity, kernel flip state and facts, by address and TID.
 */
static int bpf_read_tasks(BpfWake *s) {
        _cleanup_close_ int fd = bpf_iter_create(bpf_link__fd(s->skel->links.wake_task_iter));
        size_t used = 0;
        if (fd < 0)
                return negative_errno();
        for (;;) {
                if (s->infos_size - used < 64 * s->info_size) {
                        size_t n = MAX(s->infos_size * 2, 1024 * s->info_size);
                        void *p = realloc(s->infos, n);
                        if (!p)
                                return -ENOMEM;
                        s->infos = p;
                        s->infos_size = n;
                }
                ssize_t k = read(fd, s->infos + used, s->infos_size - used);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        break;
                used += (size_t)k;
        }
        s->n_infos = used / s->info_size;
        u64map_clear(s->info_by_task);
        u64map_clear(s->info_by_tid);
        for (size_t i = 0; i < s->n_infos; i++) {
                const struct wake_task_info *info = bpf_info_at(s, i);
                if (u64map_put(s->info_by_task, info->task, (uint32_t)i) < 0 ||
                    u64map_put(s->info_by_tid, info->tid, (uint32_t)i) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The iterator's record of the task at this address, or NULL (exited since). */
static const struct wake_task_info *bpf_task_info(const BpfWake *s, uint64_t task) {
        uint32_t i;
        return u64map_get(s->info_by_task, task, &i) ? bpf_info_at(s, i) : NULL;
}

/*
 * The kernel's flip state in wake_flips terms: wakee_flip_decay_ts moved from
 * jiffies to CLOCK_MONOTONIC by the (jiffies, ktime) pair the iterator took.
 * Without the kernel's tick length, no halving is assumed pending.
 */
static void bpf_flips_from_kernel(const BpfWake *s, const struct wake_task_info *in,
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
static int bpf_take_edge(BpfWake *s, U64Map *task_slot, WakeBatch *b,
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
                                .has_flips = s->skel->rodata->read_flips,
                        };
                        memcpy(rec.comm, info->comm, WAKE_COMM_LEN);
                        rec.comm[WAKE_COMM_LEN - 1] = 0;
                        if (rec.has_flips)
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
static bool edge_seen_find(const BpfWake *s, const struct wake_edge_key *k, uint64_t *ret_h,
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
static EdgeSeen *edge_seen_get(BpfWake *s, const struct wake_edge_key *k) {
        uint64_t h;
        uint32_t i;
        if (!edge_seen_find(s, k, &h, &i)) {
                if (array_grow((void **)&s->edge_seen, &s->n_edge_seen_alloc, s->n_edge_seen + 1,
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

/* Adds n wakeups of edge k to this read's logged counts; the memo saves most lookups. */
static int bpf_log_add(BpfWake *s, uint64_t waker, uint64_t wakee, uint64_t n) {
        struct wake_edge_key k = { .waker_task = waker, .wakee_task = wakee };
        uint32_t *memo = &s->log_memo[log_memo_slot(&k)];
        EdgeSeen *e = *memo ? &s->edge_seen[*memo - 1] : NULL;
        if (n == 0)
                return 0;
        if (!e || !edge_key_equal(&e->key, &k)) {
                e = edge_seen_get(s, &k);
                if (!e)
                        return -ENOMEM;
                *memo = (uint32_t)(e - s->edge_seen) + 1;
        }
        e->logged += n;
        return 0;
}

#define BPF_RUN_TRIES 1000 /* reads of a changing run before the next read takes it */

/*
 * A CPU's log_head, log_start and run, taken together: between two equal
 * even values of log_head (odd while the program writes a record and
 * rewrites the run; the program writes a new run's count after its edge).
 * Returns false if the program kept rewriting them.
 */
static bool bpf_read_run(const struct wake_cpu_ctl *ctl, uint64_t *head, uint64_t *start,
                         struct wake_log_rec *run) {
        for (unsigned t = 0; t < BPF_RUN_TRIES; t++) {
                uint64_t h1 = __atomic_load_n(&ctl->log_head, __ATOMIC_ACQUIRE);
                *start = __atomic_load_n(&ctl->log_start, __ATOMIC_RELAXED);
                run->count = __atomic_load_n(&ctl->run_count, __ATOMIC_ACQUIRE);
                run->waker_task = __atomic_load_n(&ctl->run_waker, __ATOMIC_RELAXED);
                run->wakee_task = __atomic_load_n(&ctl->run_wakee, __ATOMIC_RELAXED);
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                uint64_t h2 = __atomic_load_n(&ctl->log_head, __ATOMIC_RELAXED);
                if (h1 == h2 && !(h1 & 1)) {
                        *head = h1 >> 1;
                        return true;
                }
        }
        return false;
}

/*
 * Counts each CPU's wakeups since the previous read: the records of its wake
 * log, record i in slot i - log_start, then hands their space back (the
 * program writes a record before it moves log_head, moves log_start only to
 * log_tail, and keeps records below log_start + log_records), and its run.
 * What a read takes of a run is taken off the run's record when it comes
 * (see RunTaken), so each wakeup is counted once. A CPU whose program kept
 * rewriting its run is left for the next read.
 */
static int bpf_read_log(BpfWake *s) {
        uint32_t mask = s->log_records - 1;
        memset(s->log_memo, 0, LOG_MEMO_SIZE * sizeof(*s->log_memo));
        for (unsigned c = 0; c < s->n_cpus; c++) {
                struct wake_cpu_ctl *ctl = &s->ctl[c];
                const struct wake_log_rec *log = &s->log[(size_t)c * s->log_records];
                RunTaken *t = &s->taken[c];
                struct wake_log_rec run;
                uint64_t head, start;
                int r;
                if (!bpf_read_run(ctl, &head, &start, &run))
                        continue;
                uint64_t tail = MAX(ctl->log_tail, start); /* below start: cannot be */
                if (head - tail > s->log_records)          /* cannot be: the program waits for us */
                        tail = head - s->log_records;
                for (uint64_t i = tail; i < head; i++) {
                        const struct wake_log_rec *rec = &log[(i - start) & mask];
                        uint64_t n = __atomic_load_n(&rec->count, __ATOMIC_RELAXED);
                        if (t->valid && t->id == i) {
                                n = n > t->count ? n - t->count : 0;
                                t->valid = false;
                        }
                        r = bpf_log_add(s, rec->waker_task, rec->wakee_task, n);
                        if (r < 0)
                                return r;
                }
                __atomic_store_n(&ctl->log_tail, head, __ATOMIC_RELEASE);
                if (run.count == 0) {
                        t->valid = false; /* no run: any earlier one is in a record */
                        continue;
                }
                uint64_t before = t->valid && t->id == head ? t->count : 0;
                *t = (RunTaken){ .id = head,
                                 .count = run.count,
                                 .seen_skipped = t->seen_skipped,
                                 .seen_softirq = t->seen_softirq,
                                 .valid = true };
                r = bpf_log_add(s, run.waker_task, run.wakee_task,
                                run.count > before ? run.count - before : 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Adds every edge's count in the per-CPU hash to its total. */
static int bpf_read_edge_hash(BpfWake *s) {
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
static int bpf_read_edge_cache(BpfWake *s) {
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

/* Whether the task at address task is not the one the previous read found there. */
static bool bpf_owner_changed(const BpfWake *s, uint64_t task, const struct wake_task_info *now) {
        uint32_t tid;
        return u64map_get(s->owner_before, task, &tid) && tid != now->tid;
}

/*
 * Puts delta wakeups of edge k into the batch, for whoever lives at the two
 * addresses now. *skipped counts those of tasks that exited before the read,
 * placed's own, and those of an address whose task changed since the
 * previous read: a task that exited and one that got its task_struct, whose
 * wakeups no count tells apart. Given to the new task they made it a ghost
 * partner: a redis client's last wakeups, attributed to a thread started
 * after it ended at the same address, made the server's group with the next
 * client a fanout, left to the kernel for 3 s (1 session in about 100).
 */
static int bpf_attribute(BpfWake *s, U64Map *task_slot, WakeBatch *b, const struct wake_edge_key *k,
                         uint64_t delta, uint64_t *skipped) {
        const struct wake_task_info *ends[2] = {
                bpf_task_info(s, k->waker_task),
                bpf_task_info(s, k->wakee_task),
        };
        delta <<= s->skel->rodata->sample_shift;
        if (!ends[0] || !ends[1] ||
            (s->opts.ignore_tgid && (pid_t)ends[0]->tgid == s->opts.ignore_tgid) ||
            bpf_owner_changed(s, k->waker_task, ends[0]) ||
            bpf_owner_changed(s, k->wakee_task, ends[1])) {
                *skipped += delta;
                return 0;
        }
        return bpf_take_edge(s, task_slot, b, ends, delta);
}

/* Remembers who lives at each address this read reported, for the next read. */
static int bpf_remember_owners(BpfWake *s) {
        u64map_clear(s->owner_before);
        for (size_t i = 0; i < s->n_infos; i++) {
                const struct wake_task_info *info = bpf_info_at(s, i);
                if (u64map_put(s->owner_before, info->task, info->tid) < 0)
                        return -ENOMEM;
        }
        return 0;
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
static int bpf_prune_edges(BpfWake *s, U64Map *task_slot, WakeBatch *b, uint64_t *skipped) {
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
static int bpf_take_edges(BpfWake *s, WakeBatch *b, bool prune) {
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

static void bpf_want(BpfWake *s, uint64_t task) {
        uint32_t bit = wake_wanted_bit(task);
        s->wanted[bit / 64] |= UINT64_C(1) << (bit % 64);
}

/*
 * Sets what the iterator reports this read: the ends of every edge tracked
 * (EdgeSeen: grown within BPF_IDLE_READS reads, or seen now), and the
 * watched tasks whose address a read reported (an edge's end, once).
 */
static void bpf_want_tasks(BpfWake *s) {
        memset(s->wanted, 0, WAKE_WANTED_BITS / 8);
        for (size_t i = 0; i < s->n_edge_seen; i++) {
                bpf_want(s, s->edge_seen[i].key.waker_task);
                bpf_want(s, s->edge_seen[i].key.wakee_task);
        }
        for (size_t i = 0; i < s->n_watch; i++)
                if (s->watch[i].task)
                        bpf_want(s, s->watch[i].task);
}

/* The address of the task id names, from the last read; 0 when it did not report it. */
static uint64_t bpf_task_address(const BpfWake *s, const TaskId *id) {
        uint32_t k;
        if (!u64map_get(s->info_by_tid, (uint64_t)id->tid, &k))
                return 0;
        const struct wake_task_info *info = bpf_info_at(s, k);
        return !id->start_time || info->start_ns / s->ns_per_tick == id->start_time ? info->task
                                                                                    : 0;
}

/*
 * One read: the wake logs, the edge hash and the cache first (what the
 * edges' ends are), then the task iterator, for those ends and the watched
 * tasks alone, then each edge's growth for the tasks at its ends. A task
 * that exits between the two is not attributed (skipped), nor is an edge
 * whose end changed task since the previous read (see bpf_attribute()).
 */
static int bpf_wake_read(BpfWake *s, WakeBatch *b) {
        int r, partial;

        s->n_reads++;
        r = bpf_read_log(s);
        if (r < 0)
                return r;
        r = bpf_read_edge_hash(s);
        if (r < 0)
                return r;
        partial = bpf_read_edge_cache(s);
        if (partial < 0)
                return partial;
        bpf_want_tasks(s);
        r = bpf_read_tasks(s);
        if (r < 0)
                return r;
        r = bpf_read_counters(s, b); /* sets n_skipped: first */
        if (r < 0)
                return r;
        r = bpf_take_edges(s, b, !partial);
        if (r < 0)
                return r;
        return bpf_remember_owners(s);
}

static BpfWake *bpf_wake_free(BpfWake *s);

static int bpf_wake_open(const WakeSourceOptions *opts, BpfWake **ret) {
        BpfWake *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->opts = *opts;
        int r = bpf_wake_load(s);
        if (r < 0) {
                bpf_wake_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static BpfWake *bpf_wake_free(BpfWake *s) {
        if (!s)
                return NULL;
        if (s->ctl)
                munmap(s->ctl, s->ctl_size);
        if (s->log)
                munmap((void *)s->log, s->log_size);
        if (s->cache)
                munmap((void *)s->cache, s->cache_size);
        if (s->wanted)
                munmap(s->wanted, s->wanted_size);
        ring_buffer__free(s->notes_ring);
        free(s->notes);
        free(s->log_memo);
        free(s->taken);
        wake_bpf__destroy(s->skel);
        free(s->edge_seen);
        u64map_free(s->edge_seen_map);
        free(s->infos);
        u64map_free(s->info_by_task);
        u64map_free(s->info_by_tid);
        u64map_free(s->owner_before);
        free(s->watch);
        u64map_free(s->watch_index);
        free(s);
        return NULL;
}

static unsigned bpf_wake_sample_every(const BpfWake *s) {
        return 1U << s->skel->rodata->sample_shift;
}

/*
 * The cost of a wakeup: the run time of every program on the hot path (the
 * wakeup's own and the hard-IRQ, hrtimer and timer markers), over the wakeups.
 */
static int bpf_wake_get_cost(const BpfWake *s, WakeSourceCost *ret) {
        WakeSourceCost cost = {};
        struct bpf_program *prog;
        bpf_object__for_each_program(prog, s->skel->obj) {
                struct bpf_prog_info info = {};
                uint32_t len = sizeof(info);
                if (prog == s->skel->progs.wake_task_iter)
                        continue; /* once per read, not per wakeup */
                int r = bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
                if (r < 0)
                        return r;
                cost.run_time_ns += info.run_time_ns;
                if (prog == s->skel->progs.wake_sched_waking)
                        cost.run_cnt = info.run_cnt;
        }
        *ret = cost;
        return 1;
}

/* ---- the ops table ------------------------------------------------------ */

static int bpf_source_open(const WakeSourceOptions *opts, void **ret) {
        BpfWake *w = NULL;
        int r = bpf_wake_open(opts, &w);
        if (r < 0)
                return r;
        *ret = w;
        return 0;
}

static void bpf_source_close(void *impl) {
        bpf_wake_free(impl);
}

static int bpf_source_read(void *impl, uint64_t now_ns, WakeBatch *b) {
        return bpf_wake_read(impl, b);
}

static unsigned bpf_source_sample_every(const void *impl) {
        return bpf_wake_sample_every(impl);
}

static int bpf_source_get_cost(const void *impl, WakeSourceCost *ret) {
        return bpf_wake_get_cost(impl, ret);
}

/*
 * Replaces the watched tasks. A task's address is kept from one call to the
 * next (a task_struct does not move), else taken from the last read.
 */
static int bpf_source_watch(void *impl, const TaskId *ids, size_t n) {
        BpfWake *s = impl;
        _cleanup_free_ WatchedTask *next = calloc(MAX(n, (size_t)1), sizeof(*next));
        _cleanup_(u64map_freep) U64Map *index = NULL;
        if (!next || u64map_new(&index) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                uint32_t k;
                next[i].id = ids[i];
                if (u64map_get(s->watch_index, (uint64_t)ids[i].tid, &k) &&
                    s->watch[k].id.start_time == ids[i].start_time && s->watch[k].task)
                        next[i].task = s->watch[k].task;
                else
                        next[i].task = bpf_task_address(s, &ids[i]);
                if (u64map_put(index, (uint64_t)ids[i].tid, (uint32_t)i) < 0)
                        return -ENOMEM;
        }
        free(s->watch);
        u64map_free(s->watch_index);
        s->watch = TAKE_PTR(next);
        s->watch_index = TAKE_PTR(index);
        s->n_watch = s->n_watch_alloc = n;
        return 0;
}

static int bpf_source_notes_fd(const void *impl) {
        const BpfWake *s = impl;
        return s->notes_ring ? ring_buffer__epoll_fd(s->notes_ring) : -1;
}

static int bpf_source_read_notes(void *impl, WakeNote *ret, size_t max) {
        BpfWake *s = impl;
        int r = ring_buffer__consume(s->notes_ring);
        if (r < 0)
                return r;
        size_t n = MIN(s->n_notes, max);
        for (size_t i = 0; i < n; i++)
                ret[i] = (WakeNote){
                        .waker = (pid_t)s->notes[i].waker_tid,
                        .wakee = (pid_t)s->notes[i].wakee_tid,
                        .ts_ns = s->notes[i].ts_ns,
                };
        s->n_notes = 0;
        return (int)n;
}

static int bpf_source_task(const void *impl, pid_t tid, WakeTaskView *ret) {
        const BpfWake *s = impl;
        uint32_t i;
        if (!u64map_get(s->info_by_tid, (uint64_t)tid, &i))
                return 0;
        const struct wake_task_info *info = bpf_info_at(s, i);
        *ret = (WakeTaskView){
                .id = { .tid = (pid_t)info->tid, .start_time = info->start_ns / s->ns_per_tick },
                .leader_start_time = info->leader_start_ns / s->ns_per_tick,
                .info = info,
                .cpus_mask = (const uint64_t *)(info + 1),
                .mask_words = s->skel->rodata->mask_words,
        };
        return 1;
}

const WakeSourceOps wake_source_bpf_ops = {
        .name = "bpf",
        .needs_features = KERNEL_FEATURES_BPF_SAMPLER,
        .reads_kernel_flips = true,
        .open = bpf_source_open,
        .close = bpf_source_close,
        .read = bpf_source_read,
        .sample_every = bpf_source_sample_every,
        .get_cost = bpf_source_get_cost,
        .task = bpf_source_task,
        .watch = bpf_source_watch,
        .notes_fd = bpf_source_notes_fd,
        .read_notes = bpf_source_read_notes,
        .rest = bpf_source_rest,
};
