#!/usr/bin/env bash
# The D-Bus API and placectl against a real dbus-daemon: a private bus
# configured like Debian's system bus (deny by default) plus placed's own
# policy file (systemd/org.placed1.conf), and the real placed binary in
# advise mode. Covers every property and method, bad input (unknown profile,
# unknown task, wrong argument types), an unprivileged caller (setpriv
# nobody), PropertiesChanged, holds that end when their client leaves
# (normally and by SIGKILL), placectl's output and exit codes, and the
# --bus fallbacks. Needs root for the unprivileged-caller checks.
. "$(dirname "$0")/lib/common.sh"

command -v dbus-daemon >/dev/null || skip "dbus-daemon is not installed (apt-get install dbus)"
command -v busctl >/dev/null || skip "busctl is not installed (systemd)"
command -v dbus-monitor >/dev/null || skip "dbus-monitor is not installed (dbus-bin)"

placed=$PLACED_BUILD/placed
placectl=$PLACED_BUILD/placectl
profiles=$PLACED_SRC/conf/profiles
[ -x "$placed" ] && [ -x "$placectl" ] || fail "build placed and placectl first"
as_root=$([ "$(id -u)" -eq 0 ] && echo yes || echo no)

# --- a private bus: Debian's system.conf policy, in miniature, plus ours
chmod 711 "$T"
mkdir -m 755 "$T/bus"
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
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <include>$PLACED_SRC/systemd/org.placed1.conf</include>
</busconfig>
EOF
out=$(dbus-daemon --config-file="$T/bus.conf" --fork --print-address=1 --print-pid=1) ||
    fail "dbus-daemon did not start with $T/bus.conf"
ADDR=$(echo "$out" | sed -n 1p)
bus_pid=$(echo "$out" | sed -n 2p)
at_exit "kill $bus_pid"
export PLACED_BUS_ADDRESS=
write_config

# --- helpers
B=(busctl --address="$ADDR")
OBJ=(org.placed1 /org/placed1 org.placed1.Manager)
nobody=(setpriv --reuid nobody --regid nogroup --clear-groups)

prop() { "${B[@]}" get-property "${OBJ[@]}" "$1"; }
prop_eq() { [ "$(prop "$1" 2>/dev/null)" = "$2" ]; } # for wait_for: never exits
prop_is() { # NAME EXPECTED ("s \"balanced\"")
    local got
    got=$(prop "$1") || fail "cannot read property $1"
    [ "$got" = "$2" ] || fail "property $1 is '$got', expected '$2'"
}
# call_fails PATTERN busctl-call-args...: the call must fail with PATTERN in its message.
call_fails() {
    local pattern=$1 rc=0
    shift
    "${B[@]}" call "${OBJ[@]}" "$@" >"$T/call.out" 2>&1 || rc=$?
    [ $rc -ne 0 ] || fail "call $* succeeded, expected an error matching '$pattern'"
    grep -q -- "$pattern" "$T/call.out" || fail "call $*: '$(cat "$T/call.out")' lacks '$pattern'"
}
# pc_rc EXPECTED placectl-args...: placectl must exit with EXPECTED; output in $T/pc.out
pc_rc() {
    local want=$1 rc=0
    shift
    "$placectl" --address "$ADDR" "$@" >"$T/pc.out" 2>&1 || rc=$?
    [ $rc -eq "$want" ] || { cat "$T/pc.out"; fail "placectl $*: exit $rc, expected $want"; }
}
name_owned() { "${B[@]}" status org.placed1 >/dev/null 2>&1; }
start_placed() { # extra args...
    "$placed" --foreground --bus "$ADDR" --config "$T/etc/placed.conf" \
        --profiles-dir "$profiles" --journal-dir "$T/journal" --interval-ms 100 "$@" \
        >>"$T/placed.log" 2>&1 &
    placed_pid=$!
    at_exit "kill -KILL $placed_pid 2>/dev/null"
    wait_for 5 name_owned || { cat "$T/placed.log"; fail "placed did not take org.placed1"; }
}
stop_placed() {
    kill -TERM "$placed_pid"
    wait "$placed_pid" || fail "placed exited with $? after SIGTERM"
}

check_introspection() {
    "${B[@]}" introspect "${OBJ[@]}" >"$T/introspect" || fail "introspect failed"
    for member in ActiveProfile Profiles Mode Version WakeSource Holds Groups PlacementChanges \
        Reloads Ticks TickCostUSec SetProfile Reload Restore ListGroups Explain HoldProfile \
        ReleaseProfile PlacementChanged; do
        grep -q "^\.$member " "$T/introspect" || fail "introspection lacks $member"
    done
    grep -q '^\.ListGroups .*a(tsaudtdss)' "$T/introspect" || fail "ListGroups signature changed"
    grep -q '^\.ActiveProfile .*emits-change' "$T/introspect" || fail "ActiveProfile does not emit"
    grep -q '^\.Ticks .* -$' "$T/introspect" || fail "Ticks should not emit (once a tick)"
    ok "introspection: every property, method and the signal"
}

check_properties() {
    prop_is ActiveProfile 's "balanced"'
    prop_is Mode 's "advise"'
    prop_is Version "s \"$("$placed" --version | cut -d' ' -f2)\""
    prop_is WakeSource 's "none"'
    prop_is Holds 'a(uss) 0'
    prop_is Reloads 't 0'
    prop_is PlacementChanges 't 0'
    prop Groups | grep -Eq '^u [0-9]+$' || fail "Groups: $(prop Groups)"
    prop TickCostUSec | grep -Eq '^t [0-9]+$' || fail "TickCostUSec: $(prop TickCostUSec)"
    local names
    names=$(find "$profiles" -name '*.conf' -printf '"%f" ' | sed 's/\.conf"/"/g')
    for n in $names; do
        prop Profiles | grep -qF "$n" || fail "Profiles lacks $n: $(prop Profiles)"
    done
    local t1 t2
    t1=$(prop Ticks | cut -d' ' -f2)
    sleep 0.35
    t2=$(prop Ticks | cut -d' ' -f2)
    [ "$t2" -gt "$t1" ] || fail "Ticks did not advance ($t1 -> $t2) with a 100 ms tick"
    ok "properties: profile, mode, version, wake source, holds, counters (Ticks $t1 -> $t2)"
}

check_set_profile() {
    dbus-monitor --address "$ADDR" "type='signal',path='/org/placed1'" >"$T/monitor" 2>&1 &
    local mon=$!
    at_exit "kill $mon 2>/dev/null"
    sleep 0.5 # dbus-monitor subscribes asynchronously
    "${B[@]}" call "${OBJ[@]}" SetProfile s latency-first || fail "SetProfile latency-first"
    prop_is ActiveProfile 's "latency-first"'
    wait_for 3 grep -q 'latency-first' "$T/monitor" || { cat "$T/monitor"; fail "no PropertiesChanged"; }
    grep -q 'member=PropertiesChanged' "$T/monitor" || fail "signal is not PropertiesChanged"
    kill $mon
    ok "SetProfile switches ActiveProfile and emits PropertiesChanged"

    call_fails 'org.placed1.Error.UnknownProfile\|Unknown profile' SetProfile s no-such-profile
    call_fails '' SetProfile s ''
    prop_is ActiveProfile 's "latency-first"'
    call_fails 'nvalid\|signature' SetProfile u 5
    call_fails 'nvalid\|signature' SetProfile ss balanced extra
    prop_is ActiveProfile 's "latency-first"'
    ok "unknown profile and wrong types are refused; ActiveProfile unchanged"

    pc_rc 0 profile balanced
    pc_rc 0 profile
    [ "$(cat "$T/pc.out")" = balanced ] || fail "placectl profile printed '$(cat "$T/pc.out")'"
    pc_rc 1 profile no-such-profile
    grep -q 'unknown profile' "$T/pc.out" || fail "placectl: no 'unknown profile' message"
    pc_rc 0 --json profile
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["active_profile"]=="balanced" and "power-first" in d["profiles"]' "$T/pc.out" ||
        fail "profile --json: $(cat "$T/pc.out")"
    prop_is ActiveProfile 's "balanced"'
    ok "placectl profile: get, set, unknown (exit 1), --json"
}

check_unprivileged() {
    if [ "$as_root" != yes ]; then
        echo "note: not root, unprivileged-caller checks skipped"
        return
    fi
    "${nobody[@]}" busctl --address="$ADDR" get-property "${OBJ[@]}" ActiveProfile >"$T/out" 2>&1 ||
        fail "nobody cannot read ActiveProfile: $(cat "$T/out")"
    "${nobody[@]}" "$placectl" --address "$ADDR" status >"$T/out" 2>&1 ||
        fail "nobody cannot run placectl status: $(cat "$T/out")"
    "${nobody[@]}" "$placectl" --address "$ADDR" groups >/dev/null 2>&1 || fail "nobody cannot list groups"

    local args
    for args in "SetProfile s power-first" "Reload" "Restore" "HoldProfile ss power-first x" \
        "ReleaseProfile u 1"; do
        # shellcheck disable=SC2086
        if "${nobody[@]}" busctl --address="$ADDR" call "${OBJ[@]}" $args >"$T/out" 2>&1; then
            fail "nobody may call $args"
        fi
        grep -qi 'only root\|access denied\|not authorized' "$T/out" || fail "$args as nobody: $(cat "$T/out")"
    done
    # Properties.Set is the bus policy's to refuse.
    if "${nobody[@]}" busctl --address="$ADDR" set-property "${OBJ[@]}" ActiveProfile s power-first >"$T/out" 2>&1; then
        fail "nobody may set a property"
    fi
    local rc=0
    "${nobody[@]}" "$placectl" --address "$ADDR" profile power-first >"$T/out" 2>&1 || rc=$?
    [ $rc -eq 4 ] || fail "placectl profile as nobody: exit $rc, expected 4 ($(cat "$T/out"))"
    grep -q 'access denied' "$T/out" || fail "placectl as nobody: $(cat "$T/out")"
    prop_is ActiveProfile 's "balanced"'
    prop_is Holds 'a(uss) 0'
    prop_is Reloads 't 0'
    ok "nobody reads but cannot change anything (AccessDenied, placectl exit 4)"
}

check_reload() {
    "${B[@]}" call "${OBJ[@]}" Reload || fail "Reload"
    prop_is Reloads 't 1'
    pc_rc 0 reload
    prop_is Reloads 't 2'
    cp "$T/etc/placed.conf" "$T/good.conf"
    printf '[daemon]\njournal_dir = %s\ninterval_ms\n' "$T/journal" >"$T/etc/placed.conf"
    call_fails "placed.conf:3:" Reload
    grep -q 'ConfigInvalid\|running configuration is kept' "$T/call.out" || fail "Reload error: $(cat "$T/call.out")"
    pc_rc 1 reload
    grep -q "configuration invalid: .*placed.conf:3:" "$T/pc.out" || fail "placectl reload: $(cat "$T/pc.out")"
    cp "$T/good.conf" "$T/etc/placed.conf"
    prop_is Reloads 't 2'
    prop_is ActiveProfile 's "balanced"'
    ok "Reload counts; a broken file gives ConfigInvalid with FILE:LINE ($(sed 's/.*placed.conf/placed.conf/' "$T/pc.out" | head -c 60)...)"
}

check_groups_explain() {
    "${B[@]}" call "${OBJ[@]}" ListGroups >"$T/out" || fail "ListGroups"
    local n
    n=$(prop Groups | cut -d' ' -f2)
    grep -q "^a(tsaudtdss) $n" "$T/out" || fail "ListGroups '$(cat "$T/out")' disagrees with Groups=$n"
    pc_rc 0 --json groups
    python3 -c '
import json, sys
groups = json.load(open(sys.argv[1]))
assert isinstance(groups, list) and len(groups) == int(sys.argv[2]), groups
for g in groups:
    for k in ("id", "class", "tids", "util", "runq_delay_us", "cpus"):
        assert k in g, (k, g)
' "$T/pc.out" "$n" || fail "groups --json: $(cat "$T/pc.out")"
    pc_rc 0 groups
    head -n1 "$T/pc.out" | grep -q 'ID *CLASS *TASKS *UTIL' || fail "groups table header: $(head -n1 "$T/pc.out")"
    grep -q "^$n groups\.$" "$T/pc.out" || fail "groups: no count line"

    call_fails 'UnknownTask\|does not track' Explain u $$
    call_fails 'not a task id' Explain u 0
    call_fails 'nvalid\|signature' Explain s abc
    pc_rc 1 explain $$
    grep -q 'unknown task' "$T/pc.out" || fail "placectl explain: $(cat "$T/pc.out")"
    pc_rc 2 explain abc
    pc_rc 2 explain
    ok "ListGroups/groups ($n groups, table and JSON), Explain: unknown task, bad tids"
}

holds_now() { prop Holds; }
check_holds() {
    # A busctl client leaves right after the call: its hold ends with it.
    "${B[@]}" call "${OBJ[@]}" HoldProfile ss power-first "test hold" >"$T/out" || fail "HoldProfile"
    grep -Eq '^u [0-9]+$' "$T/out" || fail "HoldProfile returned '$(cat "$T/out")'"
    wait_for 3 prop_eq Holds 'a(uss) 0' || fail "hold outlived its busctl client: $(holds_now)"
    prop_is ActiveProfile 's "balanced"'

    call_fails 'UnknownProfile\|Unknown profile' HoldProfile ss nope why
    call_fails 'nvalid\|signature' HoldProfile s power-first
    call_fails 'longer than' HoldProfile ss power-first "$(head -c 300 /dev/zero | tr '\0' x)"
    call_fails 'UnknownHold\|No profile hold' ReleaseProfile u 4242
    prop_is Holds 'a(uss) 0'
    ok "HoldProfile ends with its client; unknown profile/hold, bad types, long reason refused"

    # placectl hold: held while COMMAND runs, released after, COMMAND's exit code.
    "$placectl" --address "$ADDR" --reason "test run" hold latency-first -- sh -c 'sleep 1; exit 7' &
    local pc=$!
    wait_for 3 prop_eq ActiveProfile 's "latency-first"' || fail "placectl hold did not hold"
    prop Holds | grep -q '"latency-first" "test run"' || fail "Holds: $(holds_now)"
    pc_rc 0 status
    grep -q 'latency-first (cookie [0-9]*): test run' "$T/pc.out" || fail "status lacks the hold: $(cat "$T/pc.out")"
    local rc=0
    wait $pc || rc=$?
    [ $rc -eq 7 ] || fail "placectl hold exited $rc, expected the command's 7"
    prop_is ActiveProfile 's "balanced"'
    prop_is Holds 'a(uss) 0'
    pc_rc 127 hold latency-first -- /nonexistent/command
    prop_is Holds 'a(uss) 0'
    pc_rc 1 hold no-such-profile -- true
    pc_rc 2 hold latency-first
    ok "placectl hold: held while the command ran, released after, exit code passed on"

    # A holder killed with SIGKILL: its connection closes, the hold ends.
    "$placectl" --address "$ADDR" hold power-first -- sleep 30 &
    pc=$!
    at_exit "kill -KILL $pc 2>/dev/null"
    wait_for 3 prop_eq ActiveProfile 's "power-first"' || fail "second hold not taken"
    local child
    child=$(pgrep -P $pc || true)
    kill -KILL $pc
    wait $pc 2>/dev/null || true
    [ -n "$child" ] && kill "$child" 2>/dev/null
    wait_for 3 prop_eq ActiveProfile 's "balanced"' || fail "hold survived its killed client: $(holds_now)"
    prop_is Holds 'a(uss) 0'
    ok "a hold ends when its client is killed with SIGKILL"
}

check_placectl_misc() {
    pc_rc 0 status
    for k in Profile Mode Holds Groups Version; do
        grep -q "^ *$k:" "$T/pc.out" || fail "status lacks $k: $(cat "$T/pc.out")"
    done
    pc_rc 0 --json status
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["mode"]=="advise" and d["active_profile"]=="balanced" and d["holds"]==[] and "ticks" in d' "$T/pc.out" ||
        fail "status --json: $(cat "$T/pc.out")"
    PLACED_BUS_ADDRESS=$ADDR "$placectl" profile >/dev/null || fail "PLACED_BUS_ADDRESS not honoured"
    pc_rc 1 graph --dot
    grep -q 'not available yet' "$T/pc.out" || fail "graph: $(cat "$T/pc.out")"
    pc_rc 1 snapshot
    pc_rc 2 bogus-verb
    pc_rc 2 status extra
    pc_rc 2 --no-such-option status
    "$placectl" --help | grep -q 'hold PROFILE -- COMMAND' || fail "--help lacks hold"
    local rc=0
    "$placectl" --address "unix:path=$T/no-such-socket" status >"$T/out" 2>&1 || rc=$?
    [ $rc -eq 3 ] || fail "unreachable bus: exit $rc, expected 3"
    ok "placectl status (text, JSON), env address, not-yet verbs, usage (2), unreachable (3)"
}

check_restore_enforce() {
    # Enforce mode on fixture roots, so nothing on this machine can change.
    stop_placed
    mkdir -p "$T/proc"
    start_placed --sysfs-root "$PLACED_SRC/tests/fixtures/topo-vm2" --procfs-root "$T/proc"
    prop_is Mode 's "enforce"'
    if [ "$as_root" = yes ]; then
        "${nobody[@]}" "$placectl" --address "$ADDR" restore >/dev/null 2>&1 && fail "nobody may restore"
        prop_is Mode 's "enforce"'
    fi
    pc_rc 0 restore
    prop_is Mode 's "advise"'
    pc_rc 0 restore
    prop_is Mode 's "advise"'
    ok "Restore switches enforce to advise (nobody may not)"
}

check_name_taken() {
    local rc=0
    "$placed" --foreground --bus "$ADDR" --config "$T/etc/placed.conf" --profiles-dir "$profiles" \
        --journal-dir "$T/journal2" --dry-run >"$T/out" 2>&1 || rc=$?
    [ $rc -ne 0 ] || fail "a second placed started on a bus where org.placed1 is taken"
    grep -q 'already taken' "$T/out" || fail "name taken: $(cat "$T/out")"
    ok "a second placed on the same bus is refused: $(grep -m1 'already taken' "$T/out" | sed 's/^<[0-9]>//')"
}

check_bus_fallbacks() {
    stop_placed
    pc_rc 3 status
    grep -q 'not running' "$T/pc.out" || fail "placectl without placed: $(cat "$T/pc.out")"

    DBUS_SYSTEM_BUS_ADDRESS=unix:path=$T/no-system-bus "$placed" --foreground --bus system \
        --config "$T/etc/placed.conf" --profiles-dir "$profiles" --journal-dir "$T/journal" \
        --dry-run >"$T/out" 2>&1 &
    local pid=$!
    at_exit "kill -KILL $pid 2>/dev/null"
    wait_for 5 grep -q 'started' "$T/out" || { cat "$T/out"; fail "placed --bus system without a system bus did not start"; }
    grep -q 'running without D-Bus' "$T/out" || fail "no 'running without D-Bus' message: $(cat "$T/out")"
    kill -TERM $pid
    wait $pid || fail "placed without a bus exited $?"

    local rc=0
    "$placed" --foreground --bus "unix:path=$T/no-such-bus" --config "$T/etc/placed.conf" \
        --profiles-dir "$profiles" --journal-dir "$T/journal" --dry-run >"$T/out" 2>&1 || rc=$?
    [ $rc -ne 0 ] || fail "placed started although its explicit bus address is dead"
    grep -q 'Failed to connect' "$T/out" || fail "dead address: $(cat "$T/out")"
    ok "no placed: placectl exit 3; no system bus: runs without D-Bus; dead address: refused"
}

start_placed --dry-run
check_introspection
check_properties
check_set_profile
check_unprivileged
check_reload
check_groups_explain
check_holds
check_placectl_misc
check_name_taken
check_restore_enforce
check_bus_fallbacks
grep -q 'AddressSanitizer\|runtime error' "$T/placed.log" && { cat "$T/placed.log"; fail "sanitizer report"; }
echo "all D-Bus checks passed"
