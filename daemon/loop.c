/* SPDX-License-Identifier: MIT */
/*
 * The event loop, and the only file that includes libevent.
 *
 * Sources are plain callbacks: the tick timer, signals, readable fds of
 * samplers and the proc connector, the watchdog, and the sd-bus connection.
 *
 * Why signals come through a signalfd, not libevent's handlers: a handler
 * exists only while its event does, so a SIGINT or SIGTERM that came before
 * the loop was set up, or a second one after it was freed (during the rest
 * of shutdown), met the default action and killed placed (exit 130 on
 * SIGINT, after "Stopping."). A signal the loop watches is blocked for the
 * rest of the process (main() blocks the daemon's before start-up): one
 * that comes early waits for the loop, one that comes late is dropped at
 * exit, and the callback runs in the loop, so it may do real work. sd-bus
 * tells us which fd, which poll events and which absolute timeout it wants;
 * since any callback may queue bus messages (a property change, a signal),
 * the bus event is re-armed after every callback, not only after its own.
 */
#include "loop.h"

#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"

#define LOOP_MAX_SOURCES 32

typedef struct LoopSource {
        Loop *loop;
        struct event *ev;
        LoopCallback cb;
        void *userdata;
        bool owns_fd; /* a signalfd, closed with the source */
} LoopSource;

struct Loop {
        struct event_base *base;
        LoopSource sources[LOOP_MAX_SOURCES];
        unsigned n_sources;
        LoopSource *tick; /* the first timer added */

        sd_bus *bus;
        struct event *bus_ev;

        struct event *watchdog_ev;
};

static struct timeval timeval_from_usec(uint64_t usec) {
        return (struct timeval){ .tv_sec = (time_t)(usec / USEC_PER_SEC),
                                 .tv_usec = (suseconds_t)(usec % USEC_PER_SEC) };
}

static void bus_rearm(Loop *l);

static void source_dispatch(evutil_socket_t fd, short what, void *arg) {
        LoopSource *s = ASSERT_PTR(arg);
        s->cb(s->userdata);
        bus_rearm(s->loop);
}

/* Reads what the signalfd holds; standard signals do not queue, so one call covers them. */
static void signal_dispatch(evutil_socket_t fd, short what, void *arg) {
        LoopSource *s = ASSERT_PTR(arg);
        struct signalfd_siginfo si;
        bool any = false;
        while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                any = true;
        if (!any)
                return;
        s->cb(s->userdata);
        bus_rearm(s->loop);
}

static int loop_add_source(Loop *l, int fd, short events, const struct timeval *tv,
                           event_callback_fn dispatch, LoopCallback cb, void *userdata,
                           LoopSource **ret) {
        if (l->n_sources >= LOOP_MAX_SOURCES)
                return -E2BIG;
        LoopSource *s = &l->sources[l->n_sources];
        *s = (LoopSource){ .loop = l, .cb = cb, .userdata = userdata };
        s->ev = event_new(l->base, fd, events, dispatch, s);
        if (!s->ev)
                return -ENOMEM;
        if (event_add(s->ev, tv) < 0) {
                event_free(s->ev);
                return -EINVAL;
        }
        l->n_sources++;
        if (ret)
                *ret = s;
        return 0;
}

int loop_new(Loop **ret) {
        Loop *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->base = event_base_new();
        if (!l->base) {
                free(l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

Loop *loop_free(Loop *l) {
        if (!l)
                return NULL;
        loop_detach_bus(l);
        if (l->watchdog_ev)
                event_free(l->watchdog_ev);
        for (unsigned i = 0; i < l->n_sources; i++) {
                LoopSource *s = &l->sources[i];
                if (!s->ev)
                        continue;
                if (s->owns_fd)
                        close(event_get_fd(s->ev));
                event_free(s->ev);
        }
        event_base_free(l->base);
        free(l);
        return NULL;
}

int loop_add_timer(Loop *l, uint64_t interval_usec, LoopCallback cb, void *userdata) {
        struct timeval tv = timeval_from_usec(interval_usec);
        LoopSource *s;
        int r = loop_add_source(l, -1, EV_PERSIST, &tv, source_dispatch, cb, userdata, &s);
        if (r < 0)
                return r;
        if (!l->tick)
                l->tick = s;
        return 0;
}

int loop_set_tick_interval(Loop *l, uint64_t interval_usec) {
        if (!l->tick)
                return -ENOENT;
        struct timeval tv = timeval_from_usec(interval_usec);
        event_del(l->tick->ev);
        return event_add(l->tick->ev, &tv) < 0 ? -EINVAL : 0;
}

int loop_add_signal(Loop *l, int signo, LoopCallback cb, void *userdata) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, signo);
        /* For good: see the top of the file. */
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return negative_errno();
        int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        LoopSource *s;
        int r = loop_add_source(l, fd, EV_READ | EV_PERSIST, NULL, signal_dispatch, cb, userdata,
                                &s);
        if (r < 0) {
                close(fd);
                return r;
        }
        s->owns_fd = true;
        return 0;
}

int loop_add_fd(Loop *l, int fd, LoopCallback cb, void *userdata) {
        return loop_add_source(l, fd, EV_READ | EV_PERSIST, NULL, source_dispatch, cb, userdata,
                               NULL);
}

int loop_remove_fd(Loop *l, int fd) {
        for (unsigned i = 0; i < l->n_sources; i++) {
                struct event *ev = l->sources[i].ev;
                if (!ev || l->sources[i].owns_fd || !(event_get_events(ev) & EV_READ) ||
                    event_get_fd(ev) != fd)
                        continue;
                event_free(ev);
                /* The rest keep their slots: their events point at them. */
                l->sources[i] = (LoopSource){ .loop = l, .ev = NULL };
                return 0;
        }
        return -ENOENT;
}

static void bus_dispatch(evutil_socket_t fd, short what, void *arg) {
        Loop *l = ASSERT_PTR(arg);
        /* Process until sd-bus says there is nothing left; a negative result
         * means the connection broke, which the bus owner sees on its next call. */
        while (l->bus && sd_bus_process(l->bus, NULL) > 0)
                ;
        bus_rearm(l);
}

static void bus_rearm(Loop *l) {
        if (!l->bus)
                return;
        int fd = sd_bus_get_fd(l->bus);
        int events = sd_bus_get_events(l->bus);
        uint64_t until;
        if (fd < 0 || events < 0)
                return;

        short what = 0;
        if (events & POLLIN)
                what |= EV_READ;
        if (events & POLLOUT)
                what |= EV_WRITE;

        if (l->bus_ev)
                event_del(l->bus_ev);
        else {
                l->bus_ev = event_new(l->base, fd, what, bus_dispatch, l);
                if (!l->bus_ev)
                        return;
        }
        event_assign(l->bus_ev, l->base, fd, what, bus_dispatch, l);

        if (sd_bus_get_timeout(l->bus, &until) > 0 && until != UINT64_MAX) {
                uint64_t now = clock_usec(CLOCK_MONOTONIC);
                struct timeval tv = timeval_from_usec(until > now ? until - now : 0);
                event_add(l->bus_ev, &tv);
        } else
                event_add(l->bus_ev, NULL);
}

int loop_attach_bus(Loop *l, sd_bus *bus) {
        loop_detach_bus(l);
        l->bus = sd_bus_ref(bus);
        bus_rearm(l);
        return l->bus_ev ? 0 : -ENOMEM;
}

void loop_detach_bus(Loop *l) {
        if (l->bus_ev) {
                event_free(l->bus_ev);
                l->bus_ev = NULL;
        }
        l->bus = sd_bus_unref(l->bus);
}

static void watchdog_ping(evutil_socket_t fd, short what, void *arg) {
        sd_notify(0, "WATCHDOG=1");
}

int loop_enable_watchdog(Loop *l) {
        uint64_t usec;
        int r = sd_watchdog_enabled(0, &usec);
        if (r <= 0)
                return r;
        struct timeval tv = timeval_from_usec(usec / 2);
        l->watchdog_ev = event_new(l->base, -1, EV_PERSIST, watchdog_ping, l);
        if (!l->watchdog_ev)
                return -ENOMEM;
        if (event_add(l->watchdog_ev, &tv) < 0)
                return -EINVAL;
        return 1;
}

int loop_run(Loop *l) {
        bus_rearm(l);
        return event_base_dispatch(l->base) < 0 ? -EIO : 0;
}

void loop_exit(Loop *l) {
        event_base_loopbreak(l->base);
}
