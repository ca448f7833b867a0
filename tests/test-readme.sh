#!/usr/bin/env bash
# The README stays honest: it is short (at most 260 lines), every "make X"
# it names is a target of the Makefile, every relative link of README.md and
# docs/*.md leads to a file of the tree, and its quick start is what a
# newcomer sees: "make run" (daemon/run-dev.sh) prints the lines the README
# shows, and every placectl command they name runs against that placed on
# its private bus. Each checker is first shown a broken input it must catch.
. "$(dirname "$0")/lib/common.sh"

readme=$PLACED_SRC/README.md
max_lines=260

# --- short
lines=$(wc -l <"$readme")
[ "$lines" -le "$max_lines" ] || fail "README.md has $lines lines, more than $max_lines: move details into docs/"
ok "README.md has $lines lines (at most $max_lines)"

# --- every make target it names exists
# The code of a Markdown file: `spans` and indented lines, where commands are.
md_code() {
    grep -o '`[^`]*`' "$1" | tr -d '`'
    grep '^    ' "$1" || true
}
# make_targets_named FILE: each "make TARGET" in the file's code, once.
make_targets_named() {
    md_code "$1" | grep -oE '(^|[^a-z-])make +[a-z][a-z0-9-]*' | sed -E 's/.*make +//' | sort -u
}
makefile_targets=$(make -C "$PLACED_SRC" -qp 2>/dev/null |
    awk -F: '/^[a-zA-Z0-9][^$#\/\t=]*:([^=]|$)/ { print $1 }' | sort -u)
echo "$makefile_targets" | grep -qx check || fail "could not read the Makefile's targets"
missing_targets() { # FILE: the targets it names that the Makefile lacks
    comm -23 <(make_targets_named "$1") <(echo "$makefile_targets")
}
printf 'Build with `make all`, then `make no-such-target`.\n\n    make deps && make run\n' >"$T/bad.md"
[ "$(missing_targets "$T/bad.md")" = no-such-target ] ||
    fail "the target checker missed 'make no-such-target': '$(missing_targets "$T/bad.md")'"
named=$(make_targets_named "$readme" | tr '\n' ' ')
[ -n "$named" ] || fail "found no make target in README.md"
bad=$(missing_targets "$readme" | tr '\n' ' ')
[ -z "$bad" ] || fail "README.md names make targets the Makefile does not have: $bad"
ok "every make target README.md names exists: $named"

# --- relative links
# broken_links FILE: each relative link target (anchor dropped) that is not there.
broken_links() {
    local dir target
    dir=$(dirname "$1")
    grep -oE '\]\([^)]+\)' "$1" | sed -E 's/^\]\(//; s/\)$//; s/[[:space:]].*//' |
        while read -r target; do
            case $target in
            http://* | https://* | mailto:* | '#'*) continue ;;
            esac
            target=${target%%#*}
            [ -e "$dir/$target" ] || echo "$target"
        done
}
mkdir -p "$T/docs"
printf 'See [a](docs/a.md), [b](docs/gone.md#x), [c](https://example.org/x) and [d](#top).\n' >"$T/links.md"
touch "$T/docs/a.md"
[ "$(broken_links "$T/links.md")" = docs/gone.md ] ||
    fail "the link checker missed docs/gone.md: '$(broken_links "$T/links.md")'"
checked=0
for md in "$readme" "$PLACED_SRC"/docs/*.md; do
    bad=$(broken_links "$md" | tr '\n' ' ')
    [ -z "$bad" ] || fail "${md#"$PLACED_SRC"/}: broken relative links: $bad"
    checked=$((checked + $(grep -oE '\]\([^)]+\)' "$md" | grep -cvE '\]\((https?:|mailto:|#)' || true)))
done
ok "$checked relative links in README.md and docs/*.md lead to files of the tree"

# --- the quick start, as a newcomer runs it
[ "$(id -u)" -eq 0 ] || skip "needs root (make run as the README shows it; placed changes affinities)"
command -v dbus-daemon >/dev/null || skip "dbus-daemon is not installed"
[ ! -S /run/dbus/system_bus_socket ] ||
    skip "a system bus runs here: make run would use it (make check-system covers placed there)"

# The quick start section's indented lines.
sed -n '/^## Quick start/,/^## /p' "$readme" | sed -n 's/^    //p' >"$T/quick"
grep -qx 'make deps && make run' "$T/quick" || fail "the quick start lacks 'make deps && make run'"
grep -qx 'make check' "$T/quick" || fail "the quick start lacks 'make check'"
# What make run prints before placed's log, as the README shows it: from the
# line naming the private bus to the line saying how to stop.
sed -n '/^No system bus here/,/Ctrl-C/p' "$T/quick" >"$T/readme-run"
[ -s "$T/readme-run" ] || fail "the quick start does not show what make run prints"

run_dev_start
pid=$run_dev_pid
addr=$(sed -n "s/.*--address '\([^']*\)' status$/\1/p" "$T/run.log")
[ -n "$addr" ] || fail "run-dev.sh printed no placectl --address line: $(cat "$T/run.log")"
# The same lines, the build folder and the bus address as the README writes them.
normalize() { sed -E "s|--address '[^']*'|--address ADDR|; s|^(    )?$PLACED_BUILD/|\1build/|"; }
sed -n "/^No system bus here/,/Ctrl-C/p" "$T/run.log" | normalize >"$T/got-run"
normalize <"$T/readme-run" >"$T/want-run"
diff -u "$T/want-run" "$T/got-run" >"$T/run.diff" ||
    fail "make run prints other lines than the README shows: $(cat "$T/run.diff")"
ok "make run prints the $(wc -l <"$T/want-run") lines the README shows"

# Every placectl command of the quick start: the printed status line, and
# the subcommands the next line names ('groups', 'graph', 'graph --dot').
status_cmd=$(grep -m1 'placectl .*status$' "$T/readme-run")
subs=$(grep -o "'[a-z][a-z -]*'" "$T/readme-run" | tr -d "'")
[ -n "$subs" ] || fail "the quick start names no placectl subcommand beside status"
ran=
while read -r sub; do
    cmd=${status_cmd% status}
    cmd="${cmd/build\//$PLACED_BUILD/} $sub"
    cmd=$(echo "$cmd" | sed -E "s|--address '[^']*'|--address '$addr'|")
    (cd "$PLACED_SRC" && eval "$cmd") >"$T/out" 2>&1 || fail "'$cmd' failed: $(cat "$T/out")"
    [ -s "$T/out" ] || fail "'$cmd' printed nothing"
    [ "$sub" != status ] || cp "$T/out" "$T/status"
    ran="$ran'$sub' "
done < <(printf 'status\n%s\n' "$subs")
ok "placectl ${ran}ran against placed on the private bus of make run"

# The status the README shows: each line's label (up to its first colon)
# starts a line of the real status.
sed -n '/placectl .*status$/,$p' "$T/quick" | sed '1d' |
    sed -n 's/^ *\([A-Z][A-Za-z ]*\):.*/\1/p' | sort -u >"$T/labels"
[ -s "$T/labels" ] || fail "the quick start shows no placectl status output"
while read -r label; do
    grep -q "^ *$label:" "$T/status" ||
        fail "the README's status shows '$label:', the real one has no such line: $(cat "$T/status")"
done <"$T/labels"
ok "every line of the README's status ($(tr '\n' ',' <"$T/labels" | sed 's/,$//')) is in the real one"

kill -INT -- "-$pid"
wait_for 10 sh -c "! pgrep -g $pid >/dev/null" || fail "make run still runs 10 s after Ctrl-C"
grep -q '^Stopping\.' "$T/run.log" || fail "placed did not stop cleanly: $(cat "$T/run.log")"
ok "Ctrl-C stopped it, as the quick start says"
