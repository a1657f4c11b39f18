#!/usr/bin/env bash
# ctest entry for the server tests: runs a test file (default server.test.mjs; node's built-in
# test runner, the real `openai` npm client) against the jitllm binary given as $1. Exits 77 (ctest SKIP) when node or
# the client package is missing; scripts/install-deps.sh installs both.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:?usage: run-node-tests.sh JITLLM_BINARY [TEST_FILE]}"
file="${2:-server.test.mjs}"
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed (scripts/install-deps.sh installs it)"; exit 77
fi
if [ ! -f "$here/node_modules/openai/package.json" ]; then
    echo "SKIP: $here/node_modules/openai missing (run scripts/install-deps.sh)"; exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then echo "SKIP: node $major < 20"; exit 77; fi
export JITLLM_BIN="$bin"
cd "$here" && exec node --test --test-reporter=spec "$file"
