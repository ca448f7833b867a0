/* SPDX-License-Identifier: MIT */
/*
 * What is new, and whether it is worth a tick now: the one home of the rules
 * that turn the wake source's notes (wake-source.h: an edge that just became
 * a run across CPUs) into quick ticks (docs/design.md, "Deciding when
 * something new appears").
 *
 * A News remembers when each task was first noted (a ring of the latest
 * NEWS_NOTED_MAX) and whether the last sample was a fork storm. Everything
 * else it judges from a NewsView the caller builds: the wake graph, a plan,
 * the time, the "young" boundary read once, and which noted tasks the
 * sample found alive. It never reads /proc or a clock and never logs: the
 * daemon does, with the reason it is handed (news_reason_to_string()).
 *
 * One function names why a note, or a noted task, is new (NewsReason); two
 * short lists of those reasons answer the two questions asked of it:
 *
 *     at a note:        news_note()        is it worth a quick tick now?
 *     after each tick:  news_pending()     is a noted task still waiting
 *                                          for one (the next quick tick
 *                                          soon)?
 *
 * The lists differ in three places, on purpose, written once beside them
 * in news.c (news_rules).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "group.h"
#include "plan.h"
#include "wake-graph.h"
#include "wake-source.h"

/* Tasks whose first note is remembered: more than a fork storm's young tasks. */
#define NEWS_NOTED_MAX 256
/* A note keeps its tasks in a quick tick's focus this long: a second covers
 * the few quick ticks that measure a new pair. */
#define NEWS_NOTE_FRESH_NS (1000 * 1000 * 1000ULL)
/* A task started this many seconds ago or less is young: a new client. */
#define NEWS_YOUNG_SEC 10
/* Young tasks in the model above which it is a fork storm, whose notes wait
 * for the regular tick: a new client is one, a pgbench run a few dozen. */
#define NEWS_YOUNG_STORM 64
/* Tasks of a group at most that bring quick ticks while it waits to be
 * measured: a pair, a server thread with a client or two (hackbench's groups
 * of 40 form afresh every tick). */
#define NEWS_QUICK_MAX_TASKS 4
/* Wakeups a second under which a group is not worth quick ticks: packing it
 * saves under 1% of a CPU, less than quick ticks for thousands of such groups
 * (a connection pool) would cost. */
#define NEWS_QUICK_MIN_RATE 1000.0

/* Why a note, or a noted task, is new. */
typedef enum NewsReason {
        NEWS_NONE,               /* not new: the regular tick decides it */
        NEWS_UNKNOWN_TASK,       /* a task the model does not know yet */
        NEWS_YOUNG_NO_GROUP,     /* a young task in no group yet */
        NEWS_YOUNG_ALONE_WAKING, /* a young task alone so far, waking another */
        NEWS_YOUNG_ONE_WAY,      /* a young task in a small group waking one way so far */
        NEWS_PAIR_WAITING,       /* a pair waiting to be measured */
        NEWS_PAIR_RUN_SPREAD,    /* a pair left to the kernel, now run spread */
        _NEWS_REASON_MAX,
} NewsReason;

/* "a task the model does not know yet", ...; NULL out of range. */
const char *news_reason_to_string(NewsReason r);

/* One task's first note. */
typedef struct NewsNoted {
        pid_t tid; /* 0: forgotten (ended) */
        uint64_t ts_ns;
} NewsNoted;

typedef struct News {
        NewsNoted noted[NEWS_NOTED_MAX]; /* a ring: next is the oldest once full */
        unsigned n_noted, next;
        bool storm;       /* the last sample had more than NEWS_YOUNG_STORM young tasks */
        bool storm_began; /* ... and the one before it did not */
} News;

/* What news is judged against; every field the caller's. */
typedef struct NewsView {
        const WakeGraph *graph;
        const Plan *plan;     /* at a note the last tick's, after a tick its own; NULL none */
        uint64_t now_ns;      /* CLOCK_MONOTONIC, as the notes' ts_ns */
        uint64_t young_after; /* news_young_after(), read once for the tick or the notes */
        /* Noted tasks the sample found alive (its facts, or /proc/TID): sorted. */
        const pid_t *alive;
        size_t n_alive;
} NewsView;

/*
 * news_young_after() - the start time (clock ticks since boot, field 22 of
 * /proc/TID/stat) after which a task started in the last NEWS_YOUNG_SEC
 * seconds, from CLOCK_BOOTTIME in ns and the clock ticks a second.
 * Return: that start time; 0 (every task young) when hz is not positive.
 */
uint64_t news_young_after(uint64_t boottime_ns, long hz);

/* Whether a task of start_time is young (0, unknown: as if new). */
bool news_task_young(uint64_t start_time, uint64_t young_after);

/*
 * news_set_storm() - records how many young tasks this tick's sample found.
 * Return: 1 when a fork storm began or ended, 0 when it did not change.
 */
int news_set_storm(News *n, unsigned n_young);

/*
 * news_storm_look() - a fork storm that began at this tick is the machine's
 * load changing: a kept placement may stop helping before its own figures
 * show it in a regular tick's window. Each kept placement of plan (not
 * advised only) asks for a closer look at a quick tick (PlanTrial.closer), as
 * a half drift does. Return: how many asked.
 */
unsigned news_storm_look(const News *n, Plan *plan, bool advise);

/* news_remember() - tid noted at ts_ns; only its first note counts. */
void news_remember(News *n, pid_t tid, uint64_t ts_ns);
/* news_forget() - tid ended: a task that gets its TID is new again. */
void news_forget(News *n, pid_t tid);
/* When tid was first noted; 0 when it was not (or was forgotten). */
uint64_t news_noted_ns(const News *n, pid_t tid);

/*
 * news_fresh() - the tasks first noted less than NEWS_NOTE_FRESH_NS before
 * now_ns, into ret (room for NEWS_NOTED_MAX). Return: how many.
 */
unsigned news_fresh(const News *n, uint64_t now_ns, pid_t *ret);

/*
 * news_note() - remembers both tasks of a note and judges it.
 * Return: why it is worth a quick tick now; NEWS_NONE when it is not.
 */
NewsReason news_note(News *n, const NewsView *v, const WakeNote *note);

/*
 * news_pending() - whether a task noted in the last NEWS_NOTE_FRESH_NS is
 * still waiting for a quick tick after this one (v->plan: the tick's own),
 * and why: no second note comes for the same edge while its run goes on.
 * Return: the first such task's reason; NEWS_NONE when none waits.
 */
NewsReason news_pending(const News *n, const NewsView *v, pid_t *ret_tid);

/* Whether group g is busy enough for quick ticks (NEWS_QUICK_MIN_RATE). */
bool news_group_worth_quick(const Group *g);

/*
 * news_focus() - a quick tick's focus (policy.h, "Quick ticks"): per group,
 * whether the tick was brought forward for it: a task of it noted in the
 * last NEWS_NOTE_FRESH_NS, or busy enough and new to v->plan (the last
 * tick's), waiting to be measured, on trial, or kept and asking for a
 * closer look (PlanTrial.closer: half drifted; not advise only).
 * Return: a bool per group (the caller frees it), NULL out of memory.
 */
bool *news_focus(const News *n, const NewsView *v, const Group *groups, unsigned n_groups,
                 bool advise);

/*
 * news_quick_wanted() - whether a busy enough group of at most
 * NEWS_QUICK_MAX_TASKS tasks waits to be measured in plan, or a busy enough
 * group is on trial or kept and asks for a closer look (and not advised
 * only): the next tick is worth having soon. A bigger new group waits for
 * the regular tick.
 */
bool news_quick_wanted(const Group *groups, unsigned n_groups, const Plan *plan, bool advise);

/*
 * Whether no group of plan waits to be measured, is on trial, or holds a
 * placement a trial kept (advised trials are never judged): a kept
 * placement is watched at every regular tick for a drift that re-checks it
 * at once, so that one that stopped helping is handed back within seconds.
 */
bool news_plan_settled(const Plan *plan, bool advise);
