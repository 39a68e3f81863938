#!/usr/bin/env bash
# Session 9, call 9: where issue 13 stands after v7: `lg bench` at B = 1, 16, 64, 128 and 512
# positions on both lanes and shapes, transformers' batched decode (hf_batch_peer.py) at 8B in the
# same call.
TESTS="" LOCK_LANES="" SHAPES="qwen3-8b qwen3-0.6b" LANES="handwritten compiled" BATCHES=1,16,64,128 CONTEXTS=512 \
  BATCH_PEER=qwen3-8b PEER_TIMEOUT=280 bash bench/gpu_session.sh
