#!/usr/bin/env bash
# make check-topologies: the live topology test (tests/test-topology-live.sh)
# in a qemu guest of several LLCs, packages and NUMA nodes with SMT, booted
# by the kernel matrix's machinery (tests/kernels/run-matrix.sh: the same
# initramfs, 9p root, guest-init.sh and run-set.sh); one line,
#
#   topology SMP, kernel KVER (qemu KVM | qemu TCG, as KVM did not boot it: WHY,
#       N CPUs, N packages, N LLCs, N nodes): N passed, N failed, N skipped (M s)
#
# then the FAIL lines with what their logs say, and the whole time.
#
#   tests/topologies/run-topologies.sh BUILD_DIR
#
# The guest: Debian 12's 6.12 kernel (linux-image-6.12-amd64, from the
# kernel cache), -smp 8,sockets=2,dies=2,cores=1,threads=2 and two NUMA
# nodes of one package each. What its sysfs showed (6.12.118, qemu 7.2):
#
#   -cpu max (TCG; AMD's vendor, with or without +topoext): one L3 per
#       package (shared_cpu_list 0-3 and 4-7): 2 LLCs, the dies invisible;
#   -cpu max,vendor=GenuineIntel (TCG): L3 per die (0-1, 2-3, 4-5, 6-7),
#       L2 the same, threads 0-1 ... 6-7 (SMT), packages 0-3 and 4-7,
#       die_id 0-3: 4 LLCs, 2 packages, 2 nodes. Taken: an LLC is not a
#       package, so a mask of a whole package is told from one LLC.
#   -smp 4,sockets=2,cores=1,threads=2 (-cpu max): 2 LLCs, 2 packages, 2
#       nodes with SMT on 4 CPUs, but then an LLC is a package is a node.
#
# KVM is tried first, with run-matrix.sh's -cpu list (host; host without the
# ARCH_CAPABILITIES MSR nor VMX/SVM; qemu64 with SSE4.2: the host's vendor,
# so its LLCs may differ, and the line says what the guest showed): the guest
# must print its first console line within 60 s. On our machines
# /dev/kvm can be there while nested KVM stops the guest at once ("KVM
# internal error. Suberror: 1", emulation failure) or qemu aborts ("failed
# to set MSR 0x10a"); then the guest is booted under TCG (a thread per
# vCPU) and the line says why.
# Under TCG the tests wait 5 times longer (PLACED_TEST_TIME_SCALE), under
# KVM twice (8 vCPUs on a small host).
#
# Environment: PLACED_TOPOLOGY_KERNEL (a kernel word of run-matrix.sh,
# default linux-image-6.12-amd64), PLACED_TOPOLOGY_SMP, PLACED_TOPOLOGY_CPU
# (-cpu under TCG), PLACED_TOPOLOGY_NODES (2), PLACED_TOPOLOGY_ACCEL (auto:
# KVM, else TCG; or qemu's -accel value), PLACED_TOPOLOGY_XFAIL (steps of
# the test whose failure is reported but does not fail it, see the test;
# default none); run-matrix.sh's own settings (PLACED_MATRIX_TIMEOUT,
# PLACED_KERNEL_CACHE, ...) apply too.
set -euo pipefail
build=${1:?usage: run-topologies.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
smp=${PLACED_TOPOLOGY_SMP:-8,sockets=2,dies=2,cores=1,threads=2}

export PLACED_MATRIX_NAME=check-topologies
export PLACED_MATRIX_LABEL="topology ${smp#*,}, kernel"
export PLACED_MATRIX_RESULTS=$build/topologies/results
export PLACED_KERNELS=${PLACED_TOPOLOGY_KERNEL:-linux-image-6.12-amd64}
export PLACED_MATRIX_SMP=$smp
export PLACED_MATRIX_CPU=${PLACED_TOPOLOGY_CPU:-max,vendor=GenuineIntel}
export PLACED_MATRIX_NUMA_NODES=${PLACED_TOPOLOGY_NODES:-2}
export PLACED_MATRIX_ACCEL=${PLACED_TOPOLOGY_ACCEL:-auto}
export PLACED_MATRIX_SHOW_TOPOLOGY=1
export PLACED_MATRIX_TESTS=test-topology-live
# Its skip (fewer than 2 LLCs: the topology did not come out) is a failure here.
export PLACED_MATRIX_MUST_RUN=test-topology-live
export PLACED_LIVE_STEPS= # every step
export PLACED_TEST_SKIP=
export PLACED_TOPOLOGY_XFAIL=${PLACED_TOPOLOGY_XFAIL:-}
export PLACED_MATRIX_GUEST_ENV=PLACED_TOPOLOGY_XFAIL
exec "$here/../kernels/run-matrix.sh" "$build"
