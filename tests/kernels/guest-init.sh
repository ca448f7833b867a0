#!/bin/bash
# PID 1 of a matrix VM (after the initramfs switch_root'ed into the host's
# root, read-only over 9p): mounts what the tests need, among them cgroup v2
# with the cpuset controller enabled, runs the tests named in
# /run/placed-results/run.env with tests/run-tests.sh (their logs go to the
# results share, bound over BUILD/tests/logs), writes the closing line of
# all of them to /run/placed-results/summary and powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb
res=/run/placed-results

poweroff_now() {
    sync
    echo 1 >/proc/sys/kernel/sysrq
    echo o >/proc/sysrq-trigger
    sleep 30
}
trap poweroff_now EXIT

# shellcheck source=/dev/null
. "$res/run.env" || { echo "guest: no $res/run.env"; exit 1; }
say() { echo "guest: $*"; }

mkdir -p /dev/shm /dev/pts
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t devpts devpts /dev/pts
mount -t cgroup2 cgroup2 /sys/fs/cgroup || say "cannot mount cgroup v2"
echo +cpuset >/sys/fs/cgroup/cgroup.subtree_control || say "cannot enable the cpuset controller"
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
mount --bind "$res/logs" "$PLACED_BUILD/tests/logs" || { say "cannot bind the logs"; exit 1; }
# Switch on, for the whole run, the static keys the tests would otherwise
# flip again and again: each flip patches kernel text, which qemu's
# multi-threaded TCG can show half-done to the other vCPU (seen once on 6.12:
# "Oops: int3" in try_to_wake_up when a test attached to sched_waking). The
# tracepoint (an ftrace event), bpf_stats and the cpuset key (a cpuset
# cgroup that stays) are then on before any test runs.
echo 1 >/sys/kernel/tracing/events/sched/sched_waking/enable || say "cannot enable sched_waking"
echo 0 >/sys/kernel/tracing/tracing_on # the event stays attached, its records are not written
echo 1 >/proc/sys/kernel/bpf_stats_enabled || say "cannot enable bpf_stats"
mkdir -p /sys/fs/cgroup/placed-matrix-keep || say "cannot create a cpuset cgroup"
# Those flips happen while CPU 0 runs alone (maxcpus=1; a flip at boot with
# both running crashed 6.12 the same way): now the other CPUs come online.
for c in /sys/devices/system/cpu/cpu[0-9]*/online; do echo 1 >"$c"; done
hostname "placed-matrix" 2>/dev/null || true
ip link set lo up || say "cannot bring up loopback" # the live tests' TCP and UDP pairs

say "kernel $(uname -r), $(nproc) CPUs, cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none)"
say "cgroup v2 controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

passed=0 failed=0 skipped=0
for t in $PLACED_MATRIX_TESTS; do
    # The idle test where the guest has idle states (TCG gives no cpuidle driver).
    if [ "$t" = test-idle-live ] && [ ! -e /sys/devices/system/cpu/cpu0/cpuidle/state0 ]; then
        line="SKIP  test-idle-live.sh                no idle states in this guest (cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none))"
        echo "$line" | tee -a "$res/results"
        skipped=$((skipped + 1))
        continue
    fi
    out=$(cd "$PLACED_SRC" && tests/run-tests.sh "$PLACED_BUILD" "$t" 2>&1)
    echo "$out"
    read -r p _ f _ s _ < <(echo "$out" | tail -n 1)
    [[ $p =~ ^[0-9]+$ && $f =~ ^[0-9]+$ && $s =~ ^[0-9]+$ ]] || { p=0 f=1 s=0; say "$t: no closing line"; }
    [ $((p + f + s)) -gt 0 ] || { f=1; say "$t: no such test was run"; }
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    echo "$out" | grep -E '^(PASS|FAIL|SKIP) ' >>"$res/results"
done
echo "$passed passed, $failed failed, $skipped skipped" | tee "$res/summary"
