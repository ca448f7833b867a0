/* SPDX-License-Identifier: MIT */
/*
 * The one way placed, placectl and the tests connect to a bus (see
 * bus-contract.h): the system bus, the session bus or an address. Who then
 * asks or serves what is theirs; this file knows only where the bus is.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "bus-contract.h"
#include "macro.h"

static bool is_system(const char *address) {
        return !address || strcmp(address, "system") == 0;
}

const char *placed_bus_describe(const char *address) {
        if (is_system(address))
                return "the system bus";
        if (strcmp(address, "session") == 0)
                return "the session bus";
        return address;
}

int placed_bus_connect(const char *address, sd_bus **ret) {
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        int r;

        if (is_system(address))
                r = sd_bus_open_system(&bus);
        else if (strcmp(address, "session") == 0)
                r = sd_bus_open_user(&bus);
        else {
                r = sd_bus_new(&bus);
                if (r >= 0)
                        r = sd_bus_set_address(bus, address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, 1);
                if (r >= 0)
                        r = sd_bus_start(bus);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}
