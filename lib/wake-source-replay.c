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

#include "fileio.h"
#include "macro.h"
#include "wake-source-ops.h"

/* A recorded event is some 60 bytes ("TS WAKER TGID COMM WAKEE TGID COMM"); a line of 4 KiB
 * leaves room for comments, and 1 GiB is 10^7 events with room to spare. The file is read
 * as a stream: memory stays within one line. */
#define REPLAY_LINE_MAX ((size_t)4 << 10)
#define REPLAY_FILE_MAX ((size_t)1 << 30)

typedef struct ReplaySource {
        WakeAgg *agg;
        FileioLines file;
        char *line;     /* in file's buffer */
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
                        int k = fileio_lines_next(&s->file, &s->line, NULL);
                        if (k <= 0)
                                return k;
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
        fileio_lines_close(&s->file);
        wake_agg_free(s->agg);
        free(s);
}

static int replay_open(const WakeSourceOptions *opts, void **ret) {
        if (!opts->replay_path)
                return -EINVAL;
        ReplaySource *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->file = FILEIO_LINES_NULL;
        int r = wake_agg_new(&s->agg);
        if (r >= 0)
                r = fileio_lines_open(&s->file, opts->replay_path, REPLAY_FILE_MAX,
                                      REPLAY_LINE_MAX);
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
