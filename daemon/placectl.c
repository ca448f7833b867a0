/* SPDX-License-Identifier: MIT */
/*
 * placectl: query and steer placed over D-Bus. A plain sd-bus client of
 * org.placed1 (see bus.c for the API); it links none of the daemon.
 *
 * Exit codes are part of the interface, so scripts can tell apart what went
 * wrong: 0 ok, 1 the daemon refused or failed (its message is printed),
 * 2 bad usage, 3 placed not reachable (no bus, or nobody owns org.placed1),
 * 4 access denied. "hold" returns its command's exit code.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "bus.h"
#include "macro.h"

enum {
        EXIT_OK = 0,
        EXIT_DAEMON = 1,
        EXIT_USAGE = 2,
        EXIT_UNREACHABLE = 3,
        EXIT_DENIED = 4,
};

typedef struct Args {
        const char *address; /* NULL: PLACED_BUS_ADDRESS, else the system bus */
        const char *reason;  /* hold --reason */
        bool json;
        bool dot;
        bool reset; /* profile --reset */
} Args;

/* What each error means, in words, before the daemon's own message. */
static const struct {
        const char *name;
        const char *meaning;
        int exit_code;
} error_table[] = {
        { "org.placed1.Error.UnknownProfile", "unknown profile", EXIT_DAEMON },
        { "org.placed1.Error.UnknownTask", "unknown task", EXIT_DAEMON },
        { "org.placed1.Error.UnknownHold", "unknown hold", EXIT_DAEMON },
        { "org.placed1.Error.ConfigInvalid", "configuration invalid", EXIT_DAEMON },
        { "org.placed1.Error.TooManyHolds", "too many holds", EXIT_DAEMON },
        { SD_BUS_ERROR_INVALID_ARGS, "invalid argument", EXIT_DAEMON },
        { SD_BUS_ERROR_ACCESS_DENIED, "access denied", EXIT_DENIED },
        { SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED, "access denied", EXIT_DENIED },
        { SD_BUS_ERROR_SERVICE_UNKNOWN, "placed is not running on this bus", EXIT_UNREACHABLE },
        { SD_BUS_ERROR_NAME_HAS_NO_OWNER, "placed is not running on this bus", EXIT_UNREACHABLE },
        { SD_BUS_ERROR_NO_REPLY, "placed did not answer", EXIT_UNREACHABLE },
        { SD_BUS_ERROR_DISCONNECTED, "disconnected from the bus", EXIT_UNREACHABLE },
        { SD_BUS_ERROR_UNKNOWN_METHOD, "placed does not know this request (older version?)",
          EXIT_DAEMON },
};

static void help(void) {
        printf("Usage: placectl [OPTIONS] COMMAND [ARGS]\n"
               "\n"
               "Query and steer placed, the power-aware task placement daemon.\n"
               "\n"
               "Commands:\n"
               "  status                    Profile, mode, holds, wake sampler and its cost,\n"
               "                            groups, energy, and per CPU busy time, wakeups\n"
               "                            and idle-state residency\n"
               "  profile                   Print the active profile\n"
               "  profile NAME              Select profile NAME (power-first, balanced,\n"
               "                            latency-first, or one of your own); it wins over\n"
               "                            the followed and the configured profile\n"
               "  profile --reset           Drop that choice: follow power-profiles-daemon\n"
               "                            again (follow = power-profiles), else the\n"
               "                            configured profile\n"
               "  groups                    The task groups placed manages, and where they run\n"
               "  explain TID               Why task TID runs where it does\n"
               "  graph [--dot|--json]      The wake graph, for Graphviz (dot -Tsvg) or as JSON\n"
               "  snapshot [FILE]           What the last decision was made from (JSON), for\n"
               "                            \"placed --plan --snapshot FILE\" or a bug report\n"
               "  reload                    Re-read the configuration and profiles\n"
               "  restore                   Undo every change and switch to advise mode\n"
               "  hold PROFILE -- COMMAND [ARG...]\n"
               "                            Hold PROFILE while COMMAND runs; exit with its code\n"
               "\n"
               "Options:\n"
               "  -a --address ADDRESS      D-Bus address of placed's bus, or \"system\" or\n"
               "                            \"session\" [$PLACED_BUS_ADDRESS, else system]\n"
               "  -j --json                 Print JSON (status, profile, groups, explain, graph)\n"
               "  -r --reason TEXT          Why you hold a profile (hold; shown in status)\n"
               "     --reset                With profile: release the chosen profile\n"
               "  -h --help                 Show this help\n"
               "     --version              Show the version\n"
               "\n"
               "Changing anything needs root or polkit's consent; reading does not.\n"
               "Exit status: 0 ok, 1 placed refused or failed, 2 usage, 3 placed not\n"
               "reachable, 4 access denied; hold exits with COMMAND's status.\n"
               "See placectl(1).\n");
}

_printf_(1, 2) static int usage_error(const char *fmt, ...) {
        va_list ap;
        fprintf(stderr, "placectl: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry \"placectl --help\".\n");
        return EXIT_USAGE;
}

/* Prints what went wrong. Return: the exit code for it. */
static int report_error(const sd_bus_error *e, int r, const char *what) {
        for (size_t i = 0; i < ELEMENTSOF(error_table); i++)
                if (sd_bus_error_has_name(e, error_table[i].name)) {
                        fprintf(stderr, "placectl: %s: %s\n", error_table[i].meaning,
                                e->message ? e->message : what);
                        return error_table[i].exit_code;
                }
        if (sd_bus_error_is_set(e))
                fprintf(stderr, "placectl: %s failed: %s (%s)\n", what,
                        e->message ? e->message : "", e->name);
        else
                fprintf(stderr, "placectl: %s failed: %s\n", what, strerror(-r));
        if (r == -EACCES || r == -EPERM)
                return EXIT_DENIED;
        if (r == -ECONNRESET || r == -ENOTCONN || r == -ETIMEDOUT)
                return EXIT_UNREACHABLE;
        return EXIT_DAEMON;
}

/* Return: 0 with *ret, or an exit code (message printed). */
static int connect_bus(const char *address, sd_bus **ret) {
        sd_bus *bus = NULL;
        const char *where = address;
        int r;

        if (!address)
                address = getenv("PLACED_BUS_ADDRESS");
        if (!address || strcmp(address, "system") == 0) {
                where = "the system bus";
                r = sd_bus_open_system(&bus);
        } else if (strcmp(address, "session") == 0) {
                where = "the session bus";
                r = sd_bus_open_user(&bus);
        } else {
                where = address;
                r = sd_bus_new(&bus);
                if (r >= 0)
                        r = sd_bus_set_address(bus, address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, 1);
                if (r >= 0)
                        r = sd_bus_start(bus);
        }
        if (r < 0) {
                sd_bus_unref(bus);
                fprintf(stderr, "placectl: cannot connect to %s: %s\n", where, strerror(-r));
                if (r == -ENOENT || r == -ECONNREFUSED)
                        fprintf(stderr, "placectl: no bus there; if placed runs on a private bus, "
                                        "pass --address ADDRESS or set PLACED_BUS_ADDRESS.\n");
                return EXIT_UNREACHABLE;
        }
        /* Lets polkit ask for a password where it would (harmless otherwise). */
        (void)sd_bus_set_allow_interactive_authorization(bus, 1);
        *ret = bus;
        return 0;
}

/* Calls a method of org.placed1.Manager. Return: 0 with *ret_reply, or an exit code. */
static int call(sd_bus *bus, const char *method, sd_bus_message **ret_reply, const char *types,
                ...) {
        sd_bus_message *msg = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        va_list ap;

        int r = sd_bus_message_new_method_call(bus, &msg, PLACED_BUS_NAME, PLACED_BUS_PATH,
                                               PLACED_BUS_INTERFACE, method);
        if (r >= 0 && types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(msg, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_call(bus, msg, 0, &error, &reply);
        sd_bus_message_unref(msg);
        if (r < 0) {
                int code = report_error(&error, r, method);
                sd_bus_error_free(&error);
                return code;
        }
        if (ret_reply)
                *ret_reply = reply;
        else
                sd_bus_message_unref(reply);
        return 0;
}

static void print_json(json_object *o) {
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
}

static int parse_error(int r) {
        fprintf(stderr, "placectl: unexpected reply from placed: %s\n", strerror(-r));
        return EXIT_DAEMON;
}

/* Reads one property's variant into the status object under key. Return: 0 or negative errno. */
static int status_read_value(sd_bus_message *reply, const char *key, json_object *status) {
        const char *contents;
        char type;
        int r = sd_bus_message_peek_type(reply, &type, &contents);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'v', contents);
        if (r < 0)
                return r;

        json_object *v = NULL;
        if (strcmp(contents, "s") == 0) {
                const char *s;
                r = sd_bus_message_read(reply, "s", &s);
                if (r >= 0)
                        v = json_object_new_string(s);
        } else if (strcmp(contents, "t") == 0) {
                uint64_t t;
                r = sd_bus_message_read(reply, "t", &t);
                if (r >= 0)
                        v = json_object_new_uint64(t);
        } else if (strcmp(contents, "d") == 0) {
                double d;
                r = sd_bus_message_read(reply, "d", &d);
                if (r >= 0)
                        v = json_object_new_double(d);
        } else if (strcmp(contents, "u") == 0) {
                uint32_t u;
                r = sd_bus_message_read(reply, "u", &u);
                if (r >= 0)
                        v = json_object_new_int64(u);
        } else if (strcmp(contents, "as") == 0) {
                const char *s;
                v = json_object_new_array();
                r = sd_bus_message_enter_container(reply, 'a', "s");
                while (r >= 0 && (r = sd_bus_message_read(reply, "s", &s)) > 0)
                        json_object_array_add(v, json_object_new_string(s));
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        } else if (strcmp(contents, "a(uss)") == 0) { /* Holds */
                const char *profile, *reason;
                uint32_t cookie;
                v = json_object_new_array();
                r = sd_bus_message_enter_container(reply, 'a', "(uss)");
                while (r >= 0 &&
                       (r = sd_bus_message_read(reply, "(uss)", &cookie, &profile, &reason)) > 0) {
                        json_object *h = json_object_new_object();
                        json_object_object_add(h, "cookie", json_object_new_int64(cookie));
                        json_object_object_add(h, "profile", json_object_new_string(profile));
                        json_object_object_add(h, "reason", json_object_new_string(reason));
                        json_object_array_add(v, h);
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        } else if (strcmp(contents, "(sss)") == 0) { /* Follow */
                const char *state, *daemon, *profile;
                r = sd_bus_message_read(reply, "(sss)", &state, &daemon, &profile);
                if (r >= 0) {
                        v = json_object_new_object();
                        json_object_object_add(v, "state", json_object_new_string(state));
                        json_object_object_add(v, "daemon", json_object_new_string(daemon));
                        json_object_object_add(v, "profile", json_object_new_string(profile));
                }
        } else
                r = sd_bus_message_skip(reply, contents); /* newer daemon, unknown type */
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0 && v)
                json_object_object_add(status, key, v);
        else
                json_object_put(v);
        return r;
}

/* Fetches every property with one GetAll. Return: 0 with *ret, or an exit code. */
static int fetch_status(sd_bus *bus, json_object **ret) {
        sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *key;

        int r = sd_bus_call_method(bus, PLACED_BUS_NAME, PLACED_BUS_PATH,
                                   "org.freedesktop.DBus.Properties", "GetAll", &error, &reply, "s",
                                   PLACED_BUS_INTERFACE);
        if (r < 0) {
                int code = report_error(&error, r, "reading the status");
                sd_bus_error_free(&error);
                return code;
        }

        json_object *status = json_object_new_object();
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &key);
                if (r >= 0)
                        r = status_read_value(reply, key, status);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        sd_bus_message_unref(reply);
        if (r < 0) {
                json_object_put(status);
                return parse_error(r);
        }
        *ret = status;
        return 0;
}

static const char *status_str(json_object *status, const char *key) {
        json_object *v;
        return json_object_object_get_ex(status, key, &v) ? json_object_get_string(v) : "?";
}

static int verb_profile(sd_bus *bus, const Args *a, int argc, char **argv) {
        if (argc > 1)
                return usage_error("profile takes at most one NAME, not \"%s\".", argv[1]);
        if (a->reset && argc == 1)
                return usage_error("profile takes a NAME or --reset, not both.");
        if (a->reset)
                return call(bus, "ResetProfile", NULL, NULL);
        if (argc == 1)
                return call(bus, "SetProfile", NULL, "s", argv[0]);

        json_object *status, *profiles;
        int r = fetch_status(bus, &status);
        if (r != 0)
                return r;
        if (a->json) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "active_profile",
                                       json_object_new_string(status_str(status, "ActiveProfile")));
                json_object_object_add(
                        o, "source",
                        json_object_new_string(status_str(status, "ActiveProfileSource")));
                json_object_object_add(
                        o, "reason",
                        json_object_new_string(status_str(status, "ActiveProfileReason")));
                if (json_object_object_get_ex(status, "Profiles", &profiles))
                        json_object_object_add(o, "profiles", json_object_get(profiles));
                print_json(o);
        } else
                printf("%s\n", status_str(status, "ActiveProfile"));
        json_object_put(status);
        return EXIT_OK;
}

/* Reads the (sdddd) trial of a group into a JSON object. Return: >= 0 or <0 error. */
static int read_trial(sd_bus_message *reply, json_object *g) {
        const char *verdict;
        double before, after, before_delay, after_delay;
        int r = sd_bus_message_read(reply, "(sdddd)", &verdict, &before, &after, &before_delay,
                                    &after_delay);
        if (r < 0)
                return r;
        json_object *t = json_object_new_object();
        json_object_object_add(t, "verdict", json_object_new_string(verdict));
        json_object_object_add(t, "before_rate", json_object_new_double(before));
        json_object_object_add(t, "after_rate", json_object_new_double(after));
        json_object_object_add(t, "before_delay_us", json_object_new_double(before_delay));
        json_object_object_add(t, "after_delay_us", json_object_new_double(after_delay));
        json_object_object_add(g, "trial", t);
        return 0;
}

/* Reads one (tsaudtdss(sdddd)) group into a JSON object. Return: >0 read, 0 at the end, <0 error.
 */
static int read_group(sd_bus_message *reply, json_object **ret) {
        const char *class, *cpus, *ran_on;
        uint64_t id, runq_delay_us;
        double util, wake_rate;
        uint32_t tid;

        int r = sd_bus_message_enter_container(reply, 'r', "tsaudtdss(sdddd)");
        if (r <= 0)
                return r;
        r = sd_bus_message_read(reply, "ts", &id, &class);
        if (r < 0)
                return r;
        json_object *g = json_object_new_object(), *tids = json_object_new_array();
        r = sd_bus_message_enter_container(reply, 'a', "u");
        while (r >= 0 && (r = sd_bus_message_read(reply, "u", &tid)) > 0)
                json_object_array_add(tids, json_object_new_int64(tid));
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "dtdss", &util, &runq_delay_us, &wake_rate, &cpus,
                                        &ran_on);
        if (r >= 0)
                r = read_trial(reply, g);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        json_object_object_add(g, "id", json_object_new_uint64(id));
        json_object_object_add(g, "class", json_object_new_string(r >= 0 ? class : ""));
        json_object_object_add(g, "tids", tids);
        if (r >= 0) {
                json_object_object_add(g, "util", json_object_new_double(util));
                json_object_object_add(g, "runq_delay_us", json_object_new_uint64(runq_delay_us));
                json_object_object_add(g, "wake_rate", json_object_new_double(wake_rate));
                json_object_object_add(g, "cpus", json_object_new_string(cpus));
                json_object_object_add(g, "ran_on", json_object_new_string(ran_on));
        }
        if (r < 0) {
                json_object_put(g);
                return r;
        }
        *ret = g;
        return 1;
}

static double json_get_double(json_object *o, const char *key);

static void print_group_row(json_object *g) {
        json_object *tids = NULL, *v;
        char list[64] = "";
        size_t len = 0;

        json_object_object_get_ex(g, "tids", &tids);
        size_t n = json_object_array_length(tids);
        for (size_t i = 0; i < n && len < sizeof(list) - 16; i++)
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "",
                                        json_object_get_string(json_object_array_get_idx(tids, i)));
        if (len >= sizeof(list) - 16 && n > 0)
                snprintf(list + len, sizeof(list) - len, ",...");

        double util = json_object_object_get_ex(g, "util", &v) ? json_object_get_double(v) : 0;
        char trial[64] = "-";
        json_object *t = NULL;
        if (json_object_object_get_ex(g, "trial", &t) && strcmp(status_str(t, "verdict"), "none"))
                snprintf(trial, sizeof(trial), "%s %.0f->%.0f/s", status_str(t, "verdict"),
                         json_get_double(t, "before_rate"), json_get_double(t, "after_rate"));
        printf("%-6s %-7s %5zu %6.2f %10s  %-12s %-24s %s\n", status_str(g, "id"),
               status_str(g, "class"), n, util, status_str(g, "runq_delay_us"),
               status_str(g, "cpus"), trial, list);
}

static double json_get_double(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

static int64_t json_get_int(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

/* Status shows every CPU up to this many; above, only the busy ones and a summary. */
#define STATUS_CPUS_ALL      32
#define STATUS_BUSY_SHOWN    0.10
#define STATUS_PCT(fraction) (100.0 * (fraction))

/* Reads one (udddua(sdt)) CPU. Return: >0 read, 0 at the end, <0 error. */
static int read_cpu(sd_bus_message *reply, json_object **ret) {
        double busy, wakeups, deepest, residency;
        uint32_t cpu, n_states;
        uint64_t exit_latency_us;
        const char *name;

        int r = sd_bus_message_enter_container(reply, 'r', "udddua(sdt)");
        if (r <= 0)
                return r;
        r = sd_bus_message_read(reply, "udddu", &cpu, &busy, &wakeups, &deepest, &n_states);
        if (r < 0)
                return r;
        json_object *c = json_object_new_object(), *states = json_object_new_array();
        json_object_object_add(c, "cpu", json_object_new_int64(cpu));
        json_object_object_add(c, "busy", json_object_new_double(busy));
        json_object_object_add(c, "wakeups_per_sec", json_object_new_double(wakeups));
        json_object_object_add(c, "deepest_idle_share", json_object_new_double(deepest));
        json_object_object_add(c, "states", states);
        r = sd_bus_message_enter_container(reply, 'a', "(sdt)");
        while (r >= 0 &&
               (r = sd_bus_message_read(reply, "(sdt)", &name, &residency, &exit_latency_us)) > 0) {
                json_object *s = json_object_new_object();
                json_object_object_add(s, "name", json_object_new_string(name));
                json_object_object_add(s, "residency", json_object_new_double(residency));
                json_object_object_add(s, "exit_latency_us",
                                       json_object_new_uint64(exit_latency_us));
                json_object_array_add(states, s);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r < 0) {
                json_object_put(c);
                return r;
        }
        *ret = c;
        return 1;
}

/* Fetches CpuStats() as a JSON array. Return: 0 with *ret, or an exit code. */
static int fetch_cpus(sd_bus *bus, json_object **ret) {
        sd_bus_message *reply = NULL;
        json_object *cpus, *c;

        int r = call(bus, "CpuStats", &reply, NULL);
        if (r != 0)
                return r;
        cpus = json_object_new_array();
        r = sd_bus_message_enter_container(reply, 'a', "(udddua(sdt))");
        while (r >= 0 && (r = read_cpu(reply, &c)) > 0)
                json_object_array_add(cpus, c);
        sd_bus_message_unref(reply);
        if (r < 0) {
                json_object_put(cpus);
                return parse_error(r);
        }
        *ret = cpus;
        return 0;
}

/* Fetches ListGroups() as a JSON array. Return: 0 with *ret, or an exit code. */
static int fetch_groups(sd_bus *bus, json_object **ret) {
        sd_bus_message *reply = NULL;
        json_object *groups, *g;

        int r = call(bus, "ListGroups", &reply, NULL);
        if (r != 0)
                return r;
        groups = json_object_new_array();
        r = sd_bus_message_enter_container(reply, 'a', "(tsaudtdss(sdddd))");
        while (r >= 0 && (r = read_group(reply, &g)) > 0)
                json_object_array_add(groups, g);
        sd_bus_message_unref(reply);
        if (r < 0) {
                json_object_put(groups);
                return parse_error(r);
        }
        *ret = groups;
        return 0;
}

/* { "pair": N, ... } for the classes present, in the order pair, fanout, mesh, solo. */
static json_object *group_classes(json_object *groups) {
        static const char *const classes[] = { "pair", "fanout", "mesh", "solo" };
        json_object *o = json_object_new_object();
        for (size_t c = 0; c < ELEMENTSOF(classes); c++) {
                int64_t n = 0;
                for (size_t i = 0; i < json_object_array_length(groups); i++)
                        n += strcmp(status_str(json_object_array_get_idx(groups, i), "class"),
                                    classes[c]) == 0;
                if (n > 0)
                        json_object_object_add(o, classes[c], json_object_new_int64(n));
        }
        return o;
}

static void print_cpu_line(json_object *c) {
        json_object *states = NULL;
        json_object_object_get_ex(c, "states", &states);
        printf("cpu%-3" PRId64 " busy %3.0f%%  wakeups %5.0f/s", json_get_int(c, "cpu"),
               STATUS_PCT(json_get_double(c, "busy")), json_get_double(c, "wakeups_per_sec"));
        for (size_t s = 0; s < json_object_array_length(states); s++) {
                json_object *st = json_object_array_get_idx(states, s);
                printf("  %s %.0f%%", status_str(st, "name"),
                       STATUS_PCT(json_get_double(st, "residency")));
        }
        printf("\n");
}

/* One line per CPU; above STATUS_CPUS_ALL CPUs only the busy ones, the rest summed up. */
static void print_cpus(json_object *cpus) {
        size_t n = json_object_array_length(cpus), n_quiet = 0;
        double busy = 0, wakeups = 0, deepest = 0;

        if (n == 0) {
                printf("\nNo per-CPU idle figures (no cpuidle, or fewer than two ticks so far).\n");
                return;
        }
        printf("\n");
        for (size_t i = 0; i < n; i++) {
                json_object *c = json_object_array_get_idx(cpus, i);
                if (n <= STATUS_CPUS_ALL || json_get_double(c, "busy") >= STATUS_BUSY_SHOWN) {
                        print_cpu_line(c);
                        continue;
                }
                n_quiet++;
                busy += json_get_double(c, "busy");
                wakeups += json_get_double(c, "wakeups_per_sec");
                deepest += json_get_double(c, "deepest_idle_share");
        }
        if (n_quiet > 0)
                printf("%zu more CPUs under %.0f%% busy: mean busy %.0f%%, wakeups %.0f/s, "
                       "deepest state %.0f%% of idle\n",
                       n_quiet, STATUS_PCT(STATUS_BUSY_SHOWN), STATUS_PCT(busy / (double)n_quiet),
                       wakeups / (double)n_quiet, STATUS_PCT(deepest / (double)n_quiet));
}

/* Prints outside text (a hold reason, a profile name) for a terminal: control
 * characters escaped ("\\n", "\\x1b"), so they cannot fake lines or move the cursor. */
static void print_text_escaped(const char *s) {
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '\n')
                        fputs("\\n", stdout);
                else if (c == '\t')
                        fputs("\\t", stdout);
                else if (c < 0x20 || c == 0x7f)
                        printf("\\x%02x", c);
                else
                        putchar(c);
        }
}

static void print_status_text(json_object *status, size_t n_groups, json_object *classes,
                              json_object *cpus) {
        json_object *profiles, *holds;

        printf("      Profile: ");
        print_text_escaped(status_str(status, "ActiveProfile"));
        if (json_object_object_get_ex(status, "Profiles", &profiles)) {
                printf("  (of");
                for (size_t i = 0; i < json_object_array_length(profiles); i++) {
                        printf(" ");
                        print_text_escaped(
                                json_object_get_string(json_object_array_get_idx(profiles, i)));
                }
                printf(")");
        }
        printf("\n          Why: ");
        print_text_escaped(status_str(status, "ActiveProfileReason"));
        json_object *follow;
        if (json_object_object_get_ex(status, "Follow", &follow) &&
            strcmp(status_str(follow, "state"), "off") != 0) {
                const char *state = status_str(follow, "state");
                printf("\n      Follows: power-profiles API: ");
                if (strcmp(state, "waiting") == 0)
                        printf("no daemon owns it");
                else {
                        print_text_escaped(status_str(follow, "daemon"));
                        printf(" is at \"");
                        print_text_escaped(status_str(follow, "profile"));
                        printf("\"%s", strcmp(state, "gone") == 0
                                               ? " (it has left the bus; its last profile is kept)"
                                               : "");
                }
        }
        printf("\n         Mode: %s\n", status_str(status, "Mode"));
        if (json_object_object_get_ex(status, "Holds", &holds) &&
            json_object_array_length(holds) > 0)
                for (size_t i = 0; i < json_object_array_length(holds); i++) {
                        json_object *h = json_object_array_get_idx(holds, i);
                        printf("%s ", i == 0 ? "        Holds:" : "             ");
                        print_text_escaped(status_str(h, "profile"));
                        printf(" (cookie %s): ", status_str(h, "cookie"));
                        print_text_escaped(status_str(h, "reason"));
                        printf("\n");
                }
        else
                printf("        Holds: none\n");

        printf("  Wake source: %s", status_str(status, "WakeSource"));
        double ns = json_get_double(status, "SamplerNsPerWakeup");
        if (ns > 0)
                printf(", %.0f ns/wakeup", ns);
        else if (strcmp(status_str(status, "WakeSource"), "bpf") == 0)
                printf(", cost not measured (needs sysctl kernel.bpf_stats_enabled=1)");
        printf("\n      Wakeups: %s attributed (%s in softirq), %s skipped, %s lost",
               status_str(status, "SamplerWakeups"), status_str(status, "SamplerSoftirqWakeups"),
               status_str(status, "SamplerSkipped"), status_str(status, "SamplerLost"));
        printf("\n       Groups: %zu group%s", n_groups, n_groups == 1 ? "" : "s");
        const char *sep = ": ";
        json_object_object_foreach(classes, class, count) {
                printf("%s%s %s", sep, json_object_get_string(count), class);
                sep = ", ";
        }
        printf("\n       Energy: %.2f active CPUs (estimate)",
               json_get_double(status, "EnergyEstimate"));
        double watts = json_get_double(status, "EnergyWatts");
        if (watts >= 0)
                printf(", RAPL %.1f W", watts);
        printf("\n     Counters: placement changes %s, reloads %s, ticks %s (last took %s us)\n",
               status_str(status, "PlacementChanges"), status_str(status, "Reloads"),
               status_str(status, "Ticks"), status_str(status, "TickCostUSec"));
        printf("      Version: %s\n", status_str(status, "Version"));
        print_cpus(cpus);
}

/* JSON keys in snake_case, as the rest of placed's JSON. */
static json_object *status_to_json(json_object *status, json_object *classes, json_object *cpus) {
        static const char *const keys[][2] = {
                { "Version", "version" },
                { "ActiveProfile", "active_profile" },
                { "ActiveProfileSource", "active_profile_source" },
                { "ActiveProfileReason", "active_profile_reason" },
                { "Follow", "follow" },
                { "Profiles", "profiles" },
                { "Mode", "mode" },
                { "WakeSource", "wake_source" },
                { "SamplerNsPerWakeup", "sampler_ns_per_wakeup" },
                { "SamplerWakeups", "sampler_wakeups" },
                { "SamplerSoftirqWakeups", "sampler_softirq_wakeups" },
                { "SamplerSkipped", "sampler_skipped" },
                { "SamplerLost", "sampler_lost" },
                { "Holds", "holds" },
                { "Groups", "groups" },
                { "PlacementChanges", "placement_changes" },
                { "Reloads", "reloads" },
                { "Ticks", "ticks" },
                { "TickCostUSec", "tick_cost_usec" },
                { "EnergyEstimate", "energy_estimate" },
        };
        json_object *o = json_object_new_object(), *v;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (json_object_object_get_ex(status, keys[i][0], &v))
                        json_object_object_add(o, keys[i][1], json_object_get(v));
        double watts = json_get_double(status, "EnergyWatts");
        json_object_object_add(o, "energy_watts",
                               watts >= 0 ? json_object_new_double(watts) : NULL);
        json_object_object_add(o, "group_classes", json_object_get(classes));
        json_object_object_add(o, "cpus", json_object_get(cpus));
        return o;
}

static int verb_status(sd_bus *bus, const Args *a) {
        json_object *status = NULL, *groups = NULL, *cpus = NULL;

        int r = fetch_status(bus, &status);
        if (r == 0)
                r = fetch_groups(bus, &groups);
        if (r == 0)
                r = fetch_cpus(bus, &cpus);
        if (r == 0) {
                json_object *classes = group_classes(groups);
                if (a->json)
                        print_json(status_to_json(status, classes, cpus));
                else
                        print_status_text(status, json_object_array_length(groups), classes, cpus);
                json_object_put(classes);
        }
        json_object_put(status);
        json_object_put(groups);
        json_object_put(cpus);
        return r;
}

static int verb_groups(sd_bus *bus, const Args *a) {
        json_object *groups;

        int r = fetch_groups(bus, &groups);
        if (r != 0)
                return r;
        if (a->json) {
                print_json(groups);
                return EXIT_OK;
        }
        printf("%-6s %-7s %5s %6s %10s  %-12s %-24s %s\n", "ID", "CLASS", "TASKS", "UTIL",
               "RUNQ-US", "CPUS", "TRIAL (HANDOFFS)", "TIDS");
        for (size_t i = 0; i < json_object_array_length(groups); i++)
                print_group_row(json_object_array_get_idx(groups, i));
        printf("\n%zu groups.\n", json_object_array_length(groups));
        json_object_put(groups);
        return EXIT_OK;
}

/* Reads WakeGraph()'s reply into { "tasks": [...], "edges": [...] }. Return: 0 or negative errno.
 */
static int read_graph(sd_bus_message *reply, json_object *graph) {
        const char *comm, *class;
        uint32_t tid, tgid, waker, wakee;
        double rate;
        uint64_t group;
        int strong;
        json_object *tasks = json_object_new_array(), *edges = json_object_new_array();

        json_object_object_add(graph, "tasks", tasks);
        json_object_object_add(graph, "edges", edges);
        int r = sd_bus_message_enter_container(reply, 'a', "(uussdt)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(uussdt)", &tid, &tgid, &comm, &class,
                                                  &rate, &group)) > 0) {
                json_object *t = json_object_new_object();
                json_object_object_add(t, "tid", json_object_new_int64(tid));
                json_object_object_add(t, "tgid", json_object_new_int64(tgid));
                json_object_object_add(t, "comm", json_object_new_string(comm));
                json_object_object_add(t, "class", json_object_new_string(class));
                json_object_object_add(t, "out_rate", json_object_new_double(rate));
                json_object_object_add(t, "group", json_object_new_uint64(group));
                json_object_array_add(tasks, t);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(uudb)");
        while (r >= 0 &&
               (r = sd_bus_message_read(reply, "(uudb)", &waker, &wakee, &rate, &strong)) > 0) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "waker", json_object_new_int64(waker));
                json_object_object_add(e, "wakee", json_object_new_int64(wakee));
                json_object_object_add(e, "rate", json_object_new_double(rate));
                json_object_object_add(e, "strong", json_object_new_boolean(strong));
                json_object_array_add(edges, e);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        return r;
}

/* Prints s as the inside of a DOT string: quotes and backslashes escaped, control bytes
 * as a visible "\\xHH" (never a raw newline that would end the label). */
static void dot_print_escaped(const char *s) {
        for (; *s; s++)
                if (*s == '"' || *s == '\\')
                        printf("\\%c", *s);
                else if ((unsigned char)*s < 0x20 || *s == 0x7f)
                        printf("\\\\x%02x", (unsigned char)*s);
                else
                        putchar(*s);
}

/* One node: "comm/tid", filled with its group's colour (set312 has 12). */
static void dot_print_task(json_object *t, const char *indent) {
        uint64_t group = (uint64_t)json_get_int(t, "group");
        printf("%st%" PRId64 " [label=\"", indent, json_get_int(t, "tid"));
        dot_print_escaped(status_str(t, "comm"));
        printf("/%" PRId64 "\"", json_get_int(t, "tid"));
        if (group)
                printf(", style=\"rounded,filled\", fillcolor=%" PRIu64, group % 12 + 1);
        printf("];\n");
}

/* Orders tasks by group, then tid, so each group's tasks are adjacent. */
static int task_compare(const void *a, const void *b) {
        json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b;
        int64_t gx = json_get_int(x, "group"), gy = json_get_int(y, "group");
        if (gx != gy)
                return gx < gy ? -1 : 1;
        return (json_get_int(x, "tid") > json_get_int(y, "tid")) -
               (json_get_int(x, "tid") < json_get_int(y, "tid"));
}

/* Prints the graph for Graphviz: one cluster per group, edges weighted by rate. */
static void print_graph_dot(json_object *graph) {
        json_object *tasks = NULL, *edges = NULL;
        json_object_object_get_ex(graph, "tasks", &tasks);
        json_object_object_get_ex(graph, "edges", &edges);
        size_t n_tasks = json_object_array_length(tasks), n_edges = json_object_array_length(edges);

        printf("digraph placed {\n"
               "  graph [rankdir=LR, fontname=sans, label=\"placed wake graph: %zu tasks, "
               "%zu edges (wakeups/s; solid = strong)\"];\n"
               "  node [shape=box, style=rounded, fontname=sans, colorscheme=set312];\n"
               "  edge [fontname=sans, fontsize=10];\n",
               n_tasks, n_edges);
        json_object_array_sort(tasks, task_compare);
        for (size_t i = 0; i < n_tasks; i++) {
                json_object *t = json_object_array_get_idx(tasks, i);
                int64_t group = json_get_int(t, "group");
                if (group == 0) {
                        dot_print_task(t, "  ");
                        continue;
                }
                const char *class = status_str(t, "class");
                printf("  subgraph cluster_g%" PRId64 " {\n    label=\"group %" PRId64 "%s%s\";\n"
                       "    style=rounded; color=gray40;\n",
                       group, group, class[0] ? ": " : "", class);
                for (; i < n_tasks; i++) {
                        t = json_object_array_get_idx(tasks, i);
                        if (json_get_int(t, "group") != group) {
                                i--;
                                break;
                        }
                        dot_print_task(t, "    ");
                }
                printf("  }\n");
        }

        double max_rate = 1;
        for (size_t i = 0; i < n_edges; i++)
                max_rate = fmax(max_rate,
                                json_get_double(json_object_array_get_idx(edges, i), "rate"));
        for (size_t i = 0; i < n_edges; i++) {
                json_object *e = json_object_array_get_idx(edges, i), *v;
                double rate = json_get_double(e, "rate");
                double scale = log1p(rate) / log1p(max_rate); /* 0..1, log: rates span decades */
                bool strong =
                        json_object_object_get_ex(e, "strong", &v) && json_object_get_boolean(v);
                printf("  t%" PRId64 " -> t%" PRId64
                       " [label=\"%.*f/s\", penwidth=%.1f, weight=%d, style=%s];\n",
                       json_get_int(e, "waker"), json_get_int(e, "wakee"), rate < 10 ? 1 : 0, rate,
                       0.5 + 4.5 * scale, 1 + (int)lround(9 * scale), strong ? "solid" : "dashed");
        }
        printf("}\n");
}

static int verb_graph(sd_bus *bus, const Args *a, int argc, char **argv) {
        sd_bus_message *reply = NULL;

        if (argc > 0)
                return usage_error("graph takes no argument, not \"%s\".", argv[0]);
        int r = call(bus, "WakeGraph", &reply, NULL);
        if (r != 0)
                return r;
        json_object *graph = json_object_new_object();
        r = read_graph(reply, graph);
        sd_bus_message_unref(reply);
        if (r < 0) {
                json_object_put(graph);
                return parse_error(r);
        }
        if (a->json) {
                print_json(graph);
                return EXIT_OK;
        }
        print_graph_dot(graph);
        json_object_put(graph);
        return EXIT_OK;
}

/* Writes the snapshot to FILE (replacing it), or to stdout. */
static int verb_snapshot(sd_bus *bus, int argc, char **argv) {
        sd_bus_message *reply = NULL;
        const char *json;

        if (argc > 1)
                return usage_error("snapshot takes at most one FILE, not \"%s\".", argv[1]);
        int r = call(bus, "Snapshot", &reply, NULL);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "s", &json);
        if (r < 0) {
                sd_bus_message_unref(reply);
                return parse_error(r);
        }
        FILE *f = argc == 1 ? fopen(argv[0], "we") : stdout;
        if (!f) {
                fprintf(stderr, "placectl: cannot write \"%s\": %s\n", argv[0], strerror(errno));
                sd_bus_message_unref(reply);
                return EXIT_DAEMON;
        }
        fprintf(f, "%s\n", json);
        sd_bus_message_unref(reply);
        if ((f == stdout ? fflush(f) : fclose(f)) != 0 || (f == stdout && ferror(f))) {
                fprintf(stderr, "placectl: writing the snapshot failed: %s\n", strerror(errno));
                return EXIT_DAEMON;
        }
        return EXIT_OK;
}

static int verb_explain(sd_bus *bus, const Args *a, const char *arg) {
        sd_bus_message *reply = NULL;
        const char *text;
        char *end;

        errno = 0;
        unsigned long tid = strtoul(arg, &end, 10);
        if (errno || end == arg || *end || arg[0] == '-' || tid == 0 || tid > INT_MAX)
                return usage_error("\"%s\" is not a task id.", arg);

        int r = call(bus, "Explain", &reply, "u", (uint32_t)tid);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0) {
                sd_bus_message_unref(reply);
                return parse_error(r);
        }
        if (a->json) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "tid", json_object_new_int64((int64_t)tid));
                json_object_object_add(o, "explanation", json_object_new_string(text));
                print_json(o);
        } else {
                print_text_escaped(text);
                printf("\n");
        }
        sd_bus_message_unref(reply);
        return EXIT_OK;
}

static volatile sig_atomic_t hold_child_pid;

static void hold_forward_signal(int sig) {
        if (hold_child_pid > 0)
                kill((pid_t)hold_child_pid, sig);
}

/* Runs argv and waits. Return: its exit status the way a shell reports it. */
static int hold_run_command(char **argv) {
        pid_t pid = fork();
        if (pid < 0) {
                fprintf(stderr, "placectl: fork: %s\n", strerror(errno));
                return EXIT_DAEMON;
        }
        if (pid == 0) {
                execvp(argv[0], argv);
                fprintf(stderr, "placectl: cannot run \"%s\": %s\n", argv[0], strerror(errno));
                _exit(errno == ENOENT ? 127 : 126);
        }

        /* The terminal sends SIGINT/SIGQUIT to COMMAND too: outlive it to release the hold. */
        hold_child_pid = pid;
        struct sigaction forward = { .sa_handler = hold_forward_signal };
        struct sigaction ignore = { .sa_handler = SIG_IGN };
        sigaction(SIGTERM, &forward, NULL);
        sigaction(SIGHUP, &forward, NULL);
        sigaction(SIGINT, &ignore, NULL);
        sigaction(SIGQUIT, &ignore, NULL);

        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        fprintf(stderr, "placectl: waitpid: %s\n", strerror(errno));
                        return EXIT_DAEMON;
                }
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}

static int verb_hold(sd_bus *bus, const Args *a, int argc, char **argv) {
        sd_bus_message *reply = NULL;
        char reason[200];
        uint32_t cookie;

        if (argc < 2)
                return usage_error("hold needs a PROFILE and a COMMAND: "
                                   "placectl hold PROFILE -- COMMAND [ARG...]");
        if (a->reason)
                snprintf(reason, sizeof(reason), "%s", a->reason);
        else
                snprintf(reason, sizeof(reason), "placectl hold: %s", argv[1]);

        int r = call(bus, "HoldProfile", &reply, "ss", argv[0], reason);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "u", &cookie);
        sd_bus_message_unref(reply);
        if (r < 0)
                return parse_error(r);

        /* If placectl dies, its connection closes and placed drops the hold. */
        int code = hold_run_command(argv + 1);
        if (call(bus, "ReleaseProfile", NULL, "u", cookie) != 0)
                fprintf(stderr, "placectl: the hold ends anyway as placectl leaves the bus.\n");
        return code;
}

/* One verb: its arguments are checked against min..max before the bus is reached. */
typedef struct Verb {
        const char *name;
        int min_args, max_args; /* -1: any number */
        int (*run)(sd_bus *bus, const Args *a, int argc, char **argv);
} Verb;

static int run_status(sd_bus *bus, const Args *a, int argc, char **argv) {
        return verb_status(bus, a);
}

static int run_groups(sd_bus *bus, const Args *a, int argc, char **argv) {
        return verb_groups(bus, a);
}

static int run_explain(sd_bus *bus, const Args *a, int argc, char **argv) {
        return verb_explain(bus, a, argv[0]);
}

static int run_snapshot(sd_bus *bus, const Args *a, int argc, char **argv) {
        return verb_snapshot(bus, argc, argv);
}

static int run_reload(sd_bus *bus, const Args *a, int argc, char **argv) {
        return call(bus, "Reload", NULL, NULL);
}

static int run_restore(sd_bus *bus, const Args *a, int argc, char **argv) {
        return call(bus, "Restore", NULL, NULL);
}

static const Verb verbs[] = {
        { "status", 0, 0, run_status }, { "profile", 0, 1, verb_profile },
        { "groups", 0, 0, run_groups }, { "explain", 1, 1, run_explain },
        { "graph", 0, -1, verb_graph }, { "snapshot", 0, -1, run_snapshot },
        { "reload", 0, 0, run_reload }, { "restore", 0, 0, run_restore },
        { "hold", 0, -1, verb_hold },
};

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(name, verbs[i].name) == 0)
                        return &verbs[i];
        return NULL;
}

static const struct option options[] = {
        { "address", required_argument, NULL, 'a' }, { "json", no_argument, NULL, 'j' },
        { "reason", required_argument, NULL, 'r' },  { "reset", no_argument, NULL, 'R' },
        { "dot", no_argument, NULL, 'D' },           { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },       {},
};

int main(int argc, char *argv[]) {
        Args a = { 0 };
        sd_bus *bus = NULL;
        int c;

        while ((c = getopt_long(argc, argv, "a:jr:h", options, NULL)) >= 0)
                switch (c) {
                case 'a':
                        a.address = optarg;
                        break;
                case 'j':
                        a.json = true;
                        break;
                case 'r':
                        a.reason = optarg;
                        break;
                case 'D':
                        a.dot = true;
                        break;
                case 'R':
                        a.reset = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                case 'V':
                        printf("placectl %s\n", PLACED_VERSION);
                        return EXIT_OK;
                default:
                        fprintf(stderr, "Try \"placectl --help\".\n");
                        return EXIT_USAGE;
                }
        if (optind >= argc)
                return usage_error("no command given.");

        const char *verb = argv[optind];
        int nargs = argc - optind - 1;
        char **args = argv + optind + 1;

        const Verb *v = verb_find(verb);
        if (!v)
                return usage_error("unknown command \"%s\".", verb);
        if (a.reset && strcmp(verb, "profile") != 0)
                return usage_error("--reset goes with profile only.");
        if (nargs < v->min_args)
                return usage_error("%s needs %s.", verb,
                                   strcmp(verb, "explain") == 0 ? "exactly one TID"
                                                                : "an argument");
        if (v->max_args >= 0 && nargs > v->max_args)
                return usage_error("%s takes %s, not \"%s\".", verb,
                                   v->max_args == 0 ? "no argument" : "one argument",
                                   args[v->max_args]);

        int r = connect_bus(a.address, &bus);
        if (r != 0)
                return r;
        r = v->run(bus, &a, nargs, args);
        sd_bus_flush_close_unref(bus);
        return r;
}
