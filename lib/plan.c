/* SPDX-License-Identifier: MIT */
/*
 * Plans (plan.h): made, looked up, compared and freed here, and the small
 * edits every decision makes to a group's entry (its reason, handing it
 * back to the kernel). The policy (policy.c) and the trial
 * (policy-trial.c) write plans through these; neither owns the type.
 */
#include "plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "string-table.h"

static const char *const trial_verdict_table[_TRIAL_VERDICT_MAX] = {
        [TRIAL_NONE] = "none",
        [TRIAL_RUNNING] = "running",
        [TRIAL_KEPT] = "kept",
        [TRIAL_REVERTED] = "reverted",
};

DEFINE_STRING_TABLE_LOOKUP(trial_verdict, TrialVerdict);

static const char *const trial_measure_table[_TRIAL_MEASURE_MAX] = {
        [TRIAL_BY_HANDOFFS] = "handoffs",
        [TRIAL_BY_BYTES] = "bytes",
};

DEFINE_STRING_TABLE_LOOKUP(trial_measure, TrialMeasure);

static const char *const trial_arm_table[_TRIAL_ARM_MAX] = {
        [TRIAL_ARM_PLACED] = "placed",
        [TRIAL_ARM_KERNEL] = "kernel",
};

DEFINE_STRING_TABLE_LOOKUP(trial_arm, TrialArm);

static const char *const trial_back_table[_TRIAL_BACK_MAX] = {
        [TRIAL_BACK_WORSE] = "worse",
        [TRIAL_BACK_WAITED] = "waited",
        [TRIAL_BACK_SQUEEZED] = "squeezed",
        [TRIAL_BACK_TIE] = "tie",
};

DEFINE_STRING_TABLE_LOOKUP(trial_back, TrialBack);

const char *trial_back_words(TrialBack b) {
        switch (b) {
        case TRIAL_BACK_WAITED:
                return "it waited for the CPU past the budget";
        case TRIAL_BACK_SQUEEZED:
                return "its tasks were squeezed (max_run_loss_pct)";
        case TRIAL_BACK_TIE:
                return "it showed no clear gain (keep_pct)";
        default:
                return "it did worse";
        }
}

static const char *const plan_slice_table[_PLAN_SLICE_MAX] = {
        [PLAN_SLICE_SYSTEM] = "system.slice",
        [PLAN_SLICE_USER] = "user.slice",
        [PLAN_SLICE_MACHINE] = "machine.slice",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(plan_slice, PlanSlice);

int plan_new(unsigned n_groups, unsigned n_cpus, Plan **ret) {
        assert(ret);
        _cleanup_(plan_freep) Plan *p = calloc(1, sizeof(Plan));
        if (!p)
                return -ENOMEM;
        p->groups = calloc(MAX(n_groups, 1u), sizeof(PlanGroup));
        if (!p->groups)
                return -ENOMEM;
        p->idle_max_exit_latency_us = calloc(MAX(n_cpus, 1u), sizeof(int));
        if (!p->idle_max_exit_latency_us)
                return -ENOMEM;
        p->n_cpus = n_cpus;
        for (unsigned i = 0; i < n_cpus; i++)
                p->idle_max_exit_latency_us[i] = PLAN_NO_IDLE_CAP;
        *ret = TAKE_PTR(p);
        return 0;
}

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        free(p->groups);
        free(p->idle_max_exit_latency_us);
        free(p);
        return NULL;
}

const PlanGroup *plan_find_group(const Plan *p, uint64_t id) {
        if (!p || p->n_groups == 0)
                return NULL;
        PlanGroup key = { .id = id };
        return bsearch(&key, p->groups, p->n_groups, sizeof(PlanGroup), plan_group_cmp);
}

bool plan_equal(const Plan *a, const Plan *b) {
        if (!a || !b)
                return a == b;
        if (a->n_groups != b->n_groups || a->n_cpus != b->n_cpus)
                return false;
        for (unsigned i = 0; i < a->n_groups; i++) {
                const PlanGroup *x = &a->groups[i], *y = &b->groups[i];
                if (x->id != y->id || x->managed != y->managed ||
                    (x->managed && !cpuset_equal(&x->cpus, &y->cpus)))
                        return false;
        }
        for (int s = 0; s < _PLAN_SLICE_MAX; s++)
                if (!cpuset_equal(&a->slice_cpus[s], &b->slice_cpus[s]))
                        return false;
        return memcmp(a->idle_max_exit_latency_us, b->idle_max_exit_latency_us,
                      a->n_cpus * sizeof(int)) == 0;
}

int plan_group_cmp(const void *x, const void *y) {
        const PlanGroup *a = x, *b = y;
        return a->id < b->id ? -1 : a->id > b->id;
}

void plan_group_set_reason(PlanGroup *pg, const char *fmt, ...) {
        assert(pg);
        assert(fmt);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(pg->reason, sizeof(pg->reason), fmt, ap);
        va_end(ap);
}

bool plan_group_applied(const PlanGroup *pg) {
        assert(pg);
        return pg->managed &&
               !(pg->trial.verdict == TRIAL_RUNNING && pg->trial.arm == TRIAL_ARM_KERNEL);
}

bool plan_group_measuring(const PlanGroup *pg, bool advise) {
        assert(pg);
        return pg->waiting || (!advise && pg->trial.verdict == TRIAL_RUNNING);
}

void plan_group_leave(PlanGroup *pg) {
        assert(pg);
        pg->managed = false;
        cpuset_zero(&pg->cpus);
        pg->home = -1;
}
