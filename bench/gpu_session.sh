#!/usr/bin/env bash
# One GPU-machine session of checks and timings, as recorded in bench/RESULTS.md. Runs on the H200
# machine from the repo root with .carry/lg.tar.xz (scripts/device_bundle.sh: a Release `lg`, any
# test binaries, their non-CUDA libraries and the fixtures) carried. Writes its logs to $OUT.
#   TESTS="compiled_lane_tests qwen_lane_tests"   GPU test binaries to run (if bundled)
#   LOCK_LANES="handwritten compiled"              lanes through `lg lock check --compare-logits`
#   SHAPES="qwen3-0.6b qwen3-8b"  LANES="handwritten compiled"   `lg bench` (random weights, on the device)
#   PEER="qwen3-0.6b qwen3-8b"  PEER_TIMEOUT=300   transformers in the same call (bench/peers/hf_peer.py)
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models
lg=/tmp/lgb/bin/lg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
for t in ${TESTS-compiled_lane_tests qwen_lane_tests}; do
  [ -x "/tmp/lgb/bin/$t" ] || continue
  LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 "/tmp/lgb/bin/$t" 2>&1 | tail -40 > "$out/$t.txt"
  grep -E "PASSED|FAILED|compiled lane" "$out/$t.txt"
done
for lane in ${LOCK_LANES-handwritten compiled}; do
  timeout 200 $lg lock check --lane "$lane" --compare-logits --shared /tmp/lgshared 2>&1 | tee "$out/lock_$lane.txt"
done
for shape in ${SHAPES-qwen3-0.6b qwen3-8b}; do
  for lane in ${LANES-handwritten compiled}; do
    timeout 200 $lg bench --shape "$shape" --lane "$lane" --decode-tokens 64 2>&1 | tee "$out/bench_${shape}_$lane.txt"
  done
done
[ -n "${PEER-}" ] && timeout "${PEER_TIMEOUT:-300}" python3 bench/peers/hf_peer.py $PEER 2>&1 | grep -v Warning | tee "$out/hf_peer.txt"
exit 0
