/* SPDX-License-Identifier: MIT */
/*
 * Per-application rules (see rules.h): reading rules.d, matching a task's
 * facts against them, and a group's decision from its members' matches.
 *
 * Why sections are seen by the line reader: inih calls the handler for
 * keys only, so a "[name]" with no keys would vanish without a word. The
 * reader that feeds inih (it also counts lines, as lib/config.c's does)
 * opens a rule at each section header, with that line as its origin; keys
 * then fill the rule last opened, and a rule is checked when its file ends.
 *
 * Precedence between a group's members: a rule that keeps placed away
 * (ignore) is a promise to the owner, so it wins over everything; one that
 * forbids packing (never-pack) wins over those that ask for a placement
 * (latency-critical, then pack-with, the weakest: a wish about another
 * group).
 */
#include "rules.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ini-line.h"
#include "macro.h"
#include "string-table.h"

#define RULES_FILE_MAX (1024 * 1024)

static const char *const rule_action_table[_RULE_ACTION_MAX] = {
        [RULE_ACTION_NONE] = "none",
        [RULE_ACTION_IGNORE] = "ignore",
        [RULE_ACTION_LATENCY_CRITICAL] = "latency-critical",
        [RULE_ACTION_NEVER_PACK] = "never-pack",
        [RULE_ACTION_PACK_WITH] = "pack-with",
};

/* Higher wins within a group. */
static const int action_strength[_RULE_ACTION_MAX] = {
        [RULE_ACTION_NONE] = 0,
        [RULE_ACTION_PACK_WITH] = 1,
        [RULE_ACTION_LATENCY_CRITICAL] = 2,
        [RULE_ACTION_NEVER_PACK] = 3,
        [RULE_ACTION_IGNORE] = 4,
};

DEFINE_STRING_TABLE_LOOKUP(rule_action, RuleAction);

/* ---- Matching ---- */

bool rule_cgroup_under(const char *cgroup, const char *prefix) {
        size_t n = strlen(prefix);
        while (n > 1 && prefix[n - 1] == '/') /* "/a/" covers what "/a" does */
                n--;
        if (strncmp(cgroup, prefix, n) != 0)
                return false;
        return n == 1 || cgroup[n] == '\0' || cgroup[n] == '/';
}

static bool glob_match(const char *glob, const char *s) {
        return !glob || (s && fnmatch(glob, s, 0) == 0);
}

bool rule_match(const Rule *r, const RuleSubject *s) {
        if (!r->comm && !r->exe && !r->cgroup && !r->unit)
                return false; /* loading refuses these; never match everything by accident */
        return glob_match(r->comm, s->comm) && glob_match(r->exe, s->exe) &&
               glob_match(r->unit, s->unit) &&
               (!r->cgroup || (s->cgroup && rule_cgroup_under(s->cgroup, r->cgroup)));
}

const Rule *rules_match(const RuleSet *set, const RuleSubject *s) {
        for (unsigned i = 0; set && i < set->n_rules; i++)
                if (rule_match(&set->rules[i], s))
                        return &set->rules[i];
        return NULL;
}

/* ---- Groups ---- */

void rules_group_decide(const RuleSet *set, const Rule *const *matched, unsigned n,
                        GroupRule *ret) {
        const Rule *best = NULL;
        for (unsigned i = 0; i < n; i++) {
                const Rule *r = matched[i];
                if (!r)
                        continue;
                assert((unsigned)r->action < _RULE_ACTION_MAX); /* a loaded rule's */
                if (!best || action_strength[r->action] > action_strength[best->action] ||
                    (r->action == best->action && r < best)) /* earlier in the set */
                        best = r;
        }
        *ret = (GroupRule){ .action = RULE_ACTION_NONE };
        if (!best)
                return;
        ret->action = best->action;
        snprintf(ret->rule, sizeof(ret->rule), "%s", best->name);
        snprintf(ret->partner, sizeof(ret->partner), "%s", best->partner);
}

void rules_link_partners(const uint64_t *ids, GroupRule *v, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                v[i].has_partner_group = false;
                if (v[i].action != RULE_ACTION_PACK_WITH)
                        continue;
                for (unsigned j = 0; j < n; j++) {
                        if (j == i || strcmp(v[j].rule, v[i].partner) != 0 ||
                            (v[j].action != RULE_ACTION_PACK_WITH &&
                             v[j].action != RULE_ACTION_LATENCY_CRITICAL))
                                continue;
                        if (!v[i].has_partner_group || ids[j] < v[i].partner_group) {
                                v[i].partner_group = ids[j];
                                v[i].has_partner_group = true;
                        }
                }
        }
}

/* ---- The set ---- */

static void rule_done(Rule *r) {
        free(r->comm);
        free(r->exe);
        free(r->cgroup);
        free(r->unit);
}

void rules_done(RuleSet *set) {
        if (!set)
                return;
        for (unsigned i = 0; i < set->n_rules; i++)
                rule_done(&set->rules[i]);
        free(set->rules);
        *set = (RuleSet){ 0 };
}

static Rule *rules_append(RuleSet *set) {
        if (set->n_rules >= RULES_MAX)
                return NULL;
        Rule *v = reallocarray(set->rules, set->n_rules + 1, sizeof(Rule));
        if (!v)
                return NULL;
        set->rules = v;
        Rule *r = &v[set->n_rules++];
        *r = (Rule){ .action = RULE_ACTION_NONE };
        return r;
}

static const Rule *rules_find(const RuleSet *set, const char *name) {
        for (unsigned i = 0; i < set->n_rules; i++)
                if (strcmp(set->rules[i].name, name) == 0)
                        return &set->rules[i];
        return NULL;
}

int rules_add_ignore(RuleSet *set, const char *name_prefix, unsigned index, const char *comm,
                     const char *cgroup) {
        if (set->n_rules >= RULES_MAX)
                return -E2BIG;
        Rule *r = rules_append(set);
        if (!r)
                return -ENOMEM;
        snprintf(r->name, sizeof(r->name), "%s[%u]", name_prefix, index + 1);
        snprintf(r->origin, sizeof(r->origin), "[exclude] %s", name_prefix);
        r->action = RULE_ACTION_IGNORE;
        r->comm = comm ? strdup(comm) : NULL;
        r->cgroup = cgroup ? strdup(cgroup) : NULL;
        if ((comm && !r->comm) || (cgroup && !r->cgroup))
                return -ENOMEM; /* the caller discards the set */
        return 0;
}

_printf_(4, 5) static void diagf(RulesDiag diag, void *userdata, bool error, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        if (!diag)
                return;
        va_start(ap, fmt);
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        diag(userdata, error, r < 0 ? "out of memory while formatting a message" : msg);
}

int rules_check(const RuleSet *set, RulesDiag diag, void *userdata) {
        for (unsigned i = 0; i < set->n_rules; i++) {
                const Rule *r = &set->rules[i];
                const Rule *first = rules_find(set, r->name);
                if (first != r) {
                        diagf(diag, userdata, true, "%s: rule [%s] is already defined at %s",
                              r->origin, r->name, first->origin);
                        return -EINVAL;
                }
                if (r->action != RULE_ACTION_PACK_WITH)
                        continue;
                const Rule *p = rules_find(set, r->partner);
                if (!p || p == r) {
                        diagf(diag, userdata, true, "%s: rule [%s]: partner \"%s\" is %s",
                              r->origin, r->name, r->partner, p ? "the rule itself" : "not a rule");
                        return -EINVAL;
                }
                if (p->action == RULE_ACTION_IGNORE || p->action == RULE_ACTION_NEVER_PACK) {
                        diagf(diag, userdata, true,
                              "%s: rule [%s]: partner [%s] (%s) says %s, so it cannot be packed "
                              "with",
                              r->origin, r->name, p->name, p->origin,
                              rule_action_to_string(p->action));
                        return -EINVAL;
                }
        }
        return 0;
}

/* ---- Reading rules.d ---- */

typedef struct RulesFile {
        const char *path;
        IniLine in; /* the file, read a line at a time; in.buf owned */
        RuleSet *set;
        Rule *current; /* the rule of the section being read; NULL before the first */
        unsigned error_line;
        char error[512];
} RulesFile;

_printf_(2, 3) static int rf_error(RulesFile *rf, const char *fmt, ...) {
        if (rf->error_line == 0) {
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(rf->error, sizeof(rf->error), fmt, ap);
                va_end(ap);
                rf->error_line = rf->in.lineno;
        }
        return -EINVAL;
}

static bool rule_name_is_valid(const char *s, size_t len) {
        return len > 0 && len < RULE_NAME_MAX &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@-") >=
                       len;
}

/* A section header opens a rule; see the top of the file. */
static void rf_section(RulesFile *rf, const char *s, size_t len) {
        const char *end = memchr(s, ']', len);
        if (!end)
                return; /* inih reports it */
        size_t n = (size_t)(end - s) - 1;
        if (!rule_name_is_valid(s + 1, n)) {
                rf_error(rf,
                         "invalid rule name \"%.*s\": 1 to %d of A-Z, a-z, 0-9, '_', '.', '@' "
                         "and '-'",
                         (int)n, s + 1, RULE_NAME_MAX - 1);
                rf->current = NULL;
                return;
        }
        rf->current = rules_append(rf->set);
        if (!rf->current) {
                rf_error(rf, rf->set->n_rules >= RULES_MAX ? "more than %d rules" : "out of memory",
                         RULES_MAX);
                return;
        }
        memcpy(rf->current->name, s + 1, n);
        rf->current->name[n] = '\0';
        snprintf(rf->current->origin, sizeof(rf->current->origin), "%s:%u", rf->path,
                 rf->in.lineno);
}

/* inih's fgets(): ini_line_next(), its refusals kept as the file's error;
 * a section header starts a rule. */
static char *rf_read_line(char *str, int num, void *stream) {
        RulesFile *rf = stream;
        char why[96];

        char *line = ini_line_next(&rf->in, RULES_FILE_MAX, str, num, why, sizeof(why));
        if (why[0])
                rf_error(rf, "%s", why);
        if (line && line[0] == '[')
                rf_section(rf, line, strcspn(line, "\n"));
        return line;
}

static int set_key(RulesFile *rf, char **field, const char *key, const char *value) {
        if (*field)
                return rf_error(rf, "rule [%s]: %s given twice", rf->current->name, key);
        if (value[0] == '\0')
                return rf_error(rf, "rule [%s]: empty %s", rf->current->name, key);
        *field = strdup(value);
        return *field ? 0 : rf_error(rf, "out of memory");
}

static int rf_handler(void *user, const char *section, const char *key, const char *value) {
        RulesFile *rf = user;
        Rule *r = rf->current;
        int k;

        if (rf->error_line)
                return 1; /* the first error is the one reported */
        if (!r || strcmp(r->name, section) != 0) {
                if (section[0] == '\0')
                        rf_error(rf, "\"%s\" outside any rule (a rule starts with [NAME])", key);
                return 1;
        }
        if (strcmp(key, "comm") == 0)
                (void)set_key(rf, &r->comm, key, value);
        else if (strcmp(key, "exe") == 0)
                (void)set_key(rf, &r->exe, key, value);
        else if (strcmp(key, "unit") == 0)
                (void)set_key(rf, &r->unit, key, value);
        else if (strcmp(key, "cgroup") == 0) {
                if (value[0] != '/')
                        rf_error(rf,
                                 "rule [%s]: cgroup \"%s\": a cgroup path prefix starts with '/'",
                                 r->name, value);
                else
                        (void)set_key(rf, &r->cgroup, key, value);
        } else if (strcmp(key, "action") == 0) {
                k = rule_action_from_string(value);
                if (k <= RULE_ACTION_NONE)
                        rf_error(rf,
                                 "rule [%s]: invalid action \"%s\": expected one of ignore, "
                                 "latency-critical, never-pack, pack-with",
                                 r->name, value);
                else if (r->action != RULE_ACTION_NONE)
                        rf_error(rf, "rule [%s]: action given twice", r->name);
                else
                        r->action = (RuleAction)k;
        } else if (strcmp(key, "partner") == 0) {
                if (!rule_name_is_valid(value, strlen(value)))
                        rf_error(rf, "rule [%s]: invalid partner \"%s\": not a rule name", r->name,
                                 value);
                else
                        snprintf(r->partner, sizeof(r->partner), "%s", value);
        } else
                rf_error(rf,
                         "rule [%s]: unknown key \"%s\" (expected comm, exe, cgroup, unit, action, "
                         "partner)",
                         r->name, key);
        return 1;
}

/* Checks each rule of the file once it is read, naming its section's line. */
static int rf_check_rules(RulesFile *rf, unsigned first, RulesDiag diag, void *userdata) {
        for (unsigned i = first; i < rf->set->n_rules; i++) {
                const Rule *r = &rf->set->rules[i];
                const char *what = NULL;
                if (!r->comm && !r->exe && !r->cgroup && !r->unit)
                        what = "no match key (comm, exe, cgroup or unit)";
                else if (r->action == RULE_ACTION_NONE)
                        what = "no action";
                else if (r->action == RULE_ACTION_PACK_WITH && !r->partner[0])
                        what = "action pack-with needs partner = RULE";
                else if (r->action != RULE_ACTION_PACK_WITH && r->partner[0])
                        what = "partner is only for action pack-with";
                if (what) {
                        diagf(diag, userdata, true, "%s: rule [%s]: %s", r->origin, r->name, what);
                        return -EINVAL;
                }
        }
        return 0;
}

/*
 * Opens a regular file of at most RULES_FILE_MAX bytes, never through a link
 * (rules_entry_check() resolved it), checked again once open: the entry may
 * have changed since. O_NONBLOCK keeps the open from waiting on a FIFO.
 */
static int rules_open_file(const char *path, FILE **ret, const char **ret_what) {
        _cleanup_close_ int fd =
                open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode)) {
                *ret_what = ini_line_mode_kind(st.st_mode);
                return -EINVAL;
        }
        if (st.st_size > RULES_FILE_MAX)
                return -EFBIG;
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                return negative_errno();
        FILE *f = fdopen(fd, "re");
        if (!f)
                return negative_errno();
        TAKE_FD(fd);
        *ret = f;
        return 0;
}

/* Reads the rules of path (named so in messages), opening open_path. */
static int rules_load_file(const char *path, const char *open_path, RuleSet *set, RulesDiag diag,
                           void *userdata) {
        RulesFile rf = { .path = path, .set = set };
        unsigned first = set->n_rules;
        const char *what = NULL;
        int r = rules_open_file(open_path, &rf.in.f, &what);
        if (r < 0) {
                if (what)
                        diagf(diag, userdata, true, "%s: not a regular file (%s)", path, what);
                else
                        diagf(diag, userdata, true, "%s: cannot read: %s", path, strerror(-r));
                return r;
        }
        r = ini_parse_stream(rf_read_line, &rf, rf_handler, &rf);
        if (r == -2) {
                diagf(diag, userdata, true, "%s: out of memory", path);
                r = -ENOMEM;
        } else if (r < 0 || ferror(rf.in.f)) {
                diagf(diag, userdata, true, "%s: read error", path);
                r = -EIO;
        } else if (r > 0 && (rf.error_line == 0 || (unsigned)r < rf.error_line)) {
                diagf(diag, userdata, true,
                      "%s:%d: syntax error: expected [NAME] or \"key = value\"", path, r);
                r = -EINVAL;
        } else if (rf.error_line > 0) {
                diagf(diag, userdata, true, "%s:%u: %s", path, rf.error_line, rf.error);
                r = -EINVAL;
        } else
                r = rf_check_rules(&rf, first, diag, userdata);
        fclose(rf.in.f);
        free(rf.in.buf);
        return r;
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* path lies below dir; both absolute and resolved (no "..", no links). */
static bool path_is_below(const char *path, const char *dir) {
        size_t n = strlen(dir);
        return n == 1 || (strncmp(path, dir, n) == 0 && path[n] == '/');
}

/*
 * Whether DIR/name (path) is a rules file to read: a regular file, or a
 * symbolic link to one inside real_dir (rules.d resolved). A link that
 * leads outside is refused, whatever it leads to, but /dev/null (a masked
 * file): a rules file that is not one must never be read, lest an error
 * quote its first word. Anything else that is not a regular file is
 * skipped with a warning. Nothing is opened: a FIFO would block.
 *
 * Return: 1 with *ret_open, what to open (the link's target, resolved);
 * 0 to skip it; -EPERM (after an error) for a link that leads outside;
 * -ENOMEM.
 */
static int rules_entry_check(int dir_fd, const char *real_dir, const char *path, const char *name,
                             RulesDiag diag, void *userdata, char **ret_open) {
        _cleanup_free_ char *target = NULL;
        struct stat st;
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0; /* gone since readdir() */
        if (S_ISLNK(st.st_mode)) {
                target = realpath(path, NULL); /* NULL: leads nowhere, said below */
                if (!target && errno == ENOMEM)
                        return -ENOMEM;
                if (target && !path_is_below(target, real_dir)) {
                        if (stat(target, &st) < 0)
                                return 0; /* gone meanwhile */
                        if (ini_line_is_dev_null(&st))
                                return 0;
                        const char *kind = ini_line_mode_kind(st.st_mode);
                        diagf(diag, userdata, true,
                              "%s: a symbolic link to %s (%s) outside %s: refused, a rules file "
                              "must be in the rules directory",
                              path, target, kind ? kind : "a regular file", real_dir);
                        return -EPERM;
                }
        }
        const char *what;
        if (ini_line_entry_kind(dir_fd, name, &what, NULL) <= 0) {
                if (what)
                        diagf(diag, userdata, false, "%s: not a regular file (%s), skipped", path,
                              what);
                return 0;
        }
        *ret_open = target ? TAKE_PTR(target) : strdup(path);
        return *ret_open ? 1 : -ENOMEM;
}

int rules_load_dir(const char *dir, RuleSet *set, RulesDiag diag, void *userdata) {
        DIR *d = opendir(dir);
        if (!d) {
                int r = negative_errno();
                if (r == -ENOENT || r == -ENOTDIR)
                        return 0;
                diagf(diag, userdata, true, "%s: cannot open directory: %s", dir, strerror(-r));
                return r;
        }
        char **names = NULL;
        size_t n = 0;
        int r = 0;
        struct dirent *de;
        while (r == 0 && (errno = 0, de = readdir(d))) {
                size_t len = strlen(de->d_name);
                if (len <= 5 || strcmp(de->d_name + len - 5, ".conf") != 0)
                        continue;
                char **nv = reallocarray(names, n + 1, sizeof(*names));
                if (!nv || !(nv[n] = strdup(de->d_name)))
                        r = -ENOMEM;
                if (nv)
                        names = nv;
                if (r == 0)
                        n++;
        }
        if (r == 0 && errno != 0)
                r = negative_errno();
        if (r < 0)
                diagf(diag, userdata, true, "%s: cannot list: %s", dir, strerror(-r));
        _cleanup_free_ char *real_dir = NULL;
        if (r >= 0 && n > 0 && !(real_dir = realpath(dir, NULL))) {
                r = negative_errno();
                diagf(diag, userdata, true, "%s: cannot resolve: %s", dir, strerror(-r));
        }
        if (n > 0)
                qsort(names, n, sizeof(*names), strcmp_ptr);
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *path = NULL, *open_path = NULL;
                if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
                        r = -ENOMEM;
                else
                        r = rules_entry_check(dirfd(d), real_dir, path, names[i], diag, userdata,
                                              &open_path);
                if (r > 0)
                        r = rules_load_file(path, open_path, set, diag, userdata);
        }
        closedir(d);
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return r < 0 ? r : 0;
}
