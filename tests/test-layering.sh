#!/usr/bin/env bash
# The #include graph keeps the layers: lib/ never includes a daemon/ header,
# and no two daemon/ files include each other's headers, except the manager
# and its D-Bus object (the manager publishes, the bus reads it, as in
# systemd-oomd). Fails naming each offending pair.
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
for a in sorted(edges):
    for b in sorted(edges[a]):
        if a < b and a in edges.get(b, ()) and {a, b} != {"bus", "manager"}:
            bad.append("daemon/%s and daemon/%s include each other's headers" % (a, b))
for line in bad:
    print("FAIL: " + line)
print("%d daemon modules, %d include edges checked" % (len(edges), sum(map(len, edges.values()))))
sys.exit(1 if bad else 0)
PY
ok "lib/ includes no daemon/ header; no daemon/ include cycle but manager <-> bus"
