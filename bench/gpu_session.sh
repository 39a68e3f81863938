#!/usr/bin/env bash
# One GPU-machine session of checks and timings, as recorded in bench/RESULTS.md. Runs on the H200
# machine from the repo root, with .carry/lg.tar.xz (a Release `lg` and its non-CUDA libraries,
# made by scripts/device_bundle.sh) and .carry/shared (../shared's fixtures and peers) carried.
# Writes its logs to $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out" /tmp/lgb
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
lg="env LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64 /tmp/lgb/bin/lg"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# Golden-token locks through both GPU lanes, with the logit differences against the CPU reference.
for lane in ${LOCK_LANES-handwritten compiled}; do
  $lg lock check --lane "$lane" --compare-logits --shared .carry/shared 2>&1 | tee "$out/lock_$lane.txt"
done
for lane in ${RUN_LANES-handwritten compiled}; do
  $lg run --model models/qwen3-pycode-22m --lane "$lane" --device cuda --prompt "def fibonacci(n):" --max-tokens 48 2>&1 | tail -4
done

# Random-weight checkpoints at real Qwen3 shapes (transformers' own initialisation, bf16), then
# both lanes through `lg bench` on the same directory, then the transformers peer.
for shape in ${SHAPES:-qwen3-0.6b}; do
  python3 - "$shape" <<'PY'
import sys, torch
from transformers import Qwen3Config, Qwen3ForCausalLM
s = {"qwen3-0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                        num_key_value_heads=8, head_dim=128, tie_word_embeddings=True),
     "qwen3-8b": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                      num_key_value_heads=8, head_dim=128, tie_word_embeddings=False)}[sys.argv[1]]
cfg = Qwen3Config(vocab_size=151936, max_position_embeddings=40960, rope_theta=1e6, rms_norm_eps=1e-6, **s)
torch.manual_seed(0)
with torch.device("cuda"):
    m = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
m.save_pretrained(f"/tmp/{sys.argv[1]}")
PY
  for lane in handwritten compiled; do
    timeout ${BENCH_TIMEOUT:-150} $lg bench --shape "/tmp/$shape" --lane "$lane" --prompt-len ${PROMPT_LENS:-512,2048} \
      --decode-tokens 64 2>&1 | tee "$out/bench_${shape}_$lane.txt"
  done
done
[ -n "${PEER:-}" ] && timeout 200 python3 .carry/shared/peers/hf_peer.py $PEER 2>&1 | tee "$out/hf_peer.txt"
exit 0
