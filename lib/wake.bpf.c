/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The BPF wake sampler. Two programs:
 *
 *  - wake_sched_waking on tp_btf/sched_waking (fired in the waker's context)
 *    counts the waker->wakee edge in a per-CPU hash that userspace reads once
 *    per tick; it is on the hot path of every wakeup in the system;
 *  - wake_task_iter, a task iterator userspace runs once per read, copies each
 *    task's identity and the kernel's own wakee_flips, wakee_flip_decay_ts and
 *    last_wakee out of task_struct.
 *
 * Why it is shaped like this ("dirt cheap" on the hot path):
 *  - no flip counting here: record_wakee() in kernel/sched/fair.c already
 *    keeps wakee_flips in task_struct at every wakeup, so the iterator reads
 *    it once per tick instead of the hot path recomputing it per wakeup. Read
 *    at sched_waking it would lag one wakeup: try_to_wake_up() fires
 *    trace_sched_waking() before select_task_rq(), whose
 *    select_task_rq_fair() calls record_wakee(); read by the iterator after
 *    the fact, it includes every wakeup up to the read. It is the kernel's
 *    value, with the kernel's blind spots: record_wakee() runs only when the
 *    wakee may run on more than one CPU and is not already queued;
 *  - no clock: nothing on the hot path needs a time (the iterator reports
 *    jiffies and CLOCK_MONOTONIC together, for the conversion);
 *  - the hot path reads only the first cache line of each task_struct
 *    (flags, stack), which try_to_wake_up() keeps hot anyway: the edge key is
 *    the two task_struct addresses, which the iterator maps to tasks. Edges
 *    of a task that exits before the read are not attributed (skipped);
 *  - the edge map is per-CPU: a lookup is lock-free, the count is a plain
 *    increment of this CPU's copy, no cache line moves between CPUs; the
 *    bucket lock is taken only when an edge is first seen, and edge counts
 *    only grow, so a busy edge is inserted once, not once per tick;
 *  - sample_shift > 0 counts 1 in 2^sample_shift calls on average, decided
 *    by a per-CPU countdown before any other work (a random number only per
 *    sampled call); userspace scales the counts back;
 *  - wakeups from interrupt context (hardirq, serving softirq, NMI), from the
 *    idle task and (by default) to or from kernel threads are counted as
 *    skipped, not attributed; placed's own (ignore_tgid) are dropped by
 *    userspace, which knows the waker's tgid from the iterator.
 *
 * No vmlinux.h: the few kernel types used are declared here and relocated
 * with CO-RE against the running kernel's BTF.
 */
typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef int pid_t;

enum {
        BPF_MAP_TYPE_PERCPU_HASH = 5,
        BPF_MAP_TYPE_PERCPU_ARRAY = 6,
};
#define BPF_NOEXIST 1

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "wake.h"

#define PF_IDLE    0x00000002
#define PF_KTHREAD 0x00200000
#define EEXIST     17

struct task_struct {
        unsigned int flags;
        pid_t pid;
        pid_t tgid;
        __u64 start_boottime;
        char comm[16];
        void *stack;
        unsigned int wakee_flips;
        unsigned long wakee_flip_decay_ts;
        struct task_struct *last_wakee;
} __attribute__((preserve_access_index));

struct seq_file;
struct bpf_iter_meta {
        struct seq_file *seq;
        __u64 session_id;
        __u64 seq_num;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
        struct bpf_iter_meta *meta;
        struct task_struct *task;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile __u32 sample_shift = 0; /* count 1 in 2^sample_shift calls */
const volatile __u8 skip_kthreads = 1;
const volatile __u64 thread_size = 16384; /* THREAD_SIZE: the task's kernel stack */

/* Set by the iterator, read by userspace after it: jiffies -> CLOCK_MONOTONIC. */
__u64 clock_jiffies;
__u64 clock_mono_ns;

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
        __uint(max_entries, WAKE_MAX_EDGES);
        __type(key, struct wake_edge_key);
        __type(value, __u64);
} edges SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct wake_counters);
} counters SEC(".maps");

/*
 * Interrupt context without preempt_count (__preempt_count is a per-CPU
 * variable the kernel only resolves with CONFIG_KALLSYMS_ALL): x86-64 runs
 * hardirqs, softirqs on irq exit or bh enable, and NMIs on their own stacks,
 * and this program's frame lives on whatever stack the tracepoint fired on.
 * So a frame outside current's task stack means interrupt context.
 * (Softirqs in ksoftirqd run on its task stack; kernel threads are skipped.)
 */
static __always_inline int on_irq_stack(struct task_struct *cur) {
        __u64 marker = 0;
        __u64 sp = (__u64)(unsigned long)&marker;
        __u64 base = (__u64)(unsigned long)cur->stack;
        barrier_var(sp);
        return sp < base || sp >= base + thread_size;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(wake_sched_waking, struct task_struct *p) {
        __u32 zero = 0;
        struct wake_counters *c = bpf_map_lookup_elem(&counters, &zero);
        if (!c)
                return 0;
        if (sample_shift) {
                /* 1 in 2^sample_shift on average, at random gaps of 1 to
                 * 2^(sample_shift+1) - 1 calls: a fixed stride would alias
                 * with lockstep wakeups (a pair alternating on one CPU). */
                if (c->countdown > 1) {
                        c->countdown--;
                        return 0;
                }
                c->countdown = bpf_get_prandom_u32() % ((2U << sample_shift) - 1) + 1;
        }
        c->sampled++;

        /* Only the first cache line of each task_struct (flags, stack), which
         * try_to_wake_up() and the scheduler keep hot anyway. */
        struct task_struct *cur = bpf_get_current_task_btf();
        unsigned int cur_flags = cur->flags;
        if (on_irq_stack(cur) || cur == p || (cur_flags & PF_IDLE) ||
            (skip_kthreads && ((cur_flags | p->flags) & PF_KTHREAD))) {
                c->skipped++;
                return 0;
        }

        struct wake_edge_key key = {
                .waker_task = (__u64)(unsigned long)cur,
                .wakee_task = (__u64)(unsigned long)p,
        };
        __u64 *n = bpf_map_lookup_elem(&edges, &key);
        if (n) {
                (*n)++;
                return 0;
        }
        __u64 one = 1;
        long r = bpf_map_update_elem(&edges, &key, &one, BPF_NOEXIST);
        if (r == -EEXIST && (n = bpf_map_lookup_elem(&edges, &key)))
                (*n)++; /* another CPU inserted it first */
        else if (r < 0)
                c->lost++;
        return 0;
}

SEC("iter/task")
int wake_task_iter(struct bpf_iter__task *ctx) {
        struct task_struct *t = ctx->task;
        if (!t)
                return 0;
        if (ctx->meta->seq_num == 0) {
                clock_jiffies = bpf_jiffies64();
                clock_mono_ns = bpf_ktime_get_ns();
        }
        if (skip_kthreads && (t->flags & PF_KTHREAD))
                return 0;

        struct wake_task_info r = {
                .task = (__u64)(unsigned long)t,
                .start_ns = t->start_boottime,
                .decay_ts_jiffies = t->wakee_flip_decay_ts,
                .tid = t->pid,
                .tgid = t->tgid,
                .flips = t->wakee_flips,
        };
        struct task_struct *last = t->last_wakee;
        if (last)
                r.last_wakee = BPF_CORE_READ(last, pid);
        bpf_probe_read_kernel(r.comm, sizeof(r.comm), t->comm);
        bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
        return 0;
}
