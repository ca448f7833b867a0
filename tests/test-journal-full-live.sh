#!/usr/bin/env bash
# A full disk under the undo journal: the real placed (200 ms ticks, profile
# balanced) with its journal directory on a real tmpfs of 16 KiB, and a
# lockstep pipe pair (perf bench sched pipe) it would pack:
#   1. full from the start: placed says it cannot write the journal and that
#      it changes nothing until it can, keeps running, and leaves the pair on
#      every CPU, unjournaled, saying why; it neither claims to have placed
#      the pair nor judges a trial of it;
#   2. space freed: placed says the journal can be written again, packs the
#      pair, the journal holding both tasks; then the disk fills again under
#      it, and SIGTERM still puts both back and empties the journal;
#   3. full again after the pair was packed, then SIGKILL: the journal on the
#      full disk still holds the pair, and "placed --restore", with no space
#      to spare, puts both back and empties it.
# Each step mounts its own tmpfs and puts back what it changed (lib/common.sh,
# live_*).
. "$(dirname "$0")/lib/common.sh"

# Registered before live_init's cleanup, so it runs after it (hooks run last
# first): that cleanup replays the journal, which must still be mounted.
at_exit 'mountpoint -q "$T/journal" && umount -l "$T/journal"'
live_init
command -v perf >/dev/null || skip "perf (linux-perf) is not installed"
[ "$(nproc --all)" -ge 2 ] || skip "needs at least 2 CPUs to tell packed from spread"
all=$(online_cpus)
live_config balanced

# journal_tmpfs: a fresh 16 KiB tmpfs at $T/journal (the step before has
# replayed and emptied its journal).
journal_tmpfs() {
    mkdir -p "$T/journal"
    ! mountpoint -q "$T/journal" || umount "$T/journal"
    mount -t tmpfs -o size=16k,mode=0700 placed-journal-test "$T/journal" ||
        skip "cannot mount a tmpfs for the journal"
}

# disk_fill: fill the journal's tmpfs to its last byte.
disk_fill() {
    dd if=/dev/zero of="$T/journal/fill.$RANDOM" bs=512 2>/dev/null || true
    local avail
    avail=$(df --output=avail -B1 "$T/journal" | tail -n 1)
    [ "$avail" -eq 0 ] || fail "the journal's tmpfs still has $avail bytes free after filling"
}
disk_free() { rm -f "$T/journal"/fill.*; }

placed_alive() { kill -0 "$placed_pid" 2>/dev/null; }

step_full_from_start() {
    journal_tmpfs
    disk_fill
    pair_start
    live_placed_start balanced
    local log=$T/balanced.log
    wait_for_ms 3000 grep -q "Cannot write the undo journal in \"$T/journal\": No space left on device; placed changes nothing until it can" "$log" ||
        fail "1. placed did not say it cannot write the journal: $(grep -v '^Task ' "$log")"
    # Not placed is not on trial: no "Placing", no verdict on a placement that
    # never happened (and no back-off that would keep the pair from it
    # once the disk has room).
    wait_for_ms 3000 grep -q "Leaving pair group .*: pair: placing it failed (the undo journal cannot be written: No space left on device); left to the kernel" "$log" ||
        fail "1. placed did not say why it leaves the pair: $(cat "$log")"
    stays "$log" 1500 pair_is "$all" "$all" || fail "1. the pair changed with no journal: $(pair_affinity)"
    ! grep -E "Placing pair group|Handing pair group|Keeping pair group" "$log" ||
        fail "1. placed logged a placement or a trial it never made"
    placed_alive || fail "1. placed exited on a full disk: $(grep -v '^Task ' "$log")"
    ! journal_ever_task "$pair_parent" "$pair_child" || fail "1. journaled on a full disk: $(journal_records)"
    ok "1. full disk: placed says \"$(grep -m1 -o 'Cannot write the undo journal.*' "$log")\", pair left on $all, placed running"

    disk_free
    wait_packed "$log"
    grep -q "The undo journal in \"$T/journal\" can be written again: recovered" "$log" ||
        fail "2. packed, but placed did not say the journal recovered: $(grep -v '^Task ' "$log")"
    journal_holds_pair || fail "2. packed, but the journal lacks the pair: $(journal_records)"
    ok "2. space freed: recovered, pair packed onto CPU $(cpus_allowed "$pair_parent") ${packed_ms} ms later, both journaled"

    disk_fill
    pair_sigterm_restored 2 "with a full disk"
    ok "2. disk full again: SIGTERM exits 0, pair back on $all, journal empty"
}

step_crash_on_full_disk() {
    journal_tmpfs
    pair_start
    # The journal is tested here, not the trial: the live tests' profiles
    # keep what they place (live_hold_profiles), wherever packing pays.
    live_placed_start balanced
    wait_packed "$T/balanced.log"
    local cpu
    cpu=$(cpus_allowed "$pair_parent")
    disk_fill
    placed_stop KILL
    pair_is "$cpu" "$cpu" || fail "3. after SIGKILL the pair has $(pair_affinity), expected $cpu $cpu"
    journal_holds_pair ||
        fail "3. the journal on the full disk lacks the pair after SIGKILL: $(journal_records)"
    pair_restore_cli_restored 3 "on a full disk"
    ok "3. SIGKILL with a full disk: pair stays on CPU $cpu; placed --restore, still full: $(sed 's/^<[0-9]>//' "$T/restore.out")"
}

live_step 1 step_full_from_start
live_step 3 step_crash_on_full_disk
live_steps_done
live_check_restored
