#!/usr/bin/env bash
# Moves a build to a GPU machine that cannot build it (the workplace's lent GPUs): `pack` here
# compresses build/flashio, build/libflashio_inject.so (flashio profile's injection library),
# build/tests/flashio_gpu_tests and build/tests/flashio_profile_target (the program its GPU tests
# profile) into .gpu/ (git-ignored; carry it), `unpack` there restores them under build/. The
# binaries are stripped of host symbols first. A call carries at most 64 MiB with the tree (about
# 44 MiB of it tracked files): `pack NAME...` packs only those (e.g. `pack flashio`, or
# `pack flashio_gpu_tests flashio_profile_target libflashio_inject.so`), about 17 MiB each.
# FLASHIO_BUNDLE_DIR names another folder than .gpu/ (git-ignore it): a scratch build packed beside the
# committed one and unpacked into its own FLASHIO_BUILD_DIR on a warm machine, one bundle per call.
#   scripts/gpu_bundle.sh pack [NAME...] | unpack
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FLASHIO_BUILD_DIR:-build}"
bundle="${FLASHIO_BUNDLE_DIR:-.gpu}"
bins=(flashio libflashio_inject.so tests/flashio_gpu_tests tests/flashio_profile_target)
case "${1:-}" in
  pack)
    shift
    mkdir -p "$bundle"
    rm -f "$bundle"/*.xz
    for b in "${bins[@]}"; do
      [ -f "$build/$b" ] || continue
      if [ $# -gt 0 ] && [[ " $* " != *" $(basename "$b") "* ]]; then continue; fi
      tmp=$(mktemp)
      strip -o "$tmp" "$build/$b"
      xz -T2 -9 -c "$tmp" >"$bundle/$(basename "$b").xz"
      rm -f "$tmp"
    done
    git rev-parse --short HEAD >"$bundle/revision"
    ls -l "$bundle" ;;
  unpack)
    for b in "${bins[@]}"; do
      f="$bundle/$(basename "$b").xz"
      [ -f "$f" ] || continue
      mkdir -p "$(dirname "$build/$b")"
      xz -dc "$f" >"$build/$b"
      chmod +x "$build/$b"
    done
    echo "gpu_bundle: unpacked the build of $(cat "$bundle/revision" 2>/dev/null || echo '?') into $build" ;;
  *) echo "usage: scripts/gpu_bundle.sh pack|unpack" >&2; exit 2 ;;
esac
