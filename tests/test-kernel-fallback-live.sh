#!/usr/bin/env bash
# The real placed on a kernel without what its BPF sampler needs (issue 13,
# item 3), 200 ms ticks, a lockstep pipe pair. No kernel we test lacks any
# of it (make check-kernels: 6.1, 6.12, 6.18), so the features are taken
# away with PLACED_KERNEL_FEATURES_OFF (lib/kernel-features.h):
#   1. placed says at start what the kernel offers;
#   2. without the task iterator (likewise BTF or tp_btf): it says it uses
#      the perf sampler instead, and still packs the pair; SIGTERM restores;
#   3. without task_struct's flip fields and bpf_stats: the BPF sampler
#      without the kernel's flips, the cost not measured; the pair packed;
#   4. an unknown feature name is named in a warning.
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
    packs_and_restores 2
    ok "2. without the task iterator: perf sampler, pair packed in ${packed_ms} ms, restored on SIGTERM"
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

live_step 1 step_features_said
live_step 2 step_without_task_iter
live_step 3 step_without_flips_and_stats
live_step 4 step_unknown_name

live_check_restored
live_steps_done
echo "all kernel fallback checks passed"
