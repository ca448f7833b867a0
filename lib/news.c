/* SPDX-License-Identifier: MIT */
/*
 * What is new (news.h): the noted ring, the fork storm, why a note is news
 * and which noted tasks still wait for a quick tick. Pure: the graph, the
 * plan, the time and the tasks' liveness come in a NewsView.
 */
#include "news.h"

#include <stdlib.h>

#include "macro.h"
#include "string-table.h"

/*
 * The two lists: which reasons bring a quick tick at a note (quick_now), and
 * which keep asking for the next one soon after a tick (pending). They
 * differ on purpose in three places:
 *
 *   - NEWS_UNKNOWN_TASK is news even in a fork storm (a task the model does
 *     not know yet may be the client a quick tick is for; a note costs no
 *     read), but is pending only outside one, and only while the sample
 *     found the task alive: one that ended is gone from /proc, and where no
 *     proc connector says so (a PID namespace) its note would keep quick
 *     ticks coming.
 *   - NEWS_YOUNG_ALONE_WAKING is news only: after the tick the model has
 *     both tasks, and a pair they make is waiting (NEWS_PAIR_WAITING).
 *   - NEWS_PAIR_RUN_SPREAD is news only: the quick tick it brings decides
 *     the pair; it runs spread until the kernel moves it, and another quick
 *     tick would decide nothing new.
 */
static const struct {
        bool quick_now;
        bool pending;
} news_rules[_NEWS_REASON_MAX] = {
        [NEWS_NONE] = { false, false },
        [NEWS_UNKNOWN_TASK] = { true, true /* outside a fork storm, while alive */ },
        [NEWS_YOUNG_NO_GROUP] = { true, true },
        [NEWS_YOUNG_ALONE_WAKING] = { true, false },
        [NEWS_YOUNG_ONE_WAY] = { true, true },
        [NEWS_PAIR_WAITING] = { true, true },
        [NEWS_PAIR_RUN_SPREAD] = { true, false },
};

uint64_t news_young_after(uint64_t boottime_ns, long hz) {
        if (hz <= 0)
                return 0;
        uint64_t now = boottime_ns / NSEC_PER_SEC * (uint64_t)hz +
                       boottime_ns % NSEC_PER_SEC * (uint64_t)hz / NSEC_PER_SEC,
                 young = (uint64_t)NEWS_YOUNG_SEC * (uint64_t)hz;
        return now > young ? now - young : 0;
}

bool news_task_young(uint64_t start_time, uint64_t young_after) {
        return start_time == 0 || start_time > young_after;
}

int news_set_storm(News *n, unsigned n_young) {
        bool storm = n_young > NEWS_YOUNG_STORM;
        n->storm_began = storm && !n->storm;
        if (storm == n->storm)
                return 0;
        n->storm = storm;
        return 1;
}

static const NewsNoted *news_find(const News *n, pid_t tid) {
        for (unsigned i = 0; i < n->n_noted; i++)
                if (n->noted[i].tid == tid)
                        return &n->noted[i];
        return NULL;
}

/* Whether e is a first note (not forgotten) from less than NEWS_NOTE_FRESH_NS before now_ns. */
static bool news_noted_fresh(const NewsNoted *e, uint64_t now_ns) {
        return e && e->tid > 0 && e->ts_ns + NEWS_NOTE_FRESH_NS > now_ns;
}

uint64_t news_noted_ns(const News *n, pid_t tid) {
        const NewsNoted *e = news_find(n, tid);
        return e ? e->ts_ns : 0;
}

void news_remember(News *n, pid_t tid, uint64_t ts_ns) {
        if (tid <= 0 || news_noted_ns(n, tid))
                return;
        n->noted[n->next] = (NewsNoted){ .tid = tid, .ts_ns = ts_ns };
        n->next = (n->next + 1) % NEWS_NOTED_MAX;
        n->n_noted = MIN(n->n_noted + 1, NEWS_NOTED_MAX);
}

void news_forget(News *n, pid_t tid) {
        for (unsigned i = 0; i < n->n_noted; i++)
                if (n->noted[i].tid == tid)
                        n->noted[i].tid = 0;
}

unsigned news_fresh(const News *n, uint64_t now_ns, pid_t *ret) {
        unsigned k = 0;
        for (unsigned i = 0; i < n->n_noted; i++)
                if (news_noted_fresh(&n->noted[i], now_ns))
                        ret[k++] = n->noted[i].tid;
        return k;
}

/*
 * Why waker waking wakee is new, judged at ts_ns (both the same task: why
 * that task is). Not new: a relation between old tasks in no group or in
 * two groups, nor one inside a fanout or a mesh; those are decided at
 * regular ticks. Under hackbench, whose groups form afresh every tick, such
 * notes come most ticks, and a quick tick for each costs as much as a
 * regular one. Nor, in a fork storm, a young task's first relations: its
 * tasks are then many, and the regular tick decides them.
 */
static NewsReason news_reason(const News *n, const NewsView *v, pid_t waker, pid_t wakee,
                              uint64_t ts_ns) {
        WakeGraphTask a, b;
        if (waker <= 0 || wakee <= 0)
                return NEWS_NONE; /* outside placed's PID namespace: nothing it can place */
        if (wake_graph_get_task(v->graph, waker, 0, &a) <= 0 ||
            wake_graph_get_task(v->graph, wakee, 0, &b) <= 0)
                return NEWS_UNKNOWN_TASK;
        const PlanGroup *ga = a.group_id ? plan_find_group(v->plan, a.group_id) : NULL;
        const PlanGroup *gb = b.group_id ? plan_find_group(v->plan, b.group_id) : NULL;
        /* A young task's relations are a new client's; hackbench's tasks, in
         * no group or alone now and then, are old. */
        bool young = news_task_young(a.id.start_time, v->young_after) ||
                     news_task_young(b.id.start_time, v->young_after);
        if (!a.group_id || !b.group_id)
                return young && !n->storm ? NEWS_YOUNG_NO_GROUP : NEWS_NONE;
        if (!ga || !gb)
                return NEWS_NONE;
        if (ga != gb)
                return young && !n->storm && (ga->class == GROUP_SOLO || gb->class == GROUP_SOLO)
                               ? NEWS_YOUNG_ALONE_WAKING
                               : NEWS_NONE;
        /* One way so far, even in a storm: the other way may make it a pair. */
        if (ga->class == GROUP_SOLO)
                return young && a.group_size <= NEWS_QUICK_MAX_TASKS ? NEWS_YOUNG_ONE_WAY
                                                                     : NEWS_NONE;
        if (ga->class == GROUP_PAIR && ga->waiting)
                return NEWS_PAIR_WAITING;
        /* Only while a task of it is new to the notes: an old pair handed
         * back after a trial is noted again each time the kernel moves it. */
        if (ga->class == GROUP_PAIR && !ga->managed &&
            (news_noted_fresh(news_find(n, waker), ts_ns) ||
             news_noted_fresh(news_find(n, wakee), ts_ns)))
                return NEWS_PAIR_RUN_SPREAD;
        return NEWS_NONE;
}

NewsReason news_note(News *n, const NewsView *v, const WakeNote *note) {
        news_remember(n, note->waker, note->ts_ns);
        news_remember(n, note->wakee, note->ts_ns);
        NewsReason r = news_reason(n, v, note->waker, note->wakee, note->ts_ns);
        return news_rules[r].quick_now ? r : NEWS_NONE;
}

static bool news_alive(const NewsView *v, pid_t tid) {
        for (size_t lo = 0, hi = v->n_alive; lo < hi;) {
                size_t mid = lo + (hi - lo) / 2;
                if (v->alive[mid] == tid)
                        return true;
                if (v->alive[mid] < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

NewsReason news_pending(const News *n, const NewsView *v, pid_t *ret_tid) {
        for (unsigned i = 0; i < n->n_noted; i++) {
                const NewsNoted *e = &n->noted[i];
                if (!news_noted_fresh(e, v->now_ns))
                        continue; /* ended, or noted too long ago */
                NewsReason r = news_reason(n, v, e->tid, e->tid, v->now_ns);
                if (!news_rules[r].pending)
                        continue;
                if (r == NEWS_UNKNOWN_TASK && (n->storm || !news_alive(v, e->tid)))
                        continue;
                if (ret_tid)
                        *ret_tid = e->tid;
                return r;
        }
        return NEWS_NONE;
}

/* A placement on trial, or kept and half drifted at the last tick (a closer
 * look): a quick tick weighs its next window. */
static bool news_trial_wants_quick(const PlanTrial *t) {
        return t->verdict == TRIAL_RUNNING || (t->verdict == TRIAL_KEPT && t->closer);
}

bool news_group_worth_quick(const Group *g) {
        return MAX(g->wake_rate, g->handoff_rate) >= NEWS_QUICK_MIN_RATE;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

bool *news_focus(const News *n, const NewsView *v, const Group *groups, unsigned n_groups,
                 bool advise) {
        bool *focus = calloc(MAX(n_groups, 1u), sizeof(bool));
        uint64_t noted[NEWS_NOTED_MAX];
        unsigned n_fresh = 0;
        if (!focus)
                return NULL;
        for (unsigned i = 0; i < n->n_noted; i++) {
                WakeGraphTask t;
                if (news_noted_fresh(&n->noted[i], v->now_ns) &&
                    wake_graph_get_task(v->graph, n->noted[i].tid, 0, &t) > 0 && t.group_id)
                        noted[n_fresh++] = t.group_id;
        }
        qsort(noted, n_fresh, sizeof(noted[0]), cmp_u64);
        for (unsigned i = 0; i < n_groups; i++) {
                const PlanGroup *was = plan_find_group(v->plan, groups[i].id);
                bool unsettled =
                        !was || was->waiting || (!advise && news_trial_wants_quick(&was->trial));
                focus[i] = (unsettled && news_group_worth_quick(&groups[i])) ||
                           bsearch(&groups[i].id, noted, n_fresh, sizeof(noted[0]), cmp_u64);
        }
        return focus;
}

unsigned news_storm_look(const News *n, Plan *plan, bool advise) {
        unsigned asked = 0;
        if (!n->storm_began || advise)
                return 0;
        for (unsigned i = 0; i < plan->n_groups; i++) {
                PlanGroup *pg = &plan->groups[i];
                if (pg->managed && pg->trial.verdict == TRIAL_KEPT) {
                        pg->trial.closer = true;
                        asked++;
                }
        }
        return asked;
}

bool news_quick_wanted(const Group *groups, unsigned n_groups, const Plan *plan, bool advise) {
        for (unsigned i = 0; i < n_groups; i++) {
                const PlanGroup *pg = plan_find_group(plan, groups[i].id);
                if (pg &&
                    ((pg->waiting && groups[i].n_tasks <= NEWS_QUICK_MAX_TASKS) ||
                     (!advise && news_trial_wants_quick(&pg->trial))) &&
                    news_group_worth_quick(&groups[i]))
                        return true;
        }
        return false;
}

bool news_plan_settled(const Plan *plan, bool advise) {
        for (unsigned i = 0; i < plan->n_groups; i++) {
                const PlanGroup *pg = &plan->groups[i];
                if (plan_group_measuring(pg, advise) ||
                    (!advise && pg->managed && pg->trial.verdict == TRIAL_KEPT))
                        return false;
        }
        return true;
}

static const char *const news_reason_table[_NEWS_REASON_MAX] = {
        [NEWS_NONE] = "none",
        [NEWS_UNKNOWN_TASK] = "a task the model does not know yet",
        [NEWS_YOUNG_NO_GROUP] = "a young task in no group yet",
        [NEWS_YOUNG_ALONE_WAKING] = "a young task alone so far waking another",
        [NEWS_YOUNG_ONE_WAY] = "a young task in a small group waking one way so far",
        [NEWS_PAIR_WAITING] = "a pair waiting to be measured",
        [NEWS_PAIR_RUN_SPREAD] = "a pair left to the kernel, now run spread",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(news_reason, NewsReason);
