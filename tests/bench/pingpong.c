/* SPDX-License-Identifier: MIT */
/*
 * A lockstep pair: two processes passing one byte back and forth over two
 * pipes, the shape the kernel's wake_wide() spreads and placed packs.
 *
 *   pingpong [-s SECONDS] [-w WARMUP_SECONDS]
 *
 * Prints "round_trips_per_sec N", counted after the warm-up, so a placement
 * made during the first ticks is measured in its steady state. With -p the
 * two pids are printed first ("pids PARENT CHILD"). SIGTERM or SIGINT ends
 * the run early, with the figure counted so far: a pair that runs beside
 * another workload for as long as that one takes (bench.py's mixed).
 */
#include <signal.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig) {
        (void)sig;
        stop = 1;
}

static double now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char *argv[]) {
        double seconds = 6, warmup = -1;
        int print_pids = 0, c;
        while ((c = getopt(argc, argv, "s:w:p")) >= 0) {
                if (c == 's')
                        seconds = strtod(optarg, NULL);
                else if (c == 'w')
                        warmup = strtod(optarg, NULL);
                else if (c == 'p')
                        print_pids = 1;
                else {
                        fprintf(stderr, "usage: pingpong [-s SECONDS] [-w WARMUP] [-p]\n");
                        return 2;
                }
        }
        if (warmup < 0)
                warmup = seconds / 2;
        if (seconds <= 0 || warmup >= seconds) {
                fprintf(stderr, "pingpong: need 0 <= warm-up < duration\n");
                return 2;
        }

        int ping[2], pong[2];
        if (pipe(ping) < 0 || pipe(pong) < 0)
                return 1;
        pid_t child = fork();
        if (child < 0)
                return 1;
        if (child == 0) {
                char b;
                close(ping[1]); /* the parent's close() of it is our end of input */
                close(pong[0]);
                while (read(ping[0], &b, 1) == 1)
                        if (write(pong[1], &b, 1) != 1)
                                break;
                _exit(0);
        }
        close(ping[0]);
        close(pong[1]);
        /* SA_RESTART: a signal between the two sides' read and write must
         * not break the round trip; the loop sees the flag after it. */
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_stop;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        if (print_pids) {
                printf("pids %d %d\n", (int)getpid(), (int)child);
                fflush(stdout);
        }

        double start = now_sec(), measure_from = start + warmup, end = start + seconds;
        uint64_t counted = 0;
        double t = start, counted_from = 0;
        char b = 'x';
        for (uint64_t i = 0; t < end && !stop; i++) {
                if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
                        return 1;
                if ((i & 255) == 0)
                        t = now_sec();
                if (t >= measure_from) {
                        if (counted == 0)
                                counted_from = t;
                        counted++;
                }
        }
        double elapsed = counted ? now_sec() - counted_from : 0;
        close(ping[1]);
        waitpid(child, NULL, 0);
        /* Stopped before the warm-up ended: nothing was counted. */
        printf("round_trips_per_sec %.0f\n", elapsed > 0 ? counted / elapsed : 0.0);
        return 0;
}
