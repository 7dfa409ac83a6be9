#!/bin/sh
# Runs the official MCP conformance suite against opkit, inside a private network namespace
# (the suite's scenario servers bind all interfaces): every server scenario against the
# fixture server and every client scenario with the opkit client, for each protocol
# revision opkit serves (2025-11-25 and 2026-07-28), then every extension scenario (tasks,
# skills, OAuth extensions) one by one; each pass is checked against its expected-failures
# file. Started by adapters/tests/mcp_conformance.rs as
#   unshare -n sh run.sh <conformance_server binary> <conformance_client binary> [expected-failures dir]
# (the directory defaults to this script's; it holds expected-failures-<revision>.yml and
# expected-failures-extensions.yml).
# Exits non-zero when a scenario fails that is not listed, or a listed one passes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
server_binary=$1
client_binary=$2
expected_dir=${3:-"$here"}
export PATH="$here/node_modules/.bin:$PATH"
ip link set lo up || exit 2
# Nothing else listens in this namespace: a fixed port is free.
port=3001
log=$(mktemp)
"$server_binary" --port "$port" --skills "$here/skills" >"$log" 2>&1 &
server_pid=$!
tries=0
until grep -q "listening on" "$log"; do
    tries=$((tries + 1))
    if [ "$tries" -gt 300 ] || ! kill -0 "$server_pid" 2>/dev/null; then
        echo "the fixture server did not start:" >&2
        cat "$log" >&2
        kill "$server_pid" 2>/dev/null
        exit 2
    fi
    sleep 0.1
done
url="http://127.0.0.1:$port/mcp"
# Every invocation saves its checks here: exercised.mjs then fails a scenario that passed
# with none of its checks run (all SKIPPED), unless not-exercised.txt lists it with a reason.
results=$(mktemp -d)
status=0
for revision in 2025-11-25 2026-07-28; do
    expected="$expected_dir/expected-failures-$revision.yml"
    echo "=== server scenarios, $revision"
    conformance server --url "$url" --suite all --spec-version "$revision" \
        -o "$results/server-$revision" --expected-failures "$expected" || status=1
    echo "=== client scenarios, $revision"
    conformance client --command "$client_binary" --suite all --spec-version "$revision" \
        -o "$results/client-$revision" --timeout 15000 --expected-failures "$expected" || status=1
done
# Extension scenarios are outside the revisions: each is run by name.
expected="$expected_dir/expected-failures-extensions.yml"
for side in server client; do
    echo "=== $side scenarios, extensions"
    for scenario in $(conformance list --"$side" | sed -n 's/^  - \([^ ]*\) \[extension\]$/\1/p'); do
        if [ "$side" = server ]; then
            conformance server --url "$url" --scenario "$scenario" \
                -o "$results/server-extensions" --expected-failures "$expected" || status=1
        else
            conformance client --command "$client_binary" --scenario "$scenario" \
                -o "$results/client-extensions" --timeout 15000 --expected-failures "$expected" || status=1
        fi
    done
done
kill "$server_pid"
wait "$server_pid" 2>/dev/null
rm -f "$log"
echo "=== checks exercised per scenario"
node "$here/exercised.mjs" "$results" "$expected_dir/not-exercised.txt" || status=1
rm -rf "$results"
echo "=== exit $status"
exit "$status"
