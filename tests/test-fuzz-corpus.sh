#!/usr/bin/env bash
# Replays every seed corpus in tests/fuzz/corpus/ once through its harness,
# built with ASan and UBSan and a plain main() (no libFuzzer needed): a
# harness that crashes, reads out of bounds, leaks or hits undefined
# behaviour on any seed fails this test. First it checks that it can fail:
# the self-test harness must be caught on an input that makes it crash.
. "$(dirname "$0")/lib/common.sh"

bins=$PLACED_BUILD/fuzz
corpus=$PLACED_SRC/tests/fuzz/corpus
[ -x "$bins/replay-selftest" ] || fail "build the replay harnesses first (make check builds them)"

# ASan's leak check needs ptrace-like access some sandboxes deny; a leak
# there must not hide behind a sandbox error, so say which it was.
export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:exitcode=23
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

printf 'harmless' >"$T/ok"
"$bins/replay-selftest" "$T/ok" || fail "the self-test harness failed on a harmless input"
printf 'CRASH and burn' >"$T/crash"
rc=0
"$bins/replay-selftest" "$T/crash" >"$T/selftest.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a harness that reads out of bounds went unnoticed"
grep -q "AddressSanitizer: heap-buffer-overflow" "$T/selftest.log" ||
    { cat "$T/selftest.log"; fail "the crash was not reported by ASan"; }
ok "a crashing harness fails the replay (exit $rc, ASan report)"

for name in config snapshot journal replay; do
    bin=$bins/replay-$name
    [ -x "$bin" ] || fail "no $bin"
    files=("$corpus/$name"/*)
    [ -e "${files[0]}" ] || fail "empty seed corpus $corpus/$name"
    rc=0
    "$bin" "${files[@]}" >"$T/$name.log" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        tail -n 40 "$T/$name.log"
        fail "fuzz-$name crashed on its seed corpus (exit $rc)"
    fi
    ok "fuzz-$name: ${#files[@]} seeds replayed under ASan and UBSan"
done
