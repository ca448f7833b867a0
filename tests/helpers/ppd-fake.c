/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for power-profiles-daemon on a private bus, for
 * tests/test-follow.sh (the real daemon is tested under systemd by make
 * check-system): it owns NAME (net.hadess.PowerProfiles or
 * org.freedesktop.UPower.PowerProfiles) and serves the interface NAME at
 * the matching path with a writable ActiveProfile property that emits
 * PropertiesChanged, like the real daemon. "busctl set-property" switches it.
 *
 *   ppd-fake ADDRESS NAME PROFILE
 *
 * Prints "ready" once it owns NAME; runs until killed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

static char profile[64];
static const char *name, *path;

static int get_profile(sd_bus *bus, const char *p, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", profile);
}

static int set_profile(sd_bus *bus, const char *p, const char *interface, const char *property,
                       sd_bus_message *value, void *userdata, sd_bus_error *error) {
        const char *s;
        int r = sd_bus_message_read(value, "s", &s);
        if (r < 0)
                return r;
        if (strlen(s) >= sizeof(profile))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "too long");
        snprintf(profile, sizeof(profile), "%s", s);
        return sd_bus_emit_properties_changed(bus, path, name, "ActiveProfile", NULL);
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_WRITABLE_PROPERTY("ActiveProfile", "s", get_profile, set_profile, 0,
                                 SD_BUS_VTABLE_UNPRIVILEGED | SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_VTABLE_END,
};

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        int r;

        if (argc != 4) {
                fprintf(stderr, "usage: ppd-fake ADDRESS NAME PROFILE\n");
                return 2;
        }
        name = argv[2];
        path = strcmp(name, "net.hadess.PowerProfiles") == 0
                       ? "/net/hadess/PowerProfiles"
                       : "/org/freedesktop/UPower/PowerProfiles";
        snprintf(profile, sizeof(profile), "%s", argv[3]);

        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, argv[1]);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, path, name, vtable, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, name, 0);
        if (r < 0) {
                fprintf(stderr, "ppd-fake: %s\n", strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        break;
                if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                        break;
        }
        sd_bus_flush_close_unref(bus);
        return r < 0 ? 1 : 0;
}
