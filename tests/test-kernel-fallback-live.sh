#!/usr/bin/env bash
# The real placed on a kernel without what its BPF sampler needs (issue 13,
# item 3), 200 ms ticks, a lockstep pipe pair. No kernel we test lacks any
# of it (make check-kernels: 6.1, 6.12, 6.18), so the features are taken
# away with PLACED_KERNEL_FEATURES_OFF (lib/kernel-features.h):
#   1. placed says at start what the kernel offers;
#   2. without the task iterator (likewise BTF or tp_btf): it says it uses
#      the perf sampler instead (in a PID namespace, mapping the wakees to
#      its TIDs), and still packs the pair; SIGTERM restores;
#   3. without task_struct's flip fields and bpf_stats: the BPF sampler
#      without the kernel's flips, the cost not measured; the pair packed;
#   4. an unknown feature name is named in a warning;
#   5. without the sched_waking tracepoint in tracefs (tracefs hidden for
#      real: placed runs in a mount namespace of its own with an empty tmpfs
#      over /sys/kernel/tracing and /sys/kernel/debug): a. it says so and
#      the BPF sampler, which needs no tracefs, still packs the pair;
#      b. without the task iterator too, no sampler is left: it says why,
#      keeps running and leaves the pair alone, and SIGTERM ends it cleanly.
# placed manages every task on the machine while it runs: run this when no
# benchmark runs.
. "$(dirname "$0")/lib/common.sh"

live_init
command -v perf >/dev/null || skip "perf (linux-perf) is not installed"
[ "$(nproc --all)" -ge 2 ] || skip "needs at least 2 CPUs to tell packed from spread"
all=$(online_cpus)
live_config fallback
# The perf sampler needs tracefs (systemd mounts it; a plain VM may not).
tracing=/sys/kernel/tracing
if [ ! -e "$tracing/events/sched/sched_waking/id" ] && [ ! -e /sys/kernel/debug/tracing/events/sched/sched_waking/id ]; then
    mount -t tracefs tracefs "$tracing" || skip "tracefs is not mounted and cannot be mounted on $tracing"
    at_exit "umount $tracing"
fi

# packs_and_restores STEP: the pair packed by the placed just started; SIGTERM puts it back.
packs_and_restores() {
    wait_packed "$T/fallback.log"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "$1. placed exited $placed_rc on SIGTERM"
    pair_is "$all" "$all" || fail "$1. after SIGTERM the pair has $(pair_affinity), expected $all $all"
}

said() { grep -m1 -o "$1" "$T/fallback.log" || { cat "$T/fallback.log" >&2; fail "$2"; }; }

step_features_said() {
    live_placed_start fallback
    said 'Kernel features: kernel offers [^.]*' "1. placed did not say what the kernel offers" >"$T/line"
    placed_stop TERM
    ok "1. $(cat "$T/line")"
}

step_without_task_iter() {
    export PLACED_KERNEL_FEATURES_OFF=task-iter
    pair_start
    live_placed_start fallback
    said 'no BPF task iterator: the perf sampler instead of BPF' "2. no fallback said" >/dev/null
    said 'Wake sampler: BPF sampler not used (the kernel lacks task-iter), using perf' \
        "2. the wake sampler is not perf, or not said why" >/dev/null
    # In a PID namespace (make check-pidns) the perf sampler maps the wakees
    # to the namespace's TIDs, and says so; in the initial one it does not.
    local where="the initial PID namespace"
    if [ "$(stat -L -c %i /proc/self/ns/pid)" != 4026531836 ]; then
        where="a PID namespace"
        said "using perf, wakees mapped to the PID namespace's TIDs" \
            "2. in a PID namespace the perf sampler does not say it maps the wakees" >/dev/null
    elif grep -q 'wakees mapped' "$T/fallback.log"; then
        fail "2. in the initial PID namespace the perf sampler maps the wakees"
    fi
    packs_and_restores 2
    ok "2. without the task iterator: perf sampler, pair packed in ${packed_ms} ms, restored on SIGTERM ($where)"
}

step_without_flips_and_stats() {
    export PLACED_KERNEL_FEATURES_OFF=wakee-flips,bpf-stats
    pair_start
    live_placed_start fallback
    said "Wake sampler: BPF sampler loaded, without the kernel's wakee_flips" "3. flips fallback not said" >/dev/null
    said "no bpf_stats: the sampler's cost is not measured" "3. bpf_stats fallback not said" >/dev/null
    packs_and_restores 3
    ok "3. without the flip fields and bpf_stats: BPF sampler, pair packed in ${packed_ms} ms, restored"
}

step_unknown_name() {
    export PLACED_KERNEL_FEATURES_OFF=task-iter,no-such-feature
    live_placed_start fallback
    said 'PLACED_KERNEL_FEATURES_OFF: unknown feature at "no-such-feature"' "4. the unknown name is not named" >/dev/null
    placed_stop TERM
    ok "4. an unknown feature name is named in a warning"
}

# A wrapper that hides tracefs in placed's own mount namespace, then execs it.
printf '%s\n' '#!/bin/sh' \
    'mount -t tmpfs hidden /sys/kernel/tracing || exit 1' \
    '[ ! -d /sys/kernel/debug ] || mount -t tmpfs hidden /sys/kernel/debug || exit 1' \
    'exec "$@"' >"$T/hide-tracefs"
chmod 755 "$T/hide-tracefs"
hidden_tracefs="unshare --mount --propagation private $T/hide-tracefs"

step_without_tracepoint() {
    unset PLACED_KERNEL_FEATURES_OFF
    pair_start
    live_placed_wrap=$hidden_tracefs live_placed_start fallback
    said 'no sched_waking tracepoint in tracefs: no perf sampler' "5a. the missing tracepoint is not said" >/dev/null
    said 'Wake sampler: BPF sampler loaded' "5a. the BPF sampler did not load without tracefs" >/dev/null
    packs_and_restores 5a
    ok "5a. without the tracepoint: BPF sampler, pair packed in ${packed_ms} ms, restored on SIGTERM"
}

step_without_any_sampler() {
    export PLACED_KERNEL_FEATURES_OFF=task-iter
    pair_start
    live_no_sampler_ok=1 live_placed_wrap=$hidden_tracefs live_placed_start fallback
    said 'No wake sampler, groups cannot be formed: .*no sched_waking tracepoint[^)]*)' \
        "5b. placed did not say why it has no wake sampler" >"$T/line"
    # Still working: ten ticks on, it runs, and has left the pair alone.
    stays "$T/fallback.log" 2000 pair_is "$all" "$all" || fail "5b. the pair was changed: $(pair_affinity)"
    kill -0 "$placed_pid" 2>/dev/null || fail "5b. placed exited without a wake sampler: $(cat "$T/fallback.log")"
    ! journal_ever_task "$pair_parent" "$pair_child" || fail "5b. journaled: $(journal_records)"
    placed_stop TERM
    [ "$placed_rc" -eq 0 ] || fail "5b. placed exited $placed_rc on SIGTERM"
    ok "5b. without the task iterator and the tracepoint: $(cat "$T/line"); kept running, pair left alone, exit 0"
}

live_step 1 step_features_said
live_step 2 step_without_task_iter
live_step 3 step_without_flips_and_stats
live_step 4 step_unknown_name
live_step 5a step_without_tracepoint
live_step 5b step_without_any_sampler

live_check_restored
live_steps_done
echo "all kernel fallback checks passed"
