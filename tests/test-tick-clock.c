/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/tick-clock.c, from tables: each case is a sequence of
 * events (a tick that ran, a note that was news) at given times, and after
 * each, when the next tick comes and of which kind. The configuration is
 * placed's default: a 1 s period, 100 ms quick windows, 5 quick ticks a
 * second (a burst of 10), settled ticks 3 periods apart.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "macro.h"
#include "tick-clock.h"

#define MS(x) ((uint64_t)(x)*USEC_PER_MSEC)

static const TickClockConfig cfg = {
        .period_usec = MS(1000),
        .quick_usec = MS(100),
        .quick_ticks_per_sec = 5,
        .settled_factor = 3,
};

typedef enum Op { END, TICK, QUICK_TICK, NOTE } Op;

typedef struct Step {
        Op op;
        uint64_t at;   /* ms: when the tick began (its cost is 1 ms), or the note came */
        bool wanted;   /* a tick's quick_wanted */
        bool soon;     /* its quick_soon */
        bool settled;  /* its settled */
        int ret;       /* what the call returns */
        uint64_t next; /* ms: when the next tick comes (-1: as before) */
        TickKind kind; /* and its kind */
} Step;

typedef struct Case {
        const char *name;
        Step steps[32];
} Case;

#define SAME UINT64_MAX

static const Case cases[] = {
        { "settled x3",
          { { TICK, 1000, .next = 2000, .kind = TICK_REGULAR },
            { TICK, 2000, .settled = true, .next = 5000, .kind = TICK_REGULAR },
            { TICK, 5000, .settled = true, .next = 8000, .kind = TICK_REGULAR },
            { TICK, 8000, .next = 9000, .kind = TICK_REGULAR } } },
        { "a note half a window in",
          /* The last tick began at 1000: no quick tick before 1050. */
          { { TICK, 1000, .next = 2000, .kind = TICK_REGULAR },
            { NOTE, 1020, .ret = 1, .next = 1050, .kind = TICK_QUICK },
            { QUICK_TICK, 1050, .next = 2000, .kind = TICK_REGULAR },
            /* Later than half a window: the note's own 10 ms delay. */
            { NOTE, 1300, .ret = 1, .next = 1310, .kind = TICK_QUICK },
            /* A second note before that tick does not put it off. */
            { NOTE, 1305, .ret = 0, .next = 1310, .kind = TICK_QUICK } } },
        { "a quick tick wanted, and soon",
          { { TICK, 1000, .wanted = true, .ret = 1, .next = 1101, .kind = TICK_QUICK },
            { QUICK_TICK, 1101, .wanted = true, .soon = true, .ret = 1, .next = 1152,
              .kind = TICK_QUICK },
            /* Wanted, but settled: the regular tick is still a period on. */
            { QUICK_TICK, 1152, .settled = true, .next = 2000, .kind = TICK_REGULAR } } },
        { "an empty bucket",
          /* Ten tokens, and a quarter of one back every 50 ms: quick
           * ticks 51 ms apart run out at the twelfth. */
          { { TICK, 1000, .next = 2000, .kind = TICK_REGULAR },
            { NOTE, 1050, .ret = 1, .next = 1060, .kind = TICK_QUICK },
            { QUICK_TICK, 1060, .wanted = true, .soon = true, .ret = 1, .next = 1111,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1111, .wanted = true, .soon = true, .ret = 1, .next = 1162,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1162, .wanted = true, .soon = true, .ret = 1, .next = 1213,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1213, .wanted = true, .soon = true, .ret = 1, .next = 1264,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1264, .wanted = true, .soon = true, .ret = 1, .next = 1315,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1315, .wanted = true, .soon = true, .ret = 1, .next = 1366,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1366, .wanted = true, .soon = true, .ret = 1, .next = 1417,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1417, .wanted = true, .soon = true, .ret = 1, .next = 1468,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1468, .wanted = true, .soon = true, .ret = 1, .next = 1519,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1519, .wanted = true, .soon = true, .ret = 1, .next = 1570,
              .kind = TICK_QUICK },
            { QUICK_TICK, 1570, .wanted = true, .soon = true, .ret = 1, .next = 1621,
              .kind = TICK_QUICK },
            /* 12 ticks from 10 tokens and 2.8 come back: 0.8 left. */
            { QUICK_TICK, 1621, .wanted = true, .soon = true, .ret = 0, .next = 2000,
              .kind = TICK_REGULAR },
            { NOTE, 1650, .ret = 0, .next = 2000, .kind = TICK_REGULAR },
            /* A token is back at 1660. */
            { NOTE, 1670, .ret = 1, .next = 1680, .kind = TICK_QUICK } } },
        { "a note storm never delays the regular tick",
          /* Settled: the regular tick is 3 s on. Notes bring quick ticks
           * while the bucket lasts; none puts the regular tick off. */
          { { TICK, 1000, .settled = true, .next = 4000, .kind = TICK_REGULAR },
            { NOTE, 1100, .ret = 1, .next = 1110, .kind = TICK_QUICK },
            { QUICK_TICK, 1110, .settled = true, .next = 4000, .kind = TICK_REGULAR },
            { NOTE, 3900, .ret = 1, .next = 3910, .kind = TICK_QUICK },
            { NOTE, 3905, .ret = 0, .next = 3910, .kind = TICK_QUICK },
            /* Late in the period, wanted again: still the regular tick first. */
            { QUICK_TICK, 3910, .settled = true, .wanted = true, .next = 4000,
              .kind = TICK_REGULAR },
            { NOTE, 3995, .ret = 0, .next = 4000, .kind = TICK_REGULAR },
            /* A quick tick that is not settled brings it forward, never later. */
            { TICK, 4000, .settled = true, .next = 7000, .kind = TICK_REGULAR },
            { NOTE, 4100, .ret = 1, .next = 4110, .kind = TICK_QUICK },
            { QUICK_TICK, 4110, .next = 5110, .kind = TICK_REGULAR },
            { NOTE, 4200, .ret = 1, .next = 4210, .kind = TICK_QUICK },
            { QUICK_TICK, 4210, .next = 5110, .kind = TICK_REGULAR },
            { TICK, 5110, .next = 6110, .kind = TICK_REGULAR } } },
        { "no quick ticks",
          { { TICK, 1000, .wanted = true, .next = 2000, .kind = TICK_REGULAR } } },
};

static void run_case(const Case *c, const TickClockConfig *config) {
        TickClock clock;
        TickClockNext next;
        tick_clock_start(&clock, config, 0, &next);
        assert_int_equal(next.delay_usec, config->period_usec);
        assert_int_equal(next.kind, TICK_REGULAR);
        for (const Step *s = c->steps; s->op != END; s++) {
                uint64_t now = MS(s->at);
                int r;
                print_message("%s: step %d at %" PRIu64 " ms\n", c->name, (int)(s - c->steps),
                              s->at);
                if (s->op == NOTE) {
                        next = (TickClockNext){ 0 };
                        r = tick_clock_after_note(&clock, config, now, &next);
                        if (r > 0)
                                assert_int_equal(now + next.delay_usec, MS(s->next));
                } else {
                        TickClockInput in = { .kind = s->op == QUICK_TICK ? TICK_QUICK
                                                                          : TICK_REGULAR,
                                              .start_usec = now,
                                              .now_usec = now + MS(1),
                                              .quick_wanted = s->wanted,
                                              .quick_soon = s->soon,
                                              .settled = s->settled };
                        r = tick_clock_after_tick(&clock, config, &in, &next);
                        /* A regular tick is armed from the tick's start, a quick one from now. */
                        assert_int_equal((r ? in.now_usec : in.start_usec) + next.delay_usec,
                                         MS(s->next));
                        assert_int_equal(next.kind, s->kind);
                }
                assert_int_equal(r, s->ret);
                assert_int_equal(clock.next_usec, MS(s->next));
                assert_int_equal(clock.next_kind, s->kind);
        }
}

static void test_cases(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases) - 1; i++)
                run_case(&cases[i], &cfg);
        TickClockConfig off = cfg;
        off.quick_usec = 0;
        run_case(&cases[ELEMENTSOF(cases) - 1], &off);
}

static void test_kind_names(void **state) {
        assert_string_equal(tick_kind_to_string(TICK_REGULAR), "regular");
        assert_string_equal(tick_kind_to_string(TICK_QUICK), "quick");
        assert_null(tick_kind_to_string(_TICK_KIND_MAX));
}

/* A reload's new period: the regular tick comes a new period on. */
static void test_reset_period(void **state) {
        TickClock clock;
        TickClockNext next;
        TickClockConfig c = cfg;
        tick_clock_start(&clock, &c, MS(100), &next);
        c.period_usec = MS(250);
        tick_clock_reset_period(&clock, &c, MS(500), &next);
        assert_int_equal(next.delay_usec, MS(250));
        assert_int_equal(clock.next_usec, MS(750));
        assert_int_equal(clock.next_regular_usec, MS(750));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cases),
                cmocka_unit_test(test_kind_names),
                cmocka_unit_test(test_reset_period),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
