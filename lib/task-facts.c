/* SPDX-License-Identifier: MIT */
/*
 * The per-task fact reader (see task-facts.h).
 *
 * stat is parsed after the last ')' because comm may hold spaces and
 * parentheses. A file that vanishes between two reads means the task
 * exited: every -ENOENT becomes -ESRCH, so callers test one code.
 *
 * Two caches keep the tick cheap: the effective CPUs of each cgroup are
 * read once a tick (many tasks share a cgroup), and the executable of each
 * process once in its life (keyed by tgid and the leader's start time, so
 * a reused pid is read afresh; an exec() is reported by the proc connector,
 * task_facts_reader_forget_process()).
 *
 * With the kernel's records (the BPF task iterator, which walks every task
 * once a tick anyway) a task costs no file at all in the steady state:
 * stat, schedstat and status come from its record; its cgroup path and unit
 * from a cache keyed by the kernel ids of its two cgroups (the unified one
 * and its cpuset's), which the record carries, so a task that moves is
 * noticed at once and a cgroup is read once however many tasks it holds
 * (and again after CGROUP_INFO_TICKS, so a path can go stale only that
 * long: the read of /proc/TID/cgroup may race with a move); the leader's
 * start time, which keys the executable, from the leader's record.
 */
#include "task-facts.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "string-table.h"
#include "util.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif
#define PF_KTHREAD_FLAG 0x00200000U

#define CGROUP_CACHE_MAX  128
#define EXE_CACHE_TICKS   64   /* an executable not asked for in this many ticks is dropped */
#define CGROUP_INFO_TICKS 64   /* a cgroup's path is read again after this many ticks */
#define CGROUP_INFO_MAX   4096 /* cgroups known by kernel ids, at most */

typedef struct CgroupCpus {
        char *path; /* owned */
        CpuSet cpus;
} CgroupCpus;

typedef struct ExeEntry {
        pid_t tgid;
        uint64_t leader_start; /* start time of the thread tid == tgid */
        uint64_t checked_tick; /* the tick the leader's start time was last checked */
        char *exe;             /* owned */
} ExeEntry;

/* A cgroup pair known by the kernel ids the task records carry. */
typedef struct CgroupInfo {
        uint64_t cgroup_id, cpuset_cgroup_id; /* the key */
        uint64_t read_tick;                   /* when its paths were read; 0 = free */
        uint64_t used_tick;
        uint64_t cpus_tick; /* when cpus was read */
        char cgroup[TASK_FACTS_PATH_MAX];
        char cpuset_path[TASK_FACTS_PATH_MAX];
        char unit[TASK_FACTS_UNIT_MAX];
        CpuSet cpus;
        int error; /* reading /proc/TID/cgroup failed: unknown, read again next tick */
} CgroupInfo;

struct TaskFactsReader {
        char *procfs_root;
        char *cgroup_root; /* NULL: no cpuset facts */
        uint64_t tick;
        CgroupCpus cgroups[CGROUP_CACHE_MAX]; /* this tick's, n_cgroups used */
        unsigned n_cgroups;
        ExeEntry *exes; /* owned, n_exes used of cap_exes */
        unsigned n_exes, cap_exes;
        U64Map *exe_index; /* tgid -> exes index */

        TaskFactsKernelLookup lookup; /* NULL: /proc alone */
        void *lookup_userdata;
        CgroupInfo *infos; /* owned, n_infos used */
        size_t n_infos, cap_infos;
        U64Map *info_index; /* cgroup_info_key() -> infos index */
        uint64_t files_opened;
};

int task_facts_reader_new(const char *procfs_root, const char *cgroup_root, TaskFactsReader **ret) {
        TaskFactsReader *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->procfs_root = strdup(procfs_root ? procfs_root : "/proc");
        r->cgroup_root = cgroup_root ? strdup(cgroup_root) : NULL;
        if (!r->procfs_root || (cgroup_root && !r->cgroup_root)) {
                task_facts_reader_free(r);
                return -ENOMEM;
        }
        if (u64map_new(&r->exe_index) < 0 || u64map_new(&r->info_index) < 0) {
                task_facts_reader_free(r);
                return -ENOMEM;
        }
        r->tick = 1;
        *ret = r;
        return 0;
}

void task_facts_reader_set_kernel(TaskFactsReader *r, TaskFactsKernelLookup lookup,
                                  void *userdata) {
        assert(r);
        r->lookup = lookup;
        r->lookup_userdata = userdata;
}

uint64_t task_facts_reader_files_opened(const TaskFactsReader *r) {
        return r ? r->files_opened : 0;
}

static void reader_clear_cgroups(TaskFactsReader *r) {
        for (unsigned i = 0; i < r->n_cgroups; i++)
                r->cgroups[i].path = mfree(r->cgroups[i].path);
        r->n_cgroups = 0;
}

TaskFactsReader *task_facts_reader_free(TaskFactsReader *r) {
        if (!r)
                return NULL;
        reader_clear_cgroups(r);
        for (unsigned i = 0; i < r->n_exes; i++)
                free(r->exes[i].exe);
        free(r->exes);
        u64map_free(r->exe_index);
        free(r->infos);
        u64map_free(r->info_index);
        free(r->procfs_root);
        free(r->cgroup_root);
        free(r);
        return NULL;
}

/* Drops exes[i]; the last entry takes its place. */
static void exe_remove(TaskFactsReader *r, unsigned i) {
        free(r->exes[i].exe);
        u64map_remove(r->exe_index, (uint64_t)r->exes[i].tgid);
        if (i != --r->n_exes) {
                r->exes[i] = r->exes[r->n_exes];
                (void)u64map_put(r->exe_index, (uint64_t)r->exes[i].tgid,
                                 i); /* only a value changes */
        }
}

static uint64_t cgroup_info_key(uint64_t cgroup_id, uint64_t cpuset_cgroup_id) {
        return cgroup_id * 0x9e3779b97f4a7c15ULL ^ cpuset_cgroup_id;
}

/* Drops infos[i]; the last entry takes its place. */
static void info_remove(TaskFactsReader *r, size_t i) {
        const CgroupInfo *ci = &r->infos[i];
        u64map_remove(r->info_index, cgroup_info_key(ci->cgroup_id, ci->cpuset_cgroup_id));
        if (i != --r->n_infos) {
                r->infos[i] = r->infos[r->n_infos];
                ci = &r->infos[i];
                (void)u64map_put(r->info_index,
                                 cgroup_info_key(ci->cgroup_id, ci->cpuset_cgroup_id), (uint32_t)i);
        }
}

void task_facts_reader_new_tick(TaskFactsReader *r) {
        if (!r)
                return;
        reader_clear_cgroups(r);
        r->tick++;
        /* Without the proc connector nobody reports exits: drop what no
         * tick asked for lately, so the cache follows the live processes. */
        if (r->tick % EXE_CACHE_TICKS != 0)
                return;
        for (unsigned i = 0; i < r->n_exes; i++)
                if (r->exes[i].checked_tick + EXE_CACHE_TICKS < r->tick)
                        exe_remove(r, i--);
        for (size_t i = 0; i < r->n_infos; i++)
                if (r->infos[i].used_tick + CGROUP_INFO_TICKS < r->tick)
                        info_remove(r, i--);
}

void task_facts_reader_forget_process(TaskFactsReader *r, pid_t tgid) {
        uint32_t i;
        if (r && u64map_get(r->exe_index, (uint64_t)tgid, &i))
                exe_remove(r, i);
}

/* Reads PROCFS_ROOT/TGID/task/TID/NAME. Return: bytes, -ESRCH when gone, negative errno. */
static int read_task_file(const char *root, pid_t tgid, pid_t tid, const char *name, char *buf,
                          size_t size) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/%d/task/%d/%s", root, (int)(tgid > 0 ? tgid : tid),
                         (int)tid, name);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        int r = read_small_file(path, buf, size);
        return r == -ENOENT ? -ESRCH : r;
}

/* The fields of stat after the comm: 3 (state) to 41 (policy); older kernels stop after 22. */
static int parse_stat(const char *buf, TaskFacts *t) {
        const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
        char *end;
        if (!open || !close || close < open)
                return -EINVAL;
        long tid = strtol(buf, &end, 10);
        if (end == buf || tid <= 0 || tid > INT_MAX)
                return -EINVAL;
        size_t len = MIN((size_t)(close - open - 1), sizeof(t->comm) - 1);
        memcpy(t->comm, open + 1, len);
        t->comm[len] = '\0';
        t->id.tid = (pid_t)tid;
        t->processor = -1;

        const char *p = close + 1;
        for (int field = 3; field <= 41; field++) {
                p += strspn(p, " ");
                if (!*p || *p == '\n')
                        return field > 22 ? 0 : -EINVAL;
                if (field == 3)
                        t->state = *p;
                else if (field != 3 && (*p < '0' || *p > '9') && *p != '-')
                        return -EINVAL; /* every field after the state is a number */
                if (field == 4)
                        t->ppid = (pid_t)strtol(p, NULL, 10);
                else if (field == 9)
                        t->flags = (unsigned)strtoul(p, NULL, 10);
                else if (field == 22)
                        t->id.start_time = strtoull(p, NULL, 10);
                else if (field == 39)
                        t->processor = (int)strtol(p, NULL, 10);
                else if (field == 40)
                        t->rt_priority = (unsigned)strtoul(p, NULL, 10);
                else if (field == 41)
                        t->policy = (unsigned)strtoul(p, NULL, 10);
                p += strcspn(p, " \n");
        }
        return 0;
}

int task_facts_read_stat(const char *procfs_root, pid_t tgid, pid_t tid, TaskFacts *ret) {
        char buf[1024];
        if (tid <= 0 || !ret)
                return -EINVAL;
        int r = read_task_file(procfs_root ? procfs_root : "/proc", tgid, tid, "stat", buf,
                               sizeof(buf));
        if (r < 0)
                return r == -EFBIG ? -EINVAL : r;
        TaskFacts t = { .tgid = tgid };
        r = parse_stat(buf, &t);
        if (r < 0)
                return r;
        if (t.id.tid != tid)
                return -EINVAL;
        *ret = t;
        return 0;
}

static int parse_schedstat(const char *buf, TaskFacts *t) {
        char extra;
        if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %c", &t->run_ns, &t->run_delay_ns,
                   &t->timeslices, &extra) != 3)
                return -EINVAL;
        return 0;
}

/* The value of the line "KEY:\t..." of status, up to the end of its line, into buf. */
static int status_field(const char *status, const char *key, char *buf, size_t size) {
        size_t klen = strlen(key);
        const char *p = status;
        while (p && !(strncmp(p, key, klen) == 0 && p[klen] == ':')) {
                p = strchr(p, '\n');
                p = p ? p + 1 : NULL;
        }
        if (!p)
                return -EINVAL;
        p += klen + 1;
        p += strspn(p, " \t");
        size_t n = strcspn(p, "\n");
        if (n >= size)
                return -EINVAL;
        memcpy(buf, p, n);
        buf[n] = '\0';
        return 0;
}

static int parse_status(const char *buf, pid_t tgid, TaskFacts *t) {
        char value[8192];
        char *end;
        int r = status_field(buf, "Tgid", value, sizeof(value));
        if (r < 0)
                return r;
        long v = strtol(value, &end, 10);
        if (end == value || *end || v <= 0 || v > INT_MAX)
                return -EINVAL;
        if (tgid > 0 && v != tgid)
                return -ESRCH; /* not a thread of that process (any more) */
        t->tgid = (pid_t)v;
        r = status_field(buf, "Cpus_allowed_list", value, sizeof(value));
        if (r < 0)
                return r;
        return cpuset_parse(value, &t->allowed) < 0 ? -EINVAL : 0;
}

/* Copies a path of length n into buf. Return: 0 or -ENOBUFS. */
static int copy_path(const char *path, size_t n, char *buf, size_t size) {
        if (!buf)
                return 0;
        if (n >= size)
                return -ENOBUFS;
        memcpy(buf, path, n);
        buf[n] = '\0';
        return 0;
}

/* True if the comma-separated controller list names cpuset. */
static bool has_cpuset(const char *list, size_t n) {
        for (size_t i = 0; i < n;) {
                size_t k = strcspn(list + i, ",:");
                if (k == 6 && strncmp(list + i, "cpuset", 6) == 0)
                        return true;
                i += k + 1;
        }
        return false;
}

int task_facts_parse_cgroup(const char *text, char *ret_cgroup, char *ret_cpuset, size_t size) {
        const char *v2 = NULL, *v1 = NULL;
        size_t v2_len = 0, v1_len = 0;

        /* Lines are "ID:CONTROLLERS:PATH"; v2 is "0::PATH". */
        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t)(eol - line) : strlen(line);
                const char *c1 = memchr(line, ':', len);
                const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
                if (len > 0 && (!c2 || c1 == line || c2[1] != '/'))
                        return -EINVAL;
                if (c2 && c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
                        v2 = c2 + 1;
                        v2_len = len - (size_t)(v2 - line);
                } else if (c2 && !v1 && has_cpuset(c1 + 1, (size_t)(c2 - c1 - 1))) {
                        v1 = c2 + 1;
                        v1_len = len - (size_t)(v1 - line);
                }
                line = eol ? eol + 1 : NULL;
        }
        if (!v1 && !v2)
                return -ENOENT;
        int r = copy_path(v2 ? v2 : v1, v2 ? v2_len : v1_len, ret_cgroup, size);
        if (r >= 0)
                r = copy_path(v1 ? v1 : v2, v1 ? v1_len : v2_len, ret_cpuset, size);
        return r;
}

int task_facts_unit_from_cgroup(const char *cgroup, char *buf, size_t size) {
        const char *best = NULL;
        size_t best_len = 0;
        if (size > 0)
                buf[0] = '\0';
        for (const char *c = cgroup; c && *c;) {
                c += strspn(c, "/");
                size_t n = strcspn(c, "/");
                bool service = n > 8 && strncmp(c + n - 8, ".service", 8) == 0;
                bool scope = n > 6 && strncmp(c + n - 6, ".scope", 6) == 0;
                if (service || scope) {
                        best = c;
                        best_len = n;
                }
                c += n;
        }
        if (!best)
                return 0;
        return copy_path(best, best_len, buf, size);
}

/* Effective CPUs of DIR from the v2 or the v1 file. Return: 0, -ENOENT when neither. */
static int read_effective(const char *dir, CpuSet *ret) {
        static const char *const names[] = { "cpuset.cpus.effective", "cpuset.effective_cpus" };
        char path[PATH_MAX + 32], buf[8192];
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                int n = snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                if (n < 0 || (size_t)n >= sizeof(path))
                        return -ENAMETOOLONG;
                int r = read_small_file_line(path, buf, sizeof(buf));
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return r;
                return cpuset_parse(buf, ret) < 0 ? -EINVAL : 0;
        }
        return -ENOENT;
}

/* An absolute path without "." or ".." components: it stays under the root. */
static bool path_is_safe(const char *path) {
        if (path[0] != '/')
                return false;
        for (const char *c = path; *c;) {
                c += strspn(c, "/");
                size_t n = strcspn(c, "/");
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                c += n;
        }
        return true;
}

/*
 * The effective CPUs of the cpuset cgroup path: from the nearest cgroup up
 * to the root that has the file (in v2 the controller may be off below some
 * level; its tasks then get their ancestor's CPUs). Empty when unknown.
 */
static void cgroup_cpus_read(TaskFactsReader *r, const char *cgpath, CpuSet *ret) {
        cpuset_zero(ret);
        if (!r->cgroup_root || !path_is_safe(cgpath))
                return;
        char dir[PATH_MAX];
        int n = snprintf(dir, sizeof(dir), "%s%s", r->cgroup_root, cgpath);
        if (n < 0 || (size_t)n >= sizeof(dir))
                return;
        size_t root_len = strlen(r->cgroup_root);
        int k;
        for (;;) {
                r->files_opened++;
                k = read_effective(dir, ret);
                if (k != -ENOENT || strlen(dir) <= root_len)
                        break;
                char *slash = strrchr(dir + root_len, '/');
                if (!slash)
                        break;
                *slash = '\0'; /* up one cgroup; "" + root_len = the root itself */
        }
        if (k < 0)
                cpuset_zero(ret);
}

/* cgroup_cpus_read(), cached for the tick by path. */
static void cgroup_cpus(TaskFactsReader *r, const char *cgpath, CpuSet *ret) {
        for (unsigned i = 0; i < r->n_cgroups; i++)
                if (strcmp(r->cgroups[i].path, cgpath) == 0) {
                        *ret = r->cgroups[i].cpus;
                        return;
                }
        cgroup_cpus_read(r, cgpath, ret);
        if (r->n_cgroups < CGROUP_CACHE_MAX) {
                char *copy = strdup(cgpath);
                if (copy)
                        r->cgroups[r->n_cgroups++] = (CgroupCpus){ .path = copy, .cpus = *ret };
        }
}

/* The kernel's record of tid, where the reader has a lookup that knows it. */
static bool kernel_record(const TaskFactsReader *r, pid_t tid, WakeTaskView *ret) {
        return r->lookup && r->lookup(r->lookup_userdata, tid, ret) > 0;
}

static ExeEntry *exe_find(TaskFactsReader *r, pid_t tgid) {
        uint32_t i;
        return u64map_get(r->exe_index, (uint64_t)tgid, &i) ? &r->exes[i] : NULL;
}

/* The start time of the process tgid (its leader thread). */
static int leader_start(TaskFactsReader *r, const TaskFacts *t, uint64_t *ret) {
        if (t->id.tid == t->tgid) {
                *ret = t->id.start_time;
                return 0;
        }
        WakeTaskView kt;
        if (kernel_record(r, t->id.tid, &kt) && kt.id.start_time == t->id.start_time) {
                *ret = kt.leader_start_time;
                return 0;
        }
        TaskFacts leader;
        r->files_opened++;
        int k = task_facts_read_stat(r->procfs_root, t->tgid, t->tgid, &leader);
        if (k < 0)
                return k;
        *ret = leader.id.start_time;
        return 0;
}

/* t->exe from the cache, or from PROCFS_ROOT/TGID/exe. "" when unreadable (kernel threads). */
static void task_exe(TaskFactsReader *r, TaskFacts *t) {
        uint64_t start = 0;
        ExeEntry *e = exe_find(r, t->tgid);
        t->exe[0] = '\0';
        if (e && e->checked_tick == r->tick) {
                snprintf(t->exe, sizeof(t->exe), "%s", e->exe);
                return;
        }
        if (leader_start(r, t, &start) < 0)
                return; /* the leader is gone (a zombie's threads): no exe to read */
        if (e && e->leader_start == start) {
                e->checked_tick = r->tick;
                snprintf(t->exe, sizeof(t->exe), "%s", e->exe);
                return;
        }

        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/%d/exe", r->procfs_root, (int)t->tgid);
        if (n < 0 || (size_t)n >= sizeof(path))
                return;
        r->files_opened++;
        ssize_t len = readlink(path, t->exe, sizeof(t->exe) - 1);
        t->exe[len > 0 ? len : 0] = '\0';
        if (len >= (ssize_t)sizeof(t->exe) - 1)
                t->exe[0] = '\0'; /* cut: better unknown than a wrong path */

        char *copy = strdup(t->exe);
        if (!copy)
                return;
        if (!e && r->n_exes == r->cap_exes) {
                unsigned cap = r->cap_exes ? 2 * r->cap_exes : 64;
                ExeEntry *grown = reallocarray(r->exes, cap, sizeof(*grown));
                if (!grown) {
                        free(copy);
                        return;
                }
                r->exes = grown;
                r->cap_exes = cap;
        }
        if (!e) {
                if (u64map_put(r->exe_index, (uint64_t)t->tgid, r->n_exes) < 0) {
                        free(copy);
                        return;
                }
                e = &r->exes[r->n_exes++];
        } else
                free(e->exe);
        *e = (ExeEntry){
                .tgid = t->tgid, .leader_start = start, .checked_tick = r->tick, .exe = copy
        };
}

/* The value of "KEY: N" in io's text, 0 when absent. */
static uint64_t io_field(const char *text, const char *key) {
        const char *p = strstr(text, key);
        return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* t->io_bytes from PROCFS_ROOT/TGID/task/TID/io; 0 where the file is missing or unreadable. */
static void task_io(TaskFactsReader *r, pid_t tgid, pid_t tid, TaskFacts *t) {
        char buf[1024];
        t->io_bytes = 0;
        r->files_opened++;
        if (read_task_file(r->procfs_root, tgid, tid, "io", buf, sizeof(buf)) >= 0)
                t->io_bytes = io_field(buf, "rchar: ") + io_field(buf, "wchar: ");
}

static int read_cgroup_facts(TaskFactsReader *r, TaskFacts *t) {
        char buf[8192], cpuset_path[TASK_FACTS_PATH_MAX];
        r->files_opened++;
        int k = read_task_file(r->procfs_root, t->tgid, t->id.tid, "cgroup", buf, sizeof(buf));
        if (k < 0)
                return k == -EFBIG ? -EINVAL : k;
        k = task_facts_parse_cgroup(buf, t->cgroup, cpuset_path, sizeof(t->cgroup));
        if (k == -ENOENT) /* no unified nor cpuset hierarchy: nothing to know */
                return 0;
        if (k == -ENOBUFS) { /* deeper than any real cgroup: unknown */
                t->cgroup[0] = '\0';
                return 0;
        }
        if (k < 0)
                return k;
        cgroup_cpus(r, cpuset_path, &t->cpuset_cpus);
        (void)task_facts_unit_from_cgroup(t->cgroup, t->unit, sizeof(t->unit)); /* too long: "" */
        return 0;
}

/*
 * The cgroup facts of the cgroups the kernel's record names: cached by
 * their ids, read from the task's /proc/TID/cgroup when new or older than
 * CGROUP_INFO_TICKS; their effective CPUs once a tick. Return: the entry,
 * NULL when the cache is full or out of memory (unknown), or -ESRCH in
 * *ret_error when the task is gone.
 */
static const CgroupInfo *cgroup_info(TaskFactsReader *r, const WakeTaskView *k, int *ret_error) {
        const struct wake_task_info *in = k->info;
        uint64_t key = cgroup_info_key(in->cgroup_id, in->cpuset_cgroup_id);
        CgroupInfo *ci = NULL;
        uint32_t i;

        *ret_error = 0;
        if (u64map_get(r->info_index, key, &i))
                ci = &r->infos[i]; /* a colliding pair of other ids is replaced */
        if (!ci) {
                if (r->n_infos >= CGROUP_INFO_MAX ||
                    array_grow((void **)&r->infos, &r->cap_infos, r->n_infos + 1,
                               sizeof(CgroupInfo)) < 0 ||
                    u64map_put(r->info_index, key, (uint32_t)r->n_infos) < 0)
                        return NULL;
                ci = &r->infos[r->n_infos++];
                ci->read_tick = 0;
        }
        bool same = ci->read_tick && ci->cgroup_id == in->cgroup_id &&
                    ci->cpuset_cgroup_id == in->cpuset_cgroup_id;
        if (!same || ci->error || ci->read_tick + CGROUP_INFO_TICKS <= r->tick) {
                char buf[8192];
                ci->cgroup_id = in->cgroup_id;
                ci->cpuset_cgroup_id = in->cpuset_cgroup_id;
                ci->read_tick = r->tick;
                ci->cpus_tick = 0;
                ci->cgroup[0] = ci->cpuset_path[0] = ci->unit[0] = '\0';
                r->files_opened++;
                int e = read_task_file(r->procfs_root, (pid_t)in->tgid, k->id.tid, "cgroup", buf,
                                       sizeof(buf));
                if (e == -ESRCH) {
                        ci->read_tick = 0; /* nothing learnt */
                        *ret_error = e;
                        return NULL;
                }
                if (e >= 0)
                        e = task_facts_parse_cgroup(buf, ci->cgroup, ci->cpuset_path,
                                                    sizeof(ci->cgroup));
                if (e == -ENOBUFS) /* deeper than any real cgroup: unknown */
                        ci->cgroup[0] = ci->cpuset_path[0] = '\0';
                else if (e >= 0)
                        (void)task_facts_unit_from_cgroup(ci->cgroup, ci->unit, sizeof(ci->unit));
                ci->error = e < 0 && e != -ENOENT && e != -ENOBUFS ? e : 0;
        }
        ci->used_tick = r->tick;
        if (ci->cpus_tick != r->tick) {
                if (ci->cpuset_path[0])
                        cgroup_cpus_read(r, ci->cpuset_path, &ci->cpus);
                else
                        cpuset_zero(&ci->cpus);
                ci->cpus_tick = r->tick;
        }
        return ci;
}

/* /proc's one-letter state (fs/proc/array.c) from the kernel's __state and exit_state. */
static char state_letter(uint32_t state, uint32_t exit_state) {
        static const char letters[] = "RSDTtXZPI";   /* by fls() of the reported bits */
        uint32_t bits = (state | exit_state) & 0x7f; /* TASK_REPORT */
        if (state == 0x402)                          /* TASK_IDLE */
                return 'I';
        if (state == 0x1000) /* TASK_RTLOCK_WAIT: reported as uninterruptible */
                bits = 0x2;
        return letters[bits ? 32 - __builtin_clz(bits) : 0];
}

_Static_assert(TASK_FACTS_COMM_MAX == WAKE_COMM_LEN, "a comm is the kernel's TASK_COMM_LEN");

/*
 * Every fact of the task k from its record, its cgroups' cache and its
 * process's executable. Return: 0, or -ESRCH (gone; *t untouched).
 */
static int facts_from_kernel(TaskFactsReader *r, const WakeTaskView *k, TaskFacts *t) {
        const struct wake_task_info *in = k->info;
        int e;
        const CgroupInfo *ci = cgroup_info(r, k, &e);
        if (e < 0)
                return e;
        t->id = k->id;
        t->tgid = (pid_t)in->tgid;
        t->ppid = (pid_t)in->ppid;
        memcpy(t->comm, in->comm, sizeof(t->comm));
        t->comm[sizeof(t->comm) - 1] = '\0';
        t->state = state_letter(in->state, in->exit_state);
        t->flags = in->flags;
        t->processor = in->cpu;
        t->rt_priority = in->rt_priority;
        t->policy = in->policy;
        t->run_ns = in->run_ns;
        t->run_delay_ns = in->run_delay_ns;
        t->timeslices = in->pcount;
        t->io_bytes = in->io_bytes;
        cpuset_zero(&t->allowed);
        for (unsigned w = 0; w < MIN(k->mask_words, (unsigned)CPUSET_WORDS); w++)
                t->allowed.bits[w] = k->cpus_mask[w];
        if (ci) {
                memcpy(t->cgroup, ci->cgroup, sizeof(t->cgroup));
                memcpy(t->unit, ci->unit, sizeof(t->unit));
                t->cpuset_cpus = ci->cpus;
        } else {
                t->cgroup[0] = t->unit[0] = '\0';
                cpuset_zero(&t->cpuset_cpus);
        }
        task_exe(r, t);
        return 0;
}

int task_facts_read(TaskFactsReader *r, pid_t tgid, pid_t tid, TaskFacts *ret) {
        char buf[8192];
        if (!r || !ret || tid <= 0)
                return -EINVAL;

        WakeTaskView kt;
        if (kernel_record(r, tid, &kt)) {
                if (tgid > 0 && kt.info->tgid != (uint32_t)tgid)
                        return -ESRCH; /* not a thread of that process (any more) */
                return facts_from_kernel(r, &kt, ret);
        }
        r->files_opened += 3; /* stat, schedstat, status; the others count themselves */

        /* A TaskFacts is a few KiB: build it in place of the caller's only on success. */
        _cleanup_free_ TaskFacts *t = malloc(sizeof(*t));
        if (!t)
                return -ENOMEM;
        int k = task_facts_read_stat(r->procfs_root, tgid, tid, t);
        if (k < 0)
                return k;

        k = read_task_file(r->procfs_root, tgid, tid, "schedstat", buf, sizeof(buf));
        if (k >= 0)
                k = parse_schedstat(buf, t);
        if (k >= 0)
                k = read_task_file(r->procfs_root, tgid, tid, "status", buf, sizeof(buf));
        if (k >= 0)
                k = parse_status(buf, tgid, t);
        if (k >= 0)
                k = read_cgroup_facts(r, t);
        if (k < 0)
                return k == -EFBIG ? -EINVAL : k;
        task_io(r, tgid, tid, t);
        task_exe(r, t);
        memcpy(ret, t, sizeof(*t));
        return 0;
}

bool task_facts_is(const TaskFacts *t, const TaskId *id) {
        return t->id.tid == id->tid && t->id.start_time == id->start_time;
}

bool task_facts_is_realtime(const TaskFacts *t) {
        return t->policy == SCHED_FIFO || t->policy == SCHED_RR || t->policy == SCHED_DEADLINE;
}

/*
 * PF_KTHREAD marks every kernel thread, kthreadd included. Not PID 2 or its
 * children: that is kthreadd only in the initial PID namespace, and in a
 * container PID 2 is a user task (kernel threads are not in its /proc).
 */
TaskOwner task_facts_owner(const TaskFacts *t, pid_t self_pid) {
        if (t->flags & PF_KTHREAD_FLAG)
                return TASK_OWNER_KTHREAD;
        if (t->tgid == 1 || t->id.tid == 1)
                return TASK_OWNER_INIT;
        if (t->tgid == self_pid)
                return TASK_OWNER_SELF;
        if (task_facts_is_realtime(t))
                return TASK_OWNER_RT;
        return TASK_OWNER_PLACED;
}

static const char *const task_owner_table[] = {
        [TASK_OWNER_PLACED] = "placed", [TASK_OWNER_KTHREAD] = "kernel-thread",
        [TASK_OWNER_INIT] = "init",     [TASK_OWNER_SELF] = "placed-itself",
        [TASK_OWNER_RT] = "realtime",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(task_owner, TaskOwner);

bool task_alive(const char *procfs_root, pid_t tid) {
        char path[PATH_MAX];
        if (tid <= 0 || snprintf(path, sizeof(path), "%s/%d", procfs_root ? procfs_root : "/proc",
                                 (int)tid) >= (int)sizeof(path))
                return false;
        return access(path, F_OK) == 0;
}

#define PROC_PID_INIT_INO 0xEFFFFFFCU /* include/linux/proc_ns.h */

int pid_ns_is_initial(const char *procfs_root) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (asprintf(&path, "%s/self/ns/pid", procfs_root ? procfs_root : "/proc") < 0)
                return -ENOMEM;
        if (stat(path, &st) < 0)
                return negative_errno();
        return st.st_ino == PROC_PID_INIT_INO;
}
