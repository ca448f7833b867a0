#!/usr/bin/env bash
# The real placed on the real system (issue 5, item 9), 200 ms ticks, profile
# balanced, a lockstep pipe pair (perf bench sched pipe: two processes, both
# named "sched-pipe"):
#   1. the pair is packed onto one CPU within two ticks, and kept after its
#      trial, a switchback, because it made more hand-offs per second packed
#      than left to the kernel (by its third trial: the host can slow one,
#      see the step);
#   2. SIGTERM restores both affinities and empties the journal;
#   3. after SIGKILL the pair stays pinned until "placed --restore", which is
#      idempotent; 4. --restore is refused while a daemon holds the journal;
#   5. excluded (an ignore rule "exclude.comm[1]") and 6. already-pinned
#      tasks are left as they are (a pinned pair is not claimed placed, nor
#      put on trial);
#   7. a task whose affinity an administrator changed after placed is let go,
#      and not restored over;
#   8. a hackbench mesh (a) and a fan-out (b), each sized to need every CPU,
#      are left to the kernel;
#   9. --dry-run says "Would place" and changes nothing;
#  10. out of memory in the sample (the test hook PLACED_TEST_FAIL_SAMPLE)
#      stops each tick before apply: the packed pair stays packed.
# Each step runs on its own (a failed step does not hide the others) and puts
# back what it changed; the test checks at the end that nothing is left
# changed (lib/common.sh, live_*). placed manages every task on the machine
# while it runs: run this when no benchmark runs.
. "$(dirname "$0")/lib/common.sh"

live_init
command -v perf >/dev/null || skip "perf (linux-perf) is not installed"
[ "$(nproc --all)" -ge 2 ] || skip "needs at least 2 CPUs to tell packed from spread"
all=$(online_cpus)
live_config balanced
live_config exclude '[exclude]' 'comm = sched-pipe perf'

# pair_verdicts LOG: the trials' verdicts on the pair so far, one a line.
pair_verdicts() { grep -E "Keeping pair group|Handing pair group .*: pair: placed, " "$1" || true; }
# verdict_interval VERDICT: "GAIN LO HI" of a verdict line's "1.50x [1.20-1.80" (after a
# space when kept, after "(" when handed back); nothing when it has none.
verdict_interval() { echo "$1" | sed -nE 's/.*[ (]([0-9.]+)x \[([0-9.]+)-([0-9.]+).*/\1 \2 \3/p'; }
# pair_verdicts_at_least LOG N: N verdicts or more.
pair_verdicts_at_least() { [ "$(pair_verdicts "$1" | wc -l)" -ge "$2" ]; }
# pair_handoffs: the pair's hand-offs so far, both tasks' context switches (packed,
# a wakee preempts its waker before it blocks: those count as not voluntary).
pair_handoffs() {
    awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }' \
        "/proc/$pair_parent/status" "/proc/$pair_child/status"
}
# host_packing_gain: what packing the pair gains on this host now, measured by
# hand while placed leaves it alone (its back-off): its hand-offs pinned to one
# CPU over those on every CPU, in 0.4 s windows, ABBA, 4 of each, printed as a
# ratio "R.RR"; the pair is left on every CPU.
host_packing_gain() {
    local k a b packed=0 spread=0 cpu=${all%%[,-]*}
    for k in 0 1 2 3 4 5 6 7; do
        if (((k + k / 2) % 2)); then
            taskset -pc "$cpu" "$pair_parent" >/dev/null && taskset -pc "$cpu" "$pair_child" >/dev/null
        else
            taskset -pc "$all" "$pair_parent" >/dev/null && taskset -pc "$all" "$pair_child" >/dev/null
        fi
        a=$(pair_handoffs)
        sleep 0.4
        b=$(pair_handoffs)
        if (((k + k / 2) % 2)); then packed=$((packed + b - a)); else spread=$((spread + b - a)); fi
    done
    taskset -pc "$all" "$pair_parent" >/dev/null && taskset -pc "$all" "$pair_child" >/dev/null
    awk -v p="$packed" -v s="$spread" 'BEGIN { printf "%.2f", (s > 0 ? p / s : 0) }'
}

step_pack_and_sigterm() {
    pair_start
    local orig
    orig="$(live_orig "$pair_parent") $(live_orig "$pair_child")"
    [ "$orig" = "$all $all" ] || fail "the pair does not start on all CPUs ($orig, online $all)"
    # The shipped (or scaled) profiles with a back-off of 500 ms after a
    # trial that did worse and a dwell of 1 s, so that retries come soon.
    live_profiles_dir=$(live_profiles_with profiles-retry '[trial]' 'backoff_ms = 500' \
        '[hysteresis]' 'dwell_ms = 1000')
    live_placed_start balanced
    live_profiles_dir=""
    local log=$T/balanced.log
    wait_packed "$log"
    grep -q "Placing pair group .*sched-pipe" "$log" ||
        fail "packed, but placed did not log placing a pair: $(cat "$log")"
    ok "1. pair $pair_parent/$pair_child packed onto CPU $(cpus_allowed "$pair_parent") ${packed_ms} ms after placed started"
    # The trial, a switchback: kept because the pair measured faster packed
    # than left to the kernel, the 95% interval of its gain above 1. Each
    # verdict must agree with its own figures. A trial can tie when it is
    # right to: the kernel packs a lockstep pair onto one CPU by itself, for
    # seconds at a time, and then its windows run as fast as placed's
    # (2-vCPU guest, six pairs watched in 0.2 s windows for 6 s: spread,
    # 87-95k hand-offs/s; in three of them the kernel packed the pair by
    # itself at some point, never pinned, at 106-133k, for 0.6 s to more
    # than 4 s). So on a real CPU the pair must be kept by its sixth
    # trial (placed tries again after each back-off: a retry is placed's
    # own behaviour, not the test's), unless the host gives packing no gain
    # even then: the test pins the pair by hand in the back-off after the
    # sixth. (CI failed here once when this allowed three trials: three
    # ties, then 1.30x by hand, a spread phase after three packed ones.)
    # Under emulation (qemu TCG, PLACED_PACKING_MAY_LOSE=1) a lockstep pair
    # may not gain at all: a verdict against it that agrees with its figures
    # ends the check. A verdict takes 6 to 18 windows (the first pair is not
    # weighed).
    local verdict gain lo hi n last=6
    for n in $(seq 1 $last); do
        # A retry waits out the back-off (500 ms, doubling: 8 s at most)
        # and the dwell (1 s) as well.
        wait_for_ms $((n == 1 ? 6000 : 14000)) pair_verdicts_at_least "$log" $n ||
            fail "1. no verdict on the packed pair's trial $n: $(cat "$log")"
        verdict=$(pair_verdicts "$log" | sed -n "${n}p")
        read -r gain lo hi < <(verdict_interval "$verdict")
        [ -n "$hi" ] || fail "1. no gain and interval in the verdict: $verdict"
        if [[ $verdict == *Keeping* ]]; then
            # The line rounds to hundredths: a kept lower bound prints 1.00 or more.
            awk -v lo="$lo" 'BEGIN { exit !(lo >= 1) }' || fail "1. kept without a clear gain: $verdict"
            break
        fi
        if [[ $verdict == *"did worse"* ]]; then
            awk -v hi="$hi" 'BEGIN { exit !(hi <= 1) }' || fail "1. handed back without losing: $verdict"
        else
            [[ $verdict == *"no clear gain"* ]] || fail "1. handed back for what? $verdict"
        fi
        [ -z "${PLACED_PACKING_MAY_LOSE:-}" ] || break
        ok "1. trial $n handed the pair back: ${verdict#*: }"
        if [ "$n" -eq $last ]; then
            # Within the back-off (8 s after a sixth revert, and the dwell).
            local by_hand
            by_hand=$(host_packing_gain)
            awk -v r="$by_hand" 'BEGIN { exit !(r < 1.1) }' ||
                fail "1. a lockstep pair was handed back in $last trials, yet pinned by hand now it makes ${by_hand}x the hand-offs: $(pair_verdicts "$log")"
            ok "1. $last trials handed the pair back, and the host gives packing no gain now: pinned by hand, ${by_hand}x the hand-offs left to the kernel"
        fi
    done
    ok "1. trial verdict: ${verdict#*: }"
    # Each window's figure is logged at debug level, the side it ran on named.
    grep -qE "Trial of pair group [0-9]+: window 0, placed's, [0-9]+ handoffs/s, [0-9.]+ CPUs'" "$log" &&
        grep -qE "Trial of pair group [0-9]+: window 1, kernel's, [0-9]+ handoffs/s, [0-9.]+ CPUs'" "$log" ||
        fail "1. the trial's windows are not in the debug log: $(grep 'Trial of' "$log")"

    pair_sigterm_restored 2
    ok "2. SIGTERM: exit 0, pair back on $all, journal empty"
}

step_sigkill_and_restore() {
    pair_start
    # What is tested here is the journal, not the trial: the live tests'
    # profiles keep what they place (live_hold_profiles).
    live_placed_start balanced
    wait_packed "$T/balanced.log"
    local cpu first
    cpu=$(cpus_allowed "$pair_parent")
    if live_restore_cli; then fail "4. placed --restore succeeded while placed runs"; fi
    grep -q "placed is running and holds" "$T/restore.out" ||
        fail "4. refused restore does not say a daemon holds the journal: $(cat "$T/restore.out")"
    pair_is "$cpu" "$cpu" || fail "4. the refused restore changed the pair: $(pair_affinity)"
    ok "4. placed --restore refused while placed runs: $(sed 's/^<[0-9]>//' "$T/restore.out")"

    placed_stop KILL
    sleep 0.6 # three ticks: nobody restores anything
    pair_is "$cpu" "$cpu" || fail "3. after SIGKILL the pair has $(pair_affinity), expected $cpu $cpu"
    journal_holds_pair || fail "3. the journal lacks the pair after SIGKILL: $(journal_records)"
    pair_restore_cli_restored 3
    first=$(sed 's/^<[0-9]>//' "$T/restore.out")
    live_restore_cli || fail "3. second placed --restore failed: $(cat "$T/restore.out")"
    grep -q "restored 0" "$T/restore.out" || fail "3. second restore did something: $(cat "$T/restore.out")"
    pair_is "$all" "$all" || fail "3. second restore changed the pair: $(pair_affinity)"
    ok "3. SIGKILL: pair stays on CPU $cpu; placed --restore: $first; again: exit 0, no change"
}

# decided_untouched STEP LOG PATTERN WHAT: placed logs PATTERN for the pair
# within 3 s (so it did decide), yet the pair keeps all CPUs for 1.5 s and is
# never journaled.
decided_untouched() {
    local step=$1 log=$2 pattern=$3 what=$4
    if ! wait_for_ms 3000 grep -q "$pattern" "$log"; then
        cat "$log" >&2
        fail "$step. placed never decided for the pair ($what), so this is not tested"
    fi
    stays "$log" 1500 pair_is "$all" "$all" || fail "$step. $what changed the pair: $(pair_affinity)"
    ! journal_ever_task "$pair_parent" "$pair_child" || fail "$step. $what journaled: $(journal_records)"
}

step_excluded() {
    pair_start
    live_placed_start exclude
    # [exclude] is an ignore rule named after its key: the whole group is left alone.
    decided_untouched 5 "$T/exclude.log" 'Leaving pair group .*rule "exclude.comm\[1\]" (ignore)' "exclusion"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "5. placed exited $placed_rc"
    ok "5. excluded pair (comm sched-pipe, rule exclude.comm[1]) decided for but untouched: $(pair_affinity) over 7 ticks"
}

step_pinned() {
    pair_start taskset -c 1
    pair_is 1 1 || fail "6. taskset -c 1 did not pin the pair: $(pair_affinity)"
    live_placed_start balanced
    if ! wait_for_ms 3000 grep -q "Task $pair_parent left alone: refused-narrowed" "$T/balanced.log"; then
        grep -v '^Task ' "$T/balanced.log" >&2
        fail "6. placed did not refuse the pinned pair as narrowed"
    fi
    wait_for_ms 3000 grep -q "Leaving pair group .*: pair: its tasks are not placed's to move (refused-narrowed); left alone" "$T/balanced.log" ||
        fail "6. placed did not say it leaves the pinned pair alone: $(grep -v '^Task ' "$T/balanced.log")"
    stays "$T/balanced.log" 1000 pair_is 1 1 || fail "6. pinned pair changed: $(pair_affinity)"
    ! grep -E "Placing pair group|Keeping pair group|Handing pair group" "$T/balanced.log" ||
        fail "6. placed logged a placement or a trial of the pinned pair, which it never moved"
    ! journal_ever_task "$pair_parent" "$pair_child" || fail "6. pinned tasks journaled: $(journal_records)"
    placed_stop TERM
    pair_is 1 1 || fail "6. pinned pair changed on SIGTERM: $(pair_affinity)"
    ok "6. pair pinned to CPU 1 beforehand: left alone (refused-narrowed), still 1 after SIGTERM"
}

# 7. An administrator's change after placed wins: (a) widened back to all CPUs,
# (b) moved to the other CPU. Either way placed lets the task go (drops its
# journal record), does not set it again and does not restore over it on
# SIGTERM; the partner it still owns is restored.
admin_change() { # LABEL NEW_CPUS|other
    pair_start
    live_placed_start balanced
    wait_packed "$T/balanced.log"
    local cpu new=$2
    cpu=$(cpus_allowed "$pair_parent")
    [ "$new" = other ] && new=$(awk -v c="$cpu" 'BEGIN { print (c == 0) ? 1 : 0 }')
    taskset -pc "$new" "$pair_child" >/dev/null
    live_track "$pair_child" "$new" # the admin's value is the one to keep
    # (The partner may be widened or handed back meanwhile: that is placed's call.)
    stays "$T/balanced.log" 1500 child_is "$new" ||
        fail "7$1. placed set task $pair_child again after the admin gave it $new (placed had $cpu): $(pair_affinity)"
    ! journal_holds_task "$pair_child" ||
        fail "7$1. the journal still holds $pair_child after the admin changed it"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "7$1. placed exited $placed_rc"
    pair_is "$all" "$new" ||
        fail "7$1. after SIGTERM the pair has $(pair_affinity), expected $all (restored) $new (the admin's)"
    ok "7$1. admin set $pair_child to $new after placed packed it on $cpu: let go, kept on SIGTERM; partner restored to $all"
}
child_is() { [ "$(cpus_allowed "$pair_child")" = "$1" ]; }
step_admin_widens() { admin_change a "$all"; }
step_admin_moves() { admin_change b other; }

# all_tasks_full PGID: every thread of every process in the group may run on
# all CPUs (one cat for all, so a short-lived pin is not missed between polls).
all_tasks_full() {
    local pid files=() bad
    for pid in $(pgrep -g "$1"); do
        files+=(/proc/"$pid"/task/*/status)
        echo "$pid" >>"$T/seen.$1"
    done
    [ ${#files[@]} -gt 0 ] || return 0
    bad=$(cat "${files[@]}" 2>/dev/null | awk -v all="$all" '/^Pid:/ { tid = $2 }
        /^Cpus_allowed_list:/ && $2 != all { printf "%s:%s ", tid, $2 }')
    [ -z "$bad" ] || {
        echo "pinned (tid:cpus): $bad" >&2
        return 1
    }
}

# placed_pinned_group LOG PGID: placed logged placing a group whose first task
# is one of PGID's (as all_tasks_full saw them) on fewer than all CPUs (in
# enforce mode it then pins them, if only for a tick).
placed_pinned_group() {
    local line pid
    grep -E "Placing [a-z]+ group [0-9]+ \([0-9]+ tasks, first [^)]*/[0-9]+\) on CPUs " "$1" |
        grep -v "on CPUs $all:" | while read -r line; do
        pid=$(echo "$line" | sed -E 's/.*first [^)]*\/([0-9]+)\).*/\1/')
        ! grep -qx "$pid" "$T/seen.$2" 2>/dev/null || echo "$line"
    done
}

# stays_unpinned STEP WHAT MS PGID: every task of the workload started as
# PGID keeps all CPUs for MS, placed logs no narrower group of it, and a
# SIGTERM leaves the journal empty.
stays_unpinned() {
    local step=$1 what=$2 ms=$3 pgid=$4 said
    stays "$T/balanced.log" "$ms" all_tasks_full "$pgid" || fail "$step. $what: tasks were pinned"
    said=$(placed_pinned_group "$T/balanced.log" "$pgid")
    [ -z "$said" ] || fail "$step. placed pinned $what: $said"
    live_kill "$pgid"
    placed_stop TERM
    [ -z "$(journal_records)" ] || fail "$step. journal not empty: $(journal_records)"
}

# 8. What these steps assume of the machine: each workload is sized to need
# every CPU (hackbench: a group of 20 busy tasks per CPU; the fan-out: four
# busy workers per CPU, more than any LLC holds), and what needs every CPU is
# left to the kernel. A smaller hackbench or fan-out on a machine with more
# CPUs or LLCs may rightly get a home in one LLC under balanced.
ncpus=$(nproc)

step_mesh() {
    local mesh groups=$((ncpus > 2 ? ncpus : 2))
    live_placed_start balanced
    live_spawn perf bench sched messaging -g "$groups" -l 5000
    mesh=$!
    sleep 0.3
    [ "$(pgrep -g "$mesh" | wc -l)" -gt 10 ] || fail "8a. hackbench did not start its processes"
    stays_unpinned 8a "hackbench groups" 4000 "$mesh"
    ok "8a. hackbench -g $groups (every CPU's worth) stays on $all for 4 s (20 ticks)"
}

step_fanout() {
    local fan said fanout_bin=$PLACED_BUILD/bench/fanout workers=$((ncpus * 4 > 8 ? ncpus * 4 : 8))
    [ -x "$fanout_bin" ] || fail "8b. $fanout_bin is not built (make check builds it)"
    live_placed_start balanced
    live_spawn "$fanout_bin" -w "$workers" -s 3
    fan=$!
    stays_unpinned 8b "the fan-out" 2800 "$fan"
    said=$(grep -Eo '(Placing|Handing) [a-z]+ group [0-9]+ \(.*fanout/.*' "$T/balanced.log" |
        cut -c1-100 | sort -u | tr '\n' ';' || true)
    ok "8b. fanout -w $workers (every CPU's worth) stays on $all for 3 s; placed said: ${said:-nothing about it}"
}

step_dry_run() {
    pair_start
    live_placed_start balanced --dry-run
    decided_untouched 9 "$T/balanced.log" "Would place pair group .*sched-pipe" "--dry-run"
    placed_stop TERM
    pair_is "$all" "$all" || fail "9. --dry-run changed the pair on exit: $(pair_affinity)"
    ok "9. --dry-run: \"$(grep -m1 -o 'Would place pair group [^:]*' "$T/balanced.log")\", affinity unchanged"
}

# oom_ticks LOG: the ticks whose sample ran out of memory so far.
oom_ticks() { grep -c "Sampling the tasks failed" "$1" || true; }
oom_ticks_at_least() { [ "$(oom_ticks "$1")" -ge "$2" ]; }

step_out_of_memory() {
    local log=$T/balanced.log packed handed
    pair_start
    export PLACED_TEST_FAIL_SAMPLE=$T/oom
    live_placed_start balanced
    unset PLACED_TEST_FAIL_SAMPLE
    wait_packed "$log"
    packed=$(pair_affinity)
    handed=$(grep -c "Handing" "$log" || true)
    touch "$T/oom"
    wait_for_ms 3000 oom_ticks_at_least "$log" 5 ||
        fail "10. no tick said its sample ran out of memory: $(tail -n 20 "$log")"
    [ "$(pair_affinity)" = "$packed" ] ||
        fail "10. the pair moved while the sample ran out of memory: $packed -> $(pair_affinity)"
    [ "$(grep -c "Handing" "$log" || true)" = "$handed" ] ||
        fail "10. a group was handed back while the sample ran out of memory: $(grep Handing "$log")"
    rm -f "$T/oom"
    placed_stop TERM
    pair_is "$all" "$all" || fail "10. SIGTERM did not restore the pair: $(pair_affinity)"
    ok "10. $(oom_ticks "$log") ticks out of memory in the sample: the pair stayed on $packed, nothing handed back"
}

live_step 1+2 step_pack_and_sigterm
live_step 3+4 step_sigkill_and_restore
live_step 5 step_excluded
live_step 6 step_pinned
live_step 7a step_admin_widens
live_step 7b step_admin_moves
live_step 8a step_mesh
live_step 8b step_fanout
live_step 9 step_dry_run
live_step 10 step_out_of_memory

live_check_restored
ok "nothing left changed ($(wc -l <"$T/idle.start") idle values as at the start)"
live_steps_done
echo "all live placement checks passed"
