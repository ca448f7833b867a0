/* SPDX-License-Identifier: MIT */
/*
 * A main() for the harnesses without libFuzzer: runs each file named on the
 * command line through LLVMFuzzerTestOneInput() once. Built with ASan and
 * UBSan (which abort on the first error), it replays the seed corpora in
 * "make check" with whatever compiler builds the rest.
 */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

int main(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                FILE *f = fopen(argv[i], "re");
                if (!f) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 2;
                }
                uint8_t *buf = NULL;
                size_t size = 0, alloc = 0;
                for (;;) {
                        if (size == alloc) {
                                alloc = alloc ? 2 * alloc : 4096;
                                uint8_t *n = realloc(buf, alloc);
                                if (!n)
                                        abort();
                                buf = n;
                        }
                        size_t got = fread(buf + size, 1, alloc - size, f);
                        if (got == 0)
                                break;
                        size += got;
                }
                fclose(f);
                LLVMFuzzerTestOneInput(buf, size);
                free(buf);
        }
        return 0;
}
