/* SPDX-License-Identifier: MIT */
/*
 * A polkit client for the D-Bus object (after systemd's
 * src/shared/bus-polkit.c): may the sender of a method call do an action?
 * Root may, at once; anyone else when polkit says so, asked asynchronously
 * and non-interactively. It knows the bus and polkit's interface
 * (lib/bus-contract.h), not the manager: what runs once authorized is the
 * caller's.
 */
#pragma once

#include <systemd/sd-bus.h>

/* What an authorized method does; it replies itself, or returns negative with error set. */
typedef int (*BusPolkitThen)(sd_bus_message *msg, void *userdata, sd_bus_error *error);

/*
 * bus_polkit_sender_is_root() - whether msg's sender runs as root. The bus
 * driver vouches for the uid (SO_PEERCRED at connect time); no racy /proc
 * lookup. Return: 1 root, 0 not, negative errno when it cannot be told.
 */
int bus_polkit_sender_is_root(sd_bus_message *msg);

/*
 * bus_polkit_authorize() - runs then(msg, userdata, error) if msg's sender
 * may do action: at once for root, else when polkit has answered. polkit is
 * asked asynchronously and non-interactively (a "challenge" answer is a
 * denial that says to use sudo), so a slow or hung polkit holds up only
 * this caller: the bus and the tick go on, and the call times out after
 * 10 s (BUS_POLKIT_TIMEOUT_USEC; denied). The subject is the sender's bus name,
 * which polkit resolves race-free. Without polkit on the bus, or when it
 * fails, the answer is no (fail closed). userdata must outlive the call.
 *
 * Return: then's result when it ran now; 1 when the answer will come later
 * (the method handler returns it so sd-bus sends no reply of its own);
 * negative with error set otherwise.
 */
int bus_polkit_authorize(sd_bus_message *msg, const char *action, BusPolkitThen then,
                         void *userdata, sd_bus_error *error);
