/* SPDX-License-Identifier: MIT */
/*
 * placectl: query and steer placed over D-Bus. A plain sd-bus client of
 * org.placed1 (the contract is lib/bus-contract.h; the API is documented in
 * daemon/bus.c); it links none of the daemon. This file holds argv, the one
 * verb table and the verbs; placectl-bus.c talks to placed and
 * placectl-format.c prints (see placectl.h).
 *
 * Exit codes are part of the interface, so scripts can tell apart what went
 * wrong: 0 ok, 1 the daemon refused or failed (its message is printed),
 * 2 bad usage (an unknown verb too), 3 placed not reachable (no bus, or
 * nobody owns org.placed1), 4 access denied. "hold" returns its command's
 * exit code.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "placectl.h"

static void help(void) {
        printf("Usage: placectl [OPTIONS] COMMAND [ARGS]\n"
               "\n"
               "Query and steer placed, the power-aware task placement daemon.\n"
               "\n"
               "Commands:\n"
               "  status                    Profile, mode, holds, wake sampler and its cost,\n"
               "                            groups, energy, the CPUs' kinds, what a tick\n"
               "                            costs, and per CPU busy time, wakeups and\n"
               "                            idle-state residency\n"
               "  profile                   Print the active profile\n"
               "  profile NAME              Select profile NAME (power-first, balanced,\n"
               "                            latency-first, or one of your own); it wins over\n"
               "                            the followed and the configured profile\n"
               "  profile --reset           Drop that choice: follow power-profiles-daemon\n"
               "                            again (follow = power-profiles), else the\n"
               "                            configured profile\n"
               "  groups                    The task groups placed manages, and where they run\n"
               "  explain TID               Why task TID runs where it does\n"
               "  graph [--dot|--json]      The wake graph: tasks by group and edges by rate;\n"
               "                            --dot for Graphviz (dot -Tsvg), or as JSON\n"
               "  snapshot [FILE]           What the last decision was made from (JSON), for\n"
               "                            \"placed --plan --snapshot FILE\" or a bug report\n"
               "  metrics                   The metrics for Prometheus, in the OpenMetrics text\n"
               "                            format (--format prometheus: text format 0.0.4)\n"
               "  reload                    Re-read the configuration and profiles\n"
               "  restore                   Undo every change and switch to advise mode\n"
               "  hold PROFILE -- COMMAND [ARG...]\n"
               "                            Hold PROFILE while COMMAND runs; exit with its code\n"
               "\n"
               "Options:\n"
               "  -a --address ADDRESS      D-Bus address of placed's bus, or \"system\" or\n"
               "                            \"session\" [$PLACED_BUS_ADDRESS, else system]\n"
               "  -j --json                 Print JSON (status, profile, groups, explain, graph)\n"
               "     --dot                  Print the wake graph as DOT (graph)\n"
               "  -r --reason TEXT          Why you hold a profile (hold; shown in status)\n"
               "     --reset                With profile: release the chosen profile\n"
               "  -F --format FORMAT        metrics: openmetrics (default) or prometheus\n"
               "  -h --help                 Show this help\n"
               "     --version              Show the version\n"
               "\n"
               "Changing anything needs root or polkit's consent; reading does not.\n"
               "Exit status: 0 ok, 1 placed refused or failed, 2 usage, 3 placed not\n"
               "reachable, 4 access denied; hold exits with COMMAND's status.\n"
               "See placectl(1).\n");
}

int usage_error(const char *fmt, ...) {
        va_list ap;
        fprintf(stderr, "placectl: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry \"placectl --help\".\n");
        return EXIT_USAGE;
}

static int verb_profile(sd_bus *bus, const Args *a, int argc, char **argv) {
        if (a->reset && argc == 1)
                return usage_error("profile takes a NAME or --reset, not both.");
        if (a->reset)
                return pctl_call(bus, "ResetProfile", NULL, NULL);
        if (argc == 1)
                return pctl_call(bus, "SetProfile", NULL, "s", argv[0]);

        _cleanup_(json_object_putp) json_object *status = NULL;
        json_object *profiles;
        int r = pctl_fetch_status(bus, &status);
        if (r != 0)
                return r;
        if (a->json) {
                json_object *o = json_object_new_object();
                json_object_object_add(
                        o, "active_profile",
                        json_object_new_string(json_get_str(status, "ActiveProfile")));
                json_object_object_add(
                        o, "source",
                        json_object_new_string(json_get_str(status, "ActiveProfileSource")));
                json_object_object_add(
                        o, "reason",
                        json_object_new_string(json_get_str(status, "ActiveProfileReason")));
                if (json_object_object_get_ex(status, "Profiles", &profiles))
                        json_object_object_add(o, "profiles", json_object_get(profiles));
                print_json(o);
        } else
                printf("%s\n", json_get_str(status, "ActiveProfile"));
        return EXIT_OK;
}

static int verb_status(sd_bus *bus, const Args *a, int argc, char **argv) {
        _cleanup_(json_object_putp) json_object *status = NULL, *groups = NULL, *cpus = NULL,
                                                *topology = NULL;

        int r = pctl_fetch_status(bus, &status);
        if (r == 0)
                r = pctl_fetch_groups(bus, &groups);
        if (r == 0)
                r = pctl_fetch_cpus(bus, &cpus);
        if (r == 0)
                r = pctl_fetch_topology(bus, &topology);
        if (r != 0)
                return r;
        _cleanup_(json_object_putp) json_object *classes = group_classes(groups);
        if (a->json)
                print_json(status_to_json(status, classes, cpus, topology));
        else
                print_status_text(status, json_object_array_length(groups), classes, cpus,
                                  topology);
        return EXIT_OK;
}

static int verb_groups(sd_bus *bus, const Args *a, int argc, char **argv) {
        json_object *groups;

        int r = pctl_fetch_groups(bus, &groups);
        if (r != 0)
                return r;
        if (a->json) {
                print_json(groups);
                return EXIT_OK;
        }
        print_groups_table(groups);
        json_object_put(groups);
        return EXIT_OK;
}

/* The wake graph: a table by default, DOT with --dot, JSON with --json. */
static int verb_graph(sd_bus *bus, const Args *a, int argc, char **argv) {
        json_object *graph;

        int r = pctl_fetch_graph(bus, &graph);
        if (r != 0)
                return r;
        if (a->json) {
                print_json(graph);
                return EXIT_OK;
        }
        if (a->dot)
                print_graph_dot(graph);
        else
                print_graph_text(graph);
        json_object_put(graph);
        return EXIT_OK;
}

/* Writes the snapshot to FILE (replacing it), or to stdout. */
static int verb_snapshot(sd_bus *bus, const Args *a, int argc, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *json;

        int r = pctl_call(bus, "Snapshot", &reply, NULL);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "s", &json);
        if (r < 0)
                return pctl_parse_error(r);
        FILE *f = argc == 1 ? fopen(argv[0], "we") : stdout;
        if (!f) {
                fprintf(stderr, "placectl: cannot write \"%s\": %s\n", argv[0], strerror(errno));
                return EXIT_DAEMON;
        }
        fprintf(f, "%s\n", json);
        if ((f == stdout ? fflush(f) : fclose(f)) != 0 || (f == stdout && ferror(f))) {
                fprintf(stderr, "placectl: writing the snapshot failed: %s\n", strerror(errno));
                return EXIT_DAEMON;
        }
        return EXIT_OK;
}

/* Prints the metrics text as placed formats it (the one formatter is the daemon's). */
static int verb_metrics(sd_bus *bus, const Args *a, int argc, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *format = a->format ? a->format : "openmetrics", *text;

        if (strcmp(format, "openmetrics") != 0 && strcmp(format, "prometheus") != 0)
                return usage_error("unknown metrics format \"%s\" (openmetrics or prometheus).",
                                   format);
        int r = pctl_call(bus, "Metrics", &reply, "s", format);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0)
                return pctl_parse_error(r);
        fputs(text, stdout);
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "placectl: writing the metrics failed: %s\n", strerror(errno));
                return EXIT_DAEMON;
        }
        return EXIT_OK;
}

static int verb_explain(sd_bus *bus, const Args *a, int argc, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *arg = argv[0], *text;
        char *end;

        errno = 0;
        unsigned long tid = strtoul(arg, &end, 10);
        if (errno || end == arg || *end || arg[0] == '-' || tid == 0 || tid > INT_MAX)
                return usage_error("\"%s\" is not a task id.", arg);

        int r = pctl_call(bus, "Explain", &reply, "u", (uint32_t)tid);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0)
                return pctl_parse_error(r);
        if (a->json) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "tid", json_object_new_int64((int64_t)tid));
                json_object_object_add(o, "explanation", json_object_new_string(text));
                print_json(o);
        } else {
                print_text_escaped(text);
                printf("\n");
        }
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
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        char reason[200];
        uint32_t cookie;

        if (a->reason)
                snprintf(reason, sizeof(reason), "%s", a->reason);
        else
                snprintf(reason, sizeof(reason), "placectl hold: %s", argv[1]);

        int r = pctl_call(bus, "HoldProfile", &reply, "ss", argv[0], reason);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "u", &cookie);
        if (r < 0)
                return pctl_parse_error(r);

        /* If placectl dies, its connection closes and placed drops the hold. */
        int code = hold_run_command(argv + 1);
        if (pctl_call(bus, "ReleaseProfile", NULL, "u", cookie) != 0)
                fprintf(stderr, "placectl: the hold ends anyway as placectl leaves the bus.\n");
        return code;
}

static int verb_reload(sd_bus *bus, const Args *a, int argc, char **argv) {
        return pctl_call(bus, "Reload", NULL, NULL);
}

static int verb_restore(sd_bus *bus, const Args *a, int argc, char **argv) {
        return pctl_call(bus, "Restore", NULL, NULL);
}

/*
 * The verbs. Their arguments are checked against min..max here, before the
 * bus is reached; needs and takes word the usage errors for too few and too
 * many.
 */
typedef struct Verb {
        const char *name;
        int min_args, max_args; /* -1: any number */
        const char *needs, *takes;
        int (*run)(sd_bus *bus, const Args *a, int argc, char **argv);
} Verb;

static const Verb verbs[] = {
        { "status", 0, 0, NULL, "no argument", verb_status },
        { "profile", 0, 1, NULL, "at most one NAME", verb_profile },
        { "groups", 0, 0, NULL, "no argument", verb_groups },
        { "explain", 1, 1, "exactly one TID", "one argument", verb_explain },
        { "graph", 0, 0, NULL, "no argument", verb_graph },
        { "snapshot", 0, 1, NULL, "at most one FILE", verb_snapshot },
        { "metrics", 0, 0, NULL, "no argument", verb_metrics },
        { "reload", 0, 0, NULL, "no argument", verb_reload },
        { "restore", 0, 0, NULL, "no argument", verb_restore },
        { "hold", 2, -1, "a PROFILE and a COMMAND (placectl hold PROFILE -- COMMAND [ARG...])",
          NULL, verb_hold },
};

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(name, verbs[i].name) == 0)
                        return &verbs[i];
        return NULL;
}

/* Return: 0 if the verb's arguments and the options fit it, else EXIT_USAGE (message printed). */
static int verb_check(const Verb *v, const Args *a, int nargs, char **args) {
        if (nargs < v->min_args)
                return usage_error("%s needs %s.", v->name, v->needs);
        if (v->max_args >= 0 && nargs > v->max_args)
                return usage_error("%s takes %s, not \"%s\".", v->name, v->takes,
                                   args[v->max_args]);
        if (a->dot && strcmp(v->name, "graph") != 0)
                return usage_error("--dot is for graph only.");
        if (a->dot && a->json)
                return usage_error("graph prints --dot or --json, not both.");
        if (a->reset && strcmp(v->name, "profile") != 0)
                return usage_error("--reset goes with profile only.");
        if (a->format && strcmp(v->name, "metrics") != 0)
                return usage_error("--format applies to metrics only, not to %s.", v->name);
        return 0;
}

static const struct option options[] = {
        { "address", required_argument, NULL, 'a' },
        { "json", no_argument, NULL, 'j' },
        { "reason", required_argument, NULL, 'r' },
        { "format", required_argument, NULL, 'F' },
        { "reset", no_argument, NULL, 'R' },
        { "dot", no_argument, NULL, 'D' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        {},
};

/* Return: -1 to go on, or the exit code (--help, --version, a bad option). */
static int parse_options(int argc, char *argv[], Args *a) {
        int c;
        while ((c = getopt_long(argc, argv, "a:jr:F:h", options, NULL)) >= 0)
                switch (c) {
                case 'a':
                        a->address = optarg;
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'r':
                        a->reason = optarg;
                        break;
                case 'F':
                        a->format = optarg;
                        break;
                case 'D':
                        a->dot = true;
                        break;
                case 'R':
                        a->reset = true;
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
        return -1;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        Args a = { 0 };

        int r = parse_options(argc, argv, &a);
        if (r >= 0)
                return r;
        if (optind >= argc)
                return usage_error("no command given.");

        int nargs = argc - optind - 1;
        char **args = argv + optind + 1;
        const Verb *v = verb_find(argv[optind]);
        if (!v)
                return usage_error("unknown command \"%s\".", argv[optind]);
        r = verb_check(v, &a, nargs, args);
        if (r != 0)
                return r;

        r = pctl_connect(a.address, &bus);
        if (r != 0)
                return r;
        return v->run(bus, &a, nargs, args);
}
