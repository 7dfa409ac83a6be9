#!/usr/bin/env bash
# Runs every cargo-fuzz target for FUZZ_SECONDS seconds each (default 60), one at a time.
#
#   FUZZ_SECONDS=60 bash scripts/fuzz.sh            # all targets
#   FUZZ_SECONDS=300 bash scripts/fuzz.sh sse cast  # some targets
#
# Needs a nightly toolchain and cargo-fuzz (see docs/fuzzing.md). Seeds from fuzz/seeds/ are
# copied into fuzz/corpus/ (kept between runs, not committed); crashes land in
# fuzz/artifacts/<target>/. Stops at the first target that finds a failure.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
rss_mb="${FUZZ_RSS_MB:-2048}"
timeout_s="${FUZZ_TIMEOUT:-10}"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: needs a nightly toolchain: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: needs cargo-fuzz: cargo install cargo-fuzz --locked" >&2
    exit 2
fi

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# The fuzz crate is its own workspace with its own target dir (nightly + sanitizer flags).
unset CARGO_TARGET_DIR
cargo +nightly fuzz build

for target in "${targets[@]}"; do
    corpus="fuzz/corpus/$target"
    mkdir -p "$corpus"
    if [ -d "fuzz/seeds/$target" ]; then
        cp -n fuzz/seeds/"$target"/* "$corpus"/ 2>/dev/null || true
    fi
    dict="fuzz/json.dict"
    if [ "$target" = sse ]; then
        dict="fuzz/sse.dict"
    fi
    echo "== $target: ${seconds}s"
    cargo +nightly fuzz run "$target" "$corpus" -- \
        -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout="$timeout_s" \
        -dict="$dict" -print_final_stats=1
done
