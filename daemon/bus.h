/* SPDX-License-Identifier: MIT */
/*
 * The D-Bus object org.placed1 /org/placed1, interface org.placed1.Manager.
 * See bus.c for the API and the access rules; the names and signatures
 * clients share are in lib/bus-contract.h.
 */
#pragma once

#include "bus-contract.h"
#include "manager.h"

/*
 * bus_open() - connect as spec says ("system", "session", "none" or an
 * address), publish the object and request the name. Sets m->bus (NULL for
 * "none") and m->bus_description.
 * Return: 0 (also for "none"), or negative errno (logged).
 */
int bus_open(Manager *m, const char *spec);
void bus_close(Manager *m);

/*
 * bus_apply_follow() - start or stop following the power-profiles API on
 * m->bus (follow.c) as m->config.follow says; without a bus, say that
 * placed cannot follow.
 */
void bus_apply_follow(Manager *m);

/* Emits PropertiesChanged for the NULL-terminated property names. No-op without a bus. */
void bus_emit_properties_changed(Manager *m, const char *property, ...);

/* Emits the PlacementChanged signal. No-op without a bus. */
void bus_emit_placement_changed(Manager *m);
