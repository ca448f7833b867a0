/* SPDX-License-Identifier: MIT */
/*
 * Idle-state constraints (see act-idle.h for the mechanisms and the journal
 * kinds). Spreading a latency-critical group only pays if the CPUs it wakes
 * come back fast; on the development VM a pipe pair spread over two CPUs went
 * from 73.6 to 44.6 us per round trip with haltpoll disabled. placed caps the
 * exit latency only on the CPUs that run such groups, unlike tuned's single
 * machine-wide /dev/cpu_dma_latency request.
 *
 * Per-CPU PM QoS is preferred: one write per CPU, every governor honours it
 * (menu and teo pick no state above the cap; haltpoll polls when it is 0).
 * Disabling states is the fallback where a CPU has no PM QoS file or its
 * write fails for good, and is available on request.
 *
 * Every object goes through object_set(), which holds the rules common to
 * both kinds: the journal is the record of what placed owns (so a daemon
 * restarted over an unrestored journal picks its objects up again), a value
 * changed by someone else since placed set it is given up, an unchanged
 * value is not written, and the original is journaled before the write.
 */
#include "act-idle.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idle.h"
#include "fileio.h"
#include "macro.h"

#define VALUE_MAX 64

typedef struct ActIdleCpu {
        bool has_qos;    /* power/pm_qos_resume_latency_us exists */
        bool qos_broken; /* its write failed for good: use state disable */
        bool qos_yielded;
        unsigned n_states;
        uint64_t exit_latency_us[IDLE_MAX_STATES];
        bool state_yielded[IDLE_MAX_STATES];
} ActIdleCpu;

struct ActIdle {
        char root[PATH_MAX];
        bool live;
        const IdleOps *ops;
        Journal *journal; /* not owned */
        bool dry_run;
        ActIdleMechanism mechanism;
        unsigned n_cpus;
        ActIdleCpu *cpus; /* owned, indexed by CPU number */
        int dma_fd;       /* /dev/cpu_dma_latency while a global request is held */
        int32_t dma_value;
        ActIdleReportFn report;
        void *report_data;
};

/* How one kind of object is read and written; key is the journal key. */
typedef struct ObjectIo {
        const char *kind;
        int (*read)(ActIdle *a, const char *key, char *buf, size_t size);
        int (*write)(ActIdle *a, const char *key, const char *value);
} ObjectIo;

void act_idle_qos_text(int64_t max_latency_us, char *buf, size_t size) {
        if (max_latency_us <= 0)
                snprintf(buf, size, "n/a");
        else
                snprintf(buf, size, "%" PRId64, MIN(max_latency_us, (int64_t)INT32_MAX - 1));
}

int act_idle_qos_parse(const char *text, int64_t *ret_us) {
        if (strcmp(text, "n/a") == 0) {
                *ret_us = 0;
                return 0;
        }
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (errno || end == text || *end || v < 0)
                return -EINVAL;
        *ret_us = v == 0 ? INT64_MAX : v;
        return 0;
}

static int qos_path(const ActIdle *a, const char *key, char *buf, size_t size) {
        int n = snprintf(buf, size,
                         "%s/sys/devices/system/cpu/cpu%s/power/pm_qos_resume_latency_us", a->root,
                         key);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int qos_read(ActIdle *a, const char *key, char *buf, size_t size) {
        char path[PATH_MAX];
        int r = qos_path(a, key, path, sizeof(path));
        if (r < 0)
                return r;
        r = read_small_file_line(path, buf, size);
        return r < 0 ? r : 0;
}

static int qos_write(ActIdle *a, const char *key, const char *value) {
        char path[PATH_MAX];
        int r = qos_path(a, key, path, sizeof(path));
        if (r < 0)
                return r;
        /* O_TRUNC matters only for fixture files; sysfs ignores it. */
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_TRUNC);
        if (fd < 0)
                return negative_errno();
        char buf[VALUE_MAX];
        int len = snprintf(buf, sizeof(buf), "%s\n", value);
        if (len < 0 || (size_t)len >= sizeof(buf))
                return -EINVAL;
        if (write(fd, buf, (size_t)len) != len)
                return negative_errno();
        return 0;
}

static int cpuidle_key_parse(const char *key, unsigned *ret_cpu, unsigned *ret_state) {
        unsigned cpu, state;
        int end = 0;
        if (sscanf(key, "%u:%u%n", &cpu, &state, &end) != 2 || key[end] != '\0')
                return -EINVAL;
        *ret_cpu = cpu;
        *ret_state = state;
        return 0;
}

static int cpuidle_read(ActIdle *a, const char *key, char *buf, size_t size) {
        unsigned cpu, state;
        int r = cpuidle_key_parse(key, &cpu, &state);
        if (r < 0)
                return r;
        IdleState st = { 0 };
        r = a->ops->read_counters(a->root, cpu, state, &st);
        if (r < 0)
                return r;
        snprintf(buf, size, "%d", st.disabled ? 1 : 0);
        return 0;
}

static int cpuidle_write(ActIdle *a, const char *key, const char *value) {
        unsigned cpu, state;
        int r = cpuidle_key_parse(key, &cpu, &state);
        if (r < 0)
                return r;
        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
                return -EINVAL;
        return a->ops->set_disabled(a->root, cpu, state, value[0] == '1');
}

static const ObjectIo qos_io = { ACT_IDLE_KIND_QOS, qos_read, qos_write };
static const ObjectIo cpuidle_io = { ACT_IDLE_KIND_CPUIDLE, cpuidle_read, cpuidle_write };

static void report(ActIdle *a, const char *kind, const char *key, const char *from,
                   const char *to) {
        if (a->report)
                a->report(kind, key, from, to, a->dry_run, a->report_data);
}

/* Reads the journal's record of (kind, key) into orig/applied. Return: true if owned. */
static bool object_owned(ActIdle *a, const char *kind, const char *key, char *orig, char *applied) {
        const char *o, *p;
        if (!a->journal || journal_get(a->journal, kind, key, &o, &p) < 0)
                return false;
        snprintf(orig, VALUE_MAX, "%s", o ? o : "");
        snprintf(applied, VALUE_MAX, "%s", p ? p : "");
        return true;
}

/*
 * Makes the object hold want, or (want NULL) gives back what placed set.
 * Return: 1 written (or would be), 0 nothing to do, negative errno.
 */
static int object_set(ActIdle *a, const ObjectIo *io, const char *key, const char *want,
                      bool *yielded) {
        char cur[VALUE_MAX], orig[VALUE_MAX], applied[VALUE_MAX];
        bool owned = object_owned(a, io->kind, key, orig, applied);
        int r = io->read(a, key, cur, sizeof(cur));
        if (r < 0) {
                if (owned && (r == -ENOENT || r == -ENODEV))
                        (void)journal_forget(a->journal, io->kind, key); /* gone */
                return r;
        }
        if (owned && strcmp(cur, applied) != 0) {
                /* Someone else changed it since: theirs now. */
                r = journal_forget(a->journal, io->kind, key);
                *yielded = !!want;
                return r < 0 ? r : 0;
        }

        bool releasing = !want;
        if (releasing) {
                *yielded = false;
                if (!owned)
                        return 0;
                want = orig;
        } else if (*yielded)
                return 0;

        if (strcmp(cur, want) == 0) {
                if (releasing && !a->dry_run)
                        return journal_forget(a->journal, io->kind, key) < 0 ? -EIO : 0;
                return 0;
        }
        report(a, io->kind, key, cur, want);
        if (a->dry_run)
                return 1;
        if (!a->journal)
                return -EINVAL;
        if (!releasing) {
                r = journal_record_change(a->journal, io->kind, key, owned ? orig : cur, want);
                if (r < 0)
                        return r;
        }
        r = io->write(a, key, want);
        if (r < 0) {
                if (!owned && !releasing)
                        (void)journal_forget(a->journal, io->kind, key); /* nothing changed */
                return r;
        }
        if (releasing) {
                r = journal_forget(a->journal, io->kind, key);
                if (r < 0)
                        return r;
        }
        return 1;
}

static void merge_result(int *acc, int r) {
        if (r < 0) {
                if (*acc >= 0)
                        *acc = r;
        } else if (r > 0 && *acc == 0)
                *acc = 1;
}

/*
 * The PM QoS value for cap on cpu, or NULL when nothing needs forcing: the
 * value placed found there (the original) already allows no more than cap.
 */
static const char *qos_want(ActIdle *a, unsigned cpu, int64_t cap, char *buf, size_t size) {
        char key[16], orig[VALUE_MAX], applied[VALUE_MAX];
        snprintf(key, sizeof(key), "%u", cpu);
        bool known = object_owned(a, ACT_IDLE_KIND_QOS, key, orig, applied) ||
                     qos_read(a, key, orig, sizeof(orig)) == 0;
        int64_t base;
        /* On a read error, ask for the cap anyway: object_set() meets the error. */
        if (known && act_idle_qos_parse(orig, &base) == 0 && base <= cap)
                return NULL;
        act_idle_qos_text(cap, buf, size);
        return buf;
}

static int apply_qos(ActIdle *a, unsigned cpu, int64_t cap, bool use) {
        ActIdleCpu *c = &a->cpus[cpu];
        char key[16], buf[VALUE_MAX];
        snprintf(key, sizeof(key), "%u", cpu);
        if (!c->has_qos || (c->qos_broken && !journal_has(a->journal, ACT_IDLE_KIND_QOS, key)))
                return 0;
        const char *want = use && cap >= 0 ? qos_want(a, cpu, cap, buf, sizeof(buf)) : NULL;
        int r = object_set(a, &qos_io, key, want, &c->qos_yielded);
        if (r < 0 && want && !actuator_error_is_transient(r))
                c->qos_broken = true;
        return r;
}

static int apply_disable(ActIdle *a, unsigned cpu, int64_t cap, bool use) {
        ActIdleCpu *c = &a->cpus[cpu];
        int acc = 0;
        for (unsigned i = 0; i < c->n_states; i++) {
                char key[32];
                snprintf(key, sizeof(key), "%u:%u", cpu, i);
                bool disable = use && cap >= 0 && c->exit_latency_us[i] > (uint64_t)cap;
                merge_result(&acc, object_set(a, &cpuidle_io, key, disable ? "1" : NULL,
                                              &c->state_yielded[i]));
        }
        return acc;
}

static int apply_cpu(ActIdle *a, unsigned cpu, int64_t cap) {
        ActIdleCpu *c = &a->cpus[cpu];
        bool want_qos = a->mechanism == ACT_IDLE_AUTO || (a->mechanism & ACT_IDLE_PM_QOS);
        bool use_qos = want_qos && c->has_qos && !c->qos_broken;
        int acc = 0;

        int r = apply_qos(a, cpu, cap, use_qos);
        merge_result(&acc, r);
        if (r < 0 && c->qos_broken && a->mechanism == ACT_IDLE_AUTO)
                use_qos = false; /* fall back to state disable right away */

        bool use_disable = (a->mechanism & ACT_IDLE_STATE_DISABLE) ||
                           (a->mechanism == ACT_IDLE_AUTO && !use_qos);
        merge_result(&acc, apply_disable(a, cpu, cap, use_disable));
        return acc;
}

int act_idle_apply(ActIdle *a, const int64_t *max_latency_us, unsigned n) {
        int acc = 0;
        for (unsigned cpu = 0; cpu < a->n_cpus; cpu++) {
                int64_t cap = max_latency_us && cpu < n ? max_latency_us[cpu] : ACT_IDLE_NO_CAP;
                merge_result(&acc, apply_cpu(a, cpu, cap < 0 ? ACT_IDLE_NO_CAP : cap));
        }
        return acc;
}

static int dma_path(const ActIdle *a, char *buf, size_t size) {
        int n = a->live ? snprintf(buf, size, "/dev/cpu_dma_latency")
                        : snprintf(buf, size, "%s/dev/cpu_dma_latency", a->root);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int act_idle_set_global(ActIdle *a, int64_t max_latency_us) {
        char from[32] = "", to[32] = "";
        if (a->dma_fd >= 0)
                snprintf(from, sizeof(from), "%" PRId32, a->dma_value);
        if (max_latency_us < 0) {
                if (a->dma_fd < 0)
                        return 0;
                report(a, "cpu_dma_latency", "global", from, "");
                close(a->dma_fd); /* the kernel drops the request */
                a->dma_fd = -1;
                return 1;
        }
        int32_t v = (int32_t)MIN(max_latency_us, (int64_t)INT32_MAX);
        if (a->dma_fd >= 0 && a->dma_value == v)
                return 0;
        snprintf(to, sizeof(to), "%" PRId32, v);
        report(a, "cpu_dma_latency", "global", from, to);
        if (a->dry_run)
                return 1;
        if (a->dma_fd < 0) {
                char path[PATH_MAX];
                int r = dma_path(a, path, sizeof(path));
                if (r < 0)
                        return r;
                a->dma_fd = open(path, O_WRONLY | O_CLOEXEC);
                if (a->dma_fd < 0)
                        return negative_errno();
        }
        /* The device ignores the offset; a fixture file is overwritten in place. */
        (void)lseek(a->dma_fd, 0, SEEK_SET);
        if (write(a->dma_fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
                return negative_errno();
        a->dma_value = v;
        return 1;
}

int act_idle_release_all(ActIdle *a) {
        int acc = act_idle_apply(a, NULL, 0);
        merge_result(&acc, act_idle_set_global(a, -1));
        return acc;
}

static int kind_read(const ObjectIo *io, const char *key, char **ret, void *userdata) {
        char buf[VALUE_MAX];
        int r = io->read(userdata, key, buf, sizeof(buf));
        if (r < 0)
                return r;
        char *s = strdup(buf);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int kind_qos_read(const char *key, char **ret, void *userdata) {
        return kind_read(&qos_io, key, ret, userdata);
}

static int kind_qos_write(const char *key, const char *value, void *userdata) {
        return qos_write(userdata, key, value);
}

static int kind_cpuidle_read(const char *key, char **ret, void *userdata) {
        return kind_read(&cpuidle_io, key, ret, userdata);
}

static int kind_cpuidle_write(const char *key, const char *value, void *userdata) {
        return cpuidle_write(userdata, key, value);
}

int act_idle_kind_ops(ActIdle *a, JournalKindOps *ret, unsigned max) {
        if (max < ACT_IDLE_N_KINDS)
                return -ENOBUFS;
        ret[0] = (JournalKindOps){ .kind = ACT_IDLE_KIND_QOS,
                                   .read = kind_qos_read,
                                   .write = kind_qos_write,
                                   .userdata = a };
        ret[1] = (JournalKindOps){ .kind = ACT_IDLE_KIND_CPUIDLE,
                                   .read = kind_cpuidle_read,
                                   .write = kind_cpuidle_write,
                                   .userdata = a };
        return ACT_IDLE_N_KINDS;
}

static void act_idle_load_cpu(ActIdle *a, unsigned cpu) {
        ActIdleCpu *c = &a->cpus[cpu];
        char key[16], path[PATH_MAX];
        snprintf(key, sizeof(key), "%u", cpu);
        c->has_qos = qos_path(a, key, path, sizeof(path)) == 0 && access(path, F_OK) == 0;
        int n = a->ops->state_count(a->root, cpu);
        for (int i = 0; i < n && i < IDLE_MAX_STATES; i++) {
                IdleState st = { 0 };
                if (a->ops->read_info(a->root, cpu, (unsigned)i, &st) < 0)
                        break;
                c->exit_latency_us[i] = st.exit_latency_us;
                c->n_states = (unsigned)i + 1;
        }
}

int act_idle_new(const ActuatorEnv *env, ActIdle **ret) {
        if (!env || !env->sysfs_root || !ret)
                return -EINVAL;
        const char *sysfs_root = env->sysfs_root;
        Journal *journal = env->journal;
        bool dry_run = env->dry_run;
        int n = idle_cpu_count(sysfs_root);
        if (n < 0)
                return n;
        ActIdle *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        *a = (ActIdle){ .journal = journal, .dry_run = dry_run, .dma_fd = -1 };
        snprintf(a->root, sizeof(a->root), "%s", sysfs_root);
        a->live = sysfs_root[strspn(sysfs_root, "/")] == '\0';
        a->ops = idle_ops_pick(sysfs_root);
        a->cpus = calloc((size_t)n, sizeof(*a->cpus));
        if (!a->cpus) {
                free(a);
                return -ENOMEM;
        }
        a->n_cpus = (unsigned)n;
        for (unsigned cpu = 0; cpu < a->n_cpus; cpu++)
                act_idle_load_cpu(a, cpu);
        *ret = a;
        return 0;
}

ActIdle *act_idle_free(ActIdle *a) {
        if (a) {
                if (a->dma_fd >= 0)
                        close(a->dma_fd);
                free(a->cpus);
                free(a);
        }
        return NULL;
}

void act_idle_set_mechanism(ActIdle *a, ActIdleMechanism mechanism) {
        a->mechanism = mechanism;
}

void act_idle_set_report(ActIdle *a, ActIdleReportFn fn, void *userdata) {
        a->report = fn;
        a->report_data = userdata;
}
