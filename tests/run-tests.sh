#!/usr/bin/env bash
# Runs every test and prints one closing line: "N passed, N failed, N skipped".
#
#   tests/run-tests.sh BUILD_DIR [NAME_FILTER...]
#
# With filters, only the tests whose names contain one of them run.
# A test is a cmocka binary BUILD_DIR/tests/test-* or a script tests/test-*.sh.
# Exit 0 = passed, 77 = skipped (the test prints why on its last line of
# output), anything else = failed. Output goes to BUILD_DIR/tests/logs/; a
# failed test's log is shown. Exits non-zero when any test failed.
set -u
build=${1:?usage: run-tests.sh BUILD_DIR [FILTER...]}
shift
filters=("$@")
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
logs=$build/tests/logs
mkdir -p "$logs"
export PLACED_BUILD=$build PLACED_SRC=$(dirname "$here")

passed=0 failed=0 skipped=0
tests=()
for t in "$build"/tests/test-*; do
    [ -x "$t" ] && [ -f "$t" ] && tests+=("$t")
done
for t in "$here"/test-*.sh; do
    [ -f "$t" ] && tests+=("$t")
done

for t in "${tests[@]}"; do
    name=$(basename "$t")
    if [ ${#filters[@]} -gt 0 ]; then
        wanted=
        for f in "${filters[@]}"; do
            [[ $name == *$f* ]] && wanted=1
        done
        [ -n "$wanted" ] || continue
    fi
    log=$logs/$name.log
    start=$EPOCHREALTIME
    timeout --kill-after=10 300 "$t" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    case $rc in
    0)
        passed=$((passed + 1))
        printf 'PASS  %-32s %5ss\n' "$name" "$secs"
        ;;
    77)
        skipped=$((skipped + 1))
        printf 'SKIP  %-32s %s\n' "$name" "$(grep -v '^\s*$' "$log" | tail -n 1)"
        ;;
    *)
        failed=$((failed + 1))
        printf 'FAIL  %-32s (exit %d)\n' "$name" "$rc"
        sed 's/^/    | /' "$log" | tail -n 60
        ;;
    esac
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
