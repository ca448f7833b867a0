/* SPDX-License-Identifier: MIT */
/*
 * Restoring the undo journal with every actuator's journal operations:
 * shared by a clean stop, D-Bus Restore() and "placed --restore". It does
 * not log: what could not be restored is told through the journal's report
 * callback (journal_set_report()), each record by kind, key and why.
 */
#pragma once

#include "journal.h"

/*
 * restore_journal() - put back every value in j that still holds what placed
 * set, in reverse order, after validating each record for this machine
 * (procfs_root for the cgroup mounts, sysfs_root for the CPUs that exist).
 * A record that cannot be restored is reported (JOURNAL_EVENT_SET_ASIDE)
 * and set aside in journal.failed; ret_stats->failed counts them.
 *
 * Return: 0 (also when some were set aside), or negative errno when the
 * journal itself could not be rewritten or the actuators not be made.
 */
int restore_journal(Journal *j, const char *procfs_root, const char *sysfs_root,
                    JournalRestoreStats *ret_stats);
