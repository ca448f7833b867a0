/* SPDX-License-Identifier: MIT */
/*
 * When placed ticks: the one home of the next tick's time and kind
 * (docs/design.md, "Deciding when something new appears"). A regular tick
 * comes every period, settled_factor periods while nothing waits; a quick
 * tick is brought forward for something new, from a token bucket, never
 * sooner than half a quick window after the last tick (a shorter window
 * measures nothing), and never puts the regular tick off.
 *
 * Pure: the caller passes the time (CLOCK_MONOTONIC, usec) and arms its
 * timer with the answer (TickClockNext); nothing here reads a clock or a
 * timer.
 *
 *     tick_clock_start(&c, &cfg, now, &next);             arm next
 *     a tick ran:  tick_clock_after_tick(&c, &cfg, &in, &next);  arm next
 *     a note:      if (tick_clock_after_note(&c, &cfg, now, &next) > 0) arm next
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* A note's news waits this long, so that the other direction's note joins it. */
#define TICK_CLOCK_NOTE_DELAY_USEC (10 * 1000ULL)

/*
 * Why a tick runs: its period came (regular), or something new appeared or
 * a placement is being measured, and it was brought forward (quick).
 */
typedef enum TickKind {
        TICK_REGULAR,
        TICK_QUICK,
        _TICK_KIND_MAX,
} TickKind;

/* "regular", "quick"; NULL out of range. */
const char *tick_kind_to_string(TickKind k);

/* The [daemon] keys the clock keeps to, the caller's. */
typedef struct TickClockConfig {
        uint64_t period_usec;       /* interval_ms: the regular tick's period */
        uint64_t quick_usec;        /* quick_interval_ms: a quick window; 0: no quick ticks */
        double quick_ticks_per_sec; /* the budget's rate; it keeps twice that (a burst) */
        unsigned settled_factor;    /* periods between regular ticks while settled (0 as 1) */
} TickClockConfig;

typedef struct TickClock {
        double tokens;              /* the quick ticks' budget */
        uint64_t tokens_usec;       /* when it was last filled; 0: never (full) */
        uint64_t last_tick_usec;    /* when the last tick began */
        uint64_t next_usec;         /* when the armed tick comes */
        TickKind next_kind;         /* and its kind */
        uint64_t next_regular_usec; /* when the next regular tick is due */
} TickClock;

/* What the caller arms: a tick of kind, delay_usec from the time it passed. */
typedef struct TickClockNext {
        uint64_t delay_usec;
        TickKind kind;
} TickClockNext;

/* What a tick reports for the next one (TickResult's fields of the same names). */
typedef struct TickClockInput {
        TickKind kind;       /* the tick that ran */
        uint64_t start_usec; /* when it began */
        uint64_t now_usec;   /* now, after it */
        bool quick_wanted;   /* a group waits to be measured, or a placement is on trial */
        bool quick_soon;     /* ... a freshly noted one: half a quick window will do */
        bool settled;        /* nothing waits, nothing changed: space regular ticks out */
} TickClockInput;

/* tick_clock_start() - the first tick: a regular one a period after now_usec. */
void tick_clock_start(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec,
                      TickClockNext *ret);

/*
 * tick_clock_reset_period() - the period changed (a reload): the regular tick
 * comes a new period after now_usec.
 */
void tick_clock_reset_period(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec,
                             TickClockNext *ret);

/*
 * tick_clock_after_tick() - the next tick after the one in: a quick one took
 * a token; the regular tick comes a period after a regular one began
 * (settled_factor periods while settled), and a quick tick keeps it where it
 * was, or a stream of quick ticks would put every other group's decision
 * off; a quick tick then comes a quick window after (half of one when soon)
 * where one is wanted, the budget allows it and it comes sooner.
 * Return: 1 for a quick tick next, 0 for a regular one; *ret what to arm,
 * from in->start_usec for a regular tick and from in->now_usec for a quick one.
 */
int tick_clock_after_tick(TickClock *c, const TickClockConfig *cfg, const TickClockInput *in,
                          TickClockNext *ret);

/*
 * tick_clock_after_note() - a note was news: a quick tick
 * TICK_CLOCK_NOTE_DELAY_USEC after now_usec, if that is sooner than the next
 * tick, the budget has a token, and half a quick window has passed since the
 * last tick. Return: 1 and *ret to arm; 0 when the next tick stays as armed.
 */
int tick_clock_after_note(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec,
                          TickClockNext *ret);

/* The tokens in the budget at now_usec (filled up to then). */
double tick_clock_tokens(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec);
