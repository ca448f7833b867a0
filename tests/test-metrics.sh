#!/usr/bin/env bash
# The metrics for real: the real placed on a private D-Bus (policy as on the
# system bus, advise mode on the live system, the BPF sampler when root, a
# real "perf bench sched pipe" pair to see), "placectl metrics" in both
# formats checked by Debian's promtool (exit 0, no lint) and by a strict
# OpenMetrics parser (python3-prometheus-client), specific series with sane
# values (every online CPU, counters that grow and survive a reload, RSS,
# the profile's source as it changes), Metrics() for an unprivileged caller,
# bad formats; then the [metrics] textfile: written every tick, replaced by
# rename (new inode, always whole), links planted at its temporary name and
# at its path not followed, a full disk (a small tmpfs) that keeps the
# previous file and is logged once, a broken [metrics] key refused with
# FILE:LINE on reload. Last, as root, one enforce step: placed judges the
# pair's trial and the textfile counts the verdict, the windows behind it
# and its gain, and the pair's affinity is put back.
. "$(dirname "$0")/lib/common.sh"

command -v promtool >/dev/null || skip "promtool is not installed (apt-get install prometheus)"
command -v dbus-daemon >/dev/null || skip "dbus-daemon is not installed (apt-get install dbus)"
command -v busctl >/dev/null || skip "busctl is not installed (systemd)"
# Debian's python3, not a python3 earlier in PATH (pyenv) without Debian's modules.
om_python=/usr/bin/python3
"$om_python" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
    skip "python3-prometheus-client is not installed (apt-get install python3-prometheus-client)"

placed=$PLACED_BUILD/placed
placectl=$PLACED_BUILD/placectl
profiles=$PLACED_SRC/conf/profiles
[ -x "$placed" ] && [ -x "$placectl" ] || fail "build placed and placectl first"
as_root=$([ "$(id -u)" -eq 0 ] && echo yes || echo no)

write_bus_config ''
out=$(dbus-daemon --config-file="$T/bus.conf" --fork --print-address=1 --print-pid=1) ||
    fail "dbus-daemon did not start with $T/bus.conf"
ADDR=$(echo "$out" | sed -n 1p)
bus_pid=$(echo "$out" | sed -n 2p)
at_exit "kill $bus_pid"
export PLACED_BUS_ADDRESS=
B=(busctl --address="$ADDR")
OBJ=(org.placed1 /org/placed1 org.placed1.Manager)
nobody=(setpriv --reuid nobody --regid nogroup --clear-groups)

prom_dir=$T/prom
mkdir -m 755 "$prom_dir"
textfile=$prom_dir/placed.prom
write_metrics_config() { # TEXTFILE [EXTRA_LINE]
    mkdir -p "$T/etc"
    printf '[daemon]\njournal_dir = %s\n[metrics]\ntextfile = %s\nevery_ticks = 1\n%s\n' \
        "$T/journal" "$1" "${2:-}" >"$T/etc/placed.conf"
}
write_metrics_config "$textfile"

name_owned() { "${B[@]}" status org.placed1 >/dev/null 2>&1; }
"$placed" --foreground --dry-run --bus "$ADDR" --config "$T/etc/placed.conf" \
    --profiles-dir "$profiles" --journal-dir "$T/journal" --interval-ms 100 >"$T/placed.log" 2>&1 &
placed_pid=$!
at_exit "kill -KILL $placed_pid 2>/dev/null"
wait_for 5 name_owned || { cat "$T/placed.log"; fail "placed did not take org.placed1"; }

# metrics FILE [ARGS...]: placectl metrics into FILE, which must succeed.
metrics() {
    local file=$1
    shift
    "$placectl" --address "$ADDR" metrics "$@" >"$file" 2>"$T/pc.err" ||
        fail "placectl metrics $*: $(cat "$T/pc.err")"
}
# value FILE SERIES: the value of the sample whose name and labels are SERIES, exactly.
value() { awk -v s="$2" 'substr($0, 1, length(s) + 1) == s " " { print $NF; found = 1 } END { exit !found }' "$1"; }
# gt A B, ge A B, between LO X HI: numeric comparisons of floats.
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
between() { awk -v lo="$1" -v x="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }
# promtool_clean FILE: promtool check metrics exits 0 and says nothing (no lint).
promtool_clean() {
    local rc=0
    promtool check metrics <"$1" >"$T/promtool.out" 2>&1 || rc=$?
    [ $rc -eq 0 ] && [ ! -s "$T/promtool.out" ] ||
        fail "promtool check metrics on $2: exit $rc: $(cat "$T/promtool.out")"
}
# openmetrics_valid FILE: a strict OpenMetrics 1.0 parser accepts it; prints the samples.
openmetrics_valid() {
    "$om_python" - "$1" >"$T/om.out" 2>&1 <<'EOF' || fail "not valid OpenMetrics: $(cat "$T/om.out")"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
n = sum(len(f.samples) for f in text_string_to_metric_families(open(sys.argv[1]).read()))
assert n > 20, n
print(n)
EOF
}
# cpus_online: the online CPUs, one a line.
cpus_online() {
    tr ',' '\n' </sys/devices/system/cpu/online | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done
}

# all_cpus_in FILE: a busy-ratio sample for every online CPU.
all_cpus_in() {
    local cpu
    for cpu in $(cpus_online); do
        grep -q "^placed_cpu_busy_ratio{cpu=\"$cpu\"}" "$1" || return 1
    done
}

check_formats() {
    wait_for 5 test -s "$textfile" || { cat "$T/placed.log"; fail "no textfile $textfile"; }
    # Per-CPU figures come from the second tick on, and for each CPU once its
    # /proc/stat counters have moved (an idle CPU without its tick can take a
    # few ticks): wait for every online CPU, or the two formats below, read a
    # tick apart, can differ by a CPU that just arrived.
    wait_for 5 all_cpus_in "$textfile" || fail "not every online CPU in the per-CPU series: $(grep '^placed_cpu_busy_ratio' "$textfile")"
    metrics "$T/om.txt"
    metrics "$T/prom.txt" --format prometheus
    promtool_clean "$T/prom.txt" "placectl metrics --format prometheus"
    promtool_clean "$textfile" "the textfile"
    local n
    openmetrics_valid "$T/om.txt"
    n=$(cat "$T/om.out")
    [ "$(tail -n 1 "$T/om.txt")" = "# EOF" ] || fail "OpenMetrics output does not end with # EOF"
    grep -q '^# TYPE placed_ticks counter$' "$T/om.txt" || fail "OpenMetrics counter family not named placed_ticks"
    grep -q '^# UNIT placed_process_resident_memory_bytes bytes$' "$T/om.txt" || fail "no UNIT line"
    grep -q '^# TYPE placed_ticks_total counter$' "$T/prom.txt" || fail "text format counter not named placed_ticks_total"
    # the same series in both (values move between the two calls)
    diff <(grep -v '^#' "$T/om.txt" | sed 's/ [^ ]*$//') <(grep -v '^#' "$T/prom.txt" | sed 's/ [^ ]*$//') >"$T/diff" ||
        fail "the two formats differ in their series: $(cat "$T/diff")"
    # every family is listed in placectl(1), by the name its samples carry
    local family
    for family in $(awk '/^# TYPE /{print $3}' "$T/prom.txt"); do
        grep -q "\b$family\b" "$PLACED_SRC/daemon/placectl.1" || fail "placectl(1) does not list $family"
    done
    ok "placectl metrics: OpenMetrics ($n samples, strict parser), --format prometheus and the textfile clean under promtool $(promtool --version 2>&1 | head -n1 | cut -d' ' -f3)"
}

check_series() {
    metrics "$T/m1.txt" --format prometheus
    local mode ws
    mode=$(${B[@]} get-property "${OBJ[@]}" Mode | cut -d'"' -f2)
    ws=$(${B[@]} get-property "${OBJ[@]}" WakeSource | cut -d'"' -f2)
    value "$T/m1.txt" "placed_info{version=\"$("$placed" --version | cut -d' ' -f2)\",mode=\"$mode\",wake_source=\"$ws\"}" >/dev/null ||
        fail "placed_info does not say mode $mode, wake source $ws: $(grep placed_info "$T/m1.txt")"
    [ "$(value "$T/m1.txt" 'placed_profile_info{profile="balanced",source="configured"}')" = 1 ] ||
        fail "profile info: $(grep placed_profile_info "$T/m1.txt")"
    local rss cpu cpu_n busy sum
    rss=$(value "$T/m1.txt" placed_process_resident_memory_bytes) || fail "no RSS"
    gt "$rss" 1000000 || fail "placed's RSS is $rss bytes"
    cpu=$(value "$T/m1.txt" placed_process_cpu_seconds_total) || fail "no CPU time"
    gt "$cpu" 0 || fail "placed's CPU time is $cpu s"
    for cpu_n in $(cpus_online); do
        busy=$(value "$T/m1.txt" "placed_cpu_busy_ratio{cpu=\"$cpu_n\"}") || fail "no busy ratio for CPU $cpu_n"
        between 0 "$busy" 1 || fail "CPU $cpu_n busy $busy"
        value "$T/m1.txt" "placed_cpu_idle_residency_ratio{cpu=\"$cpu_n\",state=\"none\"}" >/dev/null ||
            fail "no idle residency for CPU $cpu_n"
        # busy + every idle state + idle outside them = the whole tick
        sum=$(awk -v c="cpu=\"$cpu_n\"" 'index($0, c) && /^placed_cpu_(busy|idle_residency)_ratio/ { s += $NF } END { print s }' "$T/m1.txt")
        between 0.98 "$sum" 1.02 || fail "CPU $cpu_n: busy and residencies sum to $sum"
    done
    [ "$(grep -c '^placed_groups{' "$T/m1.txt")" -eq 8 ] || fail "placed_groups should have 4 classes x 2: $(grep placed_groups "$T/m1.txt")"
    value "$T/m1.txt" placed_energy_estimate_active_cpus >/dev/null || fail "no energy estimate"

    local t1 t2 e1 e2 w1 w2
    t1=$(value "$T/m1.txt" placed_ticks_total)
    e1=$(value "$T/m1.txt" placed_energy_estimate_active_cpu_seconds_total)
    w1=$(value "$T/m1.txt" 'placed_sampler_wakeups_total{result="sampled"}')
    sleep 0.5
    metrics "$T/m2.txt" --format prometheus
    t2=$(value "$T/m2.txt" placed_ticks_total)
    e2=$(value "$T/m2.txt" placed_energy_estimate_active_cpu_seconds_total)
    w2=$(value "$T/m2.txt" 'placed_sampler_wakeups_total{result="sampled"}')
    gt "$t2" "$t1" || fail "placed_ticks_total did not grow: $t1 -> $t2"
    gt "$e2" "$e1" || fail "the energy counter did not grow: $e1 -> $e2"
    ge "$(value "$T/m2.txt" placed_process_cpu_seconds_total)" "$cpu" || fail "CPU time went down"
    if [ "$ws" != none ]; then
        gt "$w2" "$w1" || fail "sampled wakeups did not grow with the $ws sampler: $w1 -> $w2"
    else
        echo "note: no wake sampler (not root?), wakeup counters not checked"
    fi
    ok "series: info, profile, RSS $rss B, CPU $cpu s, $(cpus_online | wc -l) CPUs whose figures sum to 1, counters grow (ticks $t1 -> $t2, sampled wakeups $w1 -> $w2)"
}

# Each online CPU's kind and capacity as --dump-topology reads them, the HELP
# naming the source; the last tick's stages, in order, their CPU time within
# the tick's wall time (one tick's figures: one call); quick ticks a part of
# the ticks.
check_topology_and_cost() {
    "$placed" --dump-topology >"$T/topo.json" || fail "placed --dump-topology"
    metrics "$T/c.txt" --format prometheus
    "$om_python" - "$T/topo.json" "$T/c.txt" <<'EOF' || fail "capacity, stage or quick tick series: $(grep -E 'capacity|stage|quick' "$T/c.txt")"
import json, re, sys
topo = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
def samples(name):
    return [(m.group(1) or "", float(m.group(2)))
            for m in re.finditer(r"^%s(?:\{(.*)\})? (\S+)$" % name, text, re.M)]
caps = samples("placed_cpu_capacity")
want = [('cpu="%d",kind="%s"' % (c["cpu"], c["kind"]), float(c["capacity"]))
        for c in topo["cpus"] if c["kind"] is not None]
assert caps == want, (caps, want)
source = {"none": "nothing told the CPUs apart, so all are 1024",
          "cpu_capacity": "from the kernel's cpu_capacity",
          "cppc": "from CPPC highest_perf, per kind",
          "pmu": "from the hybrid PMU's kinds, at default ratios"}[topo["capacity_source"]]
assert ("# HELP placed_cpu_capacity Each online CPU's relative capacity, 1024 = the biggest "
        "CPU, and its kind; %s\n" % source) in text, source
stages = samples("placed_tick_stage_cpu_seconds")
assert [s[0] for s in stages] == ['stage="%s"' % s for s in ("sample", "model", "decide", "apply")], stages
duration = samples("placed_tick_duration_seconds")[0][1]
assert all(s[1] >= 0 for s in stages) and 0 < sum(s[1] for s in stages) <= duration, (stages, duration)
quick, ticks = samples("placed_quick_ticks_total")[0][1], samples("placed_ticks_total")[0][1]
assert 0 <= quick <= ticks, (quick, ticks)
EOF
    ok "placed_cpu_capacity for $(grep -c '^placed_cpu_capacity{' "$T/c.txt") CPUs as --dump-topology reads them (from $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["capacity_source"])' "$T/topo.json")); the last tick's 4 stages within its duration; quick ticks $(value "$T/c.txt" placed_quick_ticks_total) of $(value "$T/c.txt" placed_ticks_total)"
}

check_profile_source() {
    "$placectl" --address "$ADDR" profile latency-first || fail "placectl profile latency-first"
    metrics "$T/p.txt"
    [ "$(value "$T/p.txt" 'placed_profile_info{profile="latency-first",source="chosen"}')" = 1 ] ||
        fail "after placectl profile: $(grep placed_profile_info "$T/p.txt")"
    "$placectl" --address "$ADDR" hold power-first -- sleep 3 &
    local hold=$!
    held() { metrics "$T/p.txt" && value "$T/p.txt" 'placed_profile_info{profile="power-first",source="held"}'; }
    wait_for 3 held || fail "held profile not in the metrics: $(grep -E 'placed_profile_(info|holds)' "$T/p.txt")"
    [ "$(value "$T/p.txt" placed_profile_holds)" = 1 ] || fail "placed_profile_holds: $(grep holds "$T/p.txt")"
    wait "$hold"
    metrics "$T/p.txt"
    value "$T/p.txt" 'placed_profile_info{profile="latency-first",source="chosen"}' >/dev/null ||
        fail "after the hold: $(grep placed_profile_info "$T/p.txt")"
    [ "$(grep -c '^placed_profile_info' "$T/p.txt")" -eq 1 ] || fail "more than one profile info series"
    "$placectl" --address "$ADDR" profile balanced || fail "placectl profile balanced"
    ok "placed_profile_info follows the profile and its source: chosen, held, chosen"
}

check_access_and_errors() {
    if [ "$as_root" = yes ]; then
        "${nobody[@]}" "$placectl" --address "$ADDR" metrics >"$T/nobody.txt" 2>&1 ||
            fail "nobody cannot read the metrics: $(cat "$T/nobody.txt")"
        grep -q '^placed_ticks_total ' "$T/nobody.txt" || fail "nobody's metrics: $(head "$T/nobody.txt")"
    else
        echo "note: not root, the unprivileged read is not checked"
    fi
    local rc=0
    "$placectl" --address "$ADDR" metrics --format json >"$T/out" 2>&1 || rc=$?
    [ $rc -eq 2 ] && grep -q 'unknown metrics format "json"' "$T/out" || fail "--format json: exit $rc: $(cat "$T/out")"
    rc=0
    "$placectl" --address "$ADDR" --format prometheus status >"$T/out" 2>&1 || rc=$?
    [ $rc -eq 2 ] || fail "--format with status: exit $rc"
    rc=0
    "${B[@]}" call "${OBJ[@]}" Metrics s json >"$T/out" 2>&1 || rc=$?
    [ $rc -ne 0 ] && grep -q 'Unknown metrics format' "$T/out" || fail "Metrics(json): $(cat "$T/out")"
    "${B[@]}" call "${OBJ[@]}" Metrics s "" >"$T/out" || fail "Metrics('') failed"
    grep -q 'EOF' "$T/out" || fail "Metrics(''): $(head -c 200 "$T/out")"
    ok "Metrics() open to nobody; unknown formats refused (placectl exit 2, InvalidArgs)"
}

check_pair_and_reload() {
    if [ "$as_root" != yes ] || ! command -v perf >/dev/null; then
        echo "note: not root or no perf: the pair is not checked"
        return
    fi
    setsid perf bench sched pipe -l 50000000 </dev/null >/dev/null 2>&1 &
    local pair=$!
    at_exit "kill -KILL -- -$pair 2>/dev/null"
    pair_seen() {
        metrics "$T/pair.txt" --format prometheus
        gt "$(value "$T/pair.txt" 'placed_groups{class="pair",managed="true"}')" 0 &&
            gt "$(value "$T/pair.txt" placed_placement_changes_total)" 0 &&
            gt "$(value "$T/pair.txt" placed_trials_started_total)" 0
    }
    wait_for 10 pair_seen || fail "the pair is not in the metrics: $(grep -E 'placed_(groups|placement|trials)' "$T/pair.txt")"
    kill -KILL -- "-$pair" 2>/dev/null || true
    wait "$pair" 2>/dev/null || true
    local changes trials ticks
    changes=$(value "$T/pair.txt" placed_placement_changes_total)
    trials=$(value "$T/pair.txt" placed_trials_started_total)
    ticks=$(value "$T/pair.txt" placed_ticks_total)

    "$placectl" --address "$ADDR" reload || fail "placectl reload"
    metrics "$T/r.txt" --format prometheus
    [ "$(value "$T/r.txt" placed_reloads_total)" = 1 ] || fail "placed_reloads_total: $(grep reloads "$T/r.txt")"
    ge "$(value "$T/r.txt" placed_placement_changes_total)" "$changes" || fail "placement changes went down on reload"
    ge "$(value "$T/r.txt" placed_trials_started_total)" "$trials" || fail "trials went down on reload"
    ge "$(value "$T/r.txt" placed_ticks_total)" "$ticks" || fail "ticks went down on reload"
    ok "a pipe pair: pair group placed (advised), $changes placement changes, $trials trials; counters kept across a reload"
}

# The file as read in one go: whole when it starts with the first HELP and ends with # EOF.
check_textfile_atomic() {
    local i ino first_ino="" inodes=0 content
    for i in $(seq 60); do
        content=$(cat "$textfile") || fail "textfile unreadable"
        [ "${content%%$'\n'*}" = "# HELP placed_info placed's version, mode (enforce or advise) and wake sampler; always 1" ] ||
            fail "textfile read $i does not start with the first family: $(head -c 100 <<<"$content")"
        [ "${content##*$'\n'}" = "# EOF" ] || fail "textfile read $i is not whole: ends with '${content: -40}'"
        ino=$(stat -c %i "$textfile")
        [ -z "$first_ino" ] && first_ino=$ino
        [ "$ino" != "$first_ino" ] && inodes=$((inodes + 1))
        sleep 0.03
    done
    [ $inodes -gt 0 ] || fail "the textfile kept inode $first_ino over 1.8 s of 100 ms ticks: not replaced by rename"
    [ "$(stat -c %a "$textfile")" = 644 ] || fail "textfile mode $(stat -c %a "$textfile")"
    [ ! -e "$prom_dir/.placed.prom.tmp" ] || [ -f "$prom_dir/.placed.prom.tmp" ] || fail "odd temporary file"
    ok "textfile: 60 reads over 1.8 s all whole, replaced by rename (new inode), mode 644"
}

textfile_ticks() { value "$textfile" placed_ticks_total; }
textfile_advanced() { [ "$(textfile_ticks)" -gt "$1" ]; }

check_textfile_links() {
    echo precious >"$T/victim"
    chmod 600 "$T/victim"
    # planted by rename(2), as placed may be writing either name at the moment
    ln -s "$T/victim" "$prom_dir/plant"
    mv -T "$prom_dir/plant" "$prom_dir/.placed.prom.tmp"
    local t
    t=$(textfile_ticks)
    wait_for 3 textfile_advanced "$t" || fail "textfile not written after a link was planted at its temporary name"
    [ "$(cat "$T/victim")" = precious ] || fail "placed wrote through the link at the temporary name"
    [ ! -L "$prom_dir/.placed.prom.tmp" ] || fail "the planted link is still there"
    # a link at the path itself is replaced, not written through
    ln -s "$T/victim" "$prom_dir/plant"
    mv -T "$prom_dir/plant" "$textfile"
    wait_for 3 test -f "$textfile" -a ! -L "$textfile" || fail "the link at the textfile's path stayed"
    [ "$(cat "$T/victim")" = precious ] || fail "placed wrote through the link at the textfile's path"
    ok "links planted at the temporary name and at the path are not followed"
}

check_config_error() {
    cp "$T/etc/placed.conf" "$T/good.conf"
    write_metrics_config "$textfile" "every_ticks = 0"
    local rc=0
    "$placectl" --address "$ADDR" reload >"$T/out" 2>&1 || rc=$?
    [ $rc -eq 1 ] && grep -q "placed.conf:6: invalid \[metrics\] every_ticks \"0\": out of range 1..3600" "$T/out" ||
        fail "reload with every_ticks = 0: exit $rc: $(cat "$T/out")"
    write_metrics_config "relative.prom"
    rc=0
    "$placectl" --address "$ADDR" reload >"$T/out" 2>&1 || rc=$?
    [ $rc -eq 1 ] && grep -q 'placed.conf:4: invalid \[metrics\] textfile "relative.prom": not an absolute path' "$T/out" ||
        fail "reload with a relative textfile: exit $rc: $(cat "$T/out")"
    cp "$T/good.conf" "$T/etc/placed.conf"
    local t
    t=$(textfile_ticks)
    wait_for 3 textfile_advanced "$t" || fail "the textfile stopped after a refused reload"
    ok "a broken [metrics] key is refused with FILE:LINE; the textfile goes on"
}

# A full disk: a 64 KiB tmpfs, filled up while placed writes there every tick.
check_full_disk() {
    if [ "$as_root" != yes ]; then
        echo "note: not root, the full disk is not checked (needs a tmpfs mount)"
        return
    fi
    local full=$T/full
    mkdir "$full"
    mount -t tmpfs -o size=64k,mode=755 tmpfs "$full" || fail "cannot mount a tmpfs on $full"
    at_exit "umount -l $full"
    textfile=$full/placed.prom
    write_metrics_config "$textfile"
    "$placectl" --address "$ADDR" reload || fail "reload to the tmpfs textfile"
    wait_for 3 test -s "$textfile" || fail "no textfile on the tmpfs"
    dd if=/dev/zero of="$full/filler" bs=1k 2>/dev/null || true # until ENOSPC
    local before t
    sleep 0.3 # a write that started before the disk filled
    before=$(cat "$textfile")
    t=$(textfile_ticks)
    sleep 1.5 # 15 ticks, each trying to write
    [ "$(cat "$textfile")" = "$before" ] || fail "the textfile changed on a full disk"
    [ "${before##*$'\n'}" = "# EOF" ] || fail "the kept textfile is not whole"
    [ ! -e "$full/.placed.prom.tmp" ] || fail "a temporary file was left on the full disk"
    local n
    n=$(grep -c "Cannot write the metrics to \"$textfile\": No space left on device" "$T/placed.log") || true
    [ "$n" -eq 1 ] || fail "the full disk was logged $n times: $(grep -i metrics "$T/placed.log")"
    rm -f "$full/filler"
    wait_for 3 textfile_advanced "$t" || fail "the textfile not written again after space was freed"
    grep -q "Writing the metrics to \"$textfile\" works again" "$T/placed.log" || fail "recovery not logged"
    [ "$(grep -c 'Cannot write the metrics' "$T/placed.log")" -eq 1 ] || fail "logged again after recovering"
    textfile=$prom_dir/placed.prom
    write_metrics_config "$textfile"
    "$placectl" --address "$ADDR" reload || fail "reload back"
    ok "full disk: the previous textfile kept whole, logged once, written again when space came back"
}

check_formats
check_series
check_topology_and_cost
check_profile_source
check_access_and_errors
check_pair_and_reload
check_textfile_atomic
check_textfile_links
check_config_error
check_full_disk
kill -TERM "$placed_pid"
wait "$placed_pid" || fail "placed exited with $? after SIGTERM"

# Enforce mode: the trial of a real pair is judged and the verdict counted.
enforce_step() {
    live_init
    command -v perf >/dev/null || skip "perf is not installed (linux-perf)"
    pair_start
    live_config enforce "[metrics]" "textfile = $prom_dir/enforce.prom" "every_ticks = 1"
    live_placed_start enforce
    verdict() {
        local k r
        k=$(value "$prom_dir/enforce.prom" 'placed_trial_verdicts_total{verdict="kept"}') &&
            r=$(value "$prom_dir/enforce.prom" 'placed_trial_verdicts_total{verdict="reverted"}') &&
            [ $((k + r)) -gt 0 ]
    }
    wait_for 10 verdict || fail "no trial verdict counted: $(grep -E 'placed_(trial|placement)' "$prom_dir/enforce.prom")"
    promtool_clean "$prom_dir/enforce.prom" "the enforce-mode textfile"
    grep -q 'mode="enforce"' "$prom_dir/enforce.prom" || fail "not in enforce mode"
    local verdicts
    verdicts=$(grep '^placed_trial_verdicts_total' "$prom_dir/enforce.prom" | sed 's/placed_trial_verdicts_total//' | paste -sd ' ')
    verdict_figures "$prom_dir/enforce.prom"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "placed exited with $placed_rc"
    pair_stop
    live_check_restored
    ok "enforce: the pair's trial judged and counted ($verdicts), affinities put back"
    enforce_ticks_as_logged "$prom_dir/enforce.prom" "$T/enforce.log"
}

# What the verdicts stood on, in one copy of the textfile (a tick may replace
# it between two reads): each verdict given has windows behind it, a pair at
# least, and its gain in the histogram; the last verdict's gain lies in its
# interval.
verdict_figures() { # TEXTFILE
    local f=$T/verdicts.prom v n w c last
    cp "$1" "$f"
    for v in kept reverted; do
        n=$(value "$f" "placed_trial_verdicts_total{verdict=\"$v\"}") || fail "no $v verdicts counted"
        w=$(value "$f" "placed_trial_windows_total{verdict=\"$v\"}") || fail "no $v windows counted"
        c=$(value "$f" "placed_trial_verdict_gain_count{verdict=\"$v\"}") || fail "no $v gains"
        [ "$(value "$f" "placed_trial_verdict_gain_bucket{verdict=\"$v\",le=\"+Inf\"}")" = "$c" ] ||
            fail "the $v gains' +Inf bucket is not their count $c: $(grep "gain.*$v" "$f")"
        [ "$c" = "$n" ] || fail "$n $v verdicts, $c gains in the histogram"
        ge "$w" $((2 * n)) || fail "$n $v verdicts stood on $w windows"
        [ "$n" -eq 0 ] || gt "$w" 0 || fail "$n $v verdicts, no windows"
    done
    local mean low high kept windows
    mean=$(value "$f" 'placed_trial_last_gain{bound="mean"}') || fail "no last verdict: $(grep placed_trial_last "$f")"
    low=$(value "$f" 'placed_trial_last_gain{bound="low"}') || fail "no low bound"
    high=$(value "$f" 'placed_trial_last_gain{bound="high"}') || fail "no high bound"
    windows=$(value "$f" placed_trial_last_windows) || fail "no placed_trial_last_windows"
    kept=$(value "$f" placed_trial_last_kept) || fail "no placed_trial_last_kept"
    between "$low" "$mean" "$high" || fail "the last gain $mean is not within [$low, $high]"
    ge "$windows" 2 || fail "the last verdict stood on $windows windows"
    case $kept in 0 | 1) ;; *) fail "placed_trial_last_kept $kept" ;; esac
    last="last: $(awk -v m="$mean" -v l="$low" -v h="$high" 'BEGIN { printf "%.2fx [%.2f-%.2f]", m, l, h }') over $windows windows, kept $kept"
    ok "enforce: windows behind the verdicts (kept $(value "$f" 'placed_trial_windows_total{verdict="kept"}'), reverted $(value "$f" 'placed_trial_windows_total{verdict="reverted"}')), gains in the histogram; $last"
}

# The last textfile (written after every tick) against placed's debug log,
# which has a line per tick with its kind and its stages' CPU time: as many
# ticks and quick ticks, and the last tick's stages to the microsecond.
enforce_ticks_as_logged() { # TEXTFILE LOG
    local ticks quick
    ticks=$(grep -Ec 'Tick: [0-9]+ tasks, [0-9]+ groups, (regular|quick); CPU time: ' "$2") || true
    quick=$(grep -Ec 'Tick: [0-9]+ tasks, [0-9]+ groups, quick; CPU time: ' "$2") || true
    [ "$(value "$1" placed_ticks_total)" = "$ticks" ] || fail "placed_ticks_total $(value "$1" placed_ticks_total), $ticks ticks logged"
    [ "$(value "$1" placed_quick_ticks_total)" = "$quick" ] || fail "placed_quick_ticks_total $(value "$1" placed_quick_ticks_total), $quick quick ticks logged"
    local last stage us logged
    last=$(grep -E 'Tick: [0-9]+ tasks, [0-9]+ groups, (regular|quick); CPU time: ' "$2" | tail -n 1)
    for stage in sample model decide apply; do
        us=$(awk -v v="$(value "$1" "placed_tick_stage_cpu_seconds{stage=\"$stage\"}")" 'BEGIN { printf "%.0f", v * 1e6 }')
        logged=$(sed -n "s/.* $stage \([0-9]*\) us.*/\1/p" <<<"$last")
        [ "$us" = "$logged" ] || fail "placed_tick_stage_cpu_seconds{stage=\"$stage\"} is $us us, the last tick logged $logged: $last"
    done
    ok "enforce: the textfile's $ticks ticks ($quick quick) and the last tick's stages are what placed logged (${last#*CPU time: })"
}
if [ "$as_root" = yes ]; then
    enforce_step
else
    echo "note: not root, the enforce step is not run"
fi
