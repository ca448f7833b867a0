/* SPDX-License-Identifier: MIT */
/*
 * placed: argv and nothing else. The manager (manager.c) owns the daemon;
 * --restore and --dump-topology are one-shot modes that exit.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fileio.h"
#include "log.h"
#include "manager.h"
#include "policy.h"
#include "undo.h"
#include "topology.h"

typedef enum Action {
        ACTION_NONE,
        ACTION_RUN,
        ACTION_RESTORE,
        ACTION_DUMP_TOPOLOGY,
        ACTION_PLAN,
} Action;

typedef struct Args {
        Action action;
        ManagerOptions opts;
        char *dropin_dir;     /* owned: derived from --config */
        char *rules_dir;      /* owned: rules.d next to --config */
        const char *snapshot; /* --plan: the model snapshot to plan for */
} Args;

static void help(void) {
        printf("Usage: placed --foreground [OPTIONS]\n"
               "       placed --restore [--journal-dir DIR]\n"
               "       placed --dump-topology [--sysfs-root DIR]\n"
               "       placed --plan --snapshot FILE [--sysfs-root DIR] [--profile NAME]\n"
               "\n"
               "Power-aware task placement: watches who wakes whom and how deeply CPUs sleep,\n"
               "and packs or spreads groups of tasks according to a profile.\n"
               "\n"
               "  -f --foreground        Run the daemon (it never forks; systemd runs it so)\n"
               "     --restore           Undo every change recorded in the journal, then exit\n"
               "     --dump-topology     Print the CPU topology as JSON, then exit\n"
               "     --plan              Print as JSON the plan for a model snapshot, then exit\n"
               "     --snapshot FILE     The snapshot for --plan (\"placectl snapshot\" writes "
               "one)\n"
               "  -c --config FILE       Main configuration file (drop-ins from FILE.d/, rules "
               "from\n"
               "                         rules.d/ beside FILE)\n"
               "                         [" PLACED_SYSCONFDIR "/placed/placed.conf]\n"
               "  -p --profile NAME      Profile to start with [from the configuration: balanced]\n"
               "     --profiles-dir DIR  Read profiles only from DIR\n"
               "  -n --dry-run           Advise mode: compute and publish, change nothing\n"
               "     --bus BUS           system, session, none or a D-Bus address [system]\n"
               "     --sysfs-root DIR    Read sysfs under DIR [/]\n"
               "     --procfs-root DIR   Read procfs at DIR [/proc]\n"
               "     --interval-ms N     Tick length in milliseconds [from the configuration: "
               "1000]\n"
               "     --journal-dir DIR   Undo journal directory [" PLACED_RUNSTATEDIR "/placed]\n"
               "     --log-level LEVEL   err, warning, notice, info or debug [info]\n"
               "  -h --help              Show this help\n"
               "     --version           Show the version\n"
               "\n"
               "See placed(8), placed.conf(5) and placectl(1).\n");
}

static int parse_interval(const char *s, unsigned *ret) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-' || v < 10 || v > 3600000)
                return -EINVAL;
        *ret = (unsigned)v;
        return 0;
}

enum {
        ARG_RESTORE = 0x100,
        ARG_DUMP_TOPOLOGY,
        ARG_PLAN,
        ARG_SNAPSHOT,
        ARG_PROFILES_DIR,
        ARG_BUS,
        ARG_SYSFS_ROOT,
        ARG_PROCFS_ROOT,
        ARG_INTERVAL_MS,
        ARG_JOURNAL_DIR,
        ARG_LOG_LEVEL,
        ARG_VERSION,
};

static const struct option options[] = {
        { "foreground", no_argument, NULL, 'f' },
        { "restore", no_argument, NULL, ARG_RESTORE },
        { "dump-topology", no_argument, NULL, ARG_DUMP_TOPOLOGY },
        { "plan", no_argument, NULL, ARG_PLAN },
        { "snapshot", required_argument, NULL, ARG_SNAPSHOT },
        { "config", required_argument, NULL, 'c' },
        { "profile", required_argument, NULL, 'p' },
        { "profiles-dir", required_argument, NULL, ARG_PROFILES_DIR },
        { "dry-run", no_argument, NULL, 'n' },
        { "bus", required_argument, NULL, ARG_BUS },
        { "sysfs-root", required_argument, NULL, ARG_SYSFS_ROOT },
        { "procfs-root", required_argument, NULL, ARG_PROCFS_ROOT },
        { "interval-ms", required_argument, NULL, ARG_INTERVAL_MS },
        { "journal-dir", required_argument, NULL, ARG_JOURNAL_DIR },
        { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        {},
};

static int set_action(Args *a, Action action) {
        if (a->action != ACTION_NONE && a->action != action) {
                fprintf(stderr, "placed: --foreground, --restore and --dump-topology exclude each "
                                "other.\n");
                return -EINVAL;
        }
        a->action = action;
        return 0;
}

/* Return: 1 to go on, 0 to exit successfully (help, version), negative errno on bad usage. */
static int parse_argv(int argc, char *argv[], Args *a) {
        int c, r;

        config_paths_default(&a->opts.paths);
        while ((c = getopt_long(argc, argv, "fc:p:nh", options, NULL)) >= 0) {
                switch (c) {
                case 'f':
                        r = set_action(a, ACTION_RUN);
                        break;
                case ARG_RESTORE:
                        r = set_action(a, ACTION_RESTORE);
                        break;
                case ARG_DUMP_TOPOLOGY:
                        r = set_action(a, ACTION_DUMP_TOPOLOGY);
                        break;
                case ARG_PLAN:
                        r = set_action(a, ACTION_PLAN);
                        break;
                case ARG_SNAPSHOT:
                        a->snapshot = optarg;
                        r = 0;
                        break;
                case 'c':
                        a->opts.paths.main_file = optarg;
                        a->opts.config_required = true;
                        free(a->dropin_dir);
                        if (asprintf(&a->dropin_dir, "%s.d", optarg) < 0)
                                return -ENOMEM;
                        a->opts.paths.dropin_dir = a->dropin_dir;
                        free(a->rules_dir);
                        if (asprintf(&a->rules_dir, "%.*s/rules.d",
                                     strrchr(optarg, '/') ? (int)(strrchr(optarg, '/') - optarg)
                                                          : 1,
                                     strrchr(optarg, '/') ? optarg : ".") < 0)
                                return -ENOMEM;
                        a->opts.paths.rules_dir = a->rules_dir;
                        r = 0;
                        break;
                case 'p':
                        a->opts.profile = optarg;
                        r = 0;
                        break;
                case ARG_PROFILES_DIR:
                        a->opts.paths.profiles_dir_usr = optarg;
                        a->opts.paths.profiles_dir_etc = NULL;
                        r = 0;
                        break;
                case 'n':
                        a->opts.dry_run = true;
                        r = 0;
                        break;
                case ARG_BUS:
                        a->opts.bus = optarg;
                        r = 0;
                        break;
                case ARG_SYSFS_ROOT:
                        a->opts.sysfs_root = optarg;
                        r = 0;
                        break;
                case ARG_PROCFS_ROOT:
                        a->opts.procfs_root = optarg;
                        r = 0;
                        break;
                case ARG_INTERVAL_MS:
                        r = parse_interval(optarg, &a->opts.interval_ms);
                        if (r < 0)
                                fprintf(stderr,
                                        "placed: invalid --interval-ms \"%s\": expected "
                                        "10..3600000.\n",
                                        optarg);
                        break;
                case ARG_JOURNAL_DIR:
                        a->opts.journal_dir = optarg;
                        r = 0;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r < 0)
                                fprintf(stderr,
                                        "placed: invalid --log-level \"%s\": expected err, "
                                        "warning, notice, info or debug.\n",
                                        optarg);
                        else
                                log_set_max_level(r);
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("placed %s\n", PLACED_VERSION);
                        return 0;
                default: /* getopt already said what was wrong */
                        r = -EINVAL;
                        break;
                }
                if (r < 0)
                        return r;
        }
        if (optind < argc) {
                fprintf(stderr, "placed: unexpected argument \"%s\".\n", argv[optind]);
                return -EINVAL;
        }
        if (a->action == ACTION_PLAN && !a->snapshot) {
                fprintf(stderr, "placed: --plan needs --snapshot FILE.\n");
                return -EINVAL;
        }
        if (a->action == ACTION_NONE) {
                fprintf(stderr,
                        "placed: nothing to do; run the daemon with --foreground (see --help).\n");
                return -EINVAL;
        }
        return 1;
}

static int dump_topology(const char *sysfs_root) {
        _cleanup_(topo_freep) Topology *t = NULL;
        _cleanup_free_ char *json = NULL;
        int r = manager_load_topology(sysfs_root ? sysfs_root : "/", &t);
        if (r < 0)
                return r;
        r = topo_to_json(t, &json);
        if (r < 0)
                return log_error_errno(r, "Failed to format the topology: %m");
        printf("%s\n", json);
        return 0;
}

/* A snapshot is the model of a machine: some megabytes at most. */
#define SNAPSHOT_SIZE_MAX (256u * 1024 * 1024)

static int read_file(const char *path, char **ret) {
        return read_small_file_alloc(path, SNAPSHOT_SIZE_MAX, ret, NULL);
}

/* Errors and warnings of the configuration, each naming its file (and line). */
static void config_diag_log(void *userdata, ConfigDiagLevel level, const char *message) {
        if (level == CONFIG_DIAG_ERROR)
                log_error("%s", message);
        else
                log_warning("%s", message);
}

/* "placed --plan": the policy, offline, on a snapshot of the model. */
static int plan(const Args *a) {
        _cleanup_(topo_freep) Topology *t = NULL;
        _cleanup_free_ char *text = NULL, *json = NULL;
        PolicySnapshot *s = NULL;
        Plan *p = NULL;
        Config c;
        int r;

        r = read_file(a->snapshot, &text);
        if (r < 0)
                return log_error_errno(r, "Failed to read the snapshot \"%s\": %s", a->snapshot,
                                       read_small_file_strerror(r));
        r = policy_snapshot_from_json(text, &s);
        if (r < 0)
                return log_error_errno(r, "\"%s\" is not a placed snapshot: %m", a->snapshot);

        const char *root = a->opts.sysfs_root ? a->opts.sysfs_root : s->topology;
        /* root may point into s: logged before it is freed. */
        r = manager_load_topology(root ? root : "/", &t);
        if (r < 0) {
                policy_snapshot_free(s);
                return r;
        }

        r = config_load(&a->opts.paths, config_diag_log, NULL, &c);
        if (r < 0) {
                policy_snapshot_free(s);
                return log_error_errno(r, "Failed to load the configuration (%s) and profiles: %m",
                                       a->opts.paths.main_file);
        }
        const char *name = a->opts.profile ? a->opts.profile : s->profile;
        const Profile *profile = config_find_profile(&c, name);
        if (!profile) {
                r = log_error_errno(ENOENT, "Unknown profile \"%s\".", name);
                goto finish;
        }

        PolicyInput in = {
                .topo = t,
                .groups = s->groups,
                .n_groups = s->n_groups,
                .loads = s->loads,
                .n_loads = s->n_loads,
                .profile = profile,
                /* The snapshot's plan carries dwell times: only for its own profile. */
                .prev = strcmp(profile->name, s->profile) == 0 ? s->prev : NULL,
                .now_ns = s->now_ns,
                /* the rule decisions written in the snapshot */
                .rules = s->rules,
                .latency_profile = config_find_profile(&c, "latency-first"),
        };
        r = policy_decide(&in, &p);
        if (r < 0) {
                log_error_errno(r, "Planning failed: %m");
                goto finish;
        }
        r = plan_to_json(p, &json);
        if (r < 0)
                log_error_errno(r, "Failed to format the plan: %m");
        else
                printf("%s\n", json);
finish:
        plan_free(p);
        policy_snapshot_free(s);
        config_done(&c);
        return r;
}

/* The journal directory for --restore: the option, else the configuration's. */
static int restore(const Args *a) {
        if (a->opts.journal_dir)
                return restore_run(a->opts.journal_dir,
                                   a->opts.procfs_root ? a->opts.procfs_root : "/proc",
                                   a->opts.sysfs_root ? a->opts.sysfs_root : "/");

        Config c;
        int r = config_load(&a->opts.paths, NULL, NULL, &c);
        if (r < 0) /* a broken configuration must not stop a restore */
                config_defaults(&c);
        r = restore_run(c.journal_dir, a->opts.procfs_root ? a->opts.procfs_root : "/proc",
                        a->opts.sysfs_root ? a->opts.sysfs_root : "/");
        config_done(&c);
        return r;
}

/*
 * The daemon's signals are blocked before anything is set up, for good; the
 * loop reads them (loop_add_signal()). A SIGTERM or SIGINT during start-up
 * then waits for the loop, which stops cleanly ("Stopping.", exit 0), and
 * one during shutdown is dropped at exit. Left with the default action until
 * the loop took them, they killed placed (exit 130 on SIGINT). The one-shot
 * modes keep the default: Ctrl-C ends them.
 */
static int block_daemon_signals(void) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block SIGTERM, SIGINT and SIGHUP: %m");
        return 0;
}

static int run(const Args *a) {
        int r = block_daemon_signals();
        if (r < 0)
                return r;
        Manager *m = NULL;
        r = manager_new(&a->opts, &m);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the manager: %m");
        r = manager_start(m);
        if (r >= 0)
                r = manager_run(m);
        manager_free(m);
        return r;
}

int main(int argc, char *argv[]) {
        Args a = { .action = ACTION_NONE };
        int r = parse_argv(argc, argv, &a);
        if (r <= 0) {
                free(a.dropin_dir);
                free(a.rules_dir);
                return r < 0 ? 2 : 0;
        }

        switch (a.action) {
        case ACTION_RESTORE:
                r = restore(&a);
                break;
        case ACTION_DUMP_TOPOLOGY:
                r = dump_topology(a.opts.sysfs_root);
                break;
        case ACTION_PLAN:
                r = plan(&a);
                break;
        default:
                r = run(&a);
                break;
        }
        free(a.dropin_dir);
        free(a.rules_dir);
        return r < 0 ? 1 : 0;
}
