#!/usr/bin/env bash
# Session 9, call 7: the 8B hand-written batch-1 gap to the pre-batching binary at positions 32..95
# (issue 12), by knob in both binaries: default, without PDL (LG_QWEN_PDL=0), and one split per
# head (LG_QWEN_ATTN_SPLIT=4096: no empty blocks). Three alternated rounds.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
lg=/tmp/lgb/bin/lg
xz -dc .carry/lg_old.xz > /tmp/lg_old && chmod +x /tmp/lg_old
new() { env "$@" timeout 200 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 64 --context 30 2>&1 |
  grep -E '^ +1 +[0-9]' | awk '{printf "%s", $3}'; }
old() { env "$@" timeout 200 /tmp/lg_old bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 64 2>&1 |
  grep "decode (batch 1" | sed -E 's/.*median ([0-9.]+) ms.*/\1/'; }
for round in 1 2 3; do
  for knob in LG_NONE=1 LG_QWEN_PDL=0 LG_QWEN_ATTN_SPLIT=4096; do
    echo "$round $knob: new $(new $knob) old $(old $knob)"
  done
done 2>&1 | tee "$out/ab.txt"
exit 0
