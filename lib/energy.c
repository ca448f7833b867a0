/* SPDX-License-Identifier: MIT */
/*
 * The energy estimate and the RAPL reader (the model is documented in
 * energy.h). placed compares placements by what they cost in power, and most
 * machines it runs on have no energy counter, so it estimates from what
 * every Linux machine has: busy time, idle-state residency and idle-state
 * entries. Where powercap RAPL exists, the measured figure is reported
 * beside the estimate so the weights can be checked against it.
 */
#include "energy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fileio.h"
#include "macro.h"

typedef struct KnownWeight {
        const char *name;
        double weight;
} KnownWeight;

/* Relative power of common states; a rough ranking, see energy.h. */
static const KnownWeight known_weights[] = {
        { "POLL", 0.9 },    { "C1", 0.3 },  { "C1_ACPI", 0.3 },  { "haltpoll idle", 0.3 },
        { "C1E", 0.2 },     { "C2", 0.15 }, { "C2_ACPI", 0.15 }, { "C3", 0.1 },
        { "C3_ACPI", 0.1 }, { "C6", 0.05 }, { "C6S", 0.04 },     { "C7", 0.04 },
        { "C7S", 0.04 },    { "C8", 0.03 }, { "C9", 0.03 },      { "C10", 0.03 },
};

void energy_model_init(EnergyModel *m) {
        *m = (EnergyModel){
                .wakeup_cost_us = 10.0,
                .other_idle_weight = 0.3,
                .watts_per_cpu = 0.0,
        };
}

int energy_model_set_weight(EnergyModel *m, const char *name, double weight) {
        if (!name || !name[0] || strlen(name) >= IDLE_NAME_MAX || !(weight >= 0.0 && weight <= 1.0))
                return -EINVAL;
        for (unsigned i = 0; i < m->n_overrides; i++)
                if (strcasecmp(m->overrides[i].name, name) == 0) {
                        m->overrides[i].weight = weight;
                        return 0;
                }
        if (m->n_overrides >= ENERGY_MAX_OVERRIDES)
                return -ENOSPC;
        EnergyWeight *w = &m->overrides[m->n_overrides++];
        snprintf(w->name, sizeof(w->name), "%s", name);
        w->weight = weight;
        return 1;
}

double energy_state_weight(const EnergyModel *m, const char *name, uint64_t exit_latency_us) {
        for (unsigned i = 0; i < m->n_overrides; i++)
                if (strcasecmp(m->overrides[i].name, name) == 0)
                        return m->overrides[i].weight;
        for (size_t i = 0; i < ELEMENTSOF(known_weights); i++)
                if (strcasecmp(known_weights[i].name, name) == 0)
                        return known_weights[i].weight;
        if (exit_latency_us == 0)
                return 0.9;
        if (exit_latency_us <= 2)
                return 0.3;
        if (exit_latency_us <= 20)
                return 0.2;
        if (exit_latency_us <= 100)
                return 0.1;
        return 0.05;
}

double energy_estimate_cpu(const EnergyModel *m, const IdleCpu *ic, const IdleCpuStats *st) {
        if (!st->valid)
                return -1;
        double ace = st->busy_frac + st->other_idle_frac * m->other_idle_weight;
        for (unsigned i = 0; ic && i < st->n_states && i < ic->n_states; i++)
                ace += st->state_frac[i] *
                       energy_state_weight(m, ic->states[i].name, ic->states[i].exit_latency_us);
        ace += st->wakeups_per_sec * m->wakeup_cost_us / (double)USEC_PER_SEC;
        return ace;
}

int energy_estimate(const EnergyModel *m, const IdleSampler *s, const IdleCpuStats *stats,
                    unsigned n, EnergyEstimate *ret) {
        EnergyEstimate e = { 0 };
        for (unsigned i = 0; i < n; i++) {
                if (!stats[i].valid || stats[i].cpu < 0)
                        continue;
                const IdleCpu *ic = s ? idle_sampler_cpu(s, (unsigned)stats[i].cpu) : NULL;
                if (s && !ic)
                        continue;
                e.ace += energy_estimate_cpu(m, ic, &stats[i]);
                e.n_cpus++;
        }
        e.watts = e.ace * m->watts_per_cpu;
        *ret = e;
        return e.n_cpus > 0 ? 1 : 0;
}

/* RAPL */

struct EnergyRapl {
        char dir[PATH_MAX];    /* SYSFS_ROOT/sys/class/powercap */
        EnergyRaplZone *zones; /* owned */
        unsigned n_zones;
        bool have_prev;
        uint64_t last_us;
};

/* Reads a small sysfs file, trailing newline cut; cut to size like the kernel's own names. */
static int read_line(const char *path, char *buf, size_t size) {
        char text[256];
        int r = read_small_file_line(path, text, sizeof(text));
        if (r < 0)
                return r;
        size_t n = MIN((size_t)r, size - 1);
        memcpy(buf, text, n);
        buf[n] = '\0';
        return 0;
}

static int zone_read_u64(const EnergyRapl *r, const char *zone, const char *file, uint64_t *ret) {
        char path[PATH_MAX], buf[64];
        if (snprintf(path, sizeof(path), "%s/%s/%s", r->dir, zone, file) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        int k = read_line(path, buf, sizeof(buf));
        if (k < 0)
                return k;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 10);
        if (errno || end == buf || *end)
                return -EBADMSG;
        *ret = v;
        return 0;
}

static int rapl_add_zone(EnergyRapl *r, const char *zone) {
        uint64_t energy, range = 0;
        int k = zone_read_u64(r, zone, "energy_uj", &energy);
        if (k == -ENOENT)
                return 0; /* the control-type directory "intel-rapl" */
        if (k < 0 && k != -EACCES)
                return k;
        (void)zone_read_u64(r, zone, "max_energy_range_uj", &range);

        EnergyRaplZone *z = realloc(r->zones, (r->n_zones + 1) * sizeof(*z));
        if (!z)
                return -ENOMEM;
        r->zones = z;
        z = &r->zones[r->n_zones++];
        *z = (EnergyRaplZone){ .max_energy_range_uj = range };
        snprintf(z->zone, sizeof(z->zone), "%s", zone);
        z->top_level = !strchr(zone + strlen("intel-rapl:"), ':');
        char path[PATH_MAX];
        k = snprintf(path, sizeof(path), "%s/%s/name", r->dir, zone);
        if (k < 0 || (size_t)k >= sizeof(path) || read_line(path, z->name, sizeof(z->name)) < 0)
                snprintf(z->name, sizeof(z->name), "%s", zone);
        return 1;
}

static int zone_cmp(const void *a, const void *b) {
        return strcmp(((const EnergyRaplZone *)a)->zone, ((const EnergyRaplZone *)b)->zone);
}

int energy_rapl_open(const char *sysfs_root, EnergyRapl **ret) {
        EnergyRapl *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        int k = snprintf(r->dir, sizeof(r->dir), "%s/sys/class/powercap", sysfs_root);
        if (k < 0 || (size_t)k >= sizeof(r->dir)) {
                energy_rapl_free(r);
                return -ENAMETOOLONG;
        }
        DIR *d = opendir(r->dir);
        if (!d) {
                k = negative_errno();
                energy_rapl_free(r);
                return k;
        }
        struct dirent *de;
        k = 0;
        while (k >= 0 && (de = readdir(d)))
                if (strncmp(de->d_name, "intel-rapl:", strlen("intel-rapl:")) == 0)
                        k = rapl_add_zone(r, de->d_name);
        closedir(d);
        if (k >= 0 && r->n_zones == 0)
                k = -ENOENT;
        if (k < 0) {
                energy_rapl_free(r);
                return k;
        }
        qsort(r->zones, r->n_zones, sizeof(*r->zones), zone_cmp);
        *ret = r;
        return 0;
}

EnergyRapl *energy_rapl_free(EnergyRapl *r) {
        if (r) {
                free(r->zones);
                free(r);
        }
        return NULL;
}

uint64_t energy_rapl_delta_uj(uint64_t before, uint64_t now, uint64_t max_range) {
        if (now >= before)
                return now - before;
        if (max_range == 0 || before > max_range)
                return 0; /* reset, or range unknown: no trustworthy delta */
        return max_range - before + now;
}

/* Zones counted in the total: packages, else every top-level zone but psys. */
static bool zone_counted(const EnergyRapl *r, const EnergyRaplZone *z) {
        bool any_package = false;
        for (unsigned i = 0; i < r->n_zones; i++)
                any_package = any_package || (r->zones[i].top_level &&
                                              strncmp(r->zones[i].name, "package", 7) == 0);
        if (!z->top_level)
                return false;
        if (any_package)
                return strncmp(z->name, "package", 7) == 0;
        return strcmp(z->name, "psys") != 0;
}

int energy_rapl_refresh(EnergyRapl *r, uint64_t now_us, double *ret_watts) {
        uint64_t values[r->n_zones > 0 ? r->n_zones : 1];
        for (unsigned i = 0; i < r->n_zones; i++) {
                int k = zone_read_u64(r, r->zones[i].zone, "energy_uj", &values[i]);
                if (k < 0)
                        return k;
        }
        bool delta = r->have_prev && now_us > r->last_us;
        uint64_t total_uj = 0;
        for (unsigned i = 0; i < r->n_zones; i++) {
                EnergyRaplZone *z = &r->zones[i];
                z->has_delta = delta;
                z->delta_uj = delta ? energy_rapl_delta_uj(z->energy_uj, values[i],
                                                           z->max_energy_range_uj)
                                    : 0;
                z->energy_uj = values[i];
                if (delta && zone_counted(r, z))
                        total_uj += z->delta_uj;
        }
        uint64_t interval_us = now_us - r->last_us;
        r->have_prev = true;
        r->last_us = now_us;
        if (!delta)
                return 0;
        if (ret_watts)
                *ret_watts = (double)total_uj / (double)interval_us; /* uJ/us = W */
        return 1;
}

unsigned energy_rapl_n_zones(const EnergyRapl *r) {
        return r ? r->n_zones : 0;
}

const EnergyRaplZone *energy_rapl_zone(const EnergyRapl *r, unsigned i) {
        if (!r || i >= r->n_zones)
                return NULL;
        return &r->zones[i];
}
