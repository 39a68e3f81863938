#!/usr/bin/env bash
# Session 28 (prepared, no device lent that session): the code moved in session 28 run on a GPU
# for the first time. Run it right after session 27's call2_run.sh, on the same warm machine.
#   - the compiled lane's launches, moved into compiled::Launcher (src/lanes/compiled/launcher.*):
#     compiled_lane_tests without the 85 s long-context test, the MoE and Qwen locks on the lane;
#   - the hand-written lane's attention launchers, split into attention_launch.cu /
#     attention_batch_launch.cu / attention_launch_common.cuh: the decode-attention, mixed-step
#     and batched tests;
#   - step times against the last recorded ones (bench/RESULTS.md: 30B-A3B compiled 2.78 ms at
#     B = 1 and 15.7 at 16, twenty-third session; 8B compiled 4.35 / 5.62, hand-written 16 x 512
#     5.09-5.26 depending on the machine): a move must not change them.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
qwen_tests '*DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' || { [ $? = 124 ] && exit 0; }
step_ms moved bench/shapes/qwen3-30b-a3b
step_ms moved qwen3-8b
bench_ms hw-moved hw.txt '16 +512' "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16 --context 512 --kv-tokens 30000"
exit 0
