/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer harnesses: the input as a file. The readers under
 * test take paths (a configuration file, a journal directory, a replay file),
 * so each input is written to one memfd per process and handed over as
 * /proc/self/fd/N: no disk I/O per run, nothing left behind.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to this process's memfd; returns its path (static buffer), or NULL. */
static inline const char *fuzz_file(const uint8_t *data, size_t size) {
        static int fd = -1;
        static char path[64];
        if (fd < 0) {
                fd = memfd_create("placed-fuzz", MFD_CLOEXEC);
                if (fd < 0)
                        return NULL;
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        }
        if (ftruncate(fd, 0) < 0)
                return NULL;
        for (size_t done = 0; done < size;) {
                ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
                if (n <= 0)
                        return NULL;
                done += (size_t)n;
        }
        return path;
}
