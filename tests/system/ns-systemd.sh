# shellcheck shell=bash
# systemd as PID 1 of a private PID + mount namespace, for the system tests
# (run-system-tests.sh, check-package.sh). Source it; it defines:
#
#   ns_boot LOG      boot systemd (its console output in LOG); sets ns_sdpid
#                    (systemd's pid on the host) and ns_state ("running" or
#                    "degraded"); returns 1, with ns_state saying why, if it
#                    does not come up
#   in_ns CMD...     run CMD inside the namespace (its /run, /tmp and /proc)
#   ns_poweroff      power the namespace off (killed after 10 s); a no-op
#                    when it is not running: call it from an EXIT trap
#
# The namespace gets its own /tmp (systemd-tmpfiles would empty the host's)
# and /run, and its own /var/log/journal where the host keeps a persistent
# journal (so the namespace's journal shows this boot only and is gone at
# power-off); /usr, /etc, the rest of /var and the cgroups are the host's
# (docs/testing.md).
# Files under the host's /tmp are not visible inside.
#
# Where a container image ships /usr/sbin/policy-rc.d to forbid starting
# services (Docker's "exit 101"), the namespace hides it behind /dev/null (not
# executable, so deb-systemd-invoke and invoke-rc.d see no policy): the
# namespace is a booted machine, and a package installed in it starts its
# services as on one. The host's file is untouched.

ns_sdpid=
ns_unshare_pid=
ns_state=

in_ns() { nsenter -t "$ns_sdpid" -m -p "$@"; }

ns_boot() {
    local log=$1 _
    unshare --pid --fork --mount --mount-proc --propagation private \
        sh -c 'mount -t tmpfs tmpfs /tmp && mount -t tmpfs -o mode=755 tmpfs /run &&
               if [ -f /usr/sbin/policy-rc.d ]; then mount --bind /dev/null /usr/sbin/policy-rc.d; fi &&
               if [ -d /var/log/journal ]; then mount -t tmpfs -o mode=2755 tmpfs /var/log/journal; fi &&
               exec env container=other /lib/systemd/systemd --system --unit=multi-user.target' \
        >"$log" 2>&1 &
    ns_unshare_pid=$!
    for _ in $(seq 100); do
        ns_sdpid=$(pgrep -P "$ns_unshare_pid" || true)
        [ -n "$ns_sdpid" ] && break
        sleep 0.1
    done
    if [ -z "$ns_sdpid" ]; then
        ns_state="systemd did not start in the namespace"
        return 1
    fi
    # systemctl needs /run/systemd/private inside; the first boot after
    # systemd was installed can take a minute.
    for _ in $(seq 100); do
        in_ns test -S /run/systemd/private 2>/dev/null && break
        sleep 0.1
    done
    ns_state=$(timeout 120 nsenter -t "$ns_sdpid" -m -p systemctl is-system-running --wait 2>&1 || true)
    case $ns_state in
    running | degraded) return 0 ;;
    *) return 1 ;;
    esac
}

ns_poweroff() {
    local _
    if [ -n "$ns_sdpid" ] && kill -0 "$ns_sdpid" 2>/dev/null; then
        in_ns systemctl poweroff >/dev/null 2>&1 || true
        for _ in $(seq 100); do
            kill -0 "$ns_sdpid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$ns_sdpid" 2>/dev/null || true
    fi
    if [ -n "$ns_unshare_pid" ]; then
        wait "$ns_unshare_pid" 2>/dev/null || true
    fi
    ns_sdpid=
    ns_unshare_pid=
    return 0
}
