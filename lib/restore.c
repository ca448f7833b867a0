/* SPDX-License-Identifier: MIT */
/*
 * Restoring the undo journal (see restore.h): the journal's reverse replay
 * over every actuator's journal operations (actuators_kind_ops(), the same
 * actuators and backend choice the tick uses), after each record has been
 * checked for this machine.
 *
 * Restore writes journal values, as root, into files named by journal keys,
 * so nothing in the journal is taken on trust: each kind has a validator
 * here that knows what its keys and values look like on this machine (task
 * ids and start times, CPU numbers that exist, cgroup directories under a
 * cgroup mount, unit names, cpulists). A record that fails is reported
 * through the journal's report callback (JOURNAL_EVENT_SET_ASIDE, naming
 * the record and why) and set aside in journal.failed; it never blocks a
 * start.
 */
#include "restore.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act-affinity.h"
#include "act-cpuset.h"
#include "act-idle.h"
#include "act-slice.h"
#include "actuator.h"
#include "actuators.h"
#include "cpuset.h"
#include "idle.h"
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
        const RestoreLimits *l = ASSERT_PTR(userdata);
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

/* The validator for each kind an actuator journals. */
static void restore_set_validators(JournalKindOps *ops, unsigned n, RestoreLimits *limits) {
        static const struct {
                const char *kind;
                int (*validate)(const char *, const char *, const char **, void *);
        } table[] = {
                { ACT_AFFINITY_KIND, validate_affinity },
                { ACT_CPUSET_KIND, validate_cpuset },
                { ACT_IDLE_KIND_QOS, validate_pm_qos },
                { ACT_IDLE_KIND_CPUIDLE, validate_cpuidle },
                { ACT_SLICE_JOURNAL_KIND, validate_slice },
        };
        for (unsigned i = 0; i < n; i++) {
                ops[i].validate = NULL; /* a kind of no actuator: fails for want of ops */
                for (size_t k = 0; k < ELEMENTSOF(table); k++)
                        if (strcmp(ops[i].kind, table[k].kind) == 0)
                                ops[i].validate = table[k].validate;
                ops[i].validate_userdata = limits;
        }
}

int restore_journal(Journal *j, const char *procfs_root, const char *sysfs_root,
                    JournalRestoreStats *ret_stats) {
        JournalKindOps ops[ACTUATORS_KINDS_MAX];
        _cleanup_free_ char *cgroup = NULL;
        RestoreLimits limits;
        Actuators act;

        restore_limits_init(&limits, procfs_root, sysfs_root);
        (void)actuator_find_cpuset_root(procfs_root, &cgroup);
        ActuatorEnv env = { .procfs_root = procfs_root,
                            .sysfs_root = sysfs_root,
                            .cgroup_root = cgroup,
                            .online = limits.possible,
                            .journal = j };
        int r = actuators_open(&env, &act, NULL);
        if (r >= 0) {
                int n = actuators_kind_ops(&act, ops, ELEMENTSOF(ops));
                if (n >= 0) {
                        restore_set_validators(ops, (unsigned)n, &limits);
                        r = journal_restore(j, ops, (unsigned)n, ret_stats);
                } else
                        r = n;
                actuators_close(&act);
        }
        restore_limits_done(&limits);
        /* Each failure was reported and set aside: nothing here blocks a start. */
        return r == -EIO ? 0 : r;
}
