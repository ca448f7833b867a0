#!/usr/bin/env bash
# "make run": placed in the foreground from the source tree, default profile.
#
# With a system bus, placed registers org.placed1 on it. Without one (a VM
# or container where systemd is not PID 1), this starts a private bus so
# placectl still works, and prints how to reach it. Ctrl-C stops placed,
# which undoes every change it made, and the private bus.
set -eu
build=${1:-build}
[ $# -eq 0 ] || shift # the rest goes to placed
src=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) bin=$build ;; *) bin=$src/$build ;; esac
[ "$(id -u)" -eq 0 ] || echo "note: not root; placed can observe but not change other users' tasks." >&2

bus=system
placectl=$build/placectl
if [ ! -S /run/dbus/system_bus_socket ]; then
    out=$(dbus-daemon --session --fork --print-address=1 --print-pid=1)
    bus=$(echo "$out" | sed -n 1p)
    bus_pid=$(echo "$out" | sed -n 2p)
    trap 'kill $bus_pid 2>/dev/null' EXIT
    placectl="$placectl --address '$bus'"
    echo "No system bus here: placed runs on a private D-Bus. In another shell:"
else
    echo "In another shell:"
fi
# What to do next, before placed's own log: the command to run as printed,
# then the other views and how to stop.
echo "    $placectl status"
echo "  then 'groups' for the task groups, 'graph' for who wakes whom ('graph --dot' for Graphviz);"
echo "  Ctrl-C here stops placed and puts back everything it changed."

"$bin/placed" --foreground --bus "$bus" --config "$src/conf/placed.conf" \
    --profiles-dir "$src/conf/profiles" "$@" &
placed_pid=$!
# Not a trap string of commands: under set -e the first one to fail (placed
# already gone after Ctrl-C) would end the shell before the bus is stopped.
cleanup() {
    trap - INT TERM EXIT
    kill -TERM "$placed_pid" 2>/dev/null || true
    wait "$placed_pid" 2>/dev/null || true
    if [ -n "${bus_pid:-}" ]; then kill "$bus_pid" 2>/dev/null || true; fi
}
trap cleanup INT TERM EXIT
wait "$placed_pid"
