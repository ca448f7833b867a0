#!/usr/bin/env bash
# placed as a real systemd service, end to end ("make check-system").
#
#   tests/system/run-system-tests.sh BUILD_DIR
#
# Installs placed into this machine ("make install" staged through DESTDIR,
# then copied, so every installed file is known and removed afterwards;
# files that existed before are backed up and put back), boots systemd as
# PID 1 of a private PID + mount namespace with its own /tmp and /run (see
# docs/testing.md), and checks: the unit's sandbox rating, "systemctl start"
# reaching active through READY=1, busctl reading ActiveProfile on the
# system bus, placectl over the system bus, the bus policy and the polkit
# path refusing an unprivileged caller, "systemctl reload", SIGKILL of the
# main process running ExecStopPost (placed --restore) and the restart, the
# sandbox and the nice placed runs at as applied, and "systemctl stop" ending
# with Result=success. With Debian's real
# power-profiles-daemon started by the namespace's systemd, [daemon] follow =
# power-profiles: "powerprofilesctl set power-saver" makes ActiveProfile
# power-first within a second, a hold and "placectl profile NAME" win until
# released, and stopping the daemon keeps the last profile, saying so. Then it
# powers the namespace off and uninstalls (and puts back power-profiles-daemon's
# state file). Needs root; exits 77 without it.
set -eu
build=$(cd "${1:?usage: run-system-tests.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
skip() {
    echo "skipped: $*"
    exit 77
}
ok() { echo "ok - $*"; }

[ "$(id -u)" -eq 0 ] || skip "needs root: it installs placed and boots systemd in a namespace"
[ -x /lib/systemd/systemd ] || skip "systemd is not installed"
command -v unshare >/dev/null && command -v nsenter >/dev/null || skip "util-linux unshare/nsenter missing"
[ -x "$build/placed" ] && [ -x "$build/placectl" ] || fail "build placed and placectl first (make)"
[ -x /usr/libexec/power-profiles-daemon ] && command -v powerprofilesctl >/dev/null ||
    fail "power-profiles-daemon is not installed (make deps)"

PREFIX=/usr/local
# Debian's dbus-daemon reads /usr/share/dbus-1/system.d and /etc/dbus-1/system.d,
# not $PREFIX/share/dbus-1/system.d; polkit reads only /usr/share/polkit-1/actions.
DBUS_POLICYDIR=/etc/dbus-1/system.d
POLKIT_ACTIONSDIR=/usr/share/polkit-1/actions
work=$(mktemp -d /tmp/placed-system.XXXXXX)
stage=$work/stage
. "$src/tests/system/ns-systemd.sh"

# --- cleanup: power the namespace off, then undo the installation
installed=() # absolute paths this test created
backups=()   # "path" of files that existed before (saved in $work/backup)
created_dirs=()
# power-profiles-daemon keeps its state in the host's /var/lib (the namespace shares /var).
ppd_state=/var/lib/power-profiles-daemon
ppd_state_existed=$([ -e "$ppd_state" ] && echo yes || echo no)
cleanup() {
    local rc=$?
    set +e
    ns_poweroff
    if [ "$ppd_state_existed" = yes ]; then
        rm -rf "$ppd_state" && cp -a "$work/ppd-state" "$ppd_state"
    else
        rm -rf "$ppd_state"
    fi
    for f in "${installed[@]}"; do rm -f "$f"; done
    for f in "${backups[@]}"; do cp -a "$work/backup$f" "$f"; done
    for ((i = ${#created_dirs[@]} - 1; i >= 0; i--)); do rmdir "${created_dirs[i]}" 2>/dev/null; done
    rm -rf "$work"
    [ $rc -eq 0 ] && echo "cleaned up: namespace powered off, ${#installed[@]} installed files removed"
    exit $rc
}
trap cleanup EXIT
[ "$ppd_state_existed" = no ] || cp -a "$ppd_state" "$work/ppd-state"

# --- 1. the unit's sandbox, rated offline
sed "s|@SBINDIR@|$PREFIX/sbin|g" "$src/systemd/placed.service" >"$work/placed.service"
systemd-analyze security --offline=yes "$work/placed.service" >"$work/security" 2>&1 ||
    { cat "$work/security"; fail "systemd-analyze security failed"; }
score=$(sed -n 's/.*Overall exposure level for placed.service: \([0-9.]*\).*/\1/p' "$work/security")
[ -n "$score" ] || { cat "$work/security"; fail "no exposure level"; }
awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }' || fail "exposure level $score is above 3.0"
ok "systemd-analyze security: exposure $score (<= 3.0)"

# --- 2. make install, staged, then copied in with a record of every file
make -C "$src" --no-print-directory BUILD="$(realpath --relative-to="$src" "$build")" \
    install DESTDIR="$stage" PREFIX=$PREFIX DBUS_POLICYDIR=$DBUS_POLICYDIR >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "make install failed"; }
install -Dm644 "$src/systemd/org.placed1.policy" "$stage$POLKIT_ACTIONSDIR/org.placed1.policy"
mkdir -p "$work/backup"
while IFS= read -r d; do
    [ -d "$d" ] || { created_dirs+=("$d"); mkdir -p "$d"; }
done < <(cd "$stage" && find . -mindepth 1 -type d | sed 's|^\.||' | sort)
while IFS= read -r f; do
    if [ -e "$f" ]; then
        mkdir -p "$work/backup$(dirname "$f")"
        cp -a "$f" "$work/backup$f"
        backups+=("$f")
    else
        installed+=("$f")
    fi
    cp -a "$stage$f" "$f"
done < <(cd "$stage" && find . -type f | sed 's|^\.||')
[ -f "$DBUS_POLICYDIR/org.placed1.conf" ] || fail "the D-Bus policy was not installed in $DBUS_POLICYDIR"
ok "make install: ${#installed[@]} new files, ${#backups[@]} replaced (restored afterwards)"

# The [metrics] textfile where Debian's node_exporter reads it (the unit lets
# placed write there, and only there in /var); written on every tick.
textdir=/var/lib/prometheus/node-exporter
for d in /var/lib/prometheus $textdir; do
    [ -d "$d" ] || { created_dirs+=("$d"); mkdir -m 755 "$d"; }
done
[ ! -e $textdir/placed.prom ] || fail "$textdir/placed.prom exists already"
installed+=($textdir/placed.prom $textdir/.placed.prom.tmp /etc/placed/placed.conf.d/50-metrics-test.conf)
printf '[metrics]\ntextfile = %s/placed.prom\nevery_ticks = 1\n' $textdir \
    >/etc/placed/placed.conf.d/50-metrics-test.conf

# --- 3. systemd as PID 1 of a namespace, private /tmp and /run
ns_boot "$work/systemd.out" || { cat "$work/systemd.out"; fail "namespace systemd: '$ns_state'"; }
ok "systemd is PID 1 of a namespace ($ns_state)"

# --- 4. start: active only after READY=1 (Type=notify)
in_ns systemctl start placed || { in_ns journalctl -u placed --no-pager | tail -30; fail "systemctl start placed"; }
[ "$(in_ns systemctl is-active placed)" = active ] || fail "placed is not active"
[ "$(in_ns systemctl show -p Type --value placed)" = notify ] || fail "unit is not Type=notify"
status=$(in_ns systemctl show -p StatusText --value placed)
case $status in Profile*) ;; *) fail "no STATUS= from placed: '$status'" ;; esac
ok "systemctl start placed: active via READY=1 (status: $status)"

# --- 5. the system bus: busctl and placectl
got=$(in_ns busctl get-property org.placed1 /org/placed1 org.placed1.Manager ActiveProfile) ||
    fail "busctl cannot read ActiveProfile on the system bus"
[ "$got" = 's "balanced"' ] || fail "ActiveProfile is $got"
in_ns $PREFIX/bin/placectl status >"$work/status" || fail "placectl status over the system bus"
grep -q '^ *Profile: balanced' "$work/status" || fail "placectl status: $(cat "$work/status")"
ok "busctl reads ActiveProfile ($got); placectl status works on the system bus"

# --- 5b. the metrics: over the system bus, and the textfile through the sandbox
in_ns $PREFIX/bin/placectl metrics >"$work/metrics" || fail "placectl metrics over the system bus"
[ "$(tail -n 1 "$work/metrics")" = "# EOF" ] || fail "placectl metrics: $(tail -n 3 "$work/metrics")"
for _ in $(seq 50); do [ -s $textdir/placed.prom ] && break; sleep 0.1; done
[ -s $textdir/placed.prom ] || { in_ns journalctl -u placed --no-pager | tail -20; fail "no $textdir/placed.prom"; }
[ "$(stat -c %a $textdir/placed.prom)" = 644 ] || fail "textfile mode $(stat -c %a $textdir/placed.prom) (UMask=0077)"
grep -q '^placed_info{.*mode="enforce"' $textdir/placed.prom || fail "textfile: $(head -n 5 $textdir/placed.prom)"
if command -v promtool >/dev/null; then
    promtool check metrics <$textdir/placed.prom >"$work/promtool" 2>&1 && [ ! -s "$work/promtool" ] ||
        fail "promtool on the service's textfile: $(cat "$work/promtool")"
fi
ok "metrics: placectl metrics on the system bus; the service writes $textdir/placed.prom (0644)"

# --- 6. an unprivileged caller: reads, cannot change (bus policy + polkit)
in_ns setpriv --reuid nobody --regid nogroup --clear-groups $PREFIX/bin/placectl status >/dev/null ||
    fail "nobody cannot read the status"
rc=0
in_ns setpriv --reuid nobody --regid nogroup --clear-groups $PREFIX/bin/placectl profile power-first \
    >"$work/denied" 2>&1 || rc=$?
[ $rc -eq 4 ] || fail "nobody setting a profile: exit $rc, expected 4 ($(cat "$work/denied"))"
rc=0
in_ns setpriv --reuid nobody --regid nogroup --clear-groups busctl set-property org.placed1 \
    /org/placed1 org.placed1.Manager ActiveProfile s power-first >/dev/null 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "the bus policy let nobody call Properties.Set"
[ "$(in_ns busctl get-property org.placed1 /org/placed1 org.placed1.Manager ActiveProfile)" = 's "balanced"' ] ||
    fail "an unprivileged call changed the profile"
ok "nobody reads, is denied changes: $(sed 's/^placectl: //' "$work/denied")"
in_ns $PREFIX/bin/placectl profile latency-first ||
    fail "root cannot set the profile"
in_ns $PREFIX/bin/placectl profile balanced

# --- 7. systemctl reload (SIGHUP): RELOADING=1 ... READY=1, Reloads counts
in_ns systemctl reload placed || fail "systemctl reload placed"
[ "$(in_ns systemctl is-active placed)" = active ] || fail "not active after reload"
[ "$(in_ns busctl get-property org.placed1 /org/placed1 org.placed1.Manager Reloads)" = "t 1" ] ||
    fail "Reloads did not count the reload"
ok "systemctl reload placed: still active, Reloads = 1"

# --- 7b. follow power-profiles-daemon (Debian's, started by the namespace's systemd)
OBJ=(org.placed1 /org/placed1 org.placed1.Manager)
prop() { in_ns busctl get-property "${OBJ[@]}" "$1" 2>/dev/null; }
# wait_prop MS NAME VALUE: poll until the property reads VALUE; prints the milliseconds taken.
wait_prop() {
    local start=$((${EPOCHREALTIME/[.,]/} / 1000)) now
    while :; do
        now=$((${EPOCHREALTIME/[.,]/} / 1000))
        [ "$(prop "$2")" = "$3" ] && { echo $((now - start)); return 0; }
        [ $((now - start)) -ge "$1" ] && return 1
        sleep 0.02
    done
}
in_ns systemctl start power-profiles-daemon || fail "systemctl start power-profiles-daemon"
in_ns powerprofilesctl set balanced || fail "powerprofilesctl set balanced"
follow_conf=/etc/placed/placed.conf.d/50-system-test-follow.conf
[ -e "$follow_conf" ] && fail "$follow_conf exists already"
installed+=("$follow_conf")
printf '[daemon]\nfollow = power-profiles\n' >"$follow_conf"
in_ns systemctl reload placed || fail "systemctl reload placed (follow = power-profiles)"
# Step 6 chose balanced with placectl profile: that choice wins until --reset.
[ "$(prop ActiveProfileSource)" = 's "chosen"' ] || fail "placectl profile balanced is not a choice: $(prop ActiveProfileSource)"
in_ns $PREFIX/bin/placectl profile --reset || fail "placectl profile --reset"
wait_prop 5000 Follow '(sss) "following" "power-profiles-daemon" "balanced"' >/dev/null ||
    fail "placed does not follow power-profiles-daemon: Follow is $(prop Follow)"
[ "$(prop ActiveProfileSource)" = 's "followed"' ] || fail "source is $(prop ActiveProfileSource)"
ok "follow = power-profiles: placed follows power-profiles-daemon ($(prop Follow))"

t0=$((${EPOCHREALTIME/[.,]/} / 1000))
in_ns powerprofilesctl set power-saver || fail "powerprofilesctl set power-saver"
ms=$(wait_prop 3000 ActiveProfile 's "power-first"') || fail "ActiveProfile is $(prop ActiveProfile) 3 s after power-saver"
took=$(($((${EPOCHREALTIME/[.,]/} / 1000)) - t0))
[ "$took" -le 1000 ] || fail "powerprofilesctl set power-saver took $took ms to reach placed (limit 1000)"
in_ns $PREFIX/bin/placectl status >"$work/status" || fail "placectl status"
grep -q "Why: followed from power-profiles-daemon's \"power-saver\"" "$work/status" ||
    { cat "$work/status"; fail "placectl status does not say the profile is followed"; }
ok "powerprofilesctl set power-saver -> ActiveProfile power-first in $took ms (${ms} ms after powerprofilesctl returned); status: $(grep 'Why:' "$work/status" | sed 's/^ *//')"

# A hold wins over the followed profile until it is released.
in_ns rm -f /tmp/release-hold
in_ns $PREFIX/bin/placectl hold latency-first --reason "system test" -- \
    sh -c 'while [ ! -e /tmp/release-hold ]; do sleep 0.05; done' &
hold_pid=$!
wait_prop 5000 ActiveProfile 's "latency-first"' >/dev/null || fail "the hold did not take effect"
in_ns powerprofilesctl set balanced
wait_prop 3000 Follow '(sss) "following" "power-profiles-daemon" "balanced"' >/dev/null ||
    fail "placed did not see power-profiles-daemon go to balanced during the hold"
sleep 0.3
[ "$(prop ActiveProfile)" = 's "latency-first"' ] || fail "the followed profile overrode a hold: $(prop ActiveProfile)"
reason=$(prop ActiveProfileReason)
case $reason in *'held by placectl'*'system test'*) ;; *) fail "reason during the hold: $reason" ;; esac
in_ns touch /tmp/release-hold
wait "$hold_pid" || fail "placectl hold failed"
wait_prop 3000 ActiveProfile 's "balanced"' >/dev/null || fail "released hold: ActiveProfile $(prop ActiveProfile), expected the followed balanced"
[ "$(prop ActiveProfileSource)" = 's "followed"' ] || fail "after the hold: $(prop ActiveProfileSource)"
ok "a hold wins over the followed profile ($reason); released, placed follows again"

# placectl profile NAME wins until placectl profile --reset.
in_ns $PREFIX/bin/placectl profile latency-first || fail "placectl profile latency-first"
in_ns powerprofilesctl set power-saver
wait_prop 3000 Follow '(sss) "following" "power-profiles-daemon" "power-saver"' >/dev/null ||
    fail "placed did not see power-saver"
sleep 0.3
[ "$(prop ActiveProfile)" = 's "latency-first"' ] || fail "the followed profile overrode placectl profile"
[ "$(prop ActiveProfileSource)" = 's "chosen"' ] || fail "source is $(prop ActiveProfileSource), expected chosen"
in_ns $PREFIX/bin/placectl profile --reset || fail "placectl profile --reset"
wait_prop 3000 ActiveProfile 's "power-first"' >/dev/null || fail "--reset did not return to the followed profile"
ok "placectl profile latency-first wins over the followed profile; placectl profile --reset follows again"

# The daemon goes away: the last profile stays, and placed says so.
in_ns systemctl stop power-profiles-daemon || fail "systemctl stop power-profiles-daemon"
wait_prop 5000 Follow '(sss) "gone" "power-profiles-daemon" "power-saver"' >/dev/null ||
    fail "placed did not notice power-profiles-daemon leaving: $(prop Follow)"
[ "$(prop ActiveProfile)" = 's "power-first"' ] || fail "the profile changed when the daemon left: $(prop ActiveProfile)"
in_ns $PREFIX/bin/placectl status >"$work/status" || fail "placectl status"
grep -q 'left the bus' "$work/status" || { cat "$work/status"; fail "status does not say the daemon left"; }
in_ns journalctl -u placed --no-pager -o cat | grep -q 'power-profiles-daemon has left the bus; keeping' ||
    fail "the log does not say power-profiles-daemon left"
ok "power-profiles-daemon stopped: power-first kept; $(grep 'Follows:' "$work/status" | sed 's/^ *//')"

# --- 8. SIGKILL of the main process: ExecStopPost restores, Restart= restarts
pid1=$(in_ns systemctl show -p MainPID --value placed)
in_ns systemctl kill --signal=KILL --kill-who=main placed
for _ in $(seq 100); do
    pid2=$(in_ns systemctl show -p MainPID --value placed)
    [ "$(in_ns systemctl is-active placed)" = active ] && [ "$pid2" != "$pid1" ] && [ "$pid2" != 0 ] && break
    sleep 0.1
done
[ "$(in_ns systemctl is-active placed)" = active ] || fail "placed did not come back after SIGKILL"
echo "$(in_ns systemctl show -p ExecStopPost placed)" | grep -q 'placed --restore' ||
    fail "ExecStopPost is not placed --restore"
# The restart resets ExecStopPost's exec status; the log keeps what it said.
in_ns journalctl -u placed --no-pager -o cat >"$work/journal" 2>&1
restored='Undo journal ".*": [0-9]* entries\|nothing to restore'
grep -q "$restored" "$work/journal" || { tail -20 "$work/journal"; fail "no restore in the log"; }
[ "$(in_ns systemctl show -p NRestarts --value placed)" -ge 1 ] || fail "NRestarts did not count"
ok "SIGKILL: ExecStopPost ran placed --restore ($(grep -m1 "$restored" "$work/journal")), restarted"

# --- 9. the sandbox as applied: writable only where placed writes
mainpid=$(in_ns systemctl show -p MainPID --value placed)
mi=$(in_ns cat /proc/"$mainpid"/mountinfo)
for d in /usr /etc /var; do
    if in_ns nsenter -t "$mainpid" -m touch "$d/.placed-rw-test" 2>/dev/null; then
        in_ns rm -f "$d/.placed-rw-test"
        fail "$d is writable in placed's sandbox"
    fi
done
echo "$mi" | awk '$5 == "/sys/devices/system/cpu" { print $6 }' | grep -q '^rw' ||
    fail "/sys/devices/system/cpu is not writable for placed"
caps=$(in_ns grep CapBnd /proc/"$mainpid"/status | awk '{ print $2 }')
echo "$mi" | awk -v d=$textdir '$5 == d { print $6 }' | grep -q '^rw' ||
    fail "$textdir is not writable for placed"
ok "sandbox applied: /usr /etc /var read-only but $textdir, /sys/devices/system/cpu rw, CapBnd $caps"
# Its ticks go first: [daemon] nice, -10 as shipped, under the sandbox's
# system call filter. Field 19 of stat, after the command's ")".
got_nice=$(in_ns cat /proc/"$mainpid"/stat | sed 's/.*) //' | awk '{ print $17 }')
[ "$got_nice" = -10 ] || fail "placed runs at nice $got_nice, not [daemon] nice's -10"
! in_ns journalctl -u placed --no-pager -o cat | grep -q "Cannot run at nice" ||
    fail "placed could not take its nice: $(in_ns journalctl -u placed --no-pager -o cat | grep "Cannot run at nice")"
ok "placed runs at its [daemon] nice, -10"

# --- 10. systemctl stop: Result=success
in_ns systemctl stop placed || fail "systemctl stop placed"
result=$(in_ns systemctl show -p Result --value placed)
[ "$result" = success ] || { in_ns journalctl -u placed --no-pager | tail -20; fail "Result=$result after stop"; }
ok "systemctl stop placed: Result=success"
echo "all system checks passed"
