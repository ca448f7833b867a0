#!/usr/bin/env bash
# Builds the tiny initramfs a matrix kernel boots with:
#
#   tests/kernels/mkinitramfs.sh KERNEL_ROOT KVER OUT
#
# KERNEL_ROOT holds lib/modules/KVER (an unpacked kernel package, or / for
# the running kernel). The initramfs is busybox (static) plus the modules
# that the 9p root needs (virtio PCI, 9pnet_virtio, 9p, and what they
# depend on, found from each module's "depends=" field since an unpacked
# package has no modules.dep), decompressed so that busybox insmod can
# load them, and tests/kernels/initramfs-init as /init.
set -euo pipefail
kroot=${1:?usage: mkinitramfs.sh KERNEL_ROOT KVER OUT}
kver=${2:?usage: mkinitramfs.sh KERNEL_ROOT KVER OUT}
out=${3:?usage: mkinitramfs.sh KERNEL_ROOT KVER OUT}
here=$(cd "$(dirname "$0")" && pwd)
mods=$kroot/lib/modules/$kver
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && file -L "$busybox" | grep -q 'statically linked' ||
    { echo "mkinitramfs: needs a static busybox (Debian: busybox-static)" >&2; exit 1; }
[ -d "$mods" ] || { echo "mkinitramfs: no $mods" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,newroot,modules}
cp "$busybox" "$work/bin/busybox"
cp "$here/initramfs-init" "$work/init"
chmod 755 "$work/init"

# module_file NAME: the module's file under $mods ("-" and "_" are the same).
module_file() {
    local n=$1 alt=${1//_/-}
    find "$mods" \( -name "$n.ko" -o -name "$n.ko.*" -o -name "$alt.ko" -o -name "$alt.ko.*" \) \
        -print -quit
}

# add NAME: copies the module (decompressed) after its dependencies; a
# module built into the kernel has no file and is skipped.
declare -A added=()
add() {
    local n=$1 f deps d
    [ -z "${added[$n]:-}" ] || return 0
    added[$n]=1
    f=$(module_file "$n")
    [ -n "$f" ] || return 0
    case $f in
    *.xz) xz -dc "$f" >"$work/modules/$n.ko" ;;
    *.zst) zstd -qdc "$f" >"$work/modules/$n.ko" ;;
    *.gz) gzip -dc "$f" >"$work/modules/$n.ko" ;;
    *) cp "$f" "$work/modules/$n.ko" ;;
    esac
    deps=$(strings -a "$work/modules/$n.ko" | sed -n 's/^depends=//p' | head -n 1)
    for d in ${deps//,/ }; do add "$d"; done
    echo "$n" >>"$work/modules/order"
}
: >"$work/modules/order"
for m in virtio virtio_ring virtio_pci 9pnet 9pnet_virtio 9p; do add "$m"; done
(cd "$work" && find . | "$busybox" cpio -o -H newc 2>/dev/null) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
