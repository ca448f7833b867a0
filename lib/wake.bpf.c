/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The BPF wake sampler. Three kinds of programs:
 *
 *  - wake_sched_waking on tp_btf/sched_waking (fired in the waker's context)
 *    counts the waker->wakee edge in its CPU's run (consecutive wakeups of
 *    one edge) and writes each run that ends to a per-CPU log, or when the
 *    log is full counts the edge in a per-CPU edge cache backed by a per-CPU
 *    hash; userspace reads all four once per tick. It is on the hot path of
 *    every wakeup in the system;
 *  - context markers on tp_btf/irq_handler_entry and _exit,
 *    hrtimer_expire_entry and _exit, timer_expire_entry and _exit: each
 *    stores one byte in its CPU's control line, which wake_sched_waking reads
 *    to tell whose wakeup it is (see "whose wakeup" below). They run per
 *    device interrupt and timer expiry, not per wakeup nor per softirq (a
 *    loopback pair runs one NET_RX softirq per message: markers there would
 *    cost two program runs a wakeup);
 *  - wake_task_iter, a task iterator userspace runs once per read, copies each
 *    task's identity and the kernel's own wakee_flips, wakee_flip_decay_ts and
 *    last_wakee out of task_struct, and what /proc's stat, schedstat and
 *    status would say of it (run time, run-queue delay, times run, state,
 *    policy, CPU, allowed CPUs, its cgroups' ids), so that placed opens no
 *    file per task. It reports only the tasks userspace marks in a bitmap
 *    (task_wanted: the ends of the edges it tracks and the wake graph's
 *    tasks): the kernel still walks every task, but reads of a task that is
 *    not wanted only its address's bit (measured beside 10,000 threads, of
 *    which 4,000 in the graph, by bpf_stats: the program's run time fell
 *    from 320 to 190 ns a task; the walk itself costs about as much again).
 *
 * Whose wakeup: the kernel's record_wakee() counts every wakeup it sees for
 * current, whatever the context. So does this sampler, with the exceptions
 * that would make false edges:
 *  - a timer expiring (an hrtimer, hard or soft, or a timer wheel callback)
 *    or a device's hard IRQ handler is nobody's: it has nothing to do with
 *    the task it interrupted. Marked, as an interrupt from user mode runs on
 *    the task's stack (x86-64), and one nested in a softirq on the IRQ stack
 *    the softirq uses;
 *  - any other frame on the IRQ stack is a softirq's, and current's: loopback
 *    TCP and UDP wake the receiver from the NET_RX softirq that the sender's
 *    send runs, in the sender's context, on the IRQ stack (x86-64, at
 *    local_bh_enable()). Counted in softirq_taken as well. Not told apart:
 *    a system vector other than the timer (irq_work, IPIs, a KVM async page
 *    fault) that wakes a task while interrupting the kernel counts as a
 *    softirq, and while interrupting user mode as task context; rare. And
 *    softirqs at the exit of an interrupt from user mode run on the task's
 *    stack: attributed, but not counted as softirq;
 *  - softirqs in ksoftirqd run on its stack, and it is a kernel thread,
 *    skipped by default like the idle task. Markers are plain stores, set
 *    and cleared, not counts: a missed run heals at the next one. Userspace
 *    attaches every exit before any entry (bpf_attach_ordered()), so that
 *    attaching never leaves a marker set with its clearing run unattached.
 * __preempt_count would tell all this in one load, but it is a per-CPU
 * variable the kernel resolves for BPF only with CONFIG_KALLSYMS_ALL, which
 * some kernels lack.
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
 *  - runs: on a CPU most wakeups repeat its previous edge (a pair spread
 *    over two CPUs: each CPU sees one direction; a loopback pair's softirq
 *    wakeups likewise). The CPU's control line, which the hot path reads
 *    anyway, holds its run: an edge and a count. A wakeup of that edge adds
 *    one to the count: two compares and one store to a line already in the
 *    cache. Another edge ends the run, which becomes one record of this
 *    CPU's wake log (an mmap'able array, log_records records of two
 *    addresses and a count), record log_head / 2, whose slot is free while
 *    the run lasts; the new edge starts a run. Stores do not wait for a cache
 *    miss, loads do: counting in place costs the load of the edge's counter,
 *    a cache miss at most wakeups when the workload runs between them
 *    (hackbench: 300-500 ns a wakeup in the per-CPU hash, whose lookup is a
 *    jhash and three misses, ~330 ns in the edge cache below, ~120 ns in
 *    the log, ~80 ns of which the trampoline and the statistics: bpf_stats
 *    times a program by two sched_clock() reads, and an empty program on
 *    sched_waking measures 52-82 ns on a KVM guest's kvm-clock); and the
 *    log's stores into lines not in the cache cost about 45 ns a record on
 *    a PVM guest, which a repeated edge no longer pays (see the README).
 *    Userspace counts the records and moves log_tail on; the program writes
 *    a record before it moves log_head. Record i goes to slot i - log_start:
 *    when userspace has read every record before the one being written
 *    (log_tail equals it), log_start moves to it, so the log starts again at
 *    its first slot, whose lines a tick ago are still in the cache (walking
 *    the whole ring instead cost hackbench about 100 ns a record on a PVM
 *    guest). A run starts only when its record will have a slot: below
 *    log_start + log_records, or the first one again; otherwise no run is
 *    pending and the edge goes to the cache;
 *  - userspace takes a run while it grows: log_head counts records twice and
 *    is odd while the program writes a record and rewrites the run (and
 *    log_start), so userspace reads them between two equal even values of
 *    it (a new run's count is written after its edge: a count of 0 is no
 *    run). What a read took of the run pending at record h is taken off
 *    record h when it comes: each wakeup is counted once;
 *  - when the log is full (userspace late, or more wakeups in a tick than it
 *    holds: on large machines it is small, see wake-source-bpf.c), the edge is
 *    counted in a per-CPU, 2-way set-associative edge cache (cache_sets
 *    64-byte sets per CPU in an mmap'able array): a hit is a multiplicative
 *    hash, one cache line and a plain increment. A miss takes the least
 *    recently hit way (an empty one first) and moves the count of the edge
 *    that held it into the per-CPU hash, which is touched only then. Only
 *    this CPU writes its part of each map, and the tracepoint runs with
 *    interrupts off, so no lock and no atomic. Counts are exact: a wakeup is
 *    in a run (pending, or a log record's count), or in an edge's total, its
 *    hash count plus its count in any cache way;
 *  - a way is rewritten inside a per-set sequence count (odd while writing),
 *    with the hash update inside the same window: userspace reads the hash
 *    first, then each set between two equal even sequence values, so a
 *    moving count is seen at most once (at worst missed until the next read);
 *  - all stores are plain and ordered by the compiler only: enough on x86's
 *    total store order; a weakly ordered CPU would need release stores
 *    (BPF atomics, clang -mcpu=v3);
 *  - sample_shift > 0 counts 1 in 2^sample_shift calls on average, decided
 *    by a per-CPU countdown before any other work (a random number only per
 *    sampled call); userspace scales the counts back;
 *  - wakeups that are nobody's (hard IRQ, timers, see above), from
 *    the idle task and (by default) to or from kernel threads are counted as
 *    skipped, not attributed; placed's own (ignore_tgid) are dropped by
 *    userspace, which knows the waker's tgid from the iterator. The context
 *    check costs one load from the control line the hot path reads anyway
 *    (the markers and the settings in one word) and the stack check;
 *  - a wakeup that extends a run touches, of the program's own memory, only
 *    this CPU's control line, and one that ends a run that line and a log
 *    slot: the settings it needs (the log's place and size, THREAD_SIZE,
 *    skip_kthreads, sampling) are copied from the read-only data into the
 *    control line at the CPU's first wakeup, as a
 *    read of another page can miss in the TLB as well, on a CPU just back
 *    from idle (a VM's HLT) or under hackbench;
 *  - the PID namespace: the iterator reports TIDs as placed's /proc shows
 *    them (see wake_task_iter); the hot path knows only addresses.
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
        BPF_MAP_TYPE_RINGBUF = 27,
        BPF_MAP_TYPE_ARRAY = 2,
        BPF_MAP_TYPE_PERCPU_HASH = 5,
        BPF_MAP_TYPE_PERCPU_ARRAY = 6,
};
#define BPF_NOEXIST    1
#define BPF_F_MMAPABLE (1U << 10)

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "wake.h"

#define PF_IDLE    0x00000002
#define PF_KTHREAD 0x00200000
#define EEXIST     17

/* An edge's set in the CPU's region: the top bits of this xor of products. */
#define WAKE_CACHE_MUL_WAKER 0x9e3779b97f4a7c15ULL
#define WAKE_CACHE_MUL_WAKEE 0xc2b2ae3d27d4eb4fULL

/* A store the compiler keeps in program order with the others (see the top). */
#define WRITE_SEQ(x, val)                                \
        do {                                             \
                barrier();                               \
                *(volatile __typeof__(x) *)&(x) = (val); \
                barrier();                               \
        } while (0)

struct pid_namespace;

struct upid {
        int nr;
        struct pid_namespace *ns;
} __attribute__((preserve_access_index));

struct pid {
        unsigned int level;
        struct upid numbers[1]; /* numbers[level + 1]: the pid in each namespace up to its own */
} __attribute__((preserve_access_index));

struct kernfs_node {
        __u64 id;
} __attribute__((preserve_access_index));

struct cgroup {
        struct kernfs_node *kn;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
        struct cgroup *cgroup;
} __attribute__((preserve_access_index));

struct css_set {
        struct cgroup_subsys_state *subsys[1];
        struct cgroup *dfl_cgrp;
} __attribute__((preserve_access_index));

/* Its first entry is cpuset's where the kernel has cpusets (include/linux/cgroup_subsys.h). */
enum cgroup_subsys_id {
        cpuset_cgrp_id = 0,
};

struct sched_entity {
        __u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct sched_info {
        unsigned long pcount;
        unsigned long long run_delay;
} __attribute__((preserve_access_index));

struct cpumask {
        unsigned long bits[1];
} __attribute__((preserve_access_index));

struct thread_info {
        unsigned int cpu; /* where the task's CPU lives on some kernels (x86 since 6.?) */
} __attribute__((preserve_access_index));

struct task_io_accounting {
        __u64 rchar;
        __u64 wchar;
} __attribute__((preserve_access_index));

struct task_struct {
        struct thread_info thread_info;
        struct task_io_accounting ioac;
        unsigned int __state;
        unsigned int flags;
        int cpu;
        struct sched_entity se;
        unsigned int policy;
        unsigned int rt_priority;
        struct cpumask cpus_mask;
        struct sched_info sched_info;
        int exit_state;
        pid_t pid;
        pid_t tgid;
        struct task_struct *real_parent;
        struct pid *thread_pid;
        struct task_struct *group_leader;
        __u64 start_boottime;
        char comm[16];
        struct css_set *cgroups;
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
const volatile __u8 read_flips = 1;        /* 0: the kernel lacks them (kernel-features.h) */
const volatile __u64 thread_size = 16384;  /* THREAD_SIZE: the task's kernel stack */
const volatile __u32 log_records = 1;      /* records per CPU in wake_log, a power of two */
const volatile __u32 cache_sets = 1;       /* sets per CPU in edge_cache, a power of two */
const volatile __u32 cache_set_shift = 64; /* 64 - log2(cache_sets) */
const volatile __u32 mask_words = 1;       /* WAKE_MASK_WORDS(possible CPUs), at most _MAX */
const volatile __u8 filter_tasks = 1;      /* the iterator reports only the tasks in task_wanted */
const volatile __u8 notes_on = 1;          /* write notes (wake_note) to the notes ring */

/* Set by the iterator, read by userspace after it: jiffies -> CLOCK_MONOTONIC. */
__u64 clock_jiffies;
__u64 clock_mono_ns;
/* Set by the iterator (placed's context): the level and namespace of placed's
 * PIDs, for the notes' TIDs (0: the initial one). */
__u32 reader_level;
__u64 reader_ns;

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
        __uint(max_entries, WAKE_MAX_EDGES);
        __type(key, struct wake_edge_key);
        __type(value, __u64);
} edges SEC(".maps");

/* CPU c's state: element c; userspace maps it to read the counts and move log_tail. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct wake_cpu_ctl);
} cpu_ctl SEC(".maps");

/* CPU c's log: slots c * log_records .. (c + 1) * log_records - 1, of runs. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct wake_log_rec);
} wake_log SEC(".maps");

/* CPU c's sets are c * cache_sets .. (c + 1) * cache_sets - 1; sized by userspace. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct wake_edge_set);
} edge_cache SEC(".maps");

/* Notes of runs that reached WAKE_NOTE_RUN (wake_note); rare: 16 KiB. */
struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 16384);
} notes SEC(".maps");

/* The iterator's record of one task and its allowed-CPU mask, built here
 * rather than on the stack (512 bytes), then written as one. */
struct task_rec {
        struct wake_task_info info;
        __u64 mask[WAKE_MASK_WORDS_MAX];
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct task_rec);
} task_rec_buf SEC(".maps");

/* The tasks userspace wants records of (the ends of the edges it tracks, the
 * tasks whose facts it reads), as a bitmap of WAKE_WANTED_BITS bits hashed
 * from their task_struct addresses (wake_wanted_bit()), which userspace maps
 * and rewrites before each run of the iterator: one load a task, and a false
 * match only costs a record userspace does not look at. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(map_flags, BPF_F_MMAPABLE);
        __uint(max_entries, WAKE_WANTED_BITS / 64);
        __type(key, __u32);
        __type(value, __u64);
} task_wanted SEC(".maps");

/*
 * Interrupt context without preempt_count: x86-64 runs hardirqs that
 * interrupt the kernel, softirqs at bh enable or their irq exit, and NMIs on
 * their own stacks, and this program's frame lives on whatever stack the
 * tracepoint fired on. So a frame outside current's task stack means
 * interrupt context; which kind, the markers say (see the top).
 */
static __always_inline int on_irq_stack(struct task_struct *cur, __u32 stack_size) {
        __u64 marker = 0;
        __u64 sp = (__u64)(unsigned long)&marker;
        __u64 base = (__u64)(unsigned long)cur->stack;
        barrier_var(sp);
        /* Two compares, not one on the wrapped difference sp - base: a
         * frame pointer minus a number is rejected by 6.1's verifier ("math
         * between fp pointer and register with unbounded min value"). */
        return sp < base || sp >= base + stack_size;
}

/* Adds n wakeups of edge k to this CPU's count in the hash. */
static __always_inline void hash_add(struct wake_cpu_ctl *c, struct wake_edge_key *k, __u64 n) {
        __u64 *v = bpf_map_lookup_elem(&edges, k);
        if (v) {
                *v += n;
                return;
        }
        long r = bpf_map_update_elem(&edges, k, &n, BPF_NOEXIST);
        if (r == -EEXIST && (v = bpf_map_lookup_elem(&edges, k)))
                *v += n; /* another CPU inserted it first */
        else if (r < 0)
                c->lost += n;
}

/*
 * The slow path: the edge is in neither way of its set. It takes an empty
 * way, else the one not hit last, whose edge's count moves to the hash. The
 * rewrite and the move happen while the set's seq is odd (see the top).
 */
static __attribute__((noinline)) int cache_miss(struct wake_cpu_ctl *c, struct wake_edge_set *set,
                                                __u64 waker, __u64 wakee) {
        __u32 v = !set->way[0].waker_task ? 0 : !set->way[1].waker_task ? 1 : !set->mru;
        struct wake_edge_way *w = v ? &set->way[1] : &set->way[0];
        struct wake_edge_key old = { .waker_task = w->waker_task, .wakee_task = w->wakee_task };
        __u64 n = w->count;

        c->misses++;
        WRITE_SEQ(set->seq, set->seq + 1);
        if (old.waker_task && n)
                hash_add(c, &old, n);
        WRITE_SEQ(w->waker_task, waker);
        WRITE_SEQ(w->wakee_task, wakee);
        WRITE_SEQ(w->count, 1);
        WRITE_SEQ(set->seq, set->seq + 1);
        set->mru = v;
        return 0;
}

/*
 * Counts the edge in this CPU's edge cache, the path when the log is full.
 * Returns 0 (a subprogram, kept out of the hot path's instructions).
 */
static __attribute__((noinline)) int cache_count(struct wake_cpu_ctl *c, __u32 cpu, __u64 waker,
                                                 __u64 wakee) {
        __u32 i = cpu * cache_sets +
                  (__u32)((waker * WAKE_CACHE_MUL_WAKER ^ wakee * WAKE_CACHE_MUL_WAKEE) >>
                          cache_set_shift);
        struct wake_edge_set *set = bpf_map_lookup_elem(&edge_cache, &i);
        c->cached++;
        if (!set) {
                c->lost++;
                return 0;
        }
        if (set->way[0].waker_task == waker && set->way[0].wakee_task == wakee) {
                set->way[0].count++;
                if (set->mru)
                        set->mru = 0;
                return 0;
        }
        if (set->way[1].waker_task == waker && set->way[1].wakee_task == wakee) {
                set->way[1].count++;
                if (!set->mru)
                        set->mru = 1;
                return 0;
        }
        return cache_miss(c, set, waker, wakee);
}

/* The context markers (see "whose wakeup" at the top). */
static __always_inline struct wake_cpu_ctl *this_cpu_ctl(void) {
        __u32 cpu = bpf_get_smp_processor_id();
        return bpf_map_lookup_elem(&cpu_ctl, &cpu);
}

/* A hard IRQ's handler, a timer's callback: the stack does not tell them
 * (from user mode: the task's; nested in a softirq: the softirq's). */
SEC("tp_btf/irq_handler_entry")
int BPF_PROG(wake_irq_entry) {
        struct wake_cpu_ctl *c = this_cpu_ctl();
        if (c)
                c->in_irq_handler = 1;
        return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(wake_irq_exit) {
        struct wake_cpu_ctl *c = this_cpu_ctl();
        if (c)
                c->in_irq_handler = 0;
        return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(wake_hrtimer_entry) {
        struct wake_cpu_ctl *c = this_cpu_ctl();
        if (c)
                c->in_hrtimer = 1;
        return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(wake_hrtimer_exit) {
        struct wake_cpu_ctl *c = this_cpu_ctl();
        if (c)
                c->in_hrtimer = 0;
        return 0;
}

/* A timer wheel callback (the TIMER softirq): a timeout expiring too. */
SEC("tp_btf/timer_expire_entry")
int BPF_PROG(wake_timer_entry) {
        struct wake_cpu_ctl *c = this_cpu_ctl();
        if (c)
                c->in_timer = 1;
        return 0;
}

SEC("tp_btf/timer_expire_exit")
int BPF_PROG(wake_timer_exit) {
        struct wake_cpu_ctl *c = this_cpu_ctl();
        if (c)
                c->in_timer = 0;
        return 0;
}

/*
 * A task's number in the PID namespace at level (the reader's: see below),
 * or 0 if the task is not in it.
 */
static __always_inline __u32 pid_in_ns(struct task_struct *t, __u32 level,
                                       struct pid_namespace *ns) {
        struct pid *pid = BPF_CORE_READ(t, thread_pid);
        struct upid up = {};
        if (!pid || BPF_CORE_READ(pid, level) < level)
                return 0;
        bpf_core_read(&up, sizeof(up), &pid->numbers[level]);
        return up.ns == ns ? (__u32)up.nr : 0;
}

/*
 * The CPU's run or turns reached WAKE_NOTE_RUN: a note, unless this CPU's
 * last one was of the same edge less than WAKE_NOTE_QUIET_NS ago (a run that
 * other wakeups cut and that resumes). Off the hot path: it runs once a run.
 * Returns 0.
 */
static __attribute__((noinline)) int
run_note(struct wake_cpu_ctl *c, __u32 cpu, struct task_struct *waker, struct task_struct *wakee) {
        if (!notes_on)
                return 0;
        __u64 now = bpf_ktime_get_ns();
        if (c->noted_waker == c->run_waker && c->noted_wakee == c->run_wakee &&
            now - c->noted_ns < WAKE_NOTE_QUIET_NS)
                return 0;
        c->noted_waker = c->run_waker;
        c->noted_wakee = c->run_wakee;
        c->noted_ns = now;
        struct wake_note *n = bpf_ringbuf_reserve(&notes, sizeof(*n), 0);
        if (!n)
                return 0; /* the ring is full: userspace is behind, and its tick will see it */
        n->waker_task = c->run_waker;
        n->wakee_task = c->run_wakee;
        n->ts_ns = now;
        n->cpu = cpu;
        /* TIDs as placed's /proc shows them (the iterator set where that is). */
        __u32 level = reader_level;
        struct pid_namespace *ns = (struct pid_namespace *)(unsigned long)reader_ns;
        n->waker_tid = level > 0 ? pid_in_ns(waker, level, ns) : (__u32)BPF_CORE_READ(waker, pid);
        n->wakee_tid = level > 0 ? pid_in_ns(wakee, level, ns) : (__u32)BPF_CORE_READ(wakee, pid);
        bpf_ringbuf_submit(n, 0);
        return 0;
}

/*
 * Copies the settings into this CPU's hot line (see WAKE_CFG_SET), once.
 * Returns the cfg byte.
 */
static __attribute__((noinline)) int ctl_configure(struct wake_cpu_ctl *c, __u32 cpu) {
        __u8 cfg = WAKE_CFG_SET;
        if (skip_kthreads)
                cfg |= WAKE_CFG_SKIP_KTHREADS;
        if (sample_shift)
                cfg |= WAKE_CFG_SAMPLED;
        c->log_base = cpu * log_records;
        c->log_mask = log_records - 1;
        c->thread_size = (__u32)thread_size;
        WRITE_SEQ(c->cfg, cfg);
        return cfg;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(wake_sched_waking, struct task_struct *p) {
        __u32 cpu = bpf_get_smp_processor_id();
        struct wake_cpu_ctl *c = bpf_map_lookup_elem(&cpu_ctl, &cpu);
        if (!c)
                return 0;
        /* The three markers and cfg at once. */
        __u32 word = *(const volatile __u32 *)&c->in_timer;
        __u32 cfg = word >> 24;
        if (!(cfg & WAKE_CFG_SET))
                cfg = ctl_configure(c, cpu);
        if (cfg & WAKE_CFG_SAMPLED) {
                /* 1 in 2^sample_shift on average, at random gaps of 1 to
                 * 2^(sample_shift+1) - 1 calls: a fixed stride would alias
                 * with lockstep wakeups (a pair alternating on one CPU). */
                if (c->countdown > 1) {
                        c->countdown--;
                        return 0;
                }
                c->countdown = bpf_get_prandom_u32() % ((2U << sample_shift) - 1) + 1;
        }

        /* Whose wakeup (see the top): a marker set, nobody's; else a frame on
         * the IRQ stack, a softirq's; else task context. Only the first cache
         * line of each task_struct (flags, stack), which try_to_wake_up() and
         * the scheduler keep hot anyway. */
        struct task_struct *cur = bpf_get_current_task_btf();
        unsigned int cur_flags = cur->flags;
        if ((word & 0xffffff) || cur == p || (cur_flags & PF_IDLE) ||
            ((cfg & WAKE_CFG_SKIP_KTHREADS) && ((cur_flags | p->flags) & PF_KTHREAD))) {
                c->skipped++;
                return 0;
        }
        if (on_irq_stack(cur, c->thread_size))
                c->softirq_taken++;

        /* The CPU's last edge again: one more in its run (see the top). */
        if (c->run_waker == (__u64)(unsigned long)cur && c->run_wakee == (__u64)(unsigned long)p) {
                __u64 n = c->run_count + 1;
                c->run_count = n;
                if (n == WAKE_NOTE_RUN)
                        return run_note(c, cpu, cur, p);
                return 0;
        }

        /* Another edge: the run, if any, becomes its record; a new run starts
         * if its record will have a slot, else the edge goes to the cache. */
        __u64 head = c->log_head; /* 2 x records */
        __u64 n = c->run_count;
        __u64 rec_no = head >> 1;
        if (n) {
                /* Every record before it read: the log starts again at its
                 * first slot, whose lines are still in the cache. */
                __u64 start = *(volatile __u64 *)&c->log_tail == rec_no ? rec_no : c->log_start;
                __u32 i = c->log_base + ((__u32)(rec_no - start) & c->log_mask);
                struct wake_log_rec *rec = bpf_map_lookup_elem(&wake_log, &i);
                if (!rec) {
                        c->lost++; /* cannot be: i is below max_entries */
                        return 0;
                }
                WRITE_SEQ(c->log_head, head + 1); /* odd: the run changes */
                c->log_start = start;
                rec->waker_task = c->run_waker;
                rec->wakee_task = c->run_wakee;
                rec->count = n;
                head += 2;
                rec_no++;
        }
        if (rec_no - c->log_start > c->log_mask && *(volatile __u64 *)&c->log_tail != rec_no) {
                /* No slot: the log is full up to what userspace read. */
                if (n) {
                        c->run_waker = 0;
                        c->run_wakee = 0;
                        c->run_count = 0;
                        WRITE_SEQ(c->log_head, head);
                }
                /* The addresses as numbers for the cache's hash: the
                 * verifier allows no arithmetic on a task pointer, but
                 * what is stored in a map reads back as a number. */
                WRITE_SEQ(c->task_addr[0], (__u64)(unsigned long)cur);
                WRITE_SEQ(c->task_addr[1], (__u64)(unsigned long)p);
                return cache_count(c, cpu, *(volatile __u64 *)&c->task_addr[0],
                                   *(volatile __u64 *)&c->task_addr[1]);
        }
        /* The run before, turned round: a pair taking turns on this CPU. */
        int turned = c->run_waker == (__u64)(unsigned long)p &&
                     c->run_wakee == (__u64)(unsigned long)cur;
        c->run_waker = (__u64)(unsigned long)cur;
        c->run_wakee = (__u64)(unsigned long)p;
        if (n) {
                c->run_count = 1;
                WRITE_SEQ(c->log_head, head); /* even: the record and the run written */
        } else {
                WRITE_SEQ(c->run_count, 1); /* after its edge (see the top) */
        }
        if (!turned) {
                if (c->turns)
                        c->turns = 0;
                return 0;
        }
        if (++c->turns == WAKE_NOTE_RUN)
                return run_note(c, cpu, cur, p);
        return 0;
}

/* What /proc/TID/stat's state field is built from, and the scheduling facts of schedstat. */
static __always_inline void task_sched_facts(struct task_struct *t, struct wake_task_info *r) {
        r->flags = t->flags;
        if (bpf_core_field_exists(t->__state))
                r->state = t->__state;
        r->exit_state = (__u32)t->exit_state;
        r->policy = t->policy;
        r->rt_priority = t->rt_priority;
        /* task_cpu(): in task_struct, or in its thread_info, by kernel and architecture. */
        if (bpf_core_field_exists(t->cpu))
                r->cpu = t->cpu;
        else if (bpf_core_field_exists(t->thread_info.cpu))
                r->cpu = (__s32)t->thread_info.cpu;
        else
                r->cpu = -1;
        /* /proc/TID/io's rchar + wchar (CONFIG_TASK_XACCT): what a stream moves. */
        if (bpf_core_field_exists(t->ioac))
                r->io_bytes = t->ioac.rchar + t->ioac.wchar;
        r->run_ns = t->se.sum_exec_runtime;
        r->run_delay_ns = t->sched_info.run_delay;
        r->pcount = t->sched_info.pcount;
        /* Plain loads through BTF pointers (a faulting one reads 0), not helper calls. */
        struct css_set *cs = t->cgroups;
        struct cgroup *cg = cs ? cs->dfl_cgrp : NULL;
        struct kernfs_node *kn = cg ? cg->kn : NULL;
        r->cgroup_id = kn ? kn->id : 0;
        if (bpf_core_enum_value_exists(enum cgroup_subsys_id, cpuset_cgrp_id) &&
            bpf_core_enum_value(enum cgroup_subsys_id, cpuset_cgrp_id) == 0) {
                struct cgroup_subsys_state *css = cs ? cs->subsys[0] : NULL;
                cg = css ? css->cgroup : NULL;
                kn = cg ? cg->kn : NULL;
                r->cpuset_cgroup_id = kn ? kn->id : 0;
        }
}

/*
 * Userspace runs this in its read(), so current is placed, and the kernel
 * walks only the tasks of placed's PID namespace. Their TIDs are reported as
 * placed sees them in /proc: the global ones (task_struct.pid, tgid) in the
 * initial namespace, else the numbers at its level (a container).
 */
SEC("iter/task")
int wake_task_iter(struct bpf_iter__task *ctx) {
        struct task_struct *t = ctx->task;
        __u32 zero = 0;
        if (!t)
                return 0;
        if (ctx->meta->seq_num == 0) {
                clock_jiffies = bpf_jiffies64();
                clock_mono_ns = bpf_ktime_get_ns();
        }
        if (skip_kthreads && (t->flags & PF_KTHREAD))
                return 0;
        struct task_rec *rec = bpf_map_lookup_elem(&task_rec_buf, &zero);
        if (!rec)
                return 0;
        /* The address as a number (the verifier allows no arithmetic on a
         * task pointer; what is stored in a map reads back as a number). */
        WRITE_SEQ(rec->info.task, (__u64)(unsigned long)t);
        __u64 addr = *(volatile __u64 *)&rec->info.task;
        if (filter_tasks) {
                __u32 bit = wake_wanted_bit(addr), word = bit / 64;
                __u64 *w = bpf_map_lookup_elem(&task_wanted, &word);
                if (!w || !((*w >> (bit % 64)) & 1))
                        return 0; /* read no more of it: most tasks of a busy server sleep */
        }

        struct task_struct *reader = bpf_get_current_task_btf();
        struct pid *reader_pid = reader->thread_pid;
        __u32 level = reader_pid ? reader_pid->level : 0;
        struct pid_namespace *ns = NULL;
        if (level > 0) {
                struct upid up = {};
                bpf_core_read(&up, sizeof(up), &reader_pid->numbers[level]);
                ns = up.ns;
        }
        reader_level = level;
        reader_ns = (__u64)(unsigned long)ns;
        struct wake_task_info *r = &rec->info;
        __builtin_memset(r, 0, sizeof(*r));
        r->task = addr;
        r->start_ns = t->start_boottime;
        r->tid = t->pid;
        r->tgid = t->tgid;
        if (level > 0) {
                r->tid = pid_in_ns(t, level, ns);
                r->tgid = pid_in_ns(t->group_leader, level, ns);
                if (!r->tid || !r->tgid)
                        return 0; /* not in placed's namespace */
        }
        struct task_struct *leader = t->group_leader;
        r->leader_start_ns = leader ? leader->start_boottime : 0;
        struct task_struct *parent = t->real_parent;
        if (parent)
                r->ppid = level > 0 ? pid_in_ns(parent->group_leader, level, ns) : parent->tgid;
        /* Dead code, so never relocated, where the kernel lacks the fields. */
        if (read_flips && bpf_core_field_exists(t->wakee_flips) &&
            bpf_core_field_exists(t->wakee_flip_decay_ts) && bpf_core_field_exists(t->last_wakee)) {
                r->decay_ts_jiffies = t->wakee_flip_decay_ts;
                r->flips = t->wakee_flips;
                struct task_struct *last = t->last_wakee;
                if (last)
                        r->last_wakee =
                                level > 0 ? pid_in_ns(last, level, ns) : BPF_CORE_READ(last, pid);
        }
        task_sched_facts(t, r);
        *(__u64 *)&r->comm[0] = *(__u64 *)&t->comm[0];
        *(__u64 *)&r->comm[8] = *(__u64 *)&t->comm[8];

        __u32 mask_bytes = mask_words * 8;
        if (mask_bytes > sizeof(rec->mask))
                mask_bytes = sizeof(rec->mask);
        if (bpf_probe_read_kernel(rec->mask, mask_bytes, &t->cpus_mask) < 0)
                __builtin_memset(rec->mask, 0, sizeof(rec->mask));
        bpf_seq_write(ctx->meta->seq, rec, sizeof(rec->info) + mask_bytes);
        return 0;
}
