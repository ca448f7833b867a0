/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The BPF wake sampler: on every sched_waking (fired in the waker's context)
 * it keeps the waker's wakee_flips with the kernel's record_wakee() semantics
 * in task-local storage and counts the waker->wakee edge in a hash map that
 * userspace drains once per tick.
 *
 * Why it is shaped like this, for the hot path:
 *  - flips live in task-local storage: no shared map slot, no lock;
 *  - an edge is only ever written by its waker, and a task runs on one CPU at
 *    a time, so the edge value is updated with plain stores after a lock-free
 *    lookup; the bucket lock is taken only when an edge is first seen;
 *  - edge counts only grow: userspace reads them without deleting and takes
 *    differences, and deletes only edges idle for several reads, so a busy
 *    edge is inserted once, not once per tick (inserting is what costs);
 *  - a reused TID is told by the start times: the edge is restarted;
 *  - wakeups from interrupt context (hardirq, serving softirq, NMI), from the
 *    idle task and (by default) to or from kernel threads are counted as
 *    skipped, not attributed.
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
        BPF_MAP_TYPE_HASH = 1,
        BPF_MAP_TYPE_PERCPU_ARRAY = 6,
        BPF_MAP_TYPE_TASK_STORAGE = 29,
};
#define BPF_NOEXIST                    1
#define BPF_EXIST                      2
#define BPF_F_NO_PREALLOC              (1U << 0)
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "wake.h"

#define PF_KTHREAD 0x00200000

struct task_struct {
        unsigned int flags;
        pid_t pid;
        pid_t tgid;
        __u64 start_boottime;
        char comm[16];
        void *stack;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile __u32 ignore_tgid = 0;  /* placed itself */
const volatile __u32 sample_shift = 0; /* count 1 in 2^sample_shift edges (flips: all) */
const volatile __u8 skip_kthreads = 1;
const volatile __u64 thread_size = 16384; /* THREAD_SIZE: the task's kernel stack */

struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct wake_flips);
} flips SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, WAKE_MAX_EDGES);
        __type(key, struct wake_edge_key);
        __type(value, struct wake_edge_val);
} edges SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct wake_counters);
} counters SEC(".maps");

/* Room for a new edge value: a 100-byte stack frame would make the kernel
 * give the program a private stack (6.13+), which on_irq_stack() cannot use. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct wake_edge_val);
} scratch SEC(".maps");

static __always_inline void record_edge(void *map, struct task_struct *waker,
                                        struct task_struct *wakee, const struct wake_flips *f,
                                        __u64 now, struct wake_counters *c) {
        struct wake_edge_key key = { .waker_tid = waker->pid, .wakee_tid = wakee->pid };
        struct wake_edge_val *v = bpf_map_lookup_elem(map, &key);

        if (v && v->waker_start_ns == waker->start_boottime &&
            v->wakee_start_ns == wakee->start_boottime) {
                v->count++;
                v->last_ns = now;
                v->flips = *f;
                return;
        }

        __u32 zero = 0;
        struct wake_edge_val *nv = bpf_map_lookup_elem(&scratch, &zero);
        if (!nv)
                return;
        nv->count = 1;
        nv->last_ns = now;
        nv->waker_start_ns = waker->start_boottime;
        nv->wakee_start_ns = wakee->start_boottime;
        nv->flips = *f;
        nv->waker_tgid = waker->tgid;
        nv->wakee_tgid = wakee->tgid;
        bpf_probe_read_kernel_str(nv->waker_comm, sizeof(nv->waker_comm), waker->comm);
        bpf_probe_read_kernel_str(nv->wakee_comm, sizeof(nv->wakee_comm), wakee->comm);
        if (bpf_map_update_elem(map, &key, nv, v ? BPF_EXIST : BPF_NOEXIST) < 0)
                c->lost++;
}

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
        struct task_struct *cur = bpf_get_current_task_btf();
        __u32 zero = 0;
        struct wake_counters *c = bpf_map_lookup_elem(&counters, &zero);
        if (!c)
                return 0;

        if (on_irq_stack(cur) || cur->pid == 0 || cur->pid == p->pid ||
            (skip_kthreads && ((cur->flags | p->flags) & PF_KTHREAD)) ||
            (ignore_tgid && (__u32)cur->tgid == ignore_tgid)) {
                c->skipped++;
                return 0;
        }

        struct wake_flips *f = bpf_task_storage_get(&flips, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
        if (!f) {
                c->lost++;
                return 0;
        }
        __u64 now = bpf_ktime_get_ns();
        wake_flips_record(f, p->pid, now);
        c->events++;

        if (sample_shift && (bpf_get_prandom_u32() & ((1U << sample_shift) - 1)))
                return 0;
        record_edge(&edges, cur, p, f, now, c);
        return 0;
}
