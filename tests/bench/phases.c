/* SPDX-License-Identifier: MIT */
/*
 * A pair that changes shape: first a lockstep pair passing one byte back
 * and forth over two pipes (pingpong's shape, which packing speeds up), or
 * with -s a stream (the parent writes 16 KiB chunks down a pipe as fast as
 * the child reads them: both run at once), then a two-stage pipeline in
 * which both processes compute at once: the parent computes an item and
 * sends it on, the child takes it and computes on it while the parent
 * computes the next (one CPU runs it at half the speed of two). What placed
 * kept for the first phase stops paying in the second; its re-check must
 * hand the pair back.
 *
 *   phases [-s] [-l FIRST_SECONDS] [-P PIPELINE_SECONDS] [-u ITEM_USEC]
 *
 * Prints "pids PARENT CHILD" at once, "pipeline_at T" (CLOCK_MONOTONIC
 * seconds) when the second phase starts, and at the end "round_trips_per_sec
 * N" (with -s "bytes_per_sec N") of the first phase and "items_per_sec N" of
 * the second.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Computes for about usec microseconds. */
static void spin(double usec) {
        double end = now_sec() + usec / 1e6;
        while (now_sec() < end)
                ;
}

int main(int argc, char *argv[]) {
        double lockstep = 5, pipeline = 5, item_usec = 500;
        bool stream = false;
        int c;
        while ((c = getopt(argc, argv, "sl:P:u:")) >= 0) {
                if (c == 's')
                        stream = true;
                else if (c == 'l')
                        lockstep = strtod(optarg, NULL);
                else if (c == 'P')
                        pipeline = strtod(optarg, NULL);
                else if (c == 'u')
                        item_usec = strtod(optarg, NULL);
                else {
                        fprintf(stderr,
                                "usage: phases [-s] [-l SECONDS] [-P SECONDS] [-u ITEM_USEC]\n");
                        return 2;
                }
        }
        if (lockstep < 0 || pipeline < 0 || item_usec <= 0) {
                fprintf(stderr, "phases: durations must be >= 0, the item's time > 0\n");
                return 2;
        }

        int ping[2], pong[2];
        if (pipe(ping) < 0 || pipe(pong) < 0)
                return 1;
        pid_t child = fork();
        if (child < 0)
                return 1;
        if (child == 0) {
                /* 'L': answer at once; 'P': an item to compute on, no answer; 'S': stream
                 * data, read and dropped. */
                static char in[65536];
                ssize_t n;
                close(ping[1]);
                close(pong[0]);
                while ((n = read(ping[0], in, sizeof(in))) > 0) {
                        /* Stream data comes before any item: skip it whole. */
                        const char *s = memrchr(in, 'S', (size_t)n);
                        for (ssize_t i = s ? s - in + 1 : 0; i < n; i++) {
                                if (in[i] == 'P')
                                        spin(item_usec);
                                else if (in[i] == 'L' && write(pong[1], &in[i], 1) != 1)
                                        _exit(1);
                        }
                }
                _exit(0);
        }
        close(ping[0]);
        close(pong[1]);
        printf("pids %d %d\n", (int)getpid(), (int)child);
        fflush(stdout);

        double start = now_sec(), t = start;
        uint64_t trips = 0, items = 0;
        char b = 'L';
        static char chunk[16384];
        memset(chunk, 'S', sizeof(chunk));
        while (t < start + lockstep) {
                if (stream) {
                        if (write(ping[1], chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
                                return 1;
                } else if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
                        return 1;
                if ((++trips & (stream ? 15 : 255)) == 0)
                        t = now_sec();
        }
        double lockstep_s = now_sec() - start;
        double p0 = now_sec();
        printf("pipeline_at %.6f\n", p0);
        fflush(stdout);
        b = 'P';
        for (t = p0; t < p0 + pipeline; t = now_sec()) {
                spin(item_usec);
                if (write(ping[1], &b, 1) != 1)
                        return 1;
                items++;
        }
        double pipeline_s = now_sec() - p0;
        close(ping[1]);
        waitpid(child, NULL, 0);
        if (stream)
                printf("bytes_per_sec %.0f\n",
                       lockstep_s > 0 ? (double)trips * sizeof(chunk) / lockstep_s : 0.0);
        else
                printf("round_trips_per_sec %.0f\n", lockstep_s > 0 ? trips / lockstep_s : 0.0);
        printf("items_per_sec %.0f\n", pipeline_s > 0 ? items / pipeline_s : 0.0);
        return 0;
}
