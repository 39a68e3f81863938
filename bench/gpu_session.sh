#!/usr/bin/env bash
# One GPU-machine session of checks and timings, as recorded in bench/RESULTS.md. Runs on the H200
# machine from the repo root with .carry/lg.tar.xz (scripts/device_bundle.sh: `lg`, any test
# binaries, their non-CUDA libraries and the fixtures) carried. Writes its logs to $OUT. Each part
# is chosen by a variable (empty skips it):
#   TESTS="compiled_lane_tests qwen_lane_tests"   GPU test binaries to run (if bundled)
#   LOCK_LANES="handwritten compiled"              lanes through `lg lock check --compare-logits`
#   BATCH_WITH=16                                  ... and again with each lock case inside a batch of N
#   SANITIZE_LANES="handwritten compiled"          compute-sanitizer memcheck on a batched lock check
#                                                  (tiny locks, --batch-with 16)
#   SHAPES="qwen3-0.6b qwen3-8b"  LANES="handwritten compiled"   `lg bench` (random weights, on the device)
#   BATCHES="1,16,64,128"  CONTEXTS="128,512"      ... its decode batch sizes and contexts (default: 1 at 32)
#   BENCH_ENV="LG_QWEN_BATCH_GRAPHS=0"             ... run once more with these variables set (an A/B)
#   STARTUP_LANES="handwritten compiled"           time to ready (LG_STARTUP_TIMES) on a random 8B-shaped
#                                                  checkpoint in the published layout (bench/make_checkpoint.py)
#   PEER="qwen3-0.6b qwen3-8b"  PEER_TIMEOUT=300   transformers in the same call (bench/peers/hf_peer.py)
#   BATCH_PEER="qwen3-8b"                          transformers batched decode at $BATCHES (hf_batch_peer.py)
#   SERVE_SHAPES="qwen3-8b qwen3-0.6b"             `lg serve --shape S` under bench/load_gen.py: 512 requests
#                                                  at concurrency 128, then Poisson at SERVE_RATES (4,8,16)
set -uo pipefail
source bench/device_env.sh  # $out, $lg, the libraries, /tmp/lgshared
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
for t in ${TESTS-compiled_lane_tests qwen_lane_tests}; do
  [ -x "/tmp/lgb/bin/$t" ] || continue
  LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 400 "/tmp/lgb/bin/$t" > "$out/$t.txt" 2>&1
  grep -E "PASSED|FAILED|schedules|compiled lane" "$out/$t.txt"
done
for lane in ${LOCK_LANES-handwritten compiled}; do
  timeout 200 $lg lock check --lane "$lane" --compare-logits --shared /tmp/lgshared 2>&1 | tee "$out/lock_$lane.txt"
  if [ -n "${BATCH_WITH-16}" ]; then
    timeout 300 $lg lock check --lane "$lane" --batch-with "${BATCH_WITH-16}" --shared /tmp/lgshared 2>&1 |
      tee "$out/lock_${lane}_batch.txt"
  fi
done
if [ -n "${SANITIZE_LANES-}" ]; then
  mkdir -p /tmp/tinylocks && cp locks/tiny-*.lock.json /tmp/tinylocks/
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for lane in $SANITIZE_LANES; do
    timeout 300 "$san" --tool memcheck --leak-check no --error-exitcode 9 \
      $lg lock check --lane "$lane" --locks /tmp/tinylocks --batch-with 16 --shared /tmp/lgshared > "$out/memcheck_$lane.txt" 2>&1
    echo "memcheck $lane: exit $? ($(grep -c 'Invalid\|ERROR SUMMARY' "$out/memcheck_$lane.txt") report lines)"
    tail -3 "$out/memcheck_$lane.txt"
  done
fi
for shape in ${SHAPES-qwen3-0.6b qwen3-8b}; do
  for lane in ${LANES-handwritten compiled}; do
    timeout 300 $lg bench --shape "$shape" --lane "$lane" --decode-tokens 64 --batch "${BATCHES:-1}" \
      --context "${CONTEXTS:-32}" 2>&1 | tee "$out/bench_${shape}_$lane.txt"
    if [ -n "${BENCH_ENV-}" ]; then
      echo "== again with $BENCH_ENV" | tee -a "$out/bench_${shape}_$lane.txt"
      env $BENCH_ENV timeout 300 $lg bench --shape "$shape" --lane "$lane" --decode-tokens 64 --batch "${BATCHES:-1}" \
        --context "${CONTEXTS:-32}" --prompt-len 512 2>&1 | tee -a "$out/bench_${shape}_$lane.txt"
    fi
  done
done
if [ -n "${STARTUP_LANES-}" ]; then
  ck=/tmp/qwen3-8b-random
  python3 bench/make_checkpoint.py --out "$ck" 2>&1 | tail -2
  cat "$ck"/*.safetensors > /dev/null  # a warm page cache, as the issue asks
  for lane in $STARTUP_LANES; do
    for run in 1 2; do  # the compiled lane's second start finds its NVRTC cache warm
      echo "== $lane start $run" | tee -a "$out/startup.txt"
      LG_STARTUP_TIMES=1 timeout 300 $lg run --model "$ck" --lane "$lane" --max-seq 4096 -n 4 -p "def main():" \
        >> "$out/startup.txt" 2>&1
      grep -E "ready|total|nvrtc|upload|fuse" "$out/startup.txt" | tail -6
    done
  done
fi
for shape in ${BATCH_PEER-}; do
  timeout "${PEER_TIMEOUT:-300}" python3 bench/peers/hf_batch_peer.py "$shape" $(echo "${BATCHES:-1,16,64}" | tr , ' ') 2>&1 |
    grep -v Warning | tee -a "$out/hf_batch_peer.txt"
done
for shape in ${SERVE_SHAPES-}; do
  $lg serve --shape "$shape" --max-seq 2048 --max-batch 256 > "$out/serve_$shape.log" 2>&1 &
  sp=$!
  for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
  timeout 200 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
    --json "$out/load_$shape.json" 2>&1 | tee "$out/load_$shape.txt" | grep -E "===|output|TTFT|ITL"
  timeout 200 python3 bench/load_gen.py -n 48 --prompt-len 128:1024 --output-len 128:512 \
    --request-rate "${SERVE_RATES:-4,8,16}" 2>&1 | tee -a "$out/load_$shape.txt" | grep -E "===|output|TTFT|ITL"
  curl -s localhost:8000/metrics | grep -E "^lg_kv_blocks_used" | tee -a "$out/load_$shape.txt"
  kill -INT "$sp"; timeout 60 tail --pid="$sp" -f /dev/null || kill -9 "$sp"  # drains, then exits
done
[ -n "${PEER-}" ] && timeout "${PEER_TIMEOUT:-300}" python3 bench/peers/hf_peer.py $PEER 2>&1 | grep -v Warning | tee "$out/hf_peer.txt"
exit 0
