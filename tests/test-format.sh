#!/usr/bin/env bash
# Every C file follows .clang-format ("make format" fixes it).
. "$(dirname "$0")/lib/common.sh"
command -v clang-format >/dev/null || skip "clang-format is not installed"
cd "$PLACED_SRC"
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find lib daemon tests -name '*.[ch]')
bad=$(for f in $files; do clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
[ -z "$bad" ] || fail "not formatted (run make format): $bad"
ok "$(echo "$files" | wc -w) files formatted"
