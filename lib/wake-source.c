/* SPDX-License-Identifier: MIT */
/*
 * Wake sources (see wake-source.h): the dispatcher. It picks a kind of
 * source, opens it through that kind's ops table (wake-source-ops.h: bpf,
 * perf and replay, one file each) and says in a sentence which one it chose
 * and why; everything after the open goes straight to the ops.
 *
 * libbpf may print to stderr while loading; the daemon routes that with
 * libbpf_set_print() if it wants it in its log.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "wake-source-ops.h"
#include "wake-source.h"

struct WakeSource {
        const WakeSourceOps *ops;
        void *impl; /* owned: the ops' object */
        bool resting;
        uint64_t rest_since_ns; /* resting: counted up to then (source_rested_until()) */
        uint64_t unwatched_ns;  /* rested since the last read, up to rest_since_ns */
        uint64_t rested_ns;     /* rested in all, up to rest_since_ns */
};

static const WakeSourceOps *source_ops(WakeSourceKind kind) {
        switch (kind) {
        case WAKE_SOURCE_BPF:
                return &wake_source_bpf_ops;
        case WAKE_SOURCE_PERF:
                return &wake_source_perf_ops;
        case WAKE_SOURCE_REPLAY:
                return &wake_source_replay_ops;
        default:
                return NULL;
        }
}

/* The names of the features in bits, comma-separated, into buf. */
static void feature_names(unsigned bits, char *buf, size_t size) {
        size_t n = 0;
        buf[0] = 0;
        for (unsigned b = 0; b < 31; b++) {
                const char *name = kernel_feature_name(1U << b);
                if ((bits & (1U << b)) && name && n < size)
                        n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", name);
        }
}

/*
 * Opens a source of kind, if the kernel has what it needs. why (size bytes)
 * receives the reason of a failure. Return: 0 and *ret; -EOPNOTSUPP for a
 * kind without a source or a kernel that lacks a feature; the open error.
 */
static int source_open_kind(WakeSourceKind kind, const WakeSourceOptions *opts, WakeSource **ret,
                            char *why, size_t size) {
        const WakeSourceOps *ops = source_ops(kind);
        if (!ops) {
                snprintf(why, size, "no such wake source");
                return -EOPNOTSUPP;
        }
        unsigned missing = ops->needs_features & ~opts->kernel_features;
        if (missing) {
                char names[96];
                feature_names(missing, names, sizeof(names));
                snprintf(why, size, "the kernel lacks %s", names);
                return -EOPNOTSUPP;
        }
        WakeSource *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->ops = ops;
        int r = ops->open(opts, &s->impl);
        if (r < 0) {
                snprintf(why, size, "%s",
                         r == -ENOENT && kind == WAKE_SOURCE_PERF
                                 ? "no sched_waking tracepoint: is tracefs "
                                   "mounted?"
                                 : strerror(-r));
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* What the source reads beyond the wakeups, for the reason: "" for nothing to say. */
static const char *flips_note(const WakeSource *s, const WakeSourceOptions *opts) {
        return !s->ops->reads_kernel_flips || (opts->kernel_features & KERNEL_FEATURE_WAKEE_FLIPS)
                       ? ""
                       : ", without the kernel's wakee_flips (groups judged by the wake graph's "
                         "own degree)";
}

/* How much of the wakeups the source sees, for the reason: "" when all. */
static void sampling_note(const WakeSource *s, char *buf, size_t size) {
        unsigned every = s->ops->sample_every(s->impl);
        if (every > 1)
                snprintf(buf, size, ", sampling 1 in %u wakeups (counts scaled by %u)%s", every,
                         every, s->ops->note ? s->ops->note(s->impl) : "");
        else
                snprintf(buf, size, "%s", s->ops->note ? s->ops->note(s->impl) : "");
}

/*
 * Opens kind, or bpf and else perf for WAKE_SOURCE_AUTO. *ret_reason (may be
 * NULL) as wake_source_open() says. Return: as wake_source_open().
 */
static int source_open_choose(WakeSourceKind kind, const WakeSourceOptions *opts, WakeSource **ret,
                              char **ret_reason) {
        char why[128] = "", perf_why[128] = "", note[192];
        WakeSource *s = NULL;
        int r;

        r = source_open_kind(kind == WAKE_SOURCE_AUTO ? WAKE_SOURCE_BPF : kind, opts, &s, why,
                             sizeof(why));
        if (r < 0 && kind != WAKE_SOURCE_AUTO)
                return r;
        if (r < 0) {
                r = source_open_kind(WAKE_SOURCE_PERF, opts, &s, perf_why, sizeof(perf_why));
                if (r < 0) {
                        if (ret_reason &&
                            asprintf(ret_reason,
                                     "BPF sampler not used (%s), and the perf sampler failed too "
                                     "(%s)",
                                     why, perf_why) < 0)
                                *ret_reason = NULL;
                        return r;
                }
        }
        sampling_note(s, note, sizeof(note));
        if (ret_reason) {
                int k = kind != WAKE_SOURCE_AUTO ? asprintf(ret_reason, "%s sampler requested%s%s",
                                                            s->ops->name, note, flips_note(s, opts))
                        : s->ops == &wake_source_bpf_ops
                                ? asprintf(ret_reason, "BPF sampler loaded%s%s", note,
                                           flips_note(s, opts))
                                : asprintf(ret_reason, "BPF sampler not used (%s), using perf%s",
                                           why, note);
                if (k < 0)
                        *ret_reason = NULL;
        }
        *ret = s;
        return 0;
}

int wake_source_open(WakeSourceKind kind, const WakeSourceOptions *opts, WakeSource **ret,
                     char **ret_reason) {
        WakeSourceOptions o = {};

        if (opts)
                o = *opts;
        if (!(o.kernel_features & KERNEL_FEATURES_PROBED)) {
                int r = kernel_features_probe(NULL, NULL, &o.kernel_features);
                if (r < 0)
                        return r;
        }
        return source_open_choose(kind, &o, ret, ret_reason);
}

WakeSource *wake_source_free(WakeSource *s) {
        if (!s)
                return NULL;
        s->ops->close(s->impl);
        free(s);
        return NULL;
}

const char *wake_source_name(const WakeSource *s) {
        return s->ops->name;
}

/* Counts the rest from rest_since_ns to now_ns as unwatched and rested; it goes on from there. */
static void source_rested_until(WakeSource *s, uint64_t now_ns) {
        if (now_ns <= s->rest_since_ns)
                return;
        s->unwatched_ns += now_ns - s->rest_since_ns;
        s->rested_ns += now_ns - s->rest_since_ns;
        s->rest_since_ns = now_ns;
}

int wake_source_read(WakeSource *s, uint64_t now_ns, WakeBatch *ret) {
        wake_batch_reset(ret);
        ret->now_ns = now_ns;
        if (s->resting)
                source_rested_until(s, now_ns);
        ret->unwatched_ns = s->unwatched_ns;
        s->unwatched_ns = 0;
        return s->ops->read(s->impl, now_ns, ret);
}

int wake_source_rest(WakeSource *s, bool rest, uint64_t now_ns) {
        if (!s || !s->ops->rest)
                return -EOPNOTSUPP;
        if (rest == s->resting)
                return 0;
        int r = s->ops->rest(s->impl, rest);
        if (r < 0)
                return r;
        if (rest)
                s->rest_since_ns = now_ns;
        else
                source_rested_until(s, now_ns);
        s->resting = rest;
        return 1;
}

uint64_t wake_source_rested_ns(const WakeSource *s, uint64_t now_ns) {
        if (!s)
                return 0;
        return s->rested_ns +
               (s->resting && now_ns > s->rest_since_ns ? now_ns - s->rest_since_ns : 0);
}

bool wake_source_can_rest(const WakeSource *s) {
        return s && s->ops->rest;
}

bool wake_source_resting(const WakeSource *s) {
        return s && s->resting;
}

int wake_source_get_cost(const WakeSource *s, WakeSourceCost *ret) {
        return s->ops->get_cost ? s->ops->get_cost(s->impl, ret) : 0;
}

int wake_source_task(const WakeSource *s, pid_t tid, WakeTaskView *ret) {
        return s && s->ops->task ? s->ops->task(s->impl, tid, ret) : 0;
}

int wake_source_watch(WakeSource *s, const TaskId *ids, size_t n) {
        return s && s->ops->watch ? s->ops->watch(s->impl, ids, n) : 0;
}

int wake_source_notes_fd(const WakeSource *s) {
        return s && s->ops->notes_fd ? s->ops->notes_fd(s->impl) : -1;
}

int wake_source_read_notes(WakeSource *s, WakeNote *ret, size_t max) {
        return s && s->ops->read_notes ? s->ops->read_notes(s->impl, ret, max) : 0;
}
