/* SPDX-License-Identifier: MIT */
/*
 * The registry of actuators: every actuator (actuator.h is their contract)
 * made over one ActuatorEnv, for the pipeline, which applies with them, and
 * for restore (restore.h), which replays the journal with them, so both
 * always agree on which kinds exist and how each is written back.
 */
#pragma once

#include "act-affinity.h"
#include "act-idle.h"
#include "act-slice.h"
#include "actuator.h"
#include "journal.h"

#define ACTUATORS_KINDS_MAX 8 /* journal kinds of all actuators together */

/* Every actuator of a running placed (or of a restore). */
typedef struct Actuators {
        ActAffinity *affinity;
        ActIdle *idle;   /* NULL: no idle-state files under sysfs_root */
        ActSlice *slice; /* its backend may be SLICE_BACKEND_NONE */
} Actuators;

/*
 * actuators_open() - make every actuator over env.
 * Return: 0 (an actuator that cannot work there is NULL or has no
 * backend: see *ret_idle_error); negative errno when the affinity
 * actuator cannot be made (bad env, out of memory).
 */
int actuators_open(const ActuatorEnv *env, Actuators *ret, int *ret_idle_error);
void actuators_close(Actuators *a);

/*
 * actuators_kind_ops() - the journal operations of every kind any
 * actuator journals (also kinds of a backend not in use now, so a journal
 * left by another run restores), into ret (max entries).
 * Return: how many, or -ENOBUFS.
 */
int actuators_kind_ops(Actuators *a, JournalKindOps *ret, unsigned max);
