/* SPDX-License-Identifier: MIT */
/*
 * Test helper for tests/test-dbus-hardening.sh, on a private bus:
 *
 *   bus-helper ADDRESS polkit
 *       owns org.freedesktop.PolicyKit1 and answers CheckAuthorization by
 *       action: org.placed1.set-profile never (a hung polkit),
 *       org.placed1.reload yes after one second, anything else yes at once.
 *   bus-helper ADDRESS hold N
 *       one client that asks placed for N profile holds on one connection,
 *       prints "ok COOKIE" or "error NAME" per call, then stays connected
 *       until stdin closes.
 *   bus-helper ADDRESS old-placed
 *       owns org.placed1 and serves what a placed older than CpuTopology()
 *       served, with fixed figures (Ticks 42, TickCostUSec 812, one CPU in
 *       CpuStats()): no CpuTopology(), QuickTicks, TickStagesUSec,
 *       CapacitySource or Asymmetric, for placectl's handling of an older
 *       daemon (tests/test-dbus.sh).
 *
 * The names and signatures are lib/bus-contract.h's, as placed's and
 * placectl's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-contract.h"
#include "macro.h"

#define MAX_PENDING 64

typedef struct Pending {
        sd_bus_message *msg;
        uint64_t due_usec; /* 0 = never */
} Pending;

static Pending pending[MAX_PENDING];

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int reply_yes(sd_bus_message *msg) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'r', POLKIT_RESULT_FIELDS);
        if (r >= 0)
                r = sd_bus_message_append(reply, "bb", 1, 0);
        if (r >= 0)
                r = sd_bus_message_append(reply, "a{ss}", 0);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

static int check_authorization(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *action;
        int r = sd_bus_message_skip(msg, "(sa{sv})");
        if (r >= 0)
                r = sd_bus_message_read(msg, "s", &action);
        if (r < 0)
                return r;
        fprintf(stderr, "fake polkit: asked for %s\n", action);
        if (strcmp(action, PLACED_ACTION_SET_PROFILE) != 0 &&
            strcmp(action, PLACED_ACTION_RELOAD) != 0)
                return reply_yes(msg);
        for (unsigned i = 0; i < MAX_PENDING; i++)
                if (!pending[i].msg) {
                        pending[i].msg = sd_bus_message_ref(msg);
                        pending[i].due_usec = strcmp(action, PLACED_ACTION_RELOAD) == 0
                                                      ? now_usec() + 1000000
                                                      : 0;
                        return 1; /* answered later, or never */
                }
        return -EBUSY;
}

static const sd_bus_vtable authority_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("CheckAuthorization", POLKIT_CHECK_IN, POLKIT_CHECK_OUT, check_authorization,
                      SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

/* Serves vtable at path and interface under name, then says "ready" on
 * stdout. Return: 0, or negative errno (said on stderr as what's). */
static int publish(sd_bus *bus, const char *what, const char *name, const char *path,
                   const char *interface, const sd_bus_vtable *vtable) {
        int r = sd_bus_add_object_vtable(bus, NULL, path, interface, vtable, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, name, 0);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", what, strerror(-r));
                return r;
        }
        printf("ready\n");
        fflush(stdout);
        return 0;
}

static int run_polkit(sd_bus *bus) {
        int r = publish(bus, "fake polkit", POLKIT_BUS_NAME, POLKIT_BUS_PATH, POLKIT_BUS_INTERFACE,
                        authority_vtable);
        if (r < 0)
                return 1;
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return 0;
                if (r > 0)
                        continue;
                for (unsigned i = 0; i < MAX_PENDING; i++)
                        if (pending[i].msg && pending[i].due_usec &&
                            pending[i].due_usec <= now_usec()) {
                                reply_yes(pending[i].msg);
                                pending[i].msg = sd_bus_message_unref(pending[i].msg);
                        }
                sd_bus_wait(bus, 50000);
        }
}

/* ---- An older placed ---- */

static int old_get_string(sd_bus *bus, const char *path, const char *interface,
                          const char *property, sd_bus_message *reply, void *userdata,
                          sd_bus_error *error) {
        const char *v = strcmp(property, "ActiveProfile") == 0         ? "balanced"
                        : strcmp(property, "ActiveProfileSource") == 0 ? "configured"
                        : strcmp(property, "ActiveProfileReason") == 0 ? "configured"
                        : strcmp(property, "Mode") == 0                ? "advise"
                        : strcmp(property, "WakeSource") == 0          ? "none"
                                                                       : "0.0.9";
        return sd_bus_message_append(reply, "s", v);
}

static int old_get_count(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        uint64_t v = strcmp(property, "Ticks") == 0          ? 42
                     : strcmp(property, "TickCostUSec") == 0 ? 812
                                                             : 0;
        return sd_bus_message_append(reply, "t", v);
}

static int old_get_holds(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, PLACED_SIG_HOLDS, 0);
}

static int old_list_groups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(msg, PLACED_SIG_LIST_GROUPS, 0);
}

/* One CPU, busy a quarter of the tick, without cpuidle states. */
static int old_cpu_stats(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', PLACED_CPU);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'r', PLACED_CPU_FIELDS);
        if (r >= 0)
                r = sd_bus_message_append(reply, "udddu", 0, 0.25, 100.0, 0.0, 0);
        if (r >= 0)
                r = sd_bus_message_append(reply, "a" PLACED_IDLE_STATE, 0);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

static const sd_bus_vtable old_placed_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("ActiveProfile", "s", old_get_string, 0, 0),
        SD_BUS_PROPERTY("ActiveProfileSource", "s", old_get_string, 0, 0),
        SD_BUS_PROPERTY("ActiveProfileReason", "s", old_get_string, 0, 0),
        SD_BUS_PROPERTY("Mode", "s", old_get_string, 0, 0),
        SD_BUS_PROPERTY("Version", "s", old_get_string, 0, 0),
        SD_BUS_PROPERTY("WakeSource", "s", old_get_string, 0, 0),
        SD_BUS_PROPERTY("Holds", PLACED_SIG_HOLDS, old_get_holds, 0, 0),
        SD_BUS_PROPERTY("PlacementChanges", "t", old_get_count, 0, 0),
        SD_BUS_PROPERTY("Reloads", "t", old_get_count, 0, 0),
        SD_BUS_PROPERTY("Ticks", "t", old_get_count, 0, 0),
        SD_BUS_PROPERTY("TickCostUSec", "t", old_get_count, 0, 0),
        SD_BUS_METHOD("ListGroups", "", PLACED_SIG_LIST_GROUPS, old_list_groups,
                      SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("CpuStats", "", PLACED_SIG_CPU_STATS, old_cpu_stats,
                      SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static int run_old_placed(sd_bus *bus) {
        int r = publish(bus, "old placed", PLACED_BUS_NAME, PLACED_BUS_PATH, PLACED_BUS_INTERFACE,
                        old_placed_vtable);
        if (r < 0)
                return 1;
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return 0;
                if (r == 0)
                        sd_bus_wait(bus, UINT64_MAX);
        }
}

static int run_hold(sd_bus *bus, int n) {
        for (int i = 0; i < n; i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                uint32_t cookie;
                int r = sd_bus_call_method(bus, PLACED_BUS_NAME, PLACED_BUS_PATH,
                                           PLACED_BUS_INTERFACE, "HoldProfile", &error, &reply,
                                           "ss", "power-first", "bus-helper");
                if (r >= 0 && sd_bus_message_read(reply, "u", &cookie) >= 0)
                        printf("ok %" PRIu32 "\n", cookie);
                else
                        printf("error %s %s\n", error.name ? error.name : strerror(-r),
                               error.message ? error.message : "");
        }
        fflush(stdout);
        char c;
        while (read(STDIN_FILENO, &c, 1) > 0)
                ;
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        if (argc < 3) {
                fprintf(stderr, "usage: bus-helper ADDRESS polkit | ADDRESS hold N | ADDRESS "
                                "old-placed\n");
                return 2;
        }
        int r = placed_bus_connect(argv[1], &bus);
        if (r < 0) {
                fprintf(stderr, "bus-helper: cannot connect to %s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        if (strcmp(argv[2], "polkit") == 0)
                r = run_polkit(bus);
        else if (strcmp(argv[2], "hold") == 0 && argc == 4)
                r = run_hold(bus, atoi(argv[3]));
        else if (strcmp(argv[2], "old-placed") == 0)
                r = run_old_placed(bus);
        else
                r = 2;
        return r;
}
