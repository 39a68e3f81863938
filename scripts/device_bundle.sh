#!/usr/bin/env bash
# Packs binaries built here for the GPU machine (which has CUDA but none of our Debian libraries):
# copies each given executable, stripped, into .carry/bin and every library it needs that is not
# glibc's or CUDA's into .carry/lib. On the GPU machine: export LD_LIBRARY_PATH=$PWD/.carry/lib
# Usage: scripts/device_bundle.sh build-gpu/src/cli/lg build-gpu/tests/lanes/qwen_lane_tests ...
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry/bin .carry/lib
for exe in "$@"; do
  cp "$exe" .carry/bin/ && strip --strip-debug ".carry/bin/$(basename "$exe")"
  ldd "$exe" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$lib" in
      /lib/x86_64-linux-gnu/libc.so*|/lib/x86_64-linux-gnu/libm.so*|/lib/x86_64-linux-gnu/libpthread*|\
      /lib/x86_64-linux-gnu/libdl*|/lib/x86_64-linux-gnu/librt*|/lib64/ld-linux*|/usr/local/cuda*|\
      */libstdc++.so*|*/libgcc_s.so*) ;;  # the GPU machine (Ubuntu 24.04) has newer, compatible ones
      *) cp -L "$lib" .carry/lib/ ;;
    esac
  done
done
du -sh .carry
