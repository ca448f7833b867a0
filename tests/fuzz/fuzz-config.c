/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the configuration parser (lib/config.c and lib/rules.c over inih).
 * The first byte picks the file the input becomes: a profile (bit 0), a
 * rules.d file (bit 1), or the main placed.conf.
 * config_load() must return an error or a configuration, never crash or leak.
 */
#include "fuzz.h"

#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"

static char profiles[] = "/tmp/placed-fuzz-profiles.XXXXXX";

static void remove_profiles(void) {
        char path[sizeof(profiles) + 32];
        snprintf(path, sizeof(path), "%s/fuzzed.conf", profiles);
        (void)unlink(path);
        snprintf(path, sizeof(path), "%s/balanced.conf", profiles);
        (void)unlink(path);
        snprintf(path, sizeof(path), "%s/rules.d/fuzzed.conf", profiles);
        (void)unlink(path);
        snprintf(path, sizeof(path), "%s/rules.d", profiles);
        (void)rmdir(path);
        (void)rmdir(profiles);
}

static void diag_ignore(void *userdata, ConfigDiagLevel level, const char *message) {
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
                snprintf(balanced, sizeof(balanced), "%s/rules.d", profiles);
                if (mkdir(balanced, 0700) < 0)
                        abort();
                made = true;
                atexit(remove_profiles);
        }
        if (size == 0)
                return 0;
        bool as_profile = data[0] & 1, as_rules = !as_profile && (data[0] & 2);
        const char *path = fuzz_file(data + 1, size - 1);
        if (!path)
                return 0;

        char link[sizeof(profiles) + 32];
        snprintf(link, sizeof(link), "%s/fuzzed.conf", profiles);
        (void)unlink(link);
        if (as_profile && symlink(path, link) < 0)
                abort();
        char rules_dir[sizeof(profiles) + 32], rules_link[sizeof(profiles) + 64];
        snprintf(rules_dir, sizeof(rules_dir), "%s/rules.d", profiles);
        snprintf(rules_link, sizeof(rules_link), "%s/fuzzed.conf", rules_dir);
        (void)unlink(rules_link);
        if (as_rules && symlink(path, rules_link) < 0)
                abort();

        ConfigPaths paths = {
                .main_file = as_profile || as_rules ? NULL : path,
                .dropin_dir = NULL,
                .profiles_dir_usr = profiles,
                .profiles_dir_etc = NULL,
                .rules_dir = rules_dir,
        };
        Config c;
        if (config_load(&paths, diag_ignore, NULL, &c) >= 0)
                config_done(&c);
        return 0;
}
