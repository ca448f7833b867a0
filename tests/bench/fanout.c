/* SPDX-License-Identifier: MIT */
/*
 * A master handing work to N compute workers, round after round (a condvar
 * fan-out): the workload the kernel's wake_wide() is meant to spread. Each
 * round the master wakes every worker, each worker does a fixed amount of
 * arithmetic, and the master waits for all of them.
 *
 *   fanout [-w WORKERS] [-s SECONDS] [-i ITERATIONS_PER_TASK] [-r] [-p]
 *
 * Prints "rounds_per_sec N" and, with -p, the thread ids first ("tids T..."),
 * so tests can find the tasks. With -r, also each second's own rate as it
 * ends ("interval_rounds_per_sec N", flushed), for a benchmark that switches
 * placed on and off under one run (tests/bench/switchback.py).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static uint64_t round_no;
static unsigned pending;
static int stop;
static unsigned long iterations = 200000;
static volatile uint64_t sink;

static double now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void compute(void) {
        uint64_t x = 88172645463325252ULL;
        for (unsigned long i = 0; i < iterations; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
        }
        sink = x;
}

static void *worker(void *arg) {
        uint64_t seen = 0;
        pid_t *tid = arg;
        *tid = (pid_t)syscall(SYS_gettid);
        for (;;) {
                pthread_mutex_lock(&lock);
                while (round_no == seen && !stop)
                        pthread_cond_wait(&work_cv, &lock);
                if (stop) {
                        pthread_mutex_unlock(&lock);
                        return NULL;
                }
                seen = round_no;
                pthread_mutex_unlock(&lock);

                compute();

                pthread_mutex_lock(&lock);
                if (--pending == 0)
                        pthread_cond_signal(&done_cv);
                pthread_mutex_unlock(&lock);
        }
}

int main(int argc, char *argv[]) {
        unsigned workers = 8;
        double seconds = 5;
        int print_tids = 0, report = 0;
        int c;

        while ((c = getopt(argc, argv, "w:s:i:rp")) >= 0) {
                switch (c) {
                case 'w':
                        workers = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 's':
                        seconds = strtod(optarg, NULL);
                        break;
                case 'i':
                        iterations = strtoul(optarg, NULL, 10);
                        break;
                case 'r':
                        report = 1;
                        break;
                case 'p':
                        print_tids = 1;
                        break;
                default:
                        fprintf(stderr, "usage: fanout [-w WORKERS] [-s SECONDS] [-i ITERATIONS] "
                                        "[-r] [-p]\n");
                        return 2;
                }
        }
        if (workers == 0 || workers > 1024 || seconds <= 0) {
                fprintf(stderr, "fanout: need 1..1024 workers and a positive duration\n");
                return 2;
        }

        pthread_t *threads = calloc(workers, sizeof(*threads));
        pid_t *tids = calloc(workers, sizeof(*tids));
        if (!threads || !tids)
                return 1;
        for (unsigned i = 0; i < workers; i++)
                if (pthread_create(&threads[i], NULL, worker, &tids[i]) != 0)
                        return 1;

        if (print_tids) {
                usleep(100000);
                printf("tids %d", (int)syscall(SYS_gettid));
                for (unsigned i = 0; i < workers; i++)
                        printf(" %d", (int)tids[i]);
                printf("\n");
                fflush(stdout);
        }

        uint64_t rounds = 0, mark_rounds = 0;
        double start = now_sec(), end = start + seconds, mark = start;
        for (double now = start; now < end; now = now_sec()) {
                if (report && now >= mark + 1) {
                        printf("interval_rounds_per_sec %.1f\n",
                               (double)(rounds - mark_rounds) / (now - mark));
                        fflush(stdout);
                        mark = now;
                        mark_rounds = rounds;
                }
                pthread_mutex_lock(&lock);
                pending = workers;
                round_no++;
                pthread_cond_broadcast(&work_cv);
                while (pending > 0)
                        pthread_cond_wait(&done_cv, &lock);
                pthread_mutex_unlock(&lock);
                rounds++;
        }
        double elapsed = now_sec() - start;

        pthread_mutex_lock(&lock);
        stop = 1;
        pthread_cond_broadcast(&work_cv);
        pthread_mutex_unlock(&lock);
        for (unsigned i = 0; i < workers; i++)
                pthread_join(threads[i], NULL);

        printf("rounds_per_sec %.1f\n", (double)rounds / elapsed);
        free(threads);
        free(tids);
        return 0;
}
