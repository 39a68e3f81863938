#!/usr/bin/env bash
# The machine code (SASS) of an emitted program's kernels, for reading what ptxas made of them on a
# machine with no GPU: registers, shared memory and spills of every kernel, and with a name the
# instructions of that kernel (where its loads are issued, what waits on them).
# Usage: scripts/sass.sh DIR [KERNEL]
#   DIR     an `lg compile ... -o DIR` folder (its program.cu); DIR/program.cubin is built with nvcc
#           for sm_90 (the same ptxas NVRTC runs; rebuilt when program.cu is newer)
#   KERNEL  a kernel's name (e.g. k17_experts): its SASS, without the encodings
# CUDA 13's toolkit here ships no cuobjdump; CUDA 12.4's (Debian trixie's non-free
# nvidia-cuda-toolkit, which reads CUDA 13's sm_90 cubins) is fetched once into
# ~/.cache/lanegraph/cuda-12.4 unless LG_CUOBJDUMP names one. Needs apt-get (no root: the
# package is downloaded and unpacked, not installed).
set -euo pipefail
dir=${1:?usage: scripts/sass.sh DIR [KERNEL]}
kernel=${2:-}
[[ -f $dir/program.cu ]] || { echo "sass.sh: no program.cu in $dir (write one with lg compile ... -o $dir)" >&2; exit 1; }

find_cuobjdump() {
  if [[ -n ${LG_CUOBJDUMP:-} ]]; then echo "$LG_CUOBJDUMP"; return; fi
  local cached=$HOME/.cache/lanegraph/cuda-12.4/usr/bin/cuobjdump
  if [[ -x $cached ]]; then echo "$cached"; return; fi
  echo "sass.sh: fetching cuobjdump (Debian trixie non-free nvidia-cuda-toolkit, ~90 MB) into ${cached%/usr/bin/*}" >&2
  local tmp; tmp=$(mktemp -d)
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    > "$tmp/nonfree.sources"
  mkdir -p "$tmp/lists/partial"
  local apt_opts=(-o Dir::Etc::sourcelist="$tmp/nonfree.sources" -o Dir::Etc::sourceparts=/dev/null
                  -o Dir::State::Lists="$tmp/lists" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" update >/dev/null
  (cd "$tmp" && apt-get "${apt_opts[@]}" download nvidia-cuda-toolkit >/dev/null 2>&1)
  mkdir -p "${cached%/usr/bin/*}"
  dpkg -x "$tmp"/nvidia-cuda-toolkit_*.deb "${cached%/usr/bin/*}"
  rm -rf "$tmp"
  echo "$cached"
}

cubin=$dir/program.cubin
if [[ ! -f $cubin || $dir/program.cu -nt $cubin ]]; then
  nvcc -cubin -arch=sm_90 -O3 -std=c++17 -w -o "$cubin" "$dir/program.cu"
fi
cuobjdump=$(find_cuobjdump)

if [[ -z $kernel ]]; then
  # One line a kernel: name, registers, shared bytes, stack bytes.
  "$cuobjdump" -res-usage "$cubin" | awk '
    /Function/ { name = $2; sub(":", "", name) }
    /REG:/ { reg = shm = stack = "";
             for (i = 1; i <= NF; ++i) {
               if ($i ~ /^REG:/) reg = substr($i, 5)
               if ($i ~ /^SHARED:/) shm = substr($i, 8)
               if ($i ~ /^STACK:/) stack = substr($i, 7)
             }
             printf "%-28s registers %4s  shared %6s B  stack %4s B\n", name, reg, shm, stack }' | sort -V
else
  "$cuobjdump" -sass -fun "$kernel" "$cubin" | grep -E '^\s+/\*[0-9a-f]{4}\*/' |
    sed -E 's@/\* 0x[0-9a-f]+ \*/@@; s/ +;/;/; s/^\s+//'
fi
