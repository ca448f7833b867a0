/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the configuration parser (lib/config.c over inih). The first byte
 * picks the file the input becomes: the main placed.conf, or a profile.
 * config_load() must return an error or a configuration, never crash or leak.
 */
#include "fuzz.h"

#include <stdbool.h>
#include <string.h>

#include "config.h"

static void diag_ignore(void *userdata, ConfigDiagLevel level, const char *message) {
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char profiles[] = "/tmp/placed-fuzz-profiles.XXXXXX";
        static bool made;
        if (!made) {
                if (!mkdtemp(profiles))
                        abort();
                /* the default profile must exist for a load to go all the way */
                char balanced[sizeof(profiles) + 32];
                snprintf(balanced, sizeof(balanced), "%s/balanced.conf", profiles);
                FILE *f = fopen(balanced, "we");
                if (!f || fclose(f) != 0)
                        abort();
                made = true;
        }
        if (size == 0)
                return 0;
        bool as_profile = data[0] & 1;
        const char *path = fuzz_file(data + 1, size - 1);
        if (!path)
                return 0;

        char link[sizeof(profiles) + 32];
        snprintf(link, sizeof(link), "%s/fuzzed.conf", profiles);
        (void)unlink(link);
        if (as_profile && symlink(path, link) < 0)
                abort();

        ConfigPaths paths = {
                .main_file = as_profile ? NULL : path,
                .dropin_dir = NULL,
                .profiles_dir_usr = profiles,
                .profiles_dir_etc = NULL,
        };
        Config c;
        if (config_load(&paths, diag_ignore, NULL, &c) >= 0)
                config_done(&c);
        return 0;
}
