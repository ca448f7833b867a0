#!/usr/bin/env bash
# The wake sampler's rest (lib/wake-rest.h): the real placed, its real BPF
# sampler, ticks of 200 ms, [daemon] wake_rest_ms = 1000, wake_look_s = 12.
# The test watches from one Python process (tests/lib/rest-observe.py) that
# reads /proc and the log, as any process the test started would be a new
# task, which wakes the sampler.
#   1. with nothing new, the sampler rests, and its sched_waking program is
#      detached: placed holds one BPF link fewer than while it watches;
#   2. a new pipe pair (a fork) wakes it at once: the link is back, the pair
#      is placed at a quick tick and kept by its trial;
#   3. the verdict given, the sampler rests again while the pair runs, for
#      12 s (longer than the wake graph keeps a task it has not seen, 10 s),
#      looks, rests again, and the pair stays packed on its CPU all the
#      while: the wake graph holds still while it rests, so the group and
#      its placement stay (where news, a task anyone started or the pair's
#      re-check, wakes it more often than every 12 s, no look is due: no
#      rest outlasts 12 s);
#   4. wake_rest_ms = 0: it never rests.
# Without the proc connector (in a PID namespace) placed never rests, and
# the test skips.
# What resting saves is measured by the benchmark (docs/benchmarks.md), not here.
. "$(dirname "$0")/lib/common.sh"

live_init
command -v perf >/dev/null || skip "perf (linux-perf) is not installed"
[ "$(nproc --all)" -ge 2 ] || skip "needs at least 2 CPUs to tell packed from spread"
observe="python3 $PLACED_SRC/tests/lib/rest-observe.py"

step_rest() {
    live_config rest 'wake_rest_ms = 1000' 'wake_look_s = 12'
    live_placed_start rest
    local log=$T/rest.log out resting watching
    grep -q 'Wake sampler: BPF' "$log" || skip "no BPF sampler here (only it rests): $(grep -m1 'sampler' "$log")"
    # In a PID namespace the kernel refuses the proc connector, and without
    # it placed never rests: a new pair would wait for a look.
    ! grep -q 'No proc connector' "$log" ||
        skip "no proc connector here (resting needs it): $(grep -m1 'No proc connector' "$log")"
    out=$($observe rest "$placed_pid" "$log" $((10 * time_scale))) ||
        fail "1. the sampler did not rest in $((10 * time_scale)) s with nothing new: $(grep 'Wake sampler' "$log")"
    resting=${out#links }
    ok "1. resting with nothing new; placed holds $resting BPF links"

    pair_start
    # placed may place the pair before pair_start reads its affinity: it
    # started with every CPU.
    live_track "$pair_parent" "$(online_cpus)"
    live_track "$pair_child" "$(online_cpus)"
    wait_packed "$log"
    grep -q 'Wake sampler: watching: a task was created' "$log" ||
        fail "2. the new pair did not wake the sampler: $(grep 'Wake sampler' "$log")"
    watching=$($observe links "$placed_pid")
    watching=${watching#links }
    [ "$watching" -eq $((resting + 1)) ] ||
        fail "2. $watching BPF links while watching, $resting while resting: not the one program detached"
    local line
    line=$(grep -m1 "Placing pair group .*sched-pipe" "$log")
    [[ $line == *"at a quick tick" ]] || fail "2. the pair was not placed at a quick tick: $line"
    wait_for_ms 8000 grep -qE "Keeping pair group [0-9]+ \(first task ($pair_parent|$pair_child)\)" "$log" ||
        fail "2. the pair's trial did not keep it: $(grep -E 'Keeping|Handing' "$log")"
    ok "2. a new pair woke it ($watching links): placed ${packed_ms} ms after it started, at a quick tick, and kept"

    out=$($observe rest "$placed_pid" "$log" $((10 * time_scale))) ||
        fail "3. the sampler did not rest again beside the kept pair: $(grep 'Wake sampler' "$log" | tail -n 5)"
    [ "${out#links }" -eq "$resting" ] || fail "3. resting again, but placed holds ${out#links } BPF links"
    # Until a look and a rest after it. Any process started on the machine,
    # by anyone, is news that wakes the sampler and starts its 12 s again,
    # as a re-check of the pair does: where news comes more often, no look
    # is due, and what must hold is that no rest outlasted wake_look_s.
    out=$($observe hold "$placed_pid" "$log" $((30 * time_scale)) "$pair_parent" "$pair_child") ||
        fail "3. $out: $(tail -n 30 "$log")"
    local rests looks woken longest lo hi
    read -r _ rests _ looks _ woken _ longest _ lo hi <<<"$out"
    local what="$looks looks, $rests rests, woken $woken times by news, longest rest $longest s in at most $((30 * time_scale)) s (wake_look_s = 12)"
    [ "${longest%.*}" -lt $((12 + 2 * time_scale)) ] ||
        fail "3. a rest outlasted wake_look_s: $what: $(grep 'Wake sampler' "$log" | tail -n 8)"
    if [ "$looks" -ge 1 ] && [ "$rests" -ge 1 ]; then
        [ "$lo" -eq "$resting" ] && [ "$hi" -eq "$watching" ] ||
            fail "3. BPF links between $lo and $hi through the looks, not $resting and $watching"
        ok "3. the pair stayed on CPU $(cpus_allowed "$pair_parent") through its rest, a look and a rest again: $what"
    else
        [ "$woken" -ge 1 ] || fail "3. no look and no news: $what: $(grep 'Wake sampler' "$log" | tail -n 8)"
        ok "3. no look was due, news woke the sampler first; the pair stayed on CPU $(cpus_allowed "$pair_parent"): $what"
    fi
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "3. placed exited $placed_rc"
}

step_never() {
    live_config never 'wake_rest_ms = 0'
    live_placed_start never
    local log=$T/never.log
    $observe quiet "$placed_pid" "$log" $((5 * time_scale)) ||
        fail "4. rested with wake_rest_ms = 0: $(grep 'Wake sampler' "$log")"
    ! grep -q 'Wake sampler: resting' "$log" || fail "4. rested with wake_rest_ms = 0"
    ok "4. wake_rest_ms = 0: watched for $((5 * time_scale)) s with nothing new"
    placed_stop TERM
}

live_step 1 step_rest
live_step 4 step_never
live_steps_done
live_check_restored
