/* SPDX-License-Identifier: MIT */
/*
 * The polkit client of the D-Bus object (bus-polkit.h). A method call from
 * someone other than root waits, referenced, in a BusPolkitQuery while
 * polkit's CheckAuthorization is pending; the reply (or its timeout) runs
 * the method or denies it, and answers the caller. The pending call belongs
 * to the bus (a floating slot), and the query dies with it, so a caller
 * that leaves or a bus that closes leaks nothing.
 */
#include "bus-polkit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-contract.h"
#include "log.h"
#include "macro.h"

#define BUS_POLKIT_TIMEOUT_USEC (10 * USEC_PER_SEC)

int bus_polkit_sender_is_root(sd_bus_message *msg) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t euid;
        int r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r < 0)
                return r;
        r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return r;
        return euid == 0;
}

/* A method call waiting for polkit's answer. Freed with its slot. */
typedef struct BusPolkitQuery {
        sd_bus_message *msg; /* the caller's method call, answered when polkit has */
        BusPolkitThen then;
        void *userdata;
        char action[64];
} BusPolkitQuery;

static void bus_polkit_query_free(void *userdata) {
        BusPolkitQuery *q = ASSERT_PTR(userdata);
        sd_bus_message_unref(q->msg);
        free(q);
}

/*
 * Reads polkit's answer. Return: 1 authorized, 0 not (error set to
 * AccessDenied; also when polkit is absent or fails: fail closed).
 */
static int bus_polkit_verdict(sd_bus_message *reply, const BusPolkitQuery *q, sd_bus_error *error) {
        const char *sender = sd_bus_message_get_sender(q->msg);
        const sd_bus_error *perr = sd_bus_message_get_error(reply);
        int authorized = 0, challenge = 0, r;

        if (perr && (sd_bus_error_has_name(perr, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
                     sd_bus_error_has_name(perr, SD_BUS_ERROR_NAME_HAS_NO_OWNER))) {
                sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                  "Only root may do this (no polkit on this system to ask).");
                return 0;
        }
        r = perr ? -sd_bus_message_get_errno(reply) : 0;
        if (r >= 0) /* is_authorized, is_challenge, details */
                r = sd_bus_message_enter_container(reply, 'r', POLKIT_RESULT_FIELDS);
        if (r >= 0)
                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0) { /* fail closed: an unregistered action, a timeout, polkit broken ... */
                const char *why =
                        perr && perr->message ? perr->message : strerror(r < 0 ? -r : EIO);
                log_warning("polkit could not decide \"%s\" for %s: %s", q->action, sender, why);
                sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                  "polkit could not decide %s: %s", q->action, why);
                return 0;
        }
        if (authorized)
                return 1;
        sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                          challenge ? "Not authorized for %s without authentication; use sudo."
                                    : "Not authorized for %s.",
                          q->action);
        return 0;
}

/* polkit answered (or the call timed out): run the method or deny it, and reply. */
static int bus_polkit_on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusPolkitQuery *q = ASSERT_PTR(userdata);
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        int r = bus_polkit_verdict(reply, q, &error);
        if (r > 0)
                r = q->then(q->msg, q->userdata, &error);
        else
                r = -EACCES;
        if (r < 0) {
                if (sd_bus_error_is_set(&error))
                        r = sd_bus_reply_method_error(q->msg, &error);
                else
                        r = sd_bus_reply_method_errno(q->msg, r, NULL);
                if (r < 0)
                        log_debug("Cannot answer %s: %s", sd_bus_message_get_sender(q->msg),
                                  strerror(-r));
        }
        return 0;
}

int bus_polkit_authorize(sd_bus_message *msg, const char *action, BusPolkitThen then,
                         void *userdata, sd_bus_error *error) {
        sd_bus *bus = sd_bus_message_get_bus(msg);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;

        int r = bus_polkit_sender_is_root(msg);
        if (r > 0)
                return then(msg, userdata, error);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot tell who is asking: %m");

        BusPolkitQuery *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        *q = (BusPolkitQuery){ .msg = sd_bus_message_ref(msg), .then = then, .userdata = userdata };
        snprintf(q->action, sizeof(q->action), "%s", action);

        r = sd_bus_message_new_method_call(bus, &call, POLKIT_BUS_NAME, POLKIT_BUS_PATH,
                                           POLKIT_BUS_INTERFACE, "CheckAuthorization");
        if (r >= 0)
                /* subject (sa{sv}), action_id, details a{ss}, flags, cancellation_id */
                r = sd_bus_message_append(call, POLKIT_CHECK_IN, "system-bus-name", 1, "name", "s",
                                          sd_bus_message_get_sender(msg), action, 0, UINT32_C(0),
                                          "");
        if (r >= 0)
                r = sd_bus_call_async(bus, &slot, call, bus_polkit_on_reply, q,
                                      BUS_POLKIT_TIMEOUT_USEC);
        if (r < 0) {
                bus_polkit_query_free(q);
                return sd_bus_error_set_errnof(error, r, "Cannot ask polkit: %m");
        }
        /* The bus owns the pending call from now on; q dies with it. */
        (void)sd_bus_slot_set_destroy_callback(slot, bus_polkit_query_free);
        (void)sd_bus_slot_set_floating(slot, 1); /* our reference goes at the return */
        return 1;
}
