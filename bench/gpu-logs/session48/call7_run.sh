#!/usr/bin/env bash
# Session 48, call 7 (any card; prepared, not run: no device came; call8_run.sh runs it too): the experts lab again (bench/labs/moe_fused_lab.cu as committed
# with this session), adding gate_up held to two blocks an SM (the emitted kernel's occupancy); and each
# launch alone against the bytes it reads alone; 48 layers, 30 graph replays, twice.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
xz -dc .carry/moe_fused_lab.xz > /tmp/moe_fused_lab && chmod +x /tmp/moe_fused_lab
for r in 1 2; do timeout 200 /tmp/moe_fused_lab 48 30 2>&1 | tee -a "$out/lab.txt"; done
