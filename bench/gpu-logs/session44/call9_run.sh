#!/usr/bin/env bash
# Session 44, call 9 (any card): the engine's worker no longer wakes each request's thread itself.
# Call 5's trace put 0.35 ms (median) of host time between the serving run's steps (2% of the run);
# on the 2-core build machine, bench/engine_host_bench (128 sequences over the hash lane, a
# follower thread each) measured the gap before a 128-decode step at 253-853 us median, and 27-28
# us with the wake-ups handed to a thread of their own (JobWaker). The old binary (call 7's build,
# bundled as lg_old) against the new, issue 14's load, alternating, two rounds, each with
# LG_STEP_TRACE (the gaps between steps).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
serve_load() {  # tag, binary
  local tag=$1 bin=$2
  LG_STEP_TRACE="$out/trace_$tag.csv" $bin serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve_$tag.log" 2>&1 &
  local sp=$!
  for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
  echo "== $tag, up at ${SECONDS}s"
  timeout 120 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
    --json "$out/load_$tag.json" > "$out/load_$tag.txt" 2>&1
  grep -E "output|TTFT|ITL|completed" "$out/load_$tag.txt"
  kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
  python3 - "$out/trace_$tag.csv" <<'PY'
import sys, statistics as st
rows = [l.split(',') for l in open(sys.argv[1]) if l[0].isdigit()]
rows = [(float(a), float(w)) for a, _, _, w, _ in rows]
gaps = [rows[i + 1][0] - rows[i][0] - rows[i][1] for i in range(len(rows) - 1)]
print(f"  host gaps: {len(gaps)} steps, sum {sum(gaps) / 1e3:.2f} s, median {st.median(gaps):.3f} ms")
PY
  xz -f "$out/load_$tag.json" "$out/trace_$tag.csv"
}
for round in 1 2; do
  serve_load "old$round" /tmp/lgb/bin/lg_old
  serve_load "new$round" "$lg"
done
echo "done at ${SECONDS}s"
exit 0
