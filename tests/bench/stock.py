"""Stock Debian software as benchmark workloads, run privately.

Every server here is started by the harness for one run and stopped after it:
in a temporary directory, listening on a unix socket in that directory or on
127.0.0.1 only, never as a system service. Nothing but loopback is contacted.
Env.close() stops what a run started (SIGTERM, or SIGINT for PostgreSQL's fast
shutdown; SIGKILL after 10 s) and removes its directory; the harness calls it
in a finally block, so also after Ctrl-C.

A workload is a Workload: setup(args, env) starts the server (before placed
starts: a server runs long before anyone places it), run(args, env) drives it
with its stock client and returns the figure. With env.pin set (the ceiling
configuration) the server's tasks and the client are pinned to that one CPU
by hand with sched_setaffinity / taskset, while placed is not running.

The servers' figures are their steady state: the client
runs args.warmup + args.seconds seconds as one process, and only its last
args.seconds count, so a placement decided in the first ticks is measured
after it took effect (the same window for every configuration).

Time to place (watch.py, every 5 ms): from the client's start (sockperf's:
its test's, about 2 s later; it sends nothing before) until the server's
serving thread and the client were both allowed on one and the same CPU.
The serving thread: redis-server's main thread (it serves every client;
--io-threads 1), the PostgreSQL backend forked for the connection
(the postmaster's child whose title is "postgres: postgres postgres
[local] ..."), sockperf's and iperf3's server (one thread each). The client
is one thread in each (redis-benchmark, pgbench -j 1, sockperf, iperf3).

Sessions (wl_*_session, bench.py's --sessions): a new one-connection client
against a server that has already run, for args.session_seconds, its
throughput over the whole session (no warm-up left out) and its time to
place from the session's start.
"""
import glob
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import watch
from switchback import Series


class Workload:
    """kind: "pair" (ceiling measured, target: share of the ceiling's gain),
    "gain" (target: a speed-up over the kernel alone above 1), "noloss"
    (target: speed-up over the kernel alone), None (no target).
    pinnable: the ceiling configuration applies (a pair's two sides).
    sessions: a run is several client sessions against one server and one
    placed, each its own figure (bench.py's --sessions). placed_only: only
    configurations that run placed apply (its own cost is the figure).
    part_of: (workload, key) when this is a second figure of another
    workload's runs, not run by itself. placed_args: extra arguments for
    placed in this workload's runs. series(args, env, seconds): the same
    workload started for that long, reporting its progress as it goes,
    returning (switchback.Series, seconds each sample covers): what
    bench.py --switchback switches placed under."""

    def __init__(self, run, metric, better, label, kind=None, target=None, pinnable=False,
                 setup=None, needs=(), sessions=False, placed_only=False, part_of=None,
                 placed_args=(), series=None):
        self.run, self.setup = run, setup
        self.metric, self.better, self.label = metric, better, label
        self.kind, self.target, self.pinnable = kind, target, pinnable
        self.needs = needs  # (program, Debian package) pairs
        self.sessions, self.placed_only, self.part_of = sessions, placed_only, part_of
        self.placed_args = placed_args
        self.series = series


class Env:
    """What one run owns: a private directory, its server processes, its pin."""

    def __init__(self, pin=None, shared=None, placed=None):
        self.pin = pin
        self.placed = placed  # bench.Placed of this run, or None
        self.shared = shared  # the harness-wide state (Shared) for one-time setups
        self.dir = tempfile.mkdtemp(prefix="placed-bench-run-")
        os.chmod(self.dir, 0o711)  # servers running as another user reach their subdirectory
        self.procs = []
        self.state = {}

    def cmd(self, argv):
        """argv, pinned to the ceiling CPU when this run is the ceiling."""
        return (["taskset", "-c", str(self.pin)] + argv) if self.pin is not None else argv

    def server(self, argv, log, stop_signal=signal.SIGTERM, **kw):
        """Start a server in its own session (a terminal's Ctrl-C reaches the
        harness, which stops it in order) and remember it for close()."""
        out = open(os.path.join(self.dir, log), "w")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, **kw)
        out.close()
        self.procs.append((p, stop_signal))
        return p

    def log_tail(self, log, n=20):
        try:
            return "".join(open(os.path.join(self.dir, log)).readlines()[-n:])
        except OSError:
            return ""

    def pin_server(self, pid):
        """The ceiling: every thread of pid and of its descendants to self.pin."""
        if self.pin is None:
            return
        for tid in process_tree_tids(pid):
            try:
                os.sched_setaffinity(tid, {self.pin})
            except OSError:
                pass  # a thread that just exited

    def close(self):
        for p, sig in reversed(self.procs):
            stop_process(p, sig)
        self.procs = []
        shutil.rmtree(self.dir, ignore_errors=True)


class Shared:
    """State kept across runs: a PostgreSQL data directory made once."""

    def __init__(self):
        self.dir = None
        self.pg = None

    def mkdir(self):
        if not self.dir:
            self.dir = tempfile.mkdtemp(prefix="placed-bench-shared-")
            os.chmod(self.dir, 0o711)
        return self.dir

    def close(self):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def stop_process(p, sig=signal.SIGTERM, grace=10):
    """Stop a server started in its own session, and wait until every process
    of its group is gone: a server's children (hackbench's 1,600) that outlive
    it are reaped by init, and their CPU time would count as another
    process's in the next run."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, sig)
        except OSError:
            p.send_signal(sig)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                p.kill()
            p.wait()
    deadline = time.time() + grace
    while True:
        try:
            os.killpg(p.pid, signal.SIGKILL if time.time() > deadline else 0)
        except OSError:
            return  # no process left in the group
        time.sleep(0.05)
        if time.time() > deadline + grace:
            return


def process_tree_tids(pid):
    tids, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for t in os.listdir("/proc/%d/task" % p):
                tids.append(int(t))
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return tids


def free_port(kind):
    """A free 127.0.0.1 port of kind socket.SOCK_STREAM or SOCK_DGRAM."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, ready, procs, env, log, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if ready():
            return
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError("%s exited (status %s) before it was ready:\n%s" % (
                    what, p.returncode, env.log_tail(log)))
        time.sleep(0.02)
    raise RuntimeError("%s not ready after %d s:\n%s" % (what, timeout, env.log_tail(log)))


def loopback_bound(proto, port, listening):
    """Whether 127.0.0.1:port is bound in /proc/net/{tcp,udp} (TCP: listening)."""
    want = "0100007F:%04X" % port
    with open("/proc/net/" + proto) as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[1] == want and (not listening or cols[3] == "0A"):
                return True
    return False


def unix_connectable(path):
    if not os.path.exists(path):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
            return True
        except OSError:
            return False


class Client:
    """A client process and the watch of it with the server's serving thread
    (serving: a function returning that thread's TID, or None while there is
    none yet). t0 is the client's start (monotonic)."""

    def __init__(self, argv, serving, **kw):
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(argv, **kw)
        pid = self.p.pid

        def pair():
            tid = serving()
            return [(tid, pid)] if tid else None
        self.watch = watch.Watch(resolve=pair)
        self.watch.start()

    def figures(self, t0=None):
        """Time to place from t0 (default: the client's start)."""
        self.watch.stop()
        return self.watch.figures(self.t0 if t0 is None else t0)

    def close(self):
        self.watch.stop()
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def run_for(argv, seconds, serving):
    """Run a client that runs until stopped for `seconds`, then SIGINT it (as
    Ctrl-C would); return its stdout + stderr and its time to place with the
    serving thread."""
    c = Client(argv, serving, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p = c.p
    try:
        try:
            out, _ = p.communicate(timeout=seconds)
            raise RuntimeError("%s ended early (status %d):\n%s" % (argv[0], p.returncode,
                                                                     out[-2000:]))
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            try:
                # redis-benchmark does not end on SIGINT; what it printed is
                # already in the pipe, so waiting longer only costs time.
                out, _ = p.communicate(timeout=2)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
        return out, c.figures()
    finally:
        c.close()


def run_client(argv, timeout, serving):
    """Run a client to its end; return the CompletedProcess-like (returncode,
    stdout, stderr) and the Client (its figures not yet taken)."""
    c = Client(argv, serving, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = c.p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        c.close()
        raise RuntimeError("%s did not end within %d s" % (argv[0], timeout))
    c.watch.stop()
    return c.p.returncode, out, err, c


# --- redis: redis-server on a unix socket, redis-benchmark

def redis_setup(args, env):
    sock = os.path.join(env.dir, "redis.sock")
    p = env.server(["redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                    "--save", "", "--appendonly", "no", "--dir", env.dir, "--daemonize", "no",
                    "--io-threads", "1"], "redis.log")
    wait_for("redis-server", lambda: unix_connectable(sock), [p], env, "redis.log")
    env.pin_server(p.pid)
    env.state["redis_sock"] = sock
    env.state["serving"] = lambda: p.pid  # the main thread serves every client


# redis-benchmark's rate every 250 ms; the first comes at its start, rate 0.
REDIS_RATE = r"rps=([\d.]+) \(overall"


def redis_benchmark(env, clients):
    """redis-benchmark's GETs over clients connections, as long as it runs."""
    return env.cmd(["redis-benchmark", "-s", env.state["redis_sock"], "-c", str(clients), "-n",
                    "1000000000", "-t", "get", "-q"])


def redis_bench(args, env, clients):
    """GET requests/s over the last args.seconds of one redis-benchmark run:
    it prints its instantaneous rate every 250 ms; the first args.warmup
    seconds of samples are left out."""
    total = args.warmup + args.seconds
    out, placed = run_for(redis_benchmark(env, clients), total, env.state["serving"])
    rates = [float(x) for x in re.findall(REDIS_RATE, out)]
    # The first sample comes at the start (rate 0); then one every 250 ms.
    rates = rates[1:]
    skip = int(args.warmup * 4)
    window = rates[skip:]
    if len(window) < 2:
        raise RuntimeError("redis-benchmark printed %d rate samples:\n%s" % (len(rates), out[-2000:]))
    res = {"metric": "GET/s", "value": sum(window) / len(window), "better": "higher",
           "samples": len(window)}
    if clients == 1:
        res.update(placed)
    return res


def series_redis(clients):
    """redis-benchmark for the switchback: its rate every 250 ms (the first, 0, left out)."""
    def series(args, env, seconds):
        return Series(redis_benchmark(env, clients), REDIS_RATE, skip=1), 0.25
    return series


def wl_redis_1c(args, env):
    return redis_bench(args, env, 1)


# A session's steady state begins this long after its start: by then placed
# has placed its pair and judged it (a switchback of 6-8 windows, 0.1 s each).
STEADY_AFTER_S = 1.0


def steady(samples, out):
    """The mean of a session's progress samples in its steady state."""
    if not samples:
        raise RuntimeError("the session reported no progress after its first %g s:\n%s" % (
            STEADY_AFTER_S, out[-2000:]))
    return sum(samples) / len(samples)


def wl_redis_session(args, env):
    """One new redis-benchmark -c 1 for args.session_seconds: GET/s over the
    whole session, redis-benchmark's own overall rate at its last report
    (every 250 ms)."""
    out, placed = run_for(redis_benchmark(env, 1), args.session_seconds, env.state["serving"])
    overall = re.findall(r"rps=[\d.]+ \(overall: ([\d.]+)\)", out)
    if not overall:
        raise RuntimeError("redis-benchmark printed no rate:\n%s" % out[-2000:])
    # Its steady state: the 250 ms samples after the first STEADY_AFTER_S (the
    # first sample, at the start, is 0).
    rates = [float(x) for x in re.findall(REDIS_RATE, out)][1 + int(STEADY_AFTER_S * 4):]
    res = {"metric": "GET/s", "value": float(overall[-1]), "better": "higher",
           "steady_value": steady(rates, out)}
    res.update(placed)
    return res


def wl_redis_32c(args, env):
    return redis_bench(args, env, 32)


# --- PostgreSQL: a private cluster made once, a postmaster per run, pgbench

def pg_bindir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


def pg_user():
    """Who runs PostgreSQL (it refuses root): as root the postgres user, else
    the harness's own user. Returns uid, gid and the Popen arguments."""
    if os.geteuid() != 0:
        return os.getuid(), os.getgid(), {}
    try:
        pw = pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("no postgres user: install the postgresql package (make deps)")
    return pw.pw_uid, pw.pw_gid, {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


def pg_prepare(args, shared):
    """initdb (as the postgres user when root) into a private directory and
    fill pgbench's tables (scale 1): once per harness run."""
    if shared.pg:
        return shared.pg
    bindir = pg_bindir()
    uid, gid, as_user = pg_user()
    top = os.path.join(shared.mkdir(), "pg")
    os.mkdir(top, 0o700)
    os.chown(top, uid, gid)
    data = os.path.join(top, "data")
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": top}
    r = subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
                        "--no-sync", "-E", "UTF8", "--locale=C"], cwd=top, env=env,
                       capture_output=True, text=True, **as_user)
    if r.returncode:
        raise RuntimeError("initdb failed:\n" + r.stdout + r.stderr)
    pg = {"bindir": bindir, "data": data, "top": top, "uid": uid, "gid": gid, "env": env,
          "as_user": as_user}
    e = Env(shared=shared)
    try:
        pg_start(e, pg)
        pgbench(e, pg, ["-i", "-s", "1", "-q"])
    finally:
        e.close()
    shared.pg = pg
    return pg


def pg_start(env, pg):
    """The postmaster on a unix socket in this run's directory, no TCP."""
    sockdir = os.path.join(env.dir, "pgsock")
    os.mkdir(sockdir, 0o700)
    os.chown(sockdir, pg["uid"], pg["gid"])
    p = env.server([os.path.join(pg["bindir"], "postgres"), "-D", pg["data"],
                    "-c", "listen_addresses=", "-c", "unix_socket_directories=" + sockdir,
                    "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                    "-c", "logging_collector=off"],
                   "postgres.log", stop_signal=signal.SIGINT,  # SIGINT: fast shutdown
                   cwd=pg["top"], env=pg["env"], **pg["as_user"])
    wait_for("postgres", lambda: unix_connectable(os.path.join(sockdir, ".s.PGSQL.5432")),
             [p], env, "postgres.log")
    # Accepting connections follows the socket by a moment.
    deadline = time.time() + 15
    while subprocess.run([os.path.join(pg["bindir"], "pg_isready"), "-q", "-h", sockdir, "-U",
                          "postgres"]).returncode != 0:
        if time.time() > deadline or p.poll() is not None:
            raise RuntimeError("postgres does not accept connections:\n" +
                               env.log_tail("postgres.log"))
        time.sleep(0.05)
    env.state["pg_sock"] = sockdir
    env.state["serving"] = lambda: pg_backend(p.pid)
    return p


def pg_backend(postmaster):
    """The backend serving pgbench's connection: the postmaster's newest child
    whose title says user and database postgres over the unix socket (not
    the checkpointer and the other helpers). None while there is none."""
    best = None
    try:
        with open("/proc/%d/task/%d/children" % (postmaster, postmaster)) as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        return None
    for c in children:
        try:
            with open("/proc/%d/cmdline" % c, "rb") as f:
                title = f.read()
            with open("/proc/%d/stat" % c) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            start = int(fields[19])
        except (OSError, ValueError, IndexError):
            continue
        if fields[0] in ("Z", "X"):  # a connection that ended, not yet reaped
            continue
        if title.startswith(b"postgres: postgres postgres [local]"):
            if best is None or start >= best[0]:
                best = (start, c)
    return best[1] if best else None


def pgbench_argv(env, pg, extra):
    return env.cmd([os.path.join(pg["bindir"], "pgbench"), "-h", env.state["pg_sock"],
                    "-U", "postgres"] + extra + ["postgres"])


def pgbench(env, pg, extra):
    r = subprocess.run(pgbench_argv(env, pg, extra), capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError("pgbench %s failed:\n%s%s" % (" ".join(extra), r.stdout, r.stderr))
    return r.stdout + r.stderr


def pgbench_watched(env, extra, seconds):
    """pgbench run to its end, watched with its backend: output and Client."""
    rc, out, err, c = run_client(pgbench_argv(env, env.shared.pg, extra), seconds + 60,
                                 env.state["serving"])
    if rc:
        raise RuntimeError("pgbench %s failed:\n%s%s" % (" ".join(extra), out, err))
    return out + err, c


def pg_setup(args, env):
    pg = pg_prepare(args, env.shared)
    p = pg_start(env, pg)
    # Pinning the postmaster pins the backend it forks for pgbench's connection.
    env.pin_server(p.pid)


def wl_pg_1c(args, env):
    """pgbench -S (one indexed SELECT a transaction), one connection: the
    mean of its per-second progress reports after the warm-up."""
    return pg_select(args, env, 1)


def wl_pg_8c(args, env):
    """pgbench -S with 8 connections (two pgbench threads): eight backends
    and their clients, more than the CPUs, which must not lose."""
    return pg_select(args, env, 8)


def pgbench_threads(clients):
    """pgbench's -j for clients connections: two threads for more than one."""
    return ["-j", "2"] if clients > 1 else []


# pgbench -P's per-second report: its time, its tps.
PGBENCH_PROGRESS = r"progress: ([\d.]+) s, ([\d.]+) tps"


def pg_select(args, env, clients):
    """pgbench -S over clients connections: the mean of its per-second
    progress reports after the warm-up."""
    # With -j, pgbench prints no progress line for the last second: one more.
    threads = pgbench_threads(clients)
    warm, secs = int(round(args.warmup)), max(2, int(round(args.seconds))) + len(threads) // 2
    out, client = pgbench_watched(env, ["-c", str(clients)] + threads +
                                  ["-S", "-T", str(warm + secs), "-P", "1"], warm + secs)
    tps = [(float(t), float(v)) for t, v in re.findall(PGBENCH_PROGRESS, out)]
    window = [v for t, v in tps if t > warm + 0.5]
    if len(window) < 2:
        raise RuntimeError("pgbench printed %d progress lines:\n%s" % (len(tps), out[-2000:]))
    res = {"metric": "SELECT tps", "value": sum(window) / len(window), "better": "higher",
           "samples": len(window)}
    res.update(client.figures())
    return res


def series_pg(clients):
    """pgbench -S over clients connections for the switchback: its tps each second."""
    def series(args, env, seconds):
        return Series(pgbench_argv(env, env.shared.pg, ["-c", str(clients)] + pgbench_threads(
            clients) + ["-S", "-T", str(int(seconds)), "-P", "1"]), PGBENCH_PROGRESS, value=2), 1.0
    return series


def wl_pg_session(args, env):
    """One new pgbench -c 1 -S for args.session_seconds (whole seconds, at
    least 1): its transactions over the session's length, connecting
    included."""
    secs = max(1, int(round(args.session_seconds)))
    out, client = pgbench_watched(env, ["-c", "1", "-S", "-T", str(secs), "-P", "1"], secs)
    n = re.search(r"number of transactions actually processed: (\d+)", out)
    if not n:
        raise RuntimeError("pgbench printed no transaction count:\n%s" % out[-2000:])
    # Its steady state: the per-second reports of the seconds after the first
    # STEADY_AFTER_S.
    tps = [float(v) for t, v in re.findall(PGBENCH_PROGRESS, out) if float(t) > STEADY_AFTER_S + 0.5]
    res = {"metric": "SELECT tps", "value": int(n.group(1)) / secs, "better": "higher",
           "steady_value": steady(tps, out)}
    res.update(client.figures())
    return res


# --- UDP request/response over loopback: sockperf server + sockperf ping-pong

def sockperf_setup(args, env):
    port = free_port(socket.SOCK_DGRAM)
    p = env.server(["sockperf", "server", "-i", "127.0.0.1", "-p", str(port)], "sockperf.log")
    wait_for("sockperf server", lambda: loopback_bound("udp", port, False), [p], env, "sockperf.log")
    env.pin_server(p.pid)
    env.state["udp_port"] = port
    env.state["serving"] = lambda: p.pid  # one thread


def wl_udp_1c(args, env):
    """Round trips/s of one sockperf ping-pong client (14-byte UDP messages,
    one in flight) over the last args.seconds: its full log has every
    message's send and receive time. sockperf's own warm-up (0.4 s) is the
    start of the harness's warm-up."""
    log = os.path.join(env.dir, "sockperf.csv")
    # sockperf sleeps 2 s after it starts, sends its warm-up messages and runs
    # the test for -t seconds (its first 0.4 s are not logged).
    total = int(args.warmup + args.seconds + 0.999)
    rc, out, err, client = run_client(
        env.cmd(["sockperf", "ping-pong", "-i", "127.0.0.1", "-p", str(env.state["udp_port"]),
                 "-t", str(total), "--full-log", log]), total + 30, env.state["serving"])
    if rc:
        raise RuntimeError("sockperf ping-pong failed:\n" + out + err)
    tx = sockperf_log(log, out)
    start = tx[0] - 0.4 + args.warmup
    rate, span = round_trip_rate(tx, start)
    if rate is None or span < args.seconds / 2:
        raise RuntimeError("sockperf's log covers %.2f s, less than the warm-up" % (tx[-1] - tx[0]))
    res = {"metric": "round trips/s", "value": rate, "better": "higher",
           "window_s": round(span, 3)}
    # sockperf sends nothing for about 2 s after it starts (strace: its first
    # sendto 2.1 s after exec): time to place counts from its test's start,
    # the first logged message less the 0.4 s it does not log.
    res["test_start_s"] = round(tx[0] - 0.4, 3)
    res.update(client.figures(client.t0 + tx[0] - 0.4))
    return res


def round_trip_rate(tx, since):
    """Round trips/s of those of the send times tx (sockperf_log) from since
    on, and the seconds they span; None for the rate where they span none."""
    window = [t for t in tx if t >= since]
    span = window[-1] - window[0] if len(window) > 1 else 0.0
    return ((len(window) - 1) / span if span > 0 else None), span


def sockperf_log(log, out):
    """Send times of the round trips in a --full-log (seconds from the
    client's start)."""
    tx = []
    with open(log) as f:
        for line in f:
            m = re.match(r"^\s*\d+,\s*([\d.]+),\s*([\d.]+),", line)
            if m and float(m.group(2)) > 0:
                tx.append(float(m.group(1)))
    if len(tx) < 100:
        raise RuntimeError("sockperf logged %d round trips:\n%s" % (len(tx), out[-2000:]))
    return tx


def wl_udp_session(args, env):
    """One new sockperf ping-pong for args.session_seconds (whole seconds, at
    least 1), without its warm-up messages: its round trips over the whole
    test ([Total Run], the first 0.4 s included, which its own figures leave
    out). sockperf sends nothing for about 2 s after its start: the
    session, and its time to place, start at the test's start, the first
    logged message less those 0.4 s (its log's times count from about the
    client's start)."""
    secs = max(1, int(round(args.session_seconds)))
    log = os.path.join(env.dir, "sockperf-session.csv")
    rc, out, err, client = run_client(
        env.cmd(["sockperf", "ping-pong", "-i", "127.0.0.1", "-p", str(env.state["udp_port"]),
                 "-t", str(secs), "--dontwarmup", "--full-log", log]), secs + 30,
        env.state["serving"])
    if rc:
        raise RuntimeError("sockperf ping-pong failed:\n" + out + err)
    total = re.search(r"\[Total Run\] RunTime=([\d.]+) sec;.*ReceivedMessages=(\d+)", out)
    if not total:
        raise RuntimeError("sockperf printed no [Total Run] line:\n" + out[-2000:])
    tx = sockperf_log(log, out)
    start = tx[0] - 0.4
    # Its steady state: the round trips sent after the first STEADY_AFTER_S.
    rate, _ = round_trip_rate(tx, start + STEADY_AFTER_S)
    res = {"metric": "round trips/s", "value": int(total.group(2)) / float(total.group(1)),
           "better": "higher", "test_start_s": round(start, 3),
           "steady_value": steady([] if rate is None else [rate], out)}
    res.update(client.figures(client.t0 + start))
    return res


# --- a streaming pair over loopback TCP: iperf3, one stream

def iperf3_setup(args, env):
    port = free_port(socket.SOCK_STREAM)
    p = env.server(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)], "iperf3.log")
    wait_for("iperf3 server", lambda: loopback_bound("tcp", port, True), [p], env, "iperf3.log")
    env.pin_server(p.pid)
    env.state["tcp_port"] = port
    env.state["serving"] = lambda: p.pid  # one thread (iperf3 before 3.16)


def wl_stream(args, env):
    """Gbit/s received by the server over one TCP stream over loopback; iperf3
    omits the first args.warmup seconds itself (-O)."""
    secs = max(1, int(round(args.seconds)))
    warm = int(round(args.warmup))
    rc, out, err, client = run_client(
        env.cmd(["iperf3", "-c", "127.0.0.1", "-p", str(env.state["tcp_port"]), "-t", str(secs),
                 "-O", str(warm), "-J"]), secs + warm + 30, env.state["serving"])
    try:
        res = json.loads(out)
        bps = res["end"]["sum_received"]["bits_per_second"]
    except (ValueError, KeyError):
        raise RuntimeError("iperf3 client failed (status %d):\n%s%s" % (rc, out[-2000:], err))
    # Each measured second's rate: whether a run's figure is one level or a
    # change within the run (results.json).
    per_s = [round(i["sum"]["bits_per_second"] / 1e9, 3) for i in res.get("intervals", [])
             if not i["sum"].get("omitted")]
    fig = {"metric": "Gbit/s", "value": bps / 1e9, "better": "higher", "interval_gbps": per_s,
           "cpu_utilization_percent": res["end"].get("cpu_utilization_percent")}
    fig.update(client.figures())
    return fig


def series_stream(args, env, seconds):
    """The stream for the switchback: the client's Gbit/s each second."""
    return Series(env.cmd(["iperf3", "-c", "127.0.0.1", "-p", str(env.state["tcp_port"]), "-t",
                           str(int(seconds)), "-i", "1", "--forceflush", "-f", "g"]),
                  r"^\[\s*\d+\]\s+[\d.]+-[\d.]+\s+sec\s+\S+ \S+\s+([\d.]+) Gbits/sec"
                  r"(?!.*(?:sender|receiver))"), 1.0


# --- many threads contending on one lock: sysbench threads

def sysbench_threads(args, seconds, extra=()):
    """sysbench threads: args.threads threads on one mutex for seconds."""
    return ["sysbench", "threads", "--threads=%d" % args.threads, "--thread-locks=1",
            "--thread-yields=10", "--time=%d" % seconds] + list(extra) + ["run"]


def wl_threads(args, env):
    """sysbench's threads test: args.threads threads contending one pthread
    mutex (each event: 10 rounds of lock, sched_yield, unlock); the figure is
    events per second over args.seconds."""
    secs = max(1, int(round(args.seconds)))
    r = subprocess.run(sysbench_threads(args, secs), capture_output=True, text=True, timeout=secs + 60)
    t = re.search(r"total time:\s+([\d.]+)s", r.stdout)
    n = re.search(r"total number of events:\s+(\d+)", r.stdout)
    if r.returncode or not t or not n:
        raise RuntimeError("sysbench threads failed (status %d):\n%s" % (
            r.returncode, (r.stdout + r.stderr)[-2000:]))
    return {"metric": "events/s", "value": int(n.group(1)) / float(t.group(1)), "better": "higher"}


def series_threads(args, env, seconds):
    """sysbench threads for the switchback: its events/s each second."""
    return Series(sysbench_threads(args, int(seconds), ["--report-interval=1"]),
                  r"eps: ([\d.]+)"), 1.0
