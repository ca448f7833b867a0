#!/usr/bin/env bash
# placed inside a PID namespace (a container: unshare --pid --fork
# --mount-proc), a lockstep pipe pair (perf bench sched pipe) beside it in
# the same namespace. The BPF sampler sees the kernel's global TIDs, /proc
# there shows the namespace's: the task iterator must report the latter, or
# no wakeup matches a task and no group forms. placed runs with --dry-run
# (it changes nothing) and must say it would place the pair, naming a TID
# that is a sched-pipe process in the namespace's /proc.
. "$(dirname "$0")/lib/common.sh"

need_root
command -v perf >/dev/null || skip "perf (linux-perf) is not installed"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
[ "$(nproc --all)" -ge 2 ] || skip "needs at least 2 CPUs to place a pair"
placed_bin=$PLACED_BUILD/placed
printf '[daemon]\njournal_dir = %s\n' "$T/journal" >"$T/placed.conf"

# Runs in the namespace: placed and the pair, until placed would place the
# pair (or 10 s). Prints "found LINE", "comm TID COMM" or "missing".
cat >"$T/inside.sh" <<'EOF'
set -u
[ "$$" = 1 ] || { echo "not pid 1 of a new namespace: $$"; exit 1; }
"$1" --foreground --dry-run --bus none --interval-ms 200 --log-level debug \
    --config "$2/placed.conf" --profiles-dir "$3" --journal-dir "$2/journal" \
    >"$2/placed.log" 2>&1 &
placed=$!
perf bench sched pipe -l 100000000 >/dev/null 2>&1 &
pair=$!
line=
for _ in $(seq $((200 * $4))); do
    line=$(grep -m1 -E 'Would place pair group .*sched-pipe' "$2/placed.log") && break
    kill -0 "$placed" 2>/dev/null || break
    sleep 0.05
done
if [ -n "$line" ]; then
    echo "found $line"
    tid=$(echo "$line" | sed -nE 's/.*first sched-pipe\/([0-9]+).*/\1/p')
    echo "comm ${tid:-?} $(cat "/proc/${tid:-0}/comm" 2>/dev/null || echo none)"
else
    echo missing
fi
kill "$pair" "$placed" 2>/dev/null
wait
EOF

unshare --pid --fork --mount-proc bash "$T/inside.sh" "$placed_bin" "$T" \
    "${PLACED_PROFILES_DIR:-$PLACED_SRC/conf/profiles}" "$time_scale" >"$T/out" 2>&1 ||
    fail "the namespace's script failed: $(cat "$T/out")"
if grep -q 'No wake sampler' "$T/placed.log"; then
    skip "placed has no wake sampler here: $(grep -m1 'No wake sampler' "$T/placed.log")"
fi
grep -q '^found ' "$T/out" || {
    grep -v '^Task ' "$T/placed.log" | tail -n 20 >&2
    fail "placed in a PID namespace did not find the pipe pair: $(cat "$T/out")"
}
grep -Eq '^comm [0-9]+ sched-pipe$' "$T/out" ||
    fail "the pair's TID is not a sched-pipe process in the namespace: $(cat "$T/out")"
ok "in a PID namespace: $(sed -n 's/^found .*\(Would place pair group [^:]*\).*/\1/p' "$T/out")" \
    "($(grep '^comm' "$T/out"))"
