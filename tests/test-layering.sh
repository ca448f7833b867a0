#!/usr/bin/env bash
# The #include graph keeps the layers: lib/ never includes a daemon/ header;
# the lib/ modules include each other without a cycle; and the daemon/
# modules neither, except the manager and its D-Bus object, which may
# include each other (the manager publishes, the bus reads it, as in
# systemd-oomd). A module is a file's name without its extension (NAME.c and
# NAME.h); the files that share a NAME-internal.h are the one module NAME
# (policy.c and policy-rules.c share policy-internal.h). Fails naming each
# cycle and its edges.
#
# libplaced.a exports every name under its module's prefix: a bare name
# (parse_bool, strv_clear) fails, naming the object that exports it.
. "$(dirname "$0")/lib/common.sh"
command -v python3 >/dev/null || skip "python3 is not installed"
python3 - "$PLACED_SRC" <<'PY' || fail "the layering is broken (see above)"
import os, re, sys
src = sys.argv[1]
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
def stem(p):
    return os.path.splitext(os.path.basename(p))[0]
def sources(d):
    return sorted(f for f in os.listdir(os.path.join(src, d)) if f.endswith((".c", ".h")))
def includes(d, f):
    return inc.findall(open(os.path.join(src, d, f), errors="replace").read())

# The module of each file: its stem, or X for X-internal.h and the files
# that include it. wake-source-ops.h is such a header under another name (the
# ops table only the wake sources include); it keeps its name while
# wake-source-bpf.c is being reworked.
SHARED = {"wake-source-ops": "wake-source"}
def module_map(d):
    mods = {}
    for f in sources(d):
        s = stem(f)
        if s.endswith("-internal"):
            mods[f] = s[: -len("-internal")]
        elif s in SHARED:
            mods[f] = SHARED[s]
        else:
            mods[f] = s
        for h in includes(d, f):
            if os.path.exists(os.path.join(src, d, h)):
                hs = stem(h)
                if hs.endswith("-internal") and not s.endswith("-internal"):
                    mods[f] = hs[: -len("-internal")]
                elif hs in SHARED and s not in SHARED:
                    mods[f] = SHARED[hs]
    return mods

daemon_h = {stem(f) for f in sources("daemon") if f.endswith(".h")}
bad, graphs = [], {}
for d in ("lib", "daemon"):
    mods, edges = module_map(d), {}
    for f in sources(d):
        for h in includes(d, f):
            m = stem(h)
            if d == "lib" and m in daemon_h and not os.path.exists(os.path.join(src, "lib", h)):
                bad.append("lib/%s includes the daemon header %s" % (f, h))
            if h in mods and mods[h] != mods[f]:
                edges.setdefault(mods[f], set()).add(mods[h])
    graphs[d] = edges

# Any cycle of includes between modules: the strongly connected components
# (Tarjan) of each graph; one of two modules or more fails, in daemon/
# unless it is exactly {bus, manager} (a cycle through them and a third
# module fails too).
def sccs_of(edges):
    index, low, stack, on_stack, sccs = {}, {}, [], set(), []
    def strongconnect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            sccs.append(sorted(scc))
    for v in sorted(edges):
        if v not in index:
            strongconnect(v)
    return sccs

allowed = {"lib": [], "daemon": ["bus", "manager"]}
for d, edges in graphs.items():
    for scc in sccs_of(edges):
        if len(scc) > 1 and scc != allowed[d]:
            bad.append("an include cycle among %s/ %s: %s" % (d, ", ".join(scc), "; ".join(
                "%s -> %s" % (a, b) for a in scc for b in sorted(edges.get(a, ())) if b in scc)))
for line in bad:
    print("FAIL: " + line)
for d, edges in graphs.items():
    print("%s: %d modules, %d include edges checked" % (d, len(edges), sum(map(len, edges.values()))))
sys.exit(1 if bad else 0)
PY
ok "lib/ includes no daemon/ header; no include cycle in lib/, none in daemon/ but manager <-> bus"

# The prefixes libplaced.a's names start with: a module's name or the thing
# it is about (topo_ for topology.c, u64map_ for util.c's map).
lib=$PLACED_BUILD/libplaced.a
command -v nm >/dev/null || skip "nm is not installed"
[ -f "$lib" ] || fail "$lib is not built"
nm -A -g --defined-only "$lib" >"$T/nm" || fail "nm could not read $lib"
prefixes='act_|actuator_|actuators_|affinity_result_|array_grow$|config_|cpuset_|cpustat_|'
prefixes+='energy_|fileio_|follow_|group_|idle_|ini_line_|journal_|kernel_feature|metrics_|news_|'
prefixes+='pair_placement_|pid_ns_|placed_bus_|plan_|policy_|proc_events_|profile_|'
prefixes+='read_small_file|restore_|rule_|rules_|slice_backend_|spread_placement_|task_|tick_|topo_|'
prefixes+='trial_arm_|trial_back_|trial_measure_|trial_verdict_|u64map_|wake_'
# "LIB:OBJECT.o:ADDRESS T NAME" -> "OBJECT.o NAME"; names with "__" in front
# are the toolchain's (ASan's __odr_asan.NAME beside each global).
awk 'NF == 3 && $3 !~ /^__/ { n = split($1, p, ":"); print p[n - 1], $3 }' "$T/nm" |
    grep -Ev " ($prefixes)" >"$T/bare" || true
if [ -s "$T/bare" ]; then
    sed 's/^/FAIL: exported without a module prefix: /' "$T/bare"
    fail "libplaced.a exports bare names"
fi
ok "libplaced.a exports $(awk 'NF == 3 && $3 !~ /^__/' "$T/nm" | wc -l) names, each under a module's prefix"
