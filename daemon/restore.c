/* SPDX-License-Identifier: MIT */
/*
 * The undo journal meets the actuators: each kind of object placed changes
 * contributes its read/write operations, and restoring is the journal's
 * reverse replay over them. "placed --restore" (the unit's ExecStopPost=)
 * runs the same code as a clean stop, after taking the journal lock so it
 * never races a running daemon.
 *
 * Restore writes journal values, as root, into files named by journal keys,
 * so nothing in the journal is taken on trust: each kind has a validator
 * here that knows what its keys and values look like on this machine (task
 * ids and start times, CPU numbers that exist, cgroup directories under a
 * cgroup mount, unit names, cpulists). A record that fails is named in the
 * log with why and set aside in journal.failed; it never blocks a start.
 * The journal's reports (lib/ does not log) are logged here.
 */
#include "restore.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "act-affinity.h"
#include "act-cpuset.h"
#include "act-idle.h"
#include "act-slice.h"
#include "cpuset.h"
#include "idle.h"
#include "log.h"
#include "macro.h"

/* What a valid record looks like on this machine. */
typedef struct RestoreLimits {
        CpuSet possible;        /* CPUs that exist */
        char *cgroup_mounts[2]; /* the v1 cpuset and the v2 mount; NULL where absent */
} RestoreLimits;

static void restore_limits_done(RestoreLimits *l) {
        for (unsigned i = 0; i < ELEMENTSOF(l->cgroup_mounts); i++)
                l->cgroup_mounts[i] = mfree(l->cgroup_mounts[i]);
}

static void restore_limits_init(RestoreLimits *l, const char *procfs_root, const char *sysfs_root) {
        *l = (RestoreLimits){ 0 };
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/sys/devices/system/cpu/possible", sysfs_root) >= 0 &&
            cpuset_read_file(path, &l->possible) >= 0 && !cpuset_is_empty(&l->possible))
                goto cgroups;
        int n = idle_cpu_count(sysfs_root);
        if (n <= 0 && sysfs_root[strspn(sysfs_root, "/")] == '\0')
                n = (int)sysconf(_SC_NPROCESSORS_CONF);
        for (int cpu = 0; cpu < MIN(n, CPUSET_MAX_CPUS); cpu++)
                cpuset_set(&l->possible, cpu);
cgroups:
        (void)act_cpuset_find_mount(procfs_root, CGROUP_VERSION_1, &l->cgroup_mounts[0]);
        (void)act_cpuset_find_mount(procfs_root, CGROUP_VERSION_2, &l->cgroup_mounts[1]);
}

static bool all_digits(const char *s, size_t n) {
        if (n == 0 || n > 20)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isdigit((unsigned char)s[i]))
                        return false;
        return true;
}

/* A decimal number without sign, spaces or leading zeros, at most max. */
static bool parse_number(const char *s, size_t n, unsigned long long max, unsigned long long *ret) {
        if (!all_digits(s, n) || (n > 1 && s[0] == '0'))
                return false;
        unsigned long long v = 0;
        for (size_t i = 0; i < n; i++) {
                if (v > (ULLONG_MAX - 9) / 10)
                        return false;
                v = v * 10 + (unsigned long long)(s[i] - '0');
        }
        if (v > max)
                return false;
        if (ret)
                *ret = v;
        return true;
}

static int invalid(const char **ret_why, const char *why) {
        *ret_why = why;
        return -EINVAL;
}

/* A cpulist of CPUs this machine has; "" only where allow_empty. */
static int check_cpulist(const RestoreLimits *l, const char *value, bool allow_empty,
                         const char **ret_why) {
        CpuSet s;
        if (value[strspn(value, "0123456789,-:")] != '\0' || cpuset_parse(value, &s) < 0)
                return invalid(ret_why, "the value is not a cpulist");
        if (!allow_empty && cpuset_is_empty(&s))
                return invalid(ret_why, "the value is an empty cpulist");
        if (!cpuset_is_subset(&s, &l->possible))
                return invalid(ret_why, "the value names CPUs this machine does not have");
        return 0;
}

static bool cpu_exists(const RestoreLimits *l, const char *s, size_t n) {
        unsigned long long cpu;
        return parse_number(s, n, CPUSET_MAX_CPUS - 1, &cpu) &&
               cpuset_isset(&l->possible, (int)cpu);
}

/* "TID:STARTTIME" */
static int validate_affinity(const char *key, const char *value, const char **ret_why,
                             void *userdata) {
        const char *colon = strchr(key, ':');
        if (!colon || !parse_number(key, (size_t)(colon - key), INT_MAX, NULL) || key[0] == '0' ||
            !parse_number(colon + 1, strlen(colon + 1), UINT64_MAX, NULL))
                return invalid(ret_why, "the key is not TID:STARTTIME");
        return check_cpulist(userdata, value, false, ret_why);
}

/* The absolute directory of a cgroup under a cgroup mount, without "." or "..". */
static int validate_cpuset(const char *key, const char *value, const char **ret_why,
                           void *userdata) {
        const RestoreLimits *l = userdata;
        if (key[0] != '/' || strlen(key) >= PATH_MAX)
                return invalid(ret_why, "the key is not an absolute path");
        for (const char *c = key; *c; c += strcspn(c, "/")) {
                c += strspn(c, "/");
                size_t n = strcspn(c, "/");
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return invalid(ret_why, "the key's path has a \".\" or \"..\" component");
        }
        bool under = false;
        for (unsigned i = 0; i < ELEMENTSOF(l->cgroup_mounts) && !under; i++) {
                const char *m = l->cgroup_mounts[i];
                size_t n = m ? strlen(m) : 0;
                under = m && strncmp(key, m, n) == 0 && key[n] == '/' && key[n + 1] != '\0';
        }
        if (!under)
                return invalid(ret_why, "the key is not a cgroup below a cgroup mount");
        return check_cpulist(l, value, true, ret_why);
}

/* "CPU" with "0", "n/a" or a latency in microseconds. */
static int validate_pm_qos(const char *key, const char *value, const char **ret_why,
                           void *userdata) {
        if (!cpu_exists(userdata, key, strlen(key)))
                return invalid(ret_why, "the key is not a CPU this machine has");
        if (strcmp(value, "n/a") != 0 && !parse_number(value, strlen(value), INT32_MAX, NULL))
                return invalid(ret_why, "the value is neither \"n/a\" nor a latency in us");
        return 0;
}

/* "CPU:STATE" with "0" or "1". */
static int validate_cpuidle(const char *key, const char *value, const char **ret_why,
                            void *userdata) {
        const char *colon = strchr(key, ':');
        if (!colon || !cpu_exists(userdata, key, (size_t)(colon - key)) ||
            !parse_number(colon + 1, strlen(colon + 1), IDLE_MAX_STATES - 1, NULL))
                return invalid(ret_why, "the key is not CPU:STATE of this machine");
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
                return invalid(ret_why, "the value is neither \"0\" nor \"1\"");
        return 0;
}

/* A systemd slice name (systemd.unit(5): letters, digits, ":-_.\\", "@" for instances). */
static int validate_slice(const char *key, const char *value, const char **ret_why,
                          void *userdata) {
        size_t n = strlen(key);
        const char *suffix = ".slice";
        if (n <= strlen(suffix) || n > 255 || key[0] == '.' || key[0] == '-' ||
            strcmp(key + n - strlen(suffix), suffix) != 0 ||
            key[strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_."
                            "\\@")] != '\0')
                return invalid(ret_why, "the key is not a slice unit name");
        return check_cpulist(userdata, value, true, ret_why);
}

static void restore_on_report(const JournalReport *rep, void *userdata) {
        char where[64];
        if (rep->line > 0)
                snprintf(where, sizeof(where), "journal line %u", rep->line);
        else
                snprintf(where, sizeof(where), "recorded by this run");

        switch (rep->event) {
        case JOURNAL_EVENT_BAD_LINE:
                log_warning("%s/journal:%u: %s; record skipped%s.", rep->dir, rep->line, rep->why,
                            rep->set_aside ? " and kept in journal.failed" : "");
                break;
        case JOURNAL_EVENT_SET_ASIDE:
                log_warning("Cannot restore %s \"%s\" to \"%s\" (%s): %s%s%s; %s.", rep->kind,
                            rep->key, rep->value, where, rep->why, rep->error < 0 ? ": " : "",
                            rep->error < 0 ? strerror(-rep->error) : "",
                            rep->set_aside ? "set aside in journal.failed"
                                           : "kept in the journal (journal.failed cannot be "
                                             "written)");
                break;
        case JOURNAL_EVENT_WRITE_FAILED:
                log_error_errno(rep->error,
                                "Cannot write the undo journal in \"%s\": %m; placed changes "
                                "nothing until it can.",
                                rep->dir);
                break;
        case JOURNAL_EVENT_RECOVERED:
                log_notice("The undo journal in \"%s\" can be written again: recovered.", rep->dir);
                break;
        }
}

static int log_journal_error(int r, const char *what, const char *dir) {
        const char *reason = journal_strerror(r);
        if (reason)
                return log_error_errno(r, "Refusing the undo journal directory \"%s\": %s.", dir,
                                       reason);
        return log_error_errno(r, "Failed to %s the undo journal in \"%s\": %m", what, dir);
}

int restore_open_journal(const char *dir, int *ret_lock_fd, Journal **ret) {
        _cleanup_close_ int lock_fd = -1;
        int r = journal_lock(dir, &lock_fd);
        if (r == -EWOULDBLOCK)
                return log_error_errno(r, "Another placed holds the undo journal in \"%s\".", dir);
        if (r < 0)
                return log_journal_error(r, "lock", dir);

        JournalOptions o = { .report = restore_on_report };
        r = journal_open_full(dir, &o, ret);
        if (r < 0)
                return log_journal_error(r, "open", dir);
        *ret_lock_fd = TAKE_FD(lock_fd);
        return 0;
}

int restore_journal(Journal *j, const char *procfs_root, const char *sysfs_root,
                    JournalRestoreStats *ret_stats) {
        JournalKindOps ops[2 + ACT_IDLE_N_KINDS + 1];
        unsigned n = 0;
        _cleanup_(act_idle_freep) ActIdle *idle = NULL;
        sd_bus *systemd = NULL;
        RestoreLimits limits;

        restore_limits_init(&limits, procfs_root, sysfs_root);
        act_affinity_kind_ops(procfs_root, &ops[n]);
        ops[n++].validate = validate_affinity;
        act_cpuset_kind_ops(&ops[n]);
        ops[n++].validate = validate_cpuset;
        if (act_idle_new(sysfs_root, NULL, false, &idle) >= 0) {
                unsigned k = (unsigned)act_idle_kind_ops(idle, &ops[n]);
                for (unsigned i = n; i < n + k; i++)
                        ops[i].validate = strcmp(ops[i].kind, ACT_IDLE_KIND_QOS) == 0
                                                  ? validate_pm_qos
                                                  : validate_cpuidle;
                n += k;
        }
        /* Slices were changed through systemd, so only systemd can put them back.
         * Without it, their records are set aside for a person. */
        if (sd_booted() > 0 && sd_bus_open_system(&systemd) >= 0) {
                act_slice_journal_ops(systemd, &ops[n]);
                ops[n++].validate = validate_slice;
        }
        for (unsigned i = 0; i < n; i++)
                ops[i].validate_userdata = &limits;

        journal_set_report(j, restore_on_report, NULL);
        int r = journal_restore(j, ops, n, ret_stats);
        sd_bus_flush_close_unref(systemd);
        restore_limits_done(&limits);
        /* Each failure was logged and set aside: nothing here blocks a start. */
        return r == -EIO ? 0 : r;
}

int restore_run(const char *journal_dir, const char *procfs_root, const char *sysfs_root) {
        struct stat st;
        if (lstat(journal_dir, &st) < 0 && errno == ENOENT) {
                log_info("No undo journal in \"%s\": nothing to restore.", journal_dir);
                return 0;
        }

        _cleanup_close_ int lock_fd = -1;
        Journal *j = NULL;
        int r = restore_open_journal(journal_dir, &lock_fd, &j);
        if (r == -EWOULDBLOCK)
                return log_error_errno(
                        r, "placed is running and holds \"%s\"; use \"placectl restore\" instead.",
                        journal_dir);
        if (r < 0)
                return r;

        JournalRestoreStats stats = { 0 };
        unsigned n = journal_size(j);
        r = restore_journal(j, procfs_root, sysfs_root, &stats);
        journal_free(j);
        log_info("Undo journal \"%s\": %u entries; restored %u, left %u changed by others, %u "
                 "gone, %u failed.",
                 journal_dir, n, stats.restored, stats.skipped, stats.gone, stats.failed);
        if (r < 0)
                return log_error_errno(r, "Failed to rewrite the undo journal in \"%s\": %m",
                                       journal_dir);
        if (stats.failed > 0)
                return log_error_errno(EIO,
                                       "%u change(s) could not be restored (named above); see "
                                       "\"%s/journal.failed\".",
                                       stats.failed, journal_dir);
        return 0;
}
