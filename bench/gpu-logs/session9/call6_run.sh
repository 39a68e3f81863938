#!/usr/bin/env bash
# Session 9, call 6: the 8B batch-1 decode timeline (nsys, graph nodes) of v7 and of the
# pre-batching binary at positions 32..95: GPU span of a step against the host's step wall.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
lg=/tmp/lgb/bin/lg
xz -dc .carry/lg_old.xz > /tmp/lg_old && chmod +x /tmp/lg_old
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $nsys"
LG_STEP_TIMES=1 timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 64 --context 30 2>&1 |
  grep -E "step times|^ +1 +[0-9]" | tee "$out/step_times.txt"
[ -n "$nsys" ] || exit 0
timeout 200 $nsys profile -t cuda --cuda-graph-trace=node -o /tmp/new $lg bench --shape qwen3-8b --lane handwritten \
  --prompt-len 512 --decode-tokens 64 --context 30 > "$out/nsys_new_run.txt" 2>&1
timeout 200 $nsys profile -t cuda --cuda-graph-trace=node -o /tmp/old /tmp/lg_old bench --shape qwen3-8b --lane handwritten \
  --prompt-len 512 --decode-tokens 64 > "$out/nsys_old_run.txt" 2>&1
for v in new old; do
  timeout 120 $nsys stats --report cuda_gpu_trace --format csv -o "$out/trace_$v" /tmp/$v.nsys-rep > /dev/null 2>&1
  timeout 120 $nsys stats --report cuda_api_trace --format csv -o "$out/api_$v" /tmp/$v.nsys-rep > /dev/null 2>&1
done
ls -la "$out"
for f in "$out"/*.csv; do xz -9 "$f"; done
exit 0
