/* SPDX-License-Identifier: MIT */
/*
 * Wake sources (see wake-source.h): the interface over the three kinds, the
 * perf tracepoint fallback, the replay source, and the userspace aggregation
 * perf and replay share. The BPF source is wake-source-bpf.c.
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

#include "macro.h"
#include "task-facts.h"
#include "wake-graph.h"
#include "wake-source-bpf.h"
#include "wake-source.h"

void wake_batch_reset(WakeBatch *b) {
        b->n_tasks = b->n_edges = 0;
        b->n_events = b->n_skipped = b->n_lost = b->n_softirq = 0;
        b->now_ns = 0;
}

void wake_batch_done(WakeBatch *b) {
        free(b->tasks);
        free(b->edges);
        *b = (WakeBatch){};
}

int wake_array_grow(void **array, size_t *alloc, size_t need, size_t size) {
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
        int r = wake_array_grow((void **)&b->tasks, &b->n_tasks_alloc, b->n_tasks + 1, sizeof(*t));
        if (r < 0)
                return r;
        b->tasks[b->n_tasks++] = *t;
        return 0;
}

int wake_batch_add_edge(WakeBatch *b, pid_t waker, pid_t wakee, uint64_t count) {
        int r = wake_array_grow((void **)&b->edges, &b->n_edges_alloc, b->n_edges + 1,
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
                if (wake_array_grow((void **)&a->tasks, &a->n_tasks_alloc, a->n_tasks + 1,
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

typedef struct PerfRing {
        int fd;
        void *base; /* mmap: one metadata page + data pages */
        size_t data_size;
} PerfRing;

struct WakeSource {
        WakeSourceKind kind;
        WakeSourceOptions opts;
        WakeAgg agg;

        BpfWake *bpf; /* bpf */

        /* perf */
        PerfRing *rings;
        unsigned n_rings;
        unsigned pid_offset, comm_offset, flags_offset;
        uint64_t period;
        U64Map *kthread_memo; /* tid -> 1 + is a kernel thread, for softirq wakeups; per read */

        /* replay */
        FILE *replay;
        char *line;
        size_t line_size;
        bool have_line; /* line holds the next, not yet consumed event */
        uint64_t line_ts_ns;
        unsigned line_no;
};

/* ---- perf ----------------------------------------------------------------- */

#define PERF_RING_PAGES 128 /* data pages per CPU: 512 KiB, ~9000 samples */
/* On small machines a CPU carries more of the wakeups: four times that. */
#define PERF_RING_PAGES_SMALL 512
#define PERF_SMALL_CPUS       16
#define TRACE_FLAG_HARDIRQ    0x08
#define TRACE_FLAG_SOFTIRQ    0x10 /* serving a softirq (not merely bottom halves off) */
#define TRACE_FLAG_NMI        0x40
#define PF_KTHREAD            0x00200000U

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

        if (u64map_new(&s->kthread_memo) < 0)
                return -ENOMEM;
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
                size_t pages = n <= PERF_SMALL_CPUS ? PERF_RING_PAGES_SMALL : PERF_RING_PAGES;
                size_t size = page * (pages + 1);
                void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                if (base == MAP_FAILED) {
                        r = negative_errno();
                        close(fd);
                        return r;
                }
                s->rings[s->n_rings++] =
                        (PerfRing){ .fd = fd, .base = base, .data_size = page * pages };
        }
        return s->n_rings > 0 ? 0 : -ENODEV;
}

static void ring_copy(const PerfRing *ring, uint64_t pos, void *dst, size_t n) {
        const char *data = (const char *)ring->base + (size_t)sysconf(_SC_PAGESIZE);
        size_t off = pos % ring->data_size, first = MIN(n, ring->data_size - off);
        memcpy(dst, data + off, first);
        memcpy((char *)dst + first, data, n - first);
}

/*
 * 1 if tid is a kernel thread (PF_KTHREAD in procfs_root/TID/stat), 0 if not
 * or gone. Asked only of the ends of softirq wakeups, once per tid and read:
 * the memo is cleared at each read, for reused tids.
 */
static int perf_is_kthread(WakeSource *s, pid_t tid) {
        TaskFacts t;
        uint32_t v;
        int kthread = 0;

        if (u64map_get(s->kthread_memo, (uint64_t)tid, &v))
                return (int)v - 1;
        if (task_facts_read_stat(s->opts.procfs_root, 0, tid, &t) == 0)
                kthread = (t.flags & PF_KTHREAD) != 0;
        if (u64map_put(s->kthread_memo, (uint64_t)tid, (uint32_t)kthread + 1) < 0)
                return -ENOMEM;
        return kthread;
}

/*
 * Whom a sample's wakeup is counted for: in task context and in a softirq
 * (TRACE_FLAG_SOFTIRQ: serving one, on the task's stack or the IRQ stack),
 * the task current on the CPU, as record_wakee() counts it, unless it is the
 * idle task. Hard IRQs and NMIs are nobody's. In a softirq, as the BPF
 * source does, not when either end is a kernel thread (unless keep_kthreads):
 * ksoftirqd serves softirqs, and a softirq that ran while a user task was
 * current wakes kernel threads for the kernel's own work (RCU, workqueues);
 * in task context the perf source has always kept them (it cannot tell them
 * without a procfs read per waker). Unlike the BPF source, it cannot tell
 * the timer softirqs from the others (the sample does not say which vector
 * runs): their rare wakeups of user tasks count for current too.
 * Return: 1 counted for tid (*ret_softirq: in a softirq), 0 skipped, -ENOMEM.
 */
static int perf_sample_waker(WakeSource *s, uint8_t flags, pid_t tid, pid_t tgid, pid_t wakee,
                             bool *ret_softirq) {
        if ((flags & (TRACE_FLAG_HARDIRQ | TRACE_FLAG_NMI)) || tid == 0 || tid == wakee ||
            (s->opts.ignore_tgid && tgid == s->opts.ignore_tgid))
                return 0;
        *ret_softirq = flags & TRACE_FLAG_SOFTIRQ;
        if (!*ret_softirq || s->opts.keep_kthreads)
                return 1;
        int r = perf_is_kthread(s, tid);
        if (r == 0)
                r = perf_is_kthread(s, wakee);
        return r < 0 ? r : !r;
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
        bool softirq = false;
        int r = perf_sample_waker(s, (uint8_t)raw[s->flags_offset], (pid_t)h.tid, (pid_t)h.pid,
                                  wakee, &softirq);
        if (r <= 0) {
                b->n_skipped += s->period;
                return r;
        }
        if (softirq)
                b->n_softirq += s->period;
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
                        r = bpf_wake_open(opts, &s->bpf);
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

/* What the BPF source reads without the kernel's flip state, for the reason: "" with it. */
static const char *flips_note(const WakeSourceOptions *opts) {
        return opts->kernel_features & KERNEL_FEATURE_WAKEE_FLIPS
                       ? ""
                       : ", without the kernel's wakee_flips (groups judged by the wake graph's "
                         "own degree)";
}

/* How much of the wakeups the source sees, for the reason: "" when all. */
static void sampling_note(const WakeSource *s, char *buf, size_t size) {
        unsigned long every = s->bpf       ? bpf_wake_sample_every(s->bpf)
                              : s->n_rings ? (unsigned long)s->period
                                           : 1;
        if (every > 1)
                snprintf(buf, size, ", sampling 1 in %lu wakeups (counts scaled by %lu)", every,
                         every);
        else
                buf[0] = 0;
}

/* The names of the features in bits, comma-separated, into buf. */
static void feature_names(unsigned bits, char *buf, size_t size) {
        size_t n = 0;
        buf[0] = 0;
        for (unsigned b = 0; b < 31; b++) {
                const char *name = kernel_feature_name(1U << b);
                if ((bits & (1U << b)) && name && n < size)
                        n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", name);
        }
}

/* Opens the BPF source if the kernel has what it needs; Return: as source_open_kind(). */
static int bpf_open_if_supported(const WakeSourceOptions *opts, WakeSource **ret, char *why,
                                 size_t size) {
        unsigned missing = KERNEL_FEATURES_BPF_SAMPLER & ~opts->kernel_features;
        if (missing) {
                char names[96];
                feature_names(missing, names, sizeof(names));
                snprintf(why, size, "the kernel lacks %s", names);
                return -EOPNOTSUPP;
        }
        int r = source_open_kind(WAKE_SOURCE_BPF, opts, ret);
        if (r < 0)
                snprintf(why, size, "%s", strerror(-r));
        return r;
}

int wake_source_open(WakeSourceKind kind, const WakeSourceOptions *opts, WakeSource **ret,
                     char **ret_reason) {
        WakeSourceOptions o = {};
        WakeSource *s = NULL;
        char *reason = NULL, note[96], why[128] = "";
        int r;

        if (opts)
                o = *opts;
        if (!(o.kernel_features & KERNEL_FEATURES_PROBED)) {
                r = kernel_features_probe(NULL, NULL, &o.kernel_features);
                if (r < 0)
                        return r;
        }
        opts = &o;
        if (kind == WAKE_SOURCE_BPF) {
                r = bpf_open_if_supported(opts, &s, why, sizeof(why));
                if (r < 0)
                        return r;
                sampling_note(s, note, sizeof(note));
                if (ret_reason &&
                    asprintf(&reason, "bpf sampler requested%s%s", note, flips_note(opts)) < 0)
                        reason = NULL;
        } else if (kind != WAKE_SOURCE_AUTO) {
                r = source_open_kind(kind, opts, &s);
                if (r < 0)
                        return r;
                sampling_note(s, note, sizeof(note));
                if (ret_reason &&
                    asprintf(&reason, "%s sampler requested%s", wake_source_name(s), note) < 0)
                        reason = NULL;
        } else {
                int rb = bpf_open_if_supported(opts, &s, why, sizeof(why));
                if (rb >= 0) {
                        sampling_note(s, note, sizeof(note));
                        if (ret_reason &&
                            asprintf(&reason, "BPF sampler loaded%s%s", note, flips_note(opts)) < 0)
                                reason = NULL;
                } else {
                        r = source_open_kind(WAKE_SOURCE_PERF, opts, &s);
                        if (r < 0) {
                                if (ret_reason &&
                                    asprintf(ret_reason,
                                             "BPF sampler not used (%s), and the perf sampler "
                                             "failed too (%s)",
                                             why,
                                             r == -ENOENT ? "no sched_waking tracepoint: "
                                                            "is tracefs mounted?"
                                                          : strerror(-r)) < 0)
                                        *ret_reason = NULL;
                                return r;
                        }
                        sampling_note(s, note, sizeof(note));
                        if (ret_reason &&
                            asprintf(&reason, "BPF sampler not used (%s), using perf%s", why,
                                     note) < 0)
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
        bpf_wake_free(s->bpf);
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        for (unsigned i = 0; i < s->n_rings; i++) {
                munmap(s->rings[i].base, s->rings[i].data_size + page);
                close(s->rings[i].fd);
        }
        free(s->rings);
        u64map_free(s->kthread_memo);
        if (s->replay)
                fclose(s->replay);
        free(s->line);
        agg_done(&s->agg);
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
                return bpf_wake_read(s->bpf, ret);
        case WAKE_SOURCE_PERF:
                u64map_clear(s->kthread_memo);
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
        return s->bpf ? bpf_wake_get_cost(s->bpf, ret) : 0;
}
