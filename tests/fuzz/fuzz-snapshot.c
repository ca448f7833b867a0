/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the model snapshot reader that "placed --plan" runs on files from
 * anywhere (policy_snapshot_from_json(), lib/policy-json.c).
 */
#include "fuzz.h"

#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        PolicySnapshot *s = NULL;
        if (policy_snapshot_from_json(text, &s) >= 0)
                policy_snapshot_free(s);
        free(text);
        return 0;
}
