#!/usr/bin/env bash
# make check-pidns: the live tests (names ending in -live) and those that
# start placed (daemon, D-Bus, restore, follow, metrics, make run), run by
# tests/run-tests.sh as PID 1 of a new PID namespace with its own /proc
# (unshare --pid --fork --mount-proc): a container's view. There the perf
# sampler must map the wakees' global PIDs (lib/wake-source-perf.c), PID 1
# is the namespace's init, no kernel thread is visible, and the proc
# connector is refused. Ends with one line, "pidns: N passed, N failed, N
# skipped", and fails on any failure. A test that skips because of the
# namespace says so (its skip line names the PID namespace).
#
#   tests/run-pidns.sh BUILD_DIR
set -u
build=${1:?usage: run-pidns.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" != 0 ]; then
    echo "pidns: skipped: needs root (a PID namespace and the live tests)"
    exit 0
fi
command -v unshare >/dev/null || { echo "pidns: unshare (util-linux) is not installed" >&2; exit 1; }

out=$(mktemp /tmp/placed-pidns.XXXXXX)
trap 'rm -f "$out"' EXIT
unshare --pid --fork --mount-proc "$here/run-tests.sh" "$build" \
    -live test-daemon.sh test-dbus test-restore.sh test-follow.sh test-metrics.sh test-run-dev.sh |
    tee "$out"
rc=${PIPESTATUS[0]}
summary=$(tail -n 1 "$out")
case $summary in
*passed*failed*skipped) ;;
*)
    echo "pidns: run-tests.sh ended without its summary (exit $rc)"
    exit 1
    ;;
esac
echo "pidns: $summary"
[ "$rc" -eq 0 ]
