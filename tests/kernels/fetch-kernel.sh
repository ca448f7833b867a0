#!/usr/bin/env bash
# Fetches one of Debian's kernel images and unpacks it into a cache:
#
#   tests/kernels/fetch-kernel.sh CACHE_DIR PACKAGE
#
# PACKAGE is a linux-image package or meta-package (linux-image-amd64,
# linux-image-6.12-amd64); a meta-package is followed to the image it
# depends on. The .deb is downloaded with apt-get download into
# CACHE_DIR/debs (kept: a second run downloads nothing) and unpacked with
# dpkg-deb -x into CACHE_DIR/KVER/ (vmlinuz in boot/, modules in
# lib/modules/KVER). A download of a newer build (a security update: a new
# ABI, 6.1.0-57 -> 6.1.0-58) removes the older ones of the same series. Prints
# KVER, the kernel release, on stdout.
set -euo pipefail
cache=${1:?usage: fetch-kernel.sh CACHE_DIR PACKAGE}
pkg=${2:?usage: fetch-kernel.sh CACHE_DIR PACKAGE}
mkdir -p "$cache/debs"
cache=$(cd "$cache" && pwd)

# Follow meta-packages (linux-image-amd64 -> linux-image-6.1.0-NN-amd64).
for _ in 1 2 3; do
    dep=$(apt-cache depends "$pkg" 2>/dev/null | awk '/^ *Depends: linux-image-[0-9]/ { print $2; exit }')
    [ -n "$dep" ] || break
    pkg=$dep
done
kver=${pkg#linux-image-}
kver=${kver%-unsigned}
[[ $kver =~ ^[0-9]+\.[0-9]+ ]] ||
    { echo "fetch-kernel: $2 does not lead to a versioned linux-image package (got $pkg)" >&2; exit 1; }

if [ ! -f "$cache/$kver/boot/vmlinuz-$kver" ]; then
    deb=$(ls "$cache/debs/${pkg}_"*.deb 2>/dev/null | head -n 1 || true)
    if [ -z "$deb" ]; then
        echo "fetch-kernel: downloading $pkg" >&2
        # As root apt drops to _apt for downloads, which may not write here.
        if ! (cd "$cache/debs" && apt-get -o APT::Sandbox::User=root download "$pkg" >&2); then
            # A stale package index names a build the archive no longer has:
            # once, update it and start over (the meta-package may now lead
            # to a newer build).
            if [ -z "${PLACED_FETCH_UPDATED:-}" ]; then
                echo "fetch-kernel: apt-get download $pkg failed: apt-get update, then again" >&2
                apt-get update -qq >&2 || true
                PLACED_FETCH_UPDATED=1 exec "$0" "$1" "$2"
            fi
            echo "fetch-kernel: apt-get download $pkg failed" >&2
            exit 1
        fi
        deb=$(ls "$cache/debs/${pkg}_"*.deb | head -n 1)
        series=$(echo "$kver" | grep -oE '^[0-9]+\.[0-9]+') # 6.1, 6.12: "6.1." is not "6.12."
        for old in "$cache/debs/linux-image-$series."*.deb "$cache/$series."*; do
            [ -e "$old" ] || continue
            case $old in "$deb" | "$cache/$kver") continue ;; esac
            echo "fetch-kernel: removing the older $old" >&2
            rm -rf "$old"
        done
    fi
    rm -rf "$cache/$kver.tmp"
    dpkg-deb -x "$deb" "$cache/$kver.tmp"
    [ -f "$cache/$kver.tmp/boot/vmlinuz-$kver" ] ||
        { echo "fetch-kernel: $deb holds no boot/vmlinuz-$kver" >&2; exit 1; }
    rm -rf "${cache:?}/$kver"
    mv "$cache/$kver.tmp" "$cache/$kver"
fi
echo "$kver"
