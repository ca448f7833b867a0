/* SPDX-License-Identifier: MIT */
/*
 * The event loop: the only file that includes libevent. It wires the tick
 * timer, the signals, the sd_notify watchdog, the sd-bus connection and any
 * source that exposes an fd and a _dispatch() into one libevent base.
 */
#pragma once

#include <stdint.h>
#include <systemd/sd-bus.h>

typedef struct Loop Loop;

typedef void (*LoopCallback)(void *userdata);

int loop_new(Loop **ret);
Loop *loop_free(Loop *l);

/* A periodic timer. Return: 0 or negative errno. */
int loop_add_timer(Loop *l, uint64_t interval_usec, LoopCallback cb, void *userdata);
/* Changes the period of the timer added first (the tick). */
int loop_set_tick_interval(Loop *l, uint64_t interval_usec);

/*
 * Calls cb in the loop when signo arrives, through a signalfd: signo is
 * blocked from now on, for the rest of the process, so it never takes its
 * default action (block it earlier for start-up, as main() does).
 */
int loop_add_signal(Loop *l, int signo, LoopCallback cb, void *userdata);

/* Calls cb whenever fd is readable (a sampler, the proc connector ...). */
int loop_add_fd(Loop *l, int fd, LoopCallback cb, void *userdata);
/* Stops watching fd, before its owner closes it. Return: 0, or -ENOENT. */
int loop_remove_fd(Loop *l, int fd);

/* Dispatches bus whenever it has work; re-arms after every callback. */
int loop_attach_bus(Loop *l, sd_bus *bus);
void loop_detach_bus(Loop *l);

/* Sends WATCHDOG=1 at half the interval systemd asked for, if it asked. */
int loop_enable_watchdog(Loop *l);

int loop_run(Loop *l);
void loop_exit(Loop *l);
