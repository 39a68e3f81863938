#!/usr/bin/env bash
# Session 49, call 1 (any card): session 48's prepared call 8, as it was (its header says what it
# runs). Build: main after session 48 with session48/call8_one_row.patch and
# session38/call7_rows_early.patch applied (the second for call 2; it changes only the hand-written
# lane behind its knob); the lab (bench/labs/moe_fused_lab.cu, nvcc -O3 -std=c++17 -arch=sm_90)
# xz'd as .carry/moe_fused_lab.xz; bundle LG_BUNDLE_FIXTURES=tiny-qwen3-moe
# scripts/device_bundle.sh build/src/cli/lg build/tests/lanes_compiled/compiled_lane_tests
# build/tests/lanes_qwen/qwen_lane_tests.
exec bash "$(dirname "$0")/../session48/call8_run.sh"
