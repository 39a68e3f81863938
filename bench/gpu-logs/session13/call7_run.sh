#!/usr/bin/env bash
# Session 13, call 7: how often call 5's hand-written lock failure (tiny-qwen2 case 0 step 0)
# happens: the Qwen locks with --compare-logits on the hand-written lane in a loop (as call 5 ran
# them: the 22M model first, then tiny-qwen2), then one run of tiny-qwen2 alone under
# compute-sanitizer's synccheck.
set -uo pipefail
source bench/device_env.sh
dir=$(qwen_locks_dir)
end=$((SECONDS + 100)); i=0; fails=0
while [ $SECONDS -lt $end ]; do
  i=$((i + 1))
  timeout 60 $lg lock check --lane handwritten --locks "$dir" --shared /tmp/lgshared --compare-logits \
    > "$out/run.txt" 2>&1 || { fails=$((fails + 1)); cp "$out/run.txt" "$out/fail_$i.txt"; }
done
echo "hand-written Qwen locks with --compare-logits: $i runs, $fails failed"
grep -h "^FAIL" "$out"/fail_*.txt 2>/dev/null | head
mkdir -p /tmp/lk2/locks && cp locks/tiny-qwen2.lock.json /tmp/lk2/locks/ && ln -sfn "$PWD/models" /tmp/lk2/models
timeout 40 compute-sanitizer --tool synccheck $lg lock check --lane handwritten --locks /tmp/lk2/locks \
  --shared /tmp/lgshared --compare-logits > "$out/synccheck.txt" 2>&1; echo "synccheck rc $?"; tail -4 "$out/synccheck.txt"
exit 0
