#!/usr/bin/env bash
# Session 39, call 6: seeded sampled requests together and alone on the hand-written lane (the
# draw is the race of branch s39-race, made on the device): the new-user pass's 40 requests
# (r3.jsonl: 27 sampled at temperature 1.0-1.5, 60 tokens) and hot40.jsonl (40 at 1.0/1.5, 100
# tokens) through lg batch at once, then each line alone; the lines whose text differs counted.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
for f in r3 hot40; do
  python3 - "$lg" "bench/gpu-logs/session39/$f.jsonl" <<'PY' | tee "$out/alone_$f.txt"
import json, subprocess, sys
lg, path = sys.argv[1], sys.argv[2]
lines = [l for l in open(path) if l.strip()]
def run(inp):
    p = subprocess.run([lg, "batch", "-m", "models/qwen3-pycode-22m", "--lane", "handwritten", "-i", "-", "-o", "-", "-q"],
                       input="".join(inp), capture_output=True, text=True, timeout=120)
    return [json.loads(x)["response"]["body"]["choices"][0]["text"] for x in p.stdout.splitlines()]
together = run(lines)
diffs = [i for i, l in enumerate(lines) if run([l])[0] != together[i]]
print(path, "lines", len(lines), "differ alone:", len(diffs), diffs)
PY
done
exit 0
