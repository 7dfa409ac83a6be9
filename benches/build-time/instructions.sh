#!/usr/bin/env bash
# Instructions rustc executes to `cargo check` N operations written with opkit and rmcp (see
# generate.py), counted by valgrind's cachegrind: unlike wall time on a shared 2-core machine,
# the count is the same run after run, so an expansion change of a few percent is readable.
#
#   bash benches/build-time/instructions.sh          # N = 20 and 40
#   SIZES="20 60" bash benches/build-time/instructions.sh
#   CRATES="bt_opkit bt_rmcp" bash benches/build-time/instructions.sh   # a subset
#   MODES=incr bash benches/build-time/instructions.sh                   # one mode (full, incr)
#
# For an A/B of opkit alone, `CRATES=bt_opkit SIZES="2 3"` takes ~1.5 minutes and gives the
# same per-operation counts as 20 and 40 (142.0 M / 55.0 M against 141.5 M / 55.0 M at
# `52c39a8`); rmcp's grow faster than linearly (one `#[tool_router]` fn holds every tool:
# 139.2 M / 50.2 M at 2 and 3, 140.7 M / 52.2 M at 20 and 40), so ratios need the default.
#
# For each crate and size, after its dependencies are checked: `touch src/lib.rs`, then a
# non-incremental `cargo check` (everything the front end does) and an incremental one after a
# warm-up check (what an edit that changes nothing costs: expansion, lowering, hashing and the
# dependency graph's reuse). Only the bench crate's rustc runs under cachegrind (proc macros
# run inside it, so their execution counts). Prints the counts and, between the two sizes,
# the instructions per operation and their ratio to rmcp's. Needs `valgrind`; ~1 minute per
# run at 20 operations.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -n "${CG_CRATE:-}" ]; then
    # Run as the RUSTC_WRAPPER this script sets: rustc under cachegrind for $CG_CRATE only.
    rustc="$1"
    shift
    if printf '%s\n' "$@" | grep -qx "$CG_CRATE"; then
        exec valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$CG_OUT" \
            --log-file="$CG_OUT.log" "$rustc" "$@"
    fi
    exec "$rustc" "$@"
fi
command -v valgrind > /dev/null || { echo "instructions.sh needs valgrind" >&2; exit 1; }
work="${BUILD_TIME_DIR:-$here/target}/instructions"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/target}"
sizes=(${SIZES:-20 40})
crates=(${CRATES:-bt_opkit bt_opkit_fields bt_rmcp})
modes=(${MODES:-full incr})
declare -A count=()
# One run of `cargo check -p $2` in workspace $1 under cachegrind; mode `full` or `incr`.
measure() {
    local dir="$1" crate="$2" mode="$3" out="$work/$crate.$3.cg"
    cd "$dir"
    touch "$crate/src/lib.rs"
    if [ "$mode" = incr ]; then
        cargo check -q -p "$crate"
        touch "$crate/src/lib.rs"
    fi
    local incremental=0
    [ "$mode" = incr ] && incremental=1
    CG_CRATE="$crate" CG_OUT="$out" RUSTC_WRAPPER="$here/instructions.sh" \
        CARGO_INCREMENTAL=$incremental cargo check -q -p "$crate"
    awk '/^summary/ {print $2}' "$out"
}
for n in "${sizes[@]}"; do
    dir="$work/n$n"
    python3 "$here/generate.py" "$n" "$dir"
    (cd "$dir" && cargo check -q $(printf -- '-p %s ' "${crates[@]}"))
    for crate in "${crates[@]}"; do
        for mode in "${modes[@]}"; do
            count[$crate.$mode.$n]=$(measure "$dir" "$crate" "$mode")
        done
    done
done
first=${sizes[0]}
last=${sizes[${#sizes[@]}-1]}
echo
echo "### Instructions of \`cargo check\` (cachegrind; G = 10^9; per operation between $first and $last)"
echo
echo "| crate | mode | $first operations | $last operations | per operation | ratio to rmcp |"
echo "|---|---|---:|---:|---:|---:|"
for mode in "${modes[@]}"; do
    rmcp=
    if [ -n "${count[bt_rmcp.$mode.$last]:-}" ]; then
        rmcp=$(echo "(${count[bt_rmcp.$mode.$last]} - ${count[bt_rmcp.$mode.$first]}) / ($last - $first)" | bc)
    fi
    for crate in "${crates[@]}"; do
        a=${count[$crate.$mode.$first]}
        b=${count[$crate.$mode.$last]}
        per=$(echo "($b - $a) / ($last - $first)" | bc)
        ratio="—"
        [ -n "$rmcp" ] && ratio=$(printf '%.3f×' "$(echo "$per / $rmcp" | bc -l)")
        printf '| %s | %s | %.3f G | %.3f G | %.1f M | %s |\n' "$crate" \
            "$([ "$mode" = full ] && echo "non-incremental" || echo "incremental, after a touch")" \
            "$(echo "$a / 10^9" | bc -l)" "$(echo "$b / 10^9" | bc -l)" \
            "$(echo "$per / 10^6" | bc -l)" "$ratio"
    done
done
