#!/usr/bin/env bash
# placed's D-Bus side under stress (issue 11), on a private bus with a fake
# polkit (tests/helpers/bus-helper.c) and the real placed in advise mode:
#   - a polkit that never answers holds up only its caller: properties are
#     served and ticks go on meanwhile; the caller is denied after the
#     timeout; a polkit that answers late still lets the call through;
#   - one client cannot take every profile hold (per-client limit);
#   - control characters in a hold reason can forge no log line (with its
#     own priority) and no line in placectl's status table;
#   - a reload applies a changed default profile unless a person chose one;
#   - losing the bus is logged, and placed reconnects and serves its name.
# Each of these failed on eb36bdd.
. "$(dirname "$0")/lib/common.sh"

command -v dbus-daemon >/dev/null || skip "dbus-daemon is not installed (apt-get install dbus)"
command -v busctl >/dev/null || skip "busctl is not installed (systemd)"
[ "$(id -u)" -eq 0 ] || skip "needs root (an unprivileged caller through setpriv)"

placed=$PLACED_BUILD/placed
helper=$PLACED_BUILD/helpers/bus-helper
profiles=$PLACED_SRC/conf/profiles
[ -x "$placed" ] && [ -x "$helper" ] || fail "build placed and tests/helpers first (make check)"

write_bus_config '<allow own="org.freedesktop.PolicyKit1"/><allow send_destination="org.freedesktop.PolicyKit1"/>'
ADDR=unix:path=$T/bus/socket
start_bus() {
    rm -f "$T/bus/socket"
    bus_pid=$(dbus-daemon --config-file="$T/bus.conf" --fork --print-pid=1) ||
        fail "dbus-daemon did not start with $T/bus.conf"
    at_exit "kill $bus_pid 2>/dev/null"
}
start_polkit() {
    coproc POLKIT { exec "$helper" "$ADDR" polkit 2>>"$T/polkit.log"; }
    at_exit "kill $POLKIT_PID 2>/dev/null"
    local line
    read -r -t 5 line <&"${POLKIT[0]}" && [ "$line" = ready ] || fail "the fake polkit did not start"
}
start_bus
start_polkit

B=(busctl --address="$ADDR" --timeout=30)
OBJ=(org.placed1 /org/placed1 org.placed1.Manager)
nobody=(setpriv --reuid nobody --regid nogroup --clear-groups)
prop() { "${B[@]}" get-property "${OBJ[@]}" "$1"; }
prop_eq() { [ "$(prop "$1" 2>/dev/null)" = "$2" ]; }
name_owned() { "${B[@]}" status org.placed1 >/dev/null 2>&1; }

write_config
printf '[daemon]\njournal_dir = %s/journal\nprofile = balanced\n' "$T" >"$T/etc/placed.conf"
"$placed" --foreground --dry-run --bus "$ADDR" --config "$T/etc/placed.conf" \
    --profiles-dir "$profiles" --interval-ms 100 >"$T/placed.log" 2>&1 &
placed_pid=$!
at_exit "kill -KILL $placed_pid 2>/dev/null"
wait_for 5 name_owned || { cat "$T/placed.log"; fail "placed did not take org.placed1"; }

# --- a hung polkit holds up only its caller
"${nobody[@]}" busctl --address="$ADDR" --timeout=30 call "${OBJ[@]}" SetProfile s power-first \
    >"$T/hung.out" 2>&1 &
hung=$!
wait_for 5 grep -q "asked for org.placed1.set-profile" "$T/polkit.log" ||
    fail "placed never asked polkit about SetProfile"
start=$(now_ms)
ticks0=$(prop Ticks | cut -d' ' -f2)
prop_eq ActiveProfile 's "balanced"' || fail "ActiveProfile unreadable while polkit hangs"
took=$(($(now_ms) - start))
[ $took -lt 2000 ] || fail "two property reads took $took ms while polkit hangs"
sleep 1
ticks1=$(prop Ticks | cut -d' ' -f2)
[ "$ticks1" -gt "$ticks0" ] || fail "no tick while polkit hangs ($ticks0 -> $ticks1)"
ok "polkit hangs: two property reads took $took ms, ticks went $ticks0 -> $ticks1"

# A late yes lets the call through (Reload: polkit answers after one second).
start=$(now_ms)
"${nobody[@]}" busctl --address="$ADDR" --timeout=30 call "${OBJ[@]}" Reload >"$T/late.out" 2>&1 ||
    { cat "$T/late.out"; fail "Reload with a late polkit yes failed"; }
took=$(($(now_ms) - start))
[ $took -ge 900 ] || fail "Reload returned after $took ms, before polkit answered"
ok "a late polkit yes is honoured ($took ms)"

rc=0
wait $hung || rc=$?
[ $rc -ne 0 ] || fail "SetProfile went through although polkit never answered"
grep -q "Access denied" "$T/hung.out" || { cat "$T/hung.out"; fail "no denial after the polkit timeout"; }
grep -q 'polkit could not decide "org.placed1.set-profile"' "$T/placed.log" ||
    fail "the polkit timeout was not logged"
prop_eq ActiveProfile 's "balanced"' || fail "the profile changed without polkit's yes"
ok "the caller of a hung polkit is denied after the timeout"

# --- per-client hold limits
mkfifo "$T/hold.in"
"$helper" "$ADDR" hold 9 <"$T/hold.in" >"$T/holds" &
holder=$!
at_exit "kill $holder 2>/dev/null"
exec {hold_in}>"$T/hold.in" # the client stays while this is open
holds_done() { [ "$(wc -l <"$T/holds")" -ge 9 ]; }
wait_for 20 holds_done || { cat "$T/holds"; fail "the holding client did not finish"; }
[ "$(grep -c '^ok ' "$T/holds")" -eq 8 ] || { cat "$T/holds"; fail "one client got other than 8 holds"; }
grep -q "^error org.placed1.Error.TooManyHolds This client holds 8" "$T/holds" ||
    { cat "$T/holds"; fail "the 9th hold of one client was not refused"; }
"${B[@]}" call "${OBJ[@]}" HoldProfile ss latency-first other-client >/dev/null ||
    fail "another client could not hold a profile"
exec {hold_in}>&-
wait "$holder" || fail "the holding client failed"
wait_for 5 prop_eq Holds 'a(uss) 0' || fail "holds outlived their client: $(prop Holds)"
ok "one client holds at most 8 profiles; others still can"

# --- a newline in a hold reason forges no log line, and no line in placectl's table
placectl=$PLACED_BUILD/placectl
"$placectl" --address "$ADDR" hold --reason "$(printf 'x\n<0>FAKE EMERG\033[2J')" balanced -- sleep 3 &
hold_pid=$!
wait_for 5 grep -q 'FAKE EMERG' "$T/placed.log" || fail "the reason was not logged"
if grep -q '^<0>' "$T/placed.log"; then
    grep -n 'FAKE' "$T/placed.log"
    fail "a hold reason forged a log line of priority 0"
fi
grep -q 'x\\n<0>FAKE EMERG\\x1b\[2J' "$T/placed.log" || fail "the reason was not escaped as x\\n<0>..."
"$placectl" --address "$ADDR" status >"$T/status" || fail "placectl status failed"
grep -q 'Holds: balanced (cookie [0-9]*): x\\n<0>FAKE EMERG\\x1b\[2J$' "$T/status" ||
    { cat -A "$T/status"; fail "placectl status did not show the reason escaped on one line"; }
! grep -q "$(printf '\033')" "$T/status" || fail "placectl status printed a raw escape character"
wait "$hold_pid" || fail "placectl hold failed"
ok "a hold reason with control characters is escaped in the log and in placectl status"

# --- reload applies a changed default profile unless a person chose one
sed -i 's/^profile = balanced/profile = power-first/' "$T/etc/placed.conf"
"${B[@]}" call "${OBJ[@]}" Reload || fail "Reload failed"
wait_for 5 prop_eq ActiveProfile 's "power-first"' ||
    fail "reload kept $(prop ActiveProfile) although the default changed to power-first"
"${B[@]}" call "${OBJ[@]}" SetProfile s latency-first || fail "SetProfile failed"
sed -i 's/^profile = power-first/profile = balanced/' "$T/etc/placed.conf"
"${B[@]}" call "${OBJ[@]}" Reload || fail "Reload failed"
prop_eq ActiveProfile 's "latency-first"' || fail "reload overrode the chosen profile: $(prop ActiveProfile)"
ok "reload switches to a changed default, but keeps a profile a person chose"

# --- losing the bus is logged; placed reconnects
kill "$bus_pid"
wait_for 5 grep -q "Lost the connection" "$T/placed.log" || { cat "$T/placed.log"; fail "losing the bus was not logged"; }
kill -0 "$placed_pid" || fail "placed died with the bus"
start_bus
wait_for 10 name_owned || { tail -n 20 "$T/placed.log"; fail "placed did not reconnect"; }
grep -q "Reconnected to" "$T/placed.log" || fail "reconnecting was not logged"
prop_eq ActiveProfile 's "latency-first"' || fail "after reconnecting: $(prop ActiveProfile)"
ok "bus lost: logged, reconnected, $(grep -m1 'Reconnected' "$T/placed.log" | sed 's/^<[0-9]>//')"

kill -TERM "$placed_pid"
wait "$placed_pid" || fail "placed exited with $? after SIGTERM"
