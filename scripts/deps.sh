#!/usr/bin/env bash
# Installs the Debian 12 packages lanegraph builds with (README.md says why each is there).
# Skips apt when everything is already installed. Needs root (or sudo).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      nlohmann-json3-dev libpcre2-dev libfmt-dev libcli11-dev libcpp-httplib-dev
      libopenblas-dev libutf8proc-dev libxxhash-dev libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
      python3 python3-jinja2)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends "${missing[@]}"
