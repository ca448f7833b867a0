#!/usr/bin/env bash
# The #include graph keeps the layers: lib/ never includes a daemon/ header,
# and the daemon/ modules (NAME.c and NAME.h) include each other without a
# cycle, of two modules or more, except the manager and its D-Bus object,
# which may include each other (the manager publishes, the bus reads it, as
# in systemd-oomd). Fails naming each cycle and its edges.
. "$(dirname "$0")/lib/common.sh"
command -v python3 >/dev/null || skip "python3 is not installed"
python3 - "$PLACED_SRC" <<'PY' || fail "the layering is broken (see above)"
import os, re, sys
src = sys.argv[1]
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
def mod(p):
    return os.path.splitext(os.path.basename(p))[0]
daemon_h = {mod(f) for f in os.listdir(os.path.join(src, "daemon")) if f.endswith(".h")}
edges, bad = {}, []
for d in ("lib", "daemon"):
    for f in sorted(os.listdir(os.path.join(src, d))):
        if not f.endswith((".c", ".h")):
            continue
        for h in inc.findall(open(os.path.join(src, d, f), errors="replace").read()):
            m = mod(h)
            if d == "lib" and m in daemon_h and not os.path.exists(os.path.join(src, "lib", h)):
                bad.append("lib/%s includes the daemon header %s" % (f, h))
            if d == "daemon" and m in daemon_h and m != mod(f):
                edges.setdefault(mod(f), set()).add(m)
# Any cycle of includes between daemon modules but the one allowed pair: the
# strongly connected components (Tarjan) of the graph; one of two modules or
# more fails unless it is exactly {bus, manager} (a cycle through them and a
# third module fails too).
allowed = ["bus", "manager"]
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
for scc in sccs:
    if len(scc) > 1 and scc != allowed:
        bad.append("an include cycle among daemon/ %s: %s" % (
            ", ".join(scc), "; ".join("%s -> %s" % (a, b) for a in scc for b in sorted(edges.get(a, ())) if b in scc)))
for line in bad:
    print("FAIL: " + line)
print("%d daemon modules, %d include edges checked" % (len(edges), sum(map(len, edges.values()))))
sys.exit(1 if bad else 0)
PY
ok "lib/ includes no daemon/ header; no daemon/ include cycle but manager <-> bus"
