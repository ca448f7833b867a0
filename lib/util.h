/* SPDX-License-Identifier: MIT */
/*
 * Small data-structure helpers shared by the model and the wake sources: a
 * hash map from uint64_t keys to dense-array indexes, and doubling growth of
 * such arrays. Nothing here knows about tasks or wakeups.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * U64Map: open-addressing hash map from uint64_t keys to uint32_t values
 * (indices into a caller's dense array). Owns only its table.
 */
typedef struct U64Map U64Map;

/* Return: 0 and *ret, or -ENOMEM. */
int u64map_new(U64Map **ret);
U64Map *u64map_free(U64Map *m);
/* Return: 0 (inserted or replaced), -ENOMEM. */
int u64map_put(U64Map *m, uint64_t key, uint32_t value);
/* Return: 1 and *ret_value when found, 0 when not. */
int u64map_get(const U64Map *m, uint64_t key, uint32_t *ret_value);
/* Return: 1 removed, 0 not present. */
int u64map_remove(U64Map *m, uint64_t key);
size_t u64map_size(const U64Map *m);
void u64map_clear(U64Map *m);

static inline void u64map_freep(U64Map **m) {
        u64map_free(*m);
}

/*
 * array_grow() - make *array (of *alloc elements of size bytes) hold at
 * least need elements: doubling, at least 64.
 *
 * Return: 0, or -ENOMEM (the array and *alloc untouched).
 */
int array_grow(void **array, size_t *alloc, size_t need, size_t size);
