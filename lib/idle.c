/* SPDX-License-Identifier: MIT */
/*
 * Idle-state sampling. placed needs to see how deeply each CPU sleeps: packing
 * saves power only if the CPUs left free reach deep states, and spreading
 * costs latency when the CPUs woken sit in states with a long exit latency.
 *
 * libcpupower reads the live system but hard-codes /sys, so it sits behind
 * IdleOps beside a reader that takes a sysfs root (fixture trees). Both give
 * the same numbers; libcpupower's conventions (0 or NULL on error, negative
 * small integers from the disable calls) are converted to negative errno
 * here. libcpupower has no call for the target residency, so that one value
 * is read from the sysfs files under "/" in the libcpupower back end too.
 *
 * libcpupower returns 0 both for "no such file" and for a counter that is 0
 * (POLL's time on a haltpoll guest is 0), so before trusting a 0 the back end
 * asks cpuidle_is_state_disabled(), which does tell a missing state apart.
 */
#include "idle.h"

#include <cpuidle.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "macro.h"

#define CPU_DIR "sys/devices/system/cpu"

_printf_(4, 5) static int state_path(char *buf, size_t size, const char *root, const char *fmt,
                                     ...) {
        int n = snprintf(buf, size, "%s/" CPU_DIR "/", root);
        if (n < 0 || (size_t)n >= size)
                return -ENAMETOOLONG;
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(buf + n, size - (size_t)n, fmt, ap);
        va_end(ap);
        if (m < 0 || (size_t)m >= size - (size_t)n)
                return -ENAMETOOLONG;
        return 0;
}

/* Reads a small sysfs file, trailing newline cut; cut to size like the kernel's own names. */
static int read_text(const char *path, char *buf, size_t size) {
        char text[256];
        int r = read_small_file_line(path, text, sizeof(text));
        if (r < 0)
                return r;
        size_t n = MIN((size_t)r, size - 1);
        memcpy(buf, text, n);
        buf[n] = '\0';
        return 0;
}

static int parse_u64(const char *text, uint64_t *ret) {
        char *end;
        if (text[0] < '0' || text[0] > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int sysfs_read_state(const char *root, unsigned cpu, unsigned state, const char *file,
                            char *buf, size_t size) {
        char path[PATH_MAX];
        int r = state_path(path, sizeof(path), root, "cpu%u/cpuidle/state%u/%s", cpu, state, file);
        if (r < 0)
                return r;
        return read_text(path, buf, size);
}

static int sysfs_read_u64(const char *root, unsigned cpu, unsigned state, const char *file,
                          uint64_t *ret) {
        char buf[64];
        int r = sysfs_read_state(root, cpu, state, file, buf, sizeof(buf));
        if (r < 0)
                return r;
        return parse_u64(buf, ret);
}

static int sysfs_state_count(const char *root, unsigned cpu) {
        unsigned n = 0;
        for (; n < IDLE_MAX_STATES; n++) {
                char path[PATH_MAX];
                struct stat st;
                int r = state_path(path, sizeof(path), root, "cpu%u/cpuidle/state%u", cpu, n);
                if (r < 0)
                        return r;
                if (stat(path, &st) < 0) {
                        if (errno == ENOENT)
                                break;
                        return negative_errno();
                }
        }
        return (int)n;
}

static int sysfs_read_info(const char *root, unsigned cpu, unsigned state, IdleState *st) {
        int r = sysfs_read_state(root, cpu, state, "name", st->name, sizeof(st->name));
        if (r < 0)
                return r;
        r = sysfs_read_state(root, cpu, state, "desc", st->desc, sizeof(st->desc));
        if (r == -ENOENT)
                st->desc[0] = '\0';
        else if (r < 0)
                return r;
        r = sysfs_read_u64(root, cpu, state, "latency", &st->exit_latency_us);
        if (r < 0)
                return r;
        return sysfs_read_u64(root, cpu, state, "residency", &st->target_residency_us);
}

static int sysfs_read_counters(const char *root, unsigned cpu, unsigned state, IdleState *st) {
        uint64_t disabled;
        int r = sysfs_read_u64(root, cpu, state, "time", &st->time_us);
        if (r < 0)
                return r;
        r = sysfs_read_u64(root, cpu, state, "usage", &st->usage);
        if (r < 0)
                return r;
        r = sysfs_read_u64(root, cpu, state, "disable", &disabled);
        if (r < 0)
                return r;
        st->disabled = disabled != 0;
        return 0;
}

static int sysfs_set_disabled(const char *root, unsigned cpu, unsigned state, bool disable) {
        char path[PATH_MAX];
        int r = state_path(path, sizeof(path), root, "cpu%u/cpuidle/state%u/disable", cpu, state);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_TRUNC);
        if (fd < 0)
                return negative_errno();
        const char *v = disable ? "1\n" : "0\n";
        if (write(fd, v, 2) != 2)
                return negative_errno();
        return 0;
}

const IdleOps idle_ops_sysfs = {
        .name = "sysfs",
        .state_count = sysfs_state_count,
        .read_info = sysfs_read_info,
        .read_counters = sysfs_read_counters,
        .set_disabled = sysfs_set_disabled,
};

/* cpuidle_is_state_disabled(): -1 no such state, -2 no disable file, else 0/1. */
static int cpupower_disabled(unsigned cpu, unsigned state, bool *ret) {
        int r = cpuidle_is_state_disabled(cpu, state);
        if (r == -1)
                return -ENOENT;
        if (r < 0)
                return -EOPNOTSUPP;
        *ret = r != 0;
        return 0;
}

static int cpupower_state_count(const char *root, unsigned cpu) {
        unsigned n = cpuidle_state_count(cpu); /* 0 for "none" and for errors alike */
        return (int)MIN(n, (unsigned)IDLE_MAX_STATES);
}

static int copy_string(char *s, char *buf, size_t size) {
        if (!s)
                return -ENOENT;
        snprintf(buf, size, "%s", s);
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        free(s);
        return 0;
}

static int cpupower_read_info(const char *root, unsigned cpu, unsigned state, IdleState *st) {
        bool disabled;
        int r = cpupower_disabled(cpu, state, &disabled); /* tells a missing state apart */
        if (r == -ENOENT)
                return r;
        r = copy_string(cpuidle_state_name(cpu, state), st->name, sizeof(st->name));
        if (r < 0)
                return r;
        if (copy_string(cpuidle_state_desc(cpu, state), st->desc, sizeof(st->desc)) < 0)
                st->desc[0] = '\0';
        st->exit_latency_us = cpuidle_state_latency(cpu, state);
        r = sysfs_read_u64(root, cpu, state, "residency", &st->target_residency_us);
        if (r == -ENOENT)
                st->target_residency_us = 0;
        else if (r < 0)
                return r;
        return 0;
}

static int cpupower_read_counters(const char *root, unsigned cpu, unsigned state, IdleState *st) {
        int r = cpupower_disabled(cpu, state, &st->disabled);
        if (r < 0)
                return r;
        st->time_us = cpuidle_state_time(cpu, state);
        st->usage = cpuidle_state_usage(cpu, state);
        return 0;
}

static int cpupower_set_disabled(const char *root, unsigned cpu, unsigned state, bool disable) {
        errno = 0;
        int r = cpuidle_state_disable(cpu, state, disable ? 1 : 0);
        if (r == 0)
                return 0;
        if (r == -1)
                return -ENOENT;
        if (r == -2)
                return -EOPNOTSUPP;
        return errno > 0 ? -errno : -EIO; /* -3: open or write failed */
}

const IdleOps idle_ops_cpupower = {
        .name = "libcpupower",
        .state_count = cpupower_state_count,
        .read_info = cpupower_read_info,
        .read_counters = cpupower_read_counters,
        .set_disabled = cpupower_set_disabled,
};

static bool root_is_live(const char *root) {
        return root[strspn(root, "/")] == '\0';
}

int idle_cpu_count(const char *sysfs_root) {
        char path[PATH_MAX];
        int r = state_path(path, sizeof(path), sysfs_root, "%s", "");
        if (r < 0)
                return r;
        DIR *d = opendir(path);
        if (!d)
                return negative_errno();
        int max = -1;
        struct dirent *de;
        while ((de = readdir(d))) {
                const char *p = de->d_name;
                if (strncmp(p, "cpu", 3) != 0 || p[3] < '0' || p[3] > '9' ||
                    p[3 + strspn(p + 3, "0123456789")] != '\0')
                        continue;
                long cpu = strtol(p + 3, NULL, 10);
                if (cpu < 65536)
                        max = MAX(max, (int)cpu);
        }
        closedir(d);
        return max < 0 ? -ENOENT : max + 1;
}

const IdleOps *idle_ops_pick(const char *sysfs_root) {
        if (!root_is_live(sysfs_root))
                return &idle_ops_sysfs;
        int n = idle_cpu_count(sysfs_root);
        for (int cpu = 0; cpu < n; cpu++)
                if (cpuidle_state_count((unsigned)cpu) > 0)
                        return &idle_ops_cpupower;
        return &idle_ops_sysfs;
}

typedef struct CpuPriv {
        bool have_prev; /* the counters in IdleCpu are from a good read */
        bool need_info; /* read names and latencies again */
        uint64_t last_us;
} CpuPriv;

struct IdleSampler {
        char root[PATH_MAX];
        const IdleOps *ops;
        unsigned n_cpus;
        IdleCpu *cpus; /* owned, indexed by CPU number */
        CpuPriv *priv; /* owned, parallel to cpus */
};

static int sampler_read_info(IdleSampler *s, unsigned cpu, unsigned n) {
        IdleCpu *ic = &s->cpus[cpu];
        for (unsigned i = 0; i < n; i++) {
                IdleState st = { 0 };
                int r = s->ops->read_info(s->root, cpu, i, &st);
                if (r < 0)
                        return r;
                ic->states[i] = st;
        }
        ic->n_states = n;
        return 0;
}

int idle_sampler_new(const char *sysfs_root, const IdleOps *ops, IdleSampler **ret) {
        if (!sysfs_root || !ret)
                return -EINVAL;
        int n = idle_cpu_count(sysfs_root);
        if (n < 0)
                return n;
        IdleSampler *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        snprintf(s->root, sizeof(s->root), "%s", sysfs_root);
        s->ops = ops ? ops : idle_ops_pick(sysfs_root);
        s->n_cpus = (unsigned)n;
        s->cpus = calloc((size_t)n, sizeof(*s->cpus));
        s->priv = calloc((size_t)n, sizeof(*s->priv));
        if (!s->cpus || !s->priv) {
                idle_sampler_free(s);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < s->n_cpus; i++) {
                s->cpus[i].cpu = (int)i;
                /* The static information now, as promised: the caller sees at
                 * once whether there are states (placed drops a sampler with
                 * none). A CPU that cannot be read (offline) is read again at
                 * its first refresh. */
                int r = s->ops->state_count(s->root, i);
                if (r >= 0)
                        r = sampler_read_info(s, i, (unsigned)r);
                s->priv[i].need_info = r < 0;
        }
        *ret = s;
        return 0;
}

IdleSampler *idle_sampler_free(IdleSampler *s) {
        if (s) {
                free(s->cpus);
                free(s->priv);
                free(s);
        }
        return NULL;
}

/* Return: 1 with deltas, 0 without, negative errno (the CPU starts over). */
static int sampler_read_cpu(IdleSampler *s, unsigned cpu, uint64_t now_us) {
        IdleCpu *ic = &s->cpus[cpu];
        CpuPriv *p = &s->priv[cpu];
        ic->has_delta = false;

        int r = s->ops->state_count(s->root, cpu);
        if (r >= 0 && ((unsigned)r != ic->n_states || p->need_info)) {
                p->have_prev = false;
                r = sampler_read_info(s, cpu, (unsigned)r);
        }
        if (r < 0) {
                p->have_prev = false;
                p->need_info = true;
                return r;
        }
        p->need_info = false;

        for (unsigned i = 0; i < ic->n_states; i++) {
                IdleState *st = &ic->states[i], now = *st;
                r = s->ops->read_counters(s->root, cpu, i, &now);
                if (r < 0) {
                        p->have_prev = false;
                        p->need_info = true;
                        return r;
                }
                st->delta_time_us = now.time_us >= st->time_us ? now.time_us - st->time_us : 0;
                st->delta_usage = now.usage >= st->usage ? now.usage - st->usage : 0;
                st->time_us = now.time_us;
                st->usage = now.usage;
                st->disabled = now.disabled;
        }
        ic->has_delta = p->have_prev && ic->n_states > 0 && now_us > p->last_us;
        ic->interval_us = ic->has_delta ? now_us - p->last_us : 0;
        p->have_prev = true;
        p->last_us = now_us;
        return ic->has_delta ? 1 : 0;
}

int idle_sampler_refresh(IdleSampler *s, uint64_t now_us) {
        int first_error = 0;
        unsigned ok = 0, deltas = 0;
        for (unsigned cpu = 0; cpu < s->n_cpus; cpu++) {
                int r = sampler_read_cpu(s, cpu, now_us);
                if (r < 0) {
                        if (!first_error)
                                first_error = r;
                        continue;
                }
                ok++;
                deltas += (unsigned)r;
        }
        if (ok == 0 && first_error)
                return first_error;
        return deltas > 0 ? 1 : 0;
}

unsigned idle_sampler_n_cpus(const IdleSampler *s) {
        return s ? s->n_cpus : 0;
}

const IdleCpu *idle_sampler_cpu(const IdleSampler *s, unsigned cpu) {
        if (!s || cpu >= s->n_cpus)
                return NULL;
        return &s->cpus[cpu];
}

const IdleOps *idle_sampler_ops(const IdleSampler *s) {
        return s->ops;
}

int idle_cpu_derive(const IdleCpu *ic, const CpuStatCpu *sc, IdleCpuStats *ret) {
        *ret = (IdleCpuStats){ .cpu = ic->cpu, .n_states = ic->n_states };
        double busy = cpustat_busy_frac(sc);
        if (!ic->has_delta || ic->interval_us == 0 || busy < 0)
                return 0;

        double interval = (double)ic->interval_us, idle = 1.0 - busy;
        uint64_t sum_time = 0, sum_usage = 0;
        unsigned deepest = 0;
        for (unsigned i = 0; i < ic->n_states; i++) {
                sum_time += ic->states[i].delta_time_us;
                sum_usage += ic->states[i].delta_usage;
                if (ic->states[i].exit_latency_us >= ic->states[deepest].exit_latency_us)
                        deepest = i;
        }
        double raw = (double)sum_time / interval;
        double scale = raw > idle ? idle / raw : 1.0;
        for (unsigned i = 0; i < ic->n_states; i++)
                ret->state_frac[i] = (double)ic->states[i].delta_time_us / interval * scale;

        ret->busy_frac = busy;
        ret->other_idle_frac = raw > idle ? 0.0 : idle - raw;
        ret->wakeups_per_sec = (double)sum_usage * (double)USEC_PER_SEC / interval;
        ret->deepest_state = deepest;
        ret->deepest_idle_share =
                sum_time ? (double)ic->states[deepest].delta_time_us / (double)sum_time : 0.0;
        ret->valid = true;
        return 1;
}

int idle_cpu_derive_stateless(const CpuStatCpu *sc, uint64_t interval_us, IdleCpuStats *ret) {
        *ret = (IdleCpuStats){ .cpu = sc ? sc->cpu : -1 };
        double busy = cpustat_busy_frac(sc);
        if (busy < 0 || !sc->has_irq_delta || interval_us == 0)
                return 0;
        ret->busy_frac = busy;
        ret->other_idle_frac = 1.0 - busy;
        /* Interrupts come while busy too (the tick); those while idle, each
         * an idle exit, in proportion to idle time. */
        ret->wakeups_per_sec =
                (double)sc->delta_irqs * (1.0 - busy) * (double)USEC_PER_SEC / (double)interval_us;
        ret->valid = true;
        return 1;
}
