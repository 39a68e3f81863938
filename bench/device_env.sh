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
