/* SPDX-License-Identifier: MIT */
/*
 * The undo journal meets the actuators: each kind of object placed changes
 * contributes its read/write operations, and restoring is the journal's
 * reverse replay over them. "placed --restore" (the unit's ExecStopPost=)
 * runs the same code as a clean stop, after taking the journal lock so it
 * never races a running daemon.
 */
#include "restore.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "log.h"
#include "macro.h"

int restore_journal(Journal *j, const char *procfs_root, const char *sysfs_root,
                    JournalRestoreStats *ret_stats) {
        /* Each actuator contributes its kind's operations here as it lands;
         * records of a kind without operations are kept, never dropped. */
        return journal_restore(j, NULL, 0, ret_stats);
}

int restore_run(const char *journal_dir, const char *procfs_root, const char *sysfs_root) {
        struct stat st;
        if (stat(journal_dir, &st) < 0 && errno == ENOENT) {
                log_info("No undo journal in \"%s\": nothing to restore.", journal_dir);
                return 0;
        }

        _cleanup_close_ int lock_fd = -1;
        int r = journal_lock(journal_dir, &lock_fd);
        if (r == -EWOULDBLOCK)
                return log_error_errno(
                        r, "placed is running and holds \"%s\"; use \"placectl restore\" instead.",
                        journal_dir);
        if (r < 0)
                return log_error_errno(r, "Failed to lock the undo journal in \"%s\": %m",
                                       journal_dir);

        Journal *j = NULL;
        r = journal_open(journal_dir, &j);
        if (r < 0)
                return log_error_errno(r, "Failed to open the undo journal in \"%s\": %m",
                                       journal_dir);

        JournalRestoreStats stats = { 0 };
        unsigned n = journal_size(j);
        r = restore_journal(j, procfs_root, sysfs_root, &stats);
        journal_free(j);
        log_info("Undo journal \"%s\": %u entries; restored %u, left %u changed by others, %u "
                 "gone, %u failed.",
                 journal_dir, n, stats.restored, stats.skipped, stats.gone, stats.failed);
        if (r < 0)
                return log_error_errno(
                        r, "Some values could not be restored; they stay in the journal.");
        return 0;
}
