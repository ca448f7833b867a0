/* SPDX-License-Identifier: MIT */
/*
 * When placed ticks (tick-clock.h): the regular period, the settled factor,
 * the quick ticks' token bucket and the half-window floor, from the times
 * the caller passes.
 */
#include "tick-clock.h"

#include <assert.h>

#include "macro.h"
#include "string-table.h"

double tick_clock_tokens(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec) {
        double rate = cfg->quick_ticks_per_sec;
        if (c->tokens_usec == 0)
                c->tokens = 2 * rate;
        else if (now_usec > c->tokens_usec)
                c->tokens = MIN(2 * rate, c->tokens + rate * (double)(now_usec - c->tokens_usec) /
                                                              USEC_PER_SEC);
        c->tokens_usec = now_usec;
        return c->tokens;
}

static void tick_clock_arm(TickClock *c, uint64_t now_usec, uint64_t delay_usec, TickKind kind,
                           TickClockNext *ret) {
        c->next_usec = now_usec + delay_usec;
        c->next_kind = kind;
        *ret = (TickClockNext){ .delay_usec = delay_usec, .kind = kind };
}

void tick_clock_start(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec,
                      TickClockNext *ret) {
        *c = (TickClock){ 0 };
        tick_clock_reset_period(c, cfg, now_usec, ret);
}

void tick_clock_reset_period(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec,
                             TickClockNext *ret) {
        c->next_regular_usec = now_usec + cfg->period_usec;
        tick_clock_arm(c, now_usec, cfg->period_usec, TICK_REGULAR, ret);
}

/* A quick tick delay_usec after now_usec, where it is sooner than the next
 * tick, the budget has a token, and half a quick window has passed since
 * the last tick began. Return: 1 brought forward, 0 not. */
static int tick_clock_want_quick(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec,
                                 uint64_t delay_usec, TickClockNext *ret) {
        if (cfg->quick_usec == 0 || tick_clock_tokens(c, cfg, now_usec) < 1)
                return 0;
        uint64_t at = MAX(now_usec + delay_usec, c->last_tick_usec + cfg->quick_usec / 2);
        if (at >= c->next_usec)
                return 0;
        tick_clock_arm(c, now_usec, at - now_usec, TICK_QUICK, ret);
        return 1;
}

int tick_clock_after_tick(TickClock *c, const TickClockConfig *cfg, const TickClockInput *in,
                          TickClockNext *ret) {
        assert(in->kind < _TICK_KIND_MAX);
        uint64_t start = in->start_usec, period = cfg->period_usec;

        if (in->kind == TICK_QUICK) {
                (void)tick_clock_tokens(c, cfg, start);
                c->tokens -= 1;
        }
        c->last_tick_usec = start;
        if (in->settled)
                period *= MAX(cfg->settled_factor, 1u);
        if (in->kind == TICK_REGULAR || c->next_regular_usec <= start)
                c->next_regular_usec = start + period;
        else
                c->next_regular_usec = MIN(c->next_regular_usec, start + period);
        tick_clock_arm(c, start, c->next_regular_usec - start, TICK_REGULAR, ret);
        if (in->quick_wanted &&
            tick_clock_want_quick(c, cfg, in->now_usec,
                                  in->quick_soon ? cfg->quick_usec / 2 : cfg->quick_usec, ret))
                return 1;
        return 0;
}

int tick_clock_after_note(TickClock *c, const TickClockConfig *cfg, uint64_t now_usec,
                          TickClockNext *ret) {
        return tick_clock_want_quick(c, cfg, now_usec, TICK_CLOCK_NOTE_DELAY_USEC, ret);
}

static const char *const tick_kind_table[_TICK_KIND_MAX] = {
        [TICK_REGULAR] = "regular",
        [TICK_QUICK] = "quick",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(tick_kind, TickKind);
