/* SPDX-License-Identifier: MIT */
/*
 * A pair that changes shape: first a lockstep pair passing one byte back
 * and forth over two pipes (pingpong's shape, which packing speeds up),
 * then a two-stage pipeline in which both processes compute at once: the
 * parent computes an item and sends it on, the child takes it and computes
 * on it while the parent computes the next (one CPU runs it at half the
 * speed of two). What placed kept for the first phase stops paying in the
 * second; its re-check must hand the pair back.
 *
 *   phases [-l LOCKSTEP_SECONDS] [-P PIPELINE_SECONDS] [-u ITEM_USEC]
 *
 * Prints "pids PARENT CHILD" at once, "pipeline_at T" (CLOCK_MONOTONIC
 * seconds) when the second phase starts, and at the end "round_trips_per_sec
 * N" of the first phase and "items_per_sec N" of the second.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
        int c;
        while ((c = getopt(argc, argv, "l:P:u:")) >= 0) {
                if (c == 'l')
                        lockstep = strtod(optarg, NULL);
                else if (c == 'P')
                        pipeline = strtod(optarg, NULL);
                else if (c == 'u')
                        item_usec = strtod(optarg, NULL);
                else {
                        fprintf(stderr, "usage: phases [-l SECONDS] [-P SECONDS] [-u ITEM_USEC]\n");
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
                /* 'L': answer at once; 'P': an item to compute on, no answer. */
                char b;
                close(ping[1]);
                close(pong[0]);
                while (read(ping[0], &b, 1) == 1) {
                        if (b == 'P')
                                spin(item_usec);
                        else if (write(pong[1], &b, 1) != 1)
                                break;
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
        while (t < start + lockstep) {
                if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
                        return 1;
                if ((++trips & 255) == 0)
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
        printf("round_trips_per_sec %.0f\n", lockstep_s > 0 ? trips / lockstep_s : 0.0);
        printf("items_per_sec %.0f\n", pipeline_s > 0 ? items / pipeline_s : 0.0);
        return 0;
}
