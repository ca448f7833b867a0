#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What the wake sampler costs: hackbench, perf bench sched pipe and a UDP and
# a TCP request/response pair over loopback (tests/bench/netpair: every
# wakeup in softirq context), each run alternately without placed and with
# placed sampling (--dry-run), REPS times.
# A benchmark, not a test: run it by hand (as root), never from make check.
#
#   tests/bench/sampler-cost.sh [--build DIR] [--placed BIN] [--reps N]
#                               [--hackbench-loops N] [--pipe-loops N]
#                               [--udp-round-trips N] [--tcp-round-trips N]
#                               [--workloads "hackbench pipe udp tcp"] [--out DIR]
#
# Reports, per workload, from CPU accounting (the wall clock of identical runs
# varies by several percent on these machines, so it is only a cross-check):
#   - the sampler's ns per wakeup: bpf_stats run_time_ns of all placed's
#     programs but the task iterator (sched_waking and the IRQ, hrtimer and
#     timer markers) / run_cnt of its sched_waking program, over the
#     workload's run; and of that, the sched_waking program's own (the rest
#     is the markers');
#   - the sampler's share of the machine's CPU: run_time_ns / (wall * CPUs);
#   - the daemon's own share: utime + stime of placed (/proc/PID/stat) over the
#     workload's run / (wall * CPUs);
#   - the wall-clock ratio placed / kernel alone, per alternation pair: median
#     and min-max.
# Prints a Markdown table and writes OUT/sampler-cost.json (OUT defaults to
# build/bench). kernel.bpf_stats_enabled is set to 1 for the run and put back
# to its previous value on exit, also after Ctrl-C.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=build
PLACED=
REPS=5
HACKBENCH_LOOPS=2000
PIPE_LOOPS=500000
UDP_ROUND_TRIPS=300000
TCP_ROUND_TRIPS=300000
WORKLOADS="hackbench pipe udp tcp"
OUT=

while [ $# -gt 0 ]; do
        case "$1" in
        --build) BUILD=$2; shift 2 ;;
        --placed) PLACED=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --hackbench-loops) HACKBENCH_LOOPS=$2; shift 2 ;;
        --pipe-loops) PIPE_LOOPS=$2; shift 2 ;;
        --udp-round-trips) UDP_ROUND_TRIPS=$2; shift 2 ;;
        --tcp-round-trips) TCP_ROUND_TRIPS=$2; shift 2 ;;
        --workloads) WORKLOADS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h | --help) sed -n '3,28p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
        esac
done
cd "$SRC"
PLACED=${PLACED:-$BUILD/placed}
OUT=${OUT:-$BUILD/bench}

if [ "$(id -u)" != 0 ]; then
        echo "sampler-cost: needs root (BPF, bpf_stats)" >&2
        exit 1
fi
for tool in perf bpftool python3; do
        command -v "$tool" >/dev/null || { echo "sampler-cost: $tool is missing" >&2; exit 1; }
done
[ -x "$PLACED" ] || { echo "sampler-cost: $PLACED not built (make BUILD=$BUILD)" >&2; exit 1; }
NETPAIR=$BUILD/bench/netpair
[ -x "$NETPAIR" ] || { echo "sampler-cost: $NETPAIR not built (make $NETPAIR)" >&2; exit 1; }

NCPU=$(nproc)
HZ=$(getconf CLK_TCK)
PROG_NAME=wake_sched_waki # the kernel keeps 15 characters of the name
ITER_NAME=wake_task_iter
PROG_ID=    # the sampler's sched_waking program
PROG_IDS=   # it and its markers: every new program but the iterator
TMP=$(mktemp -d)
STATS_BEFORE=$(cat /proc/sys/kernel/bpf_stats_enabled)
PLACED_PID=

cleanup() {
        if [ -n "$PLACED_PID" ]; then
                kill -TERM "$PLACED_PID" 2>/dev/null || true
                wait "$PLACED_PID" 2>/dev/null || true
        fi
        echo "$STATS_BEFORE" >/proc/sys/kernel/bpf_stats_enabled
        rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM # bash runs it when the running workload ends

echo 1 >/proc/sys/kernel/bpf_stats_enabled
mkdir -p "$TMP/journal" "$OUT"
cat >"$TMP/placed.conf" <<EOF
[daemon]
journal_dir = $TMP/journal
EOF

now_ns() { date +%s%N; }

# Ids of the loaded programs whose name starts with $1, or all but those
# starting with $2 (bpftool 7.1 prints the full BTF name, older ones the
# kernel's 15 characters).
prog_ids() {
        bpftool prog show -j | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    name = p.get("name", "")
    if name.startswith(sys.argv[1]) and not (sys.argv[2] and name.startswith(sys.argv[2])):
        print(p["id"])' "$1" "${2:-}"
}

# run_time_ns summed over the programs in PROG_IDS, run_cnt and run_time_ns of PROG_ID.
prog_stats() {
        bpftool prog show -j | python3 -c '
import json, sys
ids = set(int(i) for i in sys.argv[2].split())
ns = cnt = own = 0
for p in json.load(sys.stdin):
    if p["id"] in ids:
        ns += p.get("run_time_ns", 0)
    if p["id"] == int(sys.argv[1]):
        cnt = p.get("run_cnt", 0)
        own = p.get("run_time_ns", 0)
print(ns, cnt, own)' "$PROG_ID" "$PROG_IDS"
}

# utime + stime of a process, in clock ticks.
proc_ticks() {
        awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# Starts placed and sets PLACED_PID, PROG_ID (its sampler: the one new id)
# and PROG_IDS.
placed_start() {
        local before all_before
        before=$(prog_ids "$PROG_NAME")
        all_before=$(prog_ids "")
        "$PLACED" --foreground --dry-run --bus none --config "$TMP/placed.conf" \
                --profiles-dir conf/profiles --log-level warning >"$TMP/placed.log" 2>&1 &
        PLACED_PID=$!
        for _ in $(seq 50); do
                sleep 0.1
                kill -0 "$PLACED_PID" 2>/dev/null || break
                PROG_ID=$(prog_ids "$PROG_NAME" | grep -vxF -e "$before" -e "" | head -n 1 || true)
                if [ -n "$PROG_ID" ]; then
                        PROG_IDS=$(prog_ids "" "$ITER_NAME" | grep -vxF -e "$all_before" -e "" |
                                tr '\n' ' ')
                        sleep 1.5 # past its first ticks
                        return 0
                fi
        done
        echo "sampler-cost: placed did not load its sampler:" >&2
        cat "$TMP/placed.log" >&2
        exit 1
}

placed_stop() {
        kill -TERM "$PLACED_PID"
        wait "$PLACED_PID" || true
        PLACED_PID=
}

workload() {
        case "$1" in
        hackbench) perf bench sched messaging -g 4 -l "$HACKBENCH_LOOPS" >/dev/null ;;
        pipe) perf bench sched pipe -l "$PIPE_LOOPS" >/dev/null ;;
        udp) "$NETPAIR" -t udp -n "$UDP_ROUND_TRIPS" >/dev/null ;;
        tcp) "$NETPAIR" -t tcp -n "$TCP_ROUND_TRIPS" >/dev/null ;;
        *) echo "sampler-cost: unknown workload $1" >&2; exit 2 ;;
        esac
}

# One run: prints "workload mode rep wall_ns bpf_ns bpf_cnt daemon_ticks own_ns".
run_one() {
        local w=$1 mode=$2 rep=$3 t0 t1 s0 s1 d0=0 d1=0
        if [ "$mode" = placed ]; then
                placed_start
                s0=$(prog_stats "$PROG_ID")
                d0=$(proc_ticks "$PLACED_PID")
        fi
        t0=$(now_ns)
        workload "$w"
        t1=$(now_ns)
        if [ "$mode" = placed ]; then
                s1=$(prog_stats "$PROG_ID")
                d1=$(proc_ticks "$PLACED_PID")
                placed_stop
                set -- $s0 $s1
                echo "$w $mode $rep $((t1 - t0)) $(($4 - $1)) $(($5 - $2)) $((d1 - d0))" \
                        "$(($6 - $3))"
        else
                echo "$w $mode $rep $((t1 - t0)) 0 0 0 0"
        fi
}

echo "sampler-cost: $REPS alternations of $WORKLOADS (hackbench -g 4 -l $HACKBENCH_LOOPS," \
        "pipe -l $PIPE_LOOPS, udp/tcp netpair -n $UDP_ROUND_TRIPS/$TCP_ROUND_TRIPS)," \
        "$NCPU CPUs, placed = $PLACED" >&2
for rep in $(seq "$REPS"); do
        for w in $WORKLOADS; do
                # Alternate which goes first, so slow drift hits both alike.
                if [ $((rep % 2)) = 1 ]; then order="kernel placed"; else order="placed kernel"; fi
                for mode in $order; do
                        run_one "$w" "$mode" "$rep" >>"$TMP/runs.txt"
                        tail -n 1 "$TMP/runs.txt" >&2
                done
        done
done

python3 - "$TMP/runs.txt" "$OUT/sampler-cost.json" "$NCPU" "$HZ" "$PLACED" "$REPS" <<'EOF'
import json, statistics, sys

runs_path, out_path, ncpu, hz, placed, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
runs = {}
for line in open(runs_path):
    w, mode, rep, wall, bpf_ns, bpf_cnt, ticks, own_ns = line.split()
    runs.setdefault(w, {}).setdefault(int(rep), {})[mode] = dict(
        wall_ns=int(wall), bpf_ns=int(bpf_ns), bpf_cnt=int(bpf_cnt), daemon_ticks=int(ticks),
        own_ns=int(own_ns))

def summary(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)} if xs else None

result = {"ncpu": ncpu, "placed": placed, "reps": reps, "workloads": {}}
for w, by_rep in runs.items():
    pairs = [r for r in by_rep.values() if "kernel" in r and "placed" in r]
    p = [r["placed"] for r in pairs]
    ns_per = [r["bpf_ns"] / r["bpf_cnt"] for r in p if r["bpf_cnt"]]
    own_per = [r["own_ns"] / r["bpf_cnt"] for r in p if r["bpf_cnt"]]
    cap = [r["wall_ns"] * ncpu for r in p]
    bpf_pct = [100.0 * r["bpf_ns"] / c for r, c in zip(p, cap)]
    daemon_pct = [100.0 * r["daemon_ticks"] * 1e9 / hz / c for r, c in zip(p, cap)]
    total_pct = [a + b for a, b in zip(bpf_pct, daemon_pct)]
    ratio = [r["placed"]["wall_ns"] / r["kernel"]["wall_ns"] for r in pairs]
    wakeups_per_s = [r["bpf_cnt"] / (r["wall_ns"] / 1e9) for r in p]
    result["workloads"][w] = {
        "pairs": len(pairs),
        "ns_per_wakeup": summary(ns_per),
        "own_ns_per_wakeup": summary(own_per),
        "wakeups_per_s": summary(wakeups_per_s),
        "sampler_cpu_pct": summary(bpf_pct),
        "daemon_cpu_pct": summary(daemon_pct),
        "total_cpu_pct": summary(total_pct),
        "wall_ratio": summary(ratio),
        "wall_s_kernel": summary([r["kernel"]["wall_ns"] / 1e9 for r in pairs]),
        "wall_s_placed": summary([r["placed"]["wall_ns"] / 1e9 for r in pairs]),
        "runs": by_rep,
    }
with open(out_path, "w") as f:
    json.dump(result, f, indent=2)

def fmt(s, spec, unit=""):
    if not s:
        return "-"
    return f"{s['median']:{spec}}{unit} ({s['min']:{spec}}–{s['max']:{spec}})"

print(f"\nSampler cost, {ncpu} CPUs, {reps} alternations (median (min–max)); {out_path}\n")
print("| workload | ns/wakeup | of which sched_waking's | wakeups/s | sampler CPU | daemon CPU | sampler+daemon | wall placed/kernel |")
print("|---|---|---|---|---|---|---|---|")
for w, r in result["workloads"].items():
    print(f"| {w} | {fmt(r['ns_per_wakeup'], '.0f')} | {fmt(r['own_ns_per_wakeup'], '.0f')} "
          f"| {fmt(r['wakeups_per_s'], '.3g')} "
          f"| {fmt(r['sampler_cpu_pct'], '.3f', '%')} | {fmt(r['daemon_cpu_pct'], '.3f', '%')} "
          f"| {fmt(r['total_cpu_pct'], '.3f', '%')} | {fmt(r['wall_ratio'], '.3f')} |")
EOF
