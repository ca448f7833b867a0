# Shared helpers for the shell tests. Source it; it sets -eu and a temp dir
# ($T) removed on exit, and runs every function registered with at_exit.
set -eu
: "${PLACED_BUILD:?run through tests/run-tests.sh}"
: "${PLACED_SRC:=.}"
T=$(mktemp -d /tmp/placed-test.XXXXXX)
_exit_hooks=()
at_exit() { _exit_hooks+=("$*"); }
_run_exit_hooks() {
    local rc=$?
    for ((i = ${#_exit_hooks[@]} - 1; i >= 0; i--)); do eval "${_exit_hooks[i]}" || true; done
    rm -rf "$T"
    exit $rc
}
trap _run_exit_hooks EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
skip() {
    echo "skipped: $*"
    exit 77
}
ok() { echo "ok - $*"; }

# wait_for SECONDS COMMAND...: poll COMMAND every 50 ms until it succeeds.
wait_for() {
    local secs=$1
    shift
    local end=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -ge $end ] && return 1
        sleep 0.05
    done
}

# A minimal configuration in $T: defaults, journal in $T/journal.
write_config() {
    mkdir -p "$T/etc"
    cat >"$T/etc/placed.conf" <<CONF
[daemon]
journal_dir = $T/journal
CONF
}
