/* SPDX-License-Identifier: MIT */
/*
 * The registry of actuators (actuators.h): opens, closes and lists the
 * journal operations of all of them at once.
 */
#include "actuators.h"

#include "macro.h"

int actuators_open(const ActuatorEnv *env, Actuators *ret, int *ret_idle_error) {
        assert(env);
        assert(ret);
        Actuators a = { 0 };
        int r = act_affinity_new(env, &a.affinity);
        if (r < 0)
                return r;
        int idle = act_idle_new(env, &a.idle);
        r = act_slice_new(env, &a.slice);
        if (r < 0) {
                actuators_close(&a);
                return r;
        }
        if (ret_idle_error)
                *ret_idle_error = idle < 0 ? idle : 0;
        *ret = a;
        return 0;
}

void actuators_close(Actuators *a) {
        assert(a);
        a->affinity = act_affinity_free(a->affinity);
        a->idle = act_idle_free(a->idle);
        a->slice = act_slice_free(a->slice);
}

int actuators_kind_ops(Actuators *a, JournalKindOps *ret, unsigned max) {
        assert(a);
        assert(ret);
        int n = act_affinity_kind_ops(a->affinity, ret, max), k;
        if (n < 0)
                return n;
        if (a->idle) {
                k = act_idle_kind_ops(a->idle, ret + n, max - (unsigned)n);
                if (k < 0)
                        return k;
                n += k;
        }
        k = act_slice_kind_ops(a->slice, ret + n, max - (unsigned)n);
        return k < 0 ? k : n + k;
}
