#!/usr/bin/env python3
"""placed benchmark: the kernel alone, placed with each profile, the hand-pinned ceiling.

    tests/bench/bench.py --build build [--reps 5] [--workloads pair,redis-1c,...]
                         [--configs kernel,power-first,balanced,latency-first,ceiling]
                         [--seconds 3] [--warmup 3] [--out build/bench]

Every repetition runs every configuration once, in a rotating order, so slow
drift of a shared machine hits all of them alike. "ceiling" is the kernel
alone with a pair's two sides (server and client) pinned by hand to one CPU
(sched_setaffinity and taskset; --ceiling-cpus, in turn), placed not running: what
packing the pair can buy at most. Only pair-like workloads have one.
"PROFILE-advise" (e.g. balanced-advise) is placed with that profile in
advise mode (--dry-run): its sampler and ticks run, nothing is applied, so
beside the profile itself it tells what watching costs from what placing
does; it is shown, not judged against the targets.

For each workload it reports the median and min-max per configuration and
the ratio to the kernel alone computed per repetition pair (then the median
of those ratios); for the pair-like ones, placed's gain as a share of the
ceiling's gain, (placed/kernel - 1) / (ceiling/kernel - 1), and for all
with a target PASS or FAIL against it. A speed-up target (no loss) is judged
on the 95% interval of the median of the per-repetition ratios, not on the
median alone: one stream over loopback varies by 10% between identical
runs here, so 5 repetitions cannot tell 0.95x from 1.00x; such a figure is
INCONCLUSIVE at that many repetitions (not a pass). With --max-reps N such a
workload gets more repetitions, each running every configuration again in
the rotating order, until every verdict is PASS or FAIL or it has had N; the
report gives each verdict's repetitions and the interval's half-width, the
loss it could tell from none. Beside the workload's own figure it
samples per-CPU busy time and idle-state residency (/proc/stat, cpuidle
sysfs), idle entries per second, an energy estimate (the model of placed's
energy module: busy CPUs at 1.0, idle states weighted by depth), placed's
own CPU time and peak memory, and the CPU time of every other process on the
machine (a benchmark on a machine that is not idle says little).

Several pairs at once (pairs; mixed, beside hackbench) also report the CPUs
their tasks ran on, busy CPU-seconds and the energy estimate per round trip;
the ceiling pins pair i to a CPU of its own. Every pair-like workload
reports its time to place (watch.py, polled every 5 ms). The *-session
workloads start new one-connection clients against a server already
running (and placed, where it runs), each session its own figure over its
whole length. scale-N and scale-hackbench measure placed itself beside many
threads (cost.py); "planner" runs tests/bench/planner-scale and placed
--plan on a generated 512-CPU machine.

The stock servers (tests/bench/stock.py) are started per run, privately: in
a temporary directory, on a unix socket there or on 127.0.0.1, and stopped
and removed after it. Writes OUT/results.json, OUT/report.md,
OUT/speedup.png and, for the scale workloads, OUT/scale.png (gnuplot). The
machine is left as found: placed undoes its changes on SIGTERM, and the
harness runs "placed --restore" on its journal after each run, also after
Ctrl-C or SIGTERM.
"""
import argparse
import functools
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cost  # noqa: E402
import stock  # noqa: E402
import switchback  # noqa: E402
import watch  # noqa: E402
from stock import Workload  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NCPU = os.cpu_count()


def sh(cmd, timeout=600):
    return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True,
                          timeout=timeout)


# --- workloads: each is run(args, env) -> {"metric": name, "value": float, "better":
# "higher"|"lower", ...}; env (stock.Env) holds the run's private directory, its
# servers and, for the ceiling, the CPU to pin the pair to (env.cmd()).

def wl_pipe(args, env):
    out = sh(env.cmd(["perf", "bench", "sched", "pipe", "-l", str(args.pipe_loops)])).stdout
    usec = float(re.search(r"([\d.]+) usecs/op", out).group(1))
    return {"metric": "usec/op", "value": usec, "better": "lower"}


def start_pairs(args, env, n, seconds, warmup):
    """n pingpong pairs at once. In the ceiling (env.pin set) pair i is pinned
    by hand to a CPU of its own: the i-th after env.pin among the CPUs the
    harness may use (so the pin turns with the repetition, as a single pair's
    does; with more pairs than CPUs they wrap around). Returns the processes,
    their pids as (parent, child) tuples and the monotonic time of the start."""
    exe = os.path.join(args.build, "bench", "pingpong")
    allowed = sorted(os.sched_getaffinity(0))
    base = allowed.index(env.pin) if env.pin in allowed else 0
    t0 = time.monotonic()
    procs = []
    for i in range(n):
        argv = [exe, "-p", "-s", str(seconds), "-w", str(warmup)]
        if env.pin is not None:
            argv = ["taskset", "-c", str(allowed[(base + i) % len(allowed)])] + argv
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True))
    pids = [tuple(int(x) for x in p.stdout.readline().split()[1:3]) for p in procs]
    return procs, pids, t0


def kill_pairs(procs):
    """Kills and reaps the pairs still running (a run cut short)."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def pair_rates(procs, outs):
    rates = []
    for p, out in zip(procs, outs):
        if p.returncode != 0 or not out.split():
            raise RuntimeError("pingpong failed (exit %d)" % p.returncode)
        rates.append(float(out.split()[-1]))
    return rates


def run_pairs(args, env, n):
    """n lockstep pipe pairs at once, in their steady state: round trips per
    second summed over the pairs, each counted after the warm-up (placed's
    first ticks). Over the same window (from the warm-up's end to the pairs'
    end): CPUs touched (watch.py: the pairs' tasks' last CPU, every 5 ms),
    busy CPU-seconds and the energy estimate from /proc/stat and cpuidle,
    and the estimate per round trip. Time to place: from the start until
    both tasks of every pair were allowed on one and the same CPU."""
    procs, pids, t0 = start_pairs(args, env, n, args.warmup + args.seconds, args.warmup)
    w = watch.Watch(pids)
    w.start()
    try:
        time.sleep(max(0.0, t0 + args.warmup - time.monotonic()))
        stat0, idle0, w0 = read_stat(), read_idle(), time.monotonic()
        w.start_window()
        outs = [p.communicate()[0] for p in procs]
        w.end_window()
        stat1, idle1, w1 = read_stat(), read_idle(), time.monotonic()
    finally:
        w.stop()
        kill_pairs(procs)
    rates = pair_rates(procs, outs)
    total = sum(rates)
    secs = w1 - w0
    win = system_figures(stat0, stat1, idle0, idle1, secs)
    res = {"metric": "round trips/s", "value": total, "better": "higher", "pairs": n,
           "per_pair": rates, "window_s": round(secs, 3),
           "busy_cpu_s": round(sum(c["busy"] for c in win["cpus"].values()) * secs, 3),
           "window_energy_cpu_equiv": win["energy_cpu_equiv"],
           # CPU-equivalents / (round trips / s) = seconds of one busy CPU per round trip
           "energy_us_per_round_trip": round(1e6 * win["energy_cpu_equiv"] / total, 4)
           if total else None}
    res.update(w.figures(t0))
    res.update(w.touched_figures())
    return res


def wl_pair(args, env):
    """The lockstep pair in its steady state: round trips per second after a
    warm-up long enough for placed's first decisions (ticks of 1 s). Also how
    long after the pair started its two tasks were first both allowed on one
    and the same CPU (packed_after_s; None if never; the ceiling starts
    pinned)."""
    return run_pairs(args, env, 1)


def n_pairs(args):
    """pairs: half the online CPUs, at least 1 (--pairs overrides)."""
    return args.pairs or max(1, os.sysconf("SC_NPROCESSORS_ONLN") // 2)


def wl_pairs(args, env):
    return run_pairs(args, env, n_pairs(args))


def n_mixed(args):
    """mixed: a quarter of the online CPUs in pairs, at least 1, and hackbench
    with half as many groups as CPUs, at least 4 (hackbench-l's -g 4 here;
    -g 8 beside 4 pairs on 16 CPUs)."""
    ncpu = os.sysconf("SC_NPROCESSORS_ONLN")
    return (args.mixed_pairs or max(1, ncpu // 4), args.mixed_groups or max(4, ncpu // 2))


def wl_mixed(args, env):
    """Pairs beside hackbench, at once: the pairs start, placed has the
    warm-up to place them, then hackbench runs and the pairs are stopped
    when it ends. Two figures: the pairs' round trips/s over hackbench's run
    (the value; it must gain) and hackbench's time (mixed-hackbench; it must
    not lose). The ceiling pins the pairs as in pairs and leaves hackbench
    free."""
    n, groups = n_mixed(args)
    # The pairs run until stopped (SIGTERM ends pingpong with its count so far).
    procs, pids, t0 = start_pairs(args, env, n, 36000, args.warmup)
    w = watch.Watch(pids)
    w.start()
    try:
        time.sleep(max(0.0, t0 + args.warmup - time.monotonic()))
        contended = time.monotonic()
        hack = hackbench(groups, args.hackbench_loops)
        # Its Total time runs from the release of its forked tasks, which
        # wait until all are ready, to the end: the messaging began that
        # long before it returned.
        messaging = time.monotonic() - hack["value"]
        for p in procs:
            p.send_signal(signal.SIGTERM)
        outs = [p.communicate(timeout=30)[0] for p in procs]
    finally:
        w.stop()
        kill_pairs(procs)
    rates = pair_rates(procs, outs)
    res = {"metric": "round trips/s", "value": sum(rates), "better": "higher", "pairs": n,
           "per_pair": rates, "hackbench_groups": groups, "hackbench_s": hack["value"],
           "contended_after_s": round(contended - t0, 3),
           "messaging_after_s": round(messaging - t0, 3)}
    res.update(w.figures(t0))
    return res


def hackbench(groups, loops):
    out = sh(["perf", "bench", "sched", "messaging", "-g", str(groups), "-l", str(loops)]).stdout
    return {"metric": "seconds", "value": float(re.search(r"Total time: ([\d.]+)", out).group(1)),
            "better": "lower"}


def wl_hackbench_s(args, env):
    return hackbench(2, args.hackbench_loops)


def wl_hackbench_l(args, env):
    return hackbench(4, args.hackbench_loops)


def wl_build(args, env):
    """A parallel build of placed itself (make -j, one job a CPU) in a scratch
    copy of this tree: many short compiler processes, the load a developer's
    machine runs, which must not lose."""
    d = tempfile.mkdtemp(prefix="placed-bench-build-")
    try:
        tree = os.path.join(d, "src")
        shutil.copytree(SRC, tree, symlinks=True, ignore=shutil.ignore_patterns(".git", "build*"))
        t0 = time.time()
        r = sh(["make", "-C", tree, "-j%d" % NCPU, "all"])
        if r.returncode:
            raise RuntimeError("make failed:\n" + r.stderr[-2000:])
        return {"metric": "seconds", "value": time.time() - t0, "better": "lower"}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def wl_fanout(args, env):
    out = sh([os.path.join(args.build, "bench", "fanout"), "-w", "8", "-s", str(args.seconds)]).stdout
    return {"metric": "rounds/s", "value": float(out.split()[-1]), "better": "higher"}


def series_fanout(args, env, seconds):
    """The fan-out for the switchback: its rounds/s each second."""
    return switchback.Series([os.path.join(args.build, "bench", "fanout"), "-w", "8", "-s",
                              str(seconds), "-r"], r"interval_rounds_per_sec ([\d.]+)"), 1.0


def wl_mix(args, env):
    """The three shapes at once; the figure is the geometric mean of their speeds."""
    procs = [
        subprocess.Popen(["perf", "bench", "sched", "pipe", "-l", str(args.pipe_loops)],
                         stdout=subprocess.PIPE, text=True),
        subprocess.Popen(["perf", "bench", "sched", "messaging", "-g", "2", "-l",
                          str(args.hackbench_loops)], stdout=subprocess.PIPE, text=True),
        subprocess.Popen([os.path.join(args.build, "bench", "fanout"), "-w", "8", "-s",
                          str(args.seconds)], stdout=subprocess.PIPE, text=True),
    ]
    outs = [p.communicate()[0] for p in procs]
    pipe = float(re.search(r"([\d.]+) usecs/op", outs[0]).group(1))
    hack = float(re.search(r"Total time: ([\d.]+)", outs[1]).group(1))
    fan = float(outs[2].split()[-1])
    speed = ((1 / pipe) * (1 / hack) * fan) ** (1 / 3)
    return {"metric": "geomean speed", "value": speed, "better": "higher",
            "parts": {"pipe_usec_op": pipe, "hackbench_s": hack, "fanout_rounds_s": fan}}


def wl_latency(args, env):
    out = sh(["cyclictest", "--default-system", "-q", "-m", "-t", str(NCPU), "-i", "500",
              "-D", "%ds" % args.seconds, "-h", "2000"]).stdout
    hist = {}
    for line in out.splitlines():
        if re.match(r"^\d+\s", line):
            cols = [int(c) for c in line.split()]
            hist[cols[0]] = sum(cols[1:])
    total = sum(hist.values())
    if total == 0:
        raise RuntimeError("cyclictest produced no histogram")

    def pct(p):
        acc = 0
        for us in sorted(hist):
            acc += hist[us]
            if acc >= p * total:
                return us
        return max(hist)
    return {"metric": "p99 wakeup latency us", "value": float(pct(0.99)), "better": "lower",
            "p50_us": pct(0.50), "p99_us": pct(0.99), "p999_us": pct(0.999)}


def wl_light(args, env):
    """An idle-ish load: one task waking 100 times a second; the figure is the
    energy estimate over the run (what power-first should lower)."""
    p = subprocess.Popen(["stress-ng", "--cyclic", "1", "--cyclic-sleep", "10000000", "-t",
                          "%ds" % args.seconds, "--quiet"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    p.wait()
    return {"metric": "energy est.", "value": None, "better": "lower"}


PAIR_TARGET = 0.90  # share of the hand-pinned ceiling's gain, lockstep pipe pair
SERVER_TARGET = 0.75  # share of the ceiling's gain, one-connection servers
NOLOSS_TARGET = 0.97  # speed-up over the kernel alone, everything that must not lose
# A ceiling gaining less than this over the kernel alone is within the noise of
# identical runs here: a share of it means nothing, and placed must just not lose.
MIN_CEILING_GAIN = 1.05
EPS = 1e-9  # a figure exactly at its target passes, whatever the float rounding

PERF = ("perf", "linux-perf")
REDIS = (("redis-server", "redis-server"), ("redis-benchmark", "redis-tools"))
WORKLOADS = {
    "pair": Workload(wl_pair, "round trips/s", "higher", "lockstep pipe pair, steady state",
                     "pair", PAIR_TARGET, pinnable=True),
    # Held to the single pair's target, each pair alike.
    "pairs": Workload(wl_pairs, "round trips/s", "higher",
                      "N lockstep pipe pairs at once (N: half the CPUs, --pairs), steady state; "
                      "the ceiling pins pair i to a CPU of its own", "pair", PAIR_TARGET,
                      pinnable=True),
    "mixed": Workload(wl_mixed, "round trips/s", "higher",
                      "CPUs/4 pipe pairs (--mixed-pairs) during hackbench `-g max(4, CPUs/2)` "
                      "(--mixed-groups): the pairs' round trips/s over hackbench's run; the "
                      "ceiling pins the pairs, not hackbench", "gain", 1.0, pinnable=True,
                      needs=(PERF,)),
    "mixed-hackbench": Workload(None, "seconds", "lower",
                                "hackbench's time in mixed, beside the pairs", "noloss",
                                NOLOSS_TARGET, pinnable=True, part_of=("mixed", "hackbench_s"),
                                needs=(PERF,)),
    # Its figure includes the ticks before placed packs the pair: the share of
    # the ceiling's gain is shown, the pair's target is held by "pair" alone.
    "pipe": Workload(wl_pipe, "usec/op", "lower", "`perf bench sched pipe`, incl. the first ticks",
                     "pair", None, pinnable=True, needs=(PERF,)),
    "hackbench-s": Workload(wl_hackbench_s, "seconds", "lower", "hackbench `-g 2`", "noloss",
                            NOLOSS_TARGET, needs=(PERF,)),
    "hackbench-l": Workload(wl_hackbench_l, "seconds", "lower", "hackbench `-g 4`", "noloss",
                            NOLOSS_TARGET, needs=(PERF,)),
    "build": Workload(wl_build, "seconds", "lower", "`make -j` of placed, a CPU a job",
                      "noloss", NOLOSS_TARGET, needs=(("clang", "clang"),)),
    "fanout": Workload(wl_fanout, "rounds/s", "higher", "master + 8 workers", "noloss",
                       NOLOSS_TARGET, series=series_fanout),
    "mix": Workload(wl_mix, "geomean speed", "higher", "pipe + hackbench + fan-out at once",
                    needs=(PERF,)),
    "latency": Workload(wl_latency, "p99 wakeup latency us", "lower",
                        "`cyclictest --default-system` p99", needs=(("cyclictest", "rt-tests"),)),
    "light": Workload(wl_light, "energy est.", "lower", "light load, energy estimate",
                      needs=(("stress-ng", "stress-ng"),)),
    "redis-1c": Workload(stock.wl_redis_1c, "GET/s", "higher",
                         "redis-server + redis-benchmark `-c 1`, unix socket", "pair",
                         SERVER_TARGET, pinnable=True, setup=stock.redis_setup, needs=REDIS),
    "pg-1c": Workload(stock.wl_pg_1c, "SELECT tps", "higher",
                      "PostgreSQL + pgbench `-c 1 -S`, unix socket", "pair", SERVER_TARGET,
                      pinnable=True, setup=stock.pg_setup, needs=(("pgbench", "postgresql"),),
                      series=stock.series_pg(1)),
    "udp-1c": Workload(stock.wl_udp_1c, "round trips/s", "higher",
                       "sockperf server + ping-pong, UDP over loopback", "pair", SERVER_TARGET,
                       pinnable=True, setup=stock.sockperf_setup,
                       needs=(("sockperf", "sockperf"),)),
    "stream": Workload(stock.wl_stream, "Gbit/s", "higher", "iperf3, one TCP stream over loopback",
                       "noloss", NOLOSS_TARGET, pinnable=True, setup=stock.iperf3_setup,
                       needs=(("iperf3", "iperf3"),), series=stock.series_stream),
    "threads": Workload(stock.wl_threads, "events/s", "higher",
                        "sysbench threads: 16 threads (--threads) contending one mutex", "noloss",
                        NOLOSS_TARGET, needs=(("sysbench", "sysbench"),),
                        series=stock.series_threads),
    "pg-8c": Workload(stock.wl_pg_8c, "SELECT tps", "higher",
                      "PostgreSQL + pgbench `-c 8 -j 2 -S`, unix socket", "noloss", NOLOSS_TARGET,
                      setup=stock.pg_setup, needs=(("pgbench", "postgresql"),),
                      series=stock.series_pg(8)),
    "redis-32c": Workload(stock.wl_redis_32c, "GET/s", "higher",
                          "redis-server + redis-benchmark `-c 32`, unix socket", "noloss",
                          NOLOSS_TARGET, setup=stock.redis_setup, needs=REDIS,
                          series=stock.series_redis(32)),
    # Sessions: a new client against a server already running, placed too;
    # the figure is the whole session's.
    "redis-session": Workload(stock.wl_redis_session, "GET/s", "higher",
                              "a new redis-benchmark `-c 1` session against a running redis-server",
                              "pair", SERVER_TARGET, pinnable=True, setup=stock.redis_setup,
                              needs=REDIS, sessions=True),
    "pg-session": Workload(stock.wl_pg_session, "SELECT tps", "higher",
                           "a new pgbench `-c 1 -S` session against a running PostgreSQL", "pair",
                           SERVER_TARGET, pinnable=True, setup=stock.pg_setup,
                           needs=(("pgbench", "postgresql"),), sessions=True),
    "udp-session": Workload(stock.wl_udp_session, "round trips/s", "higher",
                            "a new sockperf ping-pong session against a running sockperf server",
                            "pair", SERVER_TARGET, pinnable=True, setup=stock.sockperf_setup,
                            needs=(("sockperf", "sockperf"),), sessions=True),
}
# Each session's steady state, from stock.STEADY_AFTER_S into it to its end:
# the whole session's figure less what placing it costs (its first tenth of
# a second left to the kernel, then its trial's windows of the kernel's).
for _w in ("redis-session", "pg-session", "udp-session"):
    WORKLOADS[_w + "-steady"] = Workload(
        None, WORKLOADS[_w].metric, "higher",
        "%s, its steady state: from %g s into each session to its end" % (
            _w, stock.STEADY_AFTER_S), "pair", SERVER_TARGET, pinnable=True,
        part_of=(_w, "steady_value"), needs=WORKLOADS[_w].needs)


def missing_programs(workloads):
    missing = set()
    for w in workloads:
        for prog, pkg in WORKLOADS[w].needs:
            if prog == "pgbench":
                if not stock.pg_bindir():
                    missing.add((prog, pkg))
            elif not shutil.which(prog):
                missing.add((prog, pkg))
    return sorted(missing)

# --- system figures sampled around each run


def read_stat():
    cpus = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"^cpu(\d+) (.*)", line)
            if m:
                v = [int(x) for x in m.group(2).split()]
                idle = v[3] + v[4]
                cpus[int(m.group(1))] = (sum(v[:8]) - idle, sum(v[:8]))
    return cpus


def read_idle():
    res = {}
    base = "/sys/devices/system/cpu"
    for cpu in range(NCPU):
        d = "%s/cpu%d/cpuidle" % (base, cpu)
        if not os.path.isdir(d):
            continue
        for st in sorted(os.listdir(d)):
            try:
                name = open("%s/%s/name" % (d, st)).read().strip()
                res[(cpu, name)] = (int(open("%s/%s/time" % (d, st)).read()),
                                    int(open("%s/%s/usage" % (d, st)).read()),
                                    int(open("%s/%s/latency" % (d, st)).read()))
            except OSError:
                pass
    return res


FOREIGN_COMM = {}  # (pid, start time) -> comm, of the processes foreign_cpu() saw


def foreign_cpu():
    """CPU time (s) of every user process outside the harness's own tree, by
    (pid, start time): what else ran on the machine. Kernel threads are left
    out (ksoftirqd and kworkers also work for the workload)."""
    ticks = os.sysconf("SC_CLK_TCK")
    procs = {}
    comms = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                head, tail = f.read().rsplit(")", 1)
                fields = tail.split()
        except OSError:
            continue
        comms[int(d)] = head.split("(", 1)[-1]
        ppid, flags = int(fields[1]), int(fields[6])
        if flags & 0x00200000 or int(d) == 2 or ppid == 2:  # PF_KTHREAD
            continue
        procs[int(d)] = (ppid, int(fields[19]),
                         sum(int(x) for x in fields[11:15]) / ticks)
    ours, todo = set(), [os.getpid()]
    children = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        pid = todo.pop()
        ours.add(pid)
        todo += children.get(pid, [])
    FOREIGN_COMM.update({(pid, st): comms[pid] for pid, (_, st, _) in procs.items()
                         if pid not in ours})
    return {(pid, st): cpu for pid, (_, st, cpu) in procs.items() if pid not in ours}


def foreign_top(before, after, n=3):
    """The n other processes that ran most during a run: [[comm, CPU s]]."""
    used = sorted(((cpu - before.get(key, 0.0), key) for key, cpu in after.items()), reverse=True)
    return [[FOREIGN_COMM.get(key, "?"), round(cpu, 2)] for cpu, key in used[:n] if cpu > 0]


def foreign_load(before, after, secs):
    """CPUs' worth of other processes' work during a run. A process that ended
    during the run is counted by its parent's cutime, which then holds its
    whole life: the part seen before the run is taken off."""
    total = sum(cpu - before.get(key, 0.0) for key, cpu in after.items())
    total -= sum(cpu for key, cpu in before.items() if key not in after)
    return max(0.0, total) / secs


def energy_weight(name, exit_latency_us):
    """Power of an idle state relative to a busy CPU (documented in placed.conf(5))."""
    if name.upper() == "POLL":
        return 0.9
    if exit_latency_us <= 2:
        return 0.35
    if exit_latency_us <= 50:
        return 0.15
    return 0.05


def system_figures(stat0, stat1, idle0, idle1, secs):
    cpus = {}
    energy = 0.0
    for cpu in stat0:
        busy = stat1[cpu][0] - stat0[cpu][0]
        total = max(1, stat1[cpu][1] - stat0[cpu][1])
        busy_frac = busy / total
        states = {}
        entries = 0
        e = busy_frac
        for (c, name), (t1, u1, lat) in idle1.items():
            if c != cpu or (c, name) not in idle0:
                continue
            t0, u0, _ = idle0[(c, name)]
            frac = (t1 - t0) / (secs * 1e6)
            states[name] = round(frac, 4)
            entries += u1 - u0
            e += frac * energy_weight(name, lat)
        energy += e
        cpus[cpu] = {"busy": round(busy_frac, 4), "residency": states,
                     "idle_entries_per_s": round(entries / secs, 1)}
    return {"cpus": cpus, "energy_cpu_equiv": round(energy, 3)}


# --- placed under test


class Placed:
    """placed with one profile, its own journal in a private directory. stop()
    undoes whatever start() got to, also when start() was interrupted."""

    def __init__(self, args, profile, advise=False, base=False, extra=()):
        self.args, self.profile, self.advise = args, profile, advise
        # The baseline's own build and profiles: its profile keys are its own.
        self.src = args.baseline if base else SRC
        self.build = os.path.join(args.baseline, "build") if base else args.build
        self.extra = list(extra)
        self.proc = None
        self.log_name = None  # kept as OUT/logs/NAME with --keep-logs
        self.dir = tempfile.mkdtemp(prefix="placed-bench-")
        self.journal = os.path.join(self.dir, "journal")

    def start(self):
        args = self.args
        conf = os.path.join(self.dir, "placed.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\njournal_dir = %s\n" % self.journal)
        self.log = open(os.path.join(self.dir, "placed.log"), "w+")
        cmd = [os.path.join(self.build, "placed"), "--foreground", "--bus", "none",
               "--profile", self.profile, "--config", conf,
               "--profiles-dir", os.path.join(self.src, "conf", "profiles")] + (
                   ["--dry-run"] if self.advise else []) + self.extra + args.placed_arg
        # A kept log's lines start with CLOCK_MONOTONIC seconds, as results.json's
        # t0_monotonic_s: what placed did lines up with the run.
        env = dict(os.environ, PLACED_LOG_TIME="1") if args.keep_logs else None
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 10
        while True:
            self.log.seek(0)
            if "started" in self.log.read():
                break
            if self.proc.poll() is not None:
                raise RuntimeError("placed exited: " + open(self.log.name).read())
            if time.time() > deadline:
                raise RuntimeError("placed did not start within 10 s: " + open(self.log.name).read())
            time.sleep(0.05)
        time.sleep(args.settle)

    def check_alive(self):
        if self.proc.poll() is not None:
            raise RuntimeError("placed (%s) exited during the run, status %d:\n%s" % (
                self.profile, self.proc.returncode, open(self.log.name).read()[-3000:]))

    def cpu_s(self):
        """placed's CPU time so far, seconds."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def cpu_ns(self):
        """placed's CPU time so far, ns: the sum of its threads' schedstat
        (nanoseconds, where utime and stime count in clock ticks)."""
        total = 0
        d = "/proc/%d/task" % self.proc.pid
        for t in os.listdir(d):
            try:
                with open("%s/%s/schedstat" % (d, t)) as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass  # a thread that just ended
        return total

    def log_text(self, offset=0):
        """Its log from byte offset on."""
        self.log.flush()
        with open(self.log.name, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def log_size(self):
        return os.path.getsize(self.log.name)

    def usage(self):
        cpu_s = self.cpu_s()
        hwm = 0
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        self.log.seek(0)
        log = self.log.read()
        # What its trials concluded during the run (placed's own log lines).
        return {"placed_cpu_s": cpu_s, "placed_peak_rss_kib": hwm,
                "trials_kept": log.count("Keeping "),
                "trials_reverted": len(re.findall(r"to the kernel: .*did worse", log))}

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            subprocess.run([os.path.join(self.build, "placed"), "--restore", "--journal-dir",
                            self.journal], capture_output=True)
            if self.args.keep_logs and self.log_name:
                os.makedirs(os.path.join(self.args.out, "logs"), exist_ok=True)
                shutil.copy(self.log.name, os.path.join(self.args.out, "logs", self.log_name))
        shutil.rmtree(self.dir, ignore_errors=True)


PROFILES = ("power-first", "balanced", "latency-first")
# PROFILE-advise: placed in advise mode (--dry-run), its sampler and ticks
# running and nothing applied: what watching costs, apart from what placing
# does. Shown beside the rest, not judged against the targets.
ADVISE = "-advise"


BASE = "@base"  # a configuration run by the --baseline tree's placed


def placed_config(config):
    """(profile, advise, baseline) of a configuration that runs placed, else None."""
    base = config.endswith(BASE)
    if base:
        config = config[:-len(BASE)]
    if config in PROFILES:
        return config, False, base
    if config.endswith(ADVISE) and config[:-len(ADVISE)] in PROFILES:
        return config[:-len(ADVISE)], True, base
    return None


def run_one(args, config, workload, shared, rep=0):
    """One run: the workload's server (if any) first, then placed (for a
    profile), then the client. "kernel" is the kernel alone; "ceiling" is the
    kernel alone with the pair's tasks pinned by hand to one CPU, the next of
    args.ceiling_cpus at each repetition (one CPU's interrupts do not bias it).
    Returns a list of results: one, or one per session of a sessions workload
    (server and placed run args.session_idle seconds before the first
    client, and args.session_gap between the clients)."""
    wl = WORKLOADS[workload]
    pin = args.ceiling_cpus[rep % len(args.ceiling_cpus)] if config == "ceiling" else None
    placed = Placed(args, *placed_config(config), extra=wl.placed_args) \
        if placed_config(config) else None
    env = stock.Env(pin=pin, shared=shared, placed=placed)
    if placed:
        placed.log_name = "%s-%s-rep%d.log" % (workload, config, rep + 1)
    try:
        if wl.setup:
            wl.setup(args, env)
        if placed:
            placed.start()
        if not wl.sessions:
            return [measure(args, wl, env, placed)]
        time.sleep(args.session_idle)
        out = []
        for k in range(args.sessions):
            if k:
                time.sleep(args.session_gap)
            out.append(measure(args, wl, env, placed))
            out[-1]["session"] = k + 1
        return out
    finally:
        if placed:
            placed.stop()
        env.close()


def rotation(configs, rep):
    """The configurations' order in repetition rep: turned by one each time
    (two of them: ABBA)."""
    return configs[rep % len(configs):] + configs[:rep % len(configs)]


def switchback_run(args, w, configs, shared, results, added=()):
    """One run of workload w for all its repetitions, the configurations
    taking turns in blocks under it (switchback.py): each block's figure
    goes to results[w][config] as a run's would. Repetitions as separate
    runs get them: --reps, then up to --max-reps while a verdict is
    INCONCLUSIVE. Returns the repetitions run."""
    wl = WORKLOADS[w]
    configs = [c for c in configs if c != "ceiling" and runs_under(wl, c, added)]
    env = stock.Env(shared=shared)
    series = None
    try:
        if wl.setup:
            wl.setup(args, env)
        # Long enough for every repetition it may get, and a margin; stopped early.
        longest = max(args.reps, args.max_reps) * len(configs) * (args.block + 2) + 60
        series, period = wl.series(args, env, longest)
        time.sleep(args.warmup)
        rep = 0
        while True:
            for c in rotation(configs, rep):
                series.check_alive(w)
                start = time.monotonic()
                placed = Placed(args, *placed_config(c), extra=wl.placed_args) \
                    if placed_config(c) else None
                try:
                    if placed:
                        placed.log_name = "%s-%s-block%d.log" % (w, c, rep + 1)
                        placed.start()
                    time.sleep(max(0.0, start + args.block_settle - time.monotonic()))
                    win = Window(placed)
                    time.sleep(max(0.0, start + args.block - time.monotonic()))
                    res = win.end({"metric": wl.metric, "better": wl.better, "block": rep + 1})
                finally:
                    if placed:
                        placed.stop()
                res["value"], xs = switchback.block_mean(series.samples(), win.t0, win.t1, period)
                if res["value"] is None:
                    raise RuntimeError("%s printed no progress in a %.1f s block:\n%s" % (
                        w, win.t1 - win.t0, series.tail.decode(errors="replace")[-2000:]))
                res["samples"] = len(xs)
                # Each sample, to tell a level from a change within the block.
                res["block_samples"] = [round(v, 4) for v in xs]
                results[w][c].append(res)
                print("block %d %-12s %-14s %s %.4g (%d samples, others %.2f CPUs)" % (
                    rep + 1, w, c, wl.metric, res["value"], res["samples"],
                    res["foreign_cpus"]), flush=True)
            rep += 1
            if not (rep < args.reps or (rep < args.max_reps and
                                        undecided(results, configs, [w], w))):
                return rep
    finally:
        if series:
            series.stop()
        env.close()


class Window:
    """The machine's figures over a stretch of time, a run's or a switchback
    block's: made at its start, end() at its end puts them into a result
    (per-CPU busy time and idle states, other processes, placed's own CPU
    time and memory, the stretch's length)."""

    def __init__(self, placed):
        self.placed = placed
        self.foreign0 = foreign_cpu()
        self.placed_cpu0 = placed.cpu_s() if placed else 0.0
        self.stat0, self.idle0, self.t0 = read_stat(), read_idle(), time.monotonic()

    def end(self, res):
        self.t1 = time.monotonic()
        secs = self.t1 - self.t0
        placed_cpu1 = self.placed.cpu_s() if self.placed else 0.0
        res.update(system_figures(self.stat0, read_stat(), self.idle0, read_idle(), secs))
        foreign1 = foreign_cpu()
        res["foreign_cpus"] = round(foreign_load(self.foreign0, foreign1, secs), 3)
        res["foreign_top"] = foreign_top(self.foreign0, foreign1)
        res["wall_s"] = round(secs, 3)
        if self.placed:
            self.placed.check_alive()
            res.update(self.placed.usage())
            # During the stretch only: placed's start (loading the BPF
            # sampler) comes before and is not the workload's cost.
            res["placed_cpu_pct_of_machine"] = round(
                100 * (placed_cpu1 - self.placed_cpu0) / (secs * NCPU), 3)
        return res


def measure(args, wl, env, placed):
    """The workload's run and, around it, the machine's figures."""
    win = Window(placed)
    res = win.end(wl.run(args, env))
    if env.pin is not None:
        res["ceiling_cpu"] = env.pin
    if res["value"] is None:
        res["value"] = res["energy_cpu_equiv"]
    return res


def ratios(results, w, c, base="kernel"):
    """Per repetition, this configuration against the base: above 1 is better."""
    better = WORKLOADS[w].better
    return [(b / v if better == "lower" else v / b)
            for b, v in zip([r["value"] for r in results[w][base]],
                            [r["value"] for r in results[w][c]]) if v and b]


def summarize(results, configs, workloads):
    summary = {}
    for w in workloads:
        summary[w] = {}
        for c in configs:
            if not results[w].get(c):
                continue
            vals = [r["value"] for r in results[w][c]]
            s = {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}
            if results[w].get("kernel") and c != "kernel":
                rs = ratios(results, w, c)
                s["speedup_median"] = statistics.median(rs) if rs else None
                s["speedup_min"] = min(rs) if rs else None
                s["speedup_max"] = max(rs) if rs else None
            summary[w][c] = s
        judge(summary[w], results, w)
    return summary


CI_LEVEL = 0.95  # confidence of the interval a speed-up target is judged on


def t_cdf(x, df):
    """Student's t distribution with df degrees of freedom, P(T <= x):
    its density integrated by Simpson's rule from 0 (ample for the
    quantiles and powers here, df >= 1)."""
    if x < 0:
        return 1 - t_cdf(-x, df)
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    n = 2000  # even
    h = x / n
    area = sum((1 if k in (0, n) else 4 if k % 2 else 2) *
               (1 + (k * h) ** 2 / df) ** (-(df + 1) / 2) for k in range(n + 1))
    return 0.5 + c * area * h / 3


@functools.lru_cache(maxsize=None)
def t_quantile(p, df):
    """The x with t_cdf(x, df) = p, by bisection (each verdict, its power and
    every --max-reps check ask for the same few: kept)."""
    lo, hi = -1e3, 1e3
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def ratio_interval(rs, level=CI_LEVEL):
    """The geometric mean of the per-repetition ratios rs and its Student-t
    interval at this level, from the mean and spread of their logarithms
    (the switchback trial's own estimator, lib/policy-trial.c). Returns
    (gmean, low, high, se, df); with fewer than two ratios there is no
    spread and no interval: low and high are None."""
    logs = [math.log(r) for r in rs]
    n = len(logs)
    mean = statistics.fmean(logs)
    if n < 2:
        return math.exp(mean), None, None, None, 0
    se = statistics.stdev(logs) / math.sqrt(n)
    half = t_quantile(1 - (1 - level) / 2, n - 1) * se
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half), se, n - 1


def no_loss_power(se, df, target, level=CI_LEVEL):
    """The chance that a placed exactly as fast as the kernel (1.00x) is
    shown no worse than target (the interval wholly at or above it) with
    this many repetitions and this spread: what a PASS could be expected
    from, and what an INCONCLUSIVE says (low power: more repetitions)."""
    if not se:
        return 1.0 if se == 0 else 0.0
    return 1 - t_cdf(t_quantile(1 - (1 - level) / 2, df) + math.log(target) / se, df)


POWER_WANTED = 0.8  # the power a repetition count is planned for (reps_for_power)


def reps_for_power(sd, target, power=POWER_WANTED, level=CI_LEVEL):
    """How many repetitions a placed exactly as fast as the kernel would need
    to come out PASS against target with this power, where one repetition's
    log ratio spreads by sd: what an INCONCLUSIVE would take to decide, at
    its own spread (no_loss_power, searched by bisection; past 200 degrees
    of freedom the t quantile of 200 stands in, a shade high). None where
    no count of a million does."""
    if not sd:
        return 2

    def enough(n):
        return no_loss_power(sd / math.sqrt(n), min(n - 1, 200), target, level) >= power
    lo, hi = 2, 1_000_000
    if not enough(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return lo


def median_interval(xs, level=CI_LEVEL):
    """A distribution-free confidence interval of the median of xs (the sign
    test's), for placed's own cost at scale: the order statistics x_(k) and
    x_(n+1-k) of the sorted values, with the largest k whose coverage
    1 - 2 P(B <= k - 1), B ~ Bin(n, 1/2), is at least level. With too few
    values for that (fewer than 6 for 95%), min and max, which cover less.
    Returns (low, high, coverage)."""
    xs = sorted(xs)
    n = len(xs)

    def below(k):  # coverage of [x_(k), x_(n+1-k)]
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= (n + 1) // 2 and below(k + 1) >= level:
        k += 1
    return xs[k - 1], xs[n - k], below(k)


def undecided(results, configs, workloads, w):
    """Whether a speed-up verdict of w (or of a workload that is part of its
    runs) is INCONCLUSIVE on the repetitions so far: another one may decide."""
    parts = [x for x in workloads if x == w or (WORKLOADS[x].part_of or ("",))[0] == w]
    fill_parts(results, parts)
    summary = summarize(results, configs, parts)
    return any(s.get("verdict") == "INCONCLUSIVE"
               for x in parts for s in summary[x].values() if isinstance(s, dict))


def judge_speedup(s, rs, target, above=False):
    """A speed-up target judged on the 95% interval of the geometric mean of
    the per-repetition ratios rs (ratio_interval), not on a point figure:
    PASS when all of it is at or above the target, FAIL when all of it is
    below, INCONCLUSIVE when the target is inside it (identical runs vary
    more than the difference; more repetitions decide) or with fewer than
    two repetitions. INCONCLUSIVE is not a pass. With above (a gain is the
    target), PASS needs all of it above the target and FAIL is all of it at
    or below. Also gives the power: the chance a 1.00x placed would have
    come out PASS against the no-loss target with this many repetitions
    and this spread, and, where undecided, the repetitions that would give
    it POWER_WANTED (reps_for_power)."""
    gmean, lo, hi, se, df = ratio_interval(rs)
    s["speedup_gmean"] = gmean
    s["n_pairs"] = len(rs)
    if lo is None:
        s["verdict"] = "INCONCLUSIVE"
        s["pass"] = False
        return
    s["speedup_ci"] = [lo, hi]
    # What the interval could tell apart: half its width, as a speed-up.
    s["resolution"] = round((hi - lo) / 2, 4)
    s["power"] = round(no_loss_power(se, df, NOLOSS_TARGET), 3)
    if (lo > target + EPS) if above else (lo >= target - EPS):
        s["verdict"] = "PASS"
    elif (hi <= target + EPS) if above else (hi < target - EPS):
        s["verdict"] = "FAIL"
    else:
        s["verdict"] = "INCONCLUSIVE"
        s["reps_needed"] = reps_for_power(se * math.sqrt(len(rs)), NOLOSS_TARGET)
    s["pass"] = s["verdict"] == "PASS"


def share_of_ceiling(s, results, w, c, ceil):
    """placed's gain as a share of the ceiling's: of the medians, and the
    worst repetition's own (of those whose ceiling gained enough)."""
    s["share_of_ceiling_gain"] = (s["speedup_median"] - 1) / (ceil - 1)
    per_rep = [(p - 1) / (q - 1) for p, q in zip(ratios(results, w, c),
                                                   ratios(results, w, "ceiling"))
               if q >= MIN_CEILING_GAIN]
    s["share_min"] = min(per_rep) if per_rep else None


def judge(sw, results, w):
    """Against the workload's target, per profile: the share of the ceiling's
    gain, (placed/kernel - 1) / (ceiling/kernel - 1) of the medians (and the
    worst repetition's own share), or the speed-up over the kernel alone
    (judge_speedup). A workload judged on its speed-up that has a ceiling
    (the stream, mixed's pairs) shows the share too, when the ceiling
    gains enough for it to mean something."""
    wl = WORKLOADS[w]
    ceil = sw.get("ceiling", {}).get("speedup_median")
    for c in PROFILES:
        s = sw.get(c)
        if not s or s.get("speedup_median") is None or not wl.kind:
            continue
        if wl.kind != "noloss" and ceil is not None and ceil < MIN_CEILING_GAIN:
            # Pinning by hand gains nothing here (a pair, or mixed's pairs on
            # two CPUs beside hackbench: 0.71x): no placer can, the share is
            # meaningless, and placed must simply not lose.
            s["target"] = "ceiling gains < %d%%: >= %.2fx kernel" % (
                round(100 * (MIN_CEILING_GAIN - 1)), NOLOSS_TARGET)
            judge_speedup(s, ratios(results, w, c), NOLOSS_TARGET)
        elif wl.kind in ("noloss", "gain"):
            if wl.kind == "gain":
                s["target"] = "> %.2fx kernel" % wl.target
            else:
                s["target"] = ">= %.2fx kernel" % wl.target
            judge_speedup(s, ratios(results, w, c), wl.target, above=wl.kind == "gain")
            if ceil is not None and ceil >= MIN_CEILING_GAIN:
                share_of_ceiling(s, results, w, c, ceil)
        elif ceil is None:
            # No hand pinning to compare with (a switchback, or --configs
            # without ceiling): placed must at least not lose.
            s["target"] = "no ceiling measured: >= %.2fx kernel" % NOLOSS_TARGET
            judge_speedup(s, ratios(results, w, c), NOLOSS_TARGET)
        else:
            share_of_ceiling(s, results, w, c, ceil)
            if wl.target is None:
                s["target"] = "none (share shown: the run includes placed's first ticks)"
            else:
                s["target"] = ">= %d%% of ceiling gain" % round(100 * wl.target)
                s["pass"] = s["share_of_ceiling_gain"] >= wl.target - EPS
                s["verdict"] = "PASS" if s["pass"] else "FAIL"


def fmt_val(v):
    """Three or four significant digits, thousands as k and millions as M."""
    if abs(v) >= 1e6:
        return "%.3gM" % (v / 1e6)
    if abs(v) >= 1e4:
        return "%.3gk" % (v / 1e3)
    return "%.4g" % v


# Time to place a pair: a median and a worst over the runs, seconds. A new
# connection that gains 3-7x packed loses most of that gain for every second
# it waits, so a client is placed within a quarter of a second.
PLACE_MEDIAN_S = 0.25
PLACE_WORST_S = 0.5


def placed_after(runs):
    """Cell text and verdict input for one workload and profile: the median
    and worst time to place over the runs, how many never were."""
    t = [r.get("packed_after_s") for r in runs]
    got = [x for x in t if x is not None]
    never = len(t) - len(got)
    undone = sum(r.get("packed_undone", 0) for r in runs)
    if not got:
        return "never", None, None, never
    median = statistics.median(got)
    text = "%.2f s, worst %.2f s" % (median, max(got))
    if never:
        text += ", %d of %d never" % (never, len(t))
    if undone:
        text += ", undone %d times" % undone
    return text, median, max(got), never


def packing_speed(args, results, configs, workloads):
    """How soon each profile placed each pair-like workload: seconds from the
    pair's start (a server's: its client's; a session's: its own) until both
    its tasks were allowed on one and the same CPU (every pair's, for
    several pairs), median and worst over the runs. Pairs (kind pair or
    gain) are held to a median of PLACE_MEDIAN_S and a worst of
    PLACE_WORST_S, placed in every run; the others (the stream) are
    shown."""
    rows = []
    for w in workloads:
        if WORKLOADS[w].part_of:
            continue
        for c in configs:
            if not placed_config(c) or placed_config(c)[1] or not results[w].get(c):
                continue
            if not any("packed_after_s" in r for r in results[w][c]):
                continue
            text, median, worst, never = placed_after(results[w][c])
            if WORKLOADS[w].kind in ("pair", "gain"):
                ok = (worst is not None and never == 0 and median <= PLACE_MEDIAN_S and
                      worst <= PLACE_WORST_S)
                target = "median <= %.2f s, worst <= %.2f s **%s**" % (
                    PLACE_MEDIAN_S, PLACE_WORST_S, "PASS" if ok else "FAIL")
            else:
                target = "none (shown)"
            rows.append("| %s | %s | %s | %s |" % (w, c, text, target))
    if not rows:
        return []
    return ["", "## Time to place", "",
            "Seconds from a pair's start (a server's pair: its client's start; a session: the "
            "session's start; several pairs: until the last was placed) until both its tasks "
            "were allowed on one and the same CPU, polled every %d ms in every configuration; "
            "median and worst over the runs. Pairs are held to a median of %.2f s and a worst "
            "of %.2f s, placed in every run; the stream is shown. \"never\": not while the run "
            "lasted; \"undone\": placed, later not." % (round(1000 * watch.POLL_S),
                                                           PLACE_MEDIAN_S, PLACE_WORST_S), "",
            "| workload | profile | placed after | target |", "|---|---|---|---|"] + rows


# A placement that stopped helping is handed back within this long (issue 37).
HAND_BACK_S = 2.0


def contention_began(run):
    """Seconds into the run the contention began: mixed, when hackbench's
    messaging did (its tasks forked and released; older results: when
    hackbench started, its setup included)."""
    return run.get("messaging_after_s", run["contended_after_s"])


def handed_back(run):
    """Seconds from the contention's start (contention_began) until the
    run's pairs were handed back for good (their last unpack, every pair
    unpacked at the end); "kept": a pair still packed at the end; None: none
    was packed when the contention began."""
    last, at_end = run.get("unpacked_last_each_s") or [], run.get("packed_at_end") or []
    if any(at_end):
        return "kept"
    c = contention_began(run)
    if not last or any(t is None or t < c for t in last):
        return None
    return max(last) - c


def hand_back_speed(results, configs, workloads):
    """How soon each profile handed a pair back once a contention began
    (contention_began; mixed: hackbench beside a pair placed alone): median and worst
    over the runs that had it packed then, how many kept it to the end, and
    how many runs were within HAND_BACK_S. Shown, not judged: beside
    hackbench packing sometimes does help (a re-check may keep it)."""
    rows = []
    for w in workloads:
        if WORKLOADS[w].part_of:
            continue
        for c in configs:
            ran = [r for r in results[w].get(c) or [] if "contended_after_s" in r]
            if not placed_config(c) or placed_config(c)[1] or not ran:
                continue
            got = [handed_back(r) for r in ran]
            secs = sorted(x for x in got if isinstance(x, float))
            kept, none = got.count("kept"), got.count(None)
            text = "%.2f s, worst %.2f s, within %.0f s in %d of %d" % (
                statistics.median(secs), secs[-1], HAND_BACK_S,
                sum(x <= HAND_BACK_S for x in secs), len(secs)) if secs else "none"
            setup = [r["messaging_after_s"] - r["contended_after_s"] for r in ran
                     if "messaging_after_s" in r]
            rows.append("| %s | %s | %s | %d | %d | %s |" % (
                w, c, text, kept, none,
                "%.2f s" % statistics.median(setup) if setup else "–"))
    if not rows:
        return []
    return ["", "## Hand-back under contention", "",
            "Seconds from the contention's start (mixed: when hackbench's messaging began, "
            "its tasks forked and released, beside pairs placed alone) until the pairs were "
            "handed back for good (their last unpack, polled every %d ms), median and worst "
            "over the runs that had them packed then; \"kept\": still packed at the end; "
            "\"not packed\": not packed when it began; \"setup\": the median time hackbench "
            "took to fork its tasks before that. Shown: a placement that stopped helping "
            "should be handed back within %.0f s." % (round(1000 * watch.POLL_S), HAND_BACK_S),
            "", "| workload | profile | handed back after | kept | not packed | setup |",
            "|---|---|---|---|---|---|"] + rows


def pairs_table(results, configs, workloads):
    """For the workloads of several pairs: CPUs touched, busy CPU-seconds and
    energy per round trip over the measured window, per configuration
    (median, min-max)."""
    ws = [w for w in workloads if any("cpus_touched" in r for c in configs
                                      for r in results[w].get(c, []))]
    if not ws:
        return []
    lines = ["", "## Pairs: CPUs touched, busy time and energy per round trip", "",
             "Over the measured window (after the warm-up): the CPUs the pairs' tasks ran on "
             "(field 39 of /proc/TID/stat, the CPU each ran on last, at polls every %d ms: a "
             "lower bound), busy CPU-seconds of the whole machine (/proc/stat) and the energy "
             "estimate divided by the round trips (microseconds of one busy CPU per round "
             "trip; the model of the per-CPU figures below). Median (min–max) over the "
             "runs." % round(1000 * watch.POLL_S), "",
             "| workload | config | pairs | round trips/s | CPUs touched | busy CPU-s | "
             "energy est. per round trip (CPU-µs) |", "|---|---|---|---|---|---|---|"]

    def mm(vals, f):
        vals = [v for v in vals if v is not None]
        if not vals:
            return "–"
        return "%s (%s–%s)" % (f(statistics.median(vals)), f(min(vals)), f(max(vals)))
    for w in ws:
        for c in configs:
            runs = results[w].get(c)
            if not runs:
                continue
            lines.append("| %s | %s | %d | %s | %s | %s | %s |" % (
                w, c, runs[0].get("pairs", 1), mm([r["value"] for r in runs], fmt_val),
                mm([r.get("cpus_touched") for r in runs], lambda v: "%g" % v),
                mm([r.get("busy_cpu_s") for r in runs], lambda v: "%.2f" % v),
                mm([r.get("energy_us_per_round_trip") for r in runs], lambda v: "%.2f" % v)))
    return lines


SCALE_TICK_MS = 50  # at 10,000 threads / 2,000 pairs: a tick takes at most this
SCALE_CPU_PCT = 1.0  # ... placed uses at most this share of one CPU
SCALE_RSS_MB = 64  # ... and at most this peak RSS
HACKBENCH_CPU_PCT = 0.5  # beside 1,600 hackbench tasks: placed's share of one CPU
SCALE_TARGET_THREADS = 10000


def judge_cost(values, limit):
    """A cost limit judged like a speed-up target, on the interval of the
    median: PASS when all of it is at or under the limit, FAIL when all of
    it is over, else INCONCLUSIVE. Returns (verdict, low, high, coverage)."""
    lo, hi, cov = median_interval(values)
    if hi <= limit + EPS:
        return "PASS", lo, hi, cov
    if lo > limit + EPS:
        return "FAIL", lo, hi, cov
    return "INCONCLUSIVE", lo, hi, cov


def scale_rows(results, configs, workloads):
    """(workload, config, runs) of placed's cost at scale, by size."""
    ws = sorted([w for w in workloads if WORKLOADS[w].placed_only],
                key=lambda w: (w == "scale-hackbench", int(w.split("-")[1])
                               if w.split("-")[1].isdigit() else 0))
    return [(w, c, results[w][c]) for w in ws for c in configs if results[w].get(c)]


def scale_section(results, configs, workloads):
    rows = scale_rows(results, configs, workloads)
    if not rows:
        return []
    have_ticks = all(r.get("tick_lines") for _, _, runs in rows for r in runs)
    lines = ["", "## placed's own cost at scale", "",
             "placed beside `scale` (THREADS threads, a fifth of them in "
             "pairs handing a futex token back and forth, the rest asleep) and beside hackbench; "
             "each size its own run, placed started after the workload. Over the window after "
             "the warm-up: placed's CPU time (its threads' schedstat) as a share of one CPU, and "
             "per tick (over the ticks in the window); the tick's phases and its worst from "
             "placed's `Tick:` lines; peak RSS (VmHWM at the run's end). Median (min–max) over "
             "the runs; worst tick over all; \"from start\" includes the first ticks. The wake "
             "sampler's BPF time runs in the woken tasks' context and is not in these figures. "
             "At `--log-level debug` (`--scale-log-level`; needed for the Tick lines) placed "
             "also writes a line for every group it leaves to the kernel, each tick: its "
             "figures include that logging (log lines/s).", ""]
    if not have_ticks:
        lines += ["**placed logged no `Tick:` line in %s** (this build of placed does not "
                  "write it): the tick's phases and worst tick are not known; CPU per tick is "
                  "the mean from /proc." % ("some runs" if any(
                      r.get("tick_lines") for _, _, runs in rows for r in runs) else "any run"),
                  ""]
    lines += ["| workload | config | threads | pairs | tasks | groups | placed CPU, % of one CPU "
              "| CPU per tick | tick: sample / model / decide / apply | tick, worst (from start) "
              "| peak RSS | log lines/s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def med(runs, key, f="%.1f"):
        vals = [r[key] for r in runs if r.get(key) is not None]
        return f % statistics.median(vals) if vals else "–"
    for w, c, runs in rows:
        cpu = [r["value"] for r in runs]
        phases = " / ".join(med(runs, "tick_%s_ms" % ph, "%.2f") for ph in cost.TICK_PHASES)
        worst = [r["tick_max_ms"] for r in runs if "tick_max_ms" in r]
        start = [r["tick_max_ms_from_start"] for r in runs if "tick_max_ms_from_start" in r]
        lines.append("| %s | %s | %d | %d | %s | %s | %.3f%% (%.3f–%.3f) | %s ms | %s ms | %s | "
                     "%.1f MB | %s |" % (
                         w, c, runs[0]["threads"], runs[0]["pairs"], med(runs, "tasks", "%d"),
                         med(runs, "groups", "%d"), statistics.median(cpu), min(cpu), max(cpu),
                         med(runs, "cpu_ms_per_tick", "%.2f"), phases,
                         "%s, %.1f (%.1f) ms" % (med(runs, "tick_total_ms", "%.2f"), max(worst),
                                                 max(start)) if worst else "–",
                         max(r.get("placed_peak_rss_kib", 0) for r in runs) / 1024,
                         med(runs, "log_lines_per_s", "%.0f")))
    return lines + scale_targets(rows)


def cpu_row(w, c, cpu, limit, tag):
    """A row of the targets' table: placed's CPU share against a limit."""
    v, lo, hi, cov = judge_cost(cpu, limit)
    return "| %s | %s | placed CPU <= %g%% of one CPU | %.3f%% [%.3f–%.3f%s] | %s |" % (
        w, c, limit, statistics.median(cpu), lo, hi,
        "" if cov >= CI_LEVEL - EPS else ", covers %d%%" % int(100 * cov), tag(v))


def scale_targets(rows):
    """The targets of placed's own cost, per profile (advise mode shown, not judged)."""
    out = []
    for w, c, runs in rows:
        judged = c in PROFILES
        tag = (lambda v: "**%s**" % v) if judged else (lambda v: "(%s; shown, not judged)" % v)
        cpu = [r["value"] for r in runs]
        if w == "scale-%d" % SCALE_TARGET_THREADS:
            out.append(cpu_row(w, c, cpu, SCALE_CPU_PCT, tag))
            worst = [r.get("tick_max_ms") for r in runs]
            if None not in worst:
                v = "PASS" if max(worst) <= SCALE_TICK_MS + EPS else "FAIL"
                out.append("| %s | %s | a tick <= %d ms | worst %.1f ms (Tick lines) | %s |" % (
                    w, c, SCALE_TICK_MS, max(worst), tag(v)))
            else:
                mean = statistics.median(r["cpu_ms_per_tick"] for r in runs)
                v = "FAIL" if mean > SCALE_TICK_MS + EPS else "not judged"
                out.append("| %s | %s | a tick <= %d ms | no Tick line; CPU per tick %.1f ms "
                           "on average | %s |" % (w, c, SCALE_TICK_MS, mean,
                                                  tag(v) if v == "FAIL" else v))
            rss = max(r.get("placed_peak_rss_kib", 0) for r in runs) / 1024
            v = "PASS" if rss <= SCALE_RSS_MB + EPS else "FAIL"
            out.append("| %s | %s | peak RSS <= %d MB | %.1f MB, worst run | %s |" % (
                w, c, SCALE_RSS_MB, rss, tag(v)))
        elif w == "scale-hackbench":
            out.append(cpu_row(w, c, cpu, HACKBENCH_CPU_PCT, tag))
    if not out:
        return []
    return ["", "Against the cost targets (at %d threads / %d pairs, and beside hackbench): "
            "the CPU share judged on the interval of its median over the runs (in square "
            "brackets; PASS when all of it is at or under the limit, FAIL when all of it is "
            "over, else INCONCLUSIVE), the tick on its worst, the RSS on its worst run." % (
                SCALE_TARGET_THREADS, SCALE_TARGET_THREADS // 5), "",
            "| workload | config | target | measured | verdict |", "|---|---|---|---|---|"] + out


def plot_scale(out, results, configs, workloads):
    """scale.png: placed's CPU per tick against the tasks it watched, per
    configuration (tasks from its Tick lines, else the workload's threads)."""
    rows = [(w, c, runs) for w, c, runs in scale_rows(results, configs, workloads)
            if w != "scale-hackbench"]
    if not rows or not shutil.which("gnuplot"):
        return
    cs = [c for c in configs if any(c == rc for _, rc, _ in rows)]
    data = os.path.join(out, "scale.dat")
    points = {}
    for w, c, runs in rows:
        tasks = statistics.median(r.get("tasks") or r["threads"] for r in runs)
        points.setdefault(tasks, {})[c] = statistics.median(r["cpu_ms_per_tick"] for r in runs)
    with open(data, "w") as f:
        f.write("tasks " + " ".join(cs) + "\n")
        for tasks in sorted(points):
            f.write("%g %s\n" % (tasks, " ".join("%.4f" % points[tasks][c] if c in points[tasks]
                                                   else "NaN" for c in cs)))
    script = """set terminal pngcairo size 900,500
set output '%s'
set title "placed's CPU time per tick against the tasks it watches (median of the runs)"
set xlabel "tasks (placed's Tick line; without it, the workload's threads)"
set ylabel 'CPU per tick (ms)'
set grid
set key top left
set datafile missing 'NaN'
set arrow from graph 0, first %d to graph 1, first %d nohead dashtype 2
set label 'target at 10,000 threads: a tick <= %d ms' at graph 0.02, first %d offset 0,0.7
plot for [i=2:%d] '%s' using 1:i with linespoints title columnheader(i)
""" % (os.path.join(out, "scale.png"), SCALE_TICK_MS, SCALE_TICK_MS, SCALE_TICK_MS, SCALE_TICK_MS,
       len(cs) + 1, data)
    subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)


def needs(s):
    """An undecided verdict's cell: the repetitions it would need (reps_for_power;
    judge_speedup gives them to INCONCLUSIVE verdicts only)."""
    if "reps_needed" not in s:
        return ""
    if s["reps_needed"] is None:
        return "; power %.1f needs over a million reps" % POWER_WANTED
    return "; power %.1f needs %d reps" % (POWER_WANTED, s["reps_needed"])


def write_report(out, args, results, summary, configs, workloads, took):
    lines = ["# placed benchmark", "",
             "`%s` on %d CPUs, %s, cpuidle driver %s; %d repetitions, configurations alternated; "
             "took %s." % (" ".join(sys.argv), NCPU, os.uname().release, cpuidle_driver(),
                            args.reps, hms(took)), "",
             "Speed-up (bold) is the median over repetitions of (kernel alone / run) for times "
             "and (run / kernel alone) for rates: above 1 is better than the kernel alone. "
             "*ceiling* is the kernel alone with the pair's two sides (server and client) pinned "
             "by hand to one CPU (CPU %s, one after the other by repetition), placed not running; "
             "only pair-like workloads have one (several pairs: pair i on the i-th CPU from "
             "there; mixed's hackbench is not pinned)." % ", ".join(map(str, args.ceiling_cpus)),
             ""]
    if args.switchback and any(WORKLOADS[w].series for w in workloads):
        lines += ["Switchback (%s): each ran once, the configurations taking turns under it in "
                  "%g s blocks in the order above, placed started and stopped for each of its "
                  "blocks; a block's figure leaves out its first %g s; a repetition is one block "
                  "of each configuration, and a block is paired with the kernel's of the same "
                  "repetition (tests/bench/switchback.py)." % (
                      ", ".join(w for w in workloads if WORKLOADS[w].series), args.block,
                      args.block_settle), ""]
    if any(WORKLOADS[w].sessions for w in workloads):
        lines += ["Sessions (*-session): the server and placed ran %g s, then %d clients one "
                  "after the other (%g s apart), each a new connection for a %g s session; each "
                  "session is a figure of its own (over its whole length, nothing left out), "
                  "paired with the same session of the other configurations; *-session-steady: "
                  "the same sessions from %g s into them to their end, their steady state." % (
                      args.session_idle, args.sessions, args.session_gap, args.session_seconds,
                      stock.STEADY_AFTER_S),
                  ""]
    own = [w for w in workloads if not WORKLOADS[w].part_of]  # each run once
    bg = [r["foreign_cpus"] for w in own for c in configs for r in results[w].get(c, [])]
    if bg:
        who = {}
        for w in own:
            for c in configs:
                for r in results[w].get(c, []):
                    for comm, cpu_s in r.get("foreign_top", []):
                        who[comm] = who.get(comm, 0.0) + cpu_s
        top = sorted(who.items(), key=lambda x: -x[1])[:3]
        lines += ["Other processes on the machine used a median %.2f, at most %.2f CPUs' worth "
                  "during the runs%s" % (statistics.median(bg), max(bg),
                                         "." if max(bg) < 0.05 else
                                         ": **the machine was not idle, the figures are "
                                         "disturbed** (per run: results.json, foreign_cpus%s)." % (
                                             "; most: " + ", ".join(
                                                 "%s %.1f CPU-s" % t for t in top) if top else "")),
                  ""]
    lines += ["| workload | metric | " + " | ".join(configs) + " |",
              "|---|---|" + "---|" * len(configs)]
    for w in workloads:
        cells = []
        for c in configs:
            s = summary[w].get(c)
            if not s:
                cells.append("–")
                continue
            cell = "%s (%s–%s)" % (fmt_val(s["median"]), fmt_val(s["min"]), fmt_val(s["max"]))
            if s.get("speedup_median"):
                cell += " **%.2fx**" % s["speedup_median"]
            cells.append(cell)
        lines.append("| %s | %s | %s |" % (w, WORKLOADS[w].metric, " | ".join(cells)))

    profiles = [c for c in configs if c in PROFILES]
    judged = [w for w in workloads if WORKLOADS[w].kind]
    if profiles and judged and "kernel" in configs:
        lines += ["", "## Against the targets", "",
                  "Pair-like workloads: placed's gain as a share of the ceiling's gain, "
                  "(placed/kernel - 1) / (ceiling/kernel - 1) of the median speed-ups, the "
                  "worst repetition's own share in brackets (of the repetitions whose ceiling "
                  "gained %d%% or more), PASS/FAIL of that median share against the target. "
                  "Others, and pair-like workloads whose ceiling gains less: the geometric "
                  "mean of the per-repetition speed-ups over the kernel alone and, in square "
                  "brackets, its %d%% Student-t interval (from the mean and spread of their "
                  "logarithms). PASS when all of the interval is at or above the target, "
                  "FAIL when all of it is below, INCONCLUSIVE (not a pass) when the target is "
                  "inside it or there was one repetition: identical runs varied more than the "
                  "difference, and more repetitions decide. *power*: the chance that a placed "
                  "exactly as fast as the kernel (1.00x) comes out PASS against %.2fx with "
                  "that many repetitions and that spread; where undecided, how many "
                  "repetitions at that spread would give it power %.1f." % (
                      round(100 * (MIN_CEILING_GAIN - 1)), round(100 * CI_LEVEL),
                      NOLOSS_TARGET, POWER_WANTED), "",
                  "| workload | target | ceiling | " + " | ".join(profiles) + " |",
                  "|---|---|---|" + "---|" * len(profiles)]
        for w in judged:
            ceil = summary[w].get("ceiling", {}).get("speedup_median")
            target = next((summary[w][c]["target"] for c in profiles
                           if summary[w].get(c, {}).get("target")), "–")
            cells = []
            for c in profiles:
                s = summary[w].get(c, {})
                if s.get("speedup_median") is None:
                    cells.append("–")
                    continue
                cell = "%.2fx" % s.get("speedup_gmean", s["speedup_median"])
                if "share_of_ceiling_gain" in s:
                    cell += ", %.1f%%" % (100 * s["share_of_ceiling_gain"])
                    if s.get("share_min") is not None:
                        cell += " (%.1f%%)" % (100 * s["share_min"])
                if "speedup_ci" in s:
                    cell += " [%.2f–%.2fx]" % tuple(s["speedup_ci"])
                if "verdict" in s:
                    cell += " **%s**" % s["verdict"]
                    if "resolution" in s:
                        cell += " at %d reps (+-%.3f, power %.2f%s)" % (
                            s["n_pairs"], s["resolution"], s["power"], needs(s))
                    elif "n_pairs" in s:
                        cell += " at %d rep" % s["n_pairs"]
                cells.append(cell)
            lines.append("| %s | %s | %s | %s |" % (w, target, "%.2fx" % ceil if ceil else "–",
                                                    " | ".join(cells)))

    lines += packing_speed(args, results, configs, workloads)
    lines += hand_back_speed(results, configs, workloads)
    lines += pairs_table(results, configs, workloads)
    lines += scale_section(results, configs, workloads)
    lines += ["", "## Workloads", ""]
    for w in workloads:
        lines.append("- **%s**: %s (%s, %s is better)" % (w, WORKLOADS[w].label, WORKLOADS[w].metric,
                                                       WORKLOADS[w].better))
    lines += ["", "## Per-CPU figures (median repetition)", "",
              "| workload | config | busy per CPU | deepest-state residency per CPU | idle entries/s per CPU | energy est. (CPU-equiv.) | placed CPU % | placed peak RSS KiB | other processes (CPUs) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for w in workloads:
        if WORKLOADS[w].part_of:
            continue
        for c in configs:
            if not results[w].get(c):
                continue
            runs = sorted(results[w][c], key=lambda r: r["value"])
            r = runs[len(runs) // 2]
            busy = " ".join("%.2f" % r["cpus"][k]["busy"] for k in sorted(r["cpus"]))
            deep = " ".join("%.2f" % (list(r["cpus"][k]["residency"].values())[-1]
                                      if r["cpus"][k]["residency"] else 0) for k in sorted(r["cpus"]))
            ent = " ".join("%.0f" % r["cpus"][k]["idle_entries_per_s"] for k in sorted(r["cpus"]))
            lines.append("| %s | %s | %s | %s | %s | %.2f | %s | %s | %.2f |" % (
                w, c, busy, deep, ent, r["energy_cpu_equiv"],
                r.get("placed_cpu_pct_of_machine", "–"), r.get("placed_peak_rss_kib", "–"),
                r["foreign_cpus"]))
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def cpuidle_driver():
    try:
        with open("/sys/devices/system/cpu/cpuidle/current_driver") as f:
            return f.read().strip()
    except OSError:
        return "none"


def hms(secs):
    return "%d min %02d s" % (secs // 60, secs % 60)


def write_planner(out, cases):
    if not cases:
        return
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n".join(cost.planner_lines(cases)) + "\n")


def plot(out, summary, configs, workloads):
    if not shutil.which("gnuplot"):
        return
    data = os.path.join(out, "speedup.dat")
    with open(data, "w") as f:
        f.write("workload " + " ".join(c for c in configs if c != "kernel") + "\n")
        for w in workloads:
            f.write(w + " " + " ".join(
                "%.4f" % summary[w][c]["speedup_median"]
                if summary[w].get(c, {}).get("speedup_median") else "NaN"  # no bar
                for c in configs if c != "kernel") + "\n")
    n = len([c for c in configs if c != "kernel"])
    lows = [summary[w][c]["speedup_median"] for w in workloads for c in configs
            if summary[w].get(c, {}).get("speedup_median")]
    low = min([0.5] + [0.9 * x for x in lows])
    script = """set terminal pngcairo size 900,500
set output '%s'
set title 'speed-up over the kernel alone: placed per profile, the hand-pinned ceiling (median, >1 is better)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y 2
set yrange [%g:*]
set ylabel 'speed-up (log scale)'
set grid ytics
set xtics rotate by -25
set key top right
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2
plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)
""" % (os.path.join(out, "speedup.png"), low, n + 1, data)
    subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)


def on_sigterm(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


ALL_WORKLOADS = ("pair,pairs,mixed,pipe,hackbench-s,hackbench-l,fanout,build,mix,latency,light,"
                 "redis-1c,pg-1c,udp-1c,stream,threads,redis-32c,pg-8c,"
                 "redis-session,pg-session,udp-session,scale,scale-hackbench,planner")


def add_scale_workloads(args):
    """scale-N for each N of --scale-threads (N threads, N/5 pairs) and
    scale-hackbench; "scale" in --workloads stands for every scale-N."""
    for n in args.scale_threads:
        WORKLOADS["scale-%d" % n] = Workload(
            cost.wl_placed_cost, "placed CPU % of one CPU", "lower",
            "placed beside `scale -t %d -p %d -r %g` (threads, light pairs, rate)" % (
                n, n // 5, args.scale_rate), setup=cost.scale_setup(n, n // 5), placed_only=True,
            placed_args=("--log-level", args.scale_log_level))
    WORKLOADS["scale-hackbench"] = Workload(
        cost.wl_placed_cost, "placed CPU % of one CPU", "lower",
        "placed beside hackbench `-g %d` (%d processes)" % (
            args.scale_hackbench_groups, 40 * args.scale_hackbench_groups),
        setup=cost.hackbench_setup, placed_only=True,
        placed_args=("--log-level", args.scale_log_level), needs=(PERF,))


def expand_workloads(args, names):
    out = []
    for w in names:
        if w == "scale":
            out += ["scale-%d" % n for n in args.scale_threads]
        else:
            # A workload's second figures (mixed-hackbench, the sessions'
            # steady states) come with it.
            out += [w] + [k for k, x in WORKLOADS.items() if x.part_of and x.part_of[0] == w]
    return out


def runs_under(wl, config, only_placed_only=()):
    """Whether a workload runs under a configuration: the ceiling only where
    it pins something, placed's own cost only where placed runs, and the
    configurations added for the scale workloads (only_placed_only) only
    there."""
    if config == "ceiling" and not wl.pinnable:
        return False
    if config in only_placed_only and not wl.placed_only:
        return False
    return placed_config(config) is not None or not wl.placed_only


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-reps", type=int, default=0,
                    help="add repetitions, paired and alternating, to a workload whose no-loss "
                         "or gain verdict is still INCONCLUSIVE after --reps, up to this many "
                         "(0: none)")
    ap.add_argument("--configs", default="kernel,power-first,balanced,latency-first,ceiling",
                    help="kernel, the profiles, PROFILE-advise (placed --dry-run), ceiling "
                         "(the pair pinned by hand)")
    ap.add_argument("--workloads", default=ALL_WORKLOADS, help="comma-separated, of: " + ALL_WORKLOADS)
    ap.add_argument("--seconds", type=float, default=2, help="measured length of timed workloads")
    ap.add_argument("--warmup", type=float, default=3,
                    help="seconds of a steady-state workload's run left out of its figure")
    ap.add_argument("--pipe-loops", type=int, default=200000)
    ap.add_argument("--hackbench-loops", type=int, default=500)
    ap.add_argument("--threads", type=int, default=16, help="threads of the contended workload")
    ap.add_argument("--pairs", type=int, default=0,
                    help="pairs of the pairs workload (default: half the online CPUs, at least 1)")
    ap.add_argument("--mixed-pairs", type=int, default=0,
                    help="pairs of mixed (default: a quarter of the online CPUs, at least 1)")
    ap.add_argument("--mixed-groups", type=int, default=0,
                    help="hackbench groups of mixed (default: half the online CPUs, at least 4)")
    ap.add_argument("--sessions", type=int, default=2,
                    help="client sessions per run of the *-session workloads, each its own figure")
    ap.add_argument("--session-seconds", type=float, default=3, help="length of a client session")
    ap.add_argument("--session-idle", type=float, default=2,
                    help="seconds the server and placed run before the first session")
    ap.add_argument("--session-gap", type=float, default=1, help="seconds between two sessions")
    ap.add_argument("--scale-threads", default="1000,2500,5000,10000",
                    help="sizes of the scale workloads (threads; a fifth of them in pairs)")
    ap.add_argument("--scale-rate", type=float, default=10, help="round trips/s of each scale pair")
    ap.add_argument("--scale-seconds", type=float, default=10,
                    help="seconds placed's cost is measured over, after --warmup")
    ap.add_argument("--scale-hackbench-groups", type=int, default=40,
                    help="hackbench groups (40 processes each) of scale-hackbench")
    ap.add_argument("--scale-log-level", default="debug",
                    help="placed's log level in the scale workloads: debug has its Tick lines, "
                         "and a line per group it leaves to the kernel, whose cost its figures "
                         "then include; info has neither")
    ap.add_argument("--scale-advise", default="balanced",
                    help="the scale workloads also run this profile in advise mode (none: not)")
    ap.add_argument("--planner-groups", default="5000,20000,40000",
                    help="group counts of planner-scale's generated snapshots")
    ap.add_argument("--planner-runs", type=int, default=3,
                    help="decisions per profile on each generated snapshot (those whose groups "
                         "share tasks: 1)")
    ap.add_argument("--ceiling-cpus", default="all",
                    help="CPUs the ceiling pins a pair to, one per repetition in turn "
                         "(comma-separated; default: all this harness may use)")
    ap.add_argument("--tick-s", type=float, default=1.0,
                    help="placed's tick ([daemon] interval_ms of conf/placed.conf), for the packing target")
    ap.add_argument("--settle", type=float, default=0.5, help="seconds between placed's start and the workload")
    ap.add_argument("--placed-arg", action="append", default=[], help="extra argument for placed")
    ap.add_argument("--baseline", default=None,
                    help="a source tree of another placed, built in its build/ (a clone of an "
                         "earlier commit): configurations PROFILE@base run it, beside this one, "
                         "in the same rotation, shown and not judged")
    ap.add_argument("--switchback", action="store_true",
                    help="run each workload that reports its progress as it goes (stream, "
                         "threads, fanout, redis-32c, pg-1c, pg-8c) once, the configurations "
                         "taking turns in --block second blocks under it, placed started and "
                         "stopped for each of its blocks (switchback.py); a block is a "
                         "repetition; no ceiling there")
    ap.add_argument("--block", type=float, default=8,
                    help="seconds of a switchback block, --block-settle included")
    ap.add_argument("--block-settle", type=float, default=2,
                    help="seconds at a switchback block's start left out of its figure")
    ap.add_argument("--keep-logs", action="store_true",
                    help="keep placed's log of each run as OUT/logs/WORKLOAD-CONFIG-repN.log, "
                    "each line headed by its CLOCK_MONOTONIC time (PLACED_LOG_TIME=1), as a "
                    "run's t0_monotonic_s in results.json")
    args = ap.parse_args()
    args.out = args.out or os.path.join(args.build, "bench")
    try:
        args.scale_threads = [int(n) for n in args.scale_threads.split(",")]
        args.planner_groups = [int(n) for n in args.planner_groups.split(",")]
    except ValueError:
        ap.error("--scale-threads and --planner-groups take comma-separated numbers")
    add_scale_workloads(args)
    configs = args.configs.split(",")
    names = args.workloads.split(",")
    planner = "planner" in names
    names = [w for w in names if w != "planner"]
    for w in names:
        if w != "scale" and (w not in WORKLOADS or WORKLOADS[w].part_of):
            ap.error("unknown workload %r (known: %s)" % (w, ", ".join(
                ["scale", "planner"] + [k for k in WORKLOADS if not WORKLOADS[k].part_of])))
    workloads = expand_workloads(args, names)
    for c in configs:
        if c not in ("kernel", "ceiling") and not placed_config(c):
            ap.error("unknown configuration %r (known: kernel, %s, each of them with %s "
                     "and or %s, ceiling)" % (c, ", ".join(PROFILES), ADVISE, BASE))
        if c.endswith(BASE) and not (args.baseline and os.access(
                os.path.join(args.baseline, "build", "placed"), os.X_OK)):
            ap.error("%s needs --baseline DIR with DIR/build/placed built" % c)
    # placed's cost at scale is measured in advise mode too (only there).
    added = []
    if args.scale_advise != "none" and any(WORKLOADS[w].placed_only for w in workloads):
        if args.scale_advise not in PROFILES:
            ap.error("--scale-advise: %r is not a profile" % args.scale_advise)
        if args.scale_advise + ADVISE not in configs:
            added.append(args.scale_advise + ADVISE)
            configs.append(args.scale_advise + ADVISE)
    if args.reps < 1 or args.seconds < 1 or args.warmup < 0:
        ap.error("--reps and --seconds must be at least 1, --warmup at least 0")
    if args.sessions < 1 or args.session_seconds < 1:
        ap.error("--sessions and --session-seconds must be at least 1")
    allowed = sorted(os.sched_getaffinity(0))
    try:
        args.ceiling_cpus = allowed if args.ceiling_cpus == "all" else [
            int(c) for c in args.ceiling_cpus.split(",")]
    except ValueError:
        ap.error("--ceiling-cpus %r is not a comma-separated list of CPU numbers" % args.ceiling_cpus)
    for cpu in args.ceiling_cpus:
        if cpu not in allowed:
            ap.error("--ceiling-cpus: CPU %d is not a CPU this harness may use (%s)" % (
                cpu, ",".join(map(str, allowed))))
    missing = missing_programs(workloads)
    if missing:
        sys.exit("bench.py: missing %s; install them with make deps (Debian packages: %s)" % (
            ", ".join(p for p, _ in missing), " ".join(sorted({k for _, k in missing}))))
    os.makedirs(args.out, exist_ok=True)
    signal.signal(signal.SIGTERM, on_sigterm)

    t_start = time.time()
    shared = stock.Shared()
    results = {w: {c: [] for c in configs} for w in workloads}
    try:
        rep, todo = 0, [w for w in workloads if not WORKLOADS[w].part_of]
        if args.switchback:
            for w in [w for w in todo if WORKLOADS[w].series]:
                switchback_run(args, w, configs, shared, results, added)
                todo.remove(w)
        while todo:
            order = rotation(configs, rep)
            for w in todo:
                for c in order:
                    if not runs_under(WORKLOADS[w], c, added):
                        continue
                    for r in run_one(args, c, w, shared, rep):
                        results[w][c].append(r)
                        print("rep %d %-12s %-14s %s %.4g (%.1f s, others %.2f CPUs)" % (
                            rep + 1, w, c, r["metric"], r["value"], r["wall_s"],
                            r["foreign_cpus"]), flush=True)
            rep += 1
            todo = [w for w in todo if rep < args.reps or
                    (rep < args.max_reps and undecided(results, configs, workloads, w))]
    finally:
        shared.close()
    fill_parts(results, workloads)
    scale = cost.planner_scale(args, SRC) if planner else None
    took = time.time() - t_start

    summary = summarize(results, configs, workloads)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"argv": sys.argv, "ncpu": NCPU, "kernel": os.uname().release,
                   "cpuidle_driver": cpuidle_driver(), "took_s": round(took, 1),
                   "summary": summary, "planner_scale": scale, "runs": results}, f, indent=1)
    write_report(args.out, args, results, summary, configs, workloads, took)
    write_planner(args.out, scale)
    plot(args.out, summary, configs, workloads)
    plot_scale(args.out, results, configs, workloads)
    print(open(os.path.join(args.out, "report.md")).read())
    print("bench.py took %s" % hms(took))


def fill_parts(results, workloads):
    """A second figure of another workload's runs (mixed-hackbench: hackbench's
    time in mixed; a session's steady state) becomes that workload's results,
    run by run (none from runs without it: results written before it was
    measured)."""
    for w in workloads:
        part = WORKLOADS[w].part_of
        if not part:
            continue
        parent, key = part
        for c, runs in results.get(parent, {}).items():
            results[w][c] = [dict({k: v for k, v in r.items() if not k.startswith("packed")},
                                  value=r[key], metric=WORKLOADS[w].metric,
                                  better=WORKLOADS[w].better) for r in runs if key in r]


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        sys.exit("bench.py: stopped by %s; servers stopped, placed's changes undone" %
                 (e.args[0] if e.args else "Ctrl-C"))
