#!/usr/bin/env bash
# Session 9, call 8: as call 5, with ncu's --cache-control none (warm caches, as in a real run): kernel
# durations of decode steps at positions 32..35, v7 against the pre-batching binary.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models
lg=/tmp/lgb/bin/lg
xz -dc .carry/lg_old.xz > /tmp/lg_old && chmod +x /tmp/lg_old
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
k='regex:gemv|attn|embed|argmax|rmsnorm'
timeout 250 $ncu --cache-control none --metrics gpu__time_duration.sum --csv -k "$k" $lg bench --shape qwen3-8b --lane handwritten \
  --prompt-len 16 --decode-tokens 2 --context 30 > "$out/ncu_new.csv" 2>&1
timeout 250 $ncu --cache-control none --metrics gpu__time_duration.sum --csv -k "$k" /tmp/lg_old bench --shape qwen3-8b --lane handwritten \
  --prompt-len 16 --decode-tokens 4 > "$out/ncu_old.csv" 2>&1
wc -l "$out"/ncu_*.csv
exit 0
