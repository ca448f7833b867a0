#!/usr/bin/env bash
# Idle-state constraints by the real placed on the real system (issue 6,
# item 5), 200 ms ticks, a lockstep pipe pair running:
#   1. latency-first constrains the idle states of the pair's CPU (its
#      power/pm_qos_resume_latency_us leaves "0", or a cpuidle state's disable
#      becomes 1) within a few ticks, and SIGTERM restores every value exactly;
#   2. after SIGKILL the constraint stays until "placed --restore" puts every
#      value back (and a second --restore changes nothing);
#   3. power-first, with the same pair (which it packs), constrains nothing;
#   4. latency-first releases the cap (and its journal record) when the pair
#      stops, while placed keeps running.
# Every PM QoS value and idle-state disable flag is snapshotted at the start
# and checked (and put back, also on failure) at the end (lib/common.sh).
# placed manages every task on the machine while it runs: run this when no
# benchmark runs.
. "$(dirname "$0")/lib/common.sh"

live_init
command -v perf >/dev/null || skip "perf (linux-perf) is not installed"
[ -n "$(idle_values)" ] || skip "no per-CPU PM QoS or cpuidle state files under $cpu_sys"
all=$(online_cpus)
live_config idle
# What is tested here is the idle constraint, not the trial: the live tests'
# profiles keep what they place (live_hold_profiles), wherever packing pays.

# constrained CPU: the idle values of CPU differ from the start in a way that
# constrains it: PM QoS no longer "0" (no constraint), or a state disabled.
constrained() {
    idle_changes | grep -Eq "/cpu$1/(power/pm_qos_resume_latency_us [^ ]+ -> [^0]|cpuidle/state[0-9]+/disable 0 -> 1)"
}

# start_latency_first: the pair packed and its CPU constrained within 3 s
# (15 ticks). Sets cpu (the pair's CPU) and caps (the changes, one line).
start_latency_first() {
    pair_start
    live_placed_start idle --profile latency-first
    grep -q "Active profile: latency-first" "$T/idle.log" || fail "latency-first not active: $(cat "$T/idle.log")"
    wait_packed "$T/idle.log"
    cpu=$(cpus_allowed "$pair_parent")
    if ! wait_for_ms 3000 constrained "$cpu"; then
        cat "$T/idle.log" >&2
        idle_changes >&2
        fail "latency-first did not constrain the idle states of CPU $cpu (the pair's) within 3 s"
    fi
    journal_live | grep -Eq "^(pm_qos $cpu|cpuidle $cpu:)" ||
        fail "CPU $cpu constrained but not journaled: $(journal_records)"
    caps=$(idle_changes | sed "s|$cpu_sys/||" | paste -sd ';')
    cap_note "$cpu"
}

# cap_note CPU: says when the PM QoS cap on CPU still allows every idle state
# (no effect on what the governor may pick), for the record; not a failure.
cap_note() {
    local q max=0 lat
    q=$(cat "$cpu_sys/cpu$1/power/pm_qos_resume_latency_us" 2>/dev/null) || return 0
    [ -e "$cpu_sys/cpu$1/cpuidle/state0" ] || return 0 # no cpuidle driver: no states to compare
    [[ $q =~ ^[0-9]+$ ]] && [ "$q" -gt 0 ] || return 0
    for lat in "$cpu_sys/cpu$1"/cpuidle/state*/latency; do
        [ "$(cat "$lat")" -gt "$max" ] && max=$(cat "$lat")
    done
    [ "$q" -lt "$max" ] ||
        echo "note: the PM QoS cap of $q us on CPU $1 allows every idle state there (deepest exit latency $max us): it changes nothing on this machine"
}

step_latency_first_sigterm() {
    start_latency_first
    ok "1. latency-first, pair on CPU $cpu: $caps"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "1. placed exited $placed_rc on SIGTERM"
    [ -z "$(idle_changes)" ] || fail "1. idle values not restored by SIGTERM: $(idle_changes)"
    [ -z "$(journal_records)" ] || fail "1. journal not empty after SIGTERM: $(journal_records)"
    pair_is "$all" "$all" || fail "1. pair not restored by SIGTERM: $(pair_affinity)"
    ok "1. SIGTERM: exit 0, all $(wc -l <"$T/idle.start") idle values as at the start, journal empty"
}

step_latency_first_sigkill() {
    start_latency_first
    local before
    before=$(idle_changes)
    placed_stop KILL
    sleep 0.6 # three ticks: nobody restores anything
    [ "$(idle_changes)" = "$before" ] || fail "2. idle values changed after SIGKILL: $(idle_changes), was $before"
    live_restore_cli || fail "2. placed --restore failed: $(cat "$T/restore.out")"
    [ -z "$(idle_changes)" ] || fail "2. idle values not restored by placed --restore: $(idle_changes)"
    [ -z "$(journal_records)" ] || fail "2. journal not empty after --restore: $(journal_records)"
    pair_is "$all" "$all" || fail "2. pair not restored by --restore: $(pair_affinity)"
    local first
    first=$(sed 's/^<[0-9]>//' "$T/restore.out")
    live_restore_cli || fail "2. second placed --restore failed: $(cat "$T/restore.out")"
    grep -q "restored 0" "$T/restore.out" || fail "2. second restore did something: $(cat "$T/restore.out")"
    [ -z "$(idle_changes)" ] || fail "2. second restore changed idle values: $(idle_changes)"
    ok "2. SIGKILL kept $caps; placed --restore: $first; again: no change"
}

no_idle_change() { [ -z "$(idle_changes)" ]; }

step_power_first() {
    pair_start
    live_placed_start idle --profile power-first
    grep -q "Active profile: power-first" "$T/idle.log" || fail "power-first not active: $(cat "$T/idle.log")"
    wait_packed "$T/idle.log" # placed is acting on the pair...
    stays "$T/idle.log" 2000 no_idle_change || fail "3. power-first constrained idle states: $(idle_changes)"
    ! journal_records | grep -Eq "^ORIG.(pm_qos|cpuidle)" || fail "3. power-first journaled idle values: $(journal_records)"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "3. placed exited $placed_rc on SIGTERM"
    ok "3. power-first packed the pair on CPU $(grep -m1 -o 'Placing pair group .* on CPUs [0-9]*' "$T/idle.log" | awk '{ print $NF }') and constrained nothing over 10 ticks"
}

step_released_when_stopped() {
    start_latency_first
    local t0
    t0=$(now_ms)
    pair_stop
    if ! wait_for_ms 8000 no_idle_change; then
        cat "$T/idle.log" >&2
        fail "4. the cap on CPU $cpu outlived the pair by 8 s: $(idle_changes)"
    fi
    ! journal_live | grep -Eq "^(pm_qos|cpuidle) " || fail "4. released, but still journaled: $(journal_records)"
    kill -0 "$placed_pid" 2>/dev/null || fail "4. placed is not running any more"
    ok "4. pair stopped: the cap on CPU $cpu released $(($(now_ms) - t0)) ms later, placed still running"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "4. placed exited $placed_rc on SIGTERM"
}

live_step 1 step_latency_first_sigterm
live_step 2 step_latency_first_sigkill
live_step 3 step_power_first
live_step 4 step_released_when_stopped

live_check_restored
ok "nothing left changed: $(wc -l <"$T/idle.start") idle values as at the start ($(tr '\n' ' ' <"$T/idle.start" | sed "s|$cpu_sys/||g"))"
live_steps_done
echo "all live idle checks passed"
