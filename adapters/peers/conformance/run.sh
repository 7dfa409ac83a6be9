#!/bin/sh
# Runs the official MCP conformance suite against opkit, inside a private network namespace
# (the suite's scenario servers bind all interfaces): every server scenario against the
# fixture server, every client scenario with the opkit client, both checked against the
# expected-failures file. Started by adapters/tests/mcp_conformance.rs as
#   unshare -n sh run.sh <conformance_server binary> <conformance_client binary> [expected failures]
# (the expected-failures file defaults to expected-failures.yml beside this script).
# Exits non-zero when a scenario fails that is not listed, or a listed one passes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
server_binary=$1
client_binary=$2
expected=${3:-"$here/expected-failures.yml"}
export PATH="$here/node_modules/.bin:$PATH"
ip link set lo up || exit 2
# Nothing else listens in this namespace: a fixed port is free.
port=3001
log=$(mktemp)
"$server_binary" --port "$port" >"$log" 2>&1 &
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
echo "=== server scenarios"
conformance server --url "http://127.0.0.1:$port/mcp" --suite all \
    --expected-failures "$expected"
server_status=$?
kill "$server_pid"
wait "$server_pid" 2>/dev/null
rm -f "$log"
echo "=== client scenarios"
conformance client --command "$client_binary" --suite all --timeout 15000 \
    --expected-failures "$expected"
client_status=$?
echo "=== server exit $server_status, client exit $client_status"
[ "$server_status" -eq 0 ] && [ "$client_status" -eq 0 ]
