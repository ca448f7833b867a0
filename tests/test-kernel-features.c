/* SPDX-License-Identifier: MIT */
/*
 * Kernel feature probing (lib/kernel-features.c) on fixture trees whose
 * kernel/btf/vmlinux is BTF generated here with libbpf (a kernel with or
 * without the task iterator, the tp_btf typedef, the flip fields; the
 * fields inside an anonymous struct as randomized layouts have them; no or
 * broken BTF), the feature names, the start-up sentence, and the running
 * kernel's own BTF.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <cmocka.h>

#include "hostile.h"
#include "kernel-features.h"
#include "macro.h"

static char root[] = "/tmp/placed-kfeat-XXXXXX";

enum { WITH_TP = 1, WITH_ITER = 2, WITH_FLIPS = 4, FLIPS_IN_ANON = 8 };

static void write_file(const char *rel, const void *data, size_t size) {
        char path[512], cmd[600];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
        assert_int_equal(system(cmd), 0);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, size, f), size);
        assert_int_equal(fclose(f), 0);
}

/* The flip fields into the struct added last. */
static void add_flip_fields(struct btf *b, int u32, int u64, int ptr, unsigned offset) {
        assert_int_equal(btf__add_field(b, "wakee_flips", u32, offset, 0), 0);
        assert_int_equal(btf__add_field(b, "wakee_flip_decay_ts", u64, offset + 64, 0), 0);
        assert_int_equal(btf__add_field(b, "last_wakee", ptr, offset + 128, 0), 0);
}

/* A vmlinux BTF with task_struct and, by flags, the rest. */
static void write_btf(unsigned flags) {
        struct btf *b = btf__new_empty();
        assert_non_null(b);
        int u32 = btf__add_int(b, "unsigned int", 4, 0);
        int u64 = btf__add_int(b, "long unsigned int", 8, 0);
        int ptr = btf__add_ptr(b, u64);
        assert_true(u32 > 0 && u64 > 0 && ptr > 0);
        if (flags & FLIPS_IN_ANON) {
                /* struct task_struct { unsigned int pid; struct { ...flips... }; } */
                int anon = btf__add_struct(b, NULL, 24);
                assert_true(anon > 0);
                if (flags & WITH_FLIPS)
                        add_flip_fields(b, u32, u64, ptr, 0);
                assert_true(btf__add_struct(b, "task_struct", 32) > 0);
                assert_int_equal(btf__add_field(b, "pid", u32, 0, 0), 0);
                assert_int_equal(btf__add_field(b, NULL, anon, 64, 0), 0);
        } else {
                assert_true(btf__add_struct(b, "task_struct", 32) > 0);
                assert_int_equal(btf__add_field(b, "pid", u32, 0, 0), 0);
                if (flags & WITH_FLIPS)
                        add_flip_fields(b, u32, u64, ptr, 64);
        }
        if (flags & WITH_TP) {
                int proto = btf__add_func_proto(b, 0);
                int fn_ptr = btf__add_ptr(b, proto);
                assert_true(btf__add_typedef(b, "btf_trace_sched_waking", fn_ptr) > 0);
        }
        if (flags & WITH_ITER) {
                int proto = btf__add_func_proto(b, u32);
                assert_true(btf__add_func(b, "bpf_iter_task", BTF_FUNC_GLOBAL, proto) > 0);
        }
        __u32 size;
        const void *raw = btf__raw_data(b, &size);
        assert_non_null(raw);
        write_file("sys/kernel/btf/vmlinux", raw, size);
        btf__free(b);
}

static unsigned probe(void) {
        char sys[300], proc[300];
        unsigned have = 0;
        snprintf(sys, sizeof(sys), "%s/sys", root);
        snprintf(proc, sizeof(proc), "%s/proc", root);
        assert_int_equal(kernel_features_probe(sys, proc, &have), 0);
        assert_true(have & KERNEL_FEATURES_PROBED);
        return have & ~KERNEL_FEATURES_PROBED;
}

static int setup(void **state) {
        strcpy(root, "/tmp/placed-kfeat-XXXXXX");
        assert_non_null(mkdtemp(root));
        return 0;
}

static int teardown(void **state) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

static void test_everything(void **state) {
        write_btf(WITH_TP | WITH_ITER | WITH_FLIPS);
        write_file("proc/sys/kernel/bpf_stats_enabled", "0\n", 2);
        write_file("sys/kernel/tracing/events/sched/sched_waking/id", "300\n", 4);
        assert_int_equal(probe(), KERNEL_FEATURE_BTF | KERNEL_FEATURE_TP_BTF |
                                          KERNEL_FEATURE_TASK_ITER | KERNEL_FEATURE_WAKEE_FLIPS |
                                          KERNEL_FEATURE_BPF_STATS | KERNEL_FEATURE_TRACEPOINT);
}

static void test_each_missing(void **state) {
        write_btf(WITH_ITER | WITH_FLIPS);
        assert_int_equal(probe(), KERNEL_FEATURE_BTF | KERNEL_FEATURE_TASK_ITER |
                                          KERNEL_FEATURE_WAKEE_FLIPS);
        write_btf(WITH_TP | WITH_FLIPS);
        assert_int_equal(probe(),
                         KERNEL_FEATURE_BTF | KERNEL_FEATURE_TP_BTF | KERNEL_FEATURE_WAKEE_FLIPS);
        write_btf(WITH_TP | WITH_ITER);
        assert_int_equal(probe(),
                         KERNEL_FEATURE_BTF | KERNEL_FEATURE_TP_BTF | KERNEL_FEATURE_TASK_ITER);
        /* The tracepoint under debugfs counts too. */
        write_file("sys/kernel/debug/tracing/events/sched/sched_waking/id", "300\n", 4);
        assert_int_equal(probe() & KERNEL_FEATURE_TRACEPOINT, KERNEL_FEATURE_TRACEPOINT);
}

static void test_fields_in_anonymous_struct(void **state) {
        write_btf(WITH_TP | WITH_ITER | WITH_FLIPS | FLIPS_IN_ANON);
        assert_int_equal(probe() & KERNEL_FEATURE_WAKEE_FLIPS, KERNEL_FEATURE_WAKEE_FLIPS);
}

static void test_no_or_broken_btf(void **state) {
        assert_int_equal(probe(), 0);
        write_file("sys/kernel/btf/vmlinux", "not BTF at all", 14);
        assert_int_equal(probe(), 0);
}

/* A vmlinux that is a FIFO, a link to /dev/zero or 100 MB: no BTF, no wait, and none of it
 * read (the 100 MB one is refused by its stated size, over KERNEL_BTF_MAX). */
static void test_hostile_btf(void **state) {
        char path[300];
        write_btf(WITH_FLIPS | WITH_TP | WITH_ITER);
        snprintf(path, sizeof(path), "%s/sys/kernel/btf/vmlinux", root);
        for (int kind = 0; kind < _HOSTILE_MAX; kind++) {
                hostile_make(path, "", kind);
                uint64_t mark = hostile_begin();
                assert_int_equal(probe() & KERNEL_FEATURE_BTF, 0);
                hostile_end(mark);
        }
        write_btf(WITH_FLIPS | WITH_TP | WITH_ITER);
        assert_true(probe() & KERNEL_FEATURE_BTF);
}

static void test_parse(void **state) {
        unsigned bits = 99;
        const char *bad = NULL;
        assert_int_equal(kernel_features_parse("btf,task-iter", &bits, &bad), 0);
        assert_int_equal(bits, KERNEL_FEATURE_BTF | KERNEL_FEATURE_TASK_ITER);
        assert_int_equal(kernel_features_parse("", &bits, &bad), 0);
        assert_int_equal(bits, 0);
        const char *text = "wakee-flips,bogus,btf";
        assert_int_equal(kernel_features_parse(text, &bits, &bad), -EINVAL);
        assert_ptr_equal(bad, text + strlen("wakee-flips,"));
        assert_int_equal(kernel_features_parse("btfx", &bits, &bad), -EINVAL);
        for (unsigned b = 0; b < 6; b++) {
                const char *name = kernel_feature_name(1U << b);
                assert_non_null(name);
                assert_int_equal(kernel_features_parse(name, &bits, NULL), 0);
                assert_int_equal(bits, 1U << b);
        }
        assert_null(kernel_feature_name(KERNEL_FEATURES_PROBED));
}

static void test_describe(void **state) {
        _cleanup_free_ char *all = NULL, *no_iter = NULL, *none = NULL;
        unsigned every = KERNEL_FEATURE_BTF | KERNEL_FEATURE_TP_BTF | KERNEL_FEATURE_TASK_ITER |
                         KERNEL_FEATURE_WAKEE_FLIPS | KERNEL_FEATURE_BPF_STATS |
                         KERNEL_FEATURE_TRACEPOINT;
        assert_int_equal(kernel_features_describe(every, &all), 0);
        assert_string_equal(all, "kernel offers btf, tp-btf, task-iter, wakee-flips, bpf-stats, "
                                 "tracepoint");
        assert_int_equal(kernel_features_describe(every & ~KERNEL_FEATURE_TASK_ITER, &no_iter), 0);
        assert_non_null(strstr(no_iter, "; no BPF task iterator: the perf sampler instead of BPF"));
        assert_null(strstr(no_iter, "task-iter"));
        assert_int_equal(kernel_features_describe(0, &none), 0);
        assert_non_null(strstr(none, "none of the probed features"));
        assert_non_null(strstr(none, "wake graph's own degree"));
        assert_non_null(strstr(none, "cost is not measured"));
}

/* The running kernel: where it has BTF, the sampler's BTF features are found in it. */
static void test_running_kernel(void **state) {
        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
                skip();
        unsigned have = 0;
        assert_int_equal(kernel_features_probe(NULL, NULL, &have), 0);
        assert_int_equal(have & KERNEL_FEATURES_BPF_SAMPLER, KERNEL_FEATURES_BPF_SAMPLER);
        assert_true(have & KERNEL_FEATURE_WAKEE_FLIPS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_everything, setup, teardown),
                cmocka_unit_test_setup_teardown(test_each_missing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fields_in_anonymous_struct, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_or_broken_btf, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hostile_btf, setup, teardown),
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_describe),
                cmocka_unit_test(test_running_kernel),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
