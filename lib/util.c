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

/* One slot: its key, value and whether it is used, in one 16-byte cell, so
 * that a probe costs one cache line, not three. */
typedef struct U64Slot {
        uint64_t key;
        uint32_t value;
        uint32_t used;
} U64Slot;

struct U64Map {
        U64Slot *slots;
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
        free(m->slots);
        free(m);
        return NULL;
}

static int u64map_grow(U64Map *m) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        U64Slot *slots = calloc(cap, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < m->cap; i++) {
                if (!m->slots[i].used)
                        continue;
                size_t j = hash_u64(m->slots[i].key) & (cap - 1);
                while (slots[j].used)
                        j = (j + 1) & (cap - 1);
                slots[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
        return 0;
}

static size_t u64map_slot(const U64Map *m, uint64_t key) {
        size_t i = hash_u64(key) & (m->cap - 1);
        while (m->slots[i].used && m->slots[i].key != key)
                i = (i + 1) & (m->cap - 1);
        return i;
}

int u64map_put(U64Map *m, uint64_t key, uint32_t value) {
        if ((m->n + 1) * 2 > m->cap) {
                int r = u64map_grow(m);
                if (r < 0)
                        return r;
        }
        U64Slot *slot = &m->slots[u64map_slot(m, key)];
        if (!slot->used) {
                slot->used = 1;
                slot->key = key;
                m->n++;
        }
        slot->value = value;
        return 0;
}

int u64map_get(const U64Map *m, uint64_t key, uint32_t *ret_value) {
        if (m->cap == 0)
                return 0;
        const U64Slot *slot = &m->slots[u64map_slot(m, key)];
        if (!slot->used)
                return 0;
        if (ret_value)
                *ret_value = slot->value;
        return 1;
}

int u64map_remove(U64Map *m, uint64_t key) {
        if (m->cap == 0)
                return 0;
        size_t mask = m->cap - 1, i = u64map_slot(m, key);
        if (!m->slots[i].used)
                return 0;
        /* Backward-shift deletion keeps probe chains intact without tombstones. */
        for (size_t j = (i + 1) & mask; m->slots[j].used; j = (j + 1) & mask) {
                size_t home = hash_u64(m->slots[j].key) & mask;
                /* move j into the hole at i unless its home lies cyclically in (i, j] */
                bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
                if (stays)
                        continue;
                m->slots[i] = m->slots[j];
                i = j;
        }
        m->slots[i].used = 0;
        m->n--;
        return 1;
}

size_t u64map_size(const U64Map *m) {
        return m->n;
}

void u64map_clear(U64Map *m) {
        if (m->cap)
                memset(m->slots, 0, m->cap * sizeof(*m->slots));
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
