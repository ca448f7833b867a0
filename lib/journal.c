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
 * and cut off, and lines that do not parse are reported and skipped: the
 * change they announced was never made, since records are synced before the
 * change. The file is rewritten (temp file + rename) when restore keeps some
 * records and when appended history grows far beyond the live objects.
 *
 * Why so suspicious: placed runs as root and restore writes journal values
 * into sysfs, procfs and cgroup files. Every file is opened relative to the
 * directory's fd with O_NOFOLLOW and refused when it has a second link, the
 * directory must be ours and writable by nobody else, and the kinds'
 * validate() look at every key and value before restore touches anything.
 *
 * Why a hash index and tombstones: a journal with 100k objects must load and
 * restore in linear time; find is a hash lookup, and removing an entry only
 * marks it dead (the array is compacted when the dead outnumber the live).
 */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

#define JOURNAL_FILE        "journal"
#define JOURNAL_TMP_FILE    "journal.tmp"
#define JOURNAL_FAILED_FILE "journal.failed"
#define JOURNAL_LOCK        "lock"

#define NO_ENTRY UINT32_MAX

typedef struct JournalEntry {
        char *kind;
        char *key;
        char *original;
        char *applied;
        unsigned line; /* of its ORIG record in the file, 0 = made by this process */
        uint32_t hash; /* of kind and key */
        uint32_t next; /* next entry in the same bucket, or NO_ENTRY */
        bool dead;     /* removed: a tombstone until the next compaction */
} JournalEntry;

struct Journal {
        char *dir;
        int dir_fd;
        int fd;                /* DIR/journal, O_APPEND */
        off_t size;            /* bytes up to the end of the last whole record */
        JournalEntry *entries; /* owned; in order of first change, dead ones included */
        unsigned n_entries;    /* slots used in entries */
        unsigned n_alloc;      /* slots allocated */
        unsigned n_live;
        uint32_t *buckets;  /* hash index: first entry of each bucket, or NO_ENTRY */
        unsigned n_buckets; /* a power of two */
        unsigned n_lines;   /* records in the file, for compaction */
        int write_error;    /* the last append's error, 0 when it worked */
        JournalOptions opts;
};

static uint32_t hash_kind_key(const char *kind, const char *key) {
        uint32_t h = 2166136261u; /* FNV-1a over "kind\tkey" */
        for (const char *s = kind; *s; s++)
                h = (h ^ (uint8_t)*s) * 16777619u;
        h = (h ^ '\t') * 16777619u;
        for (const char *s = key; *s; s++)
                h = (h ^ (uint8_t)*s) * 16777619u;
        return h;
}

static void entry_done(JournalEntry *e) {
        free(e->kind);
        free(e->key);
        free(e->original);
        free(e->applied);
        *e = (JournalEntry){ .dead = true, .next = NO_ENTRY };
}

static int rehash(Journal *j, unsigned n_buckets) {
        if (n_buckets == 0)
                return 0;
        uint32_t *b = malloc(n_buckets * sizeof(uint32_t));
        if (!b)
                return -ENOMEM;
        for (unsigned i = 0; i < n_buckets; i++)
                b[i] = NO_ENTRY;
        free(j->buckets);
        j->buckets = b;
        j->n_buckets = n_buckets;
        for (unsigned i = 0; i < j->n_entries; i++) {
                JournalEntry *e = &j->entries[i];
                if (e->dead)
                        continue;
                uint32_t *head = &b[e->hash & (n_buckets - 1)];
                e->next = *head;
                *head = i;
        }
        return 0;
}

static int find_entry(const Journal *j, const char *kind, const char *key) {
        if (j->n_buckets == 0)
                return -1;
        uint32_t h = hash_kind_key(kind, key);
        for (uint32_t i = j->buckets[h & (j->n_buckets - 1)]; i != NO_ENTRY;
             i = j->entries[i].next) {
                const JournalEntry *e = &j->entries[i];
                if (e->hash == h && strcmp(e->kind, kind) == 0 && strcmp(e->key, key) == 0)
                        return (int)i;
        }
        return -1;
}

/* Marks entry i dead; indexes of the others stay valid (restore walks them). */
static void remove_entry(Journal *j, unsigned i) {
        JournalEntry *e = &j->entries[i];
        uint32_t *p = &j->buckets[e->hash & (j->n_buckets - 1)];
        while (*p != i)
                p = &j->entries[*p].next;
        *p = e->next;
        entry_done(e);
        j->n_live--;
}

/* Drops the tombstones; the order of the live entries is kept. */
static int compact(Journal *j) {
        unsigned n = 0;
        for (unsigned i = 0; i < j->n_entries; i++)
                if (!j->entries[i].dead)
                        j->entries[n++] = j->entries[i];
        j->n_entries = n;
        return rehash(j, j->n_buckets);
}

static int add_entry(Journal *j, const char *kind, const char *key, const char *original,
                     unsigned line) {
        if (j->n_entries > 64 && j->n_entries - j->n_live > j->n_live) {
                int r = compact(j);
                if (r < 0)
                        return r;
        }
        if (j->n_entries >= UINT32_MAX - 1)
                return -E2BIG;
        if (j->n_entries == j->n_alloc) {
                unsigned n_alloc = j->n_alloc ? 2 * j->n_alloc : 64;
                JournalEntry *n = reallocarray(j->entries, n_alloc, sizeof(JournalEntry));
                if (!n)
                        return -ENOMEM;
                j->entries = n;
                j->n_alloc = n_alloc;
        }
        if (j->n_entries + 1 > j->n_buckets / 2) {
                int r = rehash(j, j->n_buckets ? j->n_buckets * 2 : 64);
                if (r < 0)
                        return r;
        }
        JournalEntry e = {
                .kind = strdup(kind),
                .key = strdup(key),
                .original = strdup(original),
                .applied = strdup(original),
                .line = line,
                .hash = hash_kind_key(kind, key),
        };
        if (!e.kind || !e.key || !e.original || !e.applied) {
                entry_done(&e);
                return -ENOMEM;
        }
        uint32_t *head = &j->buckets[e.hash & (j->n_buckets - 1)];
        e.next = *head;
        *head = j->n_entries;
        j->entries[j->n_entries++] = e;
        j->n_live++;
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

static void report(const Journal *j, JournalReport rep) {
        if (!j->opts.report)
                return;
        rep.dir = j->dir;
        j->opts.report(&rep, j->opts.userdata);
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

/* Opens dir (never through a symbolic link) and checks that only we can write to it. */
static int open_dir(const char *dir, int *ret_fd) {
        int r = mkdir_p(dir);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno(); /* -ELOOP: a symbolic link */
        struct stat st;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (st.st_uid != geteuid())
                return -EPERM;
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return -EACCES;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/*
 * openat() that never follows a link, never blocks on a FIFO, and wants a
 * regular file of one link: a second name means the file is someone else's
 * (a hard link planted at DIR/journal to any file on the same file system),
 * and writing or cutting it would change that file. Checked on the open fd,
 * before anything is read, written or truncated. j (NULL for the lock) is
 * told which file and why.
 */
static int open_file(const Journal *j, int dir_fd, const char *name, int flags, int *ret_fd) {
        _cleanup_close_ int fd =
                openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0600);
        if (fd < 0)
                return negative_errno();
        struct stat st;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (st.st_nlink != 1) {
                char why[64];
                snprintf(why, sizeof(why), "has %ju links", (uintmax_t)st.st_nlink);
                if (j)
                        report(j, (JournalReport){ .event = JOURNAL_EVENT_FILE_REFUSED,
                                                   .key = name,
                                                   .error = -EMLINK,
                                                   .why = why });
                return -EMLINK;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

const char *journal_strerror(int r) {
        switch (r) {
        case -EPERM:
                return "it is not owned by the user placed runs as (root)";
        case -EACCES:
                return "group or others may write to it";
        case -ELOOP:
                return "it, or its journal, lock or journal.tmp, is a symbolic link";
        case -ENOTDIR:
                return "it is not a directory";
        case -EBADFD:
                return "its journal, lock or journal.tmp is not a regular file";
        case -EMLINK:
                return "its journal, journal.failed or lock has more than one link (another file "
                       "linked there would be written)";
        default:
                return NULL;
        }
}

static ssize_t default_write(int fd, const void *buf, size_t len) {
        return write(fd, buf, len);
}

static int default_sync(int fd) {
        return fdatasync(fd);
}

static int write_all(const Journal *j, int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = j->opts.write(fd, buf, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        return -ENOSPC;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

static void note_write_result(Journal *j, int r) {
        if (r < 0 && j->write_error == 0)
                report(j, (JournalReport){ .event = JOURNAL_EVENT_WRITE_FAILED, .error = r });
        else if (r >= 0 && j->write_error < 0)
                report(j, (JournalReport){ .event = JOURNAL_EVENT_RECOVERED,
                                           .error = j->write_error });
        j->write_error = r < 0 ? r : 0;
}

/*
 * Appends one record and syncs it: the caller changes nothing before this
 * returns 0. A record is whole or absent: after a failure the file is cut
 * back to the last whole record, so the next one does not glue onto a
 * fragment.
 */
static int append_record(Journal *j, const char *type, const char *kind, const char *key,
                         const char *value) {
        _cleanup_free_ char *line = NULL;
        int n = value ? asprintf(&line, "%s\t%s\t%s\t%s\n", type, kind, key, value)
                      : asprintf(&line, "%s\t%s\t%s\n", type, kind, key);
        if (n < 0)
                return -ENOMEM;

        /* A fragment from an earlier failure that could not be cut yet. */
        struct stat st;
        if (fstat(j->fd, &st) < 0)
                return negative_errno();
        if (st.st_size != j->size && ftruncate(j->fd, j->size) < 0) {
                int r = negative_errno();
                note_write_result(j, r);
                return r;
        }

        int r = write_all(j, j->fd, line, (size_t)n);
        if (r >= 0 && j->opts.sync(j->fd) < 0)
                r = negative_errno();
        if (r < 0) {
                if (ftruncate(j->fd, j->size) < 0) {
                        /* retried before the next record */
                }
                note_write_result(j, r);
                return r;
        }
        j->size += n;
        j->n_lines++;
        note_write_result(j, 0);
        return 0;
}

/*
 * Appends why and a record (len bytes, newline included) to
 * DIR/journal.failed, for a person to read. The record is copied byte for
 * byte, a NUL inside it too (the line says so above it), so what is set
 * aside is the whole record as the journal held it; header and record go in
 * one write.
 */
static int set_aside(Journal *j, unsigned line, const char *text, size_t len, const char *why) {
        _cleanup_close_ int fd = -1;
        int r = open_file(j, j->dir_fd, JOURNAL_FAILED_FILE, O_WRONLY | O_APPEND | O_CREAT, &fd);
        if (r < 0)
                return r;
        _cleanup_free_ char *head = NULL, *rec = NULL;
        int n = line > 0 ? asprintf(&head, "# journal line %u: %s\n", line, why)
                         : asprintf(&head, "# %s\n", why);
        if (n < 0)
                return -ENOMEM;
        rec = malloc((size_t)n + len);
        if (!rec)
                return -ENOMEM;
        memcpy(rec, head, (size_t)n);
        memcpy(rec + n, text, len);
        r = write_all(j, fd, rec, (size_t)n + len);
        if (r >= 0 && j->opts.sync(fd) < 0)
                r = negative_errno();
        return r;
}

/* Parses one line into the in-memory state. Return: 0, -EINVAL (*ret_why set), -ENOMEM. */
static int apply_line(Journal *j, char *line, unsigned lineno, const char **ret_why) {
        char *f[4] = { 0 }, *s = line;
        unsigned n = 0;
        while (s && n < 4) {
                f[n++] = s;
                s = strchr(s, '\t');
                if (s)
                        *s++ = '\0';
        }
        if (s) {
                *ret_why = "more than four fields";
                return -EINVAL;
        }
        if (n < 3 || f[1][0] == '\0' || f[2][0] == '\0') {
                *ret_why = "not a record (TYPE, KIND, KEY [, VALUE] separated by tabs)";
                return -EINVAL;
        }
        int i = find_entry(j, f[1], f[2]);
        if (strcmp(f[0], "FORGET") == 0 && n == 3) {
                if (i >= 0)
                        remove_entry(j, (unsigned)i);
                return 0;
        }
        if (n != 4 || (strcmp(f[0], "ORIG") != 0 && strcmp(f[0], "SET") != 0)) {
                *ret_why = "unknown record type or wrong number of fields";
                return -EINVAL;
        }
        if (strcmp(f[0], "ORIG") == 0)
                return i >= 0 ? 0 : add_entry(j, f[1], f[2], f[3], lineno);
        if (i < 0) {
                *ret_why = "SET for an object without an ORIG record";
                return -EINVAL;
        }
        return set_applied(&j->entries[i], f[3]);
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
        size_t got = 0;
        while (got < (size_t)st.st_size) {
                ssize_t n = pread(j->fd, buf + got, (size_t)st.st_size - got, (off_t)got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        buf[got] = '\0';

        size_t complete = 0; /* bytes up to the last newline */
        unsigned lineno = 0;
        for (char *s = buf; (size_t)(s - buf) < got;) {
                char *nl = memchr(s, '\n', got - (size_t)(s - buf));
                if (!nl)
                        break; /* cut by a crash mid-write: the change was never made */
                *nl = '\0';
                lineno++;
                const char *why = NULL;
                int r;
                if (strlen(s) != (size_t)(nl - s)) {
                        why = "a NUL byte inside the record";
                        r = -EINVAL;
                } else {
                        _cleanup_free_ char *copy = strdup(s); /* apply_line() cuts it up */
                        r = copy ? apply_line(j, copy, lineno, &why) : -ENOMEM;
                }
                if (r == -ENOMEM || r == -E2BIG)
                        return r;
                if (r < 0) {
                        *nl = '\n'; /* the record whole, up to its newline */
                        bool aside = set_aside(j, lineno, s, (size_t)(nl - s) + 1, why) >= 0;
                        report(j, (JournalReport){ .event = JOURNAL_EVENT_BAD_LINE,
                                                   .line = lineno,
                                                   .error = r,
                                                   .why = why,
                                                   .set_aside = aside });
                }
                j->n_lines++;
                s = nl + 1;
                complete = (size_t)(s - buf);
        }
        if (complete < got && ftruncate(j->fd, (off_t)complete) < 0)
                return negative_errno();
        j->size = (off_t)complete;
        return 0;
}

int journal_open(const char *dir, Journal **ret) {
        return journal_open_full(dir, NULL, ret);
}

int journal_open_full(const char *dir, const JournalOptions *opts, Journal **ret) {
        if (!dir || !ret)
                return -EINVAL;
        Journal *j = calloc(1, sizeof(Journal));
        if (!j)
                return -ENOMEM;
        j->fd = -1;
        j->dir_fd = -1;
        if (opts)
                j->opts = *opts;
        if (!j->opts.write)
                j->opts.write = default_write;
        if (!j->opts.sync)
                j->opts.sync = default_sync;
        j->dir = strdup(dir);
        int r = j->dir ? open_dir(dir, &j->dir_fd) : -ENOMEM;

        bool created = false;
        if (r >= 0) {
                r = open_file(j, j->dir_fd, JOURNAL_FILE, O_RDWR | O_APPEND, &j->fd);
                if (r == -ENOENT) {
                        r = open_file(j, j->dir_fd, JOURNAL_FILE,
                                      O_RDWR | O_APPEND | O_CREAT | O_EXCL, &j->fd);
                        created = r >= 0;
                }
        }
        if (r >= 0)
                r = created ? (fsync(j->dir_fd) < 0 ? negative_errno() : 0) : journal_load(j);
        if (r < 0) {
                journal_free(j);
                return r;
        }
        *ret = j;
        return 0;
}

void journal_set_report(Journal *j, JournalReportFn fn, void *userdata) {
        if (!j)
                return;
        j->opts.report = fn;
        j->opts.userdata = userdata;
}

Journal *journal_free(Journal *j) {
        if (!j)
                return NULL;
        for (unsigned i = 0; i < j->n_entries; i++)
                entry_done(&j->entries[i]);
        free(j->entries);
        free(j->buckets);
        closep(&j->fd);
        closep(&j->dir_fd);
        free(j->dir);
        free(j);
        return NULL;
}

/* Writes the live entries to a temp file and renames it over the journal. */
static int journal_rewrite(Journal *j) {
        int r = compact(j);
        if (r < 0)
                return r;
        /* Whatever is there (a leftover, or someone's link) goes; O_EXCL makes our own. */
        if (unlinkat(j->dir_fd, JOURNAL_TMP_FILE, 0) < 0 && errno != ENOENT)
                return negative_errno();
        _cleanup_close_ int fd = -1;
        r = open_file(j, j->dir_fd, JOURNAL_TMP_FILE, O_WRONLY | O_CREAT | O_EXCL, &fd);
        if (r < 0)
                return r;
        off_t size = 0;
        for (unsigned i = 0; i < j->n_entries && r >= 0; i++) {
                JournalEntry *e = &j->entries[i];
                _cleanup_free_ char *rec = NULL;
                int n = asprintf(&rec, "ORIG\t%s\t%s\t%s\nSET\t%s\t%s\t%s\n", e->kind, e->key,
                                 e->original, e->kind, e->key, e->applied);
                r = n < 0 ? -ENOMEM : write_all(j, fd, rec, (size_t)n);
                size += n;
        }
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(j->dir_fd, JOURNAL_TMP_FILE, j->dir_fd, JOURNAL_FILE) < 0)
                r = negative_errno();
        if (r < 0) {
                (void)unlinkat(j->dir_fd, JOURNAL_TMP_FILE, 0);
                return r;
        }
        int nfd = -1;
        r = open_file(j, j->dir_fd, JOURNAL_FILE, O_RDWR | O_APPEND, &nfd);
        if (r < 0)
                return r;
        closep(&j->fd);
        j->fd = nfd;
        j->size = size;
        j->n_lines = 2 * j->n_entries;
        for (unsigned i = 0; i < j->n_entries; i++)
                j->entries[i].line = 2 * i + 1;
        return fsync(j->dir_fd) < 0 ? negative_errno() : 0;
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
                r = add_entry(j, kind, key, original, 0);
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
        if (j->n_lines > 4 * j->n_live + 4096)
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

int journal_write_error(Journal *j) {
        return j ? j->write_error : 0;
}

unsigned journal_size(Journal *j) {
        return j ? j->n_live : 0;
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

static RestoreOutcome restore_one(const JournalEntry *e, const JournalKindOps *ops, int *ret_error,
                                  const char **ret_why) {
        *ret_error = 0;
        if (!ops || !ops->read || !ops->write) {
                *ret_why = "no actuator knows this kind of object";
                return RESTORE_FAILED;
        }
        if (ops->validate) {
                int r = ops->validate(e->key, e->original, ret_why, ops->validate_userdata);
                if (r >= 0)
                        r = ops->validate(e->key, e->applied, ret_why, ops->validate_userdata);
                if (r < 0) {
                        *ret_error = r;
                        return RESTORE_FAILED;
                }
        }
        _cleanup_free_ char *current = NULL;
        int r = ops->read(e->key, &current, ops->userdata);
        if (r == -ENOENT || r == -ESRCH)
                return RESTORE_GONE;
        if (r < 0) {
                *ret_error = r;
                *ret_why = "reading its current value failed";
                return RESTORE_FAILED;
        }
        bool ours = ops->equal ? ops->equal(current, e->applied) : strcmp(current, e->applied) == 0;
        if (!ours)
                return RESTORE_SKIPPED; /* someone changed it after us: theirs wins */
        r = ops->write(e->key, e->original, ops->userdata);
        if (r == -ENOENT || r == -ESRCH)
                return RESTORE_GONE;
        if (r < 0) {
                *ret_error = r;
                *ret_why = "writing the original value back failed";
                return RESTORE_FAILED;
        }
        return RESTORE_DONE;
}

/* Moves an unrestorable entry to journal.failed. Return: true if it may be dropped. */
static bool entry_set_aside(Journal *j, const JournalEntry *e, int error, const char *why) {
        _cleanup_free_ char *text = NULL, *reason = NULL;
        int n;
        if (asprintf(&reason, "%s%s%s", why, error < 0 ? ": " : "",
                     error < 0 ? strerror(-error) : "") < 0 ||
            (n = asprintf(&text, "ORIG\t%s\t%s\t%s\nSET\t%s\t%s\t%s\n", e->kind, e->key,
                          e->original, e->kind, e->key, e->applied)) < 0)
                return false;
        bool aside = set_aside(j, e->line, text, (size_t)n, reason) >= 0;
        report(j, (JournalReport){ .event = JOURNAL_EVENT_SET_ASIDE,
                                   .line = e->line,
                                   .kind = e->kind,
                                   .key = e->key,
                                   .value = e->original,
                                   .error = error,
                                   .why = why,
                                   .set_aside = aside });
        return aside;
}

int journal_restore(Journal *j, const JournalKindOps *ops, unsigned n_ops,
                    JournalRestoreStats *ret_stats) {
        if (!j)
                return -EINVAL;
        JournalRestoreStats stats = { 0 };
        bool changed = false;

        for (unsigned i = j->n_entries; i-- > 0;) {
                JournalEntry *e = &j->entries[i];
                if (e->dead)
                        continue;
                int error;
                const char *why = NULL;
                switch (restore_one(e, find_ops(ops, n_ops, e->kind), &error, &why)) {
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
                        if (!entry_set_aside(j, e, error, why))
                                continue; /* nowhere to keep it but here */
                        break;
                }
                remove_entry(j, i);
                changed = true;
        }

        int r = 0;
        if (j->n_live == 0) {
                if (ftruncate(j->fd, 0) < 0 || fsync(j->fd) < 0)
                        r = negative_errno();
                else {
                        j->n_lines = 0;
                        j->size = 0;
                        j->n_entries = 0;
                }
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
        _cleanup_close_ int dir_fd = -1, fd = -1;
        int r = open_dir(dir, &dir_fd);
        if (r < 0)
                return r;
        r = open_file(NULL, dir_fd, JOURNAL_LOCK, O_RDWR | O_CREAT, &fd);
        if (r < 0)
                return r;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return negative_errno();
        *ret_fd = TAKE_FD(fd);
        return 0;
}
