#!/usr/bin/env bash
# Bytes of the incremental state rustc keeps per operation, opkit against rmcp (see
# generate.py): after an incremental `cargo check` that follows a `touch`, the sizes of the
# session's `dep-graph.bin` (the dependency graph an edit's check loads, re-validates and
# writes back) and `query-cache.bin` (the results it reloads), at two sizes; the difference
# divided by the operations between them is what one operation adds.
#
#   bash benches/build-time/dep-graph.sh                  # N = 20 and 40
#   SIZES="100 200" CRATES="bt_opkit bt_rmcp" bash benches/build-time/dep-graph.sh
#
# An edit's `cargo check` of a large crate spends its time in proportion to this graph more
# than to the instructions `instructions.sh` counts (loading and writing it is memory-bound),
# so the two answer different questions: what the compiler computes per operation, and what
# it keeps. The counts are the same run after run; ~1 minute at the default sizes once the
# dependencies are checked.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${BUILD_TIME_DIR:-$here/target}/dep-graph"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/target}"
export CARGO_INCREMENTAL=1
sizes=(${SIZES:-20 40})
crates=(${CRATES:-bt_opkit bt_opkit_fields bt_rmcp})
declare -A graph=() cache=()
for n in "${sizes[@]}"; do
    dir="$work/n$n"
    python3 "$here/generate.py" "$n" "$dir"
    cd "$dir"
    for crate in "${crates[@]}"; do
        # A first check, then the measured one after a touch (an edit that changes nothing).
        cargo check -q -p "$crate"
        touch "$crate/src/lib.rs"
        cargo check -q -p "$crate"
        session=$(ls -td "$CARGO_TARGET_DIR"/debug/incremental/"$crate"-*/s-*/ | head -1)
        graph[$crate.$n]=$(stat -c %s "$session/dep-graph.bin")
        cache[$crate.$n]=$(stat -c %s "$session/query-cache.bin")
    done
done
first=${sizes[0]}
last=${sizes[${#sizes[@]}-1]}
per() { echo "($2 - $1) / ($last - $first) / 1000" | bc -l; }
echo
echo "### Incremental state per operation (kB, between $first and $last operations)"
echo
echo "| crate | \`dep-graph.bin\` | ratio to rmcp | \`query-cache.bin\` | ratio to rmcp |"
echo "|---|---:|---:|---:|---:|"
for crate in "${crates[@]}"; do
    g=$(per "${graph[$crate.$first]}" "${graph[$crate.$last]}")
    q=$(per "${cache[$crate.$first]}" "${cache[$crate.$last]}")
    gr="—" qr="—"
    if [ -n "${graph[bt_rmcp.$last]:-}" ]; then
        gr=$(printf '%.3f×' "$(echo "$g / $(per "${graph[bt_rmcp.$first]}" "${graph[bt_rmcp.$last]}")" | bc -l)")
        qr=$(printf '%.3f×' "$(echo "$q / $(per "${cache[bt_rmcp.$first]}" "${cache[bt_rmcp.$last]}")" | bc -l)")
    fi
    printf '| %s | %.1f | %s | %.1f | %s |\n' "$crate" "$g" "$gr" "$q" "$qr"
done
