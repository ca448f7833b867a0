#!/bin/bash
# The matrix's test set on one kernel, in a guest (tests/kernels/guest-init.sh)
# or on the host (the running kernel when it cannot be booted):
#
#   tests/kernels/run-set.sh RESULTS_DIR
#
# runs each test named in PLACED_MATRIX_TESTS with tests/run-tests.sh
# (PLACED_SRC, PLACED_BUILD), appends their PASS/FAIL/SKIP lines to
# RESULTS_DIR/results, copies their logs to RESULTS_DIR/logs (unless that is
# BUILD/tests/logs itself, as in the guest) and writes the closing line,
# "N passed, N failed, N skipped", to RESULTS_DIR/summary. A test that
# prints no closing line, or names no test, counts as failed, and so does a
# skip of the sampler, placement or fallback test, or in a guest of the
# cgroup v2 cpuset test, and of those named in PLACED_MATRIX_MUST_RUN
# (MUST_RUN); their line in RESULTS_DIR/results then reads FAIL. The idle test runs only where the
# kernel has idle states; with PLACED_MATRIX_NEED_IDLE=1 (a guest given a
# cpuidle driver, see run-matrix.sh) their absence is a failure. The cpuidle
# driver (or "none") goes to RESULTS_DIR/cpuidle-driver, and the machine's
# packages, LLCs and NUMA nodes ("2 packages, 4 LLCs, 2 nodes", from sysfs)
# to RESULTS_DIR/topology. With
# PLACED_MATRIX_RETRY=1 (in a guest: TCG's timing is not a machine's) a
# failed test runs once more; its first log is kept as NAME.first-try.log,
# its FAIL lines go to RESULTS_DIR/results as RETRY lines, and the closing
# line names it: ", tried twice: NAME...". (run-matrix.sh fails a test that
# needed its retry on the same kernel in the previous run too.)
res=${1:?usage: run-set.sh RESULTS_DIR}
: "${PLACED_SRC:?}" "${PLACED_BUILD:?}" "${PLACED_MATRIX_TESTS:?}"
say() { echo "run-set: $*"; }
mkdir -p "$res/logs"
: >"$res/results"
rm -f "$res/summary"

passed=0 failed=0 skipped=0 retried=

# run_test NAME: runs it; sets out (run-tests.sh's output) and p, f, s.
run_test() {
    out=$(cd "$PLACED_SRC" && tests/run-tests.sh "$PLACED_BUILD" "$1" 2>&1)
    echo "$out"
    read -r p _ f _ s _ < <(echo "$out" | tail -n 1)
    [[ $p =~ ^[0-9]+$ && $f =~ ^[0-9]+$ && $s =~ ^[0-9]+$ ]] || { p=0 f=1 s=0; say "$1: no closing line"; }
    [ $((p + f + s)) -gt 0 ] || { f=1; say "$1: no such test was run"; }
}
MUST_RUN="test-wake-source-live test-placement-live test-kernel-fallback-live ${PLACED_MATRIX_MUST_RUN:-}"
# In a guest (PLACED_MATRIX_NEED_CGROUP2=1) cgroup v2 has the cpuset
# controller, so the v2 actuator's test skipping is a failure there too; on
# the host the controller may be bound to cgroup v1.
[ "${PLACED_MATRIX_NEED_CGROUP2:-0}" != 1 ] || MUST_RUN="$MUST_RUN test-act-cpuset-v2-live"
driver=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null) || driver=none
echo "${driver:-none}" >"$res/cpuidle-driver"

# count N WORD: "1 WORD" or "N WORDs".
count() { if [ "$1" = 1 ]; then echo "1 $2"; else echo "$1 $2s"; fi; }
# The machine as its sysfs shows it: packages; LLCs, each CPU's data or
# unified cache of the highest level, told apart by the CPUs sharing it;
# NUMA nodes.
topology() {
    local cpu d level best list packages=() llcs=() nodes
    for cpu in /sys/devices/system/cpu/cpu[0-9]*; do
        [ -r "$cpu/topology/physical_package_id" ] || continue # offline
        packages+=("$(cat "$cpu/topology/physical_package_id")")
        best=-1 list=
        for d in "$cpu"/cache/index[0-9]*; do
            [ "$(cat "$d/type" 2>/dev/null)" != Instruction ] || continue
            level=$(cat "$d/level" 2>/dev/null) || continue
            [ "$level" -gt "$best" ] || continue
            best=$level list=$(cat "$d/shared_cpu_list")
        done
        llcs+=("${list:-none}")
    done
    nodes=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' 2>/dev/null | wc -l)
    echo "$(count "$(printf '%s\n' "${packages[@]}" | sort -u | wc -l)" package)," \
        "$(count "$(printf '%s\n' "${llcs[@]}" | sort -u | wc -l)" LLC), $(count "${nodes:-0}" node)"
}
topology >"$res/topology"
for t in $PLACED_MATRIX_TESTS; do
    if [ "$t" = test-idle-live ] && [ ! -e /sys/devices/system/cpu/cpu0/cpuidle/state0 ]; then
        if [ "${PLACED_MATRIX_NEED_IDLE:-0}" = 1 ]; then
            printf 'FAIL  %-32s %s\n' test-idle-live.sh "no idle states here (cpuidle driver ${driver:-none}), but this guest was given a cpuidle driver" |
                tee -a "$res/results"
            failed=$((failed + 1))
        else
            printf 'SKIP  %-32s %s\n' test-idle-live.sh "no idle states here (cpuidle driver ${driver:-none})" |
                tee -a "$res/results"
            skipped=$((skipped + 1))
        fi
        continue
    fi
    run_test "$t"
    if [ "$f" -gt 0 ] && [ "${PLACED_MATRIX_RETRY:-0}" = 1 ]; then
        # Under TCG a test's timing is the emulator's: one failure is tried
        # once more, its log kept as NAME.first-try.log and a RETRY line in
        # the results, which the report prints with what failed. A kernel
        # that cannot run the test (the sampler not loading) fails twice.
        for log in "$PLACED_BUILD/tests/logs/$t"*.log; do
            [ -f "$log" ] && [[ $log != *.first-try.log ]] && mv "$log" "${log%.log}.first-try.log"
        done
        echo "$out" | grep -E '^FAIL ' | sed 's/^FAIL /RETRY/' >>"$res/results"
        say "$t failed: trying it once more"
        run_test "$t"
        retried+=" $t"
    fi
    lines=$(echo "$out" | grep -E '^(PASS|FAIL|SKIP) ')
    # What the matrix is for: the sampler must load and placed must run on
    # every kernel of it, so these tests skipping (they skip when the BPF
    # sampler does not load) is a failure here.
    if [[ " $MUST_RUN " == *" $t "* ]] && [ "$s" -gt 0 ]; then
        say "$t skipped on this kernel: counted as failed"
        s=$((s - 1)) f=$((f + 1))
        lines=$(echo "$lines" | sed 's/^SKIP  \(.*\)$/FAIL  \1 (a skip, counted as failed here)/')
    fi
    [ -n "$lines" ] || [ "$f" -eq 0 ] || lines=$(printf 'FAIL  %-32s %s' "$t" "(no result line from run-tests.sh)")
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    [ -z "$lines" ] || echo "$lines" >>"$res/results"
    [ "$res/logs" -ef "$PLACED_BUILD/tests/logs" ] || cp "$PLACED_BUILD/tests/logs/$t"*.log "$res/logs/" 2>/dev/null
done
echo "$passed passed, $failed failed, $skipped skipped${retried:+, tried twice:$retried}" | tee "$res/summary"
