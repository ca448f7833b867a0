#!/usr/bin/env bash
# The real placed binary as systemd runs it: start-up and READY=1, STATUS=,
# the watchdog, SIGHUP reload with RELOADING=1/MONOTONIC_USEC, a broken file
# at start (refused, FILE:LINE) and on reload (logged, running config kept),
# bad command lines, and SIGTERM (STOPPING=1, clean exit within a second).
. "$(dirname "$0")/lib/common.sh"

placed=$PLACED_BUILD/placed
profiles=$PLACED_SRC/conf/profiles
write_config

start_placed() { # extra args...
    : >"$T/notify.log"
    python3 "$PLACED_SRC/tests/lib/notify-listen.py" "$T/notify.sock" "$T/notify.log" &
    listener=$!
    at_exit "kill $listener 2>/dev/null"
    wait_for 5 test -S "$T/notify.sock" || fail "notify listener did not start"
    NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=200000 \
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

# --- start: READY=1, STATUS=, watchdog pings
start_placed --dry-run
wait_for 5 notified READY=1 || { cat "$T/placed.log"; fail "no READY=1"; }
grep -q '^STATUS=Profile balanced (advise)' "$T/notify.log" || fail "no STATUS= with profile and mode"
wait_for 3 notified WATCHDOG=1 || fail "no WATCHDOG=1 although WATCHDOG_USEC is set"
grep -q '^<6>placed .* started: profile balanced' "$T/placed.log" || { cat "$T/placed.log"; fail "no start message with priority prefix"; }
ok "started: READY=1, STATUS=, WATCHDOG=1, journal priority prefixes"

# --- SIGHUP reloads: RELOADING=1 with MONOTONIC_USEC, then READY=1
printf '[daemon]\njournal_dir = %s\nprofile = latency-first\n' "$T/journal" >"$T/etc/placed.conf"
: >"$T/notify.log"
kill -HUP $pid
wait_for 5 grep -q '^RELOADING=1' "$T/notify.log" || fail "no RELOADING=1"
grep -A1 '^RELOADING=1' "$T/notify.log" | grep -q '^MONOTONIC_USEC=[0-9]' || fail "RELOADING=1 without MONOTONIC_USEC"
wait_for 5 notified READY=1 || fail "no READY=1 after reload"
grep -q 'Reloading configuration' "$T/placed.log" || fail "reload not logged"
# Nobody chose a profile (no --profile, no SetProfile): the new default applies.
wait_for 5 grep -q '^STATUS=Profile latency-first' "$T/notify.log" ||
    fail "the reload did not apply the changed default profile"
ok "SIGHUP reload: RELOADING=1 + MONOTONIC_USEC, READY=1, the new default profile"

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

# --- SIGINT too
cp "$T/good.conf" "$T/etc/placed.conf"
start_placed --dry-run
wait_for 5 notified READY=1 || fail "no READY=1 (second start)"
kill -INT $pid
for _ in $(seq 20); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
kill -0 $pid 2>/dev/null && fail "placed still running 1 s after SIGINT"
wait $pid || fail "placed exited non-zero after SIGINT"
ok "SIGINT stops cleanly"

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
echo "all daemon checks passed"
