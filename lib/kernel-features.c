/* SPDX-License-Identifier: MIT */
/*
 * Kernel feature probing (see kernel-features.h). The BTF checks look for
 * exactly what loading wake.bpf.c resolves: libbpf attaches
 * tp_btf/sched_waking through the typedef btf_trace_sched_waking and
 * iter/task through the function bpf_iter_task, and CO-RE relocates the
 * task_struct fields by name. Probing them first turns "the skeleton failed
 * to load (-ESRCH)" into "the kernel has no task iterator: using perf".
 */
#include "kernel-features.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "fileio.h"
#include "macro.h"

/* The kernel's BTF is 5-10 MB (5.2 MiB on Debian's 6.12 with its modules outside); a
 * vmlinux BTF over 64 MiB is not one placed can use. */
#define KERNEL_BTF_MAX ((size_t)64 << 20)

static const struct {
        KernelFeature feature;
        const char *name;
        const char *missing; /* what placed does without it */
} features[] = {
        { KERNEL_FEATURE_BTF, "btf", "no kernel BTF: the perf sampler instead of BPF" },
        { KERNEL_FEATURE_TP_BTF, "tp-btf",
          "no tp_btf/sched_waking: the perf sampler instead of BPF" },
        { KERNEL_FEATURE_TASK_ITER, "task-iter",
          "no BPF task iterator: the perf sampler instead of BPF" },
        { KERNEL_FEATURE_WAKEE_FLIPS, "wakee-flips",
          "no task_struct.wakee_flips: groups judged by the wake graph's own degree, "
          "not the kernel's flips" },
        { KERNEL_FEATURE_BPF_STATS, "bpf-stats",
          "no bpf_stats: the sampler's cost is not measured" },
        { KERNEL_FEATURE_TRACEPOINT, "tracepoint",
          "no sched_waking tracepoint in tracefs: no perf sampler" },
};

const char *kernel_feature_name(KernelFeature f) {
        for (size_t i = 0; i < ELEMENTSOF(features); i++)
                if (features[i].feature == f)
                        return features[i].name;
        return NULL;
}

/* True if the struct (or an anonymous struct or union inside it) has a member named name. */
static bool btf_has_member(const struct btf *btf, const struct btf_type *t, const char *name,
                           unsigned depth) {
        if (!t || !btf_is_composite(t) || depth > 4)
                return false;
        const struct btf_member *m = btf_members(t);
        for (unsigned i = 0; i < btf_vlen(t); i++, m++) {
                const char *n = btf__name_by_offset(btf, m->name_off);
                if (n && n[0] && strcmp(n, name) == 0)
                        return true;
                if ((!n || !n[0]) &&
                    btf_has_member(btf, btf__type_by_id(btf, m->type), name, depth + 1))
                        return true;
        }
        return false;
}

static unsigned probe_btf(const char *sysfs_root) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/kernel/btf/vmlinux", sysfs_root) < 0)
                return 0;
        _cleanup_free_ char *data = NULL;
        size_t size;
        if (read_small_file_alloc(path, KERNEL_BTF_MAX, &data, &size) < 0)
                return 0;
        /* sysfs serves raw BTF, which is what btf__parse() would hand to btf__new() */
        struct btf *btf = btf__new(data, (__u32)size);
        if (!btf)
                return 0;
        unsigned have = KERNEL_FEATURE_BTF;
        if (btf__find_by_name_kind(btf, "btf_trace_sched_waking", BTF_KIND_TYPEDEF) > 0)
                have |= KERNEL_FEATURE_TP_BTF;
        if (btf__find_by_name_kind(btf, "bpf_iter_task", BTF_KIND_FUNC) > 0)
                have |= KERNEL_FEATURE_TASK_ITER;
        int id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
        const struct btf_type *task = id > 0 ? btf__type_by_id(btf, id) : NULL;
        if (btf_has_member(btf, task, "wakee_flips", 0) &&
            btf_has_member(btf, task, "wakee_flip_decay_ts", 0) &&
            btf_has_member(btf, task, "last_wakee", 0))
                have |= KERNEL_FEATURE_WAKEE_FLIPS;
        btf__free(btf);
        return have;
}

static bool exists(const char *root, const char *rel) {
        _cleanup_free_ char *path = NULL;
        return asprintf(&path, "%s/%s", root, rel) >= 0 && access(path, F_OK) == 0;
}

int kernel_features_probe(const char *sysfs_root, const char *procfs_root, unsigned *ret) {
        if (!ret)
                return -EINVAL;
        sysfs_root = sysfs_root ? sysfs_root : "/sys";
        procfs_root = procfs_root ? procfs_root : "/proc";
        unsigned have = KERNEL_FEATURES_PROBED | probe_btf(sysfs_root);
        if (exists(procfs_root, "sys/kernel/bpf_stats_enabled"))
                have |= KERNEL_FEATURE_BPF_STATS;
        if (exists(sysfs_root, "kernel/tracing/events/sched/sched_waking/id") ||
            exists(sysfs_root, "kernel/debug/tracing/events/sched/sched_waking/id"))
                have |= KERNEL_FEATURE_TRACEPOINT;
        *ret = have;
        return 0;
}

int kernel_features_parse(const char *text, unsigned *ret, const char **ret_bad) {
        unsigned bits = 0;
        for (const char *p = text; p && *p;) {
                size_t n = strcspn(p, ",");
                bool found = n == 0;
                for (size_t i = 0; i < ELEMENTSOF(features) && !found; i++)
                        if (strlen(features[i].name) == n && strncmp(p, features[i].name, n) == 0) {
                                bits |= features[i].feature;
                                found = true;
                        }
                if (!found) {
                        if (ret_bad)
                                *ret_bad = p;
                        return -EINVAL;
                }
                p += n + (p[n] == ',');
        }
        *ret = bits;
        return 0;
}

int kernel_features_describe(unsigned have, char **ret) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        const char *sep = "";
        fputs("kernel offers", f);
        for (size_t i = 0; i < ELEMENTSOF(features); i++)
                if (have & features[i].feature) {
                        fprintf(f, "%s %s", sep, features[i].name);
                        sep = ",";
                }
        if (!*sep)
                fputs(" none of the probed features", f);
        for (size_t i = 0; i < ELEMENTSOF(features); i++)
                if (!(have & features[i].feature))
                        fprintf(f, "; %s", features[i].missing);
        if (fclose(f) != 0) {
                free(text);
                return -ENOMEM;
        }
        *ret = text;
        return 0;
}
