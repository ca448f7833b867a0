#!/usr/bin/env bash
# Writes the body of an ACPI SSDT that gives each CPU of a qemu q35 guest a
# _CST (ACPI 6.5, 8.4.1.1) with one C-state, C1, so that the guest kernel's
# acpi_idle registers a cpuidle driver (states POLL and C1) as on a VM that
# has one (haltpoll: POLL and haltpoll):
#
#   tests/kernels/mkssdt-cst.sh NCPUS OUT
#
# qemu takes it with -acpitable sig=SSDT,...,data=OUT and adds the table's
# header and checksum itself. qemu defines no _CST, so without this a TCG
# guest has no cpuidle driver; KVM's haltpoll needs the KVM CPUID signature,
# which TCG does not show.
#
# Each CPU is \_SB.CPUS.Cnnn (qemu's ACPI CPU devices, nnn its index in hex)
# and gets
#
#   Scope (\_SB.CPUS.Cnnn) {
#       Name (_CST, Package () { 1,
#           Package () { ResourceTemplate () { Register (FFixedHW, 1, 0, 0, 1) },
#                        1, 1, 1000 } })   // C1, 1 us exit latency, 1000 mW
#   }
#
# The C1 entry is Functional Fixed Hardware with bit offset 0, which Linux
# does not take as an MWAIT hint (that needs 2): it enters C1 with HLT
# ("ACPI HLT"), which is what a TCG vCPU really idles in. A deeper state is
# not offered: under multi-threaded TCG MWAIT does not wait and an I/O-port
# C2 returns at once, so a C2 would only spin.
set -euo pipefail
ncpus=${1:?usage: mkssdt-cst.sh NCPUS OUT}
out=${2:?usage: mkssdt-cst.sh NCPUS OUT}
[[ $ncpus =~ ^[0-9]+$ ]] && [ "$ncpus" -ge 1 ] && [ "$ncpus" -le 4095 ] ||
    { echo "mkssdt-cst: NCPUS must be a number from 1 to 4095, not '$ncpus'" >&2; exit 1; }

# AML is written as a string of hex byte pairs, turned to bytes at the end.

# hex STRING: the ASCII bytes of STRING.
hex() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }

# pkg OPCODE BODY: OPCODE, a one-byte PkgLength (which counts itself; AML
# encodes up to 63 so) and BODY. Every package here is shorter.
pkg() {
    local n=$((${#2} / 2 + 1))
    [ "$n" -le 63 ] || { echo "mkssdt-cst: an AML package of $n bytes needs a longer PkgLength" >&2; exit 1; }
    printf '%s%02x%s' "$1" "$n" "$2"
}

# The Generic Register descriptor (0x82, 12 bytes): FFixedHW (0x7f), width
# 1, bit offset 0, access size 1, address 0; then the end tag (0x79) with a
# zero checksum.
reg="820c00""7f010001""0000000000000000""7900"
buffer=$(pkg 11 "0a$(printf '%02x' $((${#reg} / 2)))$reg")
# Package (4) { buffer, type 1 (One), latency 1 (BytePrefix), power 1000 (WordPrefix) }
c1=$(pkg 12 "04${buffer}01""0a01""0be803")
cst=$(pkg 12 "02""01$c1") # Package (2) { 1 (One), C1 }

aml=
for ((i = 0; i < ncpus; i++)); do
    # \ (root) then a MultiNamePath (0x2f) of 3 segments: _SB_ CPUS Cnnn
    path="5c2f03$(hex _SB_)$(hex CPUS)$(hex "$(printf 'C%03X' "$i")")"
    aml+=$(pkg 10 "$path""08$(hex _CST)$cst")
done
printf '%b' "$(printf '%s' "$aml" | sed 's/../\\x&/g')" >"$out.tmp"
mv "$out.tmp" "$out"
