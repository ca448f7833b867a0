/* SPDX-License-Identifier: MIT */
/*
 * A token handed around a ring of N processes over pipes, at a paced rate:
 * a light mesh (N >= 5) or a light pair (N = 2) whose hand-offs per second
 * do not depend on where its tasks run.
 *
 *   ring [-n TASKS] [-r HOPS_PER_SEC] [-s SECONDS] [-p]
 *
 * Task i hands the token on alternately to task i+1 and task i+2 (mod N), so
 * each task wakes two others and, with five tasks or more, none is woken
 * back by a task it wakes: placed's wake graph sees a mesh (most members
 * waking two or more others), not pairs. With three or four tasks some
 * wake each other back (i+2 and i-2 meet) and may bond as pairs. With two
 * the token simply goes back and forth: a pair.
 *
 * Each hop waits for its slot on one clock shared by all tasks (start + k /
 * rate, k the hop's number, carried in the token), so the rate stays what
 * was asked wherever the tasks run, as long as they keep up; a placement
 * then changes the group's progress only when it cannot keep up. -r 0:
 * unpaced. -s 0 (the default): runs until killed; else task 0 ends the ring
 * at its first turn after SECONDS and prints "hops_per_sec N". With -p the
 * pids are printed first ("pids P0 P1 ..."). Every task dies with task 0.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_TASKS 64

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until_ns(int64_t t) {
        struct timespec ts = { .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
                ;
}

/* Task i: read the token, wait for its slot, hand it on; until end_ns (0:
 * never; only task 0 is given one: its exit ends the others). */
static uint64_t last_k; /* the last hop task 0 saw */

static int run_task(unsigned i, unsigned n, int in_fd, const int *out_fds, double rate,
                    int64_t start_ns, int64_t end_ns) {
        uint64_t k;
        for (unsigned turn = 0;; turn++) {
                if (read(in_fd, &k, sizeof(k)) != sizeof(k))
                        return 1;
                last_k = k;
                if (end_ns && now_ns() >= end_ns)
                        return 0;
                if (rate > 0)
                        sleep_until_ns(start_ns + (int64_t)((double)k * 1e9 / rate));
                k++;
                unsigned hop = n == 2 || turn % 2 == 0 ? 1 : 2;
                if (write(out_fds[(i + hop) % n], &k, sizeof(k)) != sizeof(k))
                        return 1;
        }
}

int main(int argc, char *argv[]) {
        unsigned n = 5;
        double rate = 1000, seconds = 0;
        int print_pids = 0, c;
        while ((c = getopt(argc, argv, "n:r:s:p")) >= 0) {
                if (c == 'n')
                        n = (unsigned)strtoul(optarg, NULL, 10);
                else if (c == 'r')
                        rate = strtod(optarg, NULL);
                else if (c == 's')
                        seconds = strtod(optarg, NULL);
                else if (c == 'p')
                        print_pids = 1;
                else {
                        fprintf(stderr,
                                "usage: ring [-n TASKS] [-r HOPS_PER_SEC] [-s SECONDS] [-p]\n");
                        return 2;
                }
        }
        if (n < 2 || n > MAX_TASKS || rate < 0 || seconds < 0) {
                fprintf(stderr, "ring: need 2 <= TASKS <= %d, a rate and seconds >= 0\n",
                        MAX_TASKS);
                return 2;
        }

        int in_fds[MAX_TASKS], out_fds[MAX_TASKS];
        for (unsigned i = 0; i < n; i++) {
                int p[2];
                if (pipe(p) < 0) {
                        perror("ring: pipe");
                        return 1;
                }
                in_fds[i] = p[0];
                out_fds[i] = p[1];
        }
        int64_t start_ns = now_ns();
        int64_t end_ns = seconds > 0 ? start_ns + (int64_t)(seconds * 1e9) : 0;
        pid_t pids[MAX_TASKS];
        pids[0] = getpid();
        for (unsigned i = 1; i < n; i++) {
                pids[i] = fork();
                if (pids[i] < 0) {
                        perror("ring: fork");
                        return 1;
                }
                if (pids[i] == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        if (getppid() != pids[0])
                                _exit(1);
                        _exit(run_task(i, n, in_fds[i], out_fds, rate, start_ns, 0));
                }
        }
        if (print_pids) {
                printf("pids");
                for (unsigned i = 0; i < n; i++)
                        printf(" %d", (int)pids[i]);
                printf("\n");
                fflush(stdout);
        }
        uint64_t k = 0;
        if (write(out_fds[0], &k, sizeof(k)) != sizeof(k))
                return 1;
        int r = run_task(0, n, in_fds[0], out_fds, rate, start_ns, end_ns);
        for (unsigned i = 1; i < n; i++)
                kill(pids[i], SIGKILL);
        if (r == 0)
                printf("hops_per_sec %.0f\n", (double)last_k * 1e9 / (double)(now_ns() - start_ns));
        return r;
}
