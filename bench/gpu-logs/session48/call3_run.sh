#!/usr/bin/env bash
# Session 48, call 3 (any card): the experts lab with this session's forms (bench/labs/moe_fused_lab.cu,
# built here with `nvcc -O3 -std=c++17 -arch=sm_90`, carried as .carry/moe_fused_lab.xz): today's
# two launches with and without the route launch before them, the routed bytes alone in one launch
# (with and without the route launch) and in two, and the fused block form; 48 layers, 30 graph
# replays, twice.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
xz -dc .carry/moe_fused_lab.xz > /tmp/moe_fused_lab && chmod +x /tmp/moe_fused_lab
for r in 1 2; do timeout 200 /tmp/moe_fused_lab 48 30 2>&1 | tee -a "$out/lab.txt"; done
