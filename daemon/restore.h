/* SPDX-License-Identifier: MIT */
/*
 * Restoring the undo journal with every actuator's read/write operations:
 * shared by a clean stop, D-Bus Restore() and "placed --restore".
 */
#pragma once

#include "journal.h"

/*
 * restore_journal() - put back every value in j that still holds what placed
 * set, in reverse order. Return: 0, or -EIO when some value could not be
 * written (kept in the journal for a later attempt).
 */
int restore_journal(Journal *j, const char *procfs_root, const char *sysfs_root,
                    JournalRestoreStats *ret_stats);

/*
 * restore_run() - "placed --restore": lock the journal directory (refusing
 * while a daemon holds it), restore, report. Idempotent; an empty or absent
 * journal restores nothing. Return: 0 or negative errno (logged).
 */
int restore_run(const char *journal_dir, const char *procfs_root, const char *sysfs_root);
