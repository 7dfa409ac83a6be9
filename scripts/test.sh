#!/usr/bin/env bash
# Runs the whole opkit test suite on a fresh machine: installs what the tests need, then
# runs every test of the workspace (unit, integration, UI and doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."

# Peers the suite talks to are installed by scripts/install-peers.sh (idempotent).
bash scripts/install-peers.sh

cargo test --workspace --all-features --no-fail-fast "$@"
