/* SPDX-License-Identifier: MIT */
/*
 * The BPF wake source, behind wake-source.h: only wake-source.c uses this
 * header. One object per loaded wake.bpf.c.
 */
#pragma once

#include <stddef.h>

#include "wake-source.h"

typedef struct BpfWake BpfWake;

/*
 * bpf_wake_open() - load and attach wake.bpf.c with opts (sample_shift,
 * keep_kthreads, log_records, edge_cache_sets), map its arrays.
 *
 * Return: 0; negative errno when BPF is not available (no BTF, no
 * CAP_BPF, the verifier refuses) or on failure.
 */
int bpf_wake_open(const WakeSourceOptions *opts, BpfWake **ret);
BpfWake *bpf_wake_free(BpfWake *w);

/*
 * bpf_wake_read() - everything the program counted since the previous read,
 * appended to b (which the caller reset): edges with their growth, the
 * tasks at both ends with the kernel's wakee_flips, skipped and lost counts.
 *
 * Return: 0, or negative errno.
 */
int bpf_wake_read(BpfWake *w, WakeBatch *b);

/* Return: N when the program counts 1 in N wakeups (1: every one). */
unsigned bpf_wake_sample_every(const BpfWake *w);

/* Return: 1 and the program's bpf_stats figures (0 while stats are off), or negative errno. */
int bpf_wake_get_cost(const BpfWake *w, WakeSourceCost *ret);

/*
 * wake_array_grow() - make *array (of *alloc elements of size bytes) hold at
 * least need elements, doubling. Shared by the sources.
 *
 * Return: 0, or -ENOMEM (the array untouched).
 */
int wake_array_grow(void **array, size_t *alloc, size_t need, size_t size);
