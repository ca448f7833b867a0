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
 */
#pragma once

#include <stdbool.h>

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
        void *userdata;
} JournalKindOps;

typedef struct JournalRestoreStats {
        unsigned restored; /* original value written back */
        unsigned skipped;  /* changed by someone else since: left alone */
        unsigned gone;     /* object no longer exists */
        unsigned failed;   /* write failed */
} JournalRestoreStats;

/*
 * journal_open() - open (creating dir and file if needed) the journal in dir.
 * Existing records are loaded: a journal left by a crashed daemon is still
 * restorable.
 *
 * Return: 0, or negative errno.
 */
int journal_open(const char *dir, Journal **ret);
Journal *journal_free(Journal *j);

/*
 * journal_record_change() - call before changing an object. The first call
 * for (kind, key) writes the original value and syncs it to disk; every
 * call records the value about to be applied.
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
 * per kind; records of a kind without ops are counted failed and kept), then
 * truncate the journal. Idempotent: an empty journal restores nothing.
 *
 * Return: 0 when everything was restored, skipped or gone; -EIO if some
 * write failed (those records are kept for a later attempt).
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

/* Number of objects with unrestored records. */
unsigned journal_size(Journal *j);

/*
 * journal_lock() - take an exclusive lock on the journal directory
 * (flock on DIR/lock), so "placed --restore" and a running daemon never
 * restore at once. Return: 0, -EWOULDBLOCK when another process holds it,
 * or negative errno.
 */
int journal_lock(const char *dir, int *ret_fd);
