"""The benchmark's switchback: placed switched on and off under one run.

The no-loss verdicts ask whether a workload runs slower with placed than
with the kernel alone. Run as separate runs, a pair of runs differs by more
than placed could: on the 2-CPU development VM, pgbench -c 8 varied by 17%
(sd of the log ratio) between adjacent runs of the same configuration, redis
-c 32 by 16%, the stream by 8%, because each run starts its server, clients
and connections afresh and lands on its own phase of a shared host. Under
one long run of the workload, those are the same for every block, and a
block placed started in is compared with the kernel's blocks beside it:
pgbench -c 8 with placed in advise mode switched on and off in 8-second
blocks varied by 5.5% a block.

So, with bench.py --switchback, a workload that reports its progress every
second (or faster) runs once, for as long as its verdict needs, and the
configurations take turns in blocks of --block seconds, one block each per
repetition in the same rotating order as separate runs (two configurations:
kernel, placed, placed, kernel, ...: ABBA). A block of placed starts a
placed of its own (its sampler loaded, its trial run, as when the workload
starts under a running placed) and stops it at the block's end, its changes
undone, before the next block starts. The first --block-settle seconds of
every block are left out, of placed's and of the kernel's alike (placed's
start, loading its BPF programs, costs pgbench about a second at 80%; the
end of the previous block's placed); placed's trial is not, where it lasts
longer. A block's figure is the mean of the progress samples that the
workload printed within the rest of it; bench.py judges the blocks as it
judges runs: per repetition, each configuration against the kernel's block
of the same repetition.

How long a block: the host drifts over seconds (sysbench threads alone,
1 s figures: lag-1 autocorrelation 0.75), so shorter blocks pair better,
down to what placed's start and the previous placed's stop need left out.
Where placed places nothing (threads, pgbench -c 8), --block 5
--block-settle 1.5 gave verdicts of power 0.93-0.98 at 60 repetitions,
where 8 s blocks had 0.35-0.39 at 24 (docs/benchmarks.md, "what watching
costs"). Where placed tries the workload, a block holds a trial, which a
shorter block weighs more: the default stays 8 s, 2 s left out.

What it does not measure: what placed does in the first seconds of a
workload's life (the separate runs and time to place measure that), and the
ceiling (no hand pinning under a running workload).

Series(argv, pattern) runs the workload process and stamps each progress
line on arrival (time.monotonic()); block_samples() and block_mean() are
the pure part.
"""
import os
import re
import subprocess
import threading
import time


class Series:
    """A workload process that prints its progress: each line (ended by \\n or
    \\r) matching pattern becomes a sample (arrival time, float of the
    pattern's group number value * scale); the first skip are left out."""

    def __init__(self, argv, pattern, scale=1.0, skip=0, value=1, **popen):
        self.pattern = re.compile(pattern)
        self.scale, self.skip, self.value = scale, skip, value
        self.lock = threading.Lock()
        self._samples = []
        self.tail = b""  # the last output, for an error
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, **popen)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        pending = b""
        while True:
            data = os.read(self.p.stdout.fileno(), 65536)
            if not data:
                return
            now = time.monotonic()
            self.tail = (self.tail + data)[-4000:]
            lines = re.split(rb"[\r\n]", pending + data)
            pending = lines.pop()
            for line in lines:
                m = self.pattern.search(line.decode(errors="replace"))
                if not m:
                    continue
                if self.skip:
                    self.skip -= 1
                    continue
                with self.lock:
                    self._samples.append((now, float(m.group(self.value)) * self.scale))

    def samples(self):
        with self.lock:
            return list(self._samples)

    def check_alive(self, what):
        if self.p.poll() is not None:
            raise RuntimeError("%s ended during the switchback (status %d):\n%s" % (
                what, self.p.returncode, self.tail.decode(errors="replace")[-2000:]))

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(2)  # SIGINT, as Ctrl-C
            try:
                self.p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.p.kill()  # redis-benchmark does not end on SIGINT
                self.p.wait()
        self.reader.join(timeout=5)
        self.p.stdout.close()


def block_samples(samples, start, end, period):
    """The values of the samples that cover a stretch wholly inside [start,
    end]: a sample arriving at t covers [t - period, t]; 50 ms of slack for
    the line's way through the pipe."""
    return [v for t, v in samples if t - period >= start - 0.05 and t <= end + 0.05]


def block_mean(samples, start, end, period):
    """The mean of block_samples() and those values; (None, []) when there
    is none."""
    xs = block_samples(samples, start, end, period)
    return (sum(xs) / len(xs) if xs else None), xs
