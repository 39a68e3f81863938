#!/usr/bin/env bash
# Session 48, call 5 (any card): the experts lab again (bench/labs/moe_fused_lab.cu before call 6's
# form was added), with today's two launches taking x and act from shared memory, and each
# launch alone against the bytes it reads alone; 48 layers, 30 graph replays, twice.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
xz -dc .carry/moe_fused_lab.xz > /tmp/moe_fused_lab && chmod +x /tmp/moe_fused_lab
for r in 1 2; do timeout 200 /tmp/moe_fused_lab 48 30 2>&1 | tee -a "$out/lab.txt"; done
