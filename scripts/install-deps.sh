#!/usr/bin/env bash
# Installs everything jitllm needs to build and test on Debian 12 (apt), plus the Node.js
# `openai` client used by the server tests. Idempotent; safe to run twice.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(build-essential cmake ninja-build pkg-config git
      nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libxxhash-dev
      libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev time
      libzstd-dev zstd
      opencl-c-headers ocl-icd-libopencl1 pocl-opencl-icd)  # the OpenCL backend: headers, loader, PoCL's CPU device for its tests
# test only: Jinja2 is the oracle the chat-template renderer is compared with (template_jinja_oracle)
PKGS+=(python3 python3-jinja2)
missing=()
for p in "${PKGS[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Node.js + the real `openai` client (v6, pinned by tests/server/package-lock.json) for the server
# tests; installed into tests/server/node_modules (repo-local, ignored by git).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f "$root/tests/server/node_modules/openai/package.json" ] ||
   [ "$root/tests/server/package-lock.json" -nt "$root/tests/server/node_modules/.package-lock.json" ]; then
    (cd "$root/tests/server" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "install-deps: ok (${#missing[@]} packages installed; node $(node --version), openai $(node -p \
    "require('$root/tests/server/node_modules/openai/package.json').version" 2>/dev/null || echo '?'))"
