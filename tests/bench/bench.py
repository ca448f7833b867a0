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
INCONCLUSIVE at that many repetitions (not a pass). Beside the workload's own figure it
samples per-CPU busy time and idle-state residency (/proc/stat, cpuidle
sysfs), idle entries per second, an energy estimate (the model of placed's
energy module: busy CPUs at 1.0, idle states weighted by depth), placed's
own CPU time and peak memory, and the CPU time of every other process on the
machine (a benchmark on a machine that is not idle says little).

The stock servers (tests/bench/stock.py) are started per run, privately: in
a temporary directory, on a unix socket there or on 127.0.0.1, and stopped
and removed after it. Writes OUT/results.json, OUT/report.md and
OUT/speedup.png (gnuplot). The machine is left as found: placed undoes its
changes on SIGTERM, and the harness runs "placed --restore" on its journal
after each run, also after Ctrl-C or SIGTERM.
"""
import argparse
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
import stock  # noqa: E402
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


def one_cpu(pid):
    """The CPU pid is allowed on when it is exactly one, else None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            cpus = next(l.split()[1] for l in f if l.startswith("Cpus_allowed_list:"))
    except (OSError, StopIteration):
        return None
    return int(cpus) if cpus.isdigit() else None


def wl_pair(args, env):
    """The lockstep pair in its steady state: round trips per second after a
    warm-up long enough for placed's first decisions (ticks of 1 s). Also how
    long after the pair started its two tasks were first both allowed on one
    and the same CPU (packed_after_s; None if never, and for the ceiling,
    which starts pinned)."""
    p = subprocess.Popen(env.cmd([os.path.join(args.build, "bench", "pingpong"), "-p", "-s",
                                  str(args.warmup + args.seconds), "-w", str(args.warmup)]),
                         stdout=subprocess.PIPE, text=True)
    t0 = time.time()
    pids = [int(x) for x in p.stdout.readline().split()[1:3]]
    packed = None
    while env.pin is None and packed is None and p.poll() is None:
        cpus = [one_cpu(pid) for pid in pids]
        if cpus[0] is not None and cpus[0] == cpus[1]:
            packed = round(time.time() - t0, 2)
        else:
            time.sleep(0.02)
    out = p.communicate()[0]
    if p.returncode != 0:
        raise RuntimeError("pingpong failed (exit %d)" % p.returncode)
    return {"metric": "round trips/s", "value": float(out.split()[-1]), "better": "higher",
            "packed_after_s": packed}


def hackbench(groups, loops):
    out = sh(["perf", "bench", "sched", "messaging", "-g", str(groups), "-l", str(loops)]).stdout
    return {"metric": "seconds", "value": float(re.search(r"Total time: ([\d.]+)", out).group(1)),
            "better": "lower"}


def wl_hackbench_s(args, env):
    return hackbench(2, args.hackbench_loops)


def wl_hackbench_l(args, env):
    return hackbench(4, args.hackbench_loops)


def wl_fanout(args, env):
    out = sh([os.path.join(args.build, "bench", "fanout"), "-w", "8", "-s", str(args.seconds)]).stdout
    return {"metric": "rounds/s", "value": float(out.split()[-1]), "better": "higher"}


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
WORKLOADS = {
    "pair": Workload(wl_pair, "round trips/s", "higher", "lockstep pipe pair, steady state",
                     "pair", PAIR_TARGET, pinnable=True),
    # Its figure includes the ticks before placed packs the pair: the share of
    # the ceiling's gain is shown, the pair's target is held by "pair" alone.
    "pipe": Workload(wl_pipe, "usec/op", "lower", "`perf bench sched pipe`, incl. the first ticks",
                     "pair", None, pinnable=True, needs=(PERF,)),
    "hackbench-s": Workload(wl_hackbench_s, "seconds", "lower", "hackbench `-g 2`", "noloss",
                            NOLOSS_TARGET, needs=(PERF,)),
    "hackbench-l": Workload(wl_hackbench_l, "seconds", "lower", "hackbench `-g 4`", "noloss",
                            NOLOSS_TARGET, needs=(PERF,)),
    "fanout": Workload(wl_fanout, "rounds/s", "higher", "master + 8 workers", "noloss",
                       NOLOSS_TARGET),
    "mix": Workload(wl_mix, "geomean speed", "higher", "pipe + hackbench + fan-out at once",
                    needs=(PERF,)),
    "latency": Workload(wl_latency, "p99 wakeup latency us", "lower",
                        "`cyclictest --default-system` p99", needs=(("cyclictest", "rt-tests"),)),
    "light": Workload(wl_light, "energy est.", "lower", "light load, energy estimate",
                      needs=(("stress-ng", "stress-ng"),)),
    "redis-1c": Workload(stock.wl_redis_1c, "GET/s", "higher",
                         "redis-server + redis-benchmark `-c 1`, unix socket", "pair",
                         SERVER_TARGET, pinnable=True, setup=stock.redis_setup,
                         needs=(("redis-server", "redis-server"), ("redis-benchmark", "redis-tools"))),
    "pg-1c": Workload(stock.wl_pg_1c, "SELECT tps", "higher",
                      "PostgreSQL + pgbench `-c 1 -S`, unix socket", "pair", SERVER_TARGET,
                      pinnable=True, setup=stock.pg_setup, needs=(("pgbench", "postgresql"),)),
    "udp-1c": Workload(stock.wl_udp_1c, "round trips/s", "higher",
                       "sockperf server + ping-pong, UDP over loopback", "pair", SERVER_TARGET,
                       pinnable=True, setup=stock.sockperf_setup,
                       needs=(("sockperf", "sockperf"),)),
    "stream": Workload(stock.wl_stream, "Gbit/s", "higher", "iperf3, one TCP stream over loopback",
                       "noloss", NOLOSS_TARGET, pinnable=True, setup=stock.iperf3_setup,
                       needs=(("iperf3", "iperf3"),)),
    "threads": Workload(stock.wl_threads, "events/s", "higher",
                        "sysbench threads: 16 threads (--threads) contending one mutex", "noloss",
                        NOLOSS_TARGET, needs=(("sysbench", "sysbench"),)),
    "redis-32c": Workload(stock.wl_redis_32c, "GET/s", "higher",
                          "redis-server + redis-benchmark `-c 32`, unix socket", "noloss",
                          NOLOSS_TARGET, setup=stock.redis_setup,
                          needs=(("redis-server", "redis-server"), ("redis-benchmark", "redis-tools"))),
}


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


def foreign_cpu():
    """CPU time (s) of every user process outside the harness's own tree, by
    (pid, start time): what else ran on the machine. Kernel threads are left
    out (ksoftirqd and kworkers also work for the workload)."""
    ticks = os.sysconf("SC_CLK_TCK")
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
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
    return {(pid, st): cpu for pid, (_, st, cpu) in procs.items() if pid not in ours}


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

    def __init__(self, args, profile, advise=False):
        self.args, self.profile, self.advise = args, profile, advise
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
        cmd = [os.path.join(args.build, "placed"), "--foreground", "--bus", "none",
               "--profile", self.profile, "--config", conf,
               "--profiles-dir", os.path.join(SRC, "conf", "profiles")] + (
                   ["--dry-run"] if self.advise else []) + args.placed_arg
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
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
            subprocess.run([os.path.join(self.args.build, "placed"), "--restore", "--journal-dir",
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


def placed_config(config):
    """(profile, advise) of a configuration that runs placed, else None."""
    if config in PROFILES:
        return config, False
    if config.endswith(ADVISE) and config[:-len(ADVISE)] in PROFILES:
        return config[:-len(ADVISE)], True
    return None


def run_one(args, config, workload, shared, rep=0):
    """One run: the workload's server (if any) first, then placed (for a
    profile), then the client. "kernel" is the kernel alone; "ceiling" is the
    kernel alone with the pair's tasks pinned by hand to one CPU, the next of
    args.ceiling_cpus at each repetition (one CPU's interrupts do not bias it)."""
    wl = WORKLOADS[workload]
    pin = args.ceiling_cpus[rep % len(args.ceiling_cpus)] if config == "ceiling" else None
    env = stock.Env(pin=pin, shared=shared)
    placed = Placed(args, *placed_config(config)) if placed_config(config) else None
    if placed:
        placed.log_name = "%s-%s-rep%d.log" % (workload, config, rep + 1)
    try:
        if wl.setup:
            wl.setup(args, env)
        if placed:
            placed.start()
        foreign0 = foreign_cpu()
        placed_cpu0 = placed.cpu_s() if placed else 0.0
        stat0, idle0, t0 = read_stat(), read_idle(), time.time()
        res = wl.run(args, env)
        secs = time.time() - t0
        placed_cpu1 = placed.cpu_s() if placed else 0.0
        res.update(system_figures(stat0, read_stat(), idle0, read_idle(), secs))
        res["foreign_cpus"] = round(foreign_load(foreign0, foreign_cpu(), secs), 3)
        res["wall_s"] = round(secs, 3)
        if pin is not None:
            res["ceiling_cpu"] = pin
        if res["value"] is None:
            res["value"] = res["energy_cpu_equiv"]
        if placed:
            placed.check_alive()
            res.update(placed.usage())
            # During the workload only: its start (loading the BPF sampler)
            # comes before and is not the workload's cost.
            res["placed_cpu_pct_of_machine"] = round(
                100 * (placed_cpu1 - placed_cpu0) / (secs * NCPU), 3)
        return res
    finally:
        if placed:
            placed.stop()
        env.close()


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


def median_interval(xs, level=CI_LEVEL):
    """A distribution-free confidence interval of the median of xs (the sign
    test's): the order statistics x_(k) and x_(n+1-k) of the sorted values,
    with the largest k whose coverage 1 - 2 P(B <= k - 1), B ~ Bin(n, 1/2),
    is at least level. With too few values for that (fewer than 6 for 95%),
    min and max, which cover less. Returns (low, high, coverage)."""
    xs = sorted(xs)
    n = len(xs)

    def below(k):  # coverage of [x_(k), x_(n+1-k)]
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= (n + 1) // 2 and below(k + 1) >= level:
        k += 1
    return xs[k - 1], xs[n - k], below(k)


def judge_speedup(s, rs, target):
    """A speed-up target judged on the interval of the median of the
    per-repetition ratios rs, not on the median alone: PASS when all of it
    is at or above the target, FAIL when all of it is below, INCONCLUSIVE
    when the target is inside it (identical runs vary more than the
    difference; more repetitions decide). INCONCLUSIVE is not a pass."""
    lo, hi, coverage = median_interval(rs)
    s["speedup_ci"] = [lo, hi]
    s["speedup_ci_coverage"] = round(coverage, 4)
    if lo >= target - EPS:
        s["verdict"] = "PASS"
    elif hi < target - EPS:
        s["verdict"] = "FAIL"
    else:
        s["verdict"] = "INCONCLUSIVE"
    s["pass"] = s["verdict"] == "PASS"


def judge(sw, results, w):
    """Against the workload's target, per profile: the share of the ceiling's
    gain, (placed/kernel - 1) / (ceiling/kernel - 1) of the medians (and the
    worst repetition's own share), or the speed-up over the kernel alone
    (judge_speedup)."""
    wl = WORKLOADS[w]
    ceil = sw.get("ceiling", {}).get("speedup_median")
    for c in PROFILES:
        s = sw.get(c)
        if not s or s.get("speedup_median") is None or not wl.kind:
            continue
        if wl.kind == "noloss":
            s["target"] = ">= %.2fx kernel" % wl.target
            judge_speedup(s, ratios(results, w, c), wl.target)
        elif ceil is None:
            s["target"] = "no ceiling measured"
        elif ceil < MIN_CEILING_GAIN:
            # Pinning by hand gains nothing here: the share is meaningless, and
            # placed must simply not lose.
            s["target"] = "ceiling gains < %d%%: >= %.2fx kernel" % (
                round(100 * (MIN_CEILING_GAIN - 1)), NOLOSS_TARGET)
            judge_speedup(s, ratios(results, w, c), NOLOSS_TARGET)
        else:
            s["share_of_ceiling_gain"] = (s["speedup_median"] - 1) / (ceil - 1)
            per_rep = [(p - 1) / (q - 1) for p, q in zip(ratios(results, w, c),
                                                           ratios(results, w, "ceiling"))
                       if q >= MIN_CEILING_GAIN]
            s["share_min"] = min(per_rep) if per_rep else None
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


PACK_TICKS_TARGET = 3  # a pair is packed within this many ticks of starting


def packing_speed(args, results, configs, workloads):
    """How soon each profile packed the lockstep pair: seconds from its start
    until both tasks were allowed on one CPU, median and worst, in ticks of
    args.tick_s against the target."""
    if "pair" not in workloads:
        return []
    lines = ["", "## Speed of packing", "",
             "Seconds from the pair's start until both its tasks were allowed on one and the "
             "same CPU (median, worst), against %d ticks of %.1f s." % (PACK_TICKS_TARGET,
                                                                      args.tick_s), "",
             "| profile | packed after | target |", "|---|---|---|"]
    for c in configs:
        if c not in PROFILES or not results["pair"].get(c):
            continue
        t = [r.get("packed_after_s") for r in results["pair"][c]]
        never = sum(1 for x in t if x is None)
        got = [x for x in t if x is not None]
        if not got:
            lines.append("| %s | never | **FAIL** |" % c)
            continue
        ok = never == 0 and max(got) <= PACK_TICKS_TARGET * args.tick_s
        lines.append("| %s | %.2f s, worst %.2f s%s | <= %d ticks **%s** |" % (
            c, statistics.median(got), max(got),
            ", %d of %d never" % (never, len(t)) if never else "", PACK_TICKS_TARGET,
            "PASS" if ok else "FAIL"))
    return lines


def write_report(out, args, results, summary, configs, workloads, took):
    lines = ["# placed benchmark", "",
             "`%s` on %d CPUs, %s, cpuidle driver %s; %d repetitions, configurations alternated; "
             "took %s." % (" ".join(sys.argv), NCPU, os.uname().release, cpuidle_driver(),
                            args.reps, hms(took)), "",
             "Speed-up (bold) is the median over repetitions of (kernel alone / run) for times "
             "and (run / kernel alone) for rates: above 1 is better than the kernel alone. "
             "*ceiling* is the kernel alone with the pair's two sides (server and client) pinned "
             "by hand to one CPU (CPU %s, one after the other by repetition), placed not running; "
             "only pair-like workloads have one." % ", ".join(map(str, args.ceiling_cpus)), "",
             ]
    bg = [r["foreign_cpus"] for w in workloads for c in configs for r in results[w].get(c, [])]
    if bg:
        lines += ["Other processes on the machine used a median %.2f, at most %.2f CPUs' worth "
                  "during the runs%s" % (statistics.median(bg), max(bg),
                                         "." if max(bg) < 0.05 else
                                         ": **the machine was not idle, the figures are "
                                         "disturbed** (per run: results.json, foreign_cpus)."), ""]
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
                  "Others, and pair-like workloads whose ceiling gains less: the median "
                  "speed-up over the kernel alone and, in square brackets, the %d%% "
                  "distribution-free interval of that median (order statistics of the "
                  "per-repetition ratios; with fewer than 6 repetitions their min-max, its "
                  "coverage given). PASS when all of the interval is at or above the target, "
                  "FAIL when all of it is below, INCONCLUSIVE (not a pass) when the target is "
                  "inside it: identical runs varied more than the difference, and more "
                  "repetitions decide." % (round(100 * (MIN_CEILING_GAIN - 1)),
                                           round(100 * CI_LEVEL)), "",
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
                cell = "%.2fx" % s["speedup_median"]
                if "share_of_ceiling_gain" in s:
                    cell += ", %.1f%%" % (100 * s["share_of_ceiling_gain"])
                    if s.get("share_min") is not None:
                        cell += " (%.1f%%)" % (100 * s["share_min"])
                if "speedup_ci" in s:
                    cell += " [%.2f–%.2fx%s]" % (
                        s["speedup_ci"][0], s["speedup_ci"][1],
                        "" if s["speedup_ci_coverage"] >= CI_LEVEL - EPS else
                        ", covers %d%%" % int(100 * s["speedup_ci_coverage"]))
                if "verdict" in s:
                    cell += " **%s%s**" % (s["verdict"], " at %d reps" % s["n"]
                                           if s["verdict"] == "INCONCLUSIVE" else "")
                cells.append(cell)
            lines.append("| %s | %s | %s | %s |" % (w, target, "%.2fx" % ceil if ceil else "–",
                                                    " | ".join(cells)))

    lines += packing_speed(args, results, configs, workloads)
    lines += ["", "## Workloads", ""]
    for w in workloads:
        lines.append("- **%s**: %s (%s, %s is better)" % (w, WORKLOADS[w].label, WORKLOADS[w].metric,
                                                       WORKLOADS[w].better))
    lines += ["", "## Per-CPU figures (median repetition)", "",
              "| workload | config | busy per CPU | deepest-state residency per CPU | idle entries/s per CPU | energy est. (CPU-equiv.) | placed CPU % | placed peak RSS KiB | other processes (CPUs) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for w in workloads:
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
        return open("/sys/devices/system/cpu/cpuidle/current_driver").read().strip()
    except OSError:
        return "none"


def hms(secs):
    return "%d min %02d s" % (secs // 60, secs % 60)


def planner_scale(args):
    """placed's decision at scale: 512 CPUs, 32 LLCs, 50k tasks, 200k edges."""
    exe = os.path.join(args.build, "bench", "planner-scale")
    if not os.path.exists(exe):
        return None
    out = sh([exe, "-r", "9"]).stdout
    return json.loads(out) if out.strip() else None


def write_planner(out, res):
    if not res:
        return
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n## Planner at scale\n\n"
                "`planner-scale`: %(cpus)d CPUs in %(llcs)d LLCs, %(tasks)d tasks, %(edges)d wake "
                "edges, %(groups)d groups. CPU time of the decision, median (worst) of 9 runs; "
                "target under 20 ms and 64 MB.\n\n" % res)
        f.write("| model update | power-first | balanced | latency-first | peak memory |\n"
                "|---|---|---|---|---|\n")
        f.write("| %.1f ms | %.1f (%.1f) ms | %.1f (%.1f) ms | %.1f (%.1f) ms | %.1f MB |\n" % (
            res["model_update_ms"], res["decide_ms_power-first"], res["decide_max_ms_power-first"],
            res["decide_ms_balanced"], res["decide_max_ms_balanced"],
            res["decide_ms_latency-first"], res["decide_max_ms_latency-first"], res["peak_rss_mb"]))


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


ALL_WORKLOADS = ("pair,pipe,hackbench-s,hackbench-l,fanout,mix,latency,light,"
                 "redis-1c,pg-1c,udp-1c,stream,threads,redis-32c")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    ap.add_argument("--reps", type=int, default=5)
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
    ap.add_argument("--ceiling-cpus", default="all",
                    help="CPUs the ceiling pins a pair to, one per repetition in turn "
                         "(comma-separated; default: all this harness may use)")
    ap.add_argument("--tick-s", type=float, default=1.0,
                    help="placed's tick ([daemon] interval_ms of conf/placed.conf), for the packing target")
    ap.add_argument("--settle", type=float, default=0.5, help="seconds between placed's start and the workload")
    ap.add_argument("--placed-arg", action="append", default=[], help="extra argument for placed")
    ap.add_argument("--keep-logs", action="store_true",
                    help="keep placed's log of each run as OUT/logs/WORKLOAD-CONFIG-repN.log")
    args = ap.parse_args()
    args.out = args.out or os.path.join(args.build, "bench")
    configs = args.configs.split(",")
    workloads = args.workloads.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %r (known: %s)" % (w, ", ".join(WORKLOADS)))
    for c in configs:
        if c not in ("kernel", "ceiling") and not placed_config(c):
            ap.error("unknown configuration %r (known: kernel, %s, each of them with %s, "
                     "ceiling)" % (c, ", ".join(PROFILES), ADVISE))
    if args.reps < 1 or args.seconds < 1 or args.warmup < 0:
        ap.error("--reps and --seconds must be at least 1, --warmup at least 0")
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
        for rep in range(args.reps):
            order = configs[rep % len(configs):] + configs[:rep % len(configs)]
            for w in workloads:
                for c in order:
                    if c == "ceiling" and not WORKLOADS[w].pinnable:
                        continue
                    r = run_one(args, c, w, shared, rep)
                    results[w][c].append(r)
                    print("rep %d %-12s %-14s %s %.4g (%.1f s, others %.2f CPUs)" % (
                        rep + 1, w, c, r["metric"], r["value"], r["wall_s"], r["foreign_cpus"]),
                        flush=True)
    finally:
        shared.close()
    took = time.time() - t_start

    summary = summarize(results, configs, workloads)
    scale = planner_scale(args)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"argv": sys.argv, "ncpu": NCPU, "kernel": os.uname().release,
                   "cpuidle_driver": cpuidle_driver(), "took_s": round(took, 1),
                   "summary": summary, "planner_scale": scale, "runs": results}, f, indent=1)
    write_report(args.out, args, results, summary, configs, workloads, took)
    write_planner(args.out, scale)
    plot(args.out, summary, configs, workloads)
    print(open(os.path.join(args.out, "report.md")).read())
    print("bench.py took %s" % hms(took))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as e:
        sys.exit("bench.py: stopped by %s; servers stopped, placed's changes undone" %
                 (e.args[0] if e.args else "Ctrl-C"))
