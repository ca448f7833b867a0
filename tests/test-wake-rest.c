/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/wake-rest.c, from tables: each case is a sequence of events
 * (a tick, needed or not; a task created) at given times, and after each,
 * whether the wake sampler rests and why. The configuration is placed's
 * default: rest after 2 s of quiet, look every 10 s.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "macro.h"
#include "wake-rest.h"

#define MS(x) ((uint64_t)(x)*USEC_PER_MSEC)

static const WakeRestConfig cfg = { .after_usec = MS(2000), .look_usec = MS(10000) };

typedef enum Op { END, TICK, NEEDED, CREATED } Op;

typedef struct Step {
        Op op;
        uint64_t at;     /* ms */
        bool resting;    /* after it */
        WakeRestWhy why; /* a tick's (CREATED: unused) */
        bool changed;    /* CREATED's return: it rested and watches from now */
} Step;

typedef struct Case {
        const char *what;
        const WakeRestConfig *cfg;
        Step steps[16];
} Case;

static const WakeRestConfig never = { .after_usec = 0, .look_usec = MS(10000) };

static const Case cases[] = {
        { "quiet from the start: rests at the first tick 2 s after it, looks 10 s later, rests "
          "again 2 s into the look",
          &cfg,
          { { TICK, 1000, false, WAKE_REST_QUIET, false },
            { TICK, 1999, false, WAKE_REST_QUIET, false },
            { TICK, 2000, true, WAKE_REST_RESTING, false },
            { TICK, 5000, true, WAKE_REST_RESTING, false },
            { TICK, 11999, true, WAKE_REST_RESTING, false },
            { TICK, 12000, false, WAKE_REST_LOOK, false },
            { TICK, 13000, false, WAKE_REST_QUIET, false },
            { TICK, 14000, true, WAKE_REST_RESTING, false } } },
        { "something needed keeps it watching; the quiet counts from the last tick that needed it",
          &cfg,
          { { NEEDED, 1000, false, WAKE_REST_NEEDED, false },
            { NEEDED, 2500, false, WAKE_REST_NEEDED, false },
            { TICK, 4000, false, WAKE_REST_QUIET, false },
            { TICK, 4500, true, WAKE_REST_RESTING, false },
            { NEEDED, 5000, false, WAKE_REST_NEEDED, false },
            { TICK, 6000, false, WAKE_REST_QUIET, false },
            { TICK, 7000, true, WAKE_REST_RESTING, false } } },
        { "a task created wakes a resting sampler at once and holds it awake for 2 s; while "
          "watching it only restarts the quiet",
          &cfg,
          { { TICK, 2000, true, WAKE_REST_RESTING, false },
            { CREATED, 3000, false, 0, true },
            { TICK, 4000, false, WAKE_REST_QUIET, false },
            { CREATED, 4500, false, 0, false },
            { TICK, 6000, false, WAKE_REST_QUIET, false },
            { TICK, 6500, true, WAKE_REST_RESTING, false } } },
        { "wake_rest_ms = 0: never rests",
          &never,
          { { TICK, 1000, false, WAKE_REST_NEVER, false },
            { TICK, 60000, false, WAKE_REST_NEVER, false },
            { CREATED, 61000, false, 0, false },
            { TICK, 600000, false, WAKE_REST_NEVER, false } } },
};

static void test_table(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const Case *c = &cases[i];
                WakeRest w;
                print_message("case %zu: %s\n", i, c->what);
                wake_rest_start(&w, 0);
                for (const Step *s = c->steps; s->op != END; s++) {
                        if (s->op == CREATED) {
                                assert_int_equal(wake_rest_task_created(&w, MS(s->at)), s->changed);
                                assert_int_equal(w.resting, s->resting);
                                continue;
                        }
                        WakeRestWhy why = _WAKE_REST_WHY_MAX;
                        bool r = wake_rest_tick(&w, c->cfg, s->op == NEEDED, MS(s->at), &why);
                        print_message("  %s at %llu ms: %s (%s)\n",
                                      s->op == NEEDED ? "needed" : "tick",
                                      (unsigned long long)s->at, r ? "rests" : "watches",
                                      wake_rest_why_to_string(why));
                        assert_int_equal(r, s->resting);
                        assert_int_equal(w.resting, s->resting);
                        assert_int_equal(why, s->why);
                }
        }
}

/* Each rest is counted, a look is not a rest; the names and words cover every reason. */
static void test_counts_and_names(void **state) {
        WakeRest w;
        wake_rest_start(&w, 0);
        for (uint64_t t = 0; t <= 60000; t += 1000)
                (void)wake_rest_tick(&w, &cfg, false, MS(t), NULL);
        /* Rests at 2 s, looks at 12 s, rests at 14 s, looks at 24 s, ...: 5 rests by 60 s. */
        assert_int_equal(w.rests, 5);
        for (WakeRestWhy y = 0; y < _WAKE_REST_WHY_MAX; y++) {
                assert_non_null(wake_rest_why_to_string(y));
                assert_non_null(wake_rest_why_words(y));
        }
        assert_null(wake_rest_why_to_string(_WAKE_REST_WHY_MAX));
        assert_null(wake_rest_why_words(_WAKE_REST_WHY_MAX));
}

/* What wants wakeups: a group waiting to be measured, one on trial (not when advising). */
static void test_needed(void **state) {
        Plan *plan;
        assert_true(wake_rest_needed(NULL, false)); /* nothing decided yet */
        assert_int_equal(plan_new(3, 2, &plan), 0);
        plan->n_groups = 3; /* room for three, none yet */
        for (unsigned i = 0; i < 3; i++)
                plan->groups[i].id = i + 1;
        plan->groups[0].managed = true;
        plan->groups[0].trial.verdict = TRIAL_KEPT; /* watched by its run counts */
        plan->groups[1].trial.verdict = TRIAL_REVERTED;
        assert_false(wake_rest_needed(plan, false));
        plan->groups[2].waiting = true;
        assert_true(wake_rest_needed(plan, false));
        assert_true(wake_rest_needed(plan, true));
        plan->groups[2].waiting = false;
        plan->groups[1].trial.verdict = TRIAL_RUNNING;
        assert_true(wake_rest_needed(plan, false));
        assert_false(wake_rest_needed(plan, true)); /* advising: no trial runs */
        plan_free(plan);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_counts_and_names),
                cmocka_unit_test(test_needed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
