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
#include "util.h"
#include "wake-source-ops.h"

typedef struct PerfRing {
        int fd;
        void *base; /* mmap: one metadata page + data pages */
        size_t data_size;
} PerfRing;

typedef struct PerfSource {
        WakeSourceOptions opts;
        WakeAgg *agg;
        PerfRing *rings;
        unsigned n_rings;
        unsigned pid_offset, comm_offset, flags_offset; /* in the tracepoint's raw record */
        uint64_t period;
        U64Map *kthread_memo; /* tid -> 1 + is a kernel thread, for softirq wakeups; per read */
} PerfSource;

#define PERF_RING_PAGES 128 /* data pages per CPU: 512 KiB, ~9000 samples */
/* On small machines a CPU carries more of the wakeups: four times that. */
#define PERF_RING_PAGES_SMALL 512
#define PERF_SMALL_CPUS       16
#define TRACE_FLAG_HARDIRQ    0x08
#define TRACE_FLAG_SOFTIRQ    0x10 /* serving a softirq (not merely bottom halves off) */
#define TRACE_FLAG_NMI        0x40
#define PF_KTHREAD            0x00200000U

/* Reads the tracepoint id and the offsets of pid, comm and common_flags. */
static int perf_read_format(PerfSource *s, const char *tracefs, uint64_t *ret_id) {
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

static int perf_open_rings(PerfSource *s) {
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

static int perf_take_sample(PerfSource *s, WakeBatch *b, const char *rec, size_t size) {
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
        return wake_agg_event(s->agg, b, h.time, (pid_t)h.tid, (pid_t)h.pid, NULL, wakee, 0, comm,
                              s->period);
}

static int perf_drain_ring(PerfSource *s, PerfRing *ring, WakeBatch *b) {
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

static void perf_close(void *impl) {
        PerfSource *s = impl;
        if (!s)
                return;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        for (unsigned i = 0; i < s->n_rings; i++) {
                munmap(s->rings[i].base, s->rings[i].data_size + page);
                close(s->rings[i].fd);
        }
        free(s->rings);
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

static int perf_read(void *impl, uint64_t now_ns, WakeBatch *b) {
        PerfSource *s = impl;
        int r = 0;
        u64map_clear(s->kthread_memo);
        for (unsigned i = 0; i < s->n_rings && r >= 0; i++)
                r = perf_drain_ring(s, &s->rings[i], b);
        int k = wake_agg_finish(s->agg, b, now_ns);
        return r < 0 ? r : k;
}

static unsigned perf_sample_every(const void *impl) {
        const PerfSource *s = impl;
        return (unsigned)s->period;
}

const WakeSourceOps wake_source_perf_ops = {
        .name = "perf",
        .open = perf_open,
        .close = perf_close,
        .read = perf_read,
        .sample_every = perf_sample_every,
};
