/* SPDX-License-Identifier: MIT */
/*
 * The perf wake source (wake_source_perf_ops, see wake-source-ops.h): the
 * fallback when BPF cannot be used. perf_event_open() on the
 * sched:sched_waking tracepoint, one ring buffer per CPU, read on the tick.
 *
 * Why a fallback at all: BPF needs BTF, CAP_BPF/CAP_PERFMON and a kernel
 * whose verifier takes the program; perf tracepoints need only tracefs and
 * CAP_PERFMON. The source sees a sample of the wakeups (period N) and scales
 * the counts by N; its flips are computed from the samples by the shared
 * aggregation (WakeAgg), so they are exact only at period 1.
 *
 * Inside a PID namespace (placed not in the initial one, pid_ns_is_initial())
 * the sample's waker TID and TGID are already the namespace's: perf writes
 * them in the PID namespace of the event's opener, 0 for a task outside it
 * (then skipped as nobody's, like the idle task). The wakee is not: it is
 * sched_waking's own `pid` field, the kernel's global PID. So a second event
 * per CPU, on sched:sched_switch filtered to a prev that blocks, feeds a
 * WakePidMap (wake-pid-map.c says why nothing cheaper exists): its sample
 * TID is prev in the namespace, its prev_pid field is prev's global PID.
 * Each read drains the switch rings before the wakeups, and only the wakeups
 * written before the switch rings were drained, so every block that came
 * before a wakeup is known when the wakeup is taken. A wakee the map does not
 * know (outside the namespace, a kernel thread, or woken before it ever
 * blocked since the source opened; or, at period N, whose blocks were not
 * sampled yet) is counted in n_skipped and not attributed. The cost is a
 * second sample per blocking switch, paid only in a namespace (or when
 * WakeSourceOptions.perf_map_pids forces it, as the host tests do).
 * Measured on the 2-CPU VM (perf bench sched pipe -l 500000 pinned to one
 * CPU, read every 200 ms, 4 alternations, medians): 6.6 s with no source,
 * 7.1 s with this one, 7.4 s with it and the map, about 0.5 us more a round
 * trip; the same wakeups were attributed (502.5k) and skipped (about 300)
 * with the map as without.
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

#include "fileio.h"
#include "macro.h"
#include "task-facts.h"
#include "util.h"
#include "wake-pid-map.h"
#include "wake-source-ops.h"

typedef struct PerfRing {
        int fd;
        void *base; /* mmap: one metadata page + data pages */
        size_t data_size;
        uint64_t head; /* data_head taken at the start of the read */
} PerfRing;

typedef struct PerfSource {
        WakeSourceOptions opts;
        WakeAgg *agg;
        PerfRing *rings;        /* sched_waking, one per online CPU */
        PerfRing *switch_rings; /* sched_switch, only with pid_map */
        unsigned n_rings, n_switch_rings;
        unsigned pid_offset, comm_offset, flags_offset; /* in the tracepoint's raw record */
        unsigned prev_pid_offset, prev_comm_offset;     /* in sched_switch's */
        uint64_t period;
        U64Map *kthread_memo; /* tid -> 1 + is a kernel thread, for softirq wakeups; per read */
        WakePidMap *pid_map;  /* global PID -> placed's namespace TID; NULL: the same */
        unsigned reads;       /* since the pid map was last pruned */
} PerfSource;

#define PERF_RING_PAGES 128 /* data pages per CPU: 512 KiB, ~9000 samples */
/* On small machines a CPU carries more of the wakeups: four times that. */
#define PERF_RING_PAGES_SMALL 512
#define PERF_SMALL_CPUS       16
#define TRACE_FLAG_HARDIRQ    0x08
#define TRACE_FLAG_SOFTIRQ    0x10 /* serving a softirq (not merely bottom halves off) */
#define TRACE_FLAG_NMI        0x40
#define PF_KTHREAD            0x00200000U
/*
 * sched_switch's prev_state is a TASK_REPORT bit (S 1, D 2, T 4, ... I 128);
 * a preempted or yielding prev reads 0 or TASK_REPORT_MAX (256): it will run
 * again without a wakeup, so it is not needed in the pid map.
 */
#define PERF_SWITCH_FILTER       "prev_state & 255"
#define PERF_PID_MAP_PRUNE_READS 16 /* forget exited tasks every so many reads */
/* A sched tracepoint's format file: some 20 fields of 80 bytes and a print fmt line of 1-2 KiB;
 * 64 KiB in all and in one line is ten times sched_switch's. */
#define PERF_FORMAT_MAX ((size_t)64 << 10)

/*
 * Reads the id of tracepoint sched/event under tracefs and the offsets of the
 * n fields names[] in its raw record into offsets[]. Return: 0, -EPROTO when
 * a field is missing, or negative errno.
 */
static int perf_read_format(const char *tracefs, const char *event, const char *const *names,
                            unsigned *offsets, size_t n, uint64_t *ret_id) {
        _cleanup_free_ char *path = NULL;
        char text[32];
        unsigned found = 0;

        if (asprintf(&path, "%s/events/sched/%s/id", tracefs, event) < 0)
                return -ENOMEM;
        int r = read_small_file_line(path, text, sizeof(text));
        if (r < 0)
                return r;
        if (sscanf(text, "%" SCNu64, ret_id) != 1)
                return -EINVAL;

        free(path);
        if (asprintf(&path, "%s/events/sched/%s/format", tracefs, event) < 0)
                return -ENOMEM;
        _cleanup_(fileio_lines_close) FileioLines f;
        r = fileio_lines_open(&f, path, PERF_FORMAT_MAX, PERF_FORMAT_MAX);
        if (r < 0)
                return r;
        char *line;
        while ((r = fileio_lines_next(&f, &line, NULL)) > 0) {
                char *field = strstr(line, "field:"), *semi, *name, *off = strstr(line, "offset:");
                if (!field || !off || !(semi = strchr(field, ';')))
                        continue;
                *semi = 0;
                name = strrchr(field, ' ');
                name = name ? name + 1 : field + 6;
                char *bracket = strchr(name, '[');
                if (bracket)
                        *bracket = 0;
                for (size_t i = 0; i < n; i++)
                        if (strcmp(name, names[i]) == 0) {
                                offsets[i] = (unsigned)strtoul(off + 7, NULL, 10);
                                found |= 1U << i;
                        }
        }
        if (r < 0)
                return r;
        return found == (1U << n) - 1 ? 0 : -EPROTO;
}

/* sched_waking's id and the offsets of pid, comm and common_flags; the tracefs it found. */
static int perf_read_waking_format(PerfSource *s, const char **ret_tracefs, uint64_t *ret_id) {
        static const char *const candidates[] = { "/sys/kernel/tracing",
                                                  "/sys/kernel/debug/tracing" };
        static const char *const names[] = { "pid", "comm", "common_flags" };
        unsigned offsets[3];
        int r = -ENOENT;

        for (size_t i = 0; r < 0 && i < (s->opts.tracefs ? 1 : ELEMENTSOF(candidates)); i++) {
                *ret_tracefs = s->opts.tracefs ? s->opts.tracefs : candidates[i];
                r = perf_read_format(*ret_tracefs, "sched_waking", names, offsets, 3, ret_id);
        }
        if (r < 0)
                return r;
        s->pid_offset = offsets[0];
        s->comm_offset = offsets[1];
        s->flags_offset = offsets[2];
        return 0;
}

/*
 * Opens tracepoint id on cpu with sample_type and maps its ring. Return: 1
 * and *ret, 0 for an offline CPU, or negative errno.
 */
static int perf_open_ring(const PerfSource *s, uint64_t id, long cpu, uint64_t sample_type,
                          size_t pages, PerfRing *ret) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_TRACEPOINT,
                .size = sizeof(attr),
                .config = id,
                .sample_period = s->period,
                .sample_type = sample_type,
                .use_clockid = 1,
                .clockid = CLOCK_MONOTONIC,
                .wakeup_events = 1u << 30, /* read on the tick; no wakeups */
        };
        int fd = (int)syscall(SYS_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
                return errno == ENODEV ? 0 : negative_errno();
        size_t page = (size_t)sysconf(_SC_PAGESIZE), size = page * (pages + 1);
        void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        *ret = (PerfRing){ .fd = fd, .base = base, .data_size = page * pages };
        return 1;
}

/*
 * Whether to map wakees through sched_switch: as opts.perf_map_pids says, or
 * when placed is not in the initial PID namespace. Where procfs cannot say
 * (a fixture procfs_root), placed's PIDs are taken as the kernel's.
 */
static bool perf_wants_pid_map(const PerfSource *s) {
        if (s->opts.perf_map_pids != 0)
                return s->opts.perf_map_pids > 0;
        return pid_ns_is_initial(s->opts.procfs_root) == 0;
}

/* The sched_switch rings of the pid map, filtered to a prev that blocks. */
static int perf_open_switch_rings(PerfSource *s, const char *tracefs, long n, size_t pages) {
        static const char *const names[] = { "prev_pid", "prev_comm" };
        unsigned offsets[2];
        uint64_t id;

        int r = perf_read_format(tracefs, "sched_switch", names, offsets, 2, &id);
        if (r < 0)
                return r;
        s->prev_pid_offset = offsets[0];
        s->prev_comm_offset = offsets[1];
        r = wake_pid_map_new(&s->pid_map);
        if (r < 0)
                return r;
        s->switch_rings = calloc((size_t)MAX(n, 1L), sizeof(PerfRing));
        if (!s->switch_rings)
                return -ENOMEM;
        for (long cpu = 0; cpu < n; cpu++) {
                PerfRing *ring = &s->switch_rings[s->n_switch_rings];
                r = perf_open_ring(s, id, cpu, PERF_SAMPLE_TID | PERF_SAMPLE_RAW, pages, ring);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                s->n_switch_rings++;
                /* Without the filter (an old kernel refusing it) every switch is sampled. */
                (void)ioctl(ring->fd, PERF_EVENT_IOC_SET_FILTER, PERF_SWITCH_FILTER);
        }
        return 0;
}

static int perf_open_rings(PerfSource *s) {
        const char *tracefs = NULL;
        uint64_t id = 0;

        int r = perf_read_waking_format(s, &tracefs, &id);
        if (r < 0)
                return r;
        if (u64map_new(&s->kthread_memo) < 0)
                return -ENOMEM;
        s->period = MAX(s->opts.sample_period, 1u);
        long n = sysconf(_SC_NPROCESSORS_CONF);
        size_t pages = n <= PERF_SMALL_CPUS ? PERF_RING_PAGES_SMALL : PERF_RING_PAGES;
        s->rings = calloc((size_t)MAX(n, 1L), sizeof(PerfRing));
        if (!s->rings)
                return -ENOMEM;
        for (long cpu = 0; cpu < n; cpu++) {
                r = perf_open_ring(s, id, cpu, PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
                                   pages, &s->rings[s->n_rings]);
                if (r < 0)
                        return r;
                s->n_rings += (unsigned)r;
        }
        if (s->n_rings == 0)
                return -ENODEV;
        return perf_wants_pid_map(s) ? perf_open_switch_rings(s, tracefs, n, pages) : 0;
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
static int perf_is_kthread(PerfSource *s, pid_t tid) {
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
static int perf_sample_waker(PerfSource *s, uint8_t flags, pid_t tid, pid_t tgid, pid_t wakee,
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

/*
 * The wakee of a sample in placed's PID namespace: as the sample says, or
 * through the pid map. Return: its TID, or 0 when the map does not know it.
 */
static pid_t perf_sample_wakee(const PerfSource *s, int32_t global, const char *comm) {
        return s->pid_map ? wake_pid_map_lookup(s->pid_map, global, comm) : global;
}

/*
 * A task's PID and comm from a tracepoint's raw record of raw_size bytes, at
 * the offsets its format gives (sched_waking's pid and comm, sched_switch's
 * prev_pid and prev_comm). Return: false if the record is too short.
 */
static bool perf_raw_task(const char *raw, uint32_t raw_size, unsigned pid_offset,
                          unsigned comm_offset, int32_t *ret_pid, char ret_comm[WAKE_COMM_LEN]) {
        if (raw_size < pid_offset + sizeof(*ret_pid) || raw_size < comm_offset + WAKE_COMM_LEN)
                return false;
        memcpy(ret_pid, raw + pid_offset, sizeof(*ret_pid));
        memcpy(ret_comm, raw + comm_offset, WAKE_COMM_LEN);
        ret_comm[WAKE_COMM_LEN - 1] = 0;
        return true;
}

/*
 * A sample record of size bytes: its header, the fields its sample_type asks
 * for before the raw data (copied to ids, ids_size bytes), the raw data's
 * size, the raw data. Returns: the raw data, its size in *ret_raw_size, or
 * NULL when the record is too short for what it says it holds.
 */
static const char *perf_sample_raw(const char *rec, size_t size, void *ids, size_t ids_size,
                                   uint32_t *ret_raw_size) {
        const char *body = rec + sizeof(struct perf_event_header);
        uint32_t raw_size;
        if (size < sizeof(struct perf_event_header) + ids_size + sizeof(raw_size))
                return NULL;
        memcpy(ids, body, ids_size);
        memcpy(&raw_size, body + ids_size, sizeof(raw_size));
        if (sizeof(struct perf_event_header) + ids_size + sizeof(raw_size) + raw_size > size)
                return NULL;
        *ret_raw_size = raw_size;
        return body + ids_size + sizeof(raw_size);
}

static int perf_take_sample(PerfSource *s, WakeBatch *b, const char *rec, size_t size) {
        struct {
                uint32_t pid, tid;
                uint64_t time;
        } __attribute__((packed)) h;
        uint32_t raw_size;
        const char *raw = perf_sample_raw(rec, size, &h, sizeof(h), &raw_size);
        int32_t global;
        char comm[WAKE_COMM_LEN];
        if (!raw || !perf_raw_task(raw, raw_size, s->pid_offset, s->comm_offset, &global, comm))
                return 0;
        pid_t wakee = perf_sample_wakee(s, global, comm);
        bool softirq = false;
        int r = wakee > 0 ? perf_sample_waker(s, (uint8_t)raw[s->flags_offset], (pid_t)h.tid,
                                              (pid_t)h.pid, wakee, &softirq)
                          : 0;
        if (r <= 0) {
                b->n_skipped += s->period;
                return r;
        }
        if (softirq)
                b->n_softirq += s->period;
        return wake_agg_event(s->agg, b, h.time, (pid_t)h.tid, (pid_t)h.pid, NULL, wakee, 0, comm,
                              s->period);
}

/* A sched_switch sample: prev's TID in placed's namespace and its global PID, for the map. */
static int perf_take_switch(PerfSource *s, const char *rec, size_t size) {
        struct {
                uint32_t pid, tid;
        } __attribute__((packed)) h;
        uint32_t raw_size;
        const char *raw = perf_sample_raw(rec, size, &h, sizeof(h), &raw_size);
        int32_t global;
        char comm[WAKE_COMM_LEN];
        if (!raw ||
            !perf_raw_task(raw, raw_size, s->prev_pid_offset, s->prev_comm_offset, &global, comm))
                return 0;
        if ((int32_t)h.tid <= 0 || global <= 0)
                return 0; /* outside placed's namespace, or idle */
        return wake_pid_map_learn(s->pid_map, global, (pid_t)h.tid, comm);
}

/*
 * Takes ring's records up to ring->head (sched_switch ones when is_switch).
 * Return: 0, or negative errno.
 */
static int perf_drain_ring(PerfSource *s, PerfRing *ring, WakeBatch *b, bool is_switch) {
        struct perf_event_mmap_page *meta = ring->base;
        uint64_t tail = meta->data_tail;
        char rec[1024];
        int r = 0;

        while (tail < ring->head && r >= 0) {
                struct perf_event_header hdr;
                ring_copy(ring, tail, &hdr, sizeof(hdr));
                if (hdr.size < sizeof(hdr))
                        break;
                if (hdr.size <= sizeof(rec)) {
                        ring_copy(ring, tail, rec, hdr.size);
                        if (hdr.type == PERF_RECORD_SAMPLE)
                                r = is_switch ? perf_take_switch(s, rec, hdr.size)
                                              : perf_take_sample(s, b, rec, hdr.size);
                        else if (hdr.type == PERF_RECORD_LOST && hdr.size >= sizeof(hdr) + 16 &&
                                 !is_switch) {
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

static void ring_take_head(PerfRing *ring) {
        struct perf_event_mmap_page *meta = ring->base;
        ring->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
}

static void rings_close(PerfRing *rings, unsigned n) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        for (unsigned i = 0; i < n; i++) {
                munmap(rings[i].base, rings[i].data_size + page);
                close(rings[i].fd);
        }
        free(rings);
}

static void perf_close(void *impl) {
        PerfSource *s = impl;
        if (!s)
                return;
        rings_close(s->rings, s->n_rings);
        rings_close(s->switch_rings, s->n_switch_rings);
        wake_pid_map_free(s->pid_map);
        u64map_free(s->kthread_memo);
        wake_agg_free(s->agg);
        free(s);
}

static int perf_open(const WakeSourceOptions *opts, void **ret) {
        PerfSource *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->opts = *opts;
        int r = wake_agg_new(&s->agg);
        if (r >= 0)
                r = perf_open_rings(s);
        if (r < 0) {
                perf_close(s);
                return r;
        }
        *ret = s;
        return 0;
}

/*
 * The wakeups' heads first, then every block from the switch rings, then the
 * wakeups up to those heads: a wakee's block is known before its wakeup.
 */
static int perf_read(void *impl, uint64_t now_ns, WakeBatch *b) {
        PerfSource *s = impl;
        int r = 0;
        u64map_clear(s->kthread_memo);
        for (unsigned i = 0; i < s->n_rings; i++)
                ring_take_head(&s->rings[i]);
        for (unsigned i = 0; i < s->n_switch_rings && r >= 0; i++) {
                ring_take_head(&s->switch_rings[i]);
                r = perf_drain_ring(s, &s->switch_rings[i], b, true);
        }
        for (unsigned i = 0; i < s->n_rings && r >= 0; i++)
                r = perf_drain_ring(s, &s->rings[i], b, false);
        if (r >= 0 && s->pid_map && ++s->reads >= PERF_PID_MAP_PRUNE_READS) {
                s->reads = 0;
                int k = wake_pid_map_prune(s->pid_map, s->opts.procfs_root);
                r = k < 0 ? k : 0;
        }
        int k = wake_agg_finish(s->agg, b, now_ns);
        return r < 0 ? r : k;
}

static unsigned perf_sample_every(const void *impl) {
        const PerfSource *s = impl;
        return (unsigned)s->period;
}

static const char *perf_note(const void *impl) {
        const PerfSource *s = impl;
        return s->pid_map ? ", wakees mapped to the PID namespace's TIDs through sched_switch" : "";
}

const WakeSourceOps wake_source_perf_ops = {
        .name = "perf",
        .open = perf_open,
        .close = perf_close,
        .read = perf_read,
        .sample_every = perf_sample_every,
        .note = perf_note,
};
