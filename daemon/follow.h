/* SPDX-License-Identifier: MIT */
/*
 * Following the power-profiles D-Bus API ([daemon] follow = power-profiles):
 * whichever daemon owns org.freedesktop.UPower.PowerProfiles or
 * net.hadess.PowerProfiles on placed's bus. See follow.c.
 */
#pragma once

#include "manager.h"

/*
 * follow_start() - watch the API on m->bus: who owns it (NameOwnerChanged),
 * its ActiveProfile (PropertiesChanged), and ask once, asynchronously, who
 * owns it now and what its profile is. Reports through
 * manager_follow_update() and manager_follow_lost().
 * Return: 0, or negative errno (logged; placed runs on without following).
 */
int follow_start(Manager *m);

/* Stops watching (before the bus goes away, or when follow is switched off). */
void follow_stop(Manager *m);
