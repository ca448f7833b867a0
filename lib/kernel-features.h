/* SPDX-License-Identifier: MIT */
/*
 * What the running kernel offers the wake samplers, probed once at start so
 * that placed can say what it falls back to where something is missing:
 *
 *   kernel BTF, tp_btf/sched_waking, the task iterator -> the BPF sampler
 *                                  (without any of them: the perf sampler)
 *   task_struct.wakee_flips & co.  -> the kernel's flip state per task
 *                                  (without: the wake graph's own degree)
 *   bpf_stats                      -> the sampler's cost per wakeup
 *                                  (without: not measured)
 *   the sched_waking tracepoint    -> the perf sampler (without it and
 *                                  without BPF: no wake sampling)
 *
 * The BTF checks read SYSFS_ROOT/kernel/btf/vmlinux; tests hand in fixture
 * trees with BTF they generate.
 */
#pragma once

#include <stdbool.h>

typedef enum KernelFeature {
        KERNEL_FEATURE_BTF = 1U << 0,         /* SYSFS/kernel/btf/vmlinux: CO-RE */
        KERNEL_FEATURE_TP_BTF = 1U << 1,      /* btf_trace_sched_waking: tp_btf/sched_waking */
        KERNEL_FEATURE_TASK_ITER = 1U << 2,   /* bpf_iter_task: the BPF task iterator */
        KERNEL_FEATURE_WAKEE_FLIPS = 1U << 3, /* task_struct.wakee_flips, .wakee_flip_decay_ts,
                                                 .last_wakee */
        KERNEL_FEATURE_BPF_STATS = 1U << 4,   /* PROCFS/sys/kernel/bpf_stats_enabled */
        KERNEL_FEATURE_TRACEPOINT = 1U << 5,  /* tracefs events/sched/sched_waking */
        KERNEL_FEATURES_PROBED = 1U << 31,    /* set by kernel_features_probe() */
} KernelFeature;

/* What the BPF sampler cannot load without. */
#define KERNEL_FEATURES_BPF_SAMPLER \
        (KERNEL_FEATURE_BTF | KERNEL_FEATURE_TP_BTF | KERNEL_FEATURE_TASK_ITER)

/*
 * kernel_features_probe() - the KERNEL_FEATURE_* bits the kernel under the
 * roots offers, plus KERNEL_FEATURES_PROBED. NULL roots mean "/sys" and
 * "/proc". A missing or unreadable BTF file is no error: the BTF features
 * are then absent.
 *
 * Return: 0 and *ret, or -ENOMEM.
 */
int kernel_features_probe(const char *sysfs_root, const char *procfs_root, unsigned *ret);

/*
 * kernel_features_parse() - a comma-separated list of feature names
 * ("btf,task-iter"; see kernel_feature_name()) as bits.
 *
 * Return: 0 and *ret; -EINVAL for an unknown name (*ret_bad, may be NULL,
 * then points at it in text).
 */
int kernel_features_parse(const char *text, unsigned *ret, const char **ret_bad);

/* "btf", "tp-btf", "task-iter", "wakee-flips", "bpf-stats", "tracepoint"; NULL otherwise. */
const char *kernel_feature_name(KernelFeature f);

/*
 * kernel_features_describe() - one sentence for the start-up log: what is
 * there, and for each missing feature what placed falls back to.
 * Caller frees *ret. Return: 0 or -ENOMEM.
 */
int kernel_features_describe(unsigned have, char **ret);
