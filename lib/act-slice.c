/* SPDX-License-Identifier: MIT */
/*
 * The slice actuator (see act-slice.h). Its cgroupfs backend is
 * act-cpuset.c; its systemd backend is here: AllowedCPUs= on systemd
 * slices, through org.freedesktop.systemd1.
 *
 * systemd owns the cgroup tree when it is PID 1: writing cpuset.cpus behind
 * its back would be undone at the next daemon-reload and confuse "systemctl
 * show". So placed asks systemd, with runtime=true so nothing survives a
 * reboot. The property is a CPU bitmask as a byte array (bit n of byte n/8);
 * an empty array means "unset", which is also how the original value of an
 * unconfigured slice is journaled (as the empty string).
 */
#include "act-slice.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "act-cpuset.h"
#include "macro.h"

#define SYSTEMD_DEST    "org.freedesktop.systemd1"
#define SYSTEMD_PATH    "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
#define SYSTEMD_SLICE   "org.freedesktop.systemd1.Slice"

static void bus_errorp(sd_bus_error *e) {
        sd_bus_error_free(e);
}
#define _cleanup_bus_error_ _cleanup_(bus_errorp)

static void bus_messagep(sd_bus_message **m) {
        sd_bus_message_unref(*m);
}
#define _cleanup_bus_message_ _cleanup_(bus_messagep)

int act_slice_get_allowed_cpus(sd_bus *bus, const char *unit, CpuSet *ret, bool *ret_set) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_bus_message_ sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL;
        const uint8_t *bytes;
        size_t n;
        int r;

        r = sd_bus_path_encode(SYSTEMD_PATH "/unit", unit, &path);
        if (r < 0)
                return r;
        r = sd_bus_get_property(bus, SYSTEMD_DEST, path, SYSTEMD_SLICE, "AllowedCPUs", &error,
                                &reply, "ay");
        if (r < 0)
                return sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_OBJECT) ? -ENOENT : r;
        r = sd_bus_message_read_array(reply, 'y', (const void **)&bytes, &n);
        if (r < 0)
                return r;

        CpuSet s;
        cpuset_zero(&s);
        for (size_t i = 0; i < n && i * 8 < CPUSET_MAX_CPUS; i++)
                for (int b = 0; b < 8; b++)
                        if (bytes[i] & (1u << b))
                                cpuset_set(&s, (int)(i * 8) + b);
        *ret = s;
        *ret_set = n > 0 && !cpuset_is_empty(&s);
        return 0;
}

static int systemd_set_allowed_cpus(sd_bus *bus, const char *unit, const CpuSet *cpus) {
        _cleanup_bus_error_ sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_bus_message_ sd_bus_message *m = NULL;
        uint8_t bytes[CPUSET_MAX_CPUS / 8] = { 0 };
        size_t n = 0;
        int r;

        if (cpus && !cpuset_is_empty(cpus)) {
                CPUSET_FOREACH (cpu, cpus)
                        bytes[cpu / 8] |= (uint8_t)(1u << (cpu % 8));
                n = (size_t)cpuset_last(cpus) / 8 + 1;
        }

        r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "SetUnitProperties");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "sb", unit, 1); /* runtime only */
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", "AllowedCPUs");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'v', "ay");
        if (r < 0)
                return r;
        r = sd_bus_message_append_array(m, 'y', bytes, n);
        if (r < 0)
                return r;
        for (int i = 0; i < 3; i++) { /* the variant, the struct, the array */
                r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
        }
        return sd_bus_call(bus, m, 0, &error, NULL);
}

static int slice_format(const CpuSet *cpus, bool set, char **ret) {
        if (!set) {
                *ret = strdup("");
                return *ret ? 0 : -ENOMEM;
        }
        return cpuset_to_string(cpus, ret);
}

static int systemd_apply(sd_bus *bus, Journal *j, const char *unit, const CpuSet *cpus,
                         bool dry_run) {
        _cleanup_free_ char *original = NULL, *wanted = NULL;
        CpuSet now;
        bool set;
        int r;

        r = act_slice_get_allowed_cpus(bus, unit, &now, &set);
        if (r < 0)
                return r;
        if (set && cpuset_equal(&now, cpus))
                return 0;
        if (dry_run)
                return 1;

        r = slice_format(&now, set, &original);
        if (r < 0)
                return r;
        r = cpuset_to_string(cpus, &wanted);
        if (r < 0)
                return r;
        r = journal_record_change(j, ACT_SLICE_JOURNAL_KIND, unit, original, wanted);
        if (r < 0)
                return r;
        r = systemd_set_allowed_cpus(bus, unit, cpus);
        return r < 0 ? r : 1;
}

static int slice_journal_read(const char *key, char **ret, void *userdata) {
        CpuSet now;
        bool set;
        int r = act_slice_get_allowed_cpus(userdata, key, &now, &set);
        if (r < 0)
                return r;
        return slice_format(&now, set, ret);
}

static int slice_journal_write(const char *key, const char *value, void *userdata) {
        CpuSet cpus;
        int r = cpuset_parse(value, &cpus);
        if (r < 0)
                return r;
        return systemd_set_allowed_cpus(userdata, key, &cpus);
}

static bool slice_journal_equal(const char *a, const char *b) {
        CpuSet sa, sb;
        if (cpuset_parse(a, &sa) < 0 || cpuset_parse(b, &sb) < 0)
                return strcmp(a, b) == 0;
        return cpuset_equal(&sa, &sb);
}

static void systemd_kind_ops(sd_bus *bus, JournalKindOps *ret) {
        *ret = (JournalKindOps){
                .kind = ACT_SLICE_JOURNAL_KIND,
                .read = slice_journal_read,
                .write = slice_journal_write,
                .equal = slice_journal_equal,
                .userdata = bus,
        };
}

static int systemd_release(sd_bus *bus, Journal *j, const char *unit) {
        const char *original, *applied;
        CpuSet now, want;
        bool set;
        int r;

        if (journal_get(j, ACT_SLICE_JOURNAL_KIND, unit, &original, &applied) < 0)
                return 0;
        r = act_slice_get_allowed_cpus(bus, unit, &now, &set);
        if (r >= 0 && set && cpuset_parse(applied, &want) >= 0 && cpuset_equal(&now, &want)) {
                r = slice_journal_write(unit, original, bus);
                if (r < 0)
                        return r;
        }
        /* Restored, changed by someone else since, or gone: placed lets go. */
        r = journal_forget(j, ACT_SLICE_JOURNAL_KIND, unit);
        return r < 0 ? r : 1;
}

struct ActSlice {
        SliceBackend backend;
        int backend_error;
        bool dry_run;
        Journal *journal;
        sd_bus *systemd;   /* SLICE_BACKEND_SYSTEMD */
        ActCpuset *cpuset; /* SLICE_BACKEND_CGROUPFS */
};

int act_slice_new(const ActuatorEnv *env, ActSlice **ret) {
        ActSlice *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (ActSlice){ .dry_run = env->dry_run, .journal = env->journal };
        SliceBackend b = actuator_slice_backend_pick(env);
        int r = 0;
        if (b == SLICE_BACKEND_SYSTEMD)
                r = sd_bus_open_system(&s->systemd);
        else if (b == SLICE_BACKEND_CGROUPFS) {
                ActCpusetOptions o = { .cgroup_root = env->cgroup_root,
                                       .dry_run = env->dry_run,
                                       .journal = env->journal };
                r = act_cpuset_new(&o, &s->cpuset);
        }
        if (r == -ENOMEM) {
                act_slice_free(s);
                return r;
        }
        s->backend = r < 0 ? SLICE_BACKEND_NONE : b;
        s->backend_error = r < 0 ? r : 0;
        *ret = s;
        return 0;
}

ActSlice *act_slice_free(ActSlice *s) {
        if (!s)
                return NULL;
        sd_bus_flush_close_unref(s->systemd);
        act_cpuset_free(s->cpuset);
        free(s);
        return NULL;
}

SliceBackend act_slice_backend(const ActSlice *s) {
        return s ? s->backend : SLICE_BACKEND_NONE;
}

int act_slice_backend_error(const ActSlice *s) {
        return s ? s->backend_error : 0;
}

int act_slice_apply(ActSlice *s, const char *slice, const CpuSet *cpus) {
        assert(s);
        assert(slice);
        assert(cpus);
        if (s->backend == SLICE_BACKEND_SYSTEMD)
                return systemd_apply(s->systemd, s->journal, slice, cpus, s->dry_run);
        if (s->backend == SLICE_BACKEND_CGROUPFS)
                return act_cpuset_apply(s->cpuset, slice, cpus, NULL, NULL);
        return 0;
}

int act_slice_release(ActSlice *s, const char *slice) {
        assert(s);
        assert(slice);
        if (s->backend == SLICE_BACKEND_SYSTEMD)
                return s->dry_run ? 0 : systemd_release(s->systemd, s->journal, slice);
        if (s->backend == SLICE_BACKEND_CGROUPFS)
                return act_cpuset_release(s->cpuset, slice);
        return 0;
}

int act_slice_kind_ops(ActSlice *s, JournalKindOps *ret, unsigned max) {
        unsigned n = s && s->backend == SLICE_BACKEND_SYSTEMD ? 2 : 1;
        if (max < n)
                return -ENOBUFS;
        act_cpuset_kind_ops(&ret[0]);
        if (n == 2)
                systemd_kind_ops(s->systemd, &ret[1]);
        return (int)n;
}
