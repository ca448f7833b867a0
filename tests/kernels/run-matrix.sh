#!/usr/bin/env bash
# make check-kernels: runs the live tests on each kernel of the matrix, in
# qemu (2 CPUs; under KVM where the guest comes up there, else TCG) or, for
# the running kernel when it cannot be booted, on the host; prints one line
# per kernel, saying where it ran (accelerator and -cpu, and why KVM was not
# used) and which cpuidle driver the kernel had,
#
#   kernel KVER (qemu KVM -cpu CPU[, after WHY] | qemu TCG -cpu max, as KVM did not
#       boot it: WHY | running, on the host, N CPUs, cpuidle DRIVER | no cpuidle
#       driver): N passed, N failed, N skipped[, tried twice: TEST...] (M s)
#
# followed, when tests failed, by their FAIL lines, each with the lines of
# its log that say what failed, and where the logs are, and a closing line
# with the whole time.
#
#   tests/kernels/run-matrix.sh BUILD_DIR
#
# The matrix (PLACED_KERNELS, words): Debian 12's kernel (linux-image-amd64,
# 6.1) without a cpuidle driver, the 6.12 kernel bookworm ships
# (linux-image-6.12-amd64) with one, and "running", the running kernel:
# booted from /boot/vmlinuz-$(uname -r) with its modules from /lib/modules
# when both are there, else the same test set runs on the host itself (its
# cgroup v2 test skips where the cpuset controller is bound to v1). Packages are downloaded once into
# PLACED_KERNEL_CACHE (default /var/cache/placed-kernels, outside the tree so
# that a clean clone, as CI makes, finds them; BUILD_DIR/kernels when that
# cannot be created) and kept; older builds of a package are removed.
#
# Machines of our kind run with a cpuidle driver (haltpoll: states POLL and
# haltpoll) or without (plain HLT), and the tests must pass on both. A TCG
# guest has none: KVM's haltpoll needs the KVM CPUID signature, which TCG
# does not show, and qemu gives the CPUs no _CST. A word ending in
# "+cpuidle" (the default's 6.12) boots its kernel with an extra ACPI table
# that gives each CPU a _CST with one C-state, C1, entered by HLT
# (mkssdt-cst.sh): the guest's acpi_idle then registers states POLL and C1,
# as haltpoll's POLL and haltpoll, the idle test runs there, and its
# skipping for want of idle states counts as a failure. The same package
# may be named with and without "+cpuidle" to run both.
#
# The guest's root is the host's, read-only over virtio-9p, with tmpfs on
# /tmp and /run: the guest changes nothing on the host but
# BUILD_DIR/kernels/results/KVER (KVER+cpuidle), where its logs and
# summary go.
#
# Environment: PLACED_MATRIX_TESTS (test names for run-tests.sh, default the
# live sampler, placement, idle, kernel fallback and cgroup v2 cpuset
# tests), PLACED_MATRIX_TIMEOUT (seconds a VM may run, default 900),
# PLACED_MATRIX_MEM (MiB, 2048), PLACED_MATRIX_ACCEL (auto, the default:
# KVM where the guest comes up there, else TCG with a thread per vCPU; or
# qemu's -accel value, e.g. tcg,thread=multi), PLACED_TEST_TIME_SCALE (how many times longer the tests
# wait for what they expect in a guest, default 5: TCG runs it several times
# slower; a test that sees it early goes on at once), PLACED_LIVE_STEPS (the
# steps of the live shell tests to run in a guest, see tests/lib/common.sh;
# default: of the placement test, pack and restore), PLACED_TEST_SKIP
# (cmocka tests of the live sampler test to skip in a guest, a pattern;
# default none).
# On the host the tests run as in make check: every step, no time scale.
#
# The machine the guest gets (tests/topologies/run-topologies.sh sets
# these; the defaults are the matrix's): PLACED_MATRIX_SMP (qemu's -smp,
# default 2), PLACED_MATRIX_CPU (qemu's -cpu under TCG, default max),
# PLACED_MATRIX_NUMA_NODES (0, the default: no -numa; N: N nodes, the CPUs
# and the memory split evenly over them in order). PLACED_MATRIX_ACCEL=auto
# tries KVM first, with each -cpu of PLACED_MATRIX_KVM_CPU in turn (words,
# default: host; host without the ARCH_CAPABILITIES MSR (0x10a, which qemu
# 7.2 failed to set on one host) nor VMX/SVM (nested virtualisation the
# guest does not need); then a named model, qemu64 with SSE4.2 and POPCNT):
# the guest must print its first line on the console within
# PLACED_MATRIX_KVM_WAIT seconds (default 60); when it does not, or qemu
# stops (nested KVM can stop a guest at once with "KVM internal error ...
# emulation failure"), the VM is killed, and after the last -cpu booted
# again under TCG; the kernel's line names the -cpu used and why the
# others were not.
# PLACED_MATRIX_KVM_TIME_SCALE (default 2) is the tests' time scale under
# KVM. PLACED_MATRIX_LABEL (default "kernel") starts each line;
# PLACED_MATRIX_SHOW_TOPOLOGY=1 adds the packages, LLCs and NUMA nodes the
# guest's sysfs showed (run-set.sh writes them); PLACED_MATRIX_MUST_RUN
# names more tests whose skip is a failure; PLACED_MATRIX_GUEST_ENV names
# variables passed on to the guest's tests; PLACED_MATRIX_RESULTS is where
# the results go (default BUILD_DIR/kernels/results); PLACED_MATRIX_NAME
# (check-kernels) names the closing line.
set -euo pipefail
build=${1:?usage: run-matrix.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$(dirname "$here")")
build=$(cd "$build" && pwd)
results=${PLACED_MATRIX_RESULTS:-$build/kernels/results}
name=${PLACED_MATRIX_NAME:-check-kernels}
label=${PLACED_MATRIX_LABEL:-kernel}
cache=${PLACED_KERNEL_CACHE:-/var/cache/placed-kernels}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache=$build/kernels
kernels=${PLACED_KERNELS:-linux-image-amd64 linux-image-6.12-amd64+cpuidle running}
tests=${PLACED_MATRIX_TESTS:-test-wake-source-live test-placement-live test-idle-live test-kernel-fallback-live test-act-cpuset-v2-live}
vm_timeout=${PLACED_MATRIX_TIMEOUT:-900}
mem=${PLACED_MATRIX_MEM:-2048}
smp=${PLACED_MATRIX_SMP:-2}
ncpus=${smp%%,*}
[[ $ncpus =~ ^[1-9][0-9]*$ ]] || { echo "$name: PLACED_MATRIX_SMP must start with the CPU count, not '$smp'" >&2; exit 1; }
cpu_model=${PLACED_MATRIX_CPU:-max}
kvm_cpu=${PLACED_MATRIX_KVM_CPU:-host host,-arch-capabilities,-vmx,-svm qemu64,+ssse3,+sse4.1,+sse4.2,+popcnt,+cx16}
kvm_wait=${PLACED_MATRIX_KVM_WAIT:-60}
numa_nodes=${PLACED_MATRIX_NUMA_NODES:-0}
# -numa: node n gets CPUs [n * ncpus / N, (n + 1) * ncpus / N) and 1/N of the memory.
numa=()
if [ "$numa_nodes" -gt 0 ]; then
    [ $((ncpus % numa_nodes)) -eq 0 ] && [ $((mem % numa_nodes)) -eq 0 ] ||
        { echo "$name: $ncpus CPUs and $mem MiB do not split over $numa_nodes NUMA nodes" >&2; exit 1; }
    for ((n = 0; n < numa_nodes; n++)); do
        numa+=(-object "memory-backend-ram,id=mem$n,size=$((mem / numa_nodes))M"
            -numa "node,nodeid=$n,cpus=$((n * ncpus / numa_nodes))-$(((n + 1) * ncpus / numa_nodes - 1)),memdev=mem$n")
    done
fi
# A host thread per vCPU (MTTCG): with one thread for both the guest runs
# half as fast and perf bench messaging's groups fall below the model's
# rates (classified solo). Either way TCG is not the machine placed is for:
# a pipe pair measured 30-50% slower packed than spread with a thread per
# vCPU, and from 2x slower to 10% faster with one (placed's trial hands it
# back when it loses).
accel=${PLACED_MATRIX_ACCEL:-auto}
tcg_accel=$accel
[ "$accel" != auto ] || tcg_accel=tcg,thread=multi
time_scale=${PLACED_TEST_TIME_SCALE:-5}
kvm_time_scale=${PLACED_MATRIX_KVM_TIME_SCALE:-2}
# Under TCG every step takes seconds: of the placement test, pack and
# restore (SIGTERM; SIGKILL and --restore); the rest runs on the host.
live_steps=${PLACED_LIVE_STEPS-placement:1+2 placement:3+4}
# The mixes (pair, fan-out and two meshes at once) check the sampler's
# edges, not the model's classes, which under TCG follow the emulator's
# rates: they run in the guests too, with both sources.
skip_tests=${PLACED_TEST_SKIP-}

command -v qemu-system-x86_64 >/dev/null ||
    { echo "$name: qemu-system-x86_64 is not installed (make deps)" >&2; exit 1; }
mkdir -p "$cache" "$build/tests/logs" # the guest binds its logs over the latter

failed_any=0
booted=()
t_all=$SECONDS

# run_env WHERE [IDLE [TIME_SCALE]]: the settings of the test set
# (tests/kernels/run-set.sh) in a guest ("guest") or on the host ("host": as
# make check runs them); IDLE=1: the guest was given a cpuidle driver, so
# the idle test must run; TIME_SCALE: the tests' (default: TCG's).
run_env() {
    echo "PLACED_SRC='$src'"
    echo "PLACED_BUILD='$build'"
    echo "PLACED_MATRIX_TESTS='$tests'"
    echo "PLACED_MATRIX_MUST_RUN='${PLACED_MATRIX_MUST_RUN:-}'"
    [ "$1" = guest ] || return 0
    echo "PLACED_MATRIX_NEED_IDLE=${2:-0}"
    echo "# guest-init.sh mounts cgroup v2 with the cpuset controller: its test must run."
    echo "PLACED_MATRIX_NEED_CGROUP2=1"
    echo "PLACED_MATRIX_RETRY=1"
    echo "PLACED_TEST_TIME_SCALE='${3:-$time_scale}'"
    echo "PLACED_LIVE_STEPS='$live_steps'"
    echo "PLACED_TEST_SKIP='$skip_tests'"
    local v
    for v in ${PLACED_MATRIX_GUEST_ENV:-}; do printf '%s=%q\n' "$v" "${!v:-}"; done
    echo "# Under TCG a packed pair need not gain: the trial may rightly hand it back."
    echo "PLACED_PACKING_MAY_LOSE=1"
}

# fail_excerpt RES NAME: up to 12 lines of RES/logs/NAME.log that say what
# failed, in the log's order: first every line that reports a failure
# (cmocka's "[  FAILED  ]", "[  ERROR   ]" and "[   LINE   ]", a shell
# test's "FAIL:" and "not ok"), then, while there is room, the first other
# lines that speak of a failure, an error or an assertion (not a passed
# check's "ok - ..."). When none does,
# the log's last 5 lines. CI keeps no logs: this is what its output shows.
fail_excerpt() {
    local log=$1/logs/$2.log
    [ -f "$log" ] || { echo "(no log $log)"; return 0; }
    awk -v max=12 '
        /^\[ +(FAILED|ERROR|LINE) +\]|^FAIL|^not ok/ { if (ns < max) strong[NR] = $0; ns++; next }
        /^ok / { last[NR % 5] = $0; next } # a passed check that speaks of failures
        tolower($0) ~ /fail|error|assert/ { weak[++nw] = NR; text[NR] = $0 }
        { last[NR % 5] = $0 }
        END {
            room = max - (ns < max ? ns : max)
            for (i = 1; i <= nw && i <= room; i++) strong[weak[i]] = text[weak[i]]
            for (n = 1; n <= NR; n++) if (n in strong) { print substr(strong[n], 1, 200); shown++ }
            if (shown) exit
            print "(no line of " FILENAME " says what failed; its last lines:)"
            for (n = NR - 4; n <= NR; n++) if (n > 0) print substr(last[n % 5], 1, 200)
        }' "$log"
}

# topology_of RES: ", 2 packages, 4 LLCs, 2 nodes" as the guest's sysfs
# showed them (run-set.sh wrote them), with PLACED_MATRIX_SHOW_TOPOLOGY=1.
topology_of() {
    [ "${PLACED_MATRIX_SHOW_TOPOLOGY:-0}" = 1 ] || return 0
    local t
    t=$(cat "$1/topology" 2>/dev/null) || t="topology unknown"
    echo ", $t"
}

# idle_of RES: which cpuidle driver the kernel had (run-set.sh wrote it).
idle_of() {
    local d
    d=$(cat "$1/cpuidle-driver" 2>/dev/null) || return 0
    if [ "$d" = none ] || [ -z "$d" ]; then echo ", no cpuidle driver"; else echo ", cpuidle $d"; fi
}

# report KVER WHERE RES SECS: the kernel's line from RES/summary, its FAIL
# lines, each with what its log says failed, and what the console says of
# an oops or a warning.
report() {
    local kver=$1 where=$2 res=$3 secs=$4 summary bad line name
    summary=$(cat "$res/summary" 2>/dev/null || true)
    if [ -z "$summary" ]; then
        echo "$label $kver ($where): did not finish (${secs} s; console: $res/console.log)"
        tail -n 15 "$res/console.log" "$res/output.log" 2>/dev/null | sed 's/^/    | /'
        failed_any=1
        return
    fi
    bad=$(grep -E -m 3 'Oops|BUG:|Kernel panic|WARNING:|Call Trace' "$res/console.log" 2>/dev/null || true)
    echo "$label $kver ($where): $summary (${secs} s)"
    if ! [[ $summary =~ \ 0\ failed ]]; then
        failed_any=1
        while read -r line; do
            echo "    $line"
            name=$(echo "$line" | awk '{ print $2 }')
            # A test that did not run (the idle test without idle states) has no log.
            [[ $line == *"(exit "* ]] || [ -f "$res/logs/$name.log" ] || continue
            fail_excerpt "$res" "$name" | sed 's/^/      | /'
        done < <(grep '^FAIL' "$res/results")
        echo "    logs: $res/logs"
    fi
    # A test that failed once and was tried again (run-set.sh): what failed
    # the first time, so that a flaky test shows even when the kernel passes.
    while read -r line; do
        echo "    $line (failed once; its second try is counted)"
        name=$(echo "$line" | awk '{ print $2 }')
        fail_excerpt "$res" "$name.first-try" | sed 's/^/      | /'
    done < <(grep '^RETRY' "$res/results" 2>/dev/null)
    retry_history "$res"
    if [ -n "$bad" ]; then
        failed_any=1
        echo "    the kernel complained (console: $res/console.log):"
        echo "$bad" | sed 's/^/    | /'
    fi
}

# retry_history RES: a test that needed its retry (a RETRY line in
# RES/results) on this kernel in the previous run too fails: a retry may
# let a rare failure pass, not one that comes back. The names that needed
# one are kept in PLACED_KERNEL_CACHE/retried/ (outside the tree: a fresh
# clone's run follows the last one), one file per line label and kernel.
retry_history() {
    local res=$1 file now name
    file=$cache/retried/$(echo "$label $(basename "$res")" | tr -c 'A-Za-z0-9.+_-' _)
    mkdir -p "$cache/retried"
    now=$(grep '^RETRY' "$res/results" 2>/dev/null | awk '{ print $2 }' | sort -u || true)
    for name in $now; do
        if grep -qxF "$name" "$file" 2>/dev/null; then
            echo "    FAIL  $name needed its retry in the previous run on this kernel too"
            failed_any=1
        fi
    done
    echo "$now" >"$file"
}

# start_vm RES ACCEL CPU VMLINUZ: the VM of RES, in the background, its
# console in RES/console.log and qemu's own output in RES/qemu.log; sets vm
# (the pid of the timeout around qemu, which passes a SIGTERM on to it).
#
# maxcpus=1: the guest boots on one CPU and brings the others online once
# it has switched on what would otherwise patch kernel text while more than
# one runs (guest-init.sh); noreplace-smp: nor are the SMP alternatives
# patched back in when the other CPUs come online.
start_vm() {
    local res=$1 accel=$2 cpu=$3 vmlinuz=$4
    timeout --kill-after=10 "$vm_timeout" qemu-system-x86_64 \
        -machine q35 -accel "$accel" -cpu "$cpu" -smp "$smp" -m "$mem" "${numa[@]}" "${acpi[@]}" \
        -nodefaults -no-reboot -display none -monitor none -serial "file:$res/console.log" \
        -kernel "$vmlinuz" -initrd "$res/initramfs.img" \
        -append "console=ttyS0 panic=-1 loglevel=4 maxcpus=1 noreplace-smp placed_init=$here/guest-init.sh placed_src=$src" \
        -fsdev local,id=hostroot,path=/,readonly=on,security_model=none,multidevs=remap \
        -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
        -fsdev "local,id=results,path=$res,security_model=none" \
        -device virtio-9p-pci,fsdev=results,mount_tag=results \
        -fsdev "local,id=srctree,path=$src,readonly=on,security_model=none,multidevs=remap" \
        -device virtio-9p-pci,fsdev=srctree,mount_tag=srctree \
        </dev/null >"$res/qemu.log" 2>&1 &
    vm=$!
}

# kvm_boots RES VMLINUZ: starts the VM under KVM, with each -cpu of
# PLACED_MATRIX_KVM_CPU in turn, and returns 0 once the guest has printed
# its first line (guest-init.sh's "guest: kernel ..."), leaving it running
# as $vm and its -cpu in kvm_cpu_used; kvm_why then says what stopped the
# -cpu tried before it. Else kills each, keeps its console and qemu output as
# RES/kvm-N-console.log and RES/kvm-N-qemu.log, sets kvm_why (what stopped
# each) and returns 1. /dev/kvm is not enough: on some of our machines
# nested KVM stops Debian's 6.12 at once ("KVM internal error. Suberror: 1
# ... emulation failure", with -cpu max and -cpu host), and on one qemu 7.2
# aborted with -cpu host and -cpu max ("failed to set MSR 0x10a"), which
# -cpu host,-arch-capabilities avoids, only to meet the emulation failure.
kvm_boots() {
    local res=$1 cpu end n=0 why
    kvm_why=
    if [ ! -w /dev/kvm ]; then
        kvm_why="no /dev/kvm"
        return 1
    fi
    for cpu in $kvm_cpu; do
        n=$((n + 1))
        end=$((SECONDS + kvm_wait))
        start_vm "$res" kvm "$cpu" "$2"
        while [ $SECONDS -lt "$end" ]; do
            if grep -q '^guest: kernel ' "$res/console.log" 2>/dev/null; then
                kvm_cpu_used=$cpu
                return 0
            fi
            grep -q 'KVM internal error' "$res/qemu.log" 2>/dev/null && break
            kill -0 "$vm" 2>/dev/null || break
            sleep 0.5
        done
        kill "$vm" 2>/dev/null || true
        { wait "$vm"; } 2>/dev/null || true
        why=$(grep -v -i warning "$res/qemu.log" | grep -m 1 -E -i 'error|assert|fail' |
            sed 's/^qemu-system-x86_64: //' | cut -c1-80 || true)
        kvm_why+="${kvm_why:+; }-cpu $cpu: ${why:-no console line within $kvm_wait s}"
        mv "$res/console.log" "$res/kvm-$n-console.log" 2>/dev/null || true
        mv "$res/qemu.log" "$res/kvm-$n-qemu.log"
    done
    rm -f "$res/summary" "$res/results"
    return 1
}

# boot KVER VMLINUZ MODULE_ROOT [IDLE]: the test set in one VM, given a
# cpuidle driver when IDLE is 1; prints the kernel's line. With
# PLACED_MATRIX_ACCEL=auto, under KVM when the guest comes up there, else
# under TCG, saying why.
boot() {
    local kver=$1 vmlinuz=$2 kroot=$3 idle=${4:-0} res=$results/$1 start where
    acpi=()
    [ "$idle" = 0 ] || res=$res+cpuidle
    rm -rf "$res"
    mkdir -p "$res/logs"
    "$here/mkinitramfs.sh" "$kroot" "$kver" "$res/initramfs.img"
    if [ "$idle" = 1 ]; then
        # A _CST for each CPU: the guest's acpi_idle then registers (mkssdt-cst.sh).
        "$here/mkssdt-cst.sh" "$ncpus" "$res/cst.aml"
        acpi=(-acpitable "sig=SSDT,rev=2,oem_id=PLACED,oem_table_id=PLACDCST,data=$res/cst.aml")
    fi
    start=$SECONDS
    if [ "$accel" = auto ]; then
        run_env guest "$idle" "$kvm_time_scale" >"$res/run.env"
        # (qemu aborting under KVM would make bash say so on stderr.)
        if kvm_boots "$res" "$vmlinuz" 2>/dev/null; then
            where="qemu KVM -cpu $kvm_cpu_used${kvm_why:+, after $kvm_why}"
        else
            where="qemu TCG -cpu $cpu_model, as KVM did not boot it: $kvm_why"
            run_env guest "$idle" >"$res/run.env"
            start_vm "$res" "$tcg_accel" "$cpu_model" "$vmlinuz"
        fi
    else
        where="qemu $(echo "${accel%%,*}" | tr '[:lower:]' '[:upper:]') -cpu $cpu_model, as PLACED_MATRIX_ACCEL says" # TCG
        run_env guest "$idle" >"$res/run.env"
        start_vm "$res" "$accel" "$cpu_model" "$vmlinuz"
    fi
    wait "$vm" || true
    report "$kver" "$where, $ncpus CPUs$(topology_of "$res")$(idle_of "$res")" "$res" $((SECONDS - start))
}

# on_host KVER WHY: the same test set on the host, for the running kernel.
on_host() {
    local kver=$1 res=$results/$1 start
    rm -rf "$res"
    mkdir -p "$res/logs"
    start=$SECONDS
    (
        unset PLACED_TEST_TIME_SCALE PLACED_LIVE_STEPS PLACED_TEST_SKIP PLACED_PACKING_MAY_LOSE
        set -a
        eval "$(run_env host)"
        "$here/run-set.sh" "$res" >"$res/output.log" 2>&1
    ) || true
    report "$kver" "running, on the host$(idle_of "$res"): $2" "$res" $((SECONDS - start))
}

for word in $kernels; do
    k=${word%+cpuidle} idle=0 suffix=
    [ "$k" = "$word" ] || idle=1 suffix=+cpuidle
    if [ "$k" = running ]; then
        kver=$(uname -r)
        if [[ " ${booted[*]} " == *" $kver$suffix "* ]]; then
            echo "kernel $kver$suffix (running): tested above"
            continue
        fi
        booted+=("$kver$suffix")
        if [ -r "/boot/vmlinuz-$kver" ] && [ -d "/lib/modules/$kver" ]; then
            boot "$kver" "/boot/vmlinuz-$kver" / "$idle"
        elif [ "$idle" = 1 ]; then
            echo "kernel $kver ($word): cannot give the host a cpuidle driver, and there is no /boot/vmlinuz-$kver and /lib/modules/$kver to boot it in qemu"
            failed_any=1
        else
            on_host "$kver" "no /boot/vmlinuz-$kver and /lib/modules/$kver to boot it in qemu"
        fi
        continue
    fi
    kver=$("$here/fetch-kernel.sh" "$cache" "$k") || { echo "$label $k: cannot fetch it"; failed_any=1; continue; }
    if [[ " ${booted[*]} " == *" $kver$suffix "* ]]; then
        echo "$label $kver$suffix ($word): tested above"
        continue
    fi
    booted+=("$kver$suffix")
    boot "$kver" "$cache/$kver/boot/vmlinuz-$kver" "$cache/$kver" "$idle"
done
echo "$name: $((SECONDS - t_all)) s in all"
exit $failed_any
