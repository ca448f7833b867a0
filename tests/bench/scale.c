/* SPDX-License-Identifier: MIT */
/*
 * Many threads, many light pairs: the load of a busy server's thread pools,
 * for measuring what placed costs at scale (tests/bench/bench.py --workloads scale).
 *
 *   scale [-t THREADS] [-p PAIRS] [-r ROUND_TRIPS_PER_SEC] [-s SECONDS]
 *
 * PAIRS pairs of threads hand a token back and forth over a futex, RATE
 * times a second each (the first of each pair sleeps between round trips),
 * and the rest of THREADS sleep. Prints "ready THREADS" once every thread
 * runs, and "round_trips N" at the end.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct Pair {
        _Atomic int turn; /* 0: the first's, 1: the second's */
        long period_ns;
        long phase_ns;
        _Atomic uint64_t round_trips;
} Pair;

static _Atomic int stop;
static _Atomic int started;

static void futex_wait(_Atomic int *addr, int val) {
        syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic int *addr) {
        syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *first(void *arg) {
        Pair *p = arg;
        struct timespec next;
        atomic_fetch_add(&started, 1);
        clock_gettime(CLOCK_MONOTONIC, &next);
        next.tv_nsec += p->phase_ns;
        while (!atomic_load(&stop)) {
                next.tv_nsec += p->period_ns;
                while (next.tv_nsec >= 1000000000L) {
                        next.tv_nsec -= 1000000000L;
                        next.tv_sec++;
                }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
                atomic_store(&p->turn, 1);
                futex_wake(&p->turn);
                while (atomic_load(&p->turn) == 1 && !atomic_load(&stop))
                        futex_wait(&p->turn, 1);
                atomic_fetch_add(&p->round_trips, 1);
        }
        atomic_store(&p->turn, 1);
        futex_wake(&p->turn);
        return NULL;
}

static void *second(void *arg) {
        Pair *p = arg;
        atomic_fetch_add(&started, 1);
        while (!atomic_load(&stop)) {
                while (atomic_load(&p->turn) == 0 && !atomic_load(&stop))
                        futex_wait(&p->turn, 0);
                atomic_store(&p->turn, 0);
                futex_wake(&p->turn);
        }
        return NULL;
}

/* Sleeps until the process exits: no futex, so the pairs' futex hash stays short. */
static void *sleeper(void *arg) {
        (void)arg;
        atomic_fetch_add(&started, 1);
        for (;;)
                pause();
        return NULL;
}

static void on_signal(int sig) {
        (void)sig;
        atomic_store(&stop, 1);
}

int main(int argc, char *argv[]) {
        long threads = 10000, pairs = 2000, seconds = 0;
        double rate = 10;
        int c;
        while ((c = getopt(argc, argv, "t:p:r:s:")) >= 0) {
                if (c == 't')
                        threads = strtol(optarg, NULL, 10);
                else if (c == 'p')
                        pairs = strtol(optarg, NULL, 10);
                else if (c == 'r')
                        rate = strtod(optarg, NULL);
                else if (c == 's')
                        seconds = strtol(optarg, NULL, 10);
                else {
                        fprintf(stderr,
                                "usage: scale [-t THREADS] [-p PAIRS] [-r RATE] [-s SECONDS]\n");
                        return 2;
                }
        }
        if (pairs < 0 || threads < 2 * pairs || rate <= 0) {
                fprintf(stderr, "scale: need THREADS >= 2 * PAIRS and RATE > 0\n");
                return 2;
        }
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);

        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN > 65536 ? PTHREAD_STACK_MIN : 65536);
        Pair *ps = calloc((size_t)(pairs ? pairs : 1), sizeof(Pair));
        pthread_t *tids = calloc((size_t)threads, sizeof(pthread_t));
        if (!ps || !tids)
                return 1;
        long n = 0;
        for (long i = 0; i < pairs; i++) {
                ps[i].period_ns = (long)(1e9 / rate);
                ps[i].phase_ns = (long)((double)ps[i].period_ns * i / pairs);
                if (pthread_create(&tids[n++], &attr, second, &ps[i]) ||
                    pthread_create(&tids[n++], &attr, first, &ps[i])) {
                        fprintf(stderr, "scale: thread %ld: %s\n", n, strerror(errno));
                        return 1;
                }
        }
        for (; n < threads; n++)
                if (pthread_create(&tids[n], &attr, sleeper, NULL)) {
                        fprintf(stderr, "scale: thread %ld failed\n", n);
                        return 1;
                }
        while (atomic_load(&started) < threads)
                usleep(1000);
        printf("ready %ld\n", threads);
        fflush(stdout);
        for (long s = 0; !atomic_load(&stop) && (seconds == 0 || s < seconds * 10); s++)
                usleep(100000);
        atomic_store(&stop, 1);
        uint64_t total = 0;
        for (long i = 0; i < pairs; i++) {
                atomic_store(&ps[i].turn, 1);
                futex_wake(&ps[i].turn);
        }
        for (long i = 0; i < 2 * pairs; i++)
                pthread_join(tids[i], NULL);
        for (long i = 0; i < pairs; i++)
                total += ps[i].round_trips;
        printf("round_trips %llu\n", (unsigned long long)total);
        fflush(stdout);
        _exit(0); /* the sleepers with it */
}
