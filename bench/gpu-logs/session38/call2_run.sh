#!/usr/bin/env bash
# Session 38, call 2: call 1's Nsight reports (carried back) as the source page, SASS line by
# SASS line, packed as one file (call 1's eleven files were past what comes back).
set -uo pipefail
out=${OUT:-gpu-out}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p /tmp/src
for n in old pipe; do
  timeout 100 $ncu -i ".carry/attn16_$n.ncu-rep" --page source --csv --print-source sass > "/tmp/src/src_$n.csv" 2>&1
  echo "$n rc $? lines $(wc -l < /tmp/src/src_$n.csv)"
done
head -3 /tmp/src/src_old.csv | cut -c1-600
tar -C /tmp/src -cJf "$out/src.tar.xz" .
