#!/usr/bin/env bash
# Build time of N operations written with opkit, rmcp and axum (see generate.py): after the
# dependencies are built, `touch src/lib.rs` and time `cargo check`, an incremental debug
# `cargo build`, and a non-incremental one (CARGO_INCREMENTAL=0), best of RUNS (3) each.
#
#   bash benches/build-time/run.sh            # N = 100 and 500
#   SIZES=100 RUNS=1 bash benches/build-time/run.sh
#
# Prints one markdown table per size, with each crate's time and its ratio to rmcp.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${BUILD_TIME_DIR:-$here/target}"
runs="${RUNS:-3}"
for n in ${SIZES:-100 500}; do
    dir="$work/n$n"
    python3 "$here/generate.py" "$n" "$dir"
    cd "$dir"
    # One target dir for every size: the dependencies are built once.
    export CARGO_TARGET_DIR="$work/target"
    # Dependencies (and a first build of each crate) once, for both profiles used.
    cargo check -q --workspace
    cargo build -q --workspace
    declare -A best=()
    for crate in bt_opkit bt_opkit_fields bt_rmcp bt_axum; do
        for mode in check build build-noincr; do
            fastest=""
            for _ in $(seq 1 "$runs"); do
                touch "$crate/src/lib.rs"
                start=$(date +%s.%N)
                case "$mode" in
                    check) cargo check -q -p "$crate" ;;
                    build) cargo build -q -p "$crate" ;;
                    build-noincr) CARGO_INCREMENTAL=0 cargo build -q -p "$crate" ;;
                esac
                took=$(echo "$(date +%s.%N) - $start" | bc)
                if [ -z "$fastest" ] || [ "$(echo "$took < $fastest" | bc)" = 1 ]; then fastest=$took; fi
            done
            best[$crate.$mode]=$fastest
        done
    done
    echo
    echo "### $n operations (best of $runs, seconds; ratio to rmcp)"
    echo
    echo "| crate | cargo check | build (incremental) | build (CARGO_INCREMENTAL=0) |"
    echo "|---|---|---|---|"
    for crate in bt_opkit bt_opkit_fields bt_rmcp bt_axum; do
        row="| $crate"
        for mode in check build build-noincr; do
            value=${best[$crate.$mode]}
            ratio=$(echo "scale=2; $value / ${best[bt_rmcp.$mode]}" | bc)
            row="$row | $(printf '%.2f' "$value") (${ratio}×)"
        done
        echo "$row |"
    done
    unset best
    cd "$here"
done
