#!/usr/bin/env bash
# Quick ticks (docs/design.md, "Deciding when something new appears"): the
# real placed, the real BPF sampler and its notes, ticks of a whole second
# (the default), profile balanced:
#   1. a new lockstep pipe pair is placed at a quick tick, long before the
#      next regular one could have: its Placing line says "at a quick tick"
#      (and how long after its first note, when a CPU saw its run); its
#      trial is judged at quick ticks;
#      then, nothing new and nothing on trial, no quick tick runs for 3 s;
#      a second pair is placed at quick ticks that decide it and not every
#      group (their focus), and the first pair keeps its CPUs;
#   2. a storm of new edges (hackbench starting four groups of 40 tasks, then
#      a new pair every half second) with [daemon] quick_ticks_per_sec = 2:
#      no more quick ticks than the budget allows, at most 2 x 2 + 2 a
#      second of placed's life; placed logs a fork storm, and no note of
#      a young task in no group or alone so far is news while it lasts;
#   3. [daemon] quick_interval_ms = 0: the pair waits for a regular tick,
#      and no quick tick runs at all;
#   4. settled (nothing placed, waiting or on trial), ticks of 200 ms come
#      [daemon] settled_factor (3) intervals apart: at most 3000 / 600 + 2
#      in 3 s; with settled_factor = 1, every interval (at least 10);
#   5. quick_interval_ms = 1000: the quick tick that places a new pair
#      comes half a window (500 ms) after the one that first saw it, not a
#      whole one (the log's PLACED_LOG_TIME=1 times).
# What a quick tick costs and how soon a pair is placed are measured by the
# benchmark (tests/bench/bench.py), not here: this checks behaviour only.
. "$(dirname "$0")/lib/common.sh"

live_init
command -v perf >/dev/null || skip "perf (linux-perf) is not installed"
[ "$(nproc --all)" -ge 2 ] || skip "needs at least 2 CPUs to tell packed from spread"
live_interval_ms=1000

# quick_ticks LOG: how many quick ticks the log shows (placed logs every tick at debug level).
quick_ticks() { grep -c ' groups, quick; CPU time' "$1" || true; }
placing_line() { grep -m1 "Placing pair group .*sched-pipe" "$1" || true; }

step_quick_pair() {
    live_config quick
    live_placed_start quick
    local log=$T/quick.log
    grep -q 'Wake sampler: BPF' "$log" || skip "no BPF sampler here (notes need it): $(grep -m1 'sampler' "$log")"
    pair_start
    # placed may place the pair before this shell reads its affinity: it
    # started with every CPU.
    live_track "$pair_parent" "$(online_cpus)"
    live_track "$pair_child" "$(online_cpus)"
    wait_packed "$log"
    local line
    line=$(placing_line "$log")
    [ -n "$line" ] || fail "1. packed, but placed logged no Placing line: $(cat "$log")"
    # After its note, or (when the kernel ran the pair on one CPU at first,
    # so no CPU saw a run) after the regular tick that first saw it.
    [[ $line == *"at a quick tick" ]] || fail "1. the pair was not placed at a quick tick: $line"
    ok "1. pair placed ${packed_ms} ms after it started: ${line##*; }"
    wait_for_ms 8000 grep -qE "Keeping pair group|Handing pair group" "$log" ||
        fail "1. no verdict on the pair's trial: $(tail -n 20 "$log")"
    local before after
    before=$(quick_ticks "$log")
    sleep $((3 * time_scale))
    after=$(quick_ticks "$log")
    [ "$after" -eq "$before" ] ||
        fail "1. $((after - before)) quick ticks with nothing new and nothing on trial: $(grep -A2 -B2 ' quick; ' "$log" | tail -n 20)"
    ok "1. $before quick ticks while the pair was new and on trial, none in the 3 s after its verdict"
    # A second pair: its quick ticks decide it and what else is new or
    # unsettled; the first pair, judged, is out of their focus and keeps its
    # CPUs.
    local first_parent=$pair_parent first_cpus mark k m decided=""
    first_cpus=$(cpus_allowed "$first_parent")
    mark=$(wc -l <"$log")
    pair_start
    # As for the first: placed may place it before pair_start reads its
    # affinity (13 ms after it started, once, under ASan).
    live_track "$pair_parent" "$(online_cpus)"
    live_track "$pair_child" "$(online_cpus)"
    wait_packed "$log"
    while read -r k m; do
        if [ "$k" -ge 1 ] && [ "$k" -lt "$m" ]; then decided="$k of $m"; break; fi
    done < <(tail -n +"$mark" "$log" | sed -nE 's/.*Quick tick: deciding ([0-9]+) of ([0-9]+) groups.*/\1 \2/p')
    [ -n "$decided" ] ||
        fail "1. no quick tick decided the second pair alone of the groups: $(tail -n +"$mark" "$log" | grep 'Quick tick')"
    [ "$(cpus_allowed "$first_parent")" = "$first_cpus" ] ||
        fail "1. the first pair moved from CPUs $first_cpus to $(cpus_allowed "$first_parent") while the second was placed"
    ok "1. a second pair placed ${packed_ms} ms after it started, a quick tick deciding $decided groups; the first kept CPUs $first_cpus"
    placed_stop TERM
    pair_stop
    live_kill "$first_parent"
}

step_storm_bounded() {
    live_config storm 'quick_ticks_per_sec = 2'
    local t0 t1 n pairs=()
    t0=$(now_ms)
    live_placed_start storm
    local log=$T/storm.log
    grep -q 'Wake sampler: BPF' "$log" || skip "no BPF sampler here (notes need it)"
    live_spawn perf bench sched messaging -g 4 -l 2000
    local storm=$!
    for i in 1 2 3 4 5 6; do
        live_spawn perf bench sched pipe -l 50000000
        pairs+=("$!")
        sleep 0.5
    done
    sleep 1
    t1=$(now_ms)
    n=$(quick_ticks "$log")
    local allowed=$((2 * 2 + 2 * (t1 - t0 + 999) / 1000))
    [ "$n" -le "$allowed" ] ||
        fail "2. $n quick ticks in $((t1 - t0)) ms, more than the budget's $allowed (2 a second, a burst of 4)"
    [ "$n" -gt 0 ] || fail "2. no quick tick at all while six new pairs started: $(tail -n 30 "$log")"
    # hackbench's 160 new tasks are a fork storm, and while it lasts no note
    # of a young task's first relations is news (each brought a quick tick).
    # A note inside a one-way group of at most 4 tasks still is: a new
    # pair's other direction.
    local storm_line young
    storm_line=$(grep -m1 -o 'A fork storm: [0-9]* tasks started in the last [0-9]* s' "$log") ||
        fail "2. placed did not take hackbench's 160 new tasks for a fork storm: $(grep -E 'Tick:|storm' "$log" | tail -n 10)"
    young=$(awk '/A fork storm:/ { s = 1 } /fork storm is over/ { s = 0 }
                 s && /Note of .*: a young task (in no group yet|alone so far waking another)/' "$log")
    [ -z "$young" ] || fail "2. notes of young tasks were news during the fork storm: $young"
    ok "2. $n quick ticks in $((t1 - t0)) ms of new pairs and hackbench (at most $allowed); \"$storm_line\", and no note of a young task in no group or alone so far was news in it"
    placed_stop TERM
    live_kill "$storm"
    for p in "${pairs[@]}"; do live_kill "$p"; done
}

step_quick_off() {
    live_config slow 'quick_interval_ms = 0'
    live_placed_start slow
    local log=$T/slow.log
    pair_start
    wait_packed "$log"
    local line
    line=$(placing_line "$log")
    [[ $line == *"at a regular tick"* ]] || fail "3. with quick_interval_ms = 0: $line"
    [ "$(quick_ticks "$log")" -eq 0 ] || fail "3. quick ticks ran with quick_interval_ms = 0"
    ok "3. quick ticks off: the pair waited for a regular tick (${packed_ms} ms), no quick tick ran"
    placed_stop TERM
    pair_stop
}

# ticks_in LOG MS: the ticks LOG shows over the next MS milliseconds.
ticks_in() {
    local before
    before=$(grep -c ' groups, \(regular\|quick\); CPU time' "$1" || true)
    sleep "$(awk -v ms="$2" 'BEGIN { print ms / 1000 }')"
    echo $(($(grep -c ' groups, \(regular\|quick\); CPU time' "$1" || true) - before))
}

step_settled() {
    local live_interval_ms=200
    live_config settled
    live_placed_start settled
    sleep $((2 * time_scale))
    local n
    n=$(ticks_in "$T/settled.log" $((3000 * time_scale)))
    [ "$n" -le $((3000 * time_scale / 600 + 2)) ] ||
        fail "4. $n ticks of 200 ms in $((3 * time_scale)) s with nothing to do (settled_factor 3): $(grep -E 'Placing|Handing|Tick:' "$T/settled.log" | tail -n 20)"
    placed_stop TERM
    live_config every 'settled_factor = 1'
    live_placed_start every
    sleep $((2 * time_scale))
    local m
    m=$(ticks_in "$T/every.log" $((3000 * time_scale)))
    [ "$m" -ge 10 ] || fail "4. only $m ticks of 200 ms in $((3 * time_scale)) s with settled_factor = 1"
    ok "4. settled: $n ticks in $((3 * time_scale)) s (settled_factor 3), $m with settled_factor = 1"
    placed_stop TERM
}

# tick_gap_ms LOG LINE-REGEX: the CLOCK_MONOTONIC ms (PLACED_LOG_TIME=1) of
# the tick whose lines include the first one matching (a tick's Tick line
# comes last) and of the tick before it, as "THEN BEFORE".
tick_gap_ms() {
    awk -v rx="$2" '
        /^\[[0-9.]+\] Tick: / {
            t = substr($1, 2, length($1) - 2) * 1000
            if (want) { printf "%d %d\n", t, prev; exit }
            prev = t
            next
        }
        $0 ~ rx { want = 1 }
    ' "$1"
}

step_quick_soon() {
    # Quick windows of 1 s: the tick after the one that first saw a new pair
    # comes half a window later (500 ms), not a whole one, while its task's
    # note is fresh; a whole one later the regular tick would have come.
    live_config soon 'quick_interval_ms = 1000'
    PLACED_LOG_TIME=1 live_placed_start soon
    local log=$T/soon.log
    grep -q 'Wake sampler: BPF' "$log" || skip "no BPF sampler here (notes need it)"
    sleep 1
    pair_start
    live_track "$pair_parent" "$(online_cpus)"
    live_track "$pair_child" "$(online_cpus)"
    wait_packed "$log"
    local line gap placed_at before
    line=$(placing_line "$log")
    [[ $line == *"at a quick tick" ]] || fail "5. the pair was not placed at a quick tick: $line"
    read -r placed_at before < <(tick_gap_ms "$log" 'Placing pair group .*sched-pipe')
    [ -n "$placed_at" ] && [ -n "$before" ] || fail "5. no Tick lines around the Placing line: $(cat "$log")"
    gap=$((placed_at - before))
    [ "$gap" -ge 450 ] && [ "$gap" -lt 900 ] ||
        fail "5. the tick that placed the pair came $gap ms after the one before, not half a quick window (500 ms): $(grep -E 'Tick:|Note of|Placing|Leaving' "$log" | tail -n 20)"
    ok "5. quick windows of 1 s: the pair placed at a quick tick $gap ms after the tick before"
    placed_stop TERM
    pair_stop
}

live_step 1 step_quick_pair
live_step 2 step_storm_bounded
live_step 3 step_quick_off
live_step 4 step_settled
live_step 5 step_quick_soon
live_steps_done
live_check_restored
ok "quick ticks: placed at once when something new appears, and within their budget"
