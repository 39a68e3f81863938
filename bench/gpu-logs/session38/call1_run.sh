#!/usr/bin/env bash
# Session 38, call 1. On an H200: the waiting question (h200_rows_and_bars; session 37's call 7
# A/B, v10 in 2-warp blocks against LG_QWEN_V10_WARPS=4). On an H100: v8's rows form at 2 heads a
# block with its next iteration's loads in flight (LG_QWEN_ROWS_PIPE=1: 2 rounds an iteration,
# queries in registers): the attention, batch and mixed tests with it, the step against the
# default at 8 and 16 sequences (8B) and 16 and 32 (0.6B), and where the default form's warps
# stall at 16 x 512 (Nsight Compute's source counters, SASS by SASS).
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu"
case "$gpu" in
  *H200*)
    h200_rows_and_bars
    ab_rounds ab_v10_h200.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 48,64 --context 1024,2048,4096 --kv-tokens 300000" \
      two: four:LG_QWEN_V10_WARPS=4
    exit 0 ;;
esac
qwen_tests '*DecodeAttention*:*Batch*:*Mixed*' LG_QWEN_ROWS_PIPE=1 | tail -4
ab_rounds ab_pipe_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 8,16 --context 256,512,1024 --kv-tokens 40000" \
  old: pipe:LG_QWEN_ROWS_PIPE=1
ab_rounds ab_pipe_06b.txt 2 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16,32 --context 256,512,1024 --kv-tokens 60000" \
  old: pipe:LG_QWEN_ROWS_PIPE=1
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in old: pipe:LG_QWEN_ROWS_PIPE=1; do
  name=${v%%:*}; envs=${v#*:}
  # shellcheck disable=SC2086
  env $envs timeout 150 $ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight -k regex:attn_decode_long --launch-skip 100 --launch-count 1 -o "$out/attn16_$name" \
    $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 12 --batch 16 --context 512 \
    --kv-tokens 40000 > "$out/ncu_$name.log" 2>&1
  echo "ncu $name rc $?"
  timeout 60 $ncu -i "$out/attn16_$name.ncu-rep" --page source --csv --print-source sass > "$out/src_$name.csv" 2>&1
  echo "source page rc $? lines $(wc -l < "$out/src_$name.csv")"
  timeout 60 $ncu -i "$out/attn16_$name.ncu-rep" --page details --csv > "$out/details_$name.csv" 2>&1
  grep -E '"(Duration|DRAM Throughput|Issue Slots Busy|No Eligible|Eligible Warps Per Scheduler|Registers Per Thread)"' \
    "$out/details_$name.csv" | awk -F'","' '{print $(NF-2) " = " $NF " " $(NF-1)}' | tr -d '"'
done
exit 0
