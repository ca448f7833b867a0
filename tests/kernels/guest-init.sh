#!/bin/bash
# PID 1 of a matrix VM (after the initramfs switch_root'ed into the host's
# root, read-only over 9p): mounts what the tests need, among them cgroup v2
# with the cpuset controller enabled, runs the tests named in
# /run/placed-results/run.env with tests/kernels/run-set.sh (their logs go
# to the results share, bound over BUILD/tests/logs; their closing line to
# /run/placed-results/summary) and powers off.
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

set -a # run-set.sh and the tests see all of it
# shellcheck source=/dev/null
. "$res/run.env" || { echo "guest: no $res/run.env"; exit 1; }
set +a
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
# No kernel text is patched while both vCPUs run. Under qemu's
# multi-threaded TCG the other vCPU can run a half-patched call site: an
# "Oops: int3" (on 6.12, in try_to_wake_up when a test attached to
# sched_waking; at boot when the event was enabled with both CPUs up). Text
# is patched when a tracepoint gets its first probe (its static key) and
# when it goes from one probe to two and back (its static call); when
# bpf_stats and the cpuset key go from off to on and back. So, while CPU 0
# runs alone (maxcpus=1 on the command line), every tracepoint the samplers
# attach to (the BPF sampler: sched_waking, the hard-IRQ, hrtimer and
# timer wheel expiry events; the perf sampler: sched_waking, and
# sched_switch inside a PID namespace or when a test forces its PID map;
# the softirq events of older samplers) gets two probes
# that stay, as events of two ftrace instances that record nothing
# (tracing_on 0): a test's attach and detach then only moves the count
# between two and more, which patches nothing. bpf_stats stays on, and a
# cpuset cgroup stays.
tracing=/sys/kernel/tracing
keep_events="sched/sched_waking sched/sched_switch irq/softirq_entry irq/softirq_exit
    irq/irq_handler_entry irq/irq_handler_exit timer/hrtimer_expire_entry
    timer/hrtimer_expire_exit timer/timer_expire_entry timer/timer_expire_exit"
for inst in placed-keep-1 placed-keep-2; do
    mkdir -p "$tracing/instances/$inst" && echo 0 >"$tracing/instances/$inst/tracing_on" ||
        { say "cannot create the tracing instance $inst"; continue; }
    for e in $keep_events; do
        echo 1 >"$tracing/instances/$inst/events/$e/enable" || say "cannot enable $e in $inst"
    done
done
echo 1 >/proc/sys/kernel/bpf_stats_enabled || say "cannot enable bpf_stats"
mkdir -p /sys/fs/cgroup/placed-matrix-keep || say "cannot create a cpuset cgroup"
# Now the other CPUs come online.
for c in /sys/devices/system/cpu/cpu[0-9]*/online; do echo 1 >"$c"; done
hostname "placed-matrix" 2>/dev/null || true
ip link set lo up || say "cannot bring up loopback" # the live tests' TCP and UDP pairs

say "kernel $(uname -r), $(nproc) CPUs, cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none)"
say "cgroup v2 controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

"$PLACED_SRC/tests/kernels/run-set.sh" "$res"
