#!/usr/bin/env bash
# The offline planner: "placed --plan" on a snapshot of the model, for a
# machine we do not have (2-socket EPYC, 16 LLCs), per profile; it is
# deterministic, keeps every mask inside the machine, and refuses bad input
# naming what was wrong.
. "$(dirname "$0")/lib/common.sh"

placed=$PLACED_BUILD/placed
fx=$PLACED_SRC/tests/fixtures
snap=$fx/snapshots/epyc-mix.json
plan() { # PROFILE
    "$placed" --plan --snapshot "$snap" --sysfs-root "$fx/topo-epyc2s" \
        --profiles-dir "$PLACED_SRC/conf/profiles" --profile "$1"
}

for profile in power-first balanced latency-first; do
    plan $profile >"$T/$profile.json" || fail "--plan with $profile failed"
    plan $profile >"$T/$profile.again.json"
    cmp -s "$T/$profile.json" "$T/$profile.again.json" || fail "$profile: the same input gave two plans"
done
ok "three profiles planned, each deterministic"

python3 - "$T" "$PLACED_BUILD/placed" "$fx/topo-epyc2s" <<'PY' || fail "plan checks failed"
import json, subprocess, sys
T, placed, root = sys.argv[1:]
topo = json.loads(subprocess.run([placed, "--dump-topology", "--sysfs-root", root],
                                 capture_output=True, text=True, check=True).stdout)

def cpus(s):
    out = set()
    for part in filter(None, s.split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out

online = cpus(topo["online"])
llc_of = {c: l["id"] for l in topo["llcs"] for c in cpus(l["cpus"])}
plans = {p: json.load(open("%s/%s.json" % (T, p))) for p in ("power-first", "balanced", "latency-first")}

for name, plan in plans.items():
    groups = {g["id"]: g for g in plan["groups"]}
    for g in plan["groups"]:
        if g["managed"]:
            c = cpus(g["cpus"])
            assert c and c <= online, (name, g)
    # the lockstep pair is packed: one CPU, or one core's SMT siblings under latency-first
    pair = cpus(groups[1]["cpus"])
    assert groups[1]["managed"], (name, groups[1])
    if name == "latency-first":
        assert len(pair) <= 2 and len({llc_of[c] for c in pair}) == 1, (name, pair)
    else:
        assert len(pair) == 1, (name, pair)
    # each 40-task mesh has one home LLC
    for gid in (2, 3):
        assert len({llc_of[c] for c in cpus(groups[gid]["cpus"])}) == 1, (name, groups[gid])
    print("ok - %s: pair on %s, meshes on LLCs %s and %s, fanout on %d LLCs" % (
        name, groups[1]["cpus"], llc_of[min(cpus(groups[2]["cpus"]))],
        llc_of[min(cpus(groups[3]["cpus"]))], len({llc_of[c] for c in cpus(groups[4]["cpus"])})))

# balanced and latency-first give the two meshes distinct homes; power-first packs
b = {g["id"]: g for g in plans["balanced"]["groups"]}
assert {llc_of[c] for c in cpus(b[2]["cpus"])} != {llc_of[c] for c in cpus(b[3]["cpus"])}
pf = {g["id"]: g for g in plans["power-first"]["groups"]}
used_pf = {llc_of[c] for g in pf.values() if g["managed"] for c in cpus(g["cpus"])}
used_b = {llc_of[c] for g in b.values() if g["managed"] for c in cpus(g["cpus"])}
assert len(used_pf) <= len(used_b), (used_pf, used_b)
print("ok - meshes homed apart under balanced; power-first uses %d LLCs, balanced %d" % (len(used_pf), len(used_b)))
PY

# Bad input is refused, naming what was wrong.
echo '{"groups": [' >"$T/broken.json"
set +e
"$placed" --plan --snapshot "$T/broken.json" --sysfs-root "$fx/topo-epyc2s" --profiles-dir "$PLACED_SRC/conf/profiles" >"$T/out" 2>&1
rc=$?
"$placed" --plan --snapshot "$T/missing.json" >"$T/out2" 2>&1
rc2=$?
plan no-such-profile >"$T/out3" 2>&1
rc3=$?
set -e
[ $rc -ne 0 ] && grep -q "broken.json" "$T/out" || fail "a broken snapshot was not refused by name: $(cat "$T/out")"
[ $rc2 -ne 0 ] && grep -q "missing.json" "$T/out2" || fail "a missing snapshot was not refused by name"
[ $rc3 -ne 0 ] && grep -q "no-such-profile" "$T/out3" || fail "an unknown profile was not refused by name"
ok "broken or missing snapshot and unknown profile refused by name"
