#!/usr/bin/env bash
# "placed --dump-topology" prints the topology as JSON, on the live system and
# on fixture trees of machines we do not have; a bad root is a clear error.
. "$(dirname "$0")/lib/common.sh"

placed=$PLACED_BUILD/placed
fx=$PLACED_SRC/tests/fixtures

check() { # ROOT ONLINE N_LLCS CORES PACKAGES NODES
    "$placed" --dump-topology --sysfs-root "$1" >"$T/topo.json" || fail "--dump-topology on $1 failed"
    python3 - "$T/topo.json" "$@" <<'PY' || fail "unexpected topology for $1"
import json, sys
t = json.load(open(sys.argv[1]))
root, online, llcs, cores, packages, nodes = sys.argv[2:]
got = (t["online"], len(t["llcs"]), t["cores"], t["packages"], t["nodes"])
want = (online, int(llcs), int(cores), int(packages), int(nodes))
assert got == want, "%s: got %s, want %s" % (root, got, want)
for l in t["llcs"]:
    assert set(l) >= {"id", "cpus"}, l
PY
    ok "$(basename "$1"): online $2, $3 LLCs, $4 cores, $5 packages, $6 nodes"
}

check "$fx/topo-vm2" 0-1 1 2 1 1
check "$fx/topo-epyc2s" 0-127 16 64 2 2
check "$fx/topo-hybrid" 0-19 1 14 1 1
check "$fx/topo-mtl" 0-21 2 16 1 1
check "$fx/topo-strix" 0-23 2 12 1 1
check "$fx/topo-biglittle" 0-7 2 8 1 1
check "$fx/topo-offline" 0-1,4-7 1 4 1 1

# Kinds of core on the Meteor Lake laptop: the per-kind cpulists, where the
# capacities came from, and each CPU's kind and capacity (CPPC highest_perf
# 60/58, 38 and 25: per kind, scaled so the top is 1024).
"$placed" --dump-topology --sysfs-root "$fx/topo-mtl" >"$T/mtl.json" || fail "--dump-topology on topo-mtl failed"
python3 - "$T/mtl.json" <<'PY' || fail "unexpected kinds of core for topo-mtl"
import json, sys
t = json.load(open(sys.argv[1]))
kinds = {"performance": "0-1,10-19", "efficient": "2-9", "low-power": "20-21"}
assert t["kinds"] == kinds, t["kinds"]
assert t["capacity_source"] == "cppc", t["capacity_source"]
assert t["asymmetric"] is True
got = {c["cpu"]: (c["kind"], c["capacity"]) for c in t["cpus"]}
want = {0: ("performance", 1024), 19: ("performance", 1024), 2: ("efficient", 649),
        9: ("efficient", 649), 20: ("low-power", 427), 21: ("low-power", 427)}
for cpu, w in want.items():
    assert got[cpu] == w, "cpu %d: got %s, want %s" % (cpu, got[cpu], w)
PY
ok "topo-mtl: kinds $(python3 -c "import json; t=json.load(open('$T/mtl.json')); print(t['kinds'], 'from', t['capacity_source'])")"

# A symmetric machine: every CPU performance, capacities from nothing.
"$placed" --dump-topology --sysfs-root "$fx/topo-epyc2s" >"$T/epyc.json" || fail "--dump-topology on topo-epyc2s failed"
python3 -c "
import json, sys
t = json.load(open('$T/epyc.json'))
assert t['kinds'] == {'performance': '0-127', 'efficient': '', 'low-power': ''}, t['kinds']
assert t['capacity_source'] == 'none' and not t['asymmetric']
assert {(c['kind'], c['capacity']) for c in t['cpus']} == {('performance', 1024)}
" || fail "unexpected kinds of core for topo-epyc2s"
ok "topo-epyc2s: every CPU performance, capacity source none"

# The live machine: online matches the kernel's own list.
"$placed" --dump-topology >"$T/live.json" || fail "--dump-topology on / failed"
python3 -c "import json,sys; t=json.load(open('$T/live.json')); sys.exit(t['online'] != open('/sys/devices/system/cpu/online').read().strip())" ||
    fail "live online list differs from /sys/devices/system/cpu/online"
ok "live: online $(python3 -c "import json; print(json.load(open('$T/live.json'))['online'])")"

# A root without CPUs is an error that names it.
set +e
"$placed" --dump-topology --sysfs-root "$T" >"$T/out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "--dump-topology on an empty root succeeded"
grep -q "$T" "$T/out" || fail "error does not name the root: $(cat "$T/out")"
ok "empty root refused: $(sed 's/^<[0-9]>//' "$T/out")"

# Hostile trees: an optional file that cannot be used is set aside with one
# warning naming it, and the rest is read as before; a required file that is
# a FIFO, /dev/zero or 100 MB stops placed at once, named. (A FIFO used to
# hang the loader until killed.)
cp -R "$fx/topo-biglittle" "$T/hostile"
cpu=$T/hostile/sys/devices/system/cpu
rm "$cpu/cpu5/cpu_capacity" && mkfifo "$cpu/cpu5/cpu_capacity"
echo 4294967299 >"$cpu/cpu1/cache/index2/level"
timeout 10 "$placed" --dump-topology --sysfs-root "$T/hostile" >"$T/hostile.json" 2>"$T/hostile.err" ||
    fail "--dump-topology on a tree with a FIFO failed: $(cat "$T/hostile.err")"
[ "$(grep -c 'Setting aside' "$T/hostile.err")" = 2 ] || fail "not one warning per file: $(cat "$T/hostile.err")"
grep -qF "Setting aside \"$cpu/cpu5/cpu_capacity\": not a regular file." "$T/hostile.err" ||
    fail "the FIFO is not named: $(cat "$T/hostile.err")"
python3 - "$T/hostile.json" "$cpu" <<'PY' || fail "set-aside list of the hostile tree"
import json, sys
t, cpu = json.load(open(sys.argv[1])), sys.argv[2]
assert [a["path"] for a in t["set_aside"]] == [cpu + "/cpu1/cache/index2/level", cpu + "/cpu5/cpu_capacity"], t["set_aside"]
assert t["set_aside"][0]["reason"] == '"4294967299" is out of range 1..16', t["set_aside"]
assert t["cpus"][5]["capacity"] == 1024 and t["cpus"][1]["capacity"] == 446, t["cpus"]
PY
ok "hostile tree: $(sed 's/^<[0-9]>//' "$T/hostile.err" | tr '\n' ' ')"

for what in fifo zero big; do
    rm -f "$cpu/online"
    case $what in
    fifo) mkfifo "$cpu/online" ;;
    zero) ln -s /dev/zero "$cpu/online" ;;
    big) head -c 100000000 /dev/zero | tr '\0' '1' >"$cpu/online" ;;
    esac
    set +e
    timeout 10 "$placed" --dump-topology --sysfs-root "$T/hostile" >"$T/out" 2>&1
    rc=$?
    set -e
    [ $rc = 1 ] || fail "$what as cpu/online: exit $rc: $(cat "$T/out")"
    grep -qF "\"$cpu/online\"" "$T/out" || fail "$what as cpu/online is not named: $(cat "$T/out")"
    ok "$what as cpu/online refused: $(sed 's/^<[0-9]>//' "$T/out")"
done
rm -f "$cpu/online"
