/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the wake-replay reader (the "replay" wake source, lib/wake-source-replay.c)
 * and the aggregation behind it: the input is a recorded event file, read in
 * two batches as two ticks would.
 */
#include "fuzz.h"

#include "wake-source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *path = fuzz_file(data, size);
        if (!path)
                return 0;
        WakeSourceOptions o = { .replay_path = path };
        WakeSource *s = NULL;
        if (wake_source_open(WAKE_SOURCE_REPLAY, &o, &s, NULL) < 0)
                return 0;
        WakeBatch b = { 0 };
        (void)wake_source_read(s, 1500000000ULL, &b);
        (void)wake_source_read(s, UINT64_MAX, &b);
        wake_batch_done(&b);
        wake_source_free(s);
        return 0;
}
