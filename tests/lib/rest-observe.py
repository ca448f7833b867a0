#!/usr/bin/env python3
"""Watches a live placed's wake sampler rest, for tests/test-rest-live.sh,
without forking: the test's own processes would wake the sampler (a new task
is news to it), so everything here reads /proc and the log from one process
that started before the moment it watches.

    rest-observe.py rest PID LOG SECONDS
        waits for a "resting" line after its own start; prints the BPF
        links placed holds then ("links N") and exits 0, or 1 on timeout.
    rest-observe.py links PID
        prints "links N" now.
    rest-observe.py hold PID LOG SECONDS TASK...
        called while the sampler rests: every 20 ms, the TASKs' allowed
        CPUs (must stay what they were, one CPU), the BPF links placed
        holds, and the log's resting and watching lines as they come, until
        a look and a rest after it, or SECONDS; prints "rests N looks N
        woken N longest S links MIN MAX" (woken: watches begun by news, a
        new task, as anyone's can be, or a re-check; longest: the longest
        rest seen, in seconds) and exits 0, or 1 with why.
    rest-observe.py quiet PID LOG SECONDS
        no "resting" line for SECONDS: exits 0, else 1.
"""
import os
import sys
import time

REST = "Wake sampler: resting"
WATCH = "Wake sampler: watching: "
LOOK = WATCH + "a look"


def links(pid):
    """BPF links among pid's fds (fdinfo shows link_type: for a bpf_link)."""
    n = 0
    base = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(base):
        try:
            with open(os.path.join(base, fd)) as f:
                if any(line.startswith("link_type:") for line in f):
                    n += 1
        except OSError:
            pass
    return n


def log_count(path, text):
    with open(path, errors="replace") as f:
        return sum(text in line for line in f)


def allowed(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split()[1]
    return ""


def main(argv):
    mode, pid = argv[1], int(argv[2])
    if mode == "links":
        print("links %d" % links(pid))
        return 0
    log, seconds = argv[3], float(argv[4])
    end = time.monotonic() + seconds
    if mode in ("rest", "quiet"):
        before = log_count(log, REST)
        while time.monotonic() < end:
            if log_count(log, REST) > before:
                if mode == "quiet":
                    print("rested after all")
                    return 1
                time.sleep(0.05)  # the line follows the detach, the fd's close
                print("links %d" % links(pid))
                return 0
            time.sleep(0.02)
        return 0 if mode == "quiet" else 1
    if mode == "hold":
        tasks = [int(t) for t in argv[5:]]
        first = [allowed(t) for t in tasks]
        if len(set(first)) != 1 or not first[0].isdigit():
            print("not packed on one CPU at the start: %s" % first)
            return 1
        with open(log, errors="replace") as f:
            f.seek(0, os.SEEK_END)
            n = {"rests": 0, "looks": 0, "woken": 0}
            resting, since, longest, buf = True, time.monotonic(), 0.0, ""
            again = False
            lo = hi = links(pid)
            while time.monotonic() < end:
                now = [allowed(t) for t in tasks]
                if now != first:
                    print("the pair moved from %s to %s" % (first, now))
                    return 1
                k = links(pid)
                lo, hi = min(lo, k), max(hi, k)
                t = time.monotonic()
                lines = (buf + f.read()).split("\n")
                buf = lines.pop()  # a line placed has not finished writing
                for line in lines:
                    if REST in line:  # also after a watch before the first read
                        resting, since = True, t
                        n["rests"] += 1
                        again = n["looks"] > 0
                    elif WATCH in line and resting:
                        resting, longest = False, max(longest, t - since)
                        n["looks"] += LOOK in line
                        n["woken"] += LOOK not in line
                if again:
                    break  # rested, looked, rested again
                time.sleep(0.02)
        if resting:
            longest = max(longest, time.monotonic() - since)
        print("rests %d looks %d woken %d longest %.1f links %d %d" %
              (n["rests"], n["looks"], n["woken"], longest, lo, hi))
        return 0
    print("unknown mode %s" % mode)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
