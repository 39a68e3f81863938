#!/usr/bin/env bash
# Session 22, call 11: bench/labs/gemv_ring_lab.cu (built here: nvcc -O3 -std=c++17 -arch=sm_90),
# the one-row GEMV through a cp.async ring in shared memory against the emitted register form, at
# 30B-A3B's and 8B's decode GEMV shapes.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
xz -dc .carry/gemv_ring_lab.xz > /tmp/gemv_ring_lab && chmod +x /tmp/gemv_ring_lab
timeout 200 /tmp/gemv_ring_lab 2>&1 | tee "$out/gemv_ring_lab.txt"
exit 0
