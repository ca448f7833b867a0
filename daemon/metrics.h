/* SPDX-License-Identifier: MIT */
/*
 * The metrics of a running placed: the manager's state gathered into the
 * plain figures lib/metrics-text.c formats, for the Metrics() D-Bus method
 * (placectl metrics) and the [metrics] textfile node_exporter reads.
 */
#pragma once

#include <stddef.h>

#include "manager.h"
#include "metrics-text.h"

/*
 * metrics_text() - the metrics of the last tick in format.
 * Return: 0 and *ret (malloc'd) and *ret_len; -EINVAL unknown format; -ENOMEM.
 */
int metrics_text(const Manager *m, MetricsFormat format, char **ret, size_t *ret_len);

/*
 * metrics_tick() - after a tick: write [metrics] textfile (Prometheus text
 * format) on the first tick and every [metrics] every_ticks after it. An
 * error is logged when it first happens and when it clears, not every tick.
 */
void metrics_tick(Manager *m);
