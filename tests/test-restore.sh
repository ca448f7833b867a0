#!/usr/bin/env bash
# The undo journal and placed's other untrusted inputs, attacked through the
# real binary (issue 11's defects; each check here failed on eb36bdd):
#   1. a journal directory owned by someone else, and links named journal,
#      lock and journal.tmp: refused with the reason, no file followed; a
#      hard link planted as the journal refused, its file untouched (issue 25);
#   2. journal keys that climb out of sysfs (pm_qos "0/../..") or name any
#      directory (cpuset): refused before anything is written;
#   4. leftover records that cannot be restored never stop placed from
#      starting; --restore names each one and why, and exits non-zero;
#   5. "placed --plan" names the topology it could not read (it printed
#      freed memory);
#   6. a newline in outside text cannot forge a log line with its own
#      priority;
#   and 40k journal records restore in well under the 14.6 s they took.
# Works on fixture trees (--sysfs-root, --procfs-root) except the --dry-run
# start, which only reads the live system.
. "$(dirname "$0")/lib/common.sh"

placed=$PLACED_BUILD/placed
profiles=$PLACED_SRC/conf/profiles
fx=$PLACED_SRC/tests/fixtures
[ "$(id -u)" -eq 0 ] || skip "needs root (directory ownership, chown to nobody)"
write_config
chmod 755 "$T"

# run_rc EXPECTED CMD...: CMD must exit EXPECTED ("nz" = non-zero); output in $T/out
run_rc() {
    local want=$1 rc=0
    shift
    "$@" >"$T/out" 2>&1 </dev/null || rc=$?
    if [ "$want" = nz ]; then
        [ $rc -ne 0 ] || { cat "$T/out"; fail "$*: exit 0, expected failure"; }
    else
        [ $rc -eq "$want" ] || { cat "$T/out"; fail "$*: exit $rc, expected $want"; }
    fi
}
said() { grep -q -- "$1" "$T/out" || { cat "$T/out"; fail "output lacks '$1'"; }; }

# A sysfs tree of two CPUs where restore may write.
mkdir -p "$T/sys-root"
cp -a "$fx/idle-vm2/sys" "$T/sys-root/sys"
[ -d "$T/sys-root/sys/devices/system/cpu/cpu0" ] || fail "fixture copy failed"
restore() { # DIR extra...
    "$placed" --restore --journal-dir "$1" --sysfs-root "$T/sys-root" \
        --procfs-root "$fx/cgroup-proc-v2" "${@:2}"
}

# --- 1. a directory owned by nobody, with links to root's files
printf 'precious\nlast line' >"$T/victim"
mkdir "$T/evil"
chown nobody "$T/evil"
setpriv --reuid nobody --regid nogroup --clear-groups ln -s "$T/victim" "$T/evil/journal"
setpriv --reuid nobody --regid nogroup --clear-groups ln -s "$T/created" "$T/evil/lock"
run_rc nz restore "$T/evil"
said "not owned"
[ "$(cat "$T/victim")" = "$(printf 'precious\nlast line')" ] || fail "the journal link's target changed"
[ ! -e "$T/created" ] || fail "a file was created at the lock link's target"
ok "a journal directory owned by nobody is refused: $(grep -m1 Refusing "$T/out" | sed 's/^<[0-9]>//')"

chown root "$T/evil"
chmod 777 "$T/evil"
run_rc nz restore "$T/evil"
said "group or others may write"
chmod 755 "$T/evil"
run_rc nz restore "$T/evil"
said "symbolic link"
[ ! -e "$T/created" ] || fail "a file was created at the lock link's target"
rm "$T/evil/lock"
run_rc nz "$placed" --foreground --dry-run --bus none --config "$T/etc/placed.conf" \
    --profiles-dir "$profiles" --journal-dir "$T/evil"
said "symbolic link"
[ "$(cat "$T/victim")" = "$(printf 'precious\nlast line')" ] || fail "--dry-run cut the link's target"
ok "links named journal and lock are never followed, --dry-run included"

# --- 1b. a hard link planted as the journal (issue 25): loading would cut the
# file's last line and restoring would empty it; it is refused, named, untouched
mkdir "$T/jlink"
ln "$T/victim" "$T/jlink/journal"
run_rc nz restore "$T/jlink"
said "\"$T/jlink/journal\" has 2 links, refusing to use it"
[ "$(cat "$T/victim")" = "$(printf 'precious\nlast line')" ] || fail "--restore changed the file linked as the journal"
run_rc nz "$placed" --foreground --dry-run --bus none --config "$T/etc/placed.conf" \
    --profiles-dir "$profiles" --journal-dir "$T/jlink"
said "\"$T/jlink/journal\" has 2 links, refusing to use it"
[ "$(cat "$T/victim")" = "$(printf 'precious\nlast line')" ] || fail "placed changed the file linked as the journal"
ok "a hard link planted as the journal is refused: $(grep -m1 'has 2 links' "$T/out" | sed 's/^<[0-9]>//')"

# --- 2. keys that climb out of where they belong
mkdir -p "$T/j2" "$T/x/power" "$T/cg/evil"
echo 0 >"$T/x/power/pm_qos_resume_latency_us"
echo 1 >"$T/cg/evil/cpuset.cpus"
climb=$(printf '../%.0s' 1 2 3 4 5 6 7 8 9 10 11 12)
printf 'ORIG\tpm_qos\t0/%s%s/x\t666\nSET\tpm_qos\t0/%s%s/x\t0\n' "$climb" "$T" "$climb" "$T" >"$T/j2/journal"
printf 'ORIG\tcpuset\t%s/cg/evil\t0\nSET\tcpuset\t%s/cg/evil\t1\n' "$T" "$T" >>"$T/j2/journal"
printf 'ORIG\tpm_qos\t0\t0\nSET\tpm_qos\t0\t5\n' >>"$T/j2/journal" # a good one
qos0=$T/sys-root/sys/devices/system/cpu/cpu0/power/pm_qos_resume_latency_us
mkdir -p "$(dirname "$qos0")"
echo 5 >"$qos0"
run_rc nz restore "$T/j2"
[ "$(cat "$T/x/power/pm_qos_resume_latency_us")" = 0 ] || fail "restore wrote through a pm_qos key with '..'"
[ "$(cat "$T/cg/evil/cpuset.cpus")" = 1 ] || fail "restore wrote a cpuset outside the cgroup mount"
[ "$(cat "$qos0")" = 0 ] || fail "the valid pm_qos record was not restored"
said "Cannot restore pm_qos \"0/../"
said "journal line 1"
said "is not a CPU this machine has"
said "Cannot restore cpuset \"$T/cg/evil\""
said "not a cgroup below a cgroup mount"
grep -q "pm_qos" "$T/j2/journal.failed" || fail "the refused records are not in journal.failed"
[ ! -s "$T/j2/journal" ] || fail "refused records stayed in the journal"
ok "keys outside sysfs and the cgroup mounts are refused and named, the good one restored"

# --- 4. unrestorable leftovers never stop a start; --restore names them
mkdir -p "$T/j4"
printf 'ORIG\tfoo\tbar\tbaz\nSET\tfoo\tbar\tqux\nORIG\taffinity\t-5:1\t0\nSET\taffinity\t-5:1\t1\n' >"$T/j4/journal"
cp "$T/j4/journal" "$T/j4.saved"
run_rc nz restore "$T/j4"
said 'Cannot restore foo "bar"'
said "no actuator knows this kind"
said 'Cannot restore affinity "-5:1"'
said "not TID:STARTTIME"
said "2 change(s) could not be restored"
cp "$T/j4.saved" "$T/j4/journal"
"$placed" --foreground --dry-run --bus none --config "$T/etc/placed.conf" \
    --profiles-dir "$profiles" --journal-dir "$T/j4" --interval-ms 100 >"$T/out" 2>&1 &
pid=$!
at_exit "kill -KILL $pid 2>/dev/null"
wait_for 10 grep -q "started" "$T/out" || { cat "$T/out"; fail "placed did not start with unrestorable leftovers"; }
kill -TERM $pid
wait $pid || fail "placed exited with $? after SIGTERM"
said 'Cannot restore foo "bar"'
ok "unrestorable leftovers are named and set aside; placed starts"

# --- linear: 40k records (all gone) restore in seconds, not minutes (about
# 0.2 s here; a restore quadratic in the records would take minutes). The
# bound is scaled like the waits on a slow machine: qemu TCG took 12-16 s.
mkdir -p "$T/jbig"
awk 'BEGIN { for (i = 0; i < 40000; i++) printf "ORIG\taffinity\t%d:1\t0-1\nSET\taffinity\t%d:1\t0\n", 4000000 + i, 4000000 + i }' >"$T/jbig/journal"
start=$(now_ms)
run_rc 0 restore "$T/jbig"
took=$(($(now_ms) - start))
said "40000 entries"
[ $took -lt $((5000 * time_scale)) ] || fail "40k records took $took ms to restore"
ok "40k records restored in $took ms"

# --- 5. --plan names the topology it could not read
sed "s|\"topology\": *\"[^\"]*\"|\"topology\": \"$T/no-such-topology\"|" \
    "$fx/snapshots/epyc-mix.json" >"$T/snap.json"
grep -q "no-such-topology" "$T/snap.json" || fail "could not point the snapshot at a missing topology"
run_rc nz "$placed" --plan --snapshot "$T/snap.json" --profiles-dir "$profiles"
said "under \"$T/no-such-topology\""
ok "--plan names the topology it could not read"

# --- 6. a newline in outside text does not forge a log line
bad=$(printf '%s/x\n<0>FAKE EMERG' "$T")
printf '[daemon]\nbroken\n' >"$bad"
run_rc nz "$placed" --foreground --bus none --config "$bad" --profiles-dir "$profiles"
if grep -q '^<0>' "$T/out"; then
    cat "$T/out"
    fail "a file name forged a log line of priority 0"
fi
said 'x\\n<0>FAKE EMERG'
ok "control characters in logged text are escaped"
