/* SPDX-License-Identifier: MIT */
/*
 * The undo journal (see journal.h for the contract).
 *
 * Why a line-oriented text file: it is appended one record at a time and
 * synced before every change, so a crash can cut at most the last line, and
 * an administrator can read it with cat. Format of DIR/journal, one record a
 * line, fields separated by one tab:
 *
 *     ORIG <kind> <key> <value>   original value, once per object, before the first change
 *     SET <kind> <key> <value>    the value about to be applied (every change)
 *     FORGET <kind> <key>         placed let the object go; drop it
 *
 * A value may be empty (an empty cgroup v2 cpuset.cpus means "inherit").
 * On load, a last line without its newline (a crash mid-write) is ignored
 * and cut off, and lines that do not parse are skipped: the change they
 * announced was never made, since records are synced before the change.
 * The file is rewritten (temp file + rename) when restore keeps some records
 * and when appended history grows far beyond the live objects.
 */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

#define JOURNAL_FILE     "journal"
#define JOURNAL_TMP_FILE "journal.tmp"
#define JOURNAL_LOCK     "lock"

typedef struct JournalEntry {
        char *kind;
        char *key;
        char *original;
        char *applied;
} JournalEntry;

struct Journal {
        char *dir;
        int fd;                /* DIR/journal, O_APPEND */
        JournalEntry *entries; /* owned; in order of first change */
        unsigned n_entries;
        unsigned n_lines; /* records in the file, for compaction */
};

static void entry_done(JournalEntry *e) {
        free(e->kind);
        free(e->key);
        free(e->original);
        free(e->applied);
        *e = (JournalEntry){ 0 };
}

static int find_entry(const Journal *j, const char *kind, const char *key) {
        for (unsigned i = 0; i < j->n_entries; i++)
                if (strcmp(j->entries[i].kind, kind) == 0 && strcmp(j->entries[i].key, key) == 0)
                        return (int)i;
        return -1;
}

static void remove_entry(Journal *j, unsigned i) {
        entry_done(&j->entries[i]);
        memmove(&j->entries[i], &j->entries[i + 1], (j->n_entries - i - 1) * sizeof(JournalEntry));
        j->n_entries--;
}

static int add_entry(Journal *j, const char *kind, const char *key, const char *original) {
        JournalEntry *n = realloc(j->entries, (j->n_entries + 1) * sizeof(JournalEntry));
        if (!n)
                return -ENOMEM;
        j->entries = n;
        JournalEntry e = {
                .kind = strdup(kind),
                .key = strdup(key),
                .original = strdup(original),
                .applied = strdup(original),
        };
        if (!e.kind || !e.key || !e.original || !e.applied) {
                entry_done(&e);
                return -ENOMEM;
        }
        j->entries[j->n_entries++] = e;
        return 0;
}

static int set_applied(JournalEntry *e, const char *applied) {
        char *v = strdup(applied);
        if (!v)
                return -ENOMEM;
        free(e->applied);
        e->applied = v;
        return 0;
}

static bool field_ok(const char *s) {
        return s && !strpbrk(s, "\t\n");
}

static int fsync_dir(const char *dir) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fsync(fd) < 0)
                return negative_errno();
        return 0;
}

static int mkdir_p(const char *dir) {
        _cleanup_free_ char *p = strdup(dir);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
                *s = '/';
        }
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

static int write_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Appends one record and syncs it: the caller changes nothing before this returns 0. */
static int append_record(Journal *j, const char *type, const char *kind, const char *key,
                         const char *value) {
        _cleanup_free_ char *line = NULL;
        int n = value ? asprintf(&line, "%s\t%s\t%s\t%s\n", type, kind, key, value)
                      : asprintf(&line, "%s\t%s\t%s\n", type, kind, key);
        if (n < 0)
                return -ENOMEM;
        int r = write_all(j->fd, line, (size_t)n);
        if (r < 0)
                return r;
        if (fdatasync(j->fd) < 0)
                return negative_errno();
        j->n_lines++;
        return 0;
}

/* Applies one parsed line to the in-memory state. Return: 0, -EINVAL (skipped), -ENOMEM. */
static int apply_line(Journal *j, char *line) {
        char *f[4] = { 0 };
        unsigned n = 0;
        for (char *s = line; n < 4;) {
                f[n++] = s;
                s = strchr(s, '\t');
                if (!s)
                        break;
                *s++ = '\0';
        }
        if (n < 3 || f[1][0] == '\0' || f[2][0] == '\0')
                return -EINVAL;
        int i = find_entry(j, f[1], f[2]);
        if (strcmp(f[0], "FORGET") == 0 && n == 3) {
                if (i >= 0)
                        remove_entry(j, (unsigned)i);
                return 0;
        }
        if (n != 4)
                return -EINVAL;
        if (strcmp(f[0], "ORIG") == 0)
                return i >= 0 ? 0 : add_entry(j, f[1], f[2], f[3]);
        if (strcmp(f[0], "SET") == 0)
                return i >= 0 ? set_applied(&j->entries[i], f[3]) : -EINVAL;
        return -EINVAL;
}

static int journal_load(Journal *j) {
        struct stat st;
        if (fstat(j->fd, &st) < 0)
                return negative_errno();
        if (st.st_size == 0)
                return 0;
        _cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        ssize_t got = pread(j->fd, buf, (size_t)st.st_size, 0);
        if (got < 0)
                return negative_errno();
        buf[got] = '\0';

        size_t complete = 0; /* bytes up to the last newline */
        for (char *s = buf; (size_t)(s - buf) < (size_t)got;) {
                char *nl = memchr(s, '\n', (size_t)got - (size_t)(s - buf));
                if (!nl)
                        break; /* cut by a crash mid-write: the change was never made */
                *nl = '\0';
                if (strlen(s) == (size_t)(nl - s)) { /* no NUL bytes inside */
                        int r = apply_line(j, s);
                        if (r == -ENOMEM)
                                return r;
                }
                j->n_lines++;
                s = nl + 1;
                complete = (size_t)(s - buf);
        }
        if (complete < (size_t)got && ftruncate(j->fd, (off_t)complete) < 0)
                return negative_errno();
        return 0;
}

int journal_open(const char *dir, Journal **ret) {
        if (!dir || !ret)
                return -EINVAL;
        int r = mkdir_p(dir);
        if (r < 0)
                return r;

        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/" JOURNAL_FILE, dir) < 0)
                return -ENOMEM;
        Journal *j = calloc(1, sizeof(Journal));
        if (!j)
                return -ENOMEM;
        j->fd = -1;
        j->dir = strdup(dir);
        if (!j->dir) {
                journal_free(j);
                return -ENOMEM;
        }

        bool created = false;
        j->fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
        if (j->fd < 0 && errno == ENOENT) {
                j->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                created = j->fd >= 0;
        }
        if (j->fd < 0) {
                r = negative_errno();
                journal_free(j);
                return r;
        }
        r = created ? fsync_dir(dir) : journal_load(j);
        if (r < 0) {
                journal_free(j);
                return r;
        }
        *ret = j;
        return 0;
}

Journal *journal_free(Journal *j) {
        if (!j)
                return NULL;
        for (unsigned i = 0; i < j->n_entries; i++)
                entry_done(&j->entries[i]);
        free(j->entries);
        closep(&j->fd);
        free(j->dir);
        free(j);
        return NULL;
}

/* Writes the live entries to a temp file and renames it over the journal. */
static int journal_rewrite(Journal *j) {
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        if (asprintf(&path, "%s/" JOURNAL_FILE, j->dir) < 0 ||
            asprintf(&tmp, "%s/" JOURNAL_TMP_FILE, j->dir) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        int r = 0;
        for (unsigned i = 0; i < j->n_entries && r >= 0; i++) {
                const JournalEntry *e = &j->entries[i];
                _cleanup_free_ char *rec = NULL;
                int n = asprintf(&rec, "ORIG\t%s\t%s\t%s\nSET\t%s\t%s\t%s\n", e->kind, e->key,
                                 e->original, e->kind, e->key, e->applied);
                r = n < 0 ? -ENOMEM : write_all(fd, rec, (size_t)n);
        }
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0) {
                (void)unlink(tmp);
                return r;
        }
        int nfd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
        if (nfd < 0)
                return negative_errno();
        closep(&j->fd);
        j->fd = nfd;
        j->n_lines = 2 * j->n_entries;
        return fsync_dir(j->dir);
}

int journal_record_change(Journal *j, const char *kind, const char *key, const char *original,
                          const char *applied) {
        if (!j || !field_ok(kind) || !field_ok(key) || !field_ok(original) || !field_ok(applied) ||
            !kind[0] || !key[0])
                return -EINVAL;

        int i = find_entry(j, kind, key), r, first = 0;
        if (i < 0) {
                r = append_record(j, "ORIG", kind, key, original);
                if (r < 0)
                        return r;
                r = add_entry(j, kind, key, original);
                if (r < 0)
                        return r;
                i = (int)j->n_entries - 1;
                first = 1;
        }
        r = append_record(j, "SET", kind, key, applied);
        if (r < 0)
                return r;
        r = set_applied(&j->entries[i], applied);
        if (r < 0)
                return r;

        /* Keep a long-running daemon's history bounded. Failure is harmless: the
         * appended file is still correct. */
        if (j->n_lines > 4 * j->n_entries + 4096)
                (void)journal_rewrite(j);
        return first;
}

bool journal_has(Journal *j, const char *kind, const char *key) {
        return j && kind && key && find_entry(j, kind, key) >= 0;
}

int journal_get(Journal *j, const char *kind, const char *key, const char **ret_original,
                const char **ret_applied) {
        int i = j && kind && key ? find_entry(j, kind, key) : -1;
        if (i < 0)
                return -ENOENT;
        if (ret_original)
                *ret_original = j->entries[i].original;
        if (ret_applied)
                *ret_applied = j->entries[i].applied;
        return 0;
}

int journal_forget(Journal *j, const char *kind, const char *key) {
        if (!j || !field_ok(kind) || !field_ok(key))
                return -EINVAL;
        int i = find_entry(j, kind, key);
        if (i < 0)
                return 0;
        int r = append_record(j, "FORGET", kind, key, NULL);
        if (r < 0)
                return r;
        remove_entry(j, (unsigned)i);
        return 1;
}

unsigned journal_size(Journal *j) {
        return j ? j->n_entries : 0;
}

static const JournalKindOps *find_ops(const JournalKindOps *ops, unsigned n_ops, const char *kind) {
        for (unsigned i = 0; i < n_ops; i++)
                if (ops[i].kind && strcmp(ops[i].kind, kind) == 0)
                        return &ops[i];
        return NULL;
}

typedef enum RestoreOutcome {
        RESTORE_DONE,
        RESTORE_SKIPPED,
        RESTORE_GONE,
        RESTORE_FAILED,
} RestoreOutcome;

static RestoreOutcome restore_one(const JournalEntry *e, const JournalKindOps *ops) {
        if (!ops || !ops->read || !ops->write)
                return RESTORE_FAILED;
        _cleanup_free_ char *current = NULL;
        int r = ops->read(e->key, &current, ops->userdata);
        if (r == -ENOENT || r == -ESRCH)
                return RESTORE_GONE;
        if (r < 0)
                return RESTORE_FAILED;
        bool ours = ops->equal ? ops->equal(current, e->applied) : strcmp(current, e->applied) == 0;
        if (!ours)
                return RESTORE_SKIPPED; /* someone changed it after us: theirs wins */
        r = ops->write(e->key, e->original, ops->userdata);
        if (r == -ENOENT || r == -ESRCH)
                return RESTORE_GONE;
        return r < 0 ? RESTORE_FAILED : RESTORE_DONE;
}

int journal_restore(Journal *j, const JournalKindOps *ops, unsigned n_ops,
                    JournalRestoreStats *ret_stats) {
        if (!j)
                return -EINVAL;
        JournalRestoreStats stats = { 0 };
        bool changed = false;

        for (unsigned i = j->n_entries; i-- > 0;) {
                JournalEntry *e = &j->entries[i];
                switch (restore_one(e, find_ops(ops, n_ops, e->kind))) {
                case RESTORE_DONE:
                        stats.restored++;
                        break;
                case RESTORE_SKIPPED:
                        stats.skipped++;
                        break;
                case RESTORE_GONE:
                        stats.gone++;
                        break;
                case RESTORE_FAILED:
                        stats.failed++;
                        continue; /* kept for a later attempt */
                }
                remove_entry(j, i);
                changed = true;
        }

        int r = 0;
        if (j->n_entries == 0) {
                if (ftruncate(j->fd, 0) < 0 || fsync(j->fd) < 0)
                        r = negative_errno();
                else
                        j->n_lines = 0;
        } else if (changed)
                r = journal_rewrite(j);

        if (ret_stats)
                *ret_stats = stats;
        if (r < 0)
                return r;
        return stats.failed > 0 ? -EIO : 0;
}

int journal_lock(const char *dir, int *ret_fd) {
        if (!dir || !ret_fd)
                return -EINVAL;
        int r = mkdir_p(dir);
        if (r < 0)
                return r;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/" JOURNAL_LOCK, dir) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return negative_errno();
        *ret_fd = TAKE_FD(fd);
        return 0;
}
