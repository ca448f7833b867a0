/* SPDX-License-Identifier: MIT */
/*
 * Restoring the undo journal with every actuator's read/write operations:
 * shared by a clean stop, D-Bus Restore() and "placed --restore".
 */
#pragma once

#include "journal.h"

/*
 * restore_open_journal() - lock the journal directory and open the journal,
 * with its reports (bad lines, a full disk, records set aside) logged.
 * Errors are logged, naming why a directory is refused.
 * Return: 0 with *ret_lock_fd and *ret, or negative errno (-EWOULDBLOCK:
 * another placed holds it).
 */
int restore_open_journal(const char *dir, int *ret_lock_fd, Journal **ret);

/*
 * restore_journal() - put back every value in j that still holds what placed
 * set, in reverse order, after validating each record for this machine. A
 * record that cannot be restored is logged (what, and why) and set aside in
 * journal.failed; ret_stats->failed counts them.
 * Return: 0 (also when some were set aside), or negative errno when the
 * journal itself could not be rewritten.
 */
int restore_journal(Journal *j, const char *procfs_root, const char *sysfs_root,
                    JournalRestoreStats *ret_stats);

/*
 * restore_run() - "placed --restore": lock the journal directory (refusing
 * while a daemon holds it), restore, report. Idempotent; an empty or absent
 * journal restores nothing. Return: 0 or negative errno (logged).
 */
int restore_run(const char *journal_dir, const char *procfs_root, const char *sysfs_root);
