/* SPDX-License-Identifier: MIT */
/*
 * The cpuset actuator (see act-cpuset.h): cpuset.cpus in cgroup v2 or the
 * v1 cpuset hierarchy, clamped to the parent's effective CPUs, journaled
 * with the exact previous text so "inherit" (an empty v2 value) comes back
 * as inherit rather than as a full mask (intel-lpmd's mistake).
 *
 * The two versions differ only in the name of the effective-CPUs file
 * (v2 cpuset.cpus.effective, v1 cpuset.effective_cpus) and in what an empty
 * cpuset.cpus means (v2: inherit the parent's; v1: no CPUs).
 *
 * One exception to the exact restore: the kernel refuses to empty the
 * cpuset.cpus of a cgroup that has tasks (-ENOSPC, v2 too: seen on 6.1 and
 * 6.12 in make check-kernels), so "inherit" cannot come back while tasks
 * are inside. Then the parent's effective CPUs are written, which is what
 * the cgroup inherits at that moment; it no longer follows later changes of
 * the parent.
 */
#include "act-cpuset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpuset.h"
#include "fileio.h"
#include "macro.h"

struct ActCpuset {
        ActCpusetOptions opts;
        char *root;
};

static const char *effective_name(CgroupVersion v) {
        return v == CGROUP_VERSION_1 ? "cpuset.effective_cpus" : "cpuset.cpus.effective";
}

/* True if the comma-separated list has word as an element. */
static bool list_has(const char *list, const char *word) {
        size_t n = strlen(word);
        for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
                if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
                        return true;
        return false;
}

/*
 * A mountinfo line holds a root and a mount point of up to PATH_MAX bytes each, four times
 * that escaped (\\040), and options; a line over 64 KiB is no mount of ours. In all,
 * 64 MiB is some 400000 mounts of the usual 150 bytes.
 */
#define MOUNTINFO_LINE_MAX ((size_t)64 << 10)
#define MOUNTINFO_MAX      ((size_t)64 << 20)

/* cpuset.cpus: the longest cpulist of CPUSET_MAX_CPUS CPUs ("0,2,4,...", at most four digits
 * and a comma each) and its newline. */
#define CPUS_FILE_MAX ((size_t)CPUSET_MAX_CPUS * 6 + 2)

int act_cpuset_find_mount(const char *procfs_root, CgroupVersion version, char **ret) {
        if (!ret || (version != CGROUP_VERSION_1 && version != CGROUP_VERSION_2))
                return -EINVAL;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/self/mountinfo", procfs_root ? procfs_root : "/proc") < 0)
                return -ENOMEM;
        _cleanup_(fileio_lines_close) FileioLines f;
        int r = fileio_lines_open(&f, path, MOUNTINFO_MAX, MOUNTINFO_LINE_MAX);
        if (r < 0)
                return r;
        char *line;
        while ((r = fileio_lines_next(&f, &line, NULL)) > 0) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
                char mnt[4096], fstype[64], super[1024];
                const char *sep = strstr(line, " - ");
                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
                    sscanf(sep + 3, "%63s %*s %1023s", fstype, super) != 2)
                        continue;
                bool match = version == CGROUP_VERSION_2
                                     ? strcmp(fstype, "cgroup2") == 0
                                     : strcmp(fstype, "cgroup") == 0 && list_has(super, "cpuset");
                if (match) {
                        *ret = strdup(mnt); /* mountinfo escapes spaces as \040; cgroup
                                               mounts have none in practice */
                        return *ret ? 0 : -ENOMEM;
                }
        }
        return r < 0 ? r : -ENOENT;
}

int act_cpuset_new(const ActCpusetOptions *opts, ActCpuset **ret) {
        if (!opts || !ret || !opts->cgroup_root || (!opts->dry_run && !opts->journal))
                return -EINVAL;
        CgroupVersion v = opts->version;
        if (v == CGROUP_VERSION_DETECT) {
                _cleanup_free_ char *p1 = NULL, *p2 = NULL;
                if (asprintf(&p1, "%s/cpuset.effective_cpus", opts->cgroup_root) < 0 ||
                    asprintf(&p2, "%s/cpuset.cpus.effective", opts->cgroup_root) < 0)
                        return -ENOMEM;
                v = access(p2, F_OK) == 0   ? CGROUP_VERSION_2
                    : access(p1, F_OK) == 0 ? CGROUP_VERSION_1
                                            : CGROUP_VERSION_DETECT;
                if (v == CGROUP_VERSION_DETECT)
                        return -ENOENT;
        }
        ActCpuset *a = calloc(1, sizeof(ActCpuset));
        if (!a)
                return -ENOMEM;
        a->root = strdup(opts->cgroup_root);
        if (!a->root) {
                free(a);
                return -ENOMEM;
        }
        a->opts = *opts;
        a->opts.cgroup_root = a->root;
        a->opts.version = v;
        *ret = a;
        return 0;
}

ActCpuset *act_cpuset_free(ActCpuset *a) {
        if (!a)
                return NULL;
        free(a->root);
        free(a);
        return NULL;
}

CgroupVersion act_cpuset_version(const ActCpuset *a) {
        return a->opts.version;
}

int act_cpuset_read_cpus(const char *dir, char **ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len;
        if (asprintf(&path, "%s/cpuset.cpus", dir) < 0)
                return -ENOMEM;
        int r = read_small_file_alloc(path, CPUS_FILE_MAX, &text, &len);
        if (r < 0)
                return r;
        if (memchr(text, '\0', len))
                return -EBADMSG;
        /* The first line (the kernel writes one), without its newline and trailing spaces. */
        len = strcspn(text, "\n");
        while (len > 0 && text[len - 1] == ' ')
                len--;
        text[len] = '\0';
        *ret = TAKE_PTR(text);
        return 0;
}

static int write_cpus(const char *dir, const char *value) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        if (asprintf(&path, "%s/cpuset.cpus", dir) < 0 || asprintf(&text, "%s\n", value) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        ssize_t n = write(fd, text, strlen(text));
        if (n < 0)
                return negative_errno();
        return (size_t)n == strlen(text) ? 0 : -EIO;
}

/* Writes an original value back to dir (see the top for an empty v2 one). */
static int restore_cpus(const char *dir, const char *value) {
        int r = write_cpus(dir, value);
        if (r != -ENOSPC || value[0] != '\0')
                return r;
        _cleanup_free_ char *parent = strdup(dir), *path = NULL, *text = NULL;
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (!slash)
                return parent ? r : -ENOMEM;
        *slash = '\0';
        CpuSet eff;
        if (asprintf(&path, "%s/cpuset.cpus.effective", parent) < 0)
                return -ENOMEM;
        if (cpuset_read_file(path, &eff) < 0 || cpuset_is_empty(&eff))
                return r; /* v1, or nothing to fall back to */
        if (cpuset_to_string(&eff, &text) < 0)
                return -ENOMEM;
        return write_cpus(dir, text);
}

/* Builds ROOT/CGROUP and ROOT/PARENT-OF-CGROUP. */
static int cgroup_paths(const ActCpuset *a, const char *cgroup, char **ret_dir, char **ret_parent) {
        while (cgroup && *cgroup == '/')
                cgroup++;
        if (!cgroup || !*cgroup || strstr(cgroup, ".."))
                return -EINVAL;
        _cleanup_free_ char *dir = NULL, *parent = NULL;
        if (asprintf(&dir, "%s/%s", a->root, cgroup) < 0)
                return -ENOMEM;
        size_t len = strlen(dir);
        while (len > 1 && dir[len - 1] == '/')
                dir[--len] = '\0';
        parent = strdup(dir);
        if (!parent)
                return -ENOMEM;
        *strrchr(parent, '/') = '\0';
        *ret_dir = TAKE_PTR(dir);
        *ret_parent = TAKE_PTR(parent);
        return 0;
}

static int read_effective(const ActCpuset *a, const char *dir, CpuSet *ret) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, effective_name(a->opts.version)) < 0)
                return -ENOMEM;
        return cpuset_read_file(path, ret);
}

/* True if the cgroup in dir, whose cpuset.cpus reads cur, already has target. */
static bool holds(const ActCpuset *a, const char *dir, const char *cur, const CpuSet *target) {
        CpuSet s;
        if (cpuset_parse(cur, &s) == 0 && cpuset_equal(&s, target))
                return true;
        if (a->opts.version == CGROUP_VERSION_2 && cur[0] == '\0')
                return read_effective(a, dir, &s) == 0 && cpuset_equal(&s, target);
        return false;
}

int act_cpuset_apply(ActCpuset *a, const char *cgroup, const CpuSet *want, CpusetResult *ret_result,
                     CpuSet *ret_applied) {
        assert(a);
        assert(want);
        _cleanup_free_ char *dir = NULL, *parent = NULL, *cur = NULL, *text = NULL;
        int r = cgroup_paths(a, cgroup, &dir, &parent);
        if (r < 0)
                return r;
        r = act_cpuset_read_cpus(dir, &cur);
        if (r < 0)
                return r;
        CpuSet eff, target;
        r = read_effective(a, parent, &eff);
        if (r < 0)
                return r;
        cpuset_and(&target, want, &eff);
        if (cpuset_is_empty(&target))
                return -EINVAL;

        CpusetResult res = holds(a, dir, cur, &target) ? CPUSET_UNCHANGED
                           : a->opts.dry_run           ? CPUSET_WOULD_SET
                                                       : CPUSET_SET;
        if (res == CPUSET_SET) {
                r = cpuset_to_string(&target, &text);
                if (r < 0)
                        return r;
                int first = journal_record_change(a->opts.journal, ACT_CPUSET_KIND, dir, cur, text);
                if (first < 0)
                        return first;
                r = write_cpus(dir, text);
                if (r < 0) {
                        if (first == 1)
                                (void)journal_forget(a->opts.journal, ACT_CPUSET_KIND, dir);
                        return r;
                }
        }
        if (ret_result)
                *ret_result = res;
        if (ret_applied)
                *ret_applied = target;
        return res == CPUSET_SET ? 1 : 0;
}

static bool cpulist_equal(const char *a, const char *b) {
        CpuSet x, y;
        if (cpuset_parse(a, &x) < 0 || cpuset_parse(b, &y) < 0)
                return strcmp(a, b) == 0;
        return cpuset_equal(&x, &y);
}

int act_cpuset_release(ActCpuset *a, const char *cgroup) {
        assert(a);
        _cleanup_free_ char *dir = NULL, *parent = NULL, *cur = NULL;
        int r = cgroup_paths(a, cgroup, &dir, &parent);
        if (r < 0)
                return r;
        const char *orig, *applied;
        if (!a->opts.journal ||
            journal_get(a->opts.journal, ACT_CPUSET_KIND, dir, &orig, &applied) < 0 ||
            a->opts.dry_run)
                return 0;
        r = act_cpuset_read_cpus(dir, &cur);
        if (r == -ENOENT || (r == 0 && !cpulist_equal(cur, applied)))
                return journal_forget(a->opts.journal, ACT_CPUSET_KIND, dir) < 0 ? -EIO : 0;
        if (r < 0)
                return r;
        r = restore_cpus(dir, orig);
        if (r < 0)
                return r;
        r = journal_forget(a->opts.journal, ACT_CPUSET_KIND, dir);
        return r < 0 ? r : 1;
}

static int ops_read(const char *key, char **ret, void *userdata) {
        return act_cpuset_read_cpus(key, ret);
}

static int ops_write(const char *key, const char *value, void *userdata) {
        return restore_cpus(key, value);
}

void act_cpuset_kind_ops(JournalKindOps *ret) {
        *ret = (JournalKindOps){
                .kind = ACT_CPUSET_KIND,
                .read = ops_read,
                .write = ops_write,
                .equal = cpulist_equal,
        };
}
