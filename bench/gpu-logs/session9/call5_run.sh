#!/usr/bin/env bash
# Session 9, call 5: where the last 0.6% of the 8B batch-1 decode goes (issue 12): ncu kernel
# durations of decode steps at positions 32..35, v7 against the pre-batching binary; the Qwen locks
# on the hand-written lane, plain and in a batch of 16.
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
timeout 250 $ncu --metrics gpu__time_duration.sum --csv -k "$k" $lg bench --shape qwen3-8b --lane handwritten \
  --prompt-len 16 --decode-tokens 2 --context 30 > "$out/ncu_new.csv" 2>&1
timeout 250 $ncu --metrics gpu__time_duration.sum --csv -k "$k" /tmp/lg_old bench --shape qwen3-8b --lane handwritten \
  --prompt-len 16 --decode-tokens 4 > "$out/ncu_old.csv" 2>&1
wc -l "$out"/ncu_*.csv
mkdir -p /tmp/lk/locks && cp locks/qwen3-pycode-22m.lock.json locks/tiny-qwen*.lock.json /tmp/lk/locks/ &&
  rm -f /tmp/lk/locks/tiny-qwen3-moe.lock.json && ln -sfn "$PWD/models" /tmp/lk/models
timeout 200 $lg lock check --lane handwritten --compare-logits --locks /tmp/lk/locks --shared /tmp/lgshared \
  > "$out/lock_handwritten.txt" 2>&1
cat "$out/lock_handwritten.txt"
timeout 300 $lg lock check --lane handwritten --batch-with 16 --locks /tmp/lk/locks --shared /tmp/lgshared \
  > "$out/lock_handwritten_batch.txt" 2>&1
cat "$out/lock_handwritten_batch.txt"
exit 0
