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

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "act-affinity.h"
#include "act-cpuset.h"
#include "act-idle.h"
#include "act-slice.h"
#include "log.h"
#include "macro.h"

int restore_journal(Journal *j, const char *procfs_root, const char *sysfs_root,
                    JournalRestoreStats *ret_stats) {
        JournalKindOps ops[2 + ACT_IDLE_N_KINDS + 1];
        unsigned n = 0;
        _cleanup_(act_idle_freep) ActIdle *idle = NULL;
        sd_bus *systemd = NULL;

        act_affinity_kind_ops(procfs_root, &ops[n++]);
        act_cpuset_kind_ops(&ops[n++]);
        if (act_idle_new(sysfs_root, NULL, false, &idle) >= 0)
                n += (unsigned)act_idle_kind_ops(idle, &ops[n]);
        /* Slices were changed through systemd, so only systemd can put them back.
         * Without it, their records are kept for a later attempt. */
        if (sd_booted() > 0 && sd_bus_open_system(&systemd) >= 0)
                act_slice_journal_ops(systemd, &ops[n++]);

        int r = journal_restore(j, ops, n, ret_stats);
        sd_bus_flush_close_unref(systemd);
        return r;
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
