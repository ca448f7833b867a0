/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/cpustat.c: the cpuN line parser, deltas over two reads of a
 * fixture proc/stat copied to a temporary directory and edited in between,
 * counters going backwards, CPUs disappearing, malformed input, hostile
 * files (a FIFO, /dev/zero, 100 MB), and a read-only look at the live
 * /proc/stat.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpustat.h"
#include "idle.h"
#include "macro.h"
#include "hostile.h"

typedef struct Ctx {
        char dir[PATH_MAX]; /* temp procfs root */
} Ctx;

static void write_stat(const Ctx *c, const char *text) {
        char path[PATH_MAX + 8];
        snprintf(path, sizeof(path), "%s/stat", c->dir);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
        Ctx *c = calloc(1, sizeof(*c));
        if (!c)
                return -1;
        snprintf(c->dir, sizeof(c->dir), "/tmp/placed-cpustat-XXXXXX");
        if (!mkdtemp(c->dir))
                return -1;
        *state = c;
        return 0;
}

static void write_interrupts(const Ctx *c, const char *text) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/interrupts", c->dir);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static int teardown(void **state) {
        Ctx *c = *state;
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/interrupts", c->dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/stat", c->dir);
        unlink(path);
        rmdir(c->dir);
        free(c);
        return 0;
}

static void test_parse_line(void **state) {
        int cpu = -1;
        uint64_t busy = 0, idle = 0;
        /* user nice system idle iowait irq softirq steal guest guest_nice */
        assert_int_equal(
                cpustat_parse_line("cpu3 10 2 30 400 5 6 7 8 100 100\n", &cpu, &busy, &idle), 1);
        assert_int_equal(cpu, 3);
        assert_int_equal(busy, 10 + 2 + 30 + 6 + 7 + 8); /* guest is inside user already */
        assert_int_equal(idle, 400 + 5);

        /* An old kernel with 4 fields. */
        assert_int_equal(cpustat_parse_line("cpu12 1 2 3 4", &cpu, &busy, &idle), 1);
        assert_int_equal(cpu, 12);
        assert_int_equal(busy, 6);
        assert_int_equal(idle, 4);

        cpu = 99;
        assert_int_equal(cpustat_parse_line("cpu  1 2 3 4 5 6 7 8 9 10\n", &cpu, &busy, &idle), 0);
        assert_int_equal(cpustat_parse_line("intr 1 2 3\n", &cpu, &busy, &idle), 0);
        assert_int_equal(cpu, 99); /* untouched */
        assert_int_equal(cpustat_parse_line("cpu1 1 2 3\n", &cpu, &busy, &idle), -EBADMSG);
        assert_int_equal(cpustat_parse_line("cpu1 1 x 3 4\n", &cpu, &busy, &idle), -EBADMSG);
        assert_int_equal(cpustat_parse_line("cpu1 -1 2 3 4\n", &cpu, &busy, &idle), -EBADMSG);
        assert_int_equal(cpu, 99);
}

static void test_fixture_deltas(void **state) {
        Ctx *c = *state;
        char src[PATH_MAX], text[4096];
        const char *root = getenv("PLACED_SRC");
        snprintf(src, sizeof(src), "%s/tests/fixtures/idle-vm2/proc/stat", root ? root : ".");
        FILE *f = fopen(src, "re");
        assert_non_null(f);
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = '\0';
        fclose(f);
        write_stat(c, text);

        _cleanup_(cpustat_freep) CpuStat *cs = NULL;
        assert_int_equal(cpustat_new(c->dir, &cs), 0);
        assert_int_equal(cpustat_refresh(cs), 0);
        assert_int_equal(cpustat_n_cpus(cs), 2);
        const CpuStatCpu *c1 = cpustat_cpu(cs, 1);
        assert_non_null(c1);
        assert_true(c1->present);
        assert_false(c1->has_delta);
        assert_true(cpustat_busy_frac(c1) < 0);
        assert_null(cpustat_cpu(cs, 2));

        /* The fixture's own numbers, parsed here independently. */
        uint64_t u, ni, sy, id, io, irq, si, st;
        char *line = strstr(text, "\ncpu1 ");
        assert_non_null(line);
        assert_int_equal(sscanf(line,
                                "\ncpu1 %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                                " %" SCNu64 " %" SCNu64 " %" SCNu64,
                                &u, &ni, &sy, &id, &io, &irq, &si, &st),
                         8);
        assert_int_equal(c1->busy_ticks, u + ni + sy + irq + si + st);
        assert_int_equal(c1->idle_ticks, id + io);

        /* cpu1: +25 user, +5 steal, +70 idle; cpu0 iowait goes backwards by 2. */
        char next[1024];
        const CpuStatCpu *c0 = cpustat_cpu(cs, 0);
        uint64_t busy0 = c0->busy_ticks, idle0 = c0->idle_ticks;
        snprintf(next, sizeof(next),
                 "cpu  0 0 0 0 0 0 0 0 0 0\n"
                 "cpu0 %" PRIu64 " 0 0 %" PRIu64 " 0 0 0 0 0 0\n"
                 "cpu1 %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                 " %" PRIu64 " %" PRIu64 " 0 0\n",
                 busy0 + 10, idle0 - 2, u + 25, ni, sy, id + 70, io, irq, si, st + 5);
        write_stat(c, next);
        assert_int_equal(cpustat_refresh(cs), 1);
        c1 = cpustat_cpu(cs, 1);
        assert_true(c1->has_delta);
        assert_int_equal(c1->delta_busy_ticks, 30);
        assert_int_equal(c1->delta_idle_ticks, 70);
        assert_float_equal(cpustat_busy_frac(c1), 0.3, 1e-9);
        c0 = cpustat_cpu(cs, 0);
        assert_int_equal(c0->delta_busy_ticks, 10);
        assert_int_equal(c0->delta_idle_ticks, 0); /* backwards counts as 0 */
        assert_float_equal(cpustat_busy_frac(c0), 1.0, 1e-9);
}

static void test_cpu_gone_and_errors(void **state) {
        Ctx *c = *state;
        _cleanup_(cpustat_freep) CpuStat *cs = NULL;
        assert_int_equal(cpustat_new(c->dir, &cs), 0);
        assert_int_equal(cpustat_refresh(cs), -ENOENT);

        write_stat(c, "cpu0 1 0 0 1\ncpu1 1 0 0 1\ncpu2 1 0 0 1\n");
        assert_int_equal(cpustat_refresh(cs), 0);
        write_stat(c, "cpu0 2 0 0 2\ncpu2 3 0 0 1\n");
        assert_int_equal(cpustat_refresh(cs), 1);
        assert_false(cpustat_cpu(cs, 1)->present);
        assert_false(cpustat_cpu(cs, 1)->has_delta);
        assert_true(cpustat_cpu(cs, 2)->has_delta);
        assert_int_equal(cpustat_cpu(cs, 2)->delta_busy_ticks, 2);
        /* Back again: no delta on its first read. */
        write_stat(c, "cpu0 3 0 0 3\ncpu1 5 0 0 5\ncpu2 3 0 0 1\n");
        assert_int_equal(cpustat_refresh(cs), 1);
        assert_true(cpustat_cpu(cs, 1)->present);
        assert_false(cpustat_cpu(cs, 1)->has_delta);
        /* No time passed on cpu2: no information rather than 0 % busy, and
         * no news (its figures before stand); a CPU just back, or gone, or
         * whose counters moved, is not "no news". */
        assert_true(cpustat_busy_frac(cpustat_cpu(cs, 2)) < 0);
        assert_true(cpustat_no_news(cpustat_cpu(cs, 2)));
        assert_false(cpustat_no_news(cpustat_cpu(cs, 1)));
        assert_false(cpustat_no_news(cpustat_cpu(cs, 0)));
        assert_false(cpustat_no_news(NULL));

        write_stat(c, "cpu0 3 0 0\n");
        assert_int_equal(cpustat_refresh(cs), -EBADMSG);
}

/* Interrupts per CPU for machines without cpuidle: per-CPU rows summed by
 * column (an offline CPU 1 has no column), whole-machine rows not counted. */
static void test_interrupts(void **state) {
        Ctx *c = *state;
        write_stat(c, "cpu  1 1 1 1\ncpu0 1 0 0 9\ncpu2 1 0 0 9\n");
        write_interrupts(c, "           CPU0       CPU2       \n"
                            "  1:         10          5  IO-APIC    1-edge      i8042\n"
                            "LOC:       1000       2000   Local timer interrupts\n"
                            "RES:          7          3   Rescheduling interrupts\n"
                            "ERR:          4\n"
                            "MIS:          0\n");
        _cleanup_(cpustat_freep) CpuStat *cs = NULL;
        assert_int_equal(cpustat_new(c->dir, &cs), 0);
        assert_int_equal(cpustat_refresh(cs), 0);
        assert_int_equal(cpustat_refresh_irqs(cs), 0);
        assert_int_equal(cpustat_cpu(cs, 0)->irqs, 10 + 1000 + 7);
        assert_int_equal(cpustat_cpu(cs, 2)->irqs, 5 + 2000 + 3);
        assert_false(cpustat_cpu(cs, 0)->has_irq_delta);

        write_stat(c, "cpu  1 1 1 1\ncpu0 26 0 0 84\ncpu2 1 0 0 109\n");
        write_interrupts(c, "           CPU0       CPU2       \n"
                            "  1:         10          5  IO-APIC    1-edge      i8042\n"
                            "LOC:       1400       2000   Local timer interrupts\n"
                            "RES:        107          3   Rescheduling interrupts\n"
                            "ERR:        400\n");
        assert_int_equal(cpustat_refresh(cs), 1);
        assert_int_equal(cpustat_refresh_irqs(cs), 1);
        assert_int_equal(cpustat_cpu(cs, 0)->delta_irqs, 500);
        assert_int_equal(cpustat_cpu(cs, 2)->delta_irqs, 0);
        assert_false(cpustat_cpu(cs, 1)->has_irq_delta); /* no column: offline */

        /* The figures of a CPU without idle states, over half a second. */
        IdleCpuStats st;
        assert_int_equal(idle_cpu_derive_stateless(cpustat_cpu(cs, 0), 500000, &st), 1);
        assert_true(st.valid);
        assert_int_equal(st.n_states, 0);
        assert_true(fabs(st.busy_frac - 0.25) < 1e-9);
        assert_true(fabs(st.other_idle_frac - 0.75) < 1e-9);
        assert_true(fabs(st.wakeups_per_sec - 1000.0 * 0.75) < 1e-9); /* while idle */
        assert_int_equal(idle_cpu_derive_stateless(cpustat_cpu(cs, 1), 500000, &st), 0);
        assert_false(st.valid);

        write_interrupts(c, "no header here\n");
        assert_int_equal(cpustat_refresh_irqs(cs), -EBADMSG);
}

/* Puts the hostile file of kind (hostile.h) at name in place of the file. */
static void make_hostile(const Ctx *c, const char *name, const char *good, int kind) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/%s", c->dir, name);
        hostile_make(path, good, kind);
}

/* A FIFO, /dev/zero or 100 MB in place of stat or interrupts is refused at
 * once (an error, not a wait or an endless read), and the next good read
 * finds the figures of the last good one: nothing was lost. */
static void test_hostile(void **state) {
        Ctx *c = *state;
        const char *stat1 = "cpu0 10 0 0 10\ncpu1 10 0 0 10\n";
        const char *irqs1 = "           CPU0       CPU1\n  1:         10          5  IO-APIC\n";
        _cleanup_(cpustat_freep) CpuStat *cs = NULL;
        assert_int_equal(cpustat_new(c->dir, &cs), 0);
        write_stat(c, stat1);
        write_interrupts(c, irqs1);
        assert_int_equal(cpustat_refresh(cs), 0);
        assert_int_equal(cpustat_refresh_irqs(cs), 0);

        for (int kind = 0; kind < _HOSTILE_MAX; kind++) {
                uint64_t mark = hostile_begin();
                make_hostile(c, "stat", stat1, kind);
                make_hostile(c, "interrupts", irqs1, kind);
                assert_int_equal(cpustat_refresh(cs), hostile_error[kind]);
                assert_int_equal(cpustat_refresh_irqs(cs), hostile_error[kind]);
                hostile_end(mark);
        }

        write_stat(c, "cpu0 15 0 0 15\ncpu1 10 0 0 20\n");
        write_interrupts(c, "           CPU0       CPU1\n  1:         30          6  IO-APIC\n");
        assert_int_equal(cpustat_refresh(cs), 1);
        assert_int_equal(cpustat_refresh_irqs(cs), 1);
        assert_int_equal(cpustat_cpu(cs, 0)->delta_busy_ticks, 5);
        assert_int_equal(cpustat_cpu(cs, 1)->delta_idle_ticks, 10);
        assert_int_equal(cpustat_cpu(cs, 0)->delta_irqs, 20);
        assert_int_equal(cpustat_cpu(cs, 1)->delta_irqs, 1);
}

static void test_live(void **state) {
        _cleanup_(cpustat_freep) CpuStat *cs = NULL;
        assert_int_equal(cpustat_new("/proc", &cs), 0);
        assert_int_equal(cpustat_refresh(cs), 0);
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        assert_true(cpustat_n_cpus(cs) >= (unsigned)n);
        usleep(50 * 1000);
        assert_true(cpustat_refresh(cs) >= 0);
        for (unsigned i = 0; i < cpustat_n_cpus(cs); i++) {
                const CpuStatCpu *c = cpustat_cpu(cs, i);
                double b = cpustat_busy_frac(c);
                assert_true(b <= 1.0);
                if (c->has_delta)
                        assert_true(c->busy_ticks + c->idle_ticks > 0);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_line),
                cmocka_unit_test_setup_teardown(test_fixture_deltas, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cpu_gone_and_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_interrupts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
                cmocka_unit_test(test_live),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
