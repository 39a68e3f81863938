#!/usr/bin/env bash
# Session 39, call 7: call 6 with the lg built at the session's start, before the race (the draw
# an inverse CDF in id order; .carry/lg_old.xz, the bundle's libraries): the same 40 + 40 requests
# together and alone on the hand-written lane, the lines whose text differs counted.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
unpack_xz lg_old
for f in r3 hot40; do
  python3 - /tmp/lg_old "bench/gpu-logs/session39/$f.jsonl" <<'PY' | tee "$out/alone_old_$f.txt"
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
