#!/usr/bin/env bash
# A kept placement is re-checked while it lives (docs/design.md, "Decisions
# judged by outcome"): the real placed, the real BPF sampler, 200 ms ticks,
# profile balanced with the live tests' trial that keeps what it places
# (live_hold_profiles: two weighed windows, keep_pct 1) but re-checks on a
# drift.
#   1. a pair that changes shape (tests/bench/phases: a lockstep pipe pair,
#      then a two-stage pipeline in which both processes compute at once)
#      is placed on one CPU and kept by its trial; once it is a pipeline its
#      figures drift, placed logs that it re-checks it, and the pair is
#      handed back to the kernel: by the re-check's verdict (squeezed, or
#      waiting past the run-queue budget), or by the run-queue feedback that
#      widens a packed group whose tasks wait past that budget, whichever
#      comes first. The ok line says how long after the pipeline began
#      (PLACED_LOG_TIME=1 and the workload's own CLOCK_MONOTONIC); how fast
#      is the benchmark's to measure, not this test's.
. "$(dirname "$0")/lib/common.sh"

live_init
[ "$(nproc --all)" -ge 2 ] || skip "needs at least 2 CPUs to tell packed from spread"
phases_bin=$PLACED_BUILD/bench/phases
[ -x "$phases_bin" ] || fail "$phases_bin is not built (make check builds it)"
live_config recheck

step_pipeline_handed_back() {
    live_profiles_dir=$(live_profiles_with profiles-recheck '[trial]' 'ticks = 2' 'keep_pct = 1' \
        'recheck_s = 86400')
    PLACED_LOG_TIME=1 live_placed_start recheck
    live_profiles_dir=""
    local log=$T/recheck.log out=$T/phases.out
    live_spawn sh -c "exec '$phases_bin' -l $((4 * time_scale)) -P $((8 * time_scale)) >'$out'"
    wait_for 5 grep -q '^pids ' "$out" || fail "1. phases did not start: $(cat "$out")"
    read -r _ pair_parent pair_child < <(grep '^pids ' "$out")
    live_track "$pair_parent" "$(online_cpus)"
    live_track "$pair_child" "$(online_cpus)"
    wait_packed "$log"
    local kept="Keeping pair group [0-9]+ \\(first task ($pair_parent|$pair_child)\\)"
    grep -qE "$kept" "$log" || fail "1. the lockstep pair was not kept by its trial: $(cat "$log")"
    wait_for $((10 * time_scale)) grep -q '^pipeline_at ' "$out" ||
        fail "1. the pipeline phase never began: $(cat "$out")"
    local back="\\[([0-9.]+)\\] Handing pair group [0-9]+ \\(first [^/]*/($pair_parent|$pair_child)\\) to the kernel"
    wait_for $((8 * time_scale)) grep -qE "$back" "$log" ||
        fail "1. the pipeline stayed packed: $(pair_affinity); $(grep -E 'Keeping|Handing|Re-check' "$log")"
    local line at t recheck
    line=$(grep -m1 -E "$back" "$log")
    [[ $line == *"squeezed"* || $line == *"past the budget"* || $line == *"widened"* ]] ||
        fail "1. handed back, but not for what a pipeline does packed: $line"
    at=$(sed -n 's/^pipeline_at //p' "$out")
    t=$(echo "$line" | sed -E 's/^\[([0-9.]+)\].*/\1/')
    awk -v a="$at" -v b="$t" 'BEGIN { exit !(b > a) }' ||
        fail "1. handed back before it became a pipeline (at $at): $line"
    recheck="Re-checking pair group [0-9]+ \\(first task ($pair_parent|$pair_child)\\): its figures drifted"
    grep -qE "$recheck" "$log" || fail "1. no re-check on the drift: $(grep -E 'Keeping|Handing|Re-check' "$log")"
    wait_for 3 eval '! pair_packed' || fail "1. handed back, still packed: $(pair_affinity)"
    ok "1. kept as a lockstep pair, handed back $(awk -v a="$at" -v b="$t" 'BEGIN { printf "%.2f", b - a }') s after it became a pipeline: ${line#*: }"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "1. placed exited $placed_rc"
}

live_step 1 step_pipeline_handed_back

live_check_restored
live_steps_done
echo "all live re-check checks passed"
