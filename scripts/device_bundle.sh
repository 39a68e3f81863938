#!/usr/bin/env bash
# Packs binaries built here for the GPU machine (which has CUDA but none of our Debian libraries)
# into .carry/lg.tar.xz: each given executable, stripped, in bin/; every library they need that is
# not glibc's, libstdc++'s or CUDA's in lib/; the Qwen fixtures of ../shared/fixtures in fixtures/
# (the tests and locks read them; the 22M model travels as the tracked models/ folder). Carry `.carry` with the device
# tool and unpack it there: `source bench/device_env.sh` does (bench/gpu_session.sh uses it).
# Usage: scripts/device_bundle.sh build-gpu/src/cli/lg build-gpu/tests/lanes_compiled/compiled_lane_tests ...
set -euo pipefail
cd "$(dirname "$0")/.."
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" .carry
for exe in "$@"; do
  cp "$exe" "$stage/bin/" && strip --strip-unneeded "$stage/bin/$(basename "$exe")"
  ldd "$exe" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$lib" in
      /lib/x86_64-linux-gnu/libc.so*|/lib/x86_64-linux-gnu/libm.so*|/lib/x86_64-linux-gnu/libpthread*|\
      /lib/x86_64-linux-gnu/libdl*|/lib/x86_64-linux-gnu/librt*|/lib64/ld-linux*|/usr/local/cuda*|\
      */libstdc++.so*|*/libgcc_s.so*|*/libssl.so.3|*/libcrypto.so.3) ;;  # the GPU machine (Ubuntu 24.04) has newer, compatible ones
      */libopenblas.so*|*/libgfortran.so*|*/libquadmath.so*) ;;  # see below
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
done
# The binaries take only cblas_sgemm/cblas_sgemv from OpenBLAS (the CPU reference in the tests):
# netlib's reference BLAS (libblas3, 0.14 MB xz-packed, no Fortran runtime) answers to its file name
# instead of OpenBLAS with libgfortran and libquadmath (5.1 MB packed, 40% of the upload's room).
# LG_BUNDLE_OPENBLAS=1 takes OpenBLAS itself.
if ldd "$@" | grep libopenblas.so > /dev/null; then  # not -q: ldd would die of SIGPIPE (pipefail)
  if [ "${LG_BUNDLE_OPENBLAS-}" = 1 ]; then
    for lib in $(ldd "$@" | awk '/libopenblas.so|libgfortran.so|libquadmath.so/ {print $3}' | sort -u); do
      cp -L "$lib" "$stage/lib/"
    done
  else
    ref=/usr/lib/x86_64-linux-gnu/blas/libblas.so.3
    [ -e "$ref" ] || { echo "device_bundle.sh: $ref missing: apt-get install libblas3, or LG_BUNDLE_OPENBLAS=1" >&2; exit 1; }
    cp -L "$ref" "$stage/lib/libopenblas.so.0"
  fi
fi
# The fixtures the GPU tests and locks read: the Qwen ones, plus each fixture named in
# LG_BUNDLE_FIXTURES (e.g. "tiny-llama3 tiny-mistral": about 0.85 MB each, and the upload holds
# about 12.5 MB beside the tracked tree; lg with its libraries packs to about 5 MB, a test binary to
# about 2 MB more); LG_BUNDLE_FIXTURES=all takes every one
# (44 MB of tokenizers among them: with the 22M model beside it, that leaves the 64 MiB upload
# limit little room for binaries).
if [ "${LG_BUNDLE_FIXTURES-}" = all ]; then
  cp -r ../shared/fixtures "$stage/fixtures"
else
  mkdir -p "$stage/fixtures"
  cp -r ../shared/fixtures/tiny-qwen2 ../shared/fixtures/tiny-qwen3 ../shared/fixtures/tiny-qwen3-untied-mqa \
    ../shared/fixtures/*.json ../shared/fixtures/tokenizer "$stage/fixtures/"
  for f in ${LG_BUNDLE_FIXTURES-}; do cp -r "../shared/fixtures/$f" "$stage/fixtures/"; done
fi
XZ_OPT=-9e tar -C "$stage" -cJf .carry/lg.tar.xz .
du -sh .carry/lg.tar.xz
