/* SPDX-License-Identifier: MIT */
/*
 * Live tests of lib/proc-events.c against the kernel's proc connector (root):
 * a child that starts a thread and execs must show up as fork, thread fork,
 * comm, exec and exit events with the right ids and exit code; an overflowing
 * socket must report its losses and keep working; a callback error must stop
 * dispatch; the namespaces where the connector is silent must be refused.
 *
 * Every wait is a poll() on the event socket and a pidfd, bounded by
 * DEADLINE_MS. Exits 77 when not root or when the kernel offers no proc
 * connector here.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "macro.h"
#include "proc-events.h"
#include "task-facts.h"

#define DEADLINE_MS  5000
#define MAX_RECORDED 256
#define THREAD_NAME  "pe-worker"

/* Every event of one process (tgid == watch), in arrival order. */
typedef struct Recorder {
        pid_t watch;
        ProcEvent ev[MAX_RECORDED];
        size_t n;
        size_t calls;  /* callback calls for any process */
        int fail_with; /* when nonzero, the callback returns it once */
} Recorder;

static int record(const ProcEvent *ev, void *userdata) {
        Recorder *rec = userdata;

        rec->calls++;
        if (rec->fail_with) {
                int r = rec->fail_with;
                rec->fail_with = 0;
                return r;
        }
        if (rec->watch > 0 && ev->tgid == rec->watch && rec->n < MAX_RECORDED)
                rec->ev[rec->n++] = *ev;
        return 0;
}

/* Index of the first recorded event of type for pid, or -1. */
static int find(const Recorder *rec, uint32_t type, pid_t pid) {
        for (size_t i = 0; i < rec->n; i++)
                if (rec->ev[i].type == type && rec->ev[i].pid == pid)
                        return (int)i;
        return -1;
}

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int pidfd_open_child(pid_t pid) {
        return (int)syscall(SYS_pidfd_open, pid, 0);
}

typedef bool (*DoneFunc)(const Recorder *rec, const void *arg);

/*
 * Dispatches until done() or DEADLINE_MS; reaps the child when its pidfd
 * says it exited (*status). Return: whether done() became true; *ret_lost
 * is set when a dispatch reported lost events.
 */
static bool pump(ProcEvents *pe, Recorder *rec, pid_t child, int *status, DoneFunc done,
                 const void *arg, bool *ret_lost) {
        _cleanup_close_ int pidfd = child > 0 ? pidfd_open_child(child) : -1;
        uint64_t deadline = now_ms() + DEADLINE_MS;
        bool reaped = child <= 0;

        assert_true(child <= 0 || pidfd >= 0);
        for (;;) {
                int r = proc_events_dispatch(pe);
                assert_true(r >= 0);
                if (r == PROC_EVENTS_LOST && ret_lost)
                        *ret_lost = true;
                if (!reaped && waitpid(child, status, WNOHANG) == child)
                        reaped = true;
                if (reaped && done(rec, arg))
                        return true;

                uint64_t t = now_ms();
                if (t >= deadline)
                        return false;
                struct pollfd fds[2] = {
                        { .fd = proc_events_fd(pe), .events = POLLIN },
                        { .fd = reaped ? -1 : pidfd, .events = POLLIN },
                };
                assert_true(poll(fds, 2, (int)(deadline - t)) >= 0 || errno == EINTR);
        }
}

/* Child side: a thread that names itself and reports its tid, then exec. */
static void *thread_main(void *arg) {
        pid_t *tid = arg;

        prctl(PR_SET_NAME, THREAD_NAME);
        __atomic_store_n(tid, gettid(), __ATOMIC_SEQ_CST);
        return NULL;
}

static _Noreturn void child_main(const char *prog, pid_t *shared_tid) {
        pthread_t t;

        if (pthread_create(&t, NULL, thread_main, shared_tid) != 0)
                _exit(125);
        pthread_join(t, NULL);
        execl(prog, prog, (char *)NULL);
        _exit(126);
}

typedef struct LifecycleArg {
        pid_t child;
        const pid_t *tid;
} LifecycleArg;

static bool lifecycle_done(const Recorder *rec, const void *arg) {
        const LifecycleArg *a = arg;
        pid_t tid = __atomic_load_n(a->tid, __ATOMIC_SEQ_CST);

        return tid > 0 && find(rec, PROC_EVENT_EXIT, a->child) >= 0 &&
               find(rec, PROC_EVENT_EXIT, tid) >= 0;
}

static void check_lifecycle(const char *prog, int expected_exit) {
        Recorder *rec = calloc(1, sizeof(*rec));
        ProcEvents *pe = NULL;
        int status = -1;

        assert_non_null(rec);
        assert_int_equal(proc_events_new(record, rec, &pe), 0);

        pid_t *shared_tid = mmap(NULL, sizeof(pid_t), PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(shared_tid != MAP_FAILED);
        *shared_tid = 0;

        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0)
                child_main(prog, shared_tid);
        rec->watch = child;

        LifecycleArg arg = { .child = child, .tid = shared_tid };
        bool done = pump(pe, rec, child, &status, lifecycle_done, &arg, NULL);
        if (waitpid(child, &status, WNOHANG) == 0) {
                kill(child, SIGKILL);
                waitpid(child, &status, 0);
        }
        assert_true(done);

        pid_t me = getpid(), tid = *shared_tid;
        assert_true(tid > 0 && tid != child);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), expected_exit);

        /* Orders are asserted only between events one task sends itself:
         * a fork event is sent after the new task may already run. */
        int fork_i = find(rec, PROC_EVENT_FORK, child);
        assert_true(fork_i >= 0);
        assert_int_equal(rec->ev[fork_i].tgid, child);
        assert_int_equal(rec->ev[fork_i].parent_pid, me);
        assert_int_equal(rec->ev[fork_i].parent_tgid, me);

        /* A new thread: its own pid, the child's tgid; the kernel reports the
         * process's parent (real_parent) as its parent. */
        int thread_i = find(rec, PROC_EVENT_FORK, tid);
        assert_true(thread_i >= 0);
        assert_int_equal(rec->ev[thread_i].tgid, child);
        assert_int_equal(rec->ev[thread_i].parent_tgid, me);

        int comm_i = find(rec, PROC_EVENT_COMM, tid);
        assert_true(comm_i >= 0);
        assert_int_equal(rec->ev[comm_i].tgid, child);
        assert_string_equal(rec->ev[comm_i].comm, THREAD_NAME);

        int thread_exit_i = find(rec, PROC_EVENT_EXIT, tid);
        assert_true(thread_exit_i > comm_i);
        assert_int_equal(rec->ev[thread_exit_i].tgid, child);
        assert_int_equal(rec->ev[thread_exit_i].exit_code, 0);
        assert_int_equal(rec->ev[thread_exit_i].exit_signal, -1);

        int exec_i = find(rec, PROC_EVENT_EXEC, child);
        assert_true(exec_i > thread_i);
        assert_int_equal(rec->ev[exec_i].tgid, child);

        int exit_i = find(rec, PROC_EVENT_EXIT, child);
        assert_true(exit_i > exec_i);
        assert_int_equal(rec->ev[exit_i].tgid, child);
        assert_int_equal(rec->ev[exit_i].exit_code, (uint32_t)status);
        assert_int_equal(rec->ev[exit_i].exit_signal, SIGCHLD);
        assert_int_equal(rec->ev[exit_i].parent_pid, me);

        /* One sender's events carry increasing CLOCK_MONOTONIC stamps, and
         * they are recent. */
        assert_true(rec->ev[thread_i].timestamp_ns < rec->ev[exec_i].timestamp_ns);
        assert_true(rec->ev[exec_i].timestamp_ns < rec->ev[exit_i].timestamp_ns);
        uint64_t mono_ms = now_ms();
        assert_true(rec->ev[exit_i].timestamp_ns / 1000000 <= mono_ms);
        assert_true(rec->ev[exit_i].timestamp_ns / 1000000 + DEADLINE_MS >= mono_ms);

        munmap(shared_tid, sizeof(pid_t));
        assert_null(proc_events_free(pe));
        free(rec);
}

static void test_lifecycle_true(void **state) {
        check_lifecycle("/bin/true", 0);
}

static void test_lifecycle_false(void **state) {
        check_lifecycle("/bin/false", 1);
}

static void test_dispatch_empty(void **state) {
        Recorder *rec = calloc(1, sizeof(*rec));
        ProcEvents *pe = NULL;
        int r = -1;

        assert_non_null(rec);
        assert_null(proc_events_free(NULL));
        assert_int_equal(proc_events_new(record, rec, &pe), 0);
        assert_true(proc_events_fd(pe) >= 0);
        /* Events queued during the subscription are not delivered. */
        assert_int_equal(rec->calls, 0);

        /* Other processes may fork meanwhile; the queue still runs dry. */
        for (int i = 0; i < 1000 && r != 0; i++) {
                r = proc_events_dispatch(pe);
                assert_true(r >= 0);
        }
        assert_int_equal(r, 0);
        assert_null(proc_events_free(pe));
        free(rec);
}

static bool exit_seen(const Recorder *rec, const void *arg) {
        return find(rec, PROC_EVENT_EXIT, *(const pid_t *)arg) >= 0;
}

static void test_callback_error_stops_dispatch(void **state) {
        Recorder *rec = calloc(1, sizeof(*rec));
        ProcEvents *pe = NULL;
        int status, r = 0;

        assert_non_null(rec);
        assert_int_equal(proc_events_new(record, rec, &pe), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0)
                _exit(0);
        assert_int_equal(waitpid(child, &status, 0), child);
        rec->watch = child;
        rec->fail_with = -ECANCELED;

        /* The child's fork event is queued: the first delivery fails. */
        uint64_t deadline = now_ms() + DEADLINE_MS;
        while (rec->fail_with && now_ms() < deadline) {
                struct pollfd p = { .fd = proc_events_fd(pe), .events = POLLIN };
                poll(&p, 1, 100);
                r = proc_events_dispatch(pe);
        }
        assert_int_equal(r, -ECANCELED);
        /* Later events still come through. */
        assert_true(pump(pe, rec, 0, NULL, exit_seen, &child, NULL));
        assert_null(proc_events_free(pe));
        free(rec);
}

static void set_rcvbuf(int fd, int bytes) {
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)), 0);
}

static void test_overflow_is_reported(void **state) {
        Recorder *rec = calloc(1, sizeof(*rec));
        ProcEvents *pe = NULL;
        ProcEventsStats st;
        bool lost = false;
        cpu_set_t cpus;
        int status, r = -1;

        assert_non_null(rec);
        assert_int_equal(proc_events_new(record, rec, &pe), 0);
        assert_int_equal(sched_getaffinity(0, sizeof(cpus), &cpus), 0);

        /* A buffer of a few events, and a storm of 64 forks and exits. */
        set_rcvbuf(proc_events_fd(pe), 1);
        for (int i = 0; i < 64; i++) {
                pid_t c = fork();
                assert_true(c >= 0);
                if (c == 0)
                        _exit(0);
                assert_int_equal(waitpid(c, &status, 0), c);
        }
        for (int i = 0; i < 10000 && r != 0; i++) {
                r = proc_events_dispatch(pe);
                assert_true(r >= 0);
                lost |= r == PROC_EVENTS_LOST;
        }
        assert_int_equal(r, 0);
        assert_true(lost);
        proc_events_get_stats(pe, &st);
        assert_true(st.overflows >= 1);

        /* Room again; one exit on each CPU shows the per-CPU sequence gaps,
         * and that the socket still delivers. */
        set_rcvbuf(proc_events_fd(pe), 1024 * 1024);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
                if (!CPU_ISSET(cpu, &cpus))
                        continue;
                pid_t c = fork();
                assert_true(c >= 0);
                if (c == 0) {
                        cpu_set_t one;
                        CPU_ZERO(&one);
                        CPU_SET(cpu, &one);
                        _exit(sched_setaffinity(0, sizeof(one), &one) < 0 ? 1 : 0);
                }
                rec->watch = c;
                rec->n = 0;
                assert_true(pump(pe, rec, c, &status, exit_seen, &c, NULL));
                assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                assert_int_equal(rec->ev[find(rec, PROC_EVENT_EXIT, c)].cpu, (unsigned)cpu);
        }
        proc_events_get_stats(pe, &st);
        assert_true(st.lost_events >= 1);
        assert_true(st.events >= 2);
        assert_null(proc_events_free(pe));
        free(rec);
}

/* Runs proc_events_new() in a child after unshare(flags) (and, for a new PID
 * namespace, in a grandchild inside it). Return: its result. */
static int new_in_namespace(int flags) {
        pid_t c = fork();
        int status;

        assert_true(c >= 0);
        if (c == 0) {
                Recorder rec = { 0 };
                ProcEvents *pe = NULL;

                if (unshare(flags) < 0)
                        _exit(200);
                if (flags & CLONE_NEWPID) {
                        pid_t g = fork();
                        if (g < 0)
                                _exit(201);
                        if (g > 0)
                                _exit(waitpid(g, &status, 0) == g && WIFEXITED(status)
                                              ? WEXITSTATUS(status)
                                              : 202);
                }
                int r = proc_events_new(record, &rec, &pe);
                proc_events_free(pe);
                _exit(-r);
        }
        assert_int_equal(waitpid(c, &status, 0), c);
        assert_true(WIFEXITED(status));
        assert_true(WEXITSTATUS(status) < 200);
        return -WEXITSTATUS(status);
}

static void test_namespaces_are_refused(void **state) {
        /* The connector exists only in the initial network namespace. */
        int r = new_in_namespace(CLONE_NEWNET);
        assert_true(r == -ECONNREFUSED || r == -EPROTONOSUPPORT);
        /* Elsewhere older kernels (6.1) ignore the subscription without an
         * answer, newer ones acknowledge it with EPERM: refused either way. */
        r = new_in_namespace(CLONE_NEWPID);
        assert_true(r == -EOPNOTSUPP || r == -EPERM);
        r = new_in_namespace(CLONE_NEWUSER);
        assert_true(r == -EOPNOTSUPP || r == -EPERM);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dispatch_empty),
                cmocka_unit_test(test_lifecycle_true),
                cmocka_unit_test(test_lifecycle_false),
                cmocka_unit_test(test_callback_error_stops_dispatch),
                cmocka_unit_test(test_overflow_is_reported),
                cmocka_unit_test(test_namespaces_are_refused),
        };
        Recorder rec = { 0 };
        ProcEvents *pe = NULL;
        int r;

        if (geteuid() != 0) {
                printf("skip: the proc connector tests need root (CAP_NET_ADMIN)\n");
                return 77;
        }
        r = proc_events_new(record, &rec, &pe);
        proc_events_free(pe);
        if (r < 0 && pid_ns_is_initial(NULL) == 0) {
                /* Refused, not hanging: what placed relies on to fall back. */
                if (r != -EOPNOTSUPP && r != -EPERM) {
                        printf("in a PID namespace the proc connector failed with %s, "
                               "not EOPNOTSUPP or EPERM\n",
                               strerror(-r));
                        return 1;
                }
                printf("skip: in a PID namespace the kernel refuses the proc connector (%s); "
                       "placed notices exits on the tick there\n",
                       strerror(-r));
                return 77;
        }
        if (r < 0) {
                printf("skip: no proc connector here: %s\n", strerror(-r));
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
