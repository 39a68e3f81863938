#!/usr/bin/env bash
# Session 48, call 6 (any card): the experts lab again (bench/labs/moe_fused_lab.cu as of commit efee240d
# (call 6), adding moe_down reading act through the L1 as the compiled lane does; and each
# launch alone against the bytes it reads alone; 48 layers, 30 graph replays, twice.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
xz -dc .carry/moe_fused_lab.xz > /tmp/moe_fused_lab && chmod +x /tmp/moe_fused_lab
for r in 1 2; do timeout 200 /tmp/moe_fused_lab 48 30 2>&1 | tee -a "$out/lab.txt"; done
