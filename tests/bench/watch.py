"""Watching a workload's tasks from outside, for tests/bench/bench.py: how
soon they were placed (time to place) and on which CPUs they ran (CPUs
touched).

A Watch polls every POLL_S (5 ms, so that a placement within about 100 ms
of a pair's start can be told from one a tick later) in a thread of its
own, for the workload's whole run and in every configuration alike (the
kernel alone, each profile, the ceiling): the harness's polling costs each
of them the same. One poll reads two files per task, kept open and read
again with pread (no open/close per poll).

Time to place: seconds from the caller's t0 (a pair's start, a client's
start or its session's) until the first poll that found every task of a
group allowed on exactly one CPU, the same one (Cpus_allowed_list in
/proc/TID/status). Its resolution is the poll interval plus one poll. A
group that was packed and later was not is counted (undone), and the last
time that happened is kept, with whether it was packed at the last poll
that found it: a trial switches a group back and forth, and the last unpack
of one unpacked at the end is when it was handed back.

CPUs touched: the distinct CPUs that field 39 of /proc/TID/stat (the CPU the
task ran on last) showed at the polls inside the measured window, over all
the tasks. It is a lower bound: a task that ran on a CPU only between two
polls is not seen there.
"""
import os
import threading
import time

POLL_S = 0.005


class Task:
    """One task's status and stat files, open for the watch's life."""

    def __init__(self, tid):
        self.tid = tid
        self.status = os.open("/proc/%d/status" % tid, os.O_RDONLY)
        try:
            self.stat = os.open("/proc/%d/stat" % tid, os.O_RDONLY)
        except OSError:
            os.close(self.status)
            raise

    def allowed(self):
        """Cpus_allowed_list as text, e.g. "0-1" or "1". A task that has
        exited (a zombie not yet reaped) raises OSError, as one gone does."""
        text = os.pread(self.status, 4096, 0)
        s = text.find(b"State:")
        if s >= 0 and text[s + 6:s + 9].strip()[:1] in (b"Z", b"X"):
            raise OSError("task %d exited" % self.tid)
        i = text.find(b"Cpus_allowed_list:")
        if i < 0:
            raise OSError("no Cpus_allowed_list")
        return text[i + 18:text.index(b"\n", i)].strip()

    def last_cpu(self):
        fields = os.pread(self.stat, 1024, 0).rsplit(b")", 1)[1].split()
        return int(fields[36])  # field 39; the list starts at field 3

    def close(self):
        os.close(self.status)
        os.close(self.stat)


def _open(tids):
    tasks = []
    try:
        for tid in tids:
            tasks.append(Task(tid))
    except OSError:
        for t in tasks:
            t.close()
        return None
    return tasks


class Watch(threading.Thread):
    """groups: a list of tuples of TIDs, one tuple per group (a pair: its two
    tasks); or resolve: a function returning that list, or None while the
    tasks are not known yet (a server's backend before the client connected).
    With resolve, a group whose task ended before it was packed is looked up
    again (a client's first, short connection)."""

    def __init__(self, groups=None, resolve=None, poll_s=POLL_S):
        super().__init__(daemon=True)
        self.resolve = resolve if resolve else (lambda: groups)
        self.poll_s = poll_s
        self.done = threading.Event()
        self.groups = None  # lists of Task
        self.tids = None
        self.packed_at = None  # per group: monotonic time of the first packed poll
        self.packed_now = None
        self.undone = None  # per group: packed once, not packed at a later poll
        self.unpacked_at = None  # per group: monotonic time of the last packed -> not
        self.in_window = False
        self.touched = set()
        self.window_polls = 0
        self.polls = 0

    def _resolve(self):
        try:
            tids = self.resolve()
        except OSError:
            tids = None
        if not tids:
            return
        groups = [_open(g) for g in tids]
        if any(g is None for g in groups):
            for g in groups:
                for t in g or []:
                    t.close()
            return
        if self.groups is None:
            n = len(groups)
            self.packed_at, self.packed_now, self.undone = [None] * n, [False] * n, [False] * n
            self.unpacked_at = [None] * n
        else:
            self._close()
        self.groups, self.tids = groups, tids

    def _close(self):
        for g in self.groups or []:
            for t in g:
                t.close()
        if self.groups is not None:
            self.groups = []

    def poll(self):
        now = time.monotonic()
        self.polls += 1
        if self.groups is None:
            self._resolve()
            if self.groups is None:
                return
        lost = False
        for i, g in enumerate(self.groups):
            try:
                cpus = {t.allowed() for t in g}
                if self.in_window:
                    for t in g:
                        self.touched.add(t.last_cpu())
            except OSError:
                lost = lost or self.packed_at[i] is None
                continue
            one = len(cpus) == 1 and cpus.pop().isdigit()
            if one and self.packed_at[i] is None:
                self.packed_at[i] = now
            if self.packed_now[i] and not one:
                self.undone[i] = True
                self.unpacked_at[i] = now
            self.packed_now[i] = one
        if self.in_window:
            self.window_polls += 1
        if lost:
            self._resolve()

    def run(self):
        while not self.done.is_set():
            self.poll()
            self.done.wait(self.poll_s)

    def start_window(self):
        self.in_window = True

    def end_window(self):
        self.in_window = False

    def stop(self):
        self.done.set()
        if self.is_alive():
            self.join()
        self._close()

    def packed_after(self, t0):
        """Per group: seconds from t0 to its first packed poll (None: never)."""
        if self.packed_at is None:
            return []
        return [None if t is None else round(t - t0, 3) for t in self.packed_at]

    def figures(self, t0):
        """What results.json keeps: packed_after_s (the last group's, None when
        a group never was), per group, how many were undone, CPUs touched, and
        t0 itself (CLOCK_MONOTONIC seconds, as placed's lines start with under
        PLACED_LOG_TIME=1: a kept log lines up with the run)."""
        each = self.packed_after(t0)
        return {"packed_after_s": None if not each or None in each else max(each),
                "packed_each_s": each,
                "packed_undone": sum(self.undone or []),
                "unpacked_last_each_s": [None if t is None else round(t - t0, 3)
                                         for t in self.unpacked_at or []],
                "packed_at_end": list(self.packed_now or []),
                "watch_polls": self.polls,
                "t0_monotonic_s": round(t0, 6)}

    def touched_figures(self):
        return {"cpus_touched": len(self.touched), "cpus_touched_list": sorted(self.touched),
                "touched_polls": self.window_polls}
