/* SPDX-License-Identifier: MIT */
/*
 * The undo journal: every change placed makes to the system is recorded here
 * before it is made, so it can be undone after a clean stop and after a crash
 * ("placed --restore").
 *
 * For each object (a thread's affinity, a cgroup's cpuset, a CPU's PM QoS
 * value, an idle state's disable flag, ...) the journal keeps the original
 * value, written and fsync()ed before placed's first change to it, and the
 * value placed last set. Restoring puts the original back only where the
 * object still holds what placed set: an administrator's later change wins.
 * Objects are restored in reverse order of their first change.
 *
 * Each kind of object has an actuator that knows how to read and write it
 * (JournalKindOps). The file is line-oriented text, one record a line, tab
 * separated (see journal.c for the format); keys and values must not
 * contain tabs or newlines.
 *
 * The journal is trusted by root, so it trusts nothing it did not make: its
 * directory must belong to the user placed runs as (root) and be writable by
 * nobody else, its files are never followed through a symbolic link nor used
 * when they have a second name (a hard link to some other file), every
 * record is checked by its kind's validate() before anything is written, and
 * a record that cannot be restored is set aside in DIR/journal.failed for a
 * person to read instead of blocking every later start.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

typedef struct Journal Journal;

typedef struct JournalKindOps {
        const char *kind; /* "affinity", "cpuset", "pm_qos", "cpuidle", ... */
        /* Reads the current value of key into *ret (malloc'd). Return: 0,
         * -ENOENT/-ESRCH when the object is gone, other negative errno. */
        int (*read)(const char *key, char **ret, void *userdata);
        /* Writes value to key. Return: 0 or negative errno. */
        int (*write)(const char *key, const char *value, void *userdata);
        /* Compares values (NULL = strcmp); lets "0-3" equal "0,1,2,3". */
        bool (*equal)(const char *a, const char *b);
        /* Checks a key and one of its values (the original, then the applied)
         * before anything is read or written; NULL = anything goes. Return: 0,
         * or negative errno with *ret_why (static text) saying what is wrong. */
        int (*validate)(const char *key, const char *value, const char **ret_why,
                        void *validate_userdata);
        void *userdata;          /* for read and write */
        void *validate_userdata; /* for validate */
} JournalKindOps;

typedef struct JournalRestoreStats {
        unsigned restored; /* original value written back */
        unsigned skipped;  /* changed by someone else since: left alone */
        unsigned gone;     /* object no longer exists */
        unsigned failed;   /* invalid, no actuator, or read/write failed: set aside */
} JournalRestoreStats;

/* What the journal tells its owner (lib/ does not log; the daemon does). */
typedef enum JournalEvent {
        JOURNAL_EVENT_BAD_LINE,     /* a line of the file that does not parse: skipped */
        JOURNAL_EVENT_SET_ASIDE,    /* a record that could not be restored */
        JOURNAL_EVENT_WRITE_FAILED, /* a record could not be written (first failure only) */
        JOURNAL_EVENT_RECOVERED,    /* writing works again after WRITE_FAILED */
        JOURNAL_EVENT_FILE_REFUSED, /* a file of DIR (key) is not used: why says so */
} JournalEvent;

typedef struct JournalReport {
        JournalEvent event;
        const char *dir;
        unsigned line;    /* line in DIR/journal; 0 for a record made by this process */
        const char *kind; /* kind, key and value (the original) of the record, or NULL */
        const char *key;  /* FILE_REFUSED: the file's name in dir */
        const char *value;
        int error;       /* negative errno, or 0 */
        const char *why; /* what was wrong, in words, or NULL */
        bool set_aside;  /* the record was copied to DIR/journal.failed */
} JournalReport;

typedef void (*JournalReportFn)(const JournalReport *report, void *userdata);

typedef struct JournalOptions {
        JournalReportFn report; /* NULL: nobody is told */
        void *userdata;
        /* Seams for tests (a full disk); NULL = write(2) and fdatasync(2). */
        ssize_t (*write)(int fd, const void *buf, size_t len);
        int (*sync)(int fd);
} JournalOptions;

/*
 * journal_open() - open (creating dir and file if needed) the journal in dir.
 * Existing records are loaded, in time linear in the file's size: a journal
 * left by a crashed daemon is still restorable. Lines that do not parse are
 * reported (JOURNAL_EVENT_BAD_LINE) and skipped.
 *
 * Return: 0, or negative errno; journal_strerror() words the journal's own
 * refusals (-EPERM, -EACCES: an unsafe directory; -ELOOP: a symbolic link;
 * -EBADFD: not a regular file; -EMLINK: a file with more than one link,
 * also reported as JOURNAL_EVENT_FILE_REFUSED with the file and its count).
 */
int journal_open(const char *dir, Journal **ret);
int journal_open_full(const char *dir, const JournalOptions *opts, Journal **ret);

/* Sets where reports go from now on (NULL: nowhere). */
void journal_set_report(Journal *j, JournalReportFn fn, void *userdata);

/* Why the journal refused a directory or file, for r from journal_open() or
 * journal_lock(); NULL when r is an ordinary errno. */
const char *journal_strerror(int r);
Journal *journal_free(Journal *j);

/*
 * journal_record_change() - call before changing an object. The first call
 * for (kind, key) writes the original value and syncs it to disk; every
 * call records the value about to be applied.
 *
 * A record is written whole and synced or not at all: after a failed or
 * short write (a full disk) the file is cut back to the last whole record.
 * The first failure is reported (JOURNAL_EVENT_WRITE_FAILED), and the first
 * success after it (JOURNAL_EVENT_RECOVERED).
 *
 * Return: 1 when the original was recorded now, 0 when it already was,
 * negative errno when the journal could not be written (do not change the
 * object then).
 */
int journal_record_change(Journal *j, const char *kind, const char *key, const char *original,
                          const char *applied);

/* Return: true if (kind, key) has an unrestored record. */
bool journal_has(Journal *j, const char *kind, const char *key);

/*
 * journal_forget() - drop an object without restoring it: it went away, or
 * someone else took it over. Return: 1 if it was known, 0 if not, negative
 * errno on write failure.
 */
int journal_forget(Journal *j, const char *kind, const char *key);

/*
 * journal_restore() - restore every object in reverse order using ops (one
 * per kind), then truncate the journal. Idempotent: an empty journal
 * restores nothing. Each record is validated first (ops->validate). A record
 * that is invalid, has no ops for its kind, or whose read or write fails is
 * reported (JOURNAL_EVENT_SET_ASIDE with the reason), appended to
 * DIR/journal.failed and dropped, so it never blocks a later start; only if
 * journal.failed cannot be written is it kept in the journal.
 *
 * Return: 0 when everything was restored, skipped or gone; -EIO if some
 * record could not be restored (stats->failed says how many); another
 * negative errno when the journal itself could not be rewritten.
 */
int journal_restore(Journal *j, const JournalKindOps *ops, unsigned n_ops,
                    JournalRestoreStats *ret_stats);

/*
 * journal_get() - the values recorded for (kind, key): the original and the
 * value placed applied last. Pointers stay valid until the next call that
 * changes the journal. Either out-parameter may be NULL.
 *
 * Return: 0, or -ENOENT when (kind, key) has no unrestored record.
 */
int journal_get(Journal *j, const char *kind, const char *key, const char **ret_original,
                const char **ret_applied);

/*
 * journal_write_error() - the error of the last failed append, 0 once an
 * append works again: callers that log per object can stay quiet while the
 * journal is failing (it reported JOURNAL_EVENT_WRITE_FAILED once).
 */
int journal_write_error(Journal *j);

/* Number of objects with unrestored records. */
unsigned journal_size(Journal *j);

/*
 * journal_lock() - take an exclusive lock on the journal directory
 * (flock on DIR/lock), so "placed --restore" and a running daemon never
 * restore at once. Return: 0, -EWOULDBLOCK when another process holds it,
 * or negative errno.
 */
int journal_lock(const char *dir, int *ret_fd);
