/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the undo journal reader (lib/journal.c): the input is DIR/journal
 * as a crashed daemon might have left it. It is loaded, then restored over a
 * fake kind whose objects are all gone, so every record goes through parsing,
 * the hash index, validation and the rewrite.
 */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "journal.h"

static int fake_read(const char *key, char **ret, void *userdata) {
        if (key[0] & 1)
                return -ESRCH; /* gone */
        *ret = strdup("0");
        return *ret ? 0 : -ENOMEM;
}

static int fake_write(const char *key, const char *value, void *userdata) {
        return key[0] & 2 ? -EBUSY : 0; /* some writes fail: set aside */
}

static int fake_validate(const char *key, const char *value, const char **ret_why, void *u) {
        if (strlen(key) > 64) {
                *ret_why = "long key";
                return -EINVAL;
        }
        return 0;
}

static int no_sync(int fd) {
        return 0; /* durability is not what is fuzzed: thousands of runs a second */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char dir[] = "/tmp/placed-fuzz-journal.XXXXXX";
        static char path[sizeof(dir) + 32], failed[sizeof(dir) + 32];
        if (path[0] == '\0') {
                if (!mkdtemp(dir))
                        abort();
                snprintf(path, sizeof(path), "%s/journal", dir);
                snprintf(failed, sizeof(failed), "%s/journal.failed", dir);
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                abort();
        if (size > 0 && write(fd, data, size) != (ssize_t)size)
                abort();
        close(fd);
        (void)unlink(failed);

        Journal *j = NULL;
        JournalOptions o = { .sync = no_sync };
        if (journal_open_full(dir, &o, &j) < 0)
                return 0;
        JournalKindOps ops[] = {
                { .kind = "affinity", .read = fake_read, .write = fake_write },
                { .kind = "pm_qos",
                  .read = fake_read,
                  .write = fake_write,
                  .validate = fake_validate },
        };
        JournalRestoreStats st;
        (void)journal_restore(j, ops, 2, &st);
        journal_free(j);
        return 0;
}
