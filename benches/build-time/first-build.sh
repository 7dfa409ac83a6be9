#!/usr/bin/env bash
# The first build a new user waits for (issue 50): the service of first_build.py (10
# operations served over HTTP and MCP) written with opkit and with axum + rmcp, each built
# from a cold target dir, debug and release, after `cargo fetch` (downloads are not timed).
#
#   bash benches/build-time/first-build.sh
#
# Prints a markdown table: seconds per build, the crates compiled (packages in the build's
# dependency tree, the service included) and the packages present in two or more versions.
# Run it on an otherwise idle machine: every build uses all cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${FIRST_BUILD_DIR:-$here/target/first-build}"
rm -rf "$work"
python3 "$here/first_build.py" "$work"
declare -A took=() crates=() twice=()
for crate in fb_opkit fb_peers; do
    cd "$work/$crate"
    cargo fetch -q
    # Packages in the build (normal and build dependencies, for the host and the target).
    crates[$crate]=$(cargo tree -e normal,build --prefix none | sed 's/ (.*//; s/ (\*)//' | sort -u | wc -l)
    # Packages in two or more versions (a version built for host and target counts once).
    twice[$crate]=$(cargo tree -e normal,build -d --depth 0 --prefix none | grep -v '^$' \
        | awk '{print $1, $2}' | sort -u | awk '{print $1}' | uniq -d | tr '\n' ' ')
    for profile in debug release; do
        rm -rf target
        flag=()
        if [ "$profile" = release ]; then flag=(--release); fi
        start=$(date +%s.%N)
        cargo build -q "${flag[@]}"
        took[$crate.$profile]=$(echo "$(date +%s.%N) - $start" | bc)
        "target/$profile/$crate" --check
    done
    rm -rf target
done
echo
echo "| service | cold debug build | cold release build | crates compiled | in two versions |"
echo "|---|---:|---:|---:|---|"
for crate in fb_opkit fb_peers; do
    printf '| %s | %.0f s (%.2f×) | %.0f s (%.2f×) | %s | %s |\n' "$crate" \
        "${took[$crate.debug]}" "$(echo "scale=2; ${took[$crate.debug]} / ${took[fb_peers.debug]}" | bc)" \
        "${took[$crate.release]}" "$(echo "scale=2; ${took[$crate.release]} / ${took[fb_peers.release]}" | bc)" \
        "${crates[$crate]}" "${twice[$crate]:-none}"
done
