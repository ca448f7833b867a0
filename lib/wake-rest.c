/* SPDX-License-Identifier: MIT */
/* When placed watches the wake path (wake-rest.h). */
#include <assert.h>

#include "wake-rest.h"

#include "macro.h"
#include "string-table.h"

void wake_rest_start(WakeRest *w, uint64_t now_usec) {
        assert(w);
        *w = (WakeRest){ .quiet_since_usec = now_usec };
}

static void watch_from(WakeRest *w, uint64_t now_usec) {
        w->resting = false;
        w->quiet_since_usec = now_usec;
}

bool wake_rest_tick(WakeRest *w, const WakeRestConfig *cfg, bool needed, uint64_t now_usec,
                    WakeRestWhy *ret_why) {
        assert(w);
        assert(cfg);
        WakeRestWhy why;

        if (cfg->after_usec == 0) {
                watch_from(w, now_usec);
                why = WAKE_REST_NEVER;
        } else if (needed) {
                watch_from(w, now_usec);
                why = WAKE_REST_NEEDED;
        } else if (w->resting) {
                if (now_usec - w->rest_since_usec >= cfg->look_usec) {
                        watch_from(w, now_usec);
                        why = WAKE_REST_LOOK;
                } else
                        why = WAKE_REST_RESTING;
        } else if (now_usec - MIN(w->quiet_since_usec, now_usec) >= cfg->after_usec) {
                w->resting = true;
                w->rest_since_usec = now_usec;
                w->rests++;
                why = WAKE_REST_RESTING;
        } else
                why = WAKE_REST_QUIET;
        if (ret_why)
                *ret_why = why;
        return w->resting;
}

bool wake_rest_task_created(WakeRest *w, uint64_t now_usec) {
        assert(w);
        bool was = w->resting;
        watch_from(w, now_usec);
        return was;
}

bool wake_rest_needed(const Plan *plan, bool advise) {
        if (!plan)
                return true; /* nothing decided yet */
        for (unsigned i = 0; i < plan->n_groups; i++)
                if (plan_group_measuring(&plan->groups[i], advise))
                        return true;
        return false;
}

static const char *const wake_rest_why_table[_WAKE_REST_WHY_MAX] = {
        [WAKE_REST_NEVER] = "never", [WAKE_REST_NEEDED] = "needed",
        [WAKE_REST_QUIET] = "quiet", [WAKE_REST_CREATED] = "created",
        [WAKE_REST_LOOK] = "look",   [WAKE_REST_RESTING] = "resting",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(wake_rest_why, WakeRestWhy);

const char *wake_rest_why_words(WakeRestWhy w) {
        switch (w) {
        case WAKE_REST_NEVER:
                return "resting is off (wake_rest_ms = 0)";
        case WAKE_REST_NEEDED:
                return "something new, waiting to be measured or on trial";
        case WAKE_REST_QUIET:
                return "quiet, not for long yet";
        case WAKE_REST_CREATED:
                return "a task was created";
        case WAKE_REST_LOOK:
                return "a look, after resting wake_look_s";
        case WAKE_REST_RESTING:
                return "nothing new, waiting or on trial for wake_rest_ms";
        default:
                return NULL;
        }
}
