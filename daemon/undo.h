/* SPDX-License-Identifier: MIT */
/*
 * The undo journal at the daemon's boundary: opened with its reports
 * logged, and "placed --restore". Restoring itself is lib/restore.h.
 */
#pragma once

#include "journal.h"
#include "restore.h"

/*
 * restore_open_journal() - lock the journal directory and open the journal,
 * with its reports (bad lines, a full disk, records set aside) logged.
 * Errors are logged, naming why a directory is refused.
 * Return: 0 with *ret_lock_fd and *ret, or negative errno (-EWOULDBLOCK:
 * another placed holds it).
 */
int restore_open_journal(const char *dir, int *ret_lock_fd, Journal **ret);

/*
 * restore_run() - "placed --restore": lock the journal directory (refusing
 * while a daemon holds it), restore, report. Idempotent; an empty or absent
 * journal restores nothing. Return: 0 or negative errno (logged).
 */
int restore_run(const char *journal_dir, const char *procfs_root, const char *sysfs_root);
