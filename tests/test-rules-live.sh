#!/usr/bin/env bash
# Per-application rules against real tasks (issue 15, item 2): the real
# placed, 200 ms ticks, a rules.d directory beside its configuration, a
# private D-Bus for placectl, and perf's lockstep pipe pair (two processes
# named "sched-pipe"), which balanced packs onto one CPU without a rule:
#   1. the pair is packed while no rule matches it; an "ignore" rule added by
#      SIGHUP hands it back to all CPUs and keeps it there; placectl explain
#      and groups --json name the rule; a broken rules file is refused on
#      SIGHUP and on placectl reload with FILE:LINE, and the running rules
#      stay (the pair stays unpinned);
#   2. "never-pack": decided for, never pinned, never journaled;
#   3. "latency-critical" under power-first: the pair is placed and its CPU
#      gets latency-first's idle cap, which power-first alone never sets
#      (where the machine has per-CPU PM QoS files), and explain names the rule;
#   4. "pack-with" between two light pairs matched by cgroup path and by
#      unit (cgroups of the unified hierarchy): they share one CPU.
# Each step puts back what it changed; the end checks nothing is left changed.
. "$(dirname "$0")/lib/common.sh"

live_init
command -v perf >/dev/null || skip "perf (linux-perf) is not installed"
command -v dbus-daemon >/dev/null || skip "dbus-daemon is not installed (apt-get install dbus)"
[ "$(nproc --all)" -ge 2 ] || skip "needs at least 2 CPUs to tell packed from spread"
all=$(online_cpus)
placectl=$PLACED_BUILD/placectl

write_bus_config ''
out=$(dbus-daemon --config-file="$T/bus.conf" --fork --print-address=1 --print-pid=1) ||
    fail "dbus-daemon did not start with $T/bus.conf"
ADDR=$(echo "$out" | sed -n 1p)
bus_pid=$(echo "$out" | sed -n 2p)
at_exit "kill $bus_pid"
export PLACED_BUS_ADDRESS=
pc() { "$placectl" --address "$ADDR" "$@"; }

# rules_conf NAME: $T/NAME/placed.conf (journal in $T/journal), rules in $T/NAME/rules.d.
rules_conf() {
    mkdir -p "$T/$1/rules.d"
    live_config "$1/placed"
}

# pair_state: each task's state, CPUs and context switches over 1 s (is the
# pair exchanging at all?), for a failure's message.
pair_state() {
    local pid a b
    for pid in "$pair_parent" "$pair_child"; do
        a=$(awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
        sleep 1
        b=$(awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
        printf '%s %s on %s, %s switches/s; ' "$pid" "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" \
            "$(cpus_allowed "$pid")" "$((${b:-0} - ${a:-0}))"
    done
}

# pair_unpinned_and_unjournaled: both tasks on all CPUs, and never journaled.
pair_all() { pair_is "$all" "$all"; }

# explain_names STEP PID RULE ACTION FILE:LINE: "placectl explain PID" names
# the rule that decided and where it is written; sets explain to its output.
explain_names() {
    explain=$(pc explain "$2") || fail "$1. placectl explain failed: $explain"
    echo "$explain" | grep -q "Rule \"$3\" ($4, $5) decided" ||
        fail "$1. explain does not name rule \"$3\" and where it is written: $explain"
}

step_ignore_and_reload() {
    rules_conf ignore
    local rules=$T/ignore/rules.d log=$T/ignore/placed.log
    printf '# nothing running matches\n[other]\ncomm = no-such-task\naction = ignore\n' >"$rules/10-bench.conf"
    pair_start
    live_placed_start ignore/placed --profile balanced --bus "$ADDR"
    wait_packed "$log"
    ok "1. no rule matches: pair packed on CPU $(cpus_allowed "$pair_parent") in ${packed_ms} ms"

    printf '[quiet-bench]\n; the pipe pair of perf bench\ncomm = sched-*\naction = ignore\n' >"$rules/20-bench.conf"
    kill -HUP "$placed_pid"
    wait_for_ms 3000 pair_all || fail "1. the ignore rule did not hand the pair back: $(pair_affinity); $(tail -20 "$log")"
    stays "$log" 1500 pair_all || fail "1. the ignored pair was pinned again: $(pair_affinity)"
    grep -q "Handing pair group .*rule \"quiet-bench\" (ignore): left alone" "$log" ||
        fail "1. placed did not log handing the pair back for the rule: $(grep -i 'pair group' "$log" | tail -5)"
    local explain
    explain_names 1 "$pair_parent" quiet-bench ignore "$rules/20-bench.conf:1"
    pc groups --json >"$T/groups.json" || fail "1. placectl groups --json failed"
    python3 - "$T/groups.json" "$pair_parent" <<'PY' || fail "1. groups --json lacks the rule: $(cat "$T/groups.json")"
import json, sys
groups = json.load(open(sys.argv[1]))
g = [g for g in groups if int(sys.argv[2]) in g["tids"]][0]
assert g["rule"] == {"name": "quiet-bench", "action": "ignore"}, g
PY
    ok "1. SIGHUP with an ignore rule: pair back on $all and kept there; explain: \"${explain##*allowed on CPUs }\""

    # A broken rules file: both reload paths refuse it by FILE:LINE; the rules in force stay.
    printf '[broken]\ncomm = x\naction = sometimes\n' >"$rules/30-broken.conf"
    kill -HUP "$placed_pid"
    wait_for_ms 3000 grep -q "30-broken.conf:3: rule \[broken\]: invalid action" "$log" ||
        fail "1. SIGHUP with a broken rules file: no FILE:LINE error: $(tail -5 "$log")"
    # The refusal is the next line placed writes: wait for it too (under
    # ASan it came after the grep once).
    wait_for_ms 3000 grep -q "Reload failed, keeping the running configuration" "$log" ||
        fail "1. the broken reload was not refused: $(tail -5 "$log")"
    local rc=0
    pc reload >"$T/reload.out" 2>&1 || rc=$?
    [ $rc -ne 0 ] || fail "1. placectl reload accepted a broken rules file"
    grep -q "30-broken.conf:3" "$T/reload.out" || fail "1. placectl reload's error lacks FILE:LINE: $(cat "$T/reload.out")"
    stays "$log" 1000 pair_all || fail "1. after the refused reload the pair was pinned: $(pair_affinity)"
    pc explain "$pair_parent" | grep -q 'Rule "quiet-bench"' || fail "1. the running rules did not stay"
    ok "1. broken rules file refused: $(sed 's/^<[0-9]>//' "$T/reload.out" | head -1)"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "1. placed exited $placed_rc"
    pair_all || fail "1. after SIGTERM the pair has $(pair_affinity)"
}

step_never_pack() {
    rules_conf never
    printf '[spread-bench]\ncomm = sched-pipe\naction = never-pack\n' >"$T/never/rules.d/bench.conf"
    pair_start
    live_placed_start never/placed --profile balanced
    local log=$T/never/placed.log
    if ! wait_for_ms 3000 grep -q "Leaving [a-z]* group .*rule \"spread-bench\" (never-pack)" "$log"; then
        cat "$log" >&2
        fail "2. placed never decided for the pair under the never-pack rule; the pair: $(pair_state)"
    fi
    stays "$log" 2000 pair_all || fail "2. the never-pack pair was pinned: $(pair_affinity)"
    ! journal_ever_task "$pair_parent" "$pair_child" || fail "2. never-pack pair journaled: $(journal_records)"
    placed_stop TERM
    ok "2. never-pack: \"$(grep -m1 -o 'rule "spread-bench" (never-pack): [^.]*' "$log")\"; pair on $all for 2 s, never journaled"
}

# cpu_capped CPU: its PM QoS value is no longer "0" (no constraint).
cpu_capped() {
    local f=$cpu_sys/cpu$1/power/pm_qos_resume_latency_us
    [ -e "$f" ] && [ "$(cat "$f")" != 0 ]
}

step_latency_critical() {
    rules_conf lc
    printf '[rt-bench]\nexe = */perf\ncomm = sched-pipe\naction = latency-critical\n' >"$T/lc/rules.d/bench.conf"
    pair_start
    live_placed_start lc/placed --profile power-first --bus "$ADDR"
    local log=$T/lc/placed.log cpu explain
    grep -q "Active profile: power-first" "$log" || fail "3. power-first not active: $(head -5 "$log")"
    wait_packed "$log"
    cpu=$(cpus_allowed "$pair_parent")
    grep -q "Placing pair group .*rule \"rt-bench\" (latency-critical)" "$log" ||
        fail "3. the placement does not name the rule: $(grep 'Placing' "$log")"
    explain_names 3 "$pair_parent" rt-bench latency-critical "$T/lc/rules.d/bench.conf:1"
    echo "$explain" | grep -q "Profile power-first: rule \"rt-bench\" (latency-critical): pair" ||
        fail "3. explain: $explain"
    local caps="no per-CPU PM QoS file here"
    if [ -e "$cpu_sys/cpu$cpu/power/pm_qos_resume_latency_us" ]; then
        wait_for_ms 3000 cpu_capped "$cpu" ||
            fail "3. the latency-critical pair's CPU $cpu got no idle cap: $(idle_changes); $(grep -i idle "$log" | tail -3)"
        journal_live | grep -q "^pm_qos $cpu" || fail "3. CPU $cpu capped but not journaled"
        caps="CPU $cpu PM QoS $(cat "$cpu_sys/cpu$cpu/power/pm_qos_resume_latency_us") us"
    fi
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "3. placed exited $placed_rc"
    [ -z "$(idle_changes)" ] || fail "3. idle values not restored by SIGTERM: $(idle_changes)"
    pair_all || fail "3. after SIGTERM the pair has $(pair_affinity)"
    ok "3. latency-critical under power-first: pair on CPU $cpu, $caps; restored on SIGTERM"
}

# A slow ping-pong of two python3 processes over pipes (about 1000 round
# trips a second, a few percent of a CPU): a light pair, started inside
# cgroup $1 of the unified hierarchy. Sets lp_parent, lp_child. On a slow
# machine time_scale times fewer: under qemu TCG, at 1000 a second, two
# such pairs took 0.9-1.2 CPUs' worth, too much to share one CPU.
light_pair_start() {
    [ -f "$T/pingpong.py" ] || cat >"$T/pingpong.py" <<'PY'
import os, sys, time
interval = float(sys.argv[1])
r1, w1 = os.pipe()
r2, w2 = os.pipe()
if os.fork() == 0:
    while True:
        os.read(r1, 1)
        os.write(w2, b"x")
while True:
    time.sleep(interval)
    os.write(w1, b"x")
    os.read(r2, 1)
PY
    local py
    py=$(command -v /usr/bin/python3 python3 | head -n 1)
    live_spawn sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3" "$4"' sh "$1" "$py" \
        "$T/pingpong.py" "$(printf "0.%03d" "$time_scale")"
    lp_parent=$!
    wait_for 5 pgrep -P "$lp_parent" || fail "4. the ping-pong in $1 did not fork"
    lp_child=$(pgrep -P "$lp_parent" | head -n 1)
    live_track "$lp_parent"
    live_track "$lp_child"
}

# same_single_cpu PID...: every task allowed on the same one CPU.
same_single_cpu() {
    local pid first=
    for pid in "$@"; do
        local a
        a=$(cpus_allowed "$pid")
        [[ $a =~ ^[0-9]+$ ]] || return 1
        [ -z "$first" ] || [ "$a" = "$first" ] || return 1
        first=$a
    done
}

# 4. pack-with, matched by cgroup path and by unit: two light pairs, one in
# cgroup placed-rules-a-N.scope and one in placed-rules-b-N.scope (of the
# unified hierarchy), each rule naming the other as its partner, share one
# CPU; explain names each rule; SIGTERM restores.
step_pack_with() {
    local root id=$$-$RANDOM
    root=$(findmnt -t cgroup2 -n -o TARGET 2>/dev/null | head -n 1)
    if [ -z "$root" ] || ! mkdir "$root/placed-rules-a-$id.scope" 2>/dev/null; then
        ok "4. not run: no writable cgroup v2 hierarchy here (${root:-none mounted}) to put the pairs in"
        return 0
    fi
    local cg_a=$root/placed-rules-a-$id.scope cg_b=$root/placed-rules-b-$id.scope
    printf '%s\n' "$cg_a" >>"$T/cgroups"
    mkdir "$cg_b" || fail "4. cannot create $cg_b"
    printf '%s\n' "$cg_b" >>"$T/cgroups"
    light_pair_start "$cg_a"
    local a1=$lp_parent a2=$lp_child path_a
    light_pair_start "$cg_b"
    local b1=$lp_parent b2=$lp_child
    path_a=$(awk -F'::' '/^0::/ { print $2 }' "/proc/$a1/cgroup")
    [[ $path_a == */placed-rules-a-$id.scope ]] || fail "4. pair A is in cgroup \"$path_a\", not $cg_a"
    rules_conf pw
    printf '[light-a]\ncgroup = %s\naction = pack-with\npartner = light-b\n\n' "$path_a" >"$T/pw/rules.d/light.conf"
    printf '[light-b]\nunit = placed-rules-b-*.scope\naction = pack-with\npartner = light-a\n' >>"$T/pw/rules.d/light.conf"
    live_placed_start pw/placed --profile balanced --bus "$ADDR"
    local log=$T/pw/placed.log
    wait_for_ms 4000 same_single_cpu "$a1" "$a2" "$b1" "$b2" ||
        fail "4. the two pack-with pairs do not share one CPU: A $(cpus_allowed "$a1") $(cpus_allowed "$a2"), B $(cpus_allowed "$b1") $(cpus_allowed "$b2"); $(grep -E '^(Placing|Leaving|Keeping|Handing)' "$log" | tail -8)"
    wait_for_ms 2000 grep -q 'rule "light-[ab]" (pack-with)' "$log" ||
        fail "4. placed did not log placing for the pack-with rule: $(grep -E 'Placing|Would' "$log")"
    local explain
    explain_names 4 "$b1" light-b pack-with "$T/pw/rules.d/light.conf:6"
    explain_names 4 "$a1" light-a pack-with "$T/pw/rules.d/light.conf:1"
    local cpu
    cpu=$(cpus_allowed "$a1")
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "4. placed exited $placed_rc"
    [ "$(cpus_allowed "$a1") $(cpus_allowed "$b2")" = "$all $all" ] ||
        fail "4. after SIGTERM: A $(cpus_allowed "$a1"), B $(cpus_allowed "$b2")"
    ok "4. pack-with by cgroup ($path_a) and by unit (placed-rules-b-*.scope): both pairs on CPU $cpu, explain names each rule; restored on SIGTERM"
}

# Step 4's cgroups, removed once their tasks are gone (each step's cleanup
# kills its workloads; this runs at the very end).
at_exit 'while read -r cg; do rmdir "$cg"; done <"$T/cgroups" 2>/dev/null'
live_step 1 step_ignore_and_reload
live_step 2 step_never_pack
live_step 3 step_latency_critical
live_step 4 step_pack_with

live_check_restored
ok "nothing left changed ($(wc -l <"$T/idle.start") idle values as at the start)"
live_steps_done
echo "all live rule checks passed"
