/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/cpuset.c: cpulist parsing and formatting on edge cases, the
 * set operations, a property test over random sets (format/parse round trip,
 * set algebra laws) and a fuzz loop over random and mutated cpulists.
 *
 * The random tests print their seed; PLACED_TEST_SEED=N reruns one exactly.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpuset.h"
#include "macro.h"

static uint64_t rng_state;

/* splitmix64: small, fast and the same everywhere, so a seed reproduces a run. */
static uint64_t rng_next(void) {
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static unsigned rng_below(unsigned n) {
        return (unsigned)(rng_next() % n);
}

static int setup_seed(void **state) {
        const char *env = getenv("PLACED_TEST_SEED");
        uint64_t seed = env ? strtoull(env, NULL, 0) : UINT64_C(20240601);
        rng_state = seed;
        print_message("seed %" PRIu64 " (set PLACED_TEST_SEED to override)\n", seed);
        return 0;
}

static CpuSet set_of(const char *text) {
        CpuSet s;
        assert_int_equal(cpuset_parse(text, &s), 0);
        return s;
}

static void assert_format(const CpuSet *s, const char *expected) {
        char buf[CPUSET_MAX_CPUS * 6];
        assert_int_equal(cpuset_format(s, buf, sizeof(buf)), (int)strlen(expected));
        assert_string_equal(buf, expected);
}

/* Parses text and checks the canonical form; expected NULL means the error err. */
static void check_parse(const char *text, const char *expected, int err) {
        CpuSet s, sentinel;
        memset(&sentinel, 0xa5, sizeof(sentinel));
        s = sentinel;

        print_message("parse \"%s\"\n", text);
        int r = cpuset_parse(text, &s);
        if (!expected) {
                assert_int_equal(r, err);
                assert_memory_equal(&s, &sentinel, sizeof(s)); /* ret untouched */
                return;
        }
        assert_int_equal(r, 0);
        assert_format(&s, expected);
}

static void test_parse_edges(void **state) {
        check_parse("", "", 0);
        check_parse("\n", "", 0);
        check_parse("  \t\n", "", 0);
        check_parse("0", "0", 0);
        check_parse("0-0", "0", 0);
        check_parse("0\n", "0", 0);
        check_parse(" 0-3 \n", "0-3", 0);
        check_parse("0-3,8,10-11", "0-3,8,10-11", 0);
        check_parse("3,2,1,0", "0-3", 0);
        check_parse("0-3,2-5", "0-5", 0);
        check_parse("0-15:4", "0,4,8,12", 0);
        check_parse("0-15:1", "0-15", 0);
        check_parse("1-7:3", "1,4,7", 0);
        check_parse("4095", "4095", 0);
        check_parse("0-4095", "0-4095", 0);
        check_parse("007", "7", 0);

        check_parse("1-0", NULL, -EINVAL);
        check_parse("0-", NULL, -EINVAL);
        check_parse("-1", NULL, -EINVAL);
        check_parse(",", NULL, -EINVAL);
        check_parse("0,,1", NULL, -EINVAL);
        check_parse("0,", NULL, -EINVAL);
        check_parse(",0", NULL, -EINVAL);
        check_parse("a", NULL, -EINVAL);
        check_parse("0 1", NULL, -EINVAL);
        check_parse("0\n1", NULL, -EINVAL);
        check_parse("0-3:0", NULL, -EINVAL);
        check_parse("0-3:", NULL, -EINVAL);
        check_parse("0:2", NULL, -EINVAL);
        check_parse("0x10", NULL, -EINVAL);
        check_parse("+1", NULL, -EINVAL);
        check_parse("0- 3", NULL, -EINVAL);
        check_parse("0 -3", NULL, -EINVAL);
        check_parse("1--2", NULL, -EINVAL);
        check_parse("4096", NULL, -ERANGE);
        check_parse("0-4096", NULL, -ERANGE);
        check_parse("99999999999999999999999999", NULL, -ERANGE);
        check_parse("18446744073709551616", NULL, -ERANGE);
        check_parse("0-18446744073709551615", NULL, -ERANGE);
}

static void test_format(void **state) {
        CpuSet s;
        char buf[16];

        cpuset_zero(&s);
        assert_format(&s, "");
        cpuset_set(&s, 5);
        assert_format(&s, "5");
        cpuset_set(&s, 6);
        assert_format(&s, "5-6");
        cpuset_set(&s, 0);
        cpuset_set(&s, 63);
        cpuset_set(&s, 64);
        cpuset_set(&s, 4095);
        assert_format(&s, "0,5-6,63-64,4095");

        /* Too small: -ENOBUFS and a NUL-terminated prefix of whole items. */
        assert_int_equal(cpuset_format(&s, buf, 0), -ENOBUFS);
        memset(buf, 'x', sizeof(buf));
        assert_int_equal(cpuset_format(&s, buf, 1), -ENOBUFS);
        assert_string_equal(buf, "");
        assert_int_equal(cpuset_format(&s, buf, 5), -ENOBUFS);
        assert_string_equal(buf, "0");
        assert_int_equal(cpuset_format(&s, buf, 16), -ENOBUFS);
        assert_string_equal(buf, "0,5-6,63-64");
        /* Exactly enough: length 16 needs 17 bytes. */
        char exact[17];
        assert_int_equal(cpuset_format(&s, exact, sizeof(exact)), 16);
        assert_string_equal(exact, "0,5-6,63-64,4095");
        assert_int_equal(cpuset_format(&s, exact, 16), -ENOBUFS);

        _cleanup_free_ char *text = NULL;
        assert_int_equal(cpuset_to_string(&s, &text), 0);
        assert_string_equal(text, "0,5-6,63-64,4095");
}

static void test_operations(void **state) {
        CpuSet a = set_of("0-7,64,100-200"), b = set_of("4-11,100"), r;

        assert_int_equal(cpuset_count(&a), 8 + 1 + 101);
        assert_false(cpuset_is_empty(&a));
        assert_true(cpuset_is_empty((CpuSet[]){ set_of("") }));
        cpuset_and(&r, &a, &b);
        assert_format(&r, "4-7,100");
        cpuset_or(&r, &a, &b);
        assert_format(&r, "0-11,64,100-200");
        cpuset_andnot(&r, &a, &b);
        assert_format(&r, "0-3,64,101-200");
        assert_true(cpuset_intersects(&a, &b));
        assert_false(cpuset_intersects(&r, &b));
        assert_true(cpuset_is_subset((CpuSet[]){ set_of("5,150") }, &a));
        assert_false(cpuset_is_subset(&b, &a));
        assert_true(cpuset_equal(&a, (CpuSet[]){ set_of("100-200,0-7,64") }));
        assert_false(cpuset_equal(&a, &b));

        assert_int_equal(cpuset_first(&a), 0);
        assert_int_equal(cpuset_last(&a), 200);
        assert_int_equal(cpuset_next(&a, 8), 64);
        assert_int_equal(cpuset_next(&a, 64), 64);
        assert_int_equal(cpuset_next(&a, 65), 100);
        assert_int_equal(cpuset_next(&a, 201), -1);
        assert_int_equal(cpuset_next(&a, -5), 0);
        assert_int_equal(cpuset_next(&a, CPUSET_MAX_CPUS), -1);
        assert_int_equal(cpuset_first((CpuSet[]){ set_of("") }), -1);
        assert_int_equal(cpuset_last((CpuSet[]){ set_of("") }), -1);
        assert_int_equal(cpuset_last((CpuSet[]){ set_of("4095") }), 4095);

        /* Out-of-range CPUs are ignored, never written outside the bitmap. */
        r = set_of("");
        cpuset_set(&r, -1);
        cpuset_set(&r, CPUSET_MAX_CPUS);
        assert_true(cpuset_is_empty(&r));
        assert_false(cpuset_isset(&a, -1));
        assert_false(cpuset_isset(&a, CPUSET_MAX_CPUS));
        cpuset_clear(&a, 64);
        assert_false(cpuset_isset(&a, 64));
        cpuset_clear(&a, CPUSET_MAX_CPUS);

        unsigned n = 0;
        int prev = -1;
        CPUSET_FOREACH (cpu, &a) {
                assert_true(cpu > prev);
                assert_true(cpuset_isset(&a, cpu));
                prev = cpu;
                n++;
        }
        assert_int_equal(n, cpuset_count(&a));
}

static void test_read_file(void **state) {
        char path[] = "/tmp/test-cpuset-XXXXXX";
        int fd = mkstemp(path);
        CpuSet s;

        assert_true(fd >= 0);
        assert_int_equal(cpuset_read_file(path, &s), 0); /* empty file = empty set */
        assert_true(cpuset_is_empty(&s));
        assert_int_equal(write(fd, "0-3,7\n", 6), 6);
        assert_int_equal(cpuset_read_file(path, &s), 0);
        assert_format(&s, "0-3,7");
        assert_int_equal(write(fd, "garbage\n", 8), 8); /* only the first line counts */
        assert_int_equal(cpuset_read_file(path, &s), 0);
        assert_format(&s, "0-3,7");
        assert_int_equal(ftruncate(fd, 0), 0);
        assert_int_equal(pwrite(fd, "x\n", 2, 0), 2);
        assert_int_equal(cpuset_read_file(path, &s), -EINVAL);
        close(fd);
        unlink(path);
        assert_int_equal(cpuset_read_file(path, &s), -ENOENT);
}

/* A random set: empty, sparse, dense, runs, or the edges of the bitmap. */
static CpuSet random_set(void) {
        CpuSet s;
        cpuset_zero(&s);
        unsigned shape = rng_below(6), limit = 1 + rng_below(CPUSET_MAX_CPUS);
        switch (shape) {
        case 0:
                break;
        case 1: /* sparse */
                for (unsigned i = rng_below(20); i > 0; i--)
                        cpuset_set(&s, (int)rng_below(limit));
                break;
        case 2: /* dense */
                for (int cpu = 0; cpu < (int)limit; cpu++)
                        if (rng_below(4) != 0)
                                cpuset_set(&s, cpu);
                break;
        case 3: /* runs */
                for (unsigned i = rng_below(10); i > 0; i--) {
                        int first = (int)rng_below(limit), len = (int)rng_below(300);
                        for (int cpu = first; cpu < first + len; cpu++)
                                cpuset_set(&s, cpu);
                }
                break;
        case 4: /* word edges */
                for (unsigned i = rng_below(12); i > 0; i--)
                        cpuset_set(&s,
                                   (int)(rng_below(CPUSET_WORDS) * 64 + (rng_below(2) ? 63 : 0)));
                break;
        default: /* random bits */
                for (size_t w = 0; w < CPUSET_WORDS; w++)
                        s.bits[w] = rng_below(3) ? rng_next() & rng_next() : 0;
                break;
        }
        return s;
}

static void check_algebra(const CpuSet *a, const CpuSet *b) {
        CpuSet and, or, diff, x;

        cpuset_and(&and, a, b);
        cpuset_or(& or, a, b);
        cpuset_andnot(&diff, a, b);
        assert_int_equal(cpuset_count(& or) + cpuset_count(&and),
                         cpuset_count(a) + cpuset_count(b));
        assert_true(cpuset_is_subset(&and, a) && cpuset_is_subset(&and, b));
        assert_true(cpuset_is_subset(a, & or) && cpuset_is_subset(b, & or));
        assert_false(cpuset_intersects(&diff, b));
        cpuset_or(&x, &diff, &and); /* (a \ b) | (a & b) = a */
        assert_true(cpuset_equal(&x, a));
        assert_int_equal(cpuset_intersects(a, b), !cpuset_is_empty(&and));
        assert_int_equal(cpuset_is_subset(a, b), cpuset_equal(&and, a));
        cpuset_and(&x, b, a); /* commutative */
        assert_true(cpuset_equal(&x, &and));
        cpuset_or(&x, b, a);
        assert_true(cpuset_equal(&x, & or));
        cpuset_and(&x, a, a); /* aliasing ret with an input */
        assert_true(cpuset_equal(&x, a));
        x = *a;
        cpuset_andnot(&x, &x, b);
        assert_true(cpuset_equal(&x, &diff));
}

static void test_properties(void **state) {
        for (int i = 0; i < 4000; i++) {
                CpuSet a = random_set(), b = random_set(), back;
                _cleanup_free_ char *text = NULL;

                assert_int_equal(cpuset_to_string(&a, &text), 0);
                assert_int_equal(cpuset_parse(text, &back), 0);
                assert_true(cpuset_equal(&a, &back));

                /* The exact length fits; one byte less does not. */
                size_t len = strlen(text);
                char *buf = malloc(len + 1);
                assert_non_null(buf);
                assert_int_equal(cpuset_format(&a, buf, len + 1), (int)len);
                assert_string_equal(buf, text);
                if (len > 0)
                        assert_int_equal(cpuset_format(&a, buf, len), -ENOBUFS);
                free(buf);

                unsigned n = 0;
                CPUSET_FOREACH (cpu, &a) {
                        n++;
                }
                assert_int_equal(n, cpuset_count(&a));
                assert_int_equal(cpuset_is_empty(&a), n == 0);
                check_algebra(&a, &b);
        }
}

/* Either an error with ret untouched, or a set whose canonical form re-parses to itself. */
static void check_fuzz_input(const char *text) {
        CpuSet s, sentinel, again;
        memset(&sentinel, 0x5a, sizeof(sentinel));
        s = sentinel;

        int r = cpuset_parse(text, &s);
        if (r < 0) {
                assert_true(r == -EINVAL || r == -ERANGE);
                assert_memory_equal(&s, &sentinel, sizeof(s));
                return;
        }
        assert_int_equal(r, 0);
        _cleanup_free_ char *canon = NULL;
        assert_int_equal(cpuset_to_string(&s, &canon), 0);
        assert_int_equal(cpuset_parse(canon, &again), 0);
        assert_true(cpuset_equal(&s, &again));
}

static void test_fuzz(void **state) {
        static const char alphabet[] = "0123456789-,: \n\t:x";
        char buf[256];
        unsigned parsed = 0;

        for (int i = 0; i < 200000; i++) {
                size_t len;
                if (i % 2 == 0) { /* random bytes, biased towards cpulist characters */
                        len = rng_below(sizeof(buf));
                        for (size_t j = 0; j < len; j++)
                                buf[j] = rng_below(4) ? alphabet[rng_below(sizeof(alphabet) - 1)]
                                                      : (char)(1 + rng_below(255));
                } else { /* a valid cpulist with a few mutations */
                        CpuSet s = random_set();
                        int n = cpuset_format(&s, buf, sizeof(buf));
                        len = n < 0 ? strlen(buf) : (size_t)n;
                        for (unsigned m = rng_below(4); m > 0 && len > 0; m--) {
                                size_t at = rng_below((unsigned)len);
                                switch (rng_below(3)) {
                                case 0: /* replace */
                                        buf[at] = alphabet[rng_below(sizeof(alphabet) - 1)];
                                        break;
                                case 1: /* delete */
                                        memmove(buf + at, buf + at + 1, len - at - 1);
                                        len--;
                                        break;
                                default: /* insert */
                                        if (len + 1 < sizeof(buf)) {
                                                memmove(buf + at + 1, buf + at, len - at);
                                                buf[at] = alphabet[rng_below(sizeof(alphabet) - 1)];
                                                len++;
                                        }
                                        break;
                                }
                        }
                }
                buf[len] = '\0';
                CpuSet probe;
                parsed += cpuset_parse(buf, &probe) == 0;
                check_fuzz_input(buf);
        }
        /* The generator must reach both outcomes, or the loop tests nothing. */
        print_message("fuzz: %u of 200000 inputs parsed\n", parsed);
        assert_true(parsed > 1000);
        assert_true(parsed < 199000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_edges), cmocka_unit_test(test_format),
                cmocka_unit_test(test_operations),  cmocka_unit_test(test_read_file),
                cmocka_unit_test(test_properties),  cmocka_unit_test(test_fuzz),
        };
        return cmocka_run_group_tests(tests, setup_seed, NULL);
}
