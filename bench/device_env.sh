# Sourced by the scripts that run on the GPU machine (bench/gpu_session.sh, one-off call scripts
# in bench/gpu-logs/): unpacks what scripts/device_bundle.sh packed into .carry/lg.tar.xz and sets
# up what the binaries and tests expect there, so a call script holds only its own checks.
#   $out                 the logs' folder ($OUT, else gpu-out), created
#   $lg                  the bundled lg
#   LD_LIBRARY_PATH      the bundle's libraries, then CUDA's
#   LG_MODELS_DIR        this checkout's models/ (the binaries carry the build machine's path)
#   /tmp/lgshared        ../shared's stand-in: the bundled fixtures, models/ linked in
#   unpack_xz NAME       .carry/NAME.xz (a binary packed alone: strip, xz -9e) to /tmp/NAME, executable
#   qwen_locks_dir       prints a locks folder of the Qwen locks only, for `lg lock check --locks`
#                        on the hand-written lane (a bundle without the other families' fixtures)
#   moe_locks_dir        the same with the tiny-qwen3-moe lock only (bundle its fixture:
#                        LG_BUNDLE_FIXTURES=tiny-qwen3-moe)
#   moe_checks           the MoE tests of compiled_lane_tests and the MoE lock (logits; a batch of 16)
#   compiled_checks [FILTER]  compiled_lane_tests (a gtest filter, or all) and the compiled lane's
#                        locks (the checks the session 13 and 19 call scripts each repeated)
#   moe_memcheck         compute-sanitizer memcheck of the MoE probe tests (compiled_lane_tests)
#   step_ms LABEL SHAPE [ENV=VALUE...]   a compiled-lane decode line (B = 1, 16) for A/B tables
#   bench_ms LABEL FILE ROW "BENCH ARGS" [ENV=VALUE...]  the ms a step of one `lg bench` line
#                        (ROW: its batch and context, e.g. '16 +512'), for skip and knob tables
#   qwen_tests FILTER [ENV=VALUE...]     qwen_lane_tests under a filter and settings, verdicts printed
#   ab_rounds FILE ROUNDS "BENCH ARGS" NAME:ENV,...  variants of one `lg bench` alternated, tabled
#   b1_32k LABEL LANE [ENV=VALUE...]     the line of one 8B sequence at 32,768 positions
#   h200_rows_and_bars   on an H200 only: the TMA row GEMV against cuBLASLt at 2-32 sequences
#                        (8B, 0.6B) and issue 13's 8B bars at the default and on the TMA form
#   attn_ncu_32k LABEL LANE [ENV=VALUE...]  Nsight duration and instructions of that step's decode
#                        attention kernel (what session 21's calls 1, 2, 4 and 6 each spelled out)
#   ncu_durations FILE COUNT "BENCH ARGS"  Nsight Compute's duration of COUNT kernels of an `lg bench`
#                        run's graph replays (caches as they run), summed by kernel name into
#                        FILE_summary.txt (what session 37's call 1 spelled out)
#   ncu_last_step FILE FIRST LAST "BENCH ARGS" [SKIP]  Nsight Compute's duration of every kernel
#                        of an `lg bench` run past its first SKIP launches (default 0), then the
#                        launches of its last step alone (from the last
#                        kernel matching LAST back to the kernel matching FIRST before it), summed
#                        by kernel name and grid into FILE_summary.txt: a mixed step's kernels
#                        (--prefill-chunk runs them last), which no launch-skip count finds
#                        (Nsight names a kernel with its namespace, "dev::embed_kernel(...)":
#                        FIRST '^embed_kernel' matches nothing, 'embed_kernel' does)
#   hw_locks             the Qwen locks on the hand-written lane, alone and with --batch-with 16,
#                        into $out/locks_hw.txt, verdicts printed
#   serve_load TAG [ENV=VALUE...]  issue 14's serving load (8B shape, 512 requests, prompts
#                        128-1024, outputs 128-512, concurrency 128) against `lg serve` under those
#                        settings; logs $out/{serve,load}_TAG.*; SERVE_BIN=PATH serves another
#                        binary, SERVE_TRACE=1 adds LG_STEP_TRACE ($out/trace_TAG.csv) and prints
#                        the host's gaps between steps (TAG "" names the files without a suffix)
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models
lg=/tmp/lgb/bin/lg

unpack_xz() {
  xz -dc ".carry/$1.xz" > "/tmp/$1" && chmod +x "/tmp/$1"
}

# locks_folder DIR LOCK...: DIR/locks holding only the named lock files, models/ linked beside it.
locks_folder() {
  local dir=$1
  shift
  mkdir -p "$dir/locks"
  for lock in "$@"; do cp "locks/$lock.lock.json" "$dir/locks/"; done
  ln -sfn "$PWD/models" "$dir/models"
  echo "$dir/locks"
}

qwen_locks_dir() {
  locks_folder /tmp/lk qwen3-pycode-22m tiny-qwen2 tiny-qwen3 tiny-qwen3-untied-mqa
}

moe_locks_dir() {
  locks_folder /tmp/lkm tiny-qwen3-moe
}

# compiled_checks [FILTER]: what every call that changes the compiled lane runs first:
# compiled_lane_tests (bundled in bin/, or carried alone as .carry/compiled_lane_tests.xz; bundle
# tiny-qwen3-moe and tiny-gemma3 for all of them; FILTER, e.g. '-CompiledLane.LongContext*',
# leaves the 85 s long-context test out), the MoE lock and the Qwen locks on the compiled lane,
# with --compare-logits and with --batch-with 16. Logs in $out; prints the verdicts.
# moe_checks: the MoE tests of compiled_lane_tests (bundled in bin/) and the MoE lock on the
# compiled lane, with --compare-logits and with --batch-with 16 (bundle tiny-qwen3-moe); logs
# $out/compiled_moe_tests.txt and $out/locks_moe.txt, verdicts printed.
moe_checks() {
  LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/lgb/bin/compiled_lane_tests --gtest_filter='*Moe*' > "$out/compiled_moe_tests.txt" 2>&1
  echo "compiled_lane_tests *Moe* rc $?"
  grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_moe_tests.txt" | head
  { timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
    timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --batch-with 16
  } > "$out/locks_moe.txt" 2>&1
  grep -E "^(ok|FAIL|ERROR)|logits" "$out/locks_moe.txt"
}

compiled_checks() {
  local tests=/tmp/lgb/bin/compiled_lane_tests
  [ -x "$tests" ] || { unpack_xz compiled_lane_tests; tests=/tmp/compiled_lane_tests; }
  LG_SHARED_DIR=/tmp/lgshared timeout 220 "$tests" --gtest_filter="${1:-*}" > "$out/compiled_lane_tests.txt" 2>&1
  echo "compiled_lane_tests rc $?"
  grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
  { timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
    timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
    timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  } > "$out/locks_compiled.txt" 2>&1
  grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_compiled.txt"
}

# moe_memcheck: compute-sanitizer memcheck of CompiledMoeProbe.TinyQwen3Moe* (bundle tiny-qwen3-moe);
# the log in $out/memcheck_moe.txt, its summary printed.
moe_memcheck() {
  LG_SHARED_DIR=/tmp/lgshared timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
    /tmp/lgb/bin/compiled_lane_tests --gtest_filter='CompiledMoeProbe.TinyQwen3Moe*' > "$out/memcheck_moe.txt" 2>&1
  echo "memcheck rc $?"
  grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_moe.txt" | head -5
}

# bench_ms LABEL FILE ROW "BENCH ARGS" [ENV=VALUE...]: `lg bench BENCH ARGS` under the given
# environment; the ms a step of its line for ROW (batch, then context: '1 +512'), appended to
# $out/FILE and printed.
bench_ms() {
  local label=$1 file=$2 row=$3 args=$4
  shift 4
  local r
  # shellcheck disable=SC2086  # the bench arguments split at spaces
  r=$(env "$@" timeout 100 $lg bench $args 2>&1 | grep -E "^ +$row ")
  echo "$label [$*]: $(echo "$r" | awk '{print $3}') ms" | tee -a "$out/$file"
}

# step_ms LABEL SHAPE [ENV=VALUE...]: one line of decode ms a step at B = 1 and 16, 512 positions,
# compiled lane, under the given environment (an A/B knob), appended to $out/ab.txt and printed.
step_ms() {
  local label=$1 shape=$2
  shift 2
  local r
  r=$(env "$@" timeout 100 $lg bench --shape "$shape" --lane compiled --prompt-len 2 --batch 1,16 --context 512 \
    --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512")
  { echo "== $label $(basename "$shape") $*"; echo "$r"; } >> "$out/ab.txt"
  echo "$label $(basename "$shape"): $(echo "$r" | awk '{printf "B%s %s ms  ", $1, $3}')"
}

# b1_32k LABEL LANE [ENV=VALUE...]: the 32,768-position line of `lg bench` for one 8B sequence
# (issue 13's long-context bar) under the given environment, appended to $out/b1_32k.txt and printed.
b1_32k() {
  local label=$1 lane=$2
  shift 2
  local r
  r=$(env "$@" timeout 60 $lg bench --shape qwen3-8b --lane "$lane" --prompt-len 512 --decode-tokens 32 \
    --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "$label [$*]: $r" | tee -a "$out/b1_32k.txt"
}

# attn_ncu_32k LABEL LANE [ENV=VALUE...]: Nsight Compute's duration, instructions and active warps
# of two decode attention launches of one 8B sequence at 32,768 positions (compiled: the emitted
# k*_attention kernels; hand-written: attn_decode*), past the prefill's launches; the CSV in
# $out/ncu_attn_32k_LABEL.csv, the three metrics printed.
attn_ncu_32k() {
  local label=$1 lane=$2
  shift 2
  local ncu k='regex:^k[0-9]+_attention$'
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  [ "$lane" = handwritten ] && k='regex:attn_decode'
  env "$@" timeout 80 $ncu --clock-control none \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
    --csv -k "$k" --launch-skip 36 --launch-count 2 $lg bench --shape qwen3-8b --lane "$lane" --prompt-len 512 \
    --decode-tokens 4 --context 32768 > "$out/ncu_attn_32k_$label.csv" 2>&1
  echo "$label rc $?"
  grep -E '"(gpu__time_duration.sum|smsp__inst_executed.sum|sm__warps_active.avg.pct_of_peak_sustained_active)"' \
    "$out/ncu_attn_32k_$label.csv" | awk -F'","' '{print $5, $(NF-2), $NF}' | tail -3
}

hw_locks() {
  { timeout 100 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared
    timeout 100 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  } > "$out/locks_hw.txt" 2>&1
  grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_hw.txt" | tail -12
}

serve_load() {
  local tag=$1 bin=${SERVE_BIN:-$lg} sp
  shift
  local sfx=${tag:+_$tag} trace=()
  [ "${SERVE_TRACE:-0}" = 1 ] && trace=(LG_STEP_TRACE="$out/trace$sfx.csv")
  env "${trace[@]}" "$@" "$bin" serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve$sfx.log" 2>&1 &
  sp=$!
  for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
  echo "== ${tag:-serve} ($*), up at ${SECONDS}s"
  timeout 120 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
    --json "$out/load$sfx.json" > "$out/load$sfx.txt" 2>&1
  grep -E "output|TTFT|ITL|completed" "$out/load$sfx.txt"
  kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
  if [ ${#trace[@]} -gt 0 ]; then
    python3 - "$out/trace$sfx.csv" <<'PY'
import sys, statistics as st
rows = [l.split(',') for l in open(sys.argv[1]) if l[0].isdigit()]
rows = [(float(a), float(w)) for a, _, _, w, _ in rows]
gaps = [rows[i + 1][0] - rows[i][0] - rows[i][1] for i in range(len(rows) - 1)]
print(f"  host gaps: {len(gaps)} steps, sum {sum(gaps) / 1e3:.2f} s, median {st.median(gaps):.3f} ms")
PY
    xz -f "$out/trace$sfx.csv"
  fi
  xz -f "$out/load$sfx.json"
}

# qwen_tests FILTER [ENV=VALUE...]: the bundled qwen_lane_tests under a gtest filter and the given
# environment, the log in $out/qwen_tests_N.txt (N counts the calls), its verdict lines printed;
# returns the binary's status (124: it ran past its 120 s).
qwen_tests() {
  local f=$1 rc
  shift
  # Numbered by the logs already there, not a counter: a call piped into grep runs in a subshell.
  qwen_tests_n=$(($(find "$out" -maxdepth 1 -name 'qwen_tests_*.txt' | wc -l) + 1))
  env "$@" LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /tmp/lgb/bin/qwen_lane_tests --gtest_filter="$f" \
    > "$out/qwen_tests_$qwen_tests_n.txt" 2>&1
  rc=$?
  echo "qwen_tests $qwen_tests_n [$f] [$*] rc $rc"
  grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is" "$out/qwen_tests_$qwen_tests_n.txt" | head -30
  return $rc
}

# ab_rounds FILE ROUNDS "BENCH ARGS" NAME:[ENV=VALUE[,ENV=VALUE...]]...: `lg bench BENCH ARGS` once
# a variant a round, the variants alternated (machine drift falls on all of them alike), each
# run's lines under "== round N NAME" in $out/FILE; then prints ab_table FILE.
ab_rounds() {
  local file=$1 rounds=$2 args=$3 round v envs
  shift 3
  for round in $(seq "$rounds"); do
    for v in "$@"; do
      envs=${v#*:}
      # shellcheck disable=SC2086  # the bench arguments and the variant's settings split
      { echo "== round $round ${v%%:*}"
        env ${envs//,/ } timeout 120 $lg bench $args 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |skipped"
      } >> "$out/$file"
    done
  done
  ab_table "$file"
}

# ab_table FILE: the step ms of $out/FILE (lg bench lines under "== round N [SHAPE] VARIANT"
# headers, as the session-24 call scripts append them) side by side: a line a (shape, batch,
# context), each run's VARIANT:ms in file order.
ab_table() {
  python3 - "$out/$1" <<'PY'
import sys, collections
rows = collections.defaultdict(list)
key, variant = (), None
for line in open(sys.argv[1]):
    if line.startswith("=="):
        words = line.split()[3:]  # past "== round N"
        key, variant = tuple(words[:-1]), words[-1]
        continue
    f = line.split()
    if len(f) > 3 and f[0].isdigit():
        rows[key + (int(f[0]), int(f[1].lstrip('+')))].append((variant, f[2]))
for k in sorted(rows):
    print(k, " ".join(f"{v}:{ms}" for v, ms in rows[k]))
PY
}

# h200_rows_and_bars [ENV=VALUE,...]: on an H200 only (returns at once on any other card, printing
# its name), issue 13's open question there: the TMA row GEMV (LG_QWEN_GEMV_ROWS=2, 3 or 4 stages,
# 8 consumer warps) against cuBLASLt at 2-32 sequences of 8B and 0.6B ($out/h200_rows*.txt), then
# the 8B bars (1-128 sequences of 160 and 512 positions) at the default, on the TMA form, and on
# the TMA form with the given settings if any ($out/bench_8b.txt).
h200_rows_and_bars() {
  local gpu r=LG_QWEN_GEMV_ROWS=2 bench v envs
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
  case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; return 0 ;; esac
  ab_rounds h200_rows.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
    cublaslt: s3:$r,LG_QWEN_TMA_STAGES=3 s4:$r,LG_QWEN_TMA_STAGES=4
  ab_rounds h200_rows_06b.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
    cublaslt: tma:$r tmakh:$r,LG_QWEN_TMA_KHALVES=1
  bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 --kv-tokens 80000"
  { for v in "default:" "tma:$r" ${1:+"tma+:$r,$1"}; do
      echo "== handwritten ${v%%:*}"
      envs=${v#*:}
      # shellcheck disable=SC2086  # the bench arguments and settings split at spaces
      env ${envs//,/ } timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth"
    done
  } | tee "$out/bench_8b.txt"
}

# ncu_capture FILE TIMEOUT "BENCH ARGS" NCU_ARGS...: $out/FILE.csv of Nsight Compute's
# gpu__time_duration of `lg bench ARGS`' kernels, clocks and caches as they run.
ncu_capture() {
  local file=$1 limit=$2 args=$3
  shift 3
  local ncu
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  # shellcheck disable=SC2086  # the bench arguments split
  timeout "$limit" $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
    "$@" $lg bench $args > "$out/$file.csv" 2>&1
  echo "ncu rc $?"
}

# ncu_durations FILE COUNT "BENCH ARGS": $out/FILE.csv of Nsight Compute's gpu__time_duration for
# COUNT kernels past the first 3,000 launches (the prefill's and the first steps'), clocks and
# caches as they run, and $out/FILE_summary.txt, printed: per kernel name the count, sum, min,
# median and max.
ncu_durations() {
  local file=$1 count=$2 args=$3
  ncu_capture "$file" 150 "$args" --launch-skip 3000 --launch-count "$count"
  python3 - "$out/$file.csv" <<'PY' | tee "$out/${file}_summary.txt"
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10 and r[-3] == "gpu__time_duration.sum"]
by = collections.defaultdict(list)
for r in rows:
    by[r[4][:60]].append(float(r[-1].replace(",", "")))
unit = rows[0][-2] if rows else "?"
print(len(rows), "kernels, unit", unit)
for k, v in sorted(by.items(), key=lambda kv: -sum(kv[1])):
    v.sort()
    print(f"{k:60s} n {len(v):4d} sum {sum(v):10.1f} min {v[0]:8.1f} med {v[len(v)//2]:8.1f} max {v[-1]:8.1f}")
PY
}

# ncu_last_step FILE FIRST_RE LAST_RE "BENCH ARGS" [SKIP]: the kernels of the run's last step
# (from the last launch matching FIRST_RE before the last one matching LAST_RE), per kernel and
# grid: count, sum, share of the step, median; into $out/FILE_summary.txt.
ncu_last_step() {
  local file=$1 first=$2 last=$3 args=$4 skip=${5:-0}
  ncu_capture "$file" 200 "$args" --launch-skip "$skip"
  python3 - "$out/$file.csv" "$first" "$last" <<'PY' | tee "$out/${file}_summary.txt"
import csv, re, sys, collections
lines = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = next(r for r in lines if "Kernel Name" in r)
col = {name: i for i, name in enumerate(head)}
rows = [r for r in lines if r[col["Metric Name"]] == "gpu__time_duration.sum"]
name = lambda r: r[col["Kernel Name"]]
end = max(i for i, r in enumerate(rows) if re.search(sys.argv[3], name(r)))
start = max(i for i in range(end + 1) if re.search(sys.argv[2], name(rows[i])))
step = rows[start:end + 1]
unit = step[0][col["Metric Unit"]]
by = collections.defaultdict(list)
for r in step:
    by[(name(r)[:70], r[col["Grid Size"]])].append(float(r[col["Metric Value"]].replace(",", "")))
total = sum(sum(v) for v in by.values())
print(f"{len(rows)} kernels profiled; the last step: launches {start}..{end} ({len(step)}), sum {total:.1f} {unit}")
for (k, grid), v in sorted(by.items(), key=lambda kv: -sum(kv[1])):
    v.sort()
    print(f"{k:70s} {grid:>16s} n {len(v):4d} sum {sum(v):10.1f} ({100 * sum(v) / total:4.1f}%) med {v[len(v)//2]:8.1f}")
PY
}
