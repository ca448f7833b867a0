#!/usr/bin/env python3
"""placed benchmark: the kernel alone against placed with each profile.

    tests/bench/bench.py --build build [--reps 5] [--configs kernel,balanced]
                         [--workloads pipe,hackbench-s,...] [--out build/bench]

Every repetition runs every configuration once, in a rotating order, so slow
drift of a shared machine hits all of them alike. For each workload it
reports the median and min-max per configuration and the ratio to the kernel
alone computed per repetition pair (then the median of those ratios). Beside
the workload's own figure it samples per-CPU busy time and idle-state
residency (/proc/stat, cpuidle sysfs), idle entries per second, an energy
estimate (the model of placed's energy module: busy CPUs at 1.0, idle
states weighted by depth), and placed's own CPU time and peak memory.

Writes OUT/results.json, OUT/report.md and OUT/*.png (gnuplot). The machine
is left as found: placed undoes its changes on SIGTERM, and the harness runs
"placed --restore" on its journal at the end, also after Ctrl-C.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NCPU = os.cpu_count()


def sh(cmd, timeout=600):
    return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True,
                          timeout=timeout)


# --- workloads: each returns {"metric": name, "value": float, "better": "higher"|"lower", ...}

def wl_pipe(args):
    out = sh(["perf", "bench", "sched", "pipe", "-l", str(args.pipe_loops)]).stdout
    usec = float(re.search(r"([\d.]+) usecs/op", out).group(1))
    return {"metric": "usec/op", "value": usec, "better": "lower"}


def wl_pair(args):
    """The lockstep pair in its steady state: round trips per second after a
    warm-up long enough for placed's first decision (two ticks of 1 s)."""
    out = sh([os.path.join(args.build, "bench", "pingpong"), "-s", str(args.seconds + 3),
              "-w", "3"]).stdout
    return {"metric": "round trips/s", "value": float(out.split()[-1]), "better": "higher"}


def hackbench(groups, loops):
    out = sh(["perf", "bench", "sched", "messaging", "-g", str(groups), "-l", str(loops)]).stdout
    return {"metric": "seconds", "value": float(re.search(r"Total time: ([\d.]+)", out).group(1)),
            "better": "lower"}


def wl_hackbench_s(args):
    return hackbench(2, args.hackbench_loops)


def wl_hackbench_l(args):
    return hackbench(4, args.hackbench_loops)


def wl_fanout(args):
    out = sh([os.path.join(args.build, "bench", "fanout"), "-w", "8", "-s", str(args.seconds)]).stdout
    return {"metric": "rounds/s", "value": float(out.split()[-1]), "better": "higher"}


def wl_mix(args):
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


def wl_latency(args):
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


def wl_light(args):
    """An idle-ish load: one task waking 100 times a second; the figure is the
    energy estimate over the run (what power-first should lower)."""
    p = subprocess.Popen(["stress-ng", "--cyclic", "1", "--cyclic-sleep", "10000000", "-t",
                          "%ds" % args.seconds, "--quiet"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    p.wait()
    return {"metric": "energy est.", "value": None, "better": "lower"}


WORKLOADS = {
    "pair": wl_pair, "pipe": wl_pipe, "hackbench-s": wl_hackbench_s, "hackbench-l": wl_hackbench_l,
    "fanout": wl_fanout, "mix": wl_mix, "latency": wl_latency, "light": wl_light,
}

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
    def __init__(self, args, profile):
        self.args, self.profile = args, profile
        self.dir = tempfile.mkdtemp(prefix="placed-bench-")
        self.journal = os.path.join(self.dir, "journal")
        conf = os.path.join(self.dir, "placed.conf")
        with open(conf, "w") as f:
            f.write("[daemon]\njournal_dir = %s\n" % self.journal)
        self.log = open(os.path.join(self.dir, "placed.log"), "w+")
        cmd = [os.path.join(args.build, "placed"), "--foreground", "--bus", "none",
               "--profile", profile, "--config", conf,
               "--profiles-dir", os.path.join(SRC, "conf", "profiles")] + args.placed_arg
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            self.log.seek(0)
            if "started" in self.log.read():
                break
            if self.proc.poll() is not None:
                raise RuntimeError("placed exited: " + open(self.log.name).read())
            time.sleep(0.05)
        time.sleep(args.settle)

    def usage(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu_s = (int(fields[11]) + int(fields[12])) / ticks
        hwm = 0
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        return {"placed_cpu_s": cpu_s, "placed_peak_rss_kib": hwm}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        subprocess.run([os.path.join(self.args.build, "placed"), "--restore", "--journal-dir",
                        self.journal], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_one(args, config, workload):
    placed = Placed(args, config) if config != "kernel" else None
    try:
        stat0, idle0, t0 = read_stat(), read_idle(), time.time()
        res = WORKLOADS[workload](args)
        secs = time.time() - t0
        res.update(system_figures(stat0, read_stat(), idle0, read_idle(), secs))
        res["wall_s"] = round(secs, 3)
        if res["value"] is None:
            res["value"] = res["energy_cpu_equiv"]
        if placed:
            res.update(placed.usage())
            res["placed_cpu_pct_of_machine"] = round(100 * res["placed_cpu_s"] / (secs * NCPU), 3)
        return res
    finally:
        if placed:
            placed.stop()


def summarize(results, configs, workloads):
    summary = {}
    for w in workloads:
        summary[w] = {}
        base = [r["value"] for r in results[w]["kernel"]] if "kernel" in configs else None
        for c in configs:
            vals = [r["value"] for r in results[w][c]]
            s = {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}
            if base and c != "kernel":
                better = results[w][c][0]["better"]
                # Ratio > 1 means placed is better, whatever the direction of the metric.
                ratios = [(b / v if better == "lower" else v / b) for b, v in zip(base, vals) if v and b]
                s["speedup_median"] = statistics.median(ratios) if ratios else None
                s["speedup_min"] = min(ratios) if ratios else None
                s["speedup_max"] = max(ratios) if ratios else None
            summary[w][c] = s
    return summary


def write_report(out, args, results, summary, configs, workloads):
    lines = ["# placed benchmark", "",
             "`%s` on %d CPUs, %s; %d repetitions, configurations alternated." % (
                 " ".join(sys.argv), NCPU, os.uname().release, args.reps), "",
             "Speed-up is the median over repetitions of (kernel alone / placed) for times and "
             "(placed / kernel alone) for rates: above 1 placed is better.", "",
             "| workload | metric | " + " | ".join(configs) + " |",
             "|---|---|" + "---|" * len(configs)]
    for w in workloads:
        metric = results[w][configs[0]][0]["metric"]
        cells = []
        for c in configs:
            s = summary[w][c]
            cell = "%.4g (%.4g–%.4g)" % (s["median"], s["min"], s["max"])
            if s.get("speedup_median"):
                cell += " **%.2fx**" % s["speedup_median"]
            cells.append(cell)
        lines.append("| %s | %s | %s |" % (w, metric, " | ".join(cells)))
    lines += ["", "## Per-CPU figures (median repetition)", "",
              "| workload | config | busy per CPU | deepest-state residency per CPU | idle entries/s per CPU | energy est. (CPU-equiv.) | placed CPU % | placed peak RSS KiB |",
              "|---|---|---|---|---|---|---|---|"]
    for w in workloads:
        for c in configs:
            runs = sorted(results[w][c], key=lambda r: r["value"])
            r = runs[len(runs) // 2]
            busy = " ".join("%.2f" % r["cpus"][k]["busy"] for k in sorted(r["cpus"]))
            deep = " ".join("%.2f" % (list(r["cpus"][k]["residency"].values())[-1]
                                      if r["cpus"][k]["residency"] else 0) for k in sorted(r["cpus"]))
            ent = " ".join("%.0f" % r["cpus"][k]["idle_entries_per_s"] for k in sorted(r["cpus"]))
            lines.append("| %s | %s | %s | %s | %s | %.2f | %s | %s |" % (
                w, c, busy, deep, ent, r["energy_cpu_equiv"],
                r.get("placed_cpu_pct_of_machine", "–"), r.get("placed_peak_rss_kib", "–")))
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


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
            f.write(w + " " + " ".join("%.4f" % (summary[w][c].get("speedup_median") or 0)
                                       for c in configs if c != "kernel") + "\n")
    n = len([c for c in configs if c != "kernel"])
    script = """set terminal pngcairo size 900,500
set output '%s'
set title 'placed: speed-up over the kernel alone (median, >1 is better)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y 2
set yrange [0.5:*]
set ylabel 'speed-up (log scale)'
set grid ytics
set xtics rotate by -25
set key top right
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2
plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)
""" % (os.path.join(out, "speedup.png"), n + 1, data)
    subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--configs", default="kernel,power-first,balanced,latency-first")
    ap.add_argument("--workloads", default="pair,pipe,hackbench-s,hackbench-l,fanout,mix,latency,light")
    ap.add_argument("--seconds", type=int, default=4, help="length of timed workloads")
    ap.add_argument("--pipe-loops", type=int, default=200000)
    ap.add_argument("--hackbench-loops", type=int, default=1000)
    ap.add_argument("--settle", type=float, default=0.5, help="seconds between placed's start and the workload")
    ap.add_argument("--placed-arg", action="append", default=[], help="extra argument for placed")
    args = ap.parse_args()
    args.out = args.out or os.path.join(args.build, "bench")
    os.makedirs(args.out, exist_ok=True)
    configs = args.configs.split(",")
    workloads = args.workloads.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %r (known: %s)" % (w, ", ".join(WORKLOADS)))

    results = {w: {c: [] for c in configs} for w in workloads}
    for rep in range(args.reps):
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        for w in workloads:
            for c in order:
                r = run_one(args, c, w)
                results[w][c].append(r)
                print("rep %d %-12s %-14s %s %.4g" % (rep + 1, w, c, r["metric"], r["value"]),
                      flush=True)

    summary = summarize(results, configs, workloads)
    scale = planner_scale(args)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"argv": sys.argv, "ncpu": NCPU, "kernel": os.uname().release,
                   "summary": summary, "planner_scale": scale, "runs": results}, f, indent=1)
    write_report(args.out, args, results, summary, configs, workloads)
    write_planner(args.out, scale)
    plot(args.out, summary, configs, workloads)
    print(open(os.path.join(args.out, "report.md")).read())


if __name__ == "__main__":
    main()
