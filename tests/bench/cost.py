"""placed's own cost, for tests/bench/bench.py.

At scale: placed beside tests/bench/scale (THREADS threads, a fifth of them
in light pairs handing a futex token back and forth, the rest asleep) or
beside hackbench's 1,600 processes; the setups start the workload before
placed, and wl_placed_cost() measures placed, not the workload: its CPU
time over a window after the first ticks, per tick, its Tick debug lines
(the CPU time of each phase of a tick) and, with bench.py's measure(), its
peak RSS. Only configurations that run placed apply.

The planner at scale: tests/bench/planner-scale on a generated 512-CPU
machine, from the wake-graph model (5,600 groups) and from generated
snapshots of many groups, disjoint or sharing tasks, each also replayed by
placed --plan on a sysfs tree of the same machine (uniform_sysfs()), so that
the planner's own time and what placed --plan costs in all are both seen.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

import stock

TICK_RE = re.compile(r"Tick: (\d+) tasks, (\d+) groups(?:, (\w+))?; CPU time: sample (\d+) us, "
                     r"model (\d+) us, decide (\d+) us, apply (\d+) us")
TICK_PHASES = ("sample", "model", "decide", "apply")


def parse_ticks(text):
    """placed's per-tick debug lines: [{tasks, groups, sample_us, ..., total_us}]."""
    ticks = []
    for m in TICK_RE.finditer(text):
        t = {"tasks": int(m.group(1)), "groups": int(m.group(2)),
             "kind": m.group(3) or "regular"}
        for i, ph in enumerate(TICK_PHASES):
            t[ph + "_us"] = int(m.group(4 + i))
        t["total_us"] = sum(t[ph + "_us"] for ph in TICK_PHASES)
        ticks.append(t)
    return ticks


def scale_setup(threads, pairs):
    def setup(args, env):
        p = env.server([os.path.join(args.build, "bench", "scale"), "-t", str(threads), "-p",
                        str(pairs), "-r", "%g" % args.scale_rate], "scale.log")
        log = os.path.join(env.dir, "scale.log")
        stock.wait_for("scale", lambda: "ready" in open(log).read(), [p], env, "scale.log",
                       timeout=120)
        env.state["threads"], env.state["pairs"] = threads, pairs
    return setup


def hackbench_setup(args, env):
    """hackbench with args.scale_hackbench_groups groups of 40 processes, looping
    far longer than the run (stopped with it)."""
    g = args.scale_hackbench_groups
    p = env.server(["perf", "bench", "sched", "messaging", "-g", str(g), "-l", "10000000"],
                   "hackbench.log")
    stock.wait_for("hackbench", lambda: len(stock.process_tree_tids(p.pid)) > 40 * g, [p], env,
                   "hackbench.log", timeout=60)
    env.state["threads"], env.state["pairs"] = 40 * g, 0


def wl_placed_cost(args, env):
    """placed's cost beside the workload its setup started: after args.warmup
    seconds (its first ticks, the first scan of every task), over
    args.scale_seconds: its CPU time as a share of one CPU (its threads'
    schedstat), per tick (that over the ticks in the window), the ticks'
    phases from its "Tick:" debug lines when it logs them."""
    placed = env.placed
    time.sleep(args.warmup)
    off, c0, t0 = placed.log_size(), placed.cpu_ns(), time.monotonic()
    time.sleep(args.scale_seconds)
    c1, t1 = placed.cpu_ns(), time.monotonic()
    secs = t1 - t0
    text = placed.log_text(off)
    window = parse_ticks(text)
    every = parse_ticks(placed.log_text())
    res = {"metric": "placed CPU % of one CPU", "value": 100 * (c1 - c0) / 1e9 / secs,
           "better": "lower", "threads": env.state["threads"], "pairs": env.state["pairs"],
           "window_s": round(secs, 3), "log_lines_per_s": round(text.count("\n") / secs, 1),
           "cpu_ms_per_tick": round((c1 - c0) / 1e6 / (secs / args.tick_s), 3),
           "tick_lines": len(window)}
    if window:
        res["tasks"], res["groups"] = window[-1]["tasks"], window[-1]["groups"]
        for ph in TICK_PHASES + ("total",):
            res["tick_%s_ms" % ph] = round(
                statistics.median(t[ph + "_us"] for t in window) / 1e3, 3)
        res["tick_max_ms"] = round(max(t["total_us"] for t in window) / 1e3, 3)
        res["tick_max_ms_from_start"] = round(max(t["total_us"] for t in every) / 1e3, 3)
    return res


def cpulist(cpus):
    """Kernel cpulist text ("0-3,8") of a set of CPU numbers."""
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
        run = [c]
    if run:
        out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
    return ",".join(out)


def uniform_sysfs(root, packages=2, llcs=16, cores=8, threads=2):
    """A sysfs tree of the machine planner-scale generates (topo_new_uniform:
    threads of a core numbered next to each other, cores of an LLC too, one
    NUMA node per package), for placed --plan --sysfs-root: the files
    lib/topology.c reads (as tests/fixtures/make-topo-fixtures.py writes)."""
    n = packages * llcs * cores * threads

    def put(rel, value):
        path = os.path.join(root, "sys/devices/system", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("%s\n" % value)
    put("cpu/possible", "0-%d" % (n - 1))
    put("cpu/present", "0-%d" % (n - 1))
    put("cpu/online", "0-%d" % (n - 1))
    put("cpu/offline", "")
    per_llc, per_pkg = cores * threads, llcs * cores * threads
    for cpu in range(n):
        core, llc, pkg = cpu // threads, cpu // per_llc, cpu // per_pkg
        sib = cpulist(range(core * threads, core * threads + threads))
        d = "cpu/cpu%d/" % cpu
        if cpu:
            put(d + "online", 1)
        put(d + "topology/core_id", core % (llcs * cores))
        put(d + "topology/physical_package_id", pkg)
        put(d + "topology/cluster_id", core)
        for f in ("core_cpus_list", "thread_siblings_list", "cluster_cpus_list"):
            put(d + "topology/" + f, sib)
        caches = [(1, "Data", sib, core), (1, "Instruction", sib, core), (2, "Unified", sib, core),
                  (3, "Unified", cpulist(range(llc * per_llc, (llc + 1) * per_llc)), llc)]
        for i, (level, kind, shared, cid) in enumerate(caches):
            put(d + "cache/index%d/level" % i, level)
            put(d + "cache/index%d/type" % i, kind)
            put(d + "cache/index%d/shared_cpu_list" % i, shared)
            put(d + "cache/index%d/id" % i, cid)
    for pkg in range(packages):
        put("node/node%d/cpulist" % pkg, cpulist(range(pkg * per_pkg, (pkg + 1) * per_pkg)))


def placed_plan(args, src, snapshot, sysfs):
    """placed --plan on a snapshot: its wall time and CPU time (parsing,
    reading the topology and configuration, deciding, printing the plan)."""
    t0 = time.monotonic()
    p = subprocess.Popen([os.path.join(args.build, "placed"), "--plan", "--snapshot", snapshot,
                          "--sysfs-root", sysfs, "--profiles-dir",
                          os.path.join(src, "conf", "profiles")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if p.returncode:
        return {"plan_error": err.strip()[-300:] or "exit %d" % p.returncode}
    return {"plan_wall_s": round(time.monotonic() - t0, 3),
            "plan_cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
            "plan_peak_rss_mb": round(ru.ru_maxrss / 1024, 1)}


def planner_scale(args, src):
    """placed's decision at scale on a generated 512-CPU machine: the model and
    the policy from 50k tasks and 200k wake edges (5,600 groups), then
    snapshots of --planner-groups groups, disjoint and sharing tasks, each
    parsed and decided in planner-scale and replayed by placed --plan."""
    exe = os.path.join(args.build, "bench", "planner-scale")
    if not os.path.exists(exe):
        return None
    cases = []
    out = subprocess.run([exe, "-r", "9"], capture_output=True, text=True).stdout
    if out.strip():
        cases.append(json.loads(out))
    tmp = tempfile.mkdtemp(prefix="placed-bench-planner-")
    try:
        sysfs = os.path.join(tmp, "sysfs")
        uniform_sysfs(sysfs)
        for shared in (False, True):
            for g in args.planner_groups:
                snap = os.path.join(tmp, "snapshot.json")
                runs = 1 if shared else args.planner_runs
                r = subprocess.run([exe, "-g", str(g), "-r", str(runs), "-o", snap]
                                   + (["-s"] if shared else []), capture_output=True, text=True)
                if r.returncode or not r.stdout.strip():
                    cases.append({"mode": "snapshot", "groups": g, "shared": shared,
                                  "error": (r.stderr or "exit %d" % r.returncode).strip()[-300:]})
                    continue
                case = json.loads(r.stdout)
                case["runs"] = runs
                case.update(placed_plan(args, src, snap, sysfs))
                cases.append(case)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return cases


# The profiles planner-scale decides for, in the order it prints them.
PLANNER_PROFILES = ("power-first", "balanced", "latency-first")
PLANNER_MS = 20  # the wake-graph case (5,600 groups): a decision under this
PLANNER_MB = 64  # ... in this much memory
PLANNER_40K_MS = 250  # 40,000 groups: a decision at most this, parsing excluded


def planner_lines(cases):
    if not cases:
        return []
    lines = ["", "## Planner at scale", "",
             "`planner-scale` on a generated machine of %d CPUs in %d LLCs: the wake-graph case "
             "runs 50,000 tasks and 200,000 wake edges through the model (its update timed) and "
             "decides on the groups it makes (median, worst of 9); the snapshot cases make "
             "GROUPS groups directly (of every 50: 45 light pairs, 4 meshes of 8, a master "
             "with 16 workers; \"shared\": each group's first task is the one before's last), "
             "write them as a snapshot, time parsing it (as `placed --plan` does first) and "
             "deciding on what was parsed (median, worst of the runs; 1 where groups share "
             "tasks), each decision from no previous plan as `placed --plan` decides. CPU time "
             "of the thread. `placed --plan` replays the same snapshot on a sysfs tree of the "
             "same machine: its CPU time, everything included (parsing, topology, "
             "configuration, deciding, printing). Targets: the wake-graph case under %d ms "
             "and %d MB; 40,000 groups at most %d ms a decision, parsing excluded." % (
                 cases[0].get("cpus", 512), cases[0].get("llcs", 32), PLANNER_MS, PLANNER_MB,
                 PLANNER_40K_MS), "",
             "| case | tasks | groups | parse | model update | power-first | balanced | "
             "latency-first | `placed --plan` (balanced), CPU | peak memory | target |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        name = "wake graph" if c.get("mode") == "wake-graph" else (
            "snapshot, shared tasks" if c.get("shared") else "snapshot")
        if "error" in c:
            lines.append("| %s | – | %d | failed: %s |||||||| " % (name, c["groups"], c["error"]))
            continue
        dec = ["%.1f (%.1f) ms" % (c["decide_ms_" + p], c["decide_max_ms_" + p])
               for p in PLANNER_PROFILES]
        worst = max(c["decide_max_ms_" + p] for p in PLANNER_PROFILES)
        med = max(c["decide_ms_" + p] for p in PLANNER_PROFILES)
        if c.get("mode") == "wake-graph":
            ok = worst < PLANNER_MS and c["peak_rss_mb"] < PLANNER_MB
            target = "< %d ms, < %d MB **%s**" % (PLANNER_MS, PLANNER_MB, "PASS" if ok else "FAIL")
        elif c["groups"] >= 40000:
            ok = med <= PLANNER_40K_MS + 1e-9
            target = "<= %d ms **%s**" % (PLANNER_40K_MS, "PASS" if ok else "FAIL")
        else:
            target = "–"
        plan = ("%.2f s" % c["plan_cpu_s"]) if "plan_cpu_s" in c else (
            "failed: %s" % c["plan_error"] if "plan_error" in c else "–")
        lines.append("| %s | %d | %d | %s | %s | %s | %s | %.1f MB | %s |" % (
            name, c["tasks"], c["groups"],
            "%.1f (%.1f) ms" % (c["parse_ms"], c["parse_max_ms"]) if "parse_ms" in c else "–",
            "%.1f ms" % c["model_update_ms"] if "model_update_ms" in c else "–",
            " | ".join(dec), plan, c["peak_rss_mb"], target))
    return lines
