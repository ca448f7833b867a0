/* SPDX-License-Identifier: MIT */
/*
 * When placed watches the wake path: the one home of the wake sampler's
 * rest (wake_source_rest()). A program on sched_waking costs a wake-heavy
 * workload about 3% however little it does (sysbench threads 0.967x with a
 * program that returns at once, 0.989x with every other program of the
 * sampler; docs/benchmarks.md, "what watching costs"), and once every group
 * is decided the wakeups tell placed nothing it acts on: a kept placement is
 * watched by its tasks' run counts, which the task iterator reads anyway.
 *
 * So the sampler rests after rest_after of quiet (no news, no group waiting
 * to be measured, none on trial) and watches again at once when a task is
 * created (a fork or an exec: the sign of a new pair, a new session), when
 * anything needs it again, and for a look every look_every while resting,
 * which lasts until rest_after of quiet again: a pair formed between tasks
 * that were already there is found within look_every. While it rests the
 * wake graph holds still (WakeBatch.unwatched_ns), so its groups and their
 * placements stay.
 *
 * Pure: the caller passes the time (CLOCK_MONOTONIC, usec) and acts on the
 * answer; nothing here reads a clock or touches the sampler.
 *
 *     wake_rest_start(&w, now);
 *     each tick:        if (wake_rest_tick(&w, &cfg, needed, now, &why) changed) rest or watch
 *     a task created:   if (wake_rest_task_created(&w, now)) watch
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

/* The [daemon] keys the rest keeps to, the caller's. */
typedef struct WakeRestConfig {
        uint64_t after_usec; /* wake_rest_ms: quiet this long, then rest; 0: never rest */
        uint64_t look_usec;  /* wake_look_s: resting, look again after this long */
} WakeRestConfig;

/* Why the sampler watches or rests after a tick or an event. */
typedef enum WakeRestWhy {
        WAKE_REST_NEVER,   /* watching: resting is off (after_usec 0) */
        WAKE_REST_NEEDED,  /* watching: news, a group waiting or on trial */
        WAKE_REST_QUIET,   /* watching: quiet, not long enough yet */
        WAKE_REST_CREATED, /* watching: a task was created */
        WAKE_REST_LOOK,    /* watching: a look, as it rested look_usec */
        WAKE_REST_RESTING, /* resting: quiet for after_usec */
        _WAKE_REST_WHY_MAX,
} WakeRestWhy;

/* "never", "needed", "quiet", "created", "look", "resting"; NULL out of range. */
const char *wake_rest_why_to_string(WakeRestWhy w);
/* Words for the log ("a task was created", ...); NULL out of range. */
const char *wake_rest_why_words(WakeRestWhy w);

typedef struct WakeRest {
        bool resting;
        uint64_t quiet_since_usec; /* watching: nothing needed it since then */
        uint64_t rest_since_usec;  /* resting: since then */
        uint64_t rests;            /* times it went to rest */
} WakeRest;

/* Watching from now (the sampler starts attached). */
void wake_rest_start(WakeRest *w, uint64_t now_usec);

/*
 * wake_rest_tick() - after a tick: needed says whether anything wants
 * wakeups now (news pending, a group waiting to be measured or on trial).
 * *ret_why (may be NULL) says why it watches or rests.
 *
 * Return: whether it rests from now; compare with w->resting before the
 * call to see a change.
 */
bool wake_rest_tick(WakeRest *w, const WakeRestConfig *cfg, bool needed, uint64_t now_usec,
                    WakeRestWhy *ret_why);

/*
 * wake_rest_needed() - whether anything in plan wants wakeups: a group
 * waiting to be measured, or one on trial (not in advise mode, where no
 * trial runs).
 */
bool wake_rest_needed(const Plan *plan, bool advise);

/* A task was created (fork, exec). Return: true when it rested and watches from now. */
bool wake_rest_task_created(WakeRest *w, uint64_t now_usec);
