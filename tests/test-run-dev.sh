#!/usr/bin/env bash
# The README's front door: "make run" (daemon/run-dev.sh) starts placed in the
# foreground with the shipped configuration; where no system bus runs it
# starts a private one and prints the placectl line that reaches it; Ctrl-C
# (SIGINT to the foreground process group) stops placed cleanly and the bus.
. "$(dirname "$0")/lib/common.sh"

command -v dbus-daemon >/dev/null || skip "dbus-daemon is not installed"
[ ! -S /run/dbus/system_bus_socket ] ||
    skip "a system bus runs here: run-dev.sh uses it (covered by make check-system)"

run_dev_start
pid=$run_dev_pid
grep -q 'profile balanced, enforce mode' "$T/run.log" || fail "not the default profile: $(cat "$T/run.log")"

# The printed command, run as printed, reaches placed.
cmd=$(sed -n 's/^    \(.*placectl --address .* status\)$/\1/p' "$T/run.log")
[ -n "$cmd" ] || fail "run-dev.sh printed no placectl line: $(cat "$T/run.log")"
(cd "$PLACED_SRC" && eval "$cmd") >"$T/status" 2>&1 || fail "'$cmd' failed: $(cat "$T/status")"
grep -q 'balanced' "$T/status" || fail "status does not show the profile: $(cat "$T/status")"
ok "make run: placed started with profile balanced; the printed '${cmd%% --address*} --address ... status' works"

addr=$(sed -n "s/.*--address '\(.*\)' status$/\1/p" "$T/run.log")
bus_alive() {
    dbus-send --bus="$addr" --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.ListNames >/dev/null 2>&1
}
bus_gone() { ! bus_alive; }
bus_alive || fail "the private bus at '$addr' does not answer while placed runs"

procs=$(pgrep -g "$pid" | tr '\n' ' ')
kill -INT -- "-$pid"
wait_for 10 sh -c "! pgrep -g $pid >/dev/null" || fail "still running 10 s after Ctrl-C: $(pgrep -g "$pid" -a)"
grep -q '^Stopping\.' "$T/run.log" || fail "placed did not stop cleanly: $(cat "$T/run.log")"
# The bus daemonized itself out of the group: it must be gone all the same
# (placectl failing says only that placed is gone; ask the bus itself).
if wait_for 5 bus_gone; then :; else
    fail "the private bus at $addr still answers 5 s after Ctrl-C"
fi
ok "Ctrl-C: placed stopped cleanly (processes $procs), the private bus is gone"
