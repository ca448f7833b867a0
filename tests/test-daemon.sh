#!/usr/bin/env bash
# The real placed binary as systemd runs it: start-up and READY=1, STATUS=,
# the watchdog, SIGHUP reload with RELOADING=1/MONOTONIC_USEC, a broken file
# at start (refused, FILE:LINE) and on reload (logged, running config kept),
# bad command lines, start-up errors that name the path or value that was
# wrong, log lines with "<N>" priorities only into the journal
# (JOURNAL_STREAM) and plain on a terminal, into a file or a pipe,
# SIGTERM (STOPPING=1, clean exit within a second), SIGINT at any moment
# of start-up and shutdown (exit 0), and placed's own nice ([daemon] nice) at
# start, on reload, and where it may not take it (no CAP_SYS_NICE).
. "$(dirname "$0")/lib/common.sh"

placed=$PLACED_BUILD/placed
profiles=$PLACED_SRC/conf/profiles
write_config

start_placed() { # extra args...
    : >"$T/notify.log"
    : >"$T/placed.log" # here, not in the child: a wait for its first line must not see the last run's
    python3 "$PLACED_SRC/tests/lib/notify-listen.py" "$T/notify.sock" "$T/notify.log" &
    listener=$!
    at_exit "kill $listener 2>/dev/null"
    wait_for 5 test -S "$T/notify.sock" || fail "notify listener did not start"
    # SIGINT's default action, as systemd and a terminal give it (bash gives
    # a background job SIGINT ignored, which would hide a SIGINT that killed)
    NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=200000 env --default-signal=INT \
        "$placed" --foreground --bus none --config "$T/etc/placed.conf" \
        --profiles-dir "$profiles" --interval-ms 100 "$@" >"$T/placed.log" 2>&1 &
    pid=$!
    at_exit "kill -KILL $pid 2>/dev/null"
}

notified() { grep -qx -- "$1" "$T/notify.log"; }

# --- bad command lines are refused with a clear message and exit code 2
for bad in "--interval-ms 0" "--interval-ms abc" "--log-level loud" "--bogus" "--foreground extra" ""; do
    set +e
    # shellcheck disable=SC2086
    "$placed" $bad >"$T/out" 2>&1
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "placed $bad: exit $rc, expected 2"
    grep -q . "$T/out" || fail "placed $bad: no message"
done
ok "bad command lines exit 2 with a message"

# --- placectl: a usage error never reaches the bus (no daemon runs here)
for bad in "frobnicate:unknown command" "explain:needs exactly one TID" "explain 1 2:takes one argument" \
    "status now:takes no argument" "reload x:takes no argument" ":no command given" \
    "--dot status:is for graph only" "--dot --json graph:not both"; do
    set +e
    # shellcheck disable=SC2086
    "$PLACED_BUILD/placectl" --address unix:path=/nonexistent ${bad%%:*} >"$T/out" 2>&1
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "placectl ${bad%%:*}: exit $rc, expected 2 (usage)"
    grep -q "${bad#*:}" "$T/out" || fail "placectl ${bad%%:*}: $(cat "$T/out")"
done
ok "placectl usage errors (unknown verb, wrong argument count) exit 2 before the bus"
"$placed" --help | grep -q -- "--foreground" || fail "--help lacks --foreground"
"$placed" --version | grep -Eq '^placed [0-9]' || fail "--version"
ok "--help and --version"

# --- a broken configuration stops start-up, naming file and line
cp "$T/etc/placed.conf" "$T/good.conf"
printf '[daemon]\ninterval_ms = 1000\nprofile balanced\n' >"$T/etc/placed.conf"
set +e
"$placed" --foreground --bus none --config "$T/etc/placed.conf" --profiles-dir "$profiles" >"$T/out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "placed started with a broken config"
grep -q "$T/etc/placed.conf:3:" "$T/out" || { cat "$T/out"; fail "error does not name file:line"; }
ok "broken config refused: $(grep -m1 "placed.conf:3:" "$T/out" | sed 's/^<[0-9]>//')"

printf '[daemon]\nprofile = no-such-profile\n' >"$T/etc/placed.conf"
set +e
"$placed" --foreground --bus none --config "$T/etc/placed.conf" --profiles-dir "$profiles" >"$T/out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "placed started with an unknown profile"
grep -q "no-such-profile" "$T/out" || fail "unknown profile not named"
ok "unknown default profile refused"
cp "$T/good.conf" "$T/etc/placed.conf"

# --- start-up errors name the path or the value that was wrong
start_fails() { # NAME EXPECTED-TEXT placed-args...: exit non-zero, message containing the text
    local name=$1 want=$2 rc=0
    shift 2
    "$placed" --foreground --bus none --dry-run "$@" >"$T/out" 2>&1 || rc=$?
    [ $rc -ne 0 ] || fail "$name: placed started"
    grep -qF -- "$want" "$T/out" || { cat "$T/out"; fail "$name: no message naming '$want'"; }
    ok "$name: $(grep -F -m1 -- "$want" "$T/out" | sed 's/^<[0-9]>//')"
}
start_fails "missing profiles directory" "searched $T/no-profiles, which does not exist" \
    --config "$T/etc/placed.conf" --profiles-dir "$T/no-profiles"
start_fails "missing configuration file" "\"$T/etc/missing.conf\" (--config): No such file" \
    --config "$T/etc/missing.conf" --profiles-dir "$profiles"
printf '[daemon]\ninterval_ms = 5\n' >"$T/etc/bad-value.conf"
start_fails "bad value" "$T/etc/bad-value.conf:2: invalid [daemon] interval_ms \"5\"" \
    --config "$T/etc/bad-value.conf" --profiles-dir "$profiles"
start_fails "bad --procfs-root" "\"$T/no-proc\" as the proc file system (--procfs-root)" \
    --config "$T/etc/placed.conf" --profiles-dir "$profiles" --procfs-root "$T/no-proc"
start_fails "unknown --profile" "\"turbo\" (--profile)" \
    --config "$T/etc/placed.conf" --profiles-dir "$profiles" --profile turbo
start_fails "bad --journal-dir" "$T/etc/placed.conf/journal" \
    --config "$T/etc/placed.conf" --profiles-dir "$profiles" --journal-dir "$T/etc/placed.conf/journal"

# --- log lines: "<N>" only into the journal (JOURNAL_STREAM names stderr's
# device and inode); plain on a terminal (a pty from script(1)), a file, a pipe
command -v script >/dev/null || fail "script(1) is missing (bsdutils)"
bad_args="--foreground --bus none --config $T/etc/missing.conf --profiles-dir $profiles"
plain() { # FILE WHERE: one plain line, no priority prefix anywhere
    grep -q '^Cannot read the configuration file' "$1" || { cat -A "$1"; fail "no plain line $2"; }
    ! grep -q '<[0-9]>' "$1" || { cat -A "$1"; fail "a priority prefix $2"; }
}
prefixed() { # FILE WHERE
    grep -q '^<3>Cannot read the configuration file' "$1" || { cat -A "$1"; fail "no <3> $2"; }
}
# shellcheck disable=SC2086
"$placed" $bad_args 2>"$T/file.out" || true
plain "$T/file.out" "into a file"
# shellcheck disable=SC2086
"$placed" $bad_args 2>&1 | cat >"$T/pipe.out" || true
plain "$T/pipe.out" "into a pipe"
script -qec "$placed $bad_args" /dev/null >"$T/pty.out" 2>&1 || true
plain "$T/pty.out" "on a terminal"
# The journal: a file (as journald's stream is a socket) named by its device and inode.
: >"$T/journal-file.out"
# shellcheck disable=SC2086
JOURNAL_STREAM=$(stat -c %d:%i "$T/journal-file.out") "$placed" $bad_args 2>>"$T/journal-file.out" || true
prefixed "$T/journal-file.out" "into the file JOURNAL_STREAM names"
sh -c "JOURNAL_STREAM=\$(stat -L -c %d:%i /proc/self/fd/2) exec $placed $bad_args" 2>&1 |
    cat >"$T/journal-pipe.out" || true
prefixed "$T/journal-pipe.out" "into the pipe JOURNAL_STREAM names"
script -qec "sh -c 'JOURNAL_STREAM=\$(stat -L -c %d:%i /proc/self/fd/2) exec $placed $bad_args'" /dev/null \
    >"$T/journal.out" 2>&1 || true
prefixed "$T/journal.out" "on the terminal JOURNAL_STREAM names"
# A stale JOURNAL_STREAM (stderr since redirected elsewhere): plain again.
script -qec "env JOURNAL_STREAM=1:1 $placed $bad_args" /dev/null >"$T/stale.out" 2>&1 || true
plain "$T/stale.out" "with a stale JOURNAL_STREAM on a terminal"
# shellcheck disable=SC2086
JOURNAL_STREAM=$(stat -c %d:%i "$T/journal-file.out") "$placed" $bad_args 2>"$T/stale-file.out" || true
plain "$T/stale-file.out" "into a file JOURNAL_STREAM does not name"
ok "logs: <3> where JOURNAL_STREAM names stderr (file, pipe, terminal); plain on a terminal, into a file or a pipe, and with a stale JOURNAL_STREAM"
# PLACED_LOG_TIME=1: CLOCK_MONOTONIC seconds first, after the priority where there is one.
# shellcheck disable=SC2086
PLACED_LOG_TIME=1 "$placed" $bad_args 2>"$T/time.out" || true
grep -Eq '^\[[0-9]+\.[0-9]{6}\] Cannot read the configuration file' "$T/time.out" ||
    { cat -A "$T/time.out"; fail "no time before a line with PLACED_LOG_TIME=1"; }
# shellcheck disable=SC2086
PLACED_LOG_TIME=1 JOURNAL_STREAM=$(stat -c %d:%i "$T/journal-file.out") "$placed" $bad_args \
    2>>"$T/journal-file.out" || true
grep -Eq '^<3>\[[0-9]+\.[0-9]{6}\] Cannot read' "$T/journal-file.out" ||
    { cat -A "$T/journal-file.out"; fail "no <3>[time] with PLACED_LOG_TIME=1 into the journal"; }
# shellcheck disable=SC2086
PLACED_LOG_TIME=0 "$placed" $bad_args 2>"$T/notime.out" || true
plain "$T/notime.out" "with PLACED_LOG_TIME=0"
! grep -q '^\[' "$T/notime.out" || { cat -A "$T/notime.out"; fail "a time with PLACED_LOG_TIME=0"; }
ok "logs: PLACED_LOG_TIME=1 puts CLOCK_MONOTONIC seconds first (after <N>); 0 does not"

# --- start: READY=1, STATUS=, watchdog pings
start_placed --dry-run
wait_for 5 notified READY=1 || { cat "$T/placed.log"; fail "no READY=1"; }
grep -q '^STATUS=Profile balanced (advise)' "$T/notify.log" || fail "no STATUS= with profile and mode"
wait_for 3 notified WATCHDOG=1 || fail "no WATCHDOG=1 although WATCHDOG_USEC is set"
grep -q '^placed .* started: profile balanced' "$T/placed.log" || { cat "$T/placed.log"; fail "no plain start message in the log file"; }
ok "started: READY=1, STATUS=, WATCHDOG=1, plain lines into the log file"
# Field 19 of stat, after the command's ")".
nice_of() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $17 }'; }
[ "$(nice_of $pid)" = -10 ] || fail "placed runs at nice $(nice_of $pid), not [daemon] nice's default -10"
ok "placed runs at [daemon] nice's default, -10"

# --- SIGHUP reloads: RELOADING=1 with MONOTONIC_USEC, then READY=1
printf '[daemon]\njournal_dir = %s\nprofile = latency-first\nnice = 5\n' "$T/journal" >"$T/etc/placed.conf"
: >"$T/notify.log"
kill -HUP $pid
wait_for 5 grep -q '^RELOADING=1' "$T/notify.log" || fail "no RELOADING=1"
grep -A1 '^RELOADING=1' "$T/notify.log" | grep -q '^MONOTONIC_USEC=[0-9]' || fail "RELOADING=1 without MONOTONIC_USEC"
wait_for 5 notified READY=1 || fail "no READY=1 after reload"
grep -q 'Reloading configuration' "$T/placed.log" || fail "reload not logged"
# Nobody chose a profile (no --profile, no SetProfile): the new default applies.
wait_for 5 grep -q '^STATUS=Profile latency-first' "$T/notify.log" ||
    fail "the reload did not apply the changed default profile"
[ "$(nice_of $pid)" = 5 ] || fail "the reload did not apply nice = 5: placed runs at $(nice_of $pid)"
ok "SIGHUP reload: RELOADING=1 + MONOTONIC_USEC, READY=1, the new default profile and nice"

# --- a broken file on reload is logged with file and line; placed keeps running
printf '[daemon]\ninterval_ms = fast\n' >"$T/etc/placed.conf"
: >"$T/notify.log"
kill -HUP $pid
wait_for 5 grep -q "placed.conf:2:" "$T/placed.log" || { cat "$T/placed.log"; fail "broken reload not logged with file:line"; }
wait_for 5 notified READY=1 || fail "no READY=1 after failed reload"
grep -q 'keeping the running configuration' "$T/placed.log" || fail "no 'keeping' message"
sleep 0.3
kill -0 $pid 2>/dev/null || fail "placed died on a broken reload"
grep -q '^STATUS=Profile latency-first' "$T/notify.log" || fail "profile changed by a failed reload"
ok "broken reload logged ($(grep -m1 'placed.conf:2:' "$T/placed.log" | sed 's/^<[0-9]>//')), still running"

# --- SIGTERM stops within a second: STOPPING=1, exit 0
kill -TERM $pid
for _ in $(seq 20); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
kill -0 $pid 2>/dev/null && fail "placed still running 1 s after SIGTERM"
wait $pid || fail "placed exited non-zero after SIGTERM: $?"
notified STOPPING=1 || fail "no STOPPING=1"
ok "SIGTERM: STOPPING=1, exit 0 within a second"

# --- a nice placed may not take (no CAP_SYS_NICE, as in a container) is
# named and set aside: it starts, and runs at the nice it has
cp "$T/good.conf" "$T/etc/placed.conf"
: >"$T/placed.log"
setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice "$placed" --foreground --bus none \
    --config "$T/etc/placed.conf" --profiles-dir "$profiles" --interval-ms 100 --dry-run \
    >"$T/placed.log" 2>&1 &
pid=$!
at_exit "kill -KILL $pid 2>/dev/null"
wait_for 5 grep -q 'started: profile' "$T/placed.log" ||
    { cat "$T/placed.log"; fail "placed without CAP_SYS_NICE did not start"; }
said=$(grep -m1 'Cannot run at nice -10 (\[daemon\] nice): .*; running at nice' "$T/placed.log") ||
    { cat "$T/placed.log"; fail "placed without CAP_SYS_NICE did not say it could not take its nice"; }
[ "$(nice_of $pid)" = "$(nice_of $$)" ] || fail "placed runs at nice $(nice_of $pid), this shell at $(nice_of $$)"
kill -TERM $pid
wait $pid || fail "placed without CAP_SYS_NICE exited non-zero after SIGTERM: $?"
ok "without CAP_SYS_NICE: started at nice $(nice_of $$), saying \"${said#<[0-9]>}\""

# --- SIGINT ends like SIGTERM (exit 0, "Stopping."), whenever it comes
# (issue 25): at the earliest moment (placed's main() has blocked it: before
# that nothing can be promised), after the first log line, while running, and
# again and again through shutdown. Before, one that came before the loop was
# set up or after it was freed met the default action: exit 130.
cp "$T/good.conf" "$T/etc/placed.conf"
blocked() { # PID SIGNO: PID runs placed and has SIGNO blocked (builtins only: polled hard)
    [ "/proc/$1/exe" -ef "$placed" ] || return 1
    local key mask=
    while read -r key mask; do [ "$key" = SigBlk: ] && break; done <"/proc/$1/status" || return 1
    [ "$key" = SigBlk: ] && (((16#$mask >> ($2 - 1)) & 1))
}
poll() { # SECONDS COMMAND...: wait_for without its 50 ms naps, to catch start-up
    local end=$((SECONDS + $1 * time_scale))
    shift
    until "$@" 2>/dev/null; do [ $SECONDS -lt $end ] || return 1; done
}
stopped_cleanly() { # WHEN SIGNAL
    for _ in $(seq 40); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    kill -0 $pid 2>/dev/null && fail "SIG$2 $1: placed still running 2 s after it"
    local rc=0
    wait $pid || rc=$?
    [ $rc -eq 0 ] || { cat "$T/placed.log"; fail "SIG$2 $1: placed exited $rc, expected 0"; }
    grep -qx 'Stopping\.' "$T/placed.log" || { cat "$T/placed.log"; fail "SIG$2 $1: no \"Stopping.\""; }
}
for sig in INT TERM; do
    start_placed --dry-run
    poll 5 blocked $pid "$(kill -l $sig)" || fail "placed does not block SIG$sig at start-up: $(grep SigBlk "/proc/$pid/status")"
    kill -$sig $pid
    stopped_cleanly "at once" $sig
done
start_placed --dry-run
poll 5 test -s "$T/placed.log" || fail "no log line"
kill -INT $pid
stopped_cleanly "after the first log line" INT
start_placed --dry-run
wait_for 5 notified READY=1 || fail "no READY=1 (SIGINT start)"
kill -INT $pid
stopped_cleanly "while running" INT
start_placed --dry-run
wait_for 5 notified READY=1 || fail "no READY=1 (SIGINT start)"
while kill -INT $pid 2>/dev/null; do :; done # until it is gone, shutdown included
stopped_cleanly "again and again" INT
ok "SIGINT (and SIGTERM) at once, after the first log line, while running, through shutdown: exit 0, \"Stopping.\""

# --- a second daemon on the same journal is refused
start_placed --dry-run
wait_for 5 notified READY=1 || fail "no READY=1 (third start)"
set +e
"$placed" --foreground --bus none --config "$T/etc/placed.conf" --profiles-dir "$profiles" >"$T/out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "a second placed started on the same journal"
grep -q "holds the undo journal" "$T/out" || { cat "$T/out"; fail "second instance: unclear error"; }
ok "a second instance on the same journal is refused"
kill -TERM $pid
wait $pid || true

# --- a FIFO as /proc/stat, /dev/zero as /proc/interrupts: each tick goes on,
# and placed says once which file it cannot read
mkdir -p "$T/hostile-proc"
mkfifo "$T/hostile-proc/stat"
ln -s /dev/zero "$T/hostile-proc/interrupts"
start_placed --dry-run --sysfs-root "$PLACED_SRC/tests/fixtures/topo-vm2" --procfs-root "$T/hostile-proc"
wait_for 5 notified READY=1 || { cat "$T/placed.log"; fail "no READY=1 with a hostile procfs"; }
wait_for 1 grep -q "Cannot read \"$T/hostile-proc/stat\": not a regular file" "$T/placed.log" ||
    { cat "$T/placed.log"; fail "a FIFO as stat is not named within a second of READY"; }
wait_for 1 grep -q "Cannot read \"$T/hostile-proc/interrupts\": not a regular file" "$T/placed.log" ||
    { cat "$T/placed.log"; fail "/dev/zero as interrupts is not named"; }
pings() { grep -c '^WATCHDOG=1' "$T/notify.log"; }
more_pings() { [ "$(pings)" -gt "$1" ]; }
wait_for 2 more_pings "$(pings)" || fail "the loop stopped"
[ "$(grep -c 'Cannot read' "$T/placed.log")" -eq 2 ] || { cat "$T/placed.log"; fail "warned more than once a file"; }
kill -TERM $pid
wait $pid || fail "placed exited $? after a hostile procfs"
ok "a FIFO as stat and /dev/zero as interrupts: named once each, the loop goes on"
echo "all daemon checks passed"
