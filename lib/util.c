/* SPDX-License-Identifier: MIT */
/*
 * Small data-structure helpers (see util.h): the U64Map, with linear probing
 * and backward-shift deletion (no tombstones, so a map that lives for days
 * of churning TIDs keeps its probe chains short), and array growth.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "util.h"

/* ---- U64Map ---------------------------------------------------------- */

struct U64Map {
        uint64_t *keys;
        uint32_t *values;
        uint8_t *used;
        size_t cap; /* power of two, or 0 */
        size_t n;
};

static uint64_t hash_u64(uint64_t x) {
        x ^= x >> 30;
        x *= UINT64_C(0xbf58476d1ce4e5b9);
        x ^= x >> 27;
        x *= UINT64_C(0x94d049bb133111eb);
        return x ^ (x >> 31);
}

int u64map_new(U64Map **ret) {
        U64Map *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        *ret = m;
        return 0;
}

U64Map *u64map_free(U64Map *m) {
        if (!m)
                return NULL;
        free(m->keys);
        free(m->values);
        free(m->used);
        free(m);
        return NULL;
}

static int u64map_grow(U64Map *m) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        uint64_t *keys = calloc(cap, sizeof(*keys));
        uint32_t *values = calloc(cap, sizeof(*values));
        uint8_t *used = calloc(cap, 1);
        if (!keys || !values || !used) {
                free(keys);
                free(values);
                free(used);
                return -ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
                if (!m->used[i])
                        continue;
                size_t j = hash_u64(m->keys[i]) & (cap - 1);
                while (used[j])
                        j = (j + 1) & (cap - 1);
                used[j] = 1;
                keys[j] = m->keys[i];
                values[j] = m->values[i];
        }
        free(m->keys);
        free(m->values);
        free(m->used);
        m->keys = keys;
        m->values = values;
        m->used = used;
        m->cap = cap;
        return 0;
}

static size_t u64map_slot(const U64Map *m, uint64_t key) {
        size_t i = hash_u64(key) & (m->cap - 1);
        while (m->used[i] && m->keys[i] != key)
                i = (i + 1) & (m->cap - 1);
        return i;
}

int u64map_put(U64Map *m, uint64_t key, uint32_t value) {
        if ((m->n + 1) * 2 > m->cap) {
                int r = u64map_grow(m);
                if (r < 0)
                        return r;
        }
        size_t i = u64map_slot(m, key);
        if (!m->used[i]) {
                m->used[i] = 1;
                m->keys[i] = key;
                m->n++;
        }
        m->values[i] = value;
        return 0;
}

int u64map_get(const U64Map *m, uint64_t key, uint32_t *ret_value) {
        if (m->cap == 0)
                return 0;
        size_t i = u64map_slot(m, key);
        if (!m->used[i])
                return 0;
        if (ret_value)
                *ret_value = m->values[i];
        return 1;
}

int u64map_remove(U64Map *m, uint64_t key) {
        if (m->cap == 0)
                return 0;
        size_t mask = m->cap - 1, i = u64map_slot(m, key);
        if (!m->used[i])
                return 0;
        /* Backward-shift deletion keeps probe chains intact without tombstones. */
        for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
                size_t home = hash_u64(m->keys[j]) & mask;
                /* move j into the hole at i unless its home lies cyclically in (i, j] */
                bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
                if (stays)
                        continue;
                m->keys[i] = m->keys[j];
                m->values[i] = m->values[j];
                i = j;
        }
        m->used[i] = 0;
        m->n--;
        return 1;
}

size_t u64map_size(const U64Map *m) {
        return m->n;
}

void u64map_clear(U64Map *m) {
        if (m->cap)
                memset(m->used, 0, m->cap);
        m->n = 0;
}

int array_grow(void **array, size_t *alloc, size_t need, size_t size) {
        if (need <= *alloc)
                return 0;
        size_t n = MAX(MAX(need, *alloc * 2), (size_t)64);
        void *p = realloc(*array, n * size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *alloc = n;
        return 0;
}
