/* SPDX-License-Identifier: MIT */
/*
 * Not a harness: proof that the corpus replay fails when a harness crashes.
 * An input starting with "CRASH" reads past a heap buffer, which ASan must
 * turn into a non-zero exit (tests/test-fuzz-corpus.sh checks it does).
 */
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 5 || memcmp(data, "CRASH", 5) != 0)
                return 0;
        char *p = malloc(size - 1);
        if (!p)
                return 0;
        memcpy(p, data, size - 1);
        volatile char c = p[size - 1]; /* one past the end */
        free(p);
        return c == 'x';
}
