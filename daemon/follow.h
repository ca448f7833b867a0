/* SPDX-License-Identifier: MIT */
/*
 * Following the power-profiles D-Bus API ([daemon] follow = power-profiles):
 * whichever daemon owns org.freedesktop.UPower.PowerProfiles or
 * net.hadess.PowerProfiles on placed's bus. See follow.c. It knows only the
 * bus and reports through callbacks (the bus gives it the manager's).
 */
#pragma once

#include <systemd/sd-bus.h>

typedef struct Follow Follow;

/* Where a Follow reports: the followed daemon's profile, or that none is left. */
typedef struct FollowReport {
        void (*update)(void *userdata, const char *daemon, const char *ppd_profile);
        void (*lost)(void *userdata);
        void *userdata;
} FollowReport;

/*
 * follow_new() - watch the API on bus: who owns it (NameOwnerChanged), its
 * ActiveProfile (PropertiesChanged), and ask once, asynchronously, who owns
 * it now and what its profile is. bus_description names the bus in logs;
 * the owner's command line is read under procfs_root, which must outlive
 * the Follow.
 * Return: 0 and *ret, or negative errno (logged; placed runs on without
 * following).
 */
int follow_new(sd_bus *bus, const char *bus_description, const char *procfs_root,
               const FollowReport *report, Follow **ret);

/* Stops watching (before the bus goes away, or when follow is switched off). Return: NULL. */
Follow *follow_free(Follow *f);
