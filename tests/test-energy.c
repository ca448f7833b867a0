/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/energy.c: state weights (table, overrides, exit-latency
 * defaults), the estimate's arithmetic on synthetic stats and on a sampled
 * fixture, and the RAPL reader on tests/fixtures/idle-rapl copied to a
 * temporary directory (package sums, subzones and psys not counted twice,
 * wraparound at max_energy_range_uj). This VM has no RAPL: the live check
 * only asserts that its absence is reported as -ENOENT.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "energy.h"
#include "macro.h"

typedef struct Ctx {
        char dir[PATH_MAX];
} Ctx;

static int copy_fixture(const char *name, Ctx *c) {
        const char *src = getenv("PLACED_SRC");
        char from[PATH_MAX];
        snprintf(from, sizeof(from), "%s/tests/fixtures/%s/.", src && *src ? src : ".", name);
        snprintf(c->dir, sizeof(c->dir), "/tmp/placed-energy-XXXXXX");
        if (!mkdtemp(c->dir))
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                execlp("cp", "cp", "-a", from, c->dir, (char *)NULL);
                _exit(127);
        }
        int status;
        return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                               WEXITSTATUS(status) == 0
                       ? 0
                       : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int setup_rapl(void **state) {
        Ctx *c = calloc(1, sizeof(*c));
        if (!c || copy_fixture("idle-rapl", c) < 0)
                return -1;
        *state = c;
        return 0;
}

static int teardown(void **state) {
        Ctx *c = *state;
        nftw(c->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(c);
        return 0;
}

static void set_energy(const Ctx *c, const char *zone, uint64_t uj) {
        char path[PATH_MAX + 128];
        snprintf(path, sizeof(path), "%s/sys/class/powercap/%s/energy_uj", c->dir, zone);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "%" PRIu64 "\n", uj);
        assert_int_equal(fclose(f), 0);
}

static void test_weights(void **state) {
        EnergyModel m;
        energy_model_init(&m);
        assert_float_equal(energy_state_weight(&m, "POLL", 0), 0.9, 1e-12);
        assert_float_equal(energy_state_weight(&m, "haltpoll idle", 1), 0.3, 1e-12);
        assert_float_equal(energy_state_weight(&m, "c6", 133), 0.05, 1e-12);
        /* Unknown names: by exit latency, deeper never heavier. */
        double prev = 1.0;
        const uint64_t lat[] = { 0, 1, 2, 3, 20, 21, 100, 101, 5000 };
        for (size_t i = 0; i < ELEMENTSOF(lat); i++) {
                double w = energy_state_weight(&m, "MYSTERY", lat[i]);
                assert_true(w > 0 && w <= prev);
                prev = w;
        }
        assert_true(energy_state_weight(&m, "MYSTERY", 0) > energy_state_weight(&m, "X", 5000));

        assert_int_equal(energy_model_set_weight(&m, "C6", 0.01), 1);
        assert_int_equal(energy_model_set_weight(&m, "c6", 0.02), 0);
        assert_float_equal(energy_state_weight(&m, "C6", 133), 0.02, 1e-12);
        assert_int_equal(energy_model_set_weight(&m, "C1", 1.5), -EINVAL);
        assert_int_equal(energy_model_set_weight(&m, "", 0.5), -EINVAL);
        for (unsigned i = 1; i < ENERGY_MAX_OVERRIDES; i++) {
                char name[16];
                snprintf(name, sizeof(name), "S%u", i);
                assert_int_equal(energy_model_set_weight(&m, name, 0.5), 1);
        }
        assert_int_equal(energy_model_set_weight(&m, "ONEMORE", 0.5), -ENOSPC);
}

static void test_estimate_arithmetic(void **state) {
        EnergyModel m;
        energy_model_init(&m);
        m.wakeup_cost_us = 20;
        m.watts_per_cpu = 4.0;

        IdleCpu ic = { .cpu = 0, .n_states = 3 };
        snprintf(ic.states[0].name, IDLE_NAME_MAX, "POLL");
        snprintf(ic.states[1].name, IDLE_NAME_MAX, "C1");
        snprintf(ic.states[2].name, IDLE_NAME_MAX, "C6");
        ic.states[1].exit_latency_us = 2;
        ic.states[2].exit_latency_us = 133;
        IdleCpuStats st = { .cpu = 0,
                            .valid = true,
                            .n_states = 3,
                            .busy_frac = 0.25,
                            .other_idle_frac = 0.05,
                            .wakeups_per_sec = 1000 };
        st.state_frac[0] = 0.1;
        st.state_frac[1] = 0.2;
        st.state_frac[2] = 0.4;
        double want = 0.25 + 0.05 * 0.3 + 0.1 * 0.9 + 0.2 * 0.3 + 0.4 * 0.05 + 1000 * 20e-6;
        assert_float_equal(energy_estimate_cpu(&m, &ic, &st), want, 1e-12);

        /* Deep sleep is cheaper than the same idle time polling. */
        IdleCpuStats deep = st, poll = st;
        deep.state_frac[0] = 0, deep.state_frac[2] = 0.5;
        poll.state_frac[0] = 0.5, poll.state_frac[2] = 0;
        assert_true(energy_estimate_cpu(&m, &ic, &deep) < energy_estimate_cpu(&m, &ic, &poll));

        st.valid = false;
        assert_true(energy_estimate_cpu(&m, &ic, &st) < 0);
}

static void test_estimate_sampled(void **state) {
        const char *src = getenv("PLACED_SRC");
        char root[PATH_MAX];
        snprintf(root, sizeof(root), "%s/tests/fixtures/idle-big32", src && *src ? src : ".");
        _cleanup_(idle_sampler_freep) IdleSampler *s = NULL;
        assert_int_equal(idle_sampler_new(root, NULL, &s), 0);
        assert_int_equal(idle_sampler_refresh(s, 1), 0);

        EnergyModel m;
        energy_model_init(&m);
        m.watts_per_cpu = 2.5;
        IdleCpuStats stats[32];
        for (unsigned cpu = 0; cpu < 32; cpu++) {
                /* Busy cpu/32; the rest all in the deepest state; 100 wakeups/s. */
                stats[cpu] = (IdleCpuStats){ .cpu = (int)cpu,
                                             .valid = cpu % 2 == 0,
                                             .n_states = 3,
                                             .busy_frac = cpu / 32.0,
                                             .wakeups_per_sec = 100 };
                stats[cpu].state_frac[2] = 1.0 - cpu / 32.0;
        }
        EnergyEstimate e;
        assert_int_equal(energy_estimate(&m, s, stats, 32, &e), 1);
        assert_int_equal(e.n_cpus, 16);
        double want = 0;
        for (unsigned cpu = 0; cpu < 32; cpu += 2)
                want += cpu / 32.0 + (1.0 - cpu / 32.0) * 0.05 + 100 * 10e-6;
        assert_float_equal(e.ace, want, 1e-9);
        assert_float_equal(e.watts, want * 2.5, 1e-9);

        for (unsigned cpu = 0; cpu < 32; cpu++)
                stats[cpu].valid = false;
        assert_int_equal(energy_estimate(&m, s, stats, 32, &e), 0);
        assert_float_equal(e.ace, 0, 0);
}

static void test_rapl_fixture(void **state) {
        Ctx *c = *state;
        _cleanup_(energy_rapl_freep) EnergyRapl *r = NULL;
        assert_int_equal(energy_rapl_open(c->dir, &r), 0);
        assert_int_equal(energy_rapl_n_zones(r), 4); /* "intel-rapl" itself is no zone */
        const EnergyRaplZone *z0 = energy_rapl_zone(r, 0), *sub = energy_rapl_zone(r, 1);
        assert_string_equal(z0->zone, "intel-rapl:0");
        assert_string_equal(z0->name, "package-0");
        assert_true(z0->top_level);
        assert_string_equal(sub->name, "core");
        assert_false(sub->top_level);
        assert_null(energy_rapl_zone(r, 4));

        double w = -1;
        assert_int_equal(energy_rapl_refresh(r, 10 * USEC_PER_SEC, &w), 0);
        assert_float_equal(w, -1, 0); /* untouched without a delta */

        /* Over 2 s: package-0 +6 J, package-1 wraps (+1.32885 J), core +3 J and
         * psys +50 J must not count (subzone, platform). */
        uint64_t max1 = energy_rapl_zone(r, 2)->max_energy_range_uj;
        uint64_t e1 = energy_rapl_zone(r, 2)->energy_uj;
        set_energy(c, "intel-rapl:0", 1000000000 + 6000000);
        set_energy(c, "intel-rapl:0:0", 500000000 + 3000000);
        set_energy(c, "intel-rapl:1", 1000000);
        set_energy(c, "intel-rapl:2", 77000000 + 50000000);
        assert_int_equal(energy_rapl_refresh(r, 12 * USEC_PER_SEC, &w), 1);
        uint64_t wrapped = max1 - e1 + 1000000;
        assert_int_equal(energy_rapl_zone(r, 2)->delta_uj, wrapped);
        assert_int_equal(energy_rapl_zone(r, 1)->delta_uj, 3000000);
        assert_float_equal(w, (6000000.0 + (double)wrapped) / 2e6, 1e-9);
}

static void test_rapl_delta(void **state) {
        assert_int_equal(energy_rapl_delta_uj(10, 25, 100), 15);
        assert_int_equal(energy_rapl_delta_uj(90, 5, 100), 15);
        assert_int_equal(energy_rapl_delta_uj(90, 5, 0), 0);    /* range unknown */
        assert_int_equal(energy_rapl_delta_uj(200, 5, 100), 0); /* not a wrap: a reset */
}

static void test_rapl_absent(void **state) {
        const char *src = getenv("PLACED_SRC");
        char root[PATH_MAX];
        snprintf(root, sizeof(root), "%s/tests/fixtures/idle-vm2", src && *src ? src : ".");
        EnergyRapl *r = (EnergyRapl *)0x1;
        int k = energy_rapl_open(root, &r);
        assert_int_equal(k, -ENOENT);
        assert_ptr_equal(r, (EnergyRapl *)0x1);

        /* Live: either RAPL works, or its absence is -ENOENT (this VM). */
        r = NULL;
        k = energy_rapl_open("/", &r);
        assert_true(k == 0 || k == -ENOENT);
        if (k == 0) {
                double w;
                int q = energy_rapl_refresh(r, 1, &w);
                assert_true(q == 0 || q == -EACCES);
                energy_rapl_free(r);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_weights),
                cmocka_unit_test(test_estimate_arithmetic),
                cmocka_unit_test(test_estimate_sampled),
                cmocka_unit_test_setup_teardown(test_rapl_fixture, setup_rapl, teardown),
                cmocka_unit_test(test_rapl_delta),
                cmocka_unit_test(test_rapl_absent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
