#!/usr/bin/env bash
# The D-Bus API and placectl against a real dbus-daemon: a private bus
# configured like Debian's system bus (deny by default) plus placed's own
# policy file (systemd/org.placed1.conf), and the real placed binary in
# advise mode. Covers every property and method, bad input (unknown profile,
# unknown task, wrong argument types), an unprivileged caller (setpriv
# nobody), PropertiesChanged, holds that end when their client leaves
# (normally and by SIGKILL), placectl's output and exit codes, and the
# --bus fallbacks. With the live system's data (placed --dry-run only reads):
# CpuStats against sysfs, the energy and sampler properties, and a real
# "perf bench sched pipe" pair seen through ListGroups, WakeGraph,
# placectl graph --dot/--json, Snapshot and status. Needs root for the
# unprivileged-caller checks and for the wake sampler (BPF); without it
# those parts are skipped with a note.
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
write_bus_config '<allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>'
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
        Reloads Ticks QuickTicks TickCostUSec TickStagesUSec EnergyEstimate EnergyWatts \
        SamplerNsPerWakeup SamplerWakeups SamplerSoftirqWakeups SamplerSkipped SamplerLost \
        SamplerResting SamplerRestedUSec CapacitySource Asymmetric TopologySetAside SetProfile Reload Restore ListGroups Explain WakeGraph Snapshot \
        CpuStats CpuTopology HoldProfile ReleaseProfile PlacementChanged; do
        grep -q "^\.$member " "$T/introspect" || fail "introspection lacks $member"
    done
    grep -q '^\.ListGroups .*a(tsaudtdss(sdddddddu)(ss))' "$T/introspect" || fail "ListGroups signature changed"
    grep -q '^\.ActiveProfile .*emits-change' "$T/introspect" || fail "ActiveProfile does not emit"
    grep -q '^\.WakeGraph .*a(uussdt)a(uudb)' "$T/introspect" || fail "WakeGraph signature changed"
    grep -q '^\.CpuStats .*a(udddua(sdt))' "$T/introspect" || fail "CpuStats signature changed"
    grep -q '^\.Snapshot .* s ' "$T/introspect" || fail "Snapshot signature changed"
    grep -q '^\.CpuTopology  *method  *-  *a(usuuuu) ' "$T/introspect" || fail "CpuTopology signature: $(grep CpuTopology "$T/introspect")"
    grep -q '^\.TickStagesUSec  *property  *a(st) ' "$T/introspect" || fail "TickStagesUSec type: $(grep TickStagesUSec "$T/introspect")"
    grep -q '^\.QuickTicks  *property  *t ' "$T/introspect" || fail "QuickTicks type: $(grep QuickTicks "$T/introspect")"
    grep -q '^\.CapacitySource  *property  *s .* const$' "$T/introspect" || fail "CapacitySource: $(grep CapacitySource "$T/introspect")"
    grep -q '^\.Asymmetric  *property  *b .* const$' "$T/introspect" || fail "Asymmetric: $(grep Asymmetric "$T/introspect")"
    grep -q '^\.TopologySetAside  *property  *as .* const$' "$T/introspect" || fail "TopologySetAside: $(grep TopologySetAside "$T/introspect")"
    for member in Ticks QuickTicks TickStagesUSec EnergyEstimate EnergyWatts SamplerNsPerWakeup \
        SamplerWakeups SamplerSoftirqWakeups SamplerSkipped SamplerLost SamplerResting \
        SamplerRestedUSec; do
        grep -q "^\.$member .* -$" "$T/introspect" || fail "$member should not emit (once a tick)"
    done
    # Every member (of org.placed1.Manager only: introspect was given it) is
    # documented, in placed(8) and in bus.c's list at its top.
    local name n=0
    for name in $(awk '/^\./ { print substr($1, 2) }' "$T/introspect"); do
        grep -q "\b$name\b" "$PLACED_SRC/daemon/placed.8" || fail "placed(8) does not name $name"
        sed -n '1,/^ \*\//p' "$PLACED_SRC/daemon/bus.c" | grep -q "\b$name\b" || fail "bus.c's list does not name $name"
        n=$((n + 1))
    done
    [ "$n" -ge 30 ] || fail "only $n members introspected: $(cat "$T/introspect")"
    ok "introspection: every property, method and the signal, each of the $n named in placed(8) and bus.c"
}

check_properties() {
    prop_is ActiveProfile 's "balanced"'
    prop_is Mode 's "advise"'
    prop_is Version "s \"$("$placed" --version | cut -d' ' -f2)\""
    wake_source=$(prop WakeSource | sed 's/^s "\(.*\)"$/\1/')
    case $wake_source in
    bpf | perf) ;;
    none) [ "$as_root" = no ] || fail "no wake sampler although root (see $T/placed.log: $(grep -i sampler "$T/placed.log"))" ;;
    *) fail "WakeSource is '$wake_source'" ;;
    esac
    prop_is Holds 'a(uss) 0'
    prop_is Reloads 't 0'
    prop PlacementChanges | grep -Eq '^t [0-9]+$' || fail "PlacementChanges: $(prop PlacementChanges)" # advice on the live system
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

# The last tick's cost: TickStagesUSec has the four stages in order, whose
# CPU time fits in the tick's wall time (TickCostUSec), read within one
# tick; QuickTicks is a count of some of the ticks.
tick_cost_consistent() {
    local before after
    before=$(prop Ticks)
    bj get-property TickStagesUSec >"$T/stages.json"
    prop TickCostUSec >"$T/cost"
    prop QuickTicks >"$T/quick"
    after=$(prop Ticks)
    [ "$before" = "$after" ] || return 1 # a tick ran in between: read again
    python3 - "$T/stages.json" "$(cat "$T/cost")" "$(cat "$T/quick")" "${after#t }" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["type"] == "a(st)", p
stages = p["data"]
assert [s[0] for s in stages] == ["sample", "model", "decide", "apply"], stages
assert all(isinstance(s[1], int) and s[1] >= 0 for s in stages), stages
cost = int(sys.argv[2].split()[1])
assert 0 < sum(s[1] for s in stages) <= cost, (stages, cost)  # CPU time within wall time
quick = sys.argv[3].split()
assert quick[0] == "t" and 0 <= int(quick[1]) <= int(sys.argv[4]), (quick, sys.argv[4])
EOF
}
check_tick_cost() {
    wait_for 5 tick_cost_consistent || { tick_cost_consistent; fail "TickStagesUSec $(cat "$T/stages.json"), TickCostUSec $(cat "$T/cost"), QuickTicks $(cat "$T/quick")"; }
    ok "TickStagesUSec: $(python3 -c 'import json,sys; print(", ".join("%s %d" % tuple(s) for s in json.load(open(sys.argv[1]))["data"]))' "$T/stages.json") us CPU of $(cut -d' ' -f2 "$T/cost") us; QuickTicks $(cut -d' ' -f2 "$T/quick")"
}

# CapacitySource, Asymmetric and CpuTopology() say what placed --dump-topology
# reads from the same sysfs root: one element per online CPU with its kind,
# capacity and the indexes of its core, LLC and node.
topology_agrees() { # SYSFS_ROOT
    "$placed" --dump-topology --sysfs-root "$1" >"$T/topo.json" || fail "--dump-topology --sysfs-root $1"
    bj CpuTopology >"$T/cpu-topology.json"
    python3 - "$T/topo.json" "$T/cpu-topology.json" "$(prop CapacitySource)" "$(prop Asymmetric)" <<'EOF' ||
import json, sys
topo = json.load(open(sys.argv[1]))
reply = json.load(open(sys.argv[2]))
assert reply["type"] == "a(usuuuu)", reply["type"]
source, asymmetric = sys.argv[3], sys.argv[4]
assert source in ('s "none"', 's "cpu_capacity"', 's "cppc"', 's "pmu"'), source
assert source == 's "%s"' % topo["capacity_source"], (source, topo["capacity_source"])
assert asymmetric == "b %s" % ("true" if topo["asymmetric"] else "false"), (asymmetric, topo["asymmetric"])
want = [[c["cpu"], c["kind"], c["capacity"], c["core"], c["llc"], c["node"]]
        for c in topo["cpus"] if c["kind"] is not None]  # online CPUs only
assert reply["data"][0] == want, (reply["data"][0], want)
if not topo["asymmetric"]:  # cores all alike: all performance, all the biggest
    assert all(c[1] == "performance" and c[2] == 1024 for c in want), want
EOF
        fail "CpuTopology, CapacitySource or Asymmetric on $1 disagree with --dump-topology"
}
check_topology() {
    topology_agrees /
    local n
    n=$(bj CpuTopology | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"][0]))')
    [ "$n" = "$(online_cpus)" ] || fail "CpuTopology lists $n CPUs, $(online_cpus) are online"
    ok "CpuTopology: $n CPUs as --dump-topology reads them; CapacitySource $(prop CapacitySource | cut -d\" -f2), $(prop Asymmetric | sed "s/b true/asymmetric/; s/b false/symmetric/")"
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
    for verb in "graph --dot" snapshot; do
        # shellcheck disable=SC2086
        "${nobody[@]}" "$placectl" --address "$ADDR" $verb >/dev/null 2>"$T/out" ||
            fail "nobody cannot run placectl $verb: $(cat "$T/out")"
    done

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

# The live system's groups change from tick to tick: compare within a tick.
groups_agree() {
    local n
    n=$(prop Groups | cut -d' ' -f2)
    "${B[@]}" call "${OBJ[@]}" ListGroups | grep -q "^a(tsaudtdss(sdddddddu)(ss)) $n\b"
}
check_groups_explain() {
    wait_for 5 groups_agree || fail "ListGroups '$("${B[@]}" call "${OBJ[@]}" ListGroups)' disagrees with $(prop Groups)"
    local n
    n=$(prop Groups | cut -d' ' -f2)
    pc_rc 0 --json groups
    python3 -c '
import json, sys
groups = json.load(open(sys.argv[1]))
assert isinstance(groups, list), groups
for g in groups:
    for k in ("id", "class", "tids", "util", "runq_delay_us", "cpus"):
        assert k in g, (k, g)
' "$T/pc.out" || fail "groups --json: $(cat "$T/pc.out")"
    pc_rc 0 groups
    head -n1 "$T/pc.out" | grep -q 'ID *CLASS *TASKS *UTIL' || fail "groups table header: $(head -n1 "$T/pc.out")"
    local rows
    rows=$(sed -n '2,/^$/p' "$T/pc.out" | grep -c .) || true
    grep -q "^$rows groups\.$" "$T/pc.out" || fail "groups: no count line for $rows rows: $(cat "$T/pc.out")"

    # A task id that does not exist now is surely not tracked.
    local tid=4194000
    while [ -e /proc/$tid ]; do tid=$((tid + 1)); done
    call_fails 'UnknownTask\|does not track' Explain u $tid
    call_fails 'not a task id' Explain u 0
    call_fails 'nvalid\|signature' Explain s abc
    pc_rc 1 explain $tid
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

# topology_line SYSFS_ROOT: the Topology line placectl status should print,
# from what placed --dump-topology reads there.
topology_line() {
    "$placed" --dump-topology --sysfs-root "$1" | python3 -c '
import json, sys
t = json.load(sys.stdin)
cpus = [c for c in t["cpus"] if c["kind"] is not None]
n, llcs, nodes = len(cpus), t["llc_count"], t["nodes"]
line = "     Topology: %d CPU%s, %d LLC%s" % (n, "" if n == 1 else "s", llcs, "" if llcs == 1 else "s")
if nodes > 1:
    line += ", %d NUMA nodes" % nodes
if not t["asymmetric"]:
    print(line + "; all alike")
    sys.exit()
kinds = []
for k in ("performance", "efficient", "low-power"):
    caps = [c["capacity"] for c in cpus if c["kind"] == k]
    if caps:
        lo, hi = min(caps), max(caps)
        kinds.append("%d %s (%s)" % (len(caps), k, lo if lo == hi else "%d-%d" % (lo, hi)))
print(line + "; kinds: " + ", ".join(kinds) + "; capacity from " + t["capacity_source"])'
}
# The Counters line: ticks, quick ticks, the last tick's wall time and its stages' CPU time.
counters_re='^     Counters: placement changes [0-9]+, reloads [0-9]+, ticks [0-9]+ \([0-9]+ quick\), last took [0-9]+ us: sample [0-9]+, model [0-9]+, decide [0-9]+, apply [0-9]+ us CPU$'
# status_json_topology FILE SYSFS_ROOT: placectl status --json's topology, capacity
# source, asymmetry and tick fields, against --dump-topology of the same root.
status_json_topology() {
    "$placed" --dump-topology --sysfs-root "$2" >"$T/topo.json" || fail "--dump-topology --sysfs-root $2"
    python3 - "$1" "$T/topo.json" <<'EOF' || fail "status --json (topology, ticks): $(cat "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
cpus = [{k: c[k] for k in ("cpu", "kind", "capacity", "core", "llc", "node")}
        for c in t["cpus"] if c["kind"] is not None]
assert d["capacity_source"] == t["capacity_source"], d["capacity_source"]
assert d["asymmetric"] is t["asymmetric"], d["asymmetric"]
topo = d["topology"]
assert topo["cpus"] == cpus, (topo["cpus"], cpus)
assert topo["llcs"] == t["llc_count"] and topo["nodes"] == t["nodes"], topo
for kind, v in topo["kinds"].items():
    caps = [c["capacity"] for c in cpus if c["kind"] == kind]
    assert v == {"count": len(caps), "capacity_min": min(caps), "capacity_max": max(caps)}, (kind, v)
assert sum(v["count"] for v in topo["kinds"].values()) == len(cpus), topo["kinds"]
by_cpu = {c["cpu"]: c for c in cpus}
for c in d["cpus"]:  # each CPU's figures carry its kind and capacity
    assert (c["kind"], c["capacity"]) == (by_cpu[c["cpu"]]["kind"], by_cpu[c["cpu"]]["capacity"]), c
assert list(d["tick_stages_usec"]) == ["sample", "model", "decide", "apply"], d["tick_stages_usec"]
assert all(isinstance(v, int) and v >= 0 for v in d["tick_stages_usec"].values()), d["tick_stages_usec"]
assert isinstance(d["quick_ticks"], int) and 0 <= d["quick_ticks"] <= d["ticks"], d
EOF
}

check_placectl_misc() {
    pc_rc 0 status
    for k in Profile Mode Holds Groups Topology Version; do
        grep -q "^ *$k:" "$T/pc.out" || fail "status lacks $k: $(cat "$T/pc.out")"
    done
    local want
    want=$(topology_line /)
    grep -qxF "$want" "$T/pc.out" || fail "status lacks '$want': $(cat "$T/pc.out")"
    grep -Eq "$counters_re" "$T/pc.out" || fail "status Counters line: $(grep Counters "$T/pc.out")"
    if [ "$(prop Asymmetric)" = "b false" ]; then # kinds only where the CPUs differ
        grep -Eq '^cpu[0-9]+ +(performance|efficient|low-power) ' "$T/pc.out" && fail "per-CPU lines show a kind on a symmetric machine: $(cat "$T/pc.out")"
    fi
    pc_rc 0 --json status
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["mode"]=="advise" and d["active_profile"]=="balanced" and d["holds"]==[] and "ticks" in d' "$T/pc.out" ||
        fail "status --json: $(cat "$T/pc.out")"
    status_json_topology "$T/pc.out" /
    PLACED_BUS_ADDRESS=$ADDR "$placectl" profile >/dev/null || fail "PLACED_BUS_ADDRESS not honoured"
    pc_rc 2 graph --dot extra
    pc_rc 2 graph --dot --json
    # graph prints tables, graph --dot prints DOT: never the same output.
    pc_rc 0 graph
    cp "$T/pc.out" "$T/graph.txt"
    pc_rc 0 graph --dot
    ! cmp -s "$T/graph.txt" "$T/pc.out" || fail "graph and graph --dot print the same: $(head -n3 "$T/pc.out")"
    head -n1 "$T/pc.out" | grep -q '^digraph placed {$' || fail "graph --dot is not DOT: $(head -n3 "$T/pc.out")"
    ! grep -q 'digraph' "$T/graph.txt" || fail "graph (no --dot) prints DOT: $(head -n3 "$T/graph.txt")"
    grep -q '^GROUP  *CLASS  *TASK ' "$T/graph.txt" || fail "graph lacks its task table: $(cat "$T/graph.txt")"
    pc_rc 2 snapshot a b
    pc_rc 1 snapshot "$T/no-such-dir/snap.json"
    grep -q 'cannot write' "$T/pc.out" || fail "snapshot to a bad path: $(cat "$T/pc.out")"
    pc_rc 2 bogus-verb
    pc_rc 2 status extra
    pc_rc 2 --no-such-option status
    "$placectl" --help | grep -q 'hold PROFILE -- COMMAND' || fail "--help lacks hold"
    local rc=0
    "$placectl" --address "unix:path=$T/no-such-socket" status >"$T/out" 2>&1 || rc=$?
    [ $rc -eq 3 ] || fail "unreachable bus: exit $rc, expected 3"
    ok "placectl status (text, JSON), graph (tables) unlike graph --dot, env address, usage (2), unwritable snapshot (1), unreachable (3)"
}

# bj METHOD|get-property NAME: busctl's JSON for a call or a property (python3 reads it).
bj() {
    if [ "$1" = get-property ]; then
        "${B[@]}" --json=short get-property "${OBJ[@]}" "$2"
    else
        "${B[@]}" --json=short call "${OBJ[@]}" "$1"
    fi
}
online_cpus() { # the number of online CPUs, from sysfs
    python3 -c '
n = 0
for part in open("/sys/devices/system/cpu/online").read().strip().split(","):
    a, _, b = part.partition("-")
    n += int(b or a) - int(a) + 1
print(n)'
}

# CpuStats, the energy and sampler properties and placectl status's per-CPU
# lines, on the live system (placed --dry-run reads, never writes).
check_cpu_stats() {
    local n
    n=$(online_cpus)
    # Two ticks give the first deltas.
    cpus_listed() { [ "$(bj CpuStats | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"][0]))')" = "$n" ]; }
    wait_for 5 cpus_listed || fail "CpuStats does not list $n CPUs: $(bj CpuStats)"
    bj CpuStats | python3 -c '
import json, sys, glob, os
cpus = json.load(sys.stdin)["data"][0]
for cpu, busy, wakeups, deepest, n_states, states in cpus:
    assert 0 <= busy <= 1 and 0 <= deepest <= 1 and wakeups >= 0, (cpu, busy, deepest, wakeups)
    d = "/sys/devices/system/cpu/cpu%d/cpuidle" % cpu
    # Without a cpuidle driver: no states, wakeups are interrupts per second.
    has_states = os.path.exists(d + "/state0")
    assert n_states == len(states) and (len(states) > 0) == has_states, (cpu, n_states, states)
    assert busy + sum(s[1] for s in states) <= 1.0001, (cpu, busy, states)
    for i, (name, frac, lat) in enumerate(states):
        assert 0 <= frac <= 1, (cpu, name, frac)
        assert name == open("%s/state%d/name" % (d, i)).read().strip(), (cpu, i, name)
        assert lat == int(open("%s/state%d/latency" % (d, i)).read()), (cpu, i, lat)
' || fail "CpuStats: $(bj CpuStats)"

    local est watts
    est=$(prop EnergyEstimate | cut -d' ' -f2)
    watts=$(prop EnergyWatts | cut -d' ' -f2)
    python3 -c "import sys; e = float('$est'); assert 0 < e <= $n * 1.01, e" ||
        fail "EnergyEstimate $est is not in (0, $n]"
    if ls /sys/class/powercap/intel-rapl:* >/dev/null 2>&1; then
        python3 -c "assert float('$watts') >= 0" || fail "EnergyWatts $watts with RAPL present"
    else
        [ "$watts" = -1 ] || fail "EnergyWatts is $watts without RAPL, expected -1"
    fi
    [ "$wake_source" = bpf ] && check_sampler_cost

    pc_rc 0 status
    [ "$(grep -Ec '^cpu[0-9]+ +busy +[0-9]+%  wakeups +[0-9]+/s(  |$)' "$T/pc.out")" = "$n" ] ||
        fail "status has not one line per CPU ($n): $(cat "$T/pc.out")"
    grep -q "^ *Energy: [0-9.]* active CPUs (estimate)" "$T/pc.out" || fail "status energy: $(cat "$T/pc.out")"
    grep -q "^ *Wake source: $wake_source" "$T/pc.out" || fail "status wake source: $(cat "$T/pc.out")"
    if [ "$wake_source" = bpf ]; then
        grep -Eq '^ *Resting: (now \(nothing new, waiting or on trial\)|no), [0-9]+ s in all$' "$T/pc.out" ||
            fail "status resting: $(cat "$T/pc.out")"
    fi
    pc_rc 0 --json status
    python3 -c '
import json, os, sys
d = json.load(open(sys.argv[1]))
assert len(d["cpus"]) == int(sys.argv[2]), d["cpus"]
for c in d["cpus"]:
    has_states = os.path.exists("/sys/devices/system/cpu/cpu%d/cpuidle/state0" % c["cpu"])
    assert bool(c["states"]) == has_states, c
    assert 0 <= c["busy"] <= 1 and all(0 <= s["residency"] <= 1 for s in c["states"]), c
assert d["energy_estimate"] > 0 and "energy_watts" in d and "sampler_ns_per_wakeup" in d, d
assert isinstance(d["group_classes"], dict), d
' "$T/pc.out" "$n" || fail "status --json: $(cat "$T/pc.out")"
    ok "CpuStats: $n CPUs, fractions in [0,1], states as in sysfs; energy $est ACE, RAPL $watts; status lines"
}

# The BPF sampler's cost needs kernel.bpf_stats_enabled: 0 (and "not measured"
# in status) without it; with it (switched on here for a moment, and put
# back) a plausible figure.
sampler_cost_measured() { python3 -c "assert 0 < float('$(prop SamplerNsPerWakeup | cut -d' ' -f2)') < 1e6"; }
check_sampler_cost() {
    local stats=/proc/sys/kernel/bpf_stats_enabled old
    old=$(cat $stats)
    if [ "$old" = 0 ]; then
        if ! wait_for 3 prop_eq SamplerNsPerWakeup 'd 0'; then
            [ "$(cat $stats)" = 0 ] || { echo "note: someone else switched bpf_stats on, sampler cost check skipped"; return; }
            fail "SamplerNsPerWakeup $(prop SamplerNsPerWakeup) without bpf_stats"
        fi
        pc_rc 0 status
        grep -q '^ *Wake source: bpf, cost not measured' "$T/pc.out" || fail "status: $(grep 'Wake source' "$T/pc.out")"
        at_exit "echo $old >$stats"
        echo 1 >$stats
    fi
    wait_for 3 sampler_cost_measured || fail "SamplerNsPerWakeup $(prop SamplerNsPerWakeup) with bpf_stats on"
    pc_rc 0 status
    echo "$old" >$stats
    grep -Eq '^ *Wake source: bpf, [0-9]+ ns/wakeup$' "$T/pc.out" || fail "status: $(grep 'Wake source' "$T/pc.out")"
    ok "sampler cost: $(grep -o '[0-9]* ns/wakeup' "$T/pc.out") with bpf_stats on$([ "$old" = 0 ] && echo ', not measured without')"
}

# A real pair (perf bench sched pipe, two processes) seen through WakeGraph,
# graph --dot/--json, Snapshot and status. Needs a wake sampler (root: BPF).
check_live_pair() {
    if [ "$wake_source" = none ]; then
        echo "note: no wake sampler (BPF/perf need root), live pair checks skipped"
        return
    fi
    if ! command -v perf >/dev/null || ! perf bench sched pipe -l 1 >/dev/null 2>&1; then
        echo "note: perf bench is not available (apt-get install linux-perf), live pair checks skipped"
        return
    fi
    perf bench sched pipe -l 20000000 >/dev/null 2>&1 &
    local bench=$!
    at_exit "pkill -P $bench 2>/dev/null; kill $bench 2>/dev/null; wait $bench 2>/dev/null"
    local child=""
    wait_for 3 pgrep -P $bench || fail "perf bench sched pipe did not fork"
    child=$(pgrep -P $bench)
    pair_listed() {
        bj ListGroups | python3 -c '
import json, sys
tids = {int(sys.argv[1]), int(sys.argv[2])}
groups = json.load(sys.stdin)["data"][0]
sys.exit(0 if any(g[1] == "pair" and set(g[2]) == tids for g in groups) else 1)' "$bench" "$child"
    }
    wait_for 10 pair_listed || fail "no pair of $bench and $child in ListGroups: $(bj ListGroups)"

    # Tried, not judged: in advise mode nothing is applied, so nothing is measured placed.
    pair_on_trial() {
        bj ListGroups | python3 -c '
import json, sys
tids = {int(sys.argv[1]), int(sys.argv[2])}
g = [g for g in json.load(sys.stdin)["data"][0] if set(g[2]) == tids][0]
verdict, kernel, placed, windows = g[8][0], g[8][1], g[8][2], g[8][8]
sys.exit(0 if verdict == "running" and kernel == 0 and placed == 0 and windows == 0 else 1)' "$bench" "$child"
    }
    wait_for 5 pair_on_trial || fail "the pair is not on trial in advise mode: $(bj ListGroups)"
    pc_rc 0 explain "$bench"
    grep -Eq "Trial running: switchback not measured yet" "$T/pc.out" ||
        fail "explain does not show the trial: $(cat "$T/pc.out")"
    pc_rc 0 groups
    grep -Eq "^[0-9]+ +pair .* running 0.00x/0w +([0-9]+,)?$bench" "$T/pc.out" ||
        fail "groups does not show the trial: $(cat "$T/pc.out")"
    pc_rc 0 --json groups
    python3 -c '
import json, sys
gs = json.load(open(sys.argv[1]))
assert any(g["trial"]["verdict"] == "running" and g["trial"]["windows"] == 0 and "gain_lo" in g["trial"] for g in gs), gs' "$T/pc.out" ||
        fail "groups --json has no trial: $(cat "$T/pc.out")"

    bj WakeGraph | python3 -c '
import json, sys
a, b = int(sys.argv[1]), int(sys.argv[2])
tasks, edges = json.load(sys.stdin)["data"]
t = {x[0]: x for x in tasks}
assert a in t and b in t, "tids missing"
assert t[a][3] == t[b][3] == "pair" and t[a][5] == t[b][5] != 0, (t[a], t[b])
assert t[a][4] > 0 and t[b][4] > 0, (t[a], t[b])
strong = [e for e in edges if {e[0], e[1]} == {a, b} and e[3] and e[2] > 0]
assert strong, [e for e in edges if a in e[:2] or b in e[:2]]
' "$bench" "$child" || fail "WakeGraph lacks the pair $bench<->$child with a strong edge"

    pc_rc 0 graph --dot
    head -n1 "$T/pc.out" | grep -q '^digraph placed {$' || fail "graph --dot: $(head -n3 "$T/pc.out")"
    [ "$(tail -n1 "$T/pc.out")" = "}" ] || fail "graph --dot does not end with }"
    grep -Eq "^ *t($bench -> t$child|$child -> t$bench) \[.*style=solid" "$T/pc.out" ||
        fail "graph --dot has no solid edge between $bench and $child: $(grep -- '->' "$T/pc.out" | head)"
    local tid
    for tid in $bench $child; do
        grep -q "label=\"[^\"]*/$tid\"" "$T/pc.out" || fail "graph --dot does not label task $tid comm/tid"
    done
    grep -q 'subgraph cluster_g[0-9]* {' "$T/pc.out" || fail "graph --dot has no group cluster"
    if command -v dot >/dev/null; then
        dot -Tcanon "$T/pc.out" >/dev/null 2>"$T/dot.err" || fail "Graphviz rejects graph --dot: $(cat "$T/dot.err")"
    fi
    pc_rc 0 graph
    grep -Eq "^[^ ]*/($bench|$child) +-> [^ ]*/($bench|$child) +[0-9.]+ +strong\$" "$T/pc.out" ||
        fail "graph has no strong edge row between $bench and $child: $(grep -- '->' "$T/pc.out" | head)"
    grep -Eq "^[0-9]+ +pair +[^ ]*/$bench " "$T/pc.out" || fail "graph does not list $bench in a pair: $(cat "$T/pc.out")"
    pc_rc 0 --json graph
    python3 -c '
import json, sys
g = json.load(open(sys.argv[1]))
tids = {t["tid"] for t in g["tasks"]}
assert {int(sys.argv[2]), int(sys.argv[3])} <= tids, tids
assert all({"waker", "wakee", "rate", "strong"} <= set(e) for e in g["edges"])
' "$T/pc.out" "$bench" "$child" || fail "graph --json: $(head -c 400 "$T/pc.out")"

    pc_rc 0 snapshot "$T/snap.json"
    python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
tids = {int(sys.argv[2]), int(sys.argv[3])}
assert s["profile"] == "balanced" and s["topology"] == "/", (s["profile"], s["topology"])
assert any(g["class"] == "pair" and {t[0] for t in g["tasks"]} == tids for g in s["groups"]), s["groups"]
assert len(s["loads"]) == int(sys.argv[4]), s["loads"]
' "$T/snap.json" "$bench" "$child" "$(online_cpus)" || fail "snapshot: $(head -c 400 "$T/snap.json")"
    "${B[@]}" --json=short call "${OBJ[@]}" Snapshot | python3 -c '
import json, sys
json.loads(json.load(sys.stdin)["data"][0])' || fail "Snapshot() does not return JSON"
    pc_rc 0 snapshot
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/pc.out" || fail "snapshot to stdout is not JSON"

    pc_rc 0 status
    grep -Eq '^ *Groups: [0-9]+ groups?: .*[0-9]+ pair' "$T/pc.out" || fail "status groups: $(cat "$T/pc.out")"
    pc_rc 0 --json status
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["group_classes"].get("pair", 0) >= 1, d["group_classes"]' "$T/pc.out" ||
        fail "status --json group_classes"

    pkill -P $bench 2>/dev/null || true
    kill $bench 2>/dev/null || true
    wait $bench 2>/dev/null || true
    ok "perf bench pair $bench<->$child: ListGroups pair, WakeGraph strong edge, graph (tables, --dot, --json), snapshot, status"
}

# A UDP request/response pair over loopback (tests/bench/netpair): the
# receiver is woken from softirq, counted apart, and the pair is listed.
check_live_net_pair() {
    local netpair=$PLACED_BUILD/bench/netpair
    if [ "$wake_source" = none ] || [ ! -x "$netpair" ]; then
        echo "note: no wake sampler or no $netpair (make check builds it), loopback pair check skipped"
        return
    fi
    "$netpair" -t udp -s 60 -p >"$T/netpair.out" &
    local np=$! server
    at_exit "kill $np 2>/dev/null; wait $np 2>/dev/null"
    wait_for 3 grep -q '^pids ' "$T/netpair.out" || fail "netpair did not start"
    server=$(awk '/^pids/ { print $2 }' "$T/netpair.out")
    udp_pair_listed() {
        bj ListGroups | python3 -c '
import json, sys
tids = {int(sys.argv[1]), int(sys.argv[2])}
sys.exit(0 if any(g[1] == "pair" and set(g[2]) == tids for g in json.load(sys.stdin)["data"][0]) else 1)' "$np" "$server"
    }
    softirq_counted() { python3 -c "assert int('$(prop SamplerSoftirqWakeups | cut -d' ' -f2)') > 0"; }
    wait_for 10 udp_pair_listed || fail "no pair of $np and $server in ListGroups: $(bj ListGroups)"
    softirq_counted || fail "SamplerSoftirqWakeups $(prop SamplerSoftirqWakeups) with a loopback pair"
    pc_rc 0 status
    grep -Eq '^ *Wakeups: [1-9][0-9]* attributed \([1-9][0-9]* in softirq\), [0-9]+ skipped, [0-9]+ lost$' "$T/pc.out" ||
        fail "status wakeups: $(cat "$T/pc.out")"
    local softirq_line
    softirq_line=$(grep -o '[0-9]* in softirq' "$T/pc.out")
    pc_rc 0 --json status
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert 0 < d["sampler_softirq_wakeups"] <= d["sampler_wakeups"], d
assert d["sampler_skipped"] >= 0 and d["sampler_lost"] >= 0, d
assert isinstance(d["sampler_resting"], bool) and d["sampler_rested_usec"] >= 0, d
' "$T/pc.out" || fail "status --json sampler counters: $(cat "$T/pc.out")"
    kill $np 2>/dev/null || true
    wait $np 2>/dev/null || true
    ok "UDP pair over loopback $np<->$server: ListGroups pair, $softirq_line in status"
}

check_restore_enforce() {
    # Enforce mode on fixture roots, so nothing on this machine can change.
    stop_placed
    mkdir -p "$T/proc"
    start_placed --sysfs-root "$PLACED_SRC/tests/fixtures/topo-vm2" --procfs-root "$T/proc"
    prop_is Mode 's "enforce"'
    "${B[@]}" --json=short call "${OBJ[@]}" Snapshot | python3 -c '
import json, sys
s = json.loads(json.load(sys.stdin)["data"][0])
assert s["topology"] == sys.argv[1] and len(s["loads"]) == 2, (s["topology"], s["loads"])
' "$PLACED_SRC/tests/fixtures/topo-vm2" || fail "Snapshot on a fixture root"
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

# A hybrid laptop's topology (tests/fixtures/topo-mtl: Meteor Lake, 6 P-cores
# with SMT, 8 E-cores, 2 LP E-cores; capacities from CPPC) in advise mode:
# the kinds efficient and low-power, CapacitySource cppc, Asymmetric true.
check_hybrid_topology() {
    local fx=$PLACED_SRC/tests/fixtures/topo-mtl
    stop_placed
    mkdir -p "$T/hybrid-proc"
    start_placed --dry-run --sysfs-root "$fx" --procfs-root "$T/hybrid-proc"
    prop_is CapacitySource 's "cppc"'
    prop_is Asymmetric 'b true'
    prop_is TopologySetAside 'as 0'
    topology_agrees "$fx"
    bj CpuTopology | python3 -c '
import json, sys
cpus = json.load(sys.stdin)["data"][0]
kinds = {}
for cpu, kind, capacity, core, llc, node in cpus:
    kinds.setdefault(kind, set()).add(capacity)
assert kinds == {"performance": {1024}, "efficient": {649}, "low-power": {427}}, kinds
assert len(cpus) == 22 and {c[4] for c in cpus} == {0, 1}, cpus' || fail "CpuTopology on topo-mtl: $(bj CpuTopology)"
    ok "CpuTopology on a hybrid fixture: 12 performance (1024), 8 efficient (649), 2 low-power (427); cppc, asymmetric"

    # placectl status: the kinds on the Topology line and on each CPU's line
    # (per-CPU figures from a made-up /proc of 22 CPUs whose counters move).
    fake_proc "$T/hybrid-proc" 22 &
    local fake=$!
    at_exit "kill $fake 2>/dev/null"
    hybrid_cpu_lines() { pc_rc 0 status && [ "$(grep -c '^cpu[0-9]' "$T/pc.out")" = 22 ]; }
    wait_for 5 hybrid_cpu_lines || fail "status on topo-mtl has not 22 CPU lines: $(cat "$T/pc.out")"
    grep -qxF '     Topology: 22 CPUs, 2 LLCs; kinds: 12 performance (1024), 8 efficient (649), 2 low-power (427); capacity from cppc' "$T/pc.out" ||
        fail "status Topology line on topo-mtl: $(grep Topology "$T/pc.out")"
    [ "$(topology_line "$fx")" = "$(grep Topology "$T/pc.out")" ] || fail "topology_line disagrees: $(topology_line "$fx")"
    grep -Eq "$counters_re" "$T/pc.out" || fail "status Counters line: $(grep Counters "$T/pc.out")"
    local cpu kind line
    line=$(grep Topology "$T/pc.out" | sed 's/^ *//')
    for cpu in 0 1 2 9 10 19 20 21; do
        kind=$(python3 -c 'import json,sys; print(next(c["kind"] for c in json.load(open(sys.argv[1]))["cpus"] if c["cpu"] == int(sys.argv[2])))' "$T/topo.json" "$cpu")
        grep -Eq "^cpu$cpu +$kind +busy +[0-9]+%  wakeups " "$T/pc.out" || fail "status: cpu$cpu is not shown $kind: $(grep "^cpu$cpu " "$T/pc.out")"
    done
    pc_rc 0 --json status
    status_json_topology "$T/pc.out" "$fx"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["capacity_source"] == "cppc" and d["asymmetric"] is True, d
assert d["topology"]["kinds"] == {"performance": {"count": 12, "capacity_min": 1024, "capacity_max": 1024},
                                  "efficient": {"count": 8, "capacity_min": 649, "capacity_max": 649},
                                  "low-power": {"count": 2, "capacity_min": 427, "capacity_max": 427}}, d["topology"]
assert len(d["cpus"]) == 22 and d["cpus"][20]["kind"] == "low-power", d["cpus"]' "$T/pc.out" ||
        fail "status --json on topo-mtl: $(cat "$T/pc.out")"
    kill $fake
    wait $fake 2>/dev/null || true
    ok "placectl status on the hybrid fixture: $line; each CPU's kind on its line and in --json"
}

# fake_proc DIR N: DIR/stat and DIR/interrupts of N CPUs whose counters move
# every 50 ms (each CPU a tenth busy), so a fixture tree gets per-CPU figures.
# Runs until killed.
fake_proc() {
    local dir=$1 n=$2 t=0 c
    mkdir -p "$dir"
    while :; do
        t=$((t + 10))
        {
            echo "cpu  0 0 0 0"
            for ((c = 0; c < n; c++)); do echo "cpu$c $t 0 0 $((9 * t)) 0 0 0 0 0 0"; done
        } >"$dir/stat.new"
        mv "$dir/stat.new" "$dir/stat"
        {
            for ((c = 0; c < n; c++)); do printf '       CPU%d' "$c"; done
            printf '\n  0:'
            for ((c = 0; c < n; c++)); do printf ' %10d' "$t"; done
            printf '  IO-APIC  timer\n'
        } >"$dir/interrupts.new"
        mv "$dir/interrupts.new" "$dir/interrupts"
        sleep 0.05
    done
}

# placectl against a placed older than CpuTopology() and the tick properties
# (tests/helpers/bus-helper old-placed): status prints what there is.
check_old_placed() {
    local helper=$PLACED_BUILD/helpers/bus-helper
    if [ ! -x "$helper" ]; then
        echo "note: no $helper (make check builds it), the older placed is not checked"
        return
    fi
    "$helper" "$ADDR" old-placed >"$T/old.out" 2>&1 &
    local old=$!
    at_exit "kill $old 2>/dev/null"
    wait_for 5 grep -q '^ready$' "$T/old.out" || fail "bus-helper old-placed did not start: $(cat "$T/old.out")"
    pc_rc 0 status
    grep -qx '     Counters: placement changes 0, reloads 0, ticks 42, last took 812 us' "$T/pc.out" ||
        fail "status from an older placed, Counters: $(cat "$T/pc.out")"
    ! grep -q 'Topology:' "$T/pc.out" || fail "status from an older placed shows a topology: $(cat "$T/pc.out")"
    grep -Eq '^cpu0   busy  25%  wakeups   100/s$' "$T/pc.out" || fail "status from an older placed, CPU line: $(cat "$T/pc.out")"
    pc_rc 0 --json status
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["topology"] is None and d["ticks"] == 42 and d["tick_cost_usec"] == 812, d
assert not {"quick_ticks", "tick_stages_usec", "capacity_source", "asymmetric"} & set(d), d
assert d["cpus"] == [{"cpu": 0, "busy": 0.25, "wakeups_per_sec": 100.0, "deepest_idle_share": 0.0, "states": []}], d["cpus"]' "$T/pc.out" ||
        fail "status --json from an older placed: $(cat "$T/pc.out")"
    kill $old
    wait $old 2>/dev/null || true
    ok "placectl status from an older placed (no CpuTopology): no Topology line, ticks without their parts, JSON topology null"
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
check_tick_cost
check_topology
check_set_profile
check_unprivileged
check_reload
check_groups_explain
check_cpu_stats
check_live_pair
check_live_net_pair
check_holds
check_placectl_misc
check_name_taken
check_restore_enforce
check_hybrid_topology
check_bus_fallbacks
check_old_placed
grep -q 'AddressSanitizer\|runtime error' "$T/placed.log" && { cat "$T/placed.log"; fail "sanitizer report"; }
echo "all D-Bus checks passed"
