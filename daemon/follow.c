/* SPDX-License-Identifier: MIT */
/*
 * Follow power-profiles-daemon: placed takes its profile from whichever
 * daemon owns the power-profiles D-Bus API on placed's own bus (the system
 * bus in production; a test may give a private one). Two names carry the
 * same API: net.hadess.PowerProfiles (power-profiles-daemon up to 0.20,
 * Debian 12 ships 0.12) and org.freedesktop.UPower.PowerProfiles (newer
 * power-profiles-daemon, tuned-ppd), each at its own object path with the
 * interface of its own name and the property ActiveProfile ("power-saver",
 * "balanced", "performance"). A daemon may own both; the newer name is
 * preferred when both are known.
 *
 * No polling and no blocking call: the matches are added asynchronously,
 * then GetNameOwner asks who owns each name now; NameOwnerChanged tells
 * when an owner comes or goes, and PropertiesChanged when its profile
 * changes. Properties.Get is sent to the owner's unique name (never to the
 * well-known one, which would start the daemon by D-Bus activation), and a
 * PropertiesChanged counts only when it comes from that unique name, so no
 * other client can fake a switch. The bus delivers a sender's messages in
 * order, so a Get's answer is never older than a signal before it.
 *
 * Who the daemon is ("power-profiles-daemon", "tuned-ppd") is read from
 * the owner's command line (procfs), for the status; the bus name stands in
 * until then.
 */
#include "follow.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"

static bool streq_ptr(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

typedef struct FollowApi {
        const char *name; /* well-known bus name = interface name */
        const char *path;
        char *owner;                    /* unique name owning it; NULL when none; owned */
        char profile[PROFILE_NAME_MAX]; /* its ActiveProfile; "" until known */
        char daemon[64];                /* who the owner is, for people */
        sd_bus_slot *owner_call, *get_call, *pid_call; /* pending calls; owned */
        sd_bus_slot *owner_match, *props_match;
        struct Follow *follow;
} FollowApi;

struct Follow {
        FollowReport report;
        const char *procfs_root; /* the caller's */
        sd_bus *bus;             /* referenced */
        FollowApi apis[2];
};

static const struct {
        const char *name, *path;
} follow_apis[2] = {
        { "org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles" },
        { "net.hadess.PowerProfiles", "/net/hadess/PowerProfiles" },
};

/* Reports the preferred API whose owner and profile are known, or that none is left. */
static void follow_report(Follow *f) {
        for (size_t i = 0; i < ELEMENTSOF(f->apis); i++) {
                FollowApi *a = &f->apis[i];
                if (a->owner && a->profile[0]) {
                        f->report.update(f->report.userdata, a->daemon[0] ? a->daemon : a->name,
                                         a->profile);
                        return;
                }
        }
        /* Nobody owns either name, and no answer on that is still to come. */
        bool any_owner = f->apis[0].owner || f->apis[1].owner;
        bool asking = f->apis[0].owner_call || f->apis[1].owner_call;
        if (!any_owner && !asking)
                f->report.lost(f->report.userdata);
}

static int follow_take_profile(FollowApi *a, const char *profile) {
        if (strlen(profile) >= sizeof(a->profile)) {
                log_warning("%s reports a profile name too long to follow.", a->name);
                return 0;
        }
        snprintf(a->profile, sizeof(a->profile), "%s", profile);
        follow_report(a->follow);
        return 0;
}

/* The answer to Properties.Get(ActiveProfile). */
static int follow_on_get(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        FollowApi *a = ASSERT_PTR(userdata);
        const char *profile;
        a->get_call = sd_bus_slot_unref(a->get_call);

        const sd_bus_error *e = sd_bus_message_get_error(reply);
        if (e) {
                log_warning("Cannot read %s's ActiveProfile: %s", a->name,
                            e->message ? e->message : e->name);
                return 0;
        }
        int r = sd_bus_message_read(reply, "v", "s", &profile);
        if (r < 0) {
                log_warning("%s's ActiveProfile is not a string: %s", a->name, strerror(-r));
                return 0;
        }
        return follow_take_profile(a, profile);
}

static void follow_get_profile(FollowApi *a) {
        Follow *f = a->follow;
        a->get_call = sd_bus_slot_unref(a->get_call);
        int r = sd_bus_call_method_async(f->bus, &a->get_call, a->owner, a->path,
                                         "org.freedesktop.DBus.Properties", "Get", follow_on_get, a,
                                         "ss", a->name, "ActiveProfile");
        if (r < 0)
                log_warning_errno(r, "Cannot ask %s for its profile: %m", a->name);
}

/* The daemon's name from its command line: argv[0]'s base name, past an interpreter. */
static void follow_name_daemon(FollowApi *a, uint32_t pid) {
        char path[PATH_MAX], buf[512];
        snprintf(path, sizeof(path), "%s/%" PRIu32 "/cmdline", a->follow->procfs_root, pid);
        /* The first 511 bytes name the daemon, past an interpreter and its options. */
        int n = read_small_file_head(path, buf, sizeof(buf));
        if (n < 0)
                return;
        for (const char *arg = buf; arg < buf + n; arg += strlen(arg) + 1) {
                const char *base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
                if (*base == '\0' || *base == '-')
                        continue;
                if (strncmp(base, "python", 6) == 0 || strncmp(base, "perl", 4) == 0)
                        continue; /* tuned-ppd is a Python script */
                snprintf(a->daemon, sizeof(a->daemon), "%.*s", (int)sizeof(a->daemon) - 1, base);
                follow_report(a->follow);
                return;
        }
}

static int follow_on_pid(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        FollowApi *a = ASSERT_PTR(userdata);
        uint32_t pid;
        a->pid_call = sd_bus_slot_unref(a->pid_call);
        if (!sd_bus_message_is_method_error(reply, NULL) &&
            sd_bus_message_read(reply, "u", &pid) >= 0)
                follow_name_daemon(a, pid);
        return 0;
}

/* A new owner (or none): forget what the old one said, ask the new one. */
static void follow_set_owner(FollowApi *a, const char *owner) {
        Follow *f = a->follow;
        if (owner && owner[0] == '\0')
                owner = NULL;
        if ((a->owner && owner && strcmp(a->owner, owner) == 0) || (!a->owner && !owner))
                return;
        a->owner = mfree(a->owner);
        a->profile[0] = '\0';
        a->daemon[0] = '\0';
        a->get_call = sd_bus_slot_unref(a->get_call);
        a->pid_call = sd_bus_slot_unref(a->pid_call);
        if (owner) {
                a->owner = strdup(owner);
                if (!a->owner) {
                        log_warning("Out of memory following %s.", a->name);
                        return;
                }
                log_debug("%s is owned by %s.", a->name, owner);
                int r = sd_bus_call_method_async(f->bus, &a->pid_call, "org.freedesktop.DBus",
                                                 "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                 "GetConnectionUnixProcessID", follow_on_pid, a,
                                                 "s", owner);
                if (r < 0)
                        log_debug("Cannot ask who %s is: %s", owner, strerror(-r));
                follow_get_profile(a);
        } else
                log_debug("%s has no owner now.", a->name);
        follow_report(f);
}

static int follow_on_name_owner(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        FollowApi *a = ASSERT_PTR(userdata);
        const char *owner;
        a->owner_call = sd_bus_slot_unref(a->owner_call);
        if (sd_bus_message_is_method_error(reply, NULL)) { /* NameHasNoOwner: nobody yet */
                follow_report(a->follow);
                return 0;
        }
        if (sd_bus_message_read(reply, "s", &owner) >= 0)
                follow_set_owner(a, owner);
        return 0;
}

static int follow_on_owner_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        FollowApi *a = ASSERT_PTR(userdata);
        const char *name, *old_owner, *new_owner;
        if (sd_bus_message_read(msg, "sss", &name, &old_owner, &new_owner) < 0 ||
            strcmp(name, a->name) != 0)
                return 0;
        follow_set_owner(a, new_owner);
        return 0;
}

/* PropertiesChanged(s interface, a{sv} changed, as invalidated) from the owner. */
static int follow_on_properties(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        FollowApi *a = ASSERT_PTR(userdata);
        const char *interface, *key, *profile = NULL;
        bool invalidated = false;

        if (!a->owner || !streq_ptr(sd_bus_message_get_sender(msg), a->owner) ||
            !streq_ptr(sd_bus_message_get_path(msg), a->path))
                return 0;
        int r = sd_bus_message_read(msg, "s", &interface);
        if (r < 0 || strcmp(interface, a->name) != 0)
                return 0;
        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                r = sd_bus_message_read(msg, "s", &key);
                if (r >= 0 && strcmp(key, "ActiveProfile") == 0)
                        r = sd_bus_message_read(msg, "v", "s", &profile);
                else if (r >= 0)
                        r = sd_bus_message_skip(msg, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(msg);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(msg);
        if (r >= 0)
                r = sd_bus_message_enter_container(msg, 'a', "s");
        while (r >= 0 && (r = sd_bus_message_read(msg, "s", &key)) > 0)
                invalidated = invalidated || strcmp(key, "ActiveProfile") == 0;
        if (r < 0) {
                log_debug("Malformed PropertiesChanged from %s: %s", a->name, strerror(-r));
                return 0;
        }
        if (profile)
                return follow_take_profile(a, profile);
        if (invalidated)
                follow_get_profile(a);
        return 0;
}

static int follow_on_match_installed(sd_bus_message *reply, void *userdata,
                                     sd_bus_error *ret_error) {
        FollowApi *a = ASSERT_PTR(userdata);
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        if (e)
                log_warning("Cannot watch %s on the bus: %s", a->name,
                            e->message ? e->message : e->name);
        return 0;
}

static int follow_watch_api(Follow *f, FollowApi *a) {
        char rule[512];
        int r;

        snprintf(rule, sizeof(rule),
                 "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                 "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='%s'",
                 a->name);
        r = sd_bus_add_match_async(f->bus, &a->owner_match, rule, follow_on_owner_changed,
                                   follow_on_match_installed, a);
        if (r < 0)
                return r;
        snprintf(rule, sizeof(rule),
                 "type='signal',path='%s',interface='org.freedesktop.DBus.Properties',"
                 "member='PropertiesChanged',arg0='%s'",
                 a->path, a->name);
        r = sd_bus_add_match_async(f->bus, &a->props_match, rule, follow_on_properties,
                                   follow_on_match_installed, a);
        if (r < 0)
                return r;
        /* After the matches, so that no change between the answer and them is missed. */
        return sd_bus_call_method_async(f->bus, &a->owner_call, "org.freedesktop.DBus",
                                        "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "GetNameOwner", follow_on_name_owner, a, "s", a->name);
}

Follow *follow_free(Follow *f) {
        if (!f)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(f->apis); i++) {
                FollowApi *a = &f->apis[i];
                sd_bus_slot_unref(a->owner_call);
                sd_bus_slot_unref(a->get_call);
                sd_bus_slot_unref(a->pid_call);
                sd_bus_slot_unref(a->owner_match);
                sd_bus_slot_unref(a->props_match);
                free(a->owner);
        }
        sd_bus_unref(f->bus);
        free(f);
        return NULL;
}

int follow_new(sd_bus *bus, const char *bus_description, const char *procfs_root,
               const FollowReport *report, Follow **ret) {
        const char *where = bus_description ? bus_description : "D-Bus";
        Follow *f = calloc(1, sizeof(*f));
        if (!f)
                return log_error_errno(ENOMEM, "Cannot follow power-profiles: %m");
        f->report = *report;
        f->procfs_root = procfs_root;
        f->bus = sd_bus_ref(bus);
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(f->apis) && r >= 0; i++) {
                f->apis[i] = (FollowApi){ .name = follow_apis[i].name,
                                          .path = follow_apis[i].path,
                                          .follow = f };
                r = follow_watch_api(f, &f->apis[i]);
        }
        if (r < 0) {
                follow_free(f);
                return log_warning_errno(
                        r, "Cannot watch the power-profiles API on %s; not following: %m", where);
        }
        log_info("Following the power-profiles API (%s, %s) on %s.", follow_apis[0].name,
                 follow_apis[1].name, where);
        *ret = f;
        return 0;
}
