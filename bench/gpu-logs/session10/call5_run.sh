#!/usr/bin/env bash
# Session 10, call 5: cuBLASLt's split-K reduction schemes at the batched decode's GEMMs
# (LG_LT_REDUCTION: 7 all, 1 in place only, 0 none; a knob in gemm_lt.cpp of a local build, not
# landed: it gained nothing), 8B hand-written lane at 128 positions.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
lg=/tmp/lgb/bin/lg
for mask in 7 0 1; do
  LG_LT_REDUCTION=$mask timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 \
    --batch 16,64,128 --context 128 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ |prefill' | sed "s/^/mask $mask /" | tee -a "$out/reduction.txt"
done
exit 0
