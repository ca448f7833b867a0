#!/usr/bin/env bash
# The Debian package, checked as a Debian user meets it ("make check-package").
#
#   tests/system/check-package.sh DEB_DIR
#
# DEB_DIR holds what "make deb" built (placed_VERSION_ARCH.deb, the source
# package and the .changes); under /tmp, which the namespace does not see,
# it is copied to /var/tmp first.
#   1. lintian on the .changes (source and binary) and the .deb: no error, no
#      warning; the files sit where Debian puts them, /etc/placed/placed.conf
#      is a conffile;
#   2. the same tree rebuilt as VERSION+upgradetest1 (a changelog entry in a
#      copy), for the upgrade;
#   3. systemd boots as PID 1 of a private namespace (ns-systemd.sh), a pipe
#      pair runs in it;
#   4. "apt-get install ./placed_*.deb": enabled, active, placectl status
#      works over the system bus, an unprivileged caller is refused a change
#      (the packaged bus policy and polkit actions), placed packs the pair
#      (inside the namespace's PID namespace, as in a container);
#   5. the upgrade: the service restarted (new MainPID and start time), the
#      old one restored what it changed (ExecStopPost), it runs the new version;
#   6. "apt-get remove": stopped, the pair has all CPUs again, /run/placed is
#      gone, the conffile stays; 7. "apt-get purge": /etc/placed is gone, and
#      so is every trace of the unit (enablement, mask).
# After each step no idle value (PM QoS, idle-state disable) is left changed.
# At the end the host must be as it was: the same files in the places a
# package and its unit touch. The package is purged on failure too (trap).
# Needs root; run under the shared lock (flock /tmp/placed-live.lock): it
# installs into the system and boots a namespace systemd.
set -eu
debdir=$(cd "${1:?usage: check-package.sh DEB_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/system/ns-systemd.sh"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
skip() {
    echo "skipped: $*"
    exit 77
}
ok() { echo "ok - $* [${SECONDS}s]"; }

[ "$(id -u)" -eq 0 ] || skip "needs root: it installs the package and boots systemd in a namespace"
[ -x /lib/systemd/systemd ] || skip "systemd is not installed"
for tool in apt-get dpkg-buildpackage dh lintian unshare nsenter perf; do
    command -v "$tool" >/dev/null || fail "$tool is missing: run make deps"
done
staged=
case $debdir in /tmp | /tmp/*)
    # The namespace has a /tmp of its own: it installs from a copy it sees.
    staged=$(mktemp -d /var/tmp/placed-package-debs.XXXXXX)
    find "$debdir" -maxdepth 1 -type f -exec cp -a {} "$staged/" \;
    debdir=$staged
    ;;
esac

debs=("$debdir"/placed_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "expected one placed_*.deb in $debdir (make deb)"
deb=${debs[0]}
changes=$(ls "$debdir"/placed_*.changes 2>/dev/null) || fail "no .changes in $debdir (make deb)"
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)

# The host must not have placed already: this test installs and purges it.
# A "make install" into /usr/local would also shadow the packaged unit.
for f in /etc/placed /usr/local/lib/systemd/system/placed.service /etc/systemd/system/placed.service; do
    [ ! -e "$f" ] || fail "$f exists: this test installs and purges placed; remove that installation first"
done
if dpkg-query -W -f='${Status}' placed 2>/dev/null | grep -qv 'not-installed'; then
    fail "the placed package is installed ($(dpkg-query -W -f='${Version} ${Status}' placed)): purge it first"
fi

work=$(mktemp -d /tmp/placed-package.XXXXXX)
upgrade_dir=$debdir/upgrade
pair=

# What a package and its unit may touch on the host: compared at the end.
host_state() {
    find /etc/placed /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled \
        /var/lib/systemd/deb-systemd-helper-masked /usr/share/placed /usr/sbin/placed \
        /usr/bin/placectl /lib/systemd/system/placed.service /usr/share/dbus-1/system.d \
        /usr/share/polkit-1/actions /usr/share/doc/placed /run/placed \
        -printf '%p %y %l\n' 2>/dev/null | sort
    # The namespace's journal is its own (ns-systemd.sh): the host's stays as it was.
    find /var/log/journal -printf '%p %y %s %T@\n' 2>/dev/null | sort
    dpkg-query -W -f='${Package} ${Status}\n' placed 2>/dev/null || true
}
# Every value the idle actuator may write (global: /sys is the host's).
idle_values() {
    local f
    for f in /sys/devices/system/cpu/cpu[0-9]*/power/pm_qos_resume_latency_us \
        /sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*/disable; do
        [ -e "$f" ] && echo "$f $(cat "$f")"
    done
    return 0
}
host_state >"$work/host.before"
idle_values >"$work/idle.before"

cleanup() {
    local rc=$?
    set +e
    # Purge first, inside the namespace while its systemd runs, so that the
    # service is stopped and restores what it changed.
    if dpkg-query -W -f='${Status}' placed 2>/dev/null | grep -qv 'not-installed'; then
        echo "cleanup: purging the placed package" >&2
        if [ -n "$ns_sdpid" ] && kill -0 "$ns_sdpid" 2>/dev/null; then
            in_ns env DEBIAN_FRONTEND=noninteractive dpkg --purge placed >"$work/cleanup-purge.log" 2>&1
        else
            DEBIAN_FRONTEND=noninteractive dpkg --purge placed >"$work/cleanup-purge.log" 2>&1
        fi
    fi
    [ -n "$pair" ] && in_ns kill -KILL -- "-$pair" 2>/dev/null
    ns_poweroff
    rm -rf "$upgrade_dir"
    [ -n "$staged" ] && rm -rf "$staged"
    if [ $rc -eq 0 ]; then
        host_state >"$work/host.after"
        if ! diff -u "$work/host.before" "$work/host.after" >"$work/host.diff"; then
            cat "$work/host.diff" >&2
            echo "FAIL: the host is not as it was" >&2
            rc=1
        fi
        [ "$(idle_values)" = "$(cat "$work/idle.before")" ] ||
            { echo "FAIL: idle values left changed" >&2; rc=1; }
    fi
    rm -rf "$work"
    [ $rc -eq 0 ] && echo "cleaned up: namespace powered off, host as it was [${SECONDS}s]"
    exit $rc
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# idle_unchanged STEP: fail if an idle value differs from the start.
idle_unchanged() {
    idle_values >"$work/idle.now"
    diff "$work/idle.before" "$work/idle.now" >&2 || fail "$1: idle values left changed"
}

# --- 1. lintian, and where the files sit
grep -q " placed_$version\.dsc\$" "$changes" ||
    fail "$(basename "$changes") lacks the source package: lintian would not check debian/"
lintian --fail-on error,warning --no-tag-display-limit "$changes" "$deb" >"$work/lintian" 2>&1 ||
    { cat "$work/lintian"; fail "lintian reports errors or warnings"; }
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$work/contents"
for f in /usr/sbin/placed /usr/bin/placectl /lib/systemd/system/placed.service \
    /usr/share/dbus-1/system.d/org.placed1.conf /usr/share/polkit-1/actions/org.placed1.policy \
    /usr/share/placed/profiles/balanced.conf /usr/share/placed/profiles/power-first.conf \
    /usr/share/placed/profiles/latency-first.conf /etc/placed/placed.conf \
    /etc/placed/rules.d/example.conf \
    /usr/share/man/man8/placed.8.gz /usr/share/man/man1/placectl.1.gz \
    /usr/share/man/man5/placed.conf.5.gz /usr/share/doc/placed/copyright; do
    grep -qx "$f" "$work/contents" || fail "the package lacks $f"
done
! grep -q '^/usr/local' "$work/contents" || fail "the package ships files in /usr/local"
dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles >"$work/conffiles"
[ "$(sort "$work/conffiles" | paste -sd ' ')" = "/etc/placed/placed.conf /etc/placed/rules.d/example.conf" ] ||
    fail "conffiles is '$(cat "$work/conffiles")', expected /etc/placed/placed.conf and /etc/placed/rules.d/example.conf"
depends=$(dpkg-deb -f "$deb" Depends)
case $depends in *libbpf*libsystemd*) ;; *) fail "Depends lacks the shared libraries (shlibs): $depends" ;; esac
ok "lintian: no errors, no warnings ($(grep -c . "$work/lintian" || true) info lines); files in Debian's places, placed.conf a conffile"

# --- 2. the same tree as a newer version, for the upgrade
new_version=$version+upgradetest1
mkdir "$work/src"
(cd "$src" && tar -cf - --exclude=./.git --exclude='./build*' --exclude=./debian/placed \
    --exclude=./debian/.debhelper .) | tar -C "$work/src" -xf -
{
    printf 'placed (%s) unstable; urgency=medium\n\n' "$new_version"
    printf '  * Rebuild to test the upgrade path.\n\n'
    printf ' -- placed tests <tests@localhost>  %s\n\n' "$(date -R)"
    cat "$src/debian/changelog"
} >"$work/src/debian/changelog"
DEB_BUILD_OPTIONS=nocheck make -C "$work/src" --no-print-directory deb DEB_OUT="$upgrade_dir" \
    >"$work/upgrade-build.log" 2>&1 || { cat "$work/upgrade-build.log"; fail "building $new_version failed"; }
new_deb=$upgrade_dir/placed_${new_version}_$arch.deb
[ -f "$new_deb" ] || fail "no $new_deb after the rebuild"
ok "rebuilt as $new_version"

# --- 3. systemd in a namespace, and a pipe pair for placed to pack
ns_boot "$work/systemd.out" || { cat "$work/systemd.out"; fail "namespace systemd: '$ns_state'"; }
ok "systemd is PID 1 of a namespace ($ns_state)"
all=$(cat /sys/devices/system/cpu/online)
pair=$(in_ns sh -c 'setsid perf bench sched pipe -l 1000000000 </dev/null >/dev/null 2>&1 & echo $!')
in_ns_allowed() { in_ns awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true; }
pair_child=
for _ in $(seq 50); do
    pair_child=$(in_ns pgrep -P "$pair" | head -n 1 || true)
    [ -n "$pair_child" ] && break
    sleep 0.1
done
[ -n "$pair_child" ] || fail "perf bench sched pipe did not fork its partner"
pair_affinity() { echo "$(in_ns_allowed "$pair") $(in_ns_allowed "$pair_child")"; }
[ "$(pair_affinity)" = "$all $all" ] || fail "the pair does not start on all CPUs: $(pair_affinity)"
# restored WHAT: the pair has all CPUs, and no idle value is changed.
restored() {
    [ "$(pair_affinity)" = "$all $all" ] || fail "$1: the pair has $(pair_affinity), expected $all $all"
    idle_unchanged "$1"
}
apt_ns() {
    in_ns env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 -y \
        --no-install-recommends "$@"
}
unit() { in_ns systemctl show -p "$1" --value placed; }
# log_count PATTERN: lines of placed's log (this boot of the namespace) matching PATTERN.
log_count() { in_ns journalctl -u placed --no-pager -o cat | grep -c "$1" || true; }
placing_pair='^Placing pair group [0-9]* (2 tasks, first sched-pipe/'
# placed_pair_within SECONDS BEFORE: placed's log tells of more than BEFORE
# placements of the pipe pair within SECONDS (its ticks are 1 s).
placed_pair_within() {
    for _ in $(seq $(($1 * 10))); do
        [ "$(log_count "$placing_pair")" -gt "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# --- 4. install
apt_ns install "$deb" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "apt-get install $deb"; }
[ "$(dpkg-query -W -f='${Version} ${Status}' placed)" = "$version install ok installed" ] ||
    fail "after install: $(dpkg-query -W -f='${Version} ${Status}' placed)"
[ "$(in_ns systemctl is-enabled placed)" = enabled ] || fail "installing did not enable placed"
[ "$(in_ns systemctl is-active placed)" = active ] ||
    { in_ns journalctl -u placed --no-pager | tail -20; fail "installing did not start placed"; }
[ "$(unit FragmentPath)" = /lib/systemd/system/placed.service ] || fail "the unit runs from $(unit FragmentPath)"
in_ns placectl status >"$work/status" 2>&1 || { cat "$work/status"; fail "placectl status"; }
grep -q '^ *Profile: balanced' "$work/status" || fail "placectl status: $(cat "$work/status")"
# The packaged bus policy and polkit actions: anyone reads, nobody else changes.
in_ns setpriv --reuid nobody --regid nogroup --clear-groups placectl status >/dev/null ||
    fail "nobody cannot read the status through the packaged bus policy"
rc=0
in_ns setpriv --reuid nobody --regid nogroup --clear-groups placectl profile power-first \
    >"$work/denied" 2>&1 || rc=$?
[ $rc -eq 4 ] || fail "nobody setting a profile: exit $rc, expected 4 (denied): $(cat "$work/denied")"
# The package's version (debian/changelog) is the program's (VERSION in the Makefile).
[ "$(in_ns placed --version)" = "placed ${version%%[-+~]*}" ] ||
    fail "placed --version says '$(in_ns placed --version)', the package is $version"
# placed runs in a PID namespace here, as in a container: its samplers report
# the namespace's TIDs (README), so it finds the pair and places it. Whether
# it keeps it packed is the trial's verdict (where the kernel already runs the
# pair as fast, it hands it back), so what is checked is that it placed it,
# and below that whatever it changed is put back.
placed_pair_within 20 0 ||
    { in_ns journalctl -u placed --no-pager -o cat | tail -20; fail "install: placed did not place the pair within 20 s: $(pair_affinity)"; }
what="placed the pair: $(in_ns journalctl -u placed --no-pager -o cat | grep "$placing_pair" | tail -n 1)"
pid1=$(unit MainPID)
start1=$(unit ExecMainStartTimestampMonotonic)
ok "apt-get install ./$(basename "$deb"): enabled, active (MainPID $pid1), placectl status works, nobody is denied changes; $what"

# --- 5. upgrade: dh_installsystemd restarts the service
stop_post='^Undo journal ".*": [0-9]* entries\|^No undo journal .*nothing to restore'
posts_before=$(log_count "$stop_post")
placings_before=$(log_count "$placing_pair")
apt_ns install "$new_deb" >"$work/upgrade.log" 2>&1 || { cat "$work/upgrade.log"; fail "apt-get install $new_deb"; }
[ "$(dpkg-query -W -f='${Version} ${Status}' placed)" = "$new_version install ok installed" ] ||
    fail "after the upgrade: $(dpkg-query -W -f='${Version} ${Status}' placed)"
[ "$(in_ns systemctl is-active placed)" = active ] || fail "placed is not active after the upgrade"
pid2=$(unit MainPID)
start2=$(unit ExecMainStartTimestampMonotonic)
[ "$pid2" != "$pid1" ] && [ "$start2" -gt "$start1" ] ||
    fail "the upgrade did not restart placed (MainPID $pid1 -> $pid2, start $start1 -> $start2)"
# The old placed put back what it held as it stopped, so ExecStopPost found
# nothing left in the journal to replay.
[ "$(log_count "$stop_post")" -gt "$posts_before" ] ||
    { in_ns journalctl -u placed --no-pager -o cat | tail -20; fail "ExecStopPost (placed --restore) did not run on the upgrade"; }
in_ns journalctl -u placed --no-pager -o cat | grep "$stop_post" | tail -n 1 | grep -q ': 0 entries\|nothing to restore' ||
    { in_ns journalctl -u placed --no-pager -o cat | tail -20; fail "the old placed left changes for ExecStopPost to restore"; }
in_ns placectl status >"$work/status" 2>&1 || { cat "$work/status"; fail "placectl status after the upgrade"; }
placed_pair_within 20 "$placings_before" ||
    { in_ns journalctl -u placed --no-pager -o cat | tail -20; fail "upgrade: the new placed did not place the pair again: $(pair_affinity)"; }
ok "upgrade to $new_version: restarted (MainPID $pid1 -> $pid2); ExecStopPost: $(in_ns journalctl -u placed --no-pager -o cat | grep "$stop_post" | tail -n 1)"

# --- 6. remove: stopped, everything restored, configuration kept
apt_ns remove placed >"$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "apt-get remove placed"; }
[ "$(dpkg-query -W -f='${Status}' placed)" = "deinstall ok config-files" ] ||
    fail "after remove: $(dpkg-query -W -f='${Status}' placed)"
state=$(in_ns systemctl is-active placed || true)
[ "$state" = inactive ] || fail "placed is '$state' after remove"
in_ns test ! -e /run/placed || fail "/run/placed is left after remove: $(in_ns ls -la /run/placed)"
[ ! -e /usr/sbin/placed ] && [ ! -e /lib/systemd/system/placed.service ] || fail "remove left the binaries or the unit"
[ -f /etc/placed/placed.conf ] || fail "remove deleted the conffile /etc/placed/placed.conf"
restored "remove"
ok "apt-get remove placed: stopped, /run/placed gone, pair on $all, idle values as before, conffile kept"

# --- 7. purge: the configuration and the unit's traces go too
apt_ns purge placed >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "apt-get purge placed"; }
! dpkg-query -W -f='${Status}' placed 2>/dev/null | grep -qv 'not-installed' ||
    fail "after purge: $(dpkg-query -W -f='${Status}' placed)"
[ ! -e /etc/placed ] || fail "/etc/placed is left after purge: $(find /etc/placed)"
left=$(find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled \
    /var/lib/systemd/deb-systemd-helper-masked -name 'placed.service*' 2>/dev/null || true)
[ -z "$left" ] || fail "purge left unit traces: $left"
restored "purge"
ok "apt-get purge placed: /etc/placed gone, no enablement or mask left"
echo "all package checks passed"
