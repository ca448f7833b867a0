/* SPDX-License-Identifier: MIT */
/*
 * The undo journal at the daemon's boundary: opening it under its lock with
 * its reports logged (lib/ does not log), and "placed --restore" (the unit's
 * ExecStopPost=), which runs the same restore as a clean stop
 * (lib/restore.c) after taking the journal lock so it never races a running
 * daemon.
 */
#include "undo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "macro.h"
#include "restore.h"

static void restore_on_report(const JournalReport *rep, void *userdata) {
        char where[64];
        if (rep->line > 0)
                snprintf(where, sizeof(where), "journal line %u", rep->line);
        else
                snprintf(where, sizeof(where), "recorded by this run");

        switch (rep->event) {
        case JOURNAL_EVENT_BAD_LINE:
                log_warning("%s/journal:%u: %s; record skipped%s.", rep->dir, rep->line, rep->why,
                            rep->set_aside ? " and kept in journal.failed" : "");
                break;
        case JOURNAL_EVENT_SET_ASIDE:
                log_warning("Cannot restore %s \"%s\" to \"%s\" (%s): %s%s%s; %s.", rep->kind,
                            rep->key, rep->value, where, rep->why, rep->error < 0 ? ": " : "",
                            rep->error < 0 ? strerror(-rep->error) : "",
                            rep->set_aside ? "set aside in journal.failed"
                                           : "kept in the journal (journal.failed cannot be "
                                             "written)");
                break;
        case JOURNAL_EVENT_WRITE_FAILED:
                log_error_errno(rep->error,
                                "Cannot write the undo journal in \"%s\": %m; placed changes "
                                "nothing until it can.",
                                rep->dir);
                break;
        case JOURNAL_EVENT_RECOVERED:
                log_notice("The undo journal in \"%s\" can be written again: recovered.", rep->dir);
                break;
        case JOURNAL_EVENT_FILE_REFUSED:
                log_error("\"%s/%s\" %s, refusing to use it (writing it would change the "
                          "file it is linked to).",
                          rep->dir, rep->key, rep->why);
                break;
        }
}

static int log_journal_error(int r, const char *what, const char *dir) {
        const char *reason = journal_strerror(r);
        if (reason)
                return log_error_errno(r, "Refusing the undo journal directory \"%s\": %s.", dir,
                                       reason);
        return log_error_errno(r, "Failed to %s the undo journal in \"%s\": %m", what, dir);
}

int restore_open_journal(const char *dir, int *ret_lock_fd, Journal **ret) {
        _cleanup_close_ int lock_fd = -1;
        int r = journal_lock(dir, &lock_fd);
        if (r == -EWOULDBLOCK)
                return log_error_errno(r, "Another placed holds the undo journal in \"%s\".", dir);
        if (r < 0)
                return log_journal_error(r, "lock", dir);

        JournalOptions o = { .report = restore_on_report };
        r = journal_open_full(dir, &o, ret);
        if (r < 0)
                return log_journal_error(r, "open", dir);
        *ret_lock_fd = TAKE_FD(lock_fd);
        return 0;
}

int restore_run(const char *journal_dir, const char *procfs_root, const char *sysfs_root) {
        struct stat st;
        if (lstat(journal_dir, &st) < 0 && errno == ENOENT) {
                log_info("No undo journal in \"%s\": nothing to restore.", journal_dir);
                return 0;
        }

        _cleanup_close_ int lock_fd = -1;
        Journal *j = NULL;
        int r = restore_open_journal(journal_dir, &lock_fd, &j);
        if (r == -EWOULDBLOCK)
                return log_error_errno(
                        r, "placed is running and holds \"%s\"; use \"placectl restore\" instead.",
                        journal_dir);
        if (r < 0)
                return r;

        JournalRestoreStats stats = { 0 };
        unsigned n = journal_size(j);
        r = restore_journal(j, procfs_root, sysfs_root, &stats);
        journal_free(j);
        log_info("Undo journal \"%s\": %u entries; restored %u, left %u changed by others, %u "
                 "gone, %u failed.",
                 journal_dir, n, stats.restored, stats.skipped, stats.gone, stats.failed);
        if (r < 0)
                return log_error_errno(r, "Failed to rewrite the undo journal in \"%s\": %m",
                                       journal_dir);
        if (stats.failed > 0)
                return log_error_errno(EIO,
                                       "%u change(s) could not be restored (named above); see "
                                       "\"%s/journal.failed\".",
                                       stats.failed, journal_dir);
        return 0;
}
