/* SPDX-License-Identifier: MIT */
/*
 * The replay wake source (wake_source_replay_ops, see wake-source-ops.h): a
 * recorded event file (its format is in wake-source.h), read up to the
 * caller's now_ns at each read, for tests and fuzzing without root. Events go
 * through the same aggregation as the perf source's samples (WakeAgg).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "wake-source-ops.h"

typedef struct ReplaySource {
        WakeAgg *agg;
        FILE *file;
        char *line;
        size_t line_size;
        bool have_line; /* line holds the next, not yet consumed event */
        unsigned line_no;
} ReplaySource;

/* Parses s->line; Return: 1 an event, 0 a blank or comment line, -EINVAL. */
static int replay_parse(ReplaySource *s, uint64_t *ts, pid_t *waker, pid_t *waker_tgid,
                        char *waker_comm, pid_t *wakee, pid_t *wakee_tgid, char *wakee_comm) {
        char *p = s->line + strspn(s->line, " \t");
        if (*p == '#' || *p == '\n' || *p == 0)
                return 0;
        wakee_comm[0] = 0;
        int n = sscanf(p, "%" SCNu64 " %d %d %15s %d %d %15s", ts, waker, waker_tgid, waker_comm,
                       wakee, wakee_tgid, wakee_comm);
        if (n < 6 || *waker <= 0 || *wakee <= 0)
                return -EINVAL;
        return 1;
}

static int replay_read_lines(ReplaySource *s, uint64_t now_ns, WakeBatch *b) {
        for (;;) {
                char waker_comm[WAKE_COMM_LEN], wakee_comm[WAKE_COMM_LEN];
                pid_t waker, waker_tgid, wakee, wakee_tgid;
                uint64_t ts;
                if (!s->have_line) {
                        if (getline(&s->line, &s->line_size, s->file) < 0)
                                return feof(s->file) ? 0 : -EIO;
                        s->line_no++;
                        s->have_line = true;
                }
                int r = replay_parse(s, &ts, &waker, &waker_tgid, waker_comm, &wakee, &wakee_tgid,
                                     wakee_comm);
                if (r < 0)
                        return r;
                if (r > 0 && ts > now_ns)
                        return 0; /* a later tick's */
                s->have_line = false;
                if (r == 0)
                        continue;
                r = wake_agg_event(s->agg, b, ts, waker, waker_tgid, waker_comm, wakee, wakee_tgid,
                                   wakee_comm, 1);
                if (r < 0)
                        return r;
        }
}

static void replay_close(void *impl) {
        ReplaySource *s = impl;
        if (!s)
                return;
        if (s->file)
                fclose(s->file);
        free(s->line);
        wake_agg_free(s->agg);
        free(s);
}

static int replay_open(const WakeSourceOptions *opts, void **ret) {
        if (!opts->replay_path)
                return -EINVAL;
        ReplaySource *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        int r = wake_agg_new(&s->agg);
        if (r >= 0) {
                s->file = fopen(opts->replay_path, "re");
                r = s->file ? 0 : negative_errno();
        }
        if (r < 0) {
                replay_close(s);
                return r;
        }
        *ret = s;
        return 0;
}

static int replay_read(void *impl, uint64_t now_ns, WakeBatch *b) {
        ReplaySource *s = impl;
        int r = replay_read_lines(s, now_ns, b);
        int k = wake_agg_finish(s->agg, b, now_ns);
        return r < 0 ? r : k;
}

static unsigned replay_sample_every(const void *impl) {
        return 1;
}

const WakeSourceOps wake_source_replay_ops = {
        .name = "replay",
        .open = replay_open,
        .close = replay_close,
        .read = replay_read,
        .sample_every = replay_sample_every,
};
