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
check "$fx/topo-biglittle" 0-7 2 8 1 1
check "$fx/topo-offline" 0-1,4-7 1 4 1 1

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
