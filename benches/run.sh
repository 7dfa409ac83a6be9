#!/usr/bin/env bash
# Runs the side-by-side benchmarks (benches/benches/compare.rs) and regenerates
# docs/benchmarks.md from their output.
#
#   bash benches/run.sh                 # everything, 3 runs of 100 samples per bench (~5 minutes)
#   RUNS=1 SAMPLES=30 bash benches/run.sh   # quicker, noisier
#   BENCH_FILTER=tiny bash benches/run.sh   # only benches whose path contains "tiny"
#
# After the divan suite (benches/benches/compare.rs), the serving benches
# (benches/benches/serving.rs: HTTP, MCP Streamable HTTP and SSE servers on loopback, driven
# by a load generator, and WebSocket and Redis calls with 1, 8 and 64 in flight) run RUNS
# rounds per side. Both files hold the equal-work peers of issue 36 beside opkit.
#
# benches/ is its own cargo workspace (target dir benches/target), so the root
# `cargo test --workspace` never builds the peer frameworks. The Redis benches need
# `redis-server` on PATH (bash scripts/install-peers.sh) or REDIS_URL; without either they
# are skipped. The Redis Cluster benches need `redis-server` and `redis-cli` (a 3-master
# cluster on loopback ports is started here) or REDIS_CLUSTER_NODES.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"

redis_pid=""
cluster_pids=()
cluster_dir=""
cleanup() {
    if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; fi
    for pid in "${cluster_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [ -n "$cluster_dir" ]; then rm -rf "$cluster_dir"; fi
    if [ -n "${tls_dir:-}" ]; then rm -rf "$tls_dir"; fi
}
trap cleanup EXIT

free_port() {
    # A loopback port below 55000 whose cluster bus port (+10000) is free too.
    python3 -c '
import socket
for _ in range(200):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    if port > 55000: continue
    try:
        b = socket.socket(); b.bind(("127.0.0.1", port + 10000)); b.close()
    except OSError: continue
    print(port); break
'
}

if [ -z "${REDIS_URL:-}" ] && command -v redis-server >/dev/null 2>&1; then
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    tls_args=()
    if command -v openssl >/dev/null 2>&1; then
        # A TLS port on the same server, for the tls_connect group (plaintext vs TLS).
        tls_dir="$(mktemp -d)"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
            -subj /CN=opkit-bench-ca -keyout "$tls_dir/ca.key" -out "$tls_dir/ca.pem" >/dev/null 2>&1
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost \
            -keyout "$tls_dir/server.key" -out "$tls_dir/server.csr" >/dev/null 2>&1
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$tls_dir/san.ext"
        openssl x509 -req -in "$tls_dir/server.csr" -CA "$tls_dir/ca.pem" -CAkey "$tls_dir/ca.key" \
            -CAcreateserial -days 1 -extfile "$tls_dir/san.ext" -out "$tls_dir/server.pem" >/dev/null 2>&1
        tls_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
        tls_args=(--tls-port "$tls_port" --tls-cert-file "$tls_dir/server.pem"
            --tls-key-file "$tls_dir/server.key" --tls-ca-cert-file "$tls_dir/ca.pem"
            --tls-auth-clients no)
        export REDIS_TLS_URL="rediss://127.0.0.1:$tls_port/" REDIS_TLS_CA="$tls_dir/ca.pem"
    fi
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no "${tls_args[@]}" >/dev/null 2>&1 &
    redis_pid=$!
    for _ in $(seq 1 50); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
        sleep 0.1
    done
    export REDIS_URL="redis://127.0.0.1:$port/"
fi

# ----- Redis Cluster benches: 3 masters, no replicas, no persistence, loopback only -----
if [ -z "${REDIS_CLUSTER_NODES:-}" ] && command -v redis-server >/dev/null 2>&1 \
    && command -v redis-cli >/dev/null 2>&1; then
    cluster_dir="$(mktemp -d)"
    nodes=()
    addresses=()
    for _ in 1 2 3; do
        port="$(free_port)"
        mkdir -p "$cluster_dir/$port"
        redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
            --cluster-config-file nodes.conf --cluster-announce-ip 127.0.0.1 \
            --save '' --appendonly no --dir "$cluster_dir/$port" >/dev/null 2>&1 &
        cluster_pids+=($!)
        nodes+=("redis://127.0.0.1:$port/")
        addresses+=("127.0.0.1:$port")
    done
    for address in "${addresses[@]}"; do
        for _ in $(seq 1 50); do
            if redis-cli -h 127.0.0.1 -p "${address##*:}" PING >/dev/null 2>&1; then break; fi
            sleep 0.1
        done
    done
    redis-cli --cluster create "${addresses[@]}" --cluster-yes >/dev/null
    for _ in $(seq 1 100); do
        if redis-cli -h 127.0.0.1 -p "${addresses[0]##*:}" CLUSTER INFO | grep -q cluster_state:ok; then break; fi
        sleep 0.1
    done
    REDIS_CLUSTER_NODES="$(IFS=,; echo "${nodes[*]}")"
    export REDIS_CLUSTER_NODES
fi

mkdir -p target
if [ -n "${BENCH_FILTER:-}" ]; then
    cargo bench --bench compare -- ${SAMPLES:+--sample-count "$SAMPLES"} "$BENCH_FILTER"
    SERVING_FILTER="$BENCH_FILTER" ROUNDS="${RUNS:-3}" cargo bench --bench serving
    echo "filtered run: docs/benchmarks.md left as is"
    exit 0
fi
# The whole suite RUNS times; the report takes each bench's best median across the runs, so a
# burst of load from elsewhere on a shared machine does not decide a row.
outputs=()
for run in $(seq 1 "${RUNS:-3}"); do
    out="target/bench-output-$run.txt"
    cargo bench --bench compare -- ${SAMPLES:+--sample-count "$SAMPLES"} | tee "$out"
    outputs+=("$out")
done
# The serving benches (real loopback servers and a load generator), RUNS rounds per side.
serving_out="target/serving-output.txt"
ROUNDS="${RUNS:-3}" cargo bench --bench serving | tee "$serving_out"
outputs+=("$serving_out")
# The OpenAPI import section (benches/openapi-import/run.sh) is kept as it is.
import_section="$(sed -n '/<!-- openapi-import:begin/,/<!-- openapi-import:end -->/p' "$root/docs/benchmarks.md" 2>/dev/null || true)"
python3 "$here/report.py" "$here/Cargo.lock" "${outputs[@]}" > "$root/docs/benchmarks.md"
if [ -n "$import_section" ]; then
    printf '\n%s\n' "$import_section" >> "$root/docs/benchmarks.md"
fi
echo "wrote docs/benchmarks.md"
