#!/usr/bin/env bash
# [daemon] follow = power-profiles at the bus level: the real placed binary
# (advise mode, no wake sampler) on a private dbus-daemon next to a stand-in
# for power-profiles-daemon (tests/helpers/ppd-fake.c: the same names, paths,
# property and PropertiesChanged). Covers: a daemon already there at start,
# a switch reaching ActiveProfile within a second, a PropertiesChanged from
# another client ignored, a choice and its reset, the daemon leaving (its
# last profile kept, said in ActiveProfileReason and placectl status), the
# newer org.freedesktop.UPower.PowerProfiles name, an unmapped profile, and a
# reload that turns following off. The real power-profiles-daemon is tested
# under systemd by make check-system.
. "$(dirname "$0")/lib/common.sh"

command -v dbus-daemon >/dev/null || skip "dbus-daemon is not installed (apt-get install dbus)"
command -v busctl >/dev/null || skip "busctl is not installed (systemd)"
placed=$PLACED_BUILD/placed
placectl=$PLACED_BUILD/placectl
fake=$PLACED_BUILD/helpers/ppd-fake
[ -x "$placed" ] && [ -x "$placectl" ] && [ -x "$fake" ] || fail "build placed, placectl and helpers first"

out=$(dbus-daemon --session --fork --print-address=1 --print-pid=1) || fail "dbus-daemon did not start"
ADDR=$(echo "$out" | sed -n 1p)
bus_pid=$(echo "$out" | sed -n 2p)
at_exit "kill $bus_pid"
B=(busctl --address="$ADDR")
OBJ=(org.placed1 /org/placed1 org.placed1.Manager)
HADESS=(net.hadess.PowerProfiles /net/hadess/PowerProfiles net.hadess.PowerProfiles)
UPOWER=(org.freedesktop.UPower.PowerProfiles /org/freedesktop/UPower/PowerProfiles org.freedesktop.UPower.PowerProfiles)
prop() { "${B[@]}" get-property "${OBJ[@]}" "$1" 2>/dev/null; }
prop_eq() { [ "$(prop "$1")" = "$2" ]; }
pc() { "$placectl" --address "$ADDR" "$@"; }

fake_start() { # NAME PROFILE: sets fake_pid once it owns NAME
    "$fake" "$ADDR" "$1" "$2" >"$T/fake.out" 2>&1 &
    fake_pid=$!
    at_exit "kill $fake_pid 2>/dev/null"
    wait_for 5 grep -q ready "$T/fake.out" || { cat "$T/fake.out"; fail "ppd-fake did not start"; }
}

mkdir -p "$T/etc"
cat >"$T/etc/placed.conf" <<CONF
[daemon]
journal_dir = $T/journal
wake_source = none
follow = power-profiles
CONF

# --- the daemon is there before placed: followed from the start
fake_start net.hadess.PowerProfiles performance
"$placed" --foreground --dry-run --bus "$ADDR" --config "$T/etc/placed.conf" \
    --profiles-dir "$PLACED_SRC/conf/profiles" --interval-ms 200 >"$T/placed.log" 2>&1 &
placed_pid=$!
at_exit "kill -KILL $placed_pid 2>/dev/null"
wait_for 5 prop_eq ActiveProfile 's "latency-first"' || { cat "$T/placed.log"; fail "placed did not follow performance at start: $(prop ActiveProfile)"; }
prop_eq ActiveProfileSource 's "followed"' || fail "source: $(prop ActiveProfileSource)"
prop_eq Follow '(sss) "following" "ppd-fake" "performance"' || fail "Follow: $(prop Follow)"
case $(prop ActiveProfileReason) in *'followed from ppd-fake'*'"performance'*) ;; *) fail "reason: $(prop ActiveProfileReason)" ;; esac
ok "a daemon already on the bus is followed at start: performance -> latency-first ($(prop ActiveProfileReason))"

# --- a switch reaches ActiveProfile within a second
t0=$(now_ms)
"${B[@]}" set-property "${HADESS[@]}" ActiveProfile s power-saver || fail "cannot switch ppd-fake"
wait_for 1 prop_eq ActiveProfile 's "power-first"' || fail "power-saver not followed within 1 s: $(prop ActiveProfile)"
ok "power-saver -> power-first in $(($(now_ms) - t0)) ms"

# --- another client cannot fake a switch
"${B[@]}" emit /net/hadess/PowerProfiles org.freedesktop.DBus.Properties PropertiesChanged \
    'sa{sv}as' net.hadess.PowerProfiles 1 ActiveProfile s performance 0 || fail "busctl emit failed"
sleep 0.5
prop_eq ActiveProfile 's "power-first"' || fail "a PropertiesChanged from another client switched placed: $(prop ActiveProfile)"
ok "a PropertiesChanged from a client that does not own the name is ignored"

# --- a person's choice wins until --reset; the followed daemon is still tracked
pc profile balanced || fail "placectl profile balanced"
prop_eq ActiveProfileSource 's "chosen"' || fail "source after SetProfile: $(prop ActiveProfileSource)"
"${B[@]}" set-property "${HADESS[@]}" ActiveProfile s performance
wait_for 2 prop_eq Follow '(sss) "following" "ppd-fake" "performance"' || fail "Follow: $(prop Follow)"
prop_eq ActiveProfile 's "balanced"' || fail "the followed profile overrode a choice"
pc profile --reset || fail "placectl profile --reset"
prop_eq ActiveProfile 's "latency-first"' || fail "after --reset: $(prop ActiveProfile)"
rc=0
pc profile balanced --reset >"$T/out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "profile NAME --reset: exit $rc, expected 2"
ok "placectl profile balanced wins over the followed profile; --reset returns to it"

# --- an unmapped profile is logged, the last one kept
"${B[@]}" set-property "${HADESS[@]}" ActiveProfile s turbo
wait_for 2 grep -q '"turbo", which \[follow\] does not map' "$T/placed.log" || fail "unmapped profile not logged"
prop_eq ActiveProfile 's "latency-first"' || fail "unmapped profile changed ActiveProfile"
ok "an unmapped profile (turbo) is logged and the last one kept"

# --- the daemon leaves: its last profile is kept, and placed says so
"${B[@]}" set-property "${HADESS[@]}" ActiveProfile s power-saver
wait_for 2 prop_eq ActiveProfile 's "power-first"' || fail "power-saver again"
kill "$fake_pid"
wait "$fake_pid" 2>/dev/null || true
wait_for 2 prop_eq Follow '(sss) "gone" "ppd-fake" "power-saver"' || fail "Follow after the daemon left: $(prop Follow)"
prop_eq ActiveProfile 's "power-first"' || fail "the profile changed when the daemon left"
pc status >"$T/status" || fail "placectl status"
grep -q "Why: followed from ppd-fake's \"power-saver\"; it has left the bus, the last profile is kept" "$T/status" ||
    { cat "$T/status"; fail "status does not say the daemon left"; }
grep -q 'ppd-fake has left the bus; keeping its last profile' "$T/placed.log" || fail "not logged"
ok "the daemon left: power-first kept; $(grep 'Follows:' "$T/status" | sed 's/^ *//')"

# --- a newer daemon under org.freedesktop.UPower.PowerProfiles
fake_start org.freedesktop.UPower.PowerProfiles balanced
wait_for 2 prop_eq Follow '(sss) "following" "ppd-fake" "balanced"' || fail "UPower name not followed: $(prop Follow)"
prop_eq ActiveProfile 's "balanced"' || fail "ActiveProfile: $(prop ActiveProfile)"
"${B[@]}" set-property "${UPOWER[@]}" ActiveProfile s power-saver
wait_for 1 prop_eq ActiveProfile 's "power-first"' || fail "UPower switch not followed"
ok "org.freedesktop.UPower.PowerProfiles is followed too"

# --- a reload with follow = none stops following
sed -i 's/^follow = .*/follow = none/' "$T/etc/placed.conf"
kill -HUP "$placed_pid"
wait_for 3 prop_eq Follow '(sss) "off" "" ""' || fail "Follow after follow = none: $(prop Follow)"
prop_eq ActiveProfile 's "balanced"' || fail "ActiveProfile after follow = none: $(prop ActiveProfile)"
prop_eq ActiveProfileSource 's "configured"' || fail "source: $(prop ActiveProfileSource)"
ok "reload with follow = none: not following, the configured profile"

kill -TERM "$placed_pid"
wait "$placed_pid" || fail "placed exited with $? after SIGTERM"
echo "all follow checks passed"
