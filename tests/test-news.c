/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/news.c: which notes bring a quick tick now, and which noted
 * tasks still want one after a tick, on a wake graph built from synthetic
 * batches and a plan written by hand, in the cases the notes were tuned on:
 * a new redis client, a pgbench client, a fork storm, a note between two old
 * groups, and a pair placed and then run spread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "news.h"
#include "plan.h"
#include "wake-graph.h"

#define HZ      100
#define BOOT_NS (1000 * NSEC_PER_SEC) /* CLOCK_BOOTTIME in every case */
#define OLD     (10 * HZ)             /* started 990 s ago */
#define YOUNG   (998 * HZ)            /* started 2 s ago */

typedef struct T {
        WakeGraph *graph;
        WakeBatch batch;
        uint64_t now_ns;
        Group *groups;
        unsigned n_groups;
        Plan *plan;
        News news;
        NewsView view;
        pid_t alive[8];
} T;

static T *t_new(void) {
        T *t = calloc(1, sizeof(T));
        assert_non_null(t);
        assert_int_equal(wake_graph_new(NULL, &t->graph), 0);
        t->now_ns = 100 * NSEC_PER_SEC;
        return t;
}

static void t_free(T *t) {
        group_array_free(t->groups, t->n_groups);
        plan_free(t->plan);
        wake_batch_done(&t->batch);
        wake_graph_free(t->graph);
        free(t);
}

static void t_task(T *t, pid_t tid, uint64_t start_time) {
        WakeTaskRecord rec = { .id = { .tid = tid, .start_time = start_time }, .tgid = tid };
        snprintf(rec.comm, sizeof(rec.comm), "t%d", (int)tid);
        assert_int_equal(wake_batch_add_task(&t->batch, &rec), 0);
}

static void t_edge(T *t, pid_t waker, pid_t wakee) {
        assert_int_equal(wake_batch_add_edge(&t->batch, waker, wakee, 2000), 0);
}

/* Two tasks of a past tick waking each other: an old pair. */
static void t_old_pair(T *t, pid_t a, pid_t b) {
        t_task(t, a, OLD);
        t_task(t, b, OLD);
        t_edge(t, a, b);
        t_edge(t, b, a);
}

/* Ends a second's tick: the model's groups, and a plan of them, each waiting
 * to be measured (the policy's first word on a new group). */
static void t_tick(T *t) {
        t->now_ns += NSEC_PER_SEC;
        t->batch.now_ns = t->now_ns;
        assert_int_equal(wake_graph_ingest(t->graph, &t->batch, t->now_ns), 0);
        wake_batch_reset(&t->batch);
        t->groups = group_array_free(t->groups, t->n_groups);
        t->n_groups = 0;
        assert_int_equal(wake_graph_update(t->graph, t->now_ns, &t->groups, &t->n_groups), 0);
        t->plan = plan_free(t->plan);
        assert_int_equal(plan_new(t->n_groups, 1, &t->plan), 0);
        t->plan->n_groups = t->n_groups;
        for (unsigned i = 0; i < t->n_groups; i++)
                t->plan->groups[i] = (PlanGroup){ .id = t->groups[i].id,
                                                  .class = t->groups[i].class,
                                                  .home = -1,
                                                  .waiting = true };
        qsort(t->plan->groups, t->plan->n_groups, sizeof(PlanGroup), plan_group_cmp);
        t->view = (NewsView){ .graph = t->graph,
                              .plan = t->plan,
                              .now_ns = t->now_ns,
                              .young_after = news_young_after(BOOT_NS, HZ),
                              .alive = t->alive };
}

/* The plan's entry of tid's group. */
static PlanGroup *t_plan_group(T *t, pid_t tid) {
        WakeGraphTask wt;
        assert_int_equal(wake_graph_get_task(t->graph, tid, 0, &wt), 1);
        const PlanGroup *pg = plan_find_group(t->plan, wt.group_id);
        assert_non_null(pg);
        return &t->plan->groups[pg - t->plan->groups];
}

static NewsReason t_note(T *t, pid_t waker, pid_t wakee, uint64_t ts_ns) {
        WakeNote n = { .waker = waker, .wakee = wakee, .ts_ns = ts_ns };
        return news_note(&t->news, &t->view, &n);
}

/* A quick tick's focus is the group of a and b, and no other. */
static void t_assert_focus(T *t, pid_t a, pid_t b) {
        _cleanup_free_ bool *focus = news_focus(&t->news, &t->view, t->groups, t->n_groups, false);
        assert_non_null(focus);
        for (unsigned i = 0; i < t->n_groups; i++)
                assert_int_equal(focus[i],
                                 t->groups[i].tasks[0].tid == a || t->groups[i].tasks[0].tid == b);
}

static void test_young_after(void **state) {
        assert_int_equal(news_young_after(BOOT_NS, HZ), 990 * HZ);
        assert_int_equal(news_young_after(5 * NSEC_PER_SEC, HZ), 0); /* booted 5 s ago */
        assert_int_equal(news_young_after(BOOT_NS, 0), 0);           /* no clock: all young */
        assert_true(news_task_young(YOUNG, 990 * HZ));
        assert_false(news_task_young(OLD, 990 * HZ));
        assert_true(news_task_young(0, 990 * HZ)); /* unknown: as new */
}

static void test_reason_names(void **state) {
        for (int r = 0; r < _NEWS_REASON_MAX; r++)
                assert_non_null(news_reason_to_string(r));
        assert_null(news_reason_to_string(_NEWS_REASON_MAX));
        assert_string_equal(news_reason_to_string(NEWS_PAIR_WAITING),
                            "a pair waiting to be measured");
}

/* The ring keeps a task's first note, forgets an ended one, and its freshness ends. */
static void test_noted_ring(void **state) {
        News n = { 0 };
        pid_t fresh[NEWS_NOTED_MAX];
        news_remember(&n, 7, 100);
        news_remember(&n, 7, 200);
        news_remember(&n, 0, 300); /* outside the namespace: not remembered */
        assert_int_equal(news_noted_ns(&n, 7), 100);
        assert_int_equal(news_fresh(&n, 100 + NEWS_NOTE_FRESH_NS - 1, fresh), 1);
        assert_int_equal(news_fresh(&n, 100 + NEWS_NOTE_FRESH_NS, fresh), 0);
        news_forget(&n, 7);
        assert_int_equal(news_noted_ns(&n, 7), 0);
        for (pid_t tid = 1000; tid < 1000 + NEWS_NOTED_MAX + 1; tid++)
                news_remember(&n, tid, 500);
        assert_int_equal(news_noted_ns(&n, 1000), 0); /* the oldest made room */
        assert_int_equal(news_noted_ns(&n, 1000 + NEWS_NOTED_MAX), 500);
}

/*
 * A new redis client (young) of an old server: its first note names a task
 * the model does not know; a tick later it wakes the server one way only,
 * and that stays pending until the server's answer makes it a pair.
 */
static void test_redis_client(void **state) {
        T *t = t_new();
        t_task(t, 10, OLD);
        t_tick(t);
        assert_int_equal(t_note(t, 11, 10, t->now_ns + 1000), NEWS_UNKNOWN_TASK);

        t_task(t, 10, OLD);
        t_task(t, 11, YOUNG);
        t_edge(t, 11, 10);
        t_tick(t);
        assert_int_equal(t->n_groups, 1);
        assert_int_equal(t->groups[0].class, GROUP_SOLO);
        /* After the tick the client still waits for the other way. */
        pid_t tid = 0;
        assert_int_equal(news_pending(&t->news, &t->view, &tid), NEWS_YOUNG_ONE_WAY);
        assert_int_equal(tid, 11);
        assert_int_equal(t_note(t, 10, 11, t->now_ns + 5000), NEWS_YOUNG_ONE_WAY);

        /* The same group of old tasks is the regular tick's. */
        T *o = t_new();
        o->news = t->news;
        t_task(o, 10, OLD);
        t_task(o, 11, OLD);
        t_edge(o, 11, 10);
        t_tick(o);
        o->view.now_ns = t->view.now_ns;
        assert_int_equal(t_note(o, 10, 11, t->now_ns + 5000), NEWS_NONE);
        assert_int_equal(news_pending(&o->news, &o->view, NULL), NEWS_NONE);

        /* The server answers: a pair, waiting to be measured. */
        t_task(t, 10, OLD);
        t_task(t, 11, YOUNG);
        t_edge(t, 11, 10);
        t_edge(t, 10, 11);
        t_tick(t);
        assert_int_equal(t->groups[0].class, GROUP_PAIR);
        assert_int_equal(t_note(t, 10, 11, t->now_ns), NEWS_PAIR_WAITING);
        /* Its tasks' first notes came two seconds ago: pending no more. */
        assert_int_equal(news_pending(&t->news, &t->view, NULL), NEWS_NONE);
        News fresh = { 0 };
        news_remember(&fresh, 11, t->now_ns - 1000);
        assert_int_equal(news_pending(&fresh, &t->view, NULL), NEWS_PAIR_WAITING);
        t_free(o);
        t_free(t);
}

/*
 * A pgbench client: young, first noted waking its backend, in no group yet
 * (too few wakeups over the window): news, and still pending after the
 * tick; its note is no longer fresh a second later.
 */
static void test_pgbench_client(void **state) {
        T *t = t_new();
        t_task(t, 20, OLD);
        t_task(t, 21, YOUNG);
        t_tick(t);
        assert_int_equal(t->n_groups, 0);
        assert_int_equal(t_note(t, 21, 20, t->now_ns), NEWS_YOUNG_NO_GROUP);
        assert_int_equal(news_pending(&t->news, &t->view, NULL), NEWS_YOUNG_NO_GROUP);
        t->view.now_ns = t->now_ns + NEWS_NOTE_FRESH_NS;
        assert_int_equal(news_pending(&t->news, &t->view, NULL), NEWS_NONE);
        t_free(t);
}

/*
 * A fork storm (more than NEWS_YOUNG_STORM young tasks): a young task's
 * first relations are the regular tick's, and an unknown task is news but
 * not pending; a young task waking one way still is both. The storm ends
 * when the young tasks are NEWS_YOUNG_STORM or fewer.
 */
static void test_fork_storm(void **state) {
        T *t = t_new();
        for (pid_t tid = 100; tid < 100 + 80; tid++)
                t_task(t, tid, YOUNG);
        t_task(t, 300, YOUNG);
        t_task(t, 301, YOUNG);
        t_edge(t, 300, 301);
        t_tick(t);
        assert_int_equal(news_set_storm(&t->news, 81), 1);
        assert_int_equal(news_set_storm(&t->news, 82), 0);
        assert_true(t->news.storm);

        assert_int_equal(t_note(t, 100, 101, t->now_ns), NEWS_NONE);
        assert_int_equal(news_pending(&t->news, &t->view, NULL), NEWS_NONE);
        /* A task not in the model yet, alive: news now, not pending. */
        assert_int_equal(t_note(t, 500, 100, t->now_ns), NEWS_UNKNOWN_TASK);
        t->alive[0] = 500;
        t->view.n_alive = 1;
        assert_int_equal(news_pending(&t->news, &t->view, NULL), NEWS_NONE);
        assert_int_equal(t_note(t, 301, 300, t->now_ns), NEWS_YOUNG_ONE_WAY);

        /* Over: the same unknown task, alive, is pending; once gone, not. */
        assert_int_equal(news_set_storm(&t->news, NEWS_YOUNG_STORM), 1);
        assert_false(t->news.storm);
        assert_int_equal(t_note(t, 102, 103, t->now_ns), NEWS_YOUNG_NO_GROUP);
        News only_500 = { 0 };
        news_remember(&only_500, 500, t->now_ns);
        assert_int_equal(news_pending(&only_500, &t->view, NULL), NEWS_UNKNOWN_TASK);
        t->view.n_alive = 0;
        assert_int_equal(news_pending(&only_500, &t->view, NULL), NEWS_NONE);
        t_free(t);
}

/*
 * A fork storm that begins is the machine's load changing: each kept
 * placement asks for a closer look at a quick tick, once, at the tick the
 * storm began: not while it lasts, not advised, not a placement on trial (its
 * windows come at quick ticks anyway) or handed back.
 */
static void test_storm_look(void **state) {
        T *t = t_new();
        t_old_pair(t, 60, 61);
        t_old_pair(t, 70, 71);
        t_old_pair(t, 80, 81);
        t_tick(t);
        assert_int_equal(t->n_groups, 3);
        for (unsigned i = 0; i < t->plan->n_groups; i++)
                t->plan->groups[i].waiting = false;
        PlanGroup *kept = t_plan_group(t, 60), *on_trial = t_plan_group(t, 70),
                  *back = t_plan_group(t, 80);
        kept->managed = on_trial->managed = true;
        kept->trial.verdict = TRIAL_KEPT;
        on_trial->trial.verdict = TRIAL_RUNNING;
        back->trial.verdict = TRIAL_REVERTED;

        assert_int_equal(news_set_storm(&t->news, NEWS_YOUNG_STORM), 0);
        assert_int_equal(news_storm_look(&t->news, t->plan, false), 0);
        assert_false(kept->trial.closer);
        assert_int_equal(news_set_storm(&t->news, NEWS_YOUNG_STORM + 1), 1);
        assert_int_equal(news_storm_look(&t->news, t->plan, true), 0); /* advised: none kept */
        assert_false(kept->trial.closer);
        assert_int_equal(news_storm_look(&t->news, t->plan, false), 1);
        assert_true(kept->trial.closer);
        assert_false(on_trial->trial.closer);
        assert_false(back->trial.closer);
        /* The quick tick it asks for decides it (and the trial), not the one handed back. */
        assert_true(news_quick_wanted(t->groups, t->n_groups, t->plan, false));
        on_trial->trial.verdict = TRIAL_KEPT; /* ... its trial ended: only the look is left */
        on_trial->trial.closer = false;
        t_assert_focus(t, 60, 61);

        /* The storm goes on: no more looks. Over, and a new one: a look again. */
        kept->trial.closer = false;
        assert_int_equal(news_set_storm(&t->news, 200), 0);
        assert_int_equal(news_storm_look(&t->news, t->plan, false), 0);
        assert_false(kept->trial.closer);
        assert_int_equal(news_set_storm(&t->news, 3), 1);
        assert_int_equal(news_storm_look(&t->news, t->plan, false), 0);
        assert_int_equal(news_set_storm(&t->news, 100), 1);
        assert_int_equal(news_storm_look(&t->news, t->plan, false), 2);
        assert_true(kept->trial.closer && on_trial->trial.closer);
        assert_false(back->trial.closer);
        t_free(t);
}

/* A note between two old groups (two pairs), placed or not, is not news. */
static void test_two_old_groups(void **state) {
        T *t = t_new();
        t_old_pair(t, 30, 31);
        t_old_pair(t, 40, 41);
        t_tick(t);
        assert_int_equal(t->n_groups, 2);
        t_plan_group(t, 30)->waiting = false;
        t_plan_group(t, 40)->waiting = false;
        t_plan_group(t, 40)->managed = true;
        assert_int_equal(t_note(t, 31, 40, t->now_ns), NEWS_NONE);
        assert_int_equal(news_pending(&t->news, &t->view, NULL), NEWS_NONE);
        t_free(t);
}

/*
 * A pair waiting to be measured, then placed (its notes are the kernel
 * moving nothing: not news), then handed back and run spread again: news
 * while a task of it was first noted in the last second, and never pending.
 */
static void test_pair_run_spread(void **state) {
        T *t = t_new();
        t_old_pair(t, 50, 51);
        t_tick(t);
        PlanGroup *pg = t_plan_group(t, 50);
        assert_int_equal(pg->class, GROUP_PAIR);
        assert_int_equal(t_note(t, 50, 51, t->now_ns), NEWS_PAIR_WAITING);

        pg->waiting = false;
        pg->managed = true;
        assert_int_equal(t_note(t, 50, 51, t->now_ns + 1000), NEWS_NONE);

        pg->managed = false; /* handed back: the kernel runs it spread */
        assert_int_equal(t_note(t, 51, 50, t->now_ns + 2000), NEWS_PAIR_RUN_SPREAD);
        assert_int_equal(news_pending(&t->news, &t->view, NULL), NEWS_NONE);
        /* A second after its first note, the kernel moving it is old news. */
        assert_int_equal(t_note(t, 51, 50, t->now_ns + NEWS_NOTE_FRESH_NS), NEWS_NONE);
        t_free(t);
}

/* The focus of a quick tick, and what the tick reports (quick wanted, settled). */
static void test_focus_and_settled(void **state) {
        T *t = t_new();
        t_old_pair(t, 60, 61);
        t_old_pair(t, 70, 71);
        t_tick(t);
        assert_int_equal(t->n_groups, 2);
        assert_true(news_group_worth_quick(&t->groups[0]));
        assert_true(news_quick_wanted(t->groups, t->n_groups, t->plan, false));
        assert_false(news_plan_settled(t->plan, false));
        for (unsigned i = 0; i < t->plan->n_groups; i++)
                t->plan->groups[i].waiting = false;
        assert_false(news_quick_wanted(t->groups, t->n_groups, t->plan, false));
        assert_true(news_plan_settled(t->plan, false));
        t_plan_group(t, 60)->trial.verdict = TRIAL_RUNNING;
        assert_true(news_quick_wanted(t->groups, t->n_groups, t->plan, false));
        assert_false(news_plan_settled(t->plan, false));
        assert_true(news_plan_settled(t->plan, true)); /* advised trials are never judged */
        /* A placement a trial kept is watched for drift: no settled ticks. */
        t_plan_group(t, 60)->trial.verdict = TRIAL_KEPT;
        t_plan_group(t, 60)->managed = true;
        assert_false(news_plan_settled(t->plan, false));
        /* A kept placement that half drifted asks for a quick tick and its
         * focus (policy-trial.c: a closer look); advised, nothing is kept. */
        assert_false(news_quick_wanted(t->groups, t->n_groups, t->plan, false));
        t_plan_group(t, 60)->trial.closer = true;
        assert_true(news_quick_wanted(t->groups, t->n_groups, t->plan, false));
        assert_false(news_quick_wanted(t->groups, t->n_groups, t->plan, true));
        t_assert_focus(t, 60, 61);
        t_plan_group(t, 60)->trial.closer = false;
        t_plan_group(t, 60)->managed = false;
        assert_true(news_plan_settled(t->plan, false));

        /* Only the group on trial, and the one with a fresh note, are in focus. */
        t_plan_group(t, 60)->trial.verdict = TRIAL_NONE;
        news_remember(&t->news, 71, t->now_ns);
        t_assert_focus(t, 70, 71);
        t_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_young_after),     cmocka_unit_test(test_reason_names),
                cmocka_unit_test(test_noted_ring),      cmocka_unit_test(test_redis_client),
                cmocka_unit_test(test_pgbench_client),  cmocka_unit_test(test_fork_storm),
                cmocka_unit_test(test_storm_look),      cmocka_unit_test(test_two_old_groups),
                cmocka_unit_test(test_pair_run_spread), cmocka_unit_test(test_focus_and_settled),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
