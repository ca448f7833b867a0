# shellcheck shell=bash disable=SC2034,SC2030,SC2031
# Shared helpers for the shell tests. Source it; it sets -eu and a temp dir
# ($T) removed on exit, and runs every function registered with at_exit.
set -eu
: "${PLACED_BUILD:?run through tests/run-tests.sh}"
: "${PLACED_SRC:=.}"
T=$(mktemp -d /tmp/placed-test.XXXXXX)
_exit_hooks=()
at_exit() { _exit_hooks+=("$*"); }
_run_exit_hooks() {
    local rc=$?
    for ((i = ${#_exit_hooks[@]} - 1; i >= 0; i--)); do eval "${_exit_hooks[i]}" || true; done
    rm -rf "$T"
    # A hook that found something wrong (e.g. a value left changed) fails the test.
    if [ -n "${_exit_hook_failed:-}" ] && { [ $rc -eq 0 ] || [ $rc -eq 77 ]; }; then
        echo "FAIL: $_exit_hook_failed" >&2
        rc=1
    fi
    exit $rc
}
trap _run_exit_hooks EXIT
# Killed (e.g. by run-tests.sh's timeout): still run the hooks.
trap 'exit 143' TERM
trap 'exit 130' INT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
skip() {
    echo "skipped: $*"
    exit 77
}
ok() { echo "ok - $*"; }

# Deadlines of the waits below are multiplied by PLACED_TEST_TIME_SCALE
# (default 1) on slow machines (make check-kernels: qemu TCG); a wait ends
# as soon as its condition holds, and durations that a state must last
# (stays) are not scaled.
time_scale=${PLACED_TEST_TIME_SCALE:-1}
[[ $time_scale =~ ^[1-9][0-9]*$ ]] || time_scale=1

# wait_for SECONDS COMMAND...: poll COMMAND every 50 ms until it succeeds.
wait_for() {
    local secs=$(($1 * time_scale))
    shift
    local end=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -ge $end ] && return 1
        sleep 0.05
    done
}

# run_dev_start: make run's daemon/run-dev.sh with 200 ms ticks and a journal
# under $T, in its own process group as a shell's foreground job (so Ctrl-C,
# SIGINT to the group, reaches all of it), its output in $T/run.log; waits
# for placed to start. Sets run_dev_pid; at exit the group gets SIGINT, then
# SIGKILL a second later.
run_dev_start() {
    setsid "$PLACED_SRC/daemon/run-dev.sh" "$PLACED_BUILD" --interval-ms 200 \
        --journal-dir "$T/journal" >"$T/run.log" 2>&1 &
    run_dev_pid=$!
    at_exit "kill -INT -- -$run_dev_pid 2>/dev/null; sleep 1; kill -KILL -- -$run_dev_pid 2>/dev/null"
    if ! wait_for 10 grep -q ' started: ' "$T/run.log"; then
        cat "$T/run.log" >&2
        fail "placed did not start from run-dev.sh"
    fi
}

# wait_for_ms MILLISECONDS COMMAND...: poll COMMAND every 50 ms until it
# succeeds; finer than wait_for for deadlines of a few ticks.
wait_for_ms() {
    local end=$((${EPOCHREALTIME//[.,]/} / 1000 + $1 * time_scale))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $((${EPOCHREALTIME//[.,]/} / 1000)) -ge "$end" ] && return 1
        sleep 0.05
    done
}

# now_ms: monotonic enough for measuring a few seconds in a test.
now_ms() { echo $((${EPOCHREALTIME//[.,]/} / 1000)); }

# write_bus_config ROOT_POLICY: a private system-type bus at $T/bus/socket
# ($T/bus.conf): Debian's system.conf policy in miniature, placed's own
# policy file, and ROOT_POLICY (XML rules) for root.
write_bus_config() {
    chmod 711 "$T"
    mkdir -p -m 755 "$T/bus"
    cat >"$T/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$T/bus/socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <policy user="root">
    $1
  </policy>
  <include>$PLACED_SRC/systemd/org.placed1.conf</include>
</busconfig>
EOF
}

# A minimal configuration in $T: defaults, journal in $T/journal.
write_config() {
    mkdir -p "$T/etc"
    cat >"$T/etc/placed.conf" <<CONF
[daemon]
journal_dir = $T/journal
CONF
}

# ---------------------------------------------------------------------------
# Live tests (placed on the real system): workloads, the values placed may
# change, and a cleanup that puts everything back even when a test fails.
#
#   live_init                      root check, snapshot of the idle values,
#                                  the cleanup hook
#   live_spawn [PREFIX...] CMD...  a workload in its own process group ($!)
#   live_track PID                 remember the task's affinity as original
#   live_placed_start NAME ARGS... placed --foreground in the background,
#                                  log $T/NAME.log, pid in $placed_pid
#   live_check_restored            fail unless every tracked affinity and
#                                  every idle value is as at the start
# ---------------------------------------------------------------------------
placed_bin=${PLACED_BUILD}/placed
cpu_sys=/sys/devices/system/cpu
# What the live tests started and changed, in files so that a step run in a
# subshell (live_step) adds to them too: process groups of workloads, placed
# pids, and "PID ORIGINAL_CPUS" of tracked tasks (the last line for a PID wins).
_live_pgids=$T/live.pgids
_live_placed=$T/live.placed
_live_tracked=$T/live.tracked
: >"$_live_pgids"
: >"$_live_placed"
: >"$_live_tracked"

need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root (changes affinities and idle states)"; }

# cpus_allowed PID: the task's allowed CPUs as a list ("0-1"), empty if gone.
cpus_allowed() { awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true; }

online_cpus() { cat "$cpu_sys/online"; }

# idle_values: "PATH VALUE" for every per-CPU PM QoS value and idle-state
# disable flag: everything the idle actuator may write.
idle_values() {
    local f
    for f in "$cpu_sys"/cpu[0-9]*/power/pm_qos_resume_latency_us \
        "$cpu_sys"/cpu[0-9]*/cpuidle/state[0-9]*/disable; do
        [ -e "$f" ] && echo "$f $(cat "$f")"
    done
    return 0
}

# idle_changes: the idle values that differ from the snapshot, as
# "PATH START -> NOW", one a line; nothing when all are as at the start.
idle_changes() {
    local path val cur
    while read -r path val; do
        cur=$(cat "$path" 2>/dev/null || echo "?")
        [ "$cur" = "$val" ] || echo "$path $val -> $cur"
    done <"$T/idle.start"
    return 0
}

live_init() {
    need_root
    idle_values >"$T/idle.start"
    at_exit _live_cleanup
}

# live_spawn [PREFIX...] CMD...: runs the command in the background in a new
# session, so that it and everything it forks can be killed as a group; $!
# is the command's pid (setsid does not fork: a background job of a
# non-interactive shell is not a process group leader).
live_spawn() {
    setsid "$@" </dev/null >/dev/null 2>&1 &
    echo "$!" >>"$_live_pgids"
}

# live_kill PID: kill the workload started by live_spawn as PID, and all it forked.
live_kill() {
    kill -KILL -- "-$1" 2>/dev/null || true
    { wait "$1"; } 2>/dev/null || true
}

# live_track PID [CPUS]: remember CPUS (default: the task's affinity now) as
# the affinity the task must have whenever placed has let it go.
live_track() {
    local a=${2:-$(cpus_allowed "$1")}
    [ -n "$a" ] || fail "task $1 is gone before it could be tracked"
    echo "$1 $a" >>"$_live_tracked"
}

# live_orig PID: the tracked original affinity of PID.
live_orig() { awk -v p="$1" '$1 == p { a = $2 } END { print a }' "$_live_tracked"; }

# pair_start [PREFIX...]: perf's pipe ping-pong, a lockstep pair of two
# processes (both named "sched-pipe"): sets pair_parent and pair_child,
# tracks both.
pair_start() {
    live_spawn "$@" perf bench sched pipe -l 50000000
    pair_parent=$!
    wait_for 5 pgrep -P "$pair_parent" || fail "perf bench sched pipe did not fork its partner"
    pair_child=$(pgrep -P "$pair_parent" | head -n 1)
    live_track "$pair_parent"
    live_track "$pair_child"
}

pair_stop() { live_kill "$pair_parent"; }

# pair_packed: both tasks allowed on one and the same single CPU.
pair_packed() {
    local a b
    a=$(cpus_allowed "$pair_parent")
    b=$(cpus_allowed "$pair_child")
    [[ $a =~ ^[0-9]+$ ]] && [ "$a" = "$b" ]
}

# pair_affinity: "PARENT_CPUS CHILD_CPUS", for messages.
pair_affinity() { echo "$(cpus_allowed "$pair_parent") $(cpus_allowed "$pair_child")"; }

# pair_is PARENT_CPUS CHILD_CPUS
pair_is() { [ "$(pair_affinity)" = "$1 $2" ]; }

# wait_packed LOG: the pair on one CPU within 3 s of now (15 ticks of 200 ms;
# placed needs two once it has seen the pair). Sets packed_ms.
wait_packed() {
    local t0
    t0=$(now_ms)
    if ! wait_for_ms 3000 pair_packed; then
        # Why first: CI shows a failure's head and tail only, and a pair run
        # spread brings a note every few milliseconds.
        {
            echo "placed's decisions (tasks $pair_parent and $pair_child are the pair):"
            grep -E '(Placing|Leaving|Keeping|Handing|Re-checking) [a-z]+ group' "$1" | head -n 30
            echo "its log without tasks left alone and notes ($(grep -c 'Note of' "$1") notes), last 40 lines:"
            grep -v -e 'left alone' -e 'Note of' "$1" | tail -n 40
        } >&2
        fail "pair not packed $((3 * time_scale)) s after placed started: affinities $(pair_affinity)"
    fi
    packed_ms=$(($(now_ms) - t0))
    # Its trial's switchback hands it to the kernel for a window now and
    # then: once the trial kept it (the live profiles' trial keeps what it
    # places in four windows, two weighed), it is packed for good, and
    # callers read its CPU.
    local kept="Keeping [a-z]* group [0-9]+ \(first task ($pair_parent|$pair_child)\)"
    if wait_for_ms 4000 grep -qE "$kept" "$1"; then
        wait_for_ms 2000 pair_packed ||
            fail "pair kept by its trial but not packed: affinities $(pair_affinity)"
    fi
    # placed logs a placement after it applied it, so under ASan the
    # affinity can be seen before the "Placing" line is written (CI saw it
    # once): give the line its moment, for callers that read it next. A
    # missing line is theirs to report.
    wait_for_ms 2000 grep -q "Placing [a-z]* group" "$1" || true
}

# stays LOG MS CHECK...: CHECK holds at every 100 ms poll for MS milliseconds;
# on the first miss, shows LOG and returns 1.
stays() {
    local log=$1 ms=$2
    shift 2
    local end=$(($(now_ms) + ms))
    while [ "$(now_ms)" -lt "$end" ]; do
        "$@" || {
            cat "$log" >&2
            return 1
        }
        sleep 0.1
    done
}

# live_config NAME [LINE...]: $T/NAME.conf, journal in $T/journal plus LINEs.
live_config() {
    local name=$1
    shift
    { printf '[daemon]\njournal_dir = %s\n' "$T/journal"; printf '%s\n' "$@"; } >"$T/$name.conf"
}

# live_hold_profiles: the shipped profiles with a trial that keeps what it
# places, in $T/profiles-hold: a switchback of two weighed windows (after
# the first pair, which is not weighed), kept unless placed did 99% worse,
# its tasks never judged squeezed, never re-checked, and anything handed
# back (past the run-queue budget) tried again after the dwell, with no
# back-off (under TCG a pipe pair's trial came out "squeezed", 0.51x, and
# its 30 s back-off outlasted the step's 15 s), and a pair's tasks never
# judged to run at once ([pair] max_overlap_pct = 100: in a guest without
# steal accounting, the time the host takes a vCPU away can count as its
# task's run time). The live tests check what placed
# does (places a pair at a quick tick, journals, restores, follows rules),
# which must not hang on whether packing pays on this host: under emulation
# or on a loaded machine it may not, and a verdict against it would hand
# the pair back mid-step. The trial's judgement is tested from tables
# (tests/test-policy.c) and live with the shipped profiles
# (test-placement-live.sh, step 1).
live_hold_profiles() {
    local dir=$T/profiles-hold f
    if [ ! -d "$dir" ]; then
        mkdir -p "$dir"
        for f in "$PLACED_SRC"/conf/profiles/*.conf; do
            cp "$f" "$dir/"
            printf '\n[trial]\nticks = 2\nkeep_pct = 1\nrecheck_s = 86400\nrecheck_drift_pct = 10000\nmax_run_loss_pct = 10000\nbackoff_ms = 0\n[pair]\nmax_overlap_pct = 100\n' \
                >>"$dir/$(basename "$f")"
        done
    fi
    echo "$dir"
}

# live_profiles_with NAME LINE...: the shipped profiles copied to $T/NAME,
# with the LINEs (a section and its keys, which win over the ones before)
# appended to each; prints the directory, for live_profiles_dir.
# live_hold_profiles_with NAME LINE...: the same from live_hold_profiles.
live_profiles_with() { _live_profiles_from "$PLACED_SRC/conf/profiles" "$@"; }
live_hold_profiles_with() { _live_profiles_from "$(live_hold_profiles)" "$@"; }
_live_profiles_from() {
    local from=$1 dir=$T/$2 f
    shift 2
    rm -rf "$dir"
    mkdir -p "$dir"
    for f in "$from"/*.conf; do
        cp "$f" "$dir/"
        printf '\n%s\n' "$@" >>"$dir/$(basename "$f")"
    done
    echo "$dir"
}

# live_placed_start NAME ARGS...: placed with config $T/NAME.conf, 200 ms
# ticks (live_interval_ms), journal $T/journal, log $T/NAME.log; waits for
# its start message.
# Profiles from live_profiles_dir when set, else the shipped ones with a
# trial that keeps what it places (live_hold_profiles). live_placed_wrap
# (words) goes before the command, e.g. to run placed in a namespace of its
# own; its wrapper must exec placed. Skips the test when no wake sampler
# could be loaded, unless live_no_sampler_ok is set.
live_placed_start() {
    local name=$1 profiles
    shift
    profiles=${live_profiles_dir:-$(live_hold_profiles)}
    [ -f "$T/$name.conf" ] || live_config "$name"
    # Not the previous run's log: the child truncates it only once it runs,
    # and a wait below could read the old " started: " first.
    rm -f "$T/$name.log"
    # Debug level: a failure shows why placed left a group alone.
    # shellcheck disable=SC2086
    ${live_placed_wrap:-} "$placed_bin" --foreground --bus none \
        --interval-ms "${live_interval_ms:-200}" --log-level debug \
        --config "$T/$name.conf" --profiles-dir "${profiles:-$PLACED_SRC/conf/profiles}" \
        --journal-dir "$T/journal" "$@" \
        >"$T/$name.log" 2>&1 &
    placed_pid=$!
    echo "$placed_pid" >>"$_live_placed"
    if ! wait_for 10 grep -q ' started: ' "$T/$name.log"; then
        cat "$T/$name.log" >&2
        fail "placed did not start"
    fi
    if [ -z "${live_no_sampler_ok:-}" ] && grep -q 'No wake sampler' "$T/$name.log"; then
        skip "placed has no wake sampler here: $(grep -m1 'No wake sampler' "$T/$name.log")"
    fi
}

# placed_stop SIGNAL: signal placed and wait; sets placed_rc.
placed_stop() {
    kill "-$1" "$placed_pid" 2>/dev/null || true
    placed_rc=0
    { wait "$placed_pid"; } 2>/dev/null || placed_rc=$?
}

# journal_records: the records in the undo journal (none printed = empty).
journal_records() { cat "$T/journal/journal" 2>/dev/null || true; }

# journal_live: the objects the undo journal still holds, "KIND KEY" one a
# line (the file is a log: ORIG/SET records, FORGET drops an object).
journal_live() {
    journal_records | awk -F'\t' '$1 == "ORIG" { live[$2 " " $3] = 1 }
        $1 == "FORGET" { delete live[$2 " " $3] }
        END { for (k in live) print k }'
}

# journal_holds_task PID: the journal still holds PID's affinity.
journal_holds_task() { journal_live | grep -q "^affinity $1:"; }

# journal_ever_task PID...: placed journaled a change to one of these tasks.
journal_ever_task() {
    local pid
    for pid in "$@"; do
        journal_records | grep -q "^ORIG.affinity.$pid:" && return 0
    done
    return 1
}

# live_restore_cli: "placed --restore" on the test's journal; output in $T/restore.out.
live_restore_cli() {
    "$placed_bin" --restore --journal-dir "$T/journal" >"$T/restore.out" 2>&1
}

# journal_holds_pair: the journal still holds both tasks of the pair.
journal_holds_pair() { journal_holds_task "$pair_parent" && journal_holds_task "$pair_child"; }

# pair_sigterm_restored STEP [WHEN]: SIGTERM placed, which must exit 0 and
# leave the pair on every CPU and the journal empty; a failure names STEP
# and WHEN ("with a full disk").
pair_sigterm_restored() {
    local all when=${2:+ $2}
    all=$(online_cpus)
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "$1. placed exited $placed_rc on SIGTERM$when"
    pair_is "$all" "$all" ||
        fail "$1. after SIGTERM$when the pair has $(pair_affinity), expected $all $all"
    [ -z "$(journal_records)" ] || fail "$1. journal not empty after SIGTERM: $(journal_records)"
}

# pair_restore_cli_restored STEP [WHEN]: "placed --restore" must succeed and
# leave the pair on every CPU and the journal empty; output in $T/restore.out.
pair_restore_cli_restored() {
    local all when=${2:+ $2}
    all=$(online_cpus)
    live_restore_cli || fail "$1. placed --restore failed$when: $(cat "$T/restore.out")"
    pair_is "$all" "$all" || fail "$1. after placed --restore$when the pair has $(pair_affinity)"
    [ -z "$(journal_records)" ] || fail "$1. journal not empty after --restore: $(journal_records)"
}

# live_changes: tracked tasks (still alive) whose affinity is not the original,
# and idle values not as at the start; one a line.
_exited() { [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

_live_tracked_last() { awk '{ a[$1] = $2 } END { for (p in a) print p, a[p] }' "$_live_tracked"; }

live_changes() {
    local pid orig cur
    while read -r pid orig; do
        cur=$(cpus_allowed "$pid")
        [ -z "$cur" ] || [ "$cur" = "$orig" ] || echo "affinity of task $pid: $orig -> $cur"
    done < <(_live_tracked_last)
    idle_changes
}

# live_step LABEL FUNCTION: runs one step of a live test in a subshell with
# its own cleanup (placed killed, journal replayed, workloads killed, values
# checked), so a failed step does not hide the next ones. live_steps_done
# fails the test when a step failed.
# PLACED_LIVE_STEPS="placement:1+2 placement:3+4 idle:1" runs only the
# listed steps of the tests it names (test-NAME-live.sh); the steps of other
# tests all run. make check-kernels picks some under qemu's TCG, where each
# step is slow.
_live_failed_steps=()
_live_name=$(basename "$0" .sh)
_live_name=${_live_name#test-}
_live_name=${_live_name%-live}
live_step() {
    local rc steps=" ${PLACED_LIVE_STEPS:-} "
    if [[ $steps == *" $_live_name:"* && $steps != *" $_live_name:$1 "* ]]; then
        echo "step $1 not run (PLACED_LIVE_STEPS=$PLACED_LIVE_STEPS)"
        return 0
    fi
    set +e
    (
        set -e
        trap '_live_cleanup; [ -z "${_exit_hook_failed:-}" ] || { echo "FAIL: $_exit_hook_failed" >&2; exit 1; }' EXIT
        trap 'exit 143' TERM
        trap 'exit 130' INT
        "$2"
    )
    rc=$?
    set -e
    case $rc in
    0) ;;
    77) exit 77 ;; # the step said why
    *) _live_failed_steps+=("$1") ;;
    esac
    return 0
}
live_steps_done() {
    [ ${#_live_failed_steps[@]} -eq 0 ] || fail "failed steps: ${_live_failed_steps[*]}"
}

live_check_restored() {
    local c
    c=$(live_changes)
    [ -z "$c" ] || fail "left changed: $c"
}

# Runs at exit, also on failure: stop every placed, replay the journal,
# report and undo whatever is still changed, then kill the workloads.
_live_cleanup() {
    local pid orig c path val
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$_live_placed"
    # Reap our children; others (a step's subshell started them) are polled
    # until they are gone or zombies: either way their journal lock is free.
    while read -r pid; do
        { wait "$pid"; } 2>/dev/null || true
        wait_for 5 _exited "$pid" || true
    done <"$_live_placed"
    : >"$_live_placed"
    [ -d "$T/journal" ] && "$placed_bin" --restore --journal-dir "$T/journal" >/dev/null 2>&1
    c=$(live_changes)
    if [ -n "$c" ]; then
        echo "cleanup: still changed after placed --restore, putting back by hand:" >&2
        echo "$c" | sed 's/^/    /' >&2
        _exit_hook_failed="values left changed: $(echo "$c" | paste -sd ';')"
        while read -r pid orig; do
            [ -n "$(cpus_allowed "$pid")" ] && taskset -pc "$orig" "$pid" >/dev/null 2>&1
        done < <(_live_tracked_last)
        while read -r path val; do
            [ "$(cat "$path" 2>/dev/null)" = "$val" ] || echo "$val" >"$path" 2>/dev/null || true
        done <"$T/idle.start"
    fi
    while read -r pid; do live_kill "$pid"; done <"$_live_pgids"
    : >"$_live_pgids"
    : >"$_live_tracked" # all killed: their pids may be reused
}
