#!/usr/bin/env bash
# Session 37, call 2: the batched decode's RMSNorm on a cluster of 8 blocks a row
# (rmsnorm_rows_cluster_kernel; call 1's Nsight put the one-block-a-row form at 5.5-7 us a launch,
# 11 us a layer, at 16 x 512 of 8B on an H100). Its kernel test and the batched tests, the Qwen
# locks with --batch-with 16, then the step against LG_QWEN_NORM_CLUSTER=0 (the old form) at
# 2-128 sequences of 512 (8B two rounds, 0.6B one), and the new kernel's Nsight durations.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
qwen_tests '*RmsNorm*:*Batch*:*Mixed*' | tail -4
timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
  > "$out/locks_batch16.txt" 2>&1
echo "locks rc $?"; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_batch16.txt"
ab_rounds ab_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32,64,128 --context 512 --kv-tokens 80000" \
  cluster: old:LG_QWEN_NORM_CLUSTER=0
ab_rounds ab_06b.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32,64,128 --context 512 --kv-tokens 80000" \
  cluster: old:LG_QWEN_NORM_CLUSTER=0
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
args="--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16 --context 512 --kv-tokens 40000"
for v in cluster:LG_QWEN_NORM_CLUSTER=8 old:LG_QWEN_NORM_CLUSTER=0; do
  env "${v#*:}" timeout 120 $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    -k regex:rmsnorm --launch-skip 300 --launch-count 40 $lg bench $args > "$out/ncu_norm_${v%%:*}.csv" 2>&1
  echo "${v%%:*} ncu rc $?"
  grep -E '"gpu__time_duration.sum"' "$out/ncu_norm_${v%%:*}.csv" | awk -F'","' '{print $5}' | cut -c1-50 | sort | uniq -c
  grep -E '"gpu__time_duration.sum"' "$out/ncu_norm_${v%%:*}.csv" | awk -F'","' '{gsub(/[",]/,"",$NF); print $NF}' | sort -n | awk '{a[NR]=$1} END {print "min", a[1], "med", a[int(NR/2)+1], "max", a[NR]}'
done
h200_rows_and_bars
exit 0
