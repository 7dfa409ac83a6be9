#!/usr/bin/env python3
"""Turns divan output from benches/run.sh into docs/benchmarks.md (stdout).

usage: report.py CARGO_LOCK BENCH_OUTPUT [BENCH_OUTPUT ...]

With several outputs (runs of the whole suite), each bench's figure is its best median across
the runs.
"""

import datetime
import os
import platform
import re
import subprocess
import sys
import tomllib

ITEMS = 1000  # items per stream iteration (benches/benches/compare.rs)
UNITS = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
LINE = re.compile(r"^(?P<prefix>[│ ]*)(?:├─|╰─)\s*(?P<name>\S+)(?P<rest>.*)$")


def parse_time(text):
    match = re.match(r"\s*([0-9.]+)\s*(ps|ns|µs|us|ms|s)\s*$", text)
    return float(match.group(1)) * UNITS[match.group(2)] if match else None


def parse(path):
    """{"group::bench": median_ns}"""
    medians, stack = {}, []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            match = LINE.match(line.rstrip("\n"))
            if not match:
                continue
            depth = len(match.group("prefix")) // 3
            stack = stack[:depth] + [match.group("name")]
            columns = match.group("rest").split("│")
            if len(columns) >= 3:
                median = parse_time(columns[2])
                if median is not None:
                    medians["::".join(stack)] = median
    return medians


def fmt_ns(ns):
    if ns is None:
        return "—"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e4:
        return f"{ns / 1e3:.1f} µs"
    if ns >= 100:
        return f"{ns:,.0f} ns".replace(",", " ")
    return f"{ns:.1f} ns"


def percent(part, whole):
    """`part` as a percentage of `whole`, with two significant digits below 10%."""
    value = part / whole * 100
    return f"{value:.0f}%" if value >= 10 else f"{value:.2g}%"


def ratio(a, b):
    return f"{a / b:.2f}×" if a is not None and b else "—"


def sh(command):
    try:
        return subprocess.run(command, shell=True, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def versions(lock_path):
    with open(lock_path, "rb") as handle:
        lock = tomllib.load(handle)
    wanted = ["jsonrpsee", "tarpc", "async-graphql", "jsonschema", "serde_json", "tokio", "redis", "divan"]
    found = {}
    for package in lock.get("package", []):
        if package["name"] in wanted:
            found.setdefault(package["name"], package["version"])
    return [(name, found[name]) for name in wanted if name in found]


UNARY_ROWS = [
    ("direct_typed", "direct `.await` of the typed fn"),
    ("direct_typed_plus_envelope", "direct `.await` + `local_envelope`"),
    ("json_floor", "**JSON floor**: `T::deserialize(&Value)` + call + `to_value`"),
    ("json_floor_jsonschema", "JSON floor + compiled `jsonschema` input check"),
    ("opkit_execute", "**opkit** `registry.execute` (Value in, envelope out)"),
    ("opkit_typed_call", "**opkit** typed call `add::call(&ctx, ..)`"),
    ("opkit_protocol_memory", "**opkit** call protocol over `MemoryPubSub` (round trip)"),
    ("jsonrpsee_raw_json_request", "jsonrpsee `RpcModule::raw_json_request`"),
    ("tarpc_channel", "tarpc in-process channel"),
    ("async_graphql_execute", "async-graphql `Schema::execute`"),
]
STREAM_ROWS = [
    ("json_floor", "**JSON floor**: `to_value` per item"),
    ("opkit_subscribe", "**opkit** `registry.subscribe`"),
    ("opkit_typed_subscribe", "**opkit** typed `items::subscribe`"),
    ("jsonrpsee_subscription", "jsonrpsee in-process subscription"),
    ("async_graphql_subscription", "async-graphql `execute_stream`"),
]
NOTES = """## Notes

Profiles: `benches/examples/profile.rs` loops one path (`tiny`, `medium`, `stream`, `memory`, and
the floors `tiny-floor`, `medium-floor`) for `valgrind --tool=callgrind` (instruction counts,
repeatable on a busy machine) or `perf record`. Commands are in its header.

- **What made `execute` faster.** (1) The input of an `#[operation]` with one field per
  parameter is decoded in one pass over the JSON object (it used to be rebuilt into a map
  first, then taken apart). (2) Data an `#[operation]` fn returns is serialized from the type
  its output schema is derived from, so the pipeline wraps it without a normalize/validate
  pass (an envelope it returns is still checked; documented in `core/src/operation.md`).
  (3) `execute` does its lookup, input check and handler start at call time and returns a
  small `'static` future (872 → ~180 bytes); the deadline/cancellation race is only set up
  (boxed) for calls that have one. (4) The id lookup uses foldhash. (5) The input-depth
  bound (`opkit::limits::MAX_INPUT_DEPTH`) is one pass whose recursion stops at the limit.
- **What made `execute` and `subscribe` faster in this round.** The handler's context is
  cloned once, the registry's `Weak` upgraded only when the context has no env, and the state
  map loaded only once a state was given (`has_states`); the context's trace context sits
  behind an `Arc` (a context is 112 bytes, was 160, and every handler future holds one); the
  pipeline's common case (`#[operation]` data) is built in its caller's result; an
  `#[operation]` fn's future is mapped rather than awaited inside an `async` block that held
  it (and its arguments) twice, which halved the boxed handler future; a subscription's items
  are matched instead of passed through nested `map`s. Before → after, one session: tiny
  `execute` 3.7× → 2.9×, medium 1.67× → 1.44× (1.40× in the run above), `subscribe`
  4.4 → 5.4 M items/s.
- **What made `execute` faster in the last round.** A local envelope shares the registry's
  `Arc<str>` id (`LocalMeta.operation_id` was an `Arc<str>`, so wrapping allocates no string;
  typed calls share one per `#[operation]`) and its timestamp reads the coarse wall clock
  (`CLOCK_REALTIME_COARSE`: one kernel tick, 4 ms here, at most behind; ~7 ns where the
  precise `SystemTime::now` costs ~40 ns on this virtual machine; deadlines keep the precise
  clock). `execute`'s future is written by hand (`registry/execution.rs`): an unbounded call
  polls the boxed handler future in place under `catch_unwind`, with no `async`-block state
  moved between polls. A handler that reads nothing from its context but the call's bounds
  (an `#[operation]` fn with no context or state parameter, `TypedOperation::READS_CONTEXT`)
  gets the caller's context as is, without the registry's `Weak` upgraded into its env.
  Before → after, one session: tiny `execute` 443 → 372–382 ns (2.97× → 2.55–2.61×),
  `subscribe` 184 → 132 ns/item, typed `subscribe` 81 → 35–40 ns/item, typed tiny call
  171 → 142 ns.
- **The typed call (issue 48).** The typed `call` / `subscribe` built a call span on every
  call even when nothing listens (`execute` already checked `CallSpan::wanted()` first); the
  plain path now builds none (`CallSpan::start` was 11% of a tiny typed call under `perf`).
  The two binaries run interleaved four times, divan's fastest sample: tiny typed call
  234–259 → 185–212 ns (direct call + envelope 54–72 ns in the same runs). Still over the
  135 ns goal: the guard (~18%: the bounds check and `catch_unwind` at start and poll), the
  context the fn gets owned even when it reads none (~11%, a clone and a drop), the shared
  id and the envelope's `Arc` (~9%).
- **The typed call's future and the MCP call's extras (issue 48, later).** `add::call(&ctx, ..)`
  now returns a future written by hand (`__private::typed_call::TypedCall`): the fn's future
  is made once where the call starts and polled in place; the span (when recorded), the timer
  and the cancellation listener are boxed, the last two made only once the fn is pending. Its
  future went from 592 to 72 bytes (`profile sizes`); `perf` had shown a quarter of the call
  in moving the context into the guard on the first poll (store-forwarding stalls). An MCP
  `tools/call` of a tool whose handler reads nothing from its context, with no middleware
  around it (`OperationRegistry::reads_context`), gets no reporter, no elicitor and no share
  of rmcp's `Peer`, and its server span, when nothing records it, starts no trace; a deadline
  of a second or more (the MCP server's 60 s default) is counted from the coarse clock. Two
  binaries (before: `682577a`, after: these commits), `--bench mcp_call_tool` and `--bench
  tiny` run alternately twice, medians, ratio within one binary's run: tiny `tools/call` /
  `tiny_rmcp_jsonschema` 3.42×, 2.63× → 2.12×, 2.16× (2.9/2.1 µs → 1.85/1.76 µs); medium
  `tools/call` 1.18×, 0.85× → 0.81×, 0.80×; typed tiny call 196 ns (2.9× and 2.6× direct call +
  envelope) → 146 ns (2.2×; 207 ns in a run where the machine slowed every row by half, still
  2.2×).
- **The typed call lends its context (issue 48, later still).** `add::call(&ctx, ..)` copied
  the caller's context for every call and moved the copy into the fn, which dropped it at
  once when it reads no context (an atomic increment and decrement, and the context's bytes
  moved twice). The expansion's closure now borrows it: a fn that takes its context or state
  gets a copy, one that does not gets none (`__opkit_run` takes no context), and the typed
  call copies the caller's context only when it changes it (the operation's own timeout, a
  recorded span). Two binaries (`c7a9aaf`, `15744f5`), `compare --bench tiny` run
  alternately six times, medians: tiny typed call 121–155 ns → 89–114 ns (direct call +
  envelope 52–77 ns in the same runs: ~2.3× → ~1.7×), under the 135 ns goal in all six
  (before: over it in two).
- **tiny `execute` (target 2.5×, missed by a hair: 2.55–2.61× across runs).** `perf record`
  of `tiny::opkit_execute` (~375 ns over a ~147 ns floor), self time of what the floor does
  not do: the input `jsonschema` check ~45 ns (the contract; the floor-with-`jsonschema` row
  pays the same), the boxed handler future ~30 ns (allocating and moving it: a registry of
  heterogeneous `async` handlers calls them through `dyn Fn` returning a boxed future, as
  jsonrpsee does; only an unsafe fixed-size inline buffer would avoid it), the lookup ~11 ns
  (`arc-swap` load, foldhash, the operation's `Arc`), the context clone and drop ~12 ns, the
  depth check ~9 ns, the execution future's poll and the pipeline ~25 ns, the envelope's
  clock read ~7 ns. What is left is the contract (check, timestamp) and dispatching by id to
  a type-erased handler; each remaining item is under 15 ns.
- **medium `execute` (target 1.4×, met at the edge: 1.40× here, 1.44× in another run).** Over
  the floor: the input `jsonschema` check (~430 ns, the floor-with-`jsonschema` row shows it),
  the depth check (~54 ns), and the fixed costs above.
- **subscriptions (target 5 M items/s, met).** Per item over the floor's `to_value`: the
  envelope (a coarse clock read and a reference count on the shared id), envelope detection
  (skipped for objects of fewer than two keys), and two dynamic stream polls.
- **`MemoryPubSub` round trip vs tarpc.** The protocol decodes events straight from their
  bytes (a fast path with a fallback to the detailed decoder for errors, pinned by a property
  test), reuses the request id for the handler's context, and polls each request once in
  place before giving it a task. The tiny round trip is now on par with or under tarpc's
  channel; the medium one is not: the protocol serializes the 10-field input and output to
  JSON bytes and parses them back (by design: the same events cross Redis and WebSockets),
  while tarpc's in-process channel moves the Rust values themselves.
- **Redis (target 50% of raw).** The raw baseline is two `PUBLISH`es; opkit's transport sends
  requests through a streams consumer group (a Lua script doing `PUBLISH` + live-member check +
  `XADD`, then `XREADGROUP` on the replica) and replies through a second script. The publish
  script was cut from ~26 to ~15 µs of Redis CPU (`INFO commandstats`): live members read
  with one `ZRANGE .. BYSCORE`, pruning moved to lease renewal. A group reader now sends its
  `XACK` in the same write as its next `XREADGROUP`, after yielding once so the handler's reply
  goes out first (`strace -f -c`: 3 `writev` per call, was 4): with query redelivery off,
  174 → 157 µs; with it on (the default), unchanged at ~170 µs, and the one extra `recvfrom`
  (the `XACK` reply) costs ~14 µs that merging it into the next read did not recover. Where a
  call's time goes (`perf stat` of the one client thread that runs caller, replica and the
  redis-rs connections): 136 µs of CPU per call (72 user + 64 kernel) against raw's 56 µs
  (15 + 42); the extra user time is mostly redis-rs writing and parsing RESP for the extra
  commands (~40% of samples), then protocol encode/decode, the registry's `execute` with its
  input check, and ~8 task hand-offs. Redis itself spends ~34 µs per call (`INFO
  commandstats`: two `EVALSHA` ~12 µs each, `XREADGROUP` 8.6, `XACK` 1.5) against 1.3 µs for
  two `PUBLISH`es, overlapped with the client's work: removing 7 µs of it (a Lua-free
  publish) changed nothing. The gap is the client work of the commands that competing
  consumers with leases and redelivery need (`XADD`/`XREADGROUP`/`XACK` and the scripts),
  which plain pub/sub cannot offer.
- **MCP `call_tool` in process (target ≤ 1.0× rmcp, missed: ~3.6–3.9× tiny, ~1.4× medium).**
  The adapter's own per-call work is cached per registry revision (each tool's spec, id,
  output form and definition, now shared by reference count rather than copied per call), the
  data is moved into the result and its text serialized once, and a subscription's collecting
  future is boxed apart so every call's future is smaller. `perf record --call-graph dwarf` of
  the tiny bench (~1.9 µs): `registry.execute` ~17% and dropping its input ~7%; the result
  ~15%, mostly `meta_value` (~8.5%: the two maps of `_meta["opkit/meta"]`) and the text block
  (~3%); memmove of futures ~12% (the call's future holds the registry's); the request id
  (UUID v4) ~3.4%; `clock_gettime` ~3%; the progress/log forwarder ~5%; the server span ~2%.
  rmcp's ~500 ns is one serde decode of the arguments into the typed struct: no input check
  against a schema, no context, no `_meta`. With `execute` alone at ~440 ns, 1.0× on tiny is
  out of reach while opkit checks the input (its contract) and sends the meta (documented);
  medium is dominated by encoding the output and its text, which both sides do.
- **HTTP medium (targets ≥ 0.95× axum, p99 ≤ 1.05×, missed).** Both sides make the same
  syscalls per request (`strace`: the same `recvfrom`/`writev` counts); opkit's server thread
  spends ~25% more CPU per request (`perf`: 4.40e9 vs 3.52e9 ns of server-thread CPU for the same
  requests), all in user space on the `Value` pipeline: axum goes bytes → `MediumIn` →
  `MediumOut` → bytes; opkit goes bytes → `Value` (~5% of the thread) → depth and input check →
  `MediumIn` (`registry.execute` ~5.4% in all) → `MediumOut` → `Value` (~2.5%) → envelope →
  bytes (~3–3.7%). The adapter's own work (auth, route lookup, body read, request-id header)
  is each well under 1%. Closing the gap needs a typed path from the body's bytes to the input
  type and from the output to the response bytes, with the input check kept: a core design
  change (an execute entry taking bytes and returning serialized data), not a tweak here.
  Tiny requests meet the throughput target in every run; their p99 ratio moves between 0.94×
  and 1.12× from run to run on this machine.
- **MCP over Streamable HTTP (target ≥ 1.0× rmcp, missed: ~0.92–0.95×).** Both servers run on
  rmcp's `StreamableHttpService`, and rmcp's per-request work (JSON-RPC parsing,
  `validate_standard_headers`, which asks for the tool's definition on every modern call, and
  the session machinery) dominates both sides. `McpServer::router` no longer adds its identity
  middleware when no authenticator is set (each call finds its caller in the request's
  extensions by itself); each tool's definition is built once per registry revision. What is
  still opkit's own: the in-process costs above (~1.4 µs more per call), the clone of the
  tool's definition with its `_meta` in `get_tool`, and `serve_http` mounting a nested
  `Router` where the rmcp side uses `nest_service` (which would also let `/mcp/x` reach the
  service instead of a 404, so it stays).
- **The legacy-session collapse (about 18 calls/s) was not reproduced.** 64 connections on one
  legacy session serve ~16,000 calls/s (table above) through rmcp's `LocalSessionManager`, for
  opkit and rmcp alike. What does collapse: concurrent requests on one session that reuse one
  JSON-RPC id (rmcp routes a response by its request id, as JSON-RPC requires ids unique per
  session): all but one POST then get only the SSE priming event and no result, which a client
  sees as a hang until its timeout. The load generator gives every call its own id.
- **WebSocket vs a one-hop echo (no target).** Until the round of issue 20 every opkit call
  over the WebSocket transport took ~45 ms: neither the hub's accepted sockets nor the spoke set `TCP_NODELAY`,
  and a receipt or event the peer does not answer on the same socket waited for its delayed
  ACK (`strace -tt` showed 31 ms and 11 ms stalls per call). With `TCP_NODELAY` a call takes
  ~125 µs. The raw baseline is one request/response on one socket; an opkit call crosses the
  hub twice (caller spoke → hub → serving spoke → hub → caller) and each publish is
  acknowledged with a receipt.
- **SSE (target ≥ 0.9× axum, met).** One subscription's items/s are on par with axum's `Sse`
  in both encodings; the envelope encoding sends ~6× the bytes per item (meta and `id:`), the
  compact one (`Accept: text/event-stream; opkit=data`) the same bytes as axum.
- **Equal-work peers (issue 36): this run and the ones before.** These tables come from one
  `RUNS=3` run on a machine with nothing else running (the best of 3 runs of the divan suite,
  the medians of 3 serving rounds). The session that added these rows ran `run.sh` four times
  while other builds shared the 2 cores, and single serving rounds of one side then differed by
  up to 2×; ranges over those runs: HTTP opkit / axum + `jsonschema` 0.80–1.05× (tiny) and
  0.43–0.96× (medium); MCP `call_tool` in process 2.79–2.87× (tiny) and 0.88–0.94× (medium);
  Streamable HTTP 0.75–0.88× (stateless era) and 0.56–1.31× (legacy era); WebSocket one call
  at a time 44–48% of the relay; Redis one call at a time 53–77% of the raw stream. On an idle
  machine the one-call-in-flight rates of both sides fall (the raw WebSocket relay from ~23k to
  ~9k calls/s, its loop sleeping between calls) while the loaded ones rise; compare ratios
  within a run. The HTTP table's CPU columns are the steadier figure: opkit's server thread
  spends 1.2–1.3× the checking axum handler's CPU per call, tiny and medium.
- **HTTP, where opkit's extra server CPU goes (issue 36).** `perf record --call-graph dwarf` of
  the server thread, medium requests: the kernel's `writev` and the request-head parse are the
  same on both sides (~28% and ~10% of opkit's thread); opkit's handler with its response
  body is ~30% against ~20% for the checking axum handler. Of opkit's: the body to `Value`
  (~9%, the same work as axum's `Json<Value>`), `registry.serve` (~9%: depth bound, input
  check, decode, the fn, `to_value` of the output, the envelope), the envelope `Value` to
  bytes (~8%, where axum serializes `MediumOut` straight to bytes), the call's context from
  the request (~2%: request id, trace context, edge facts). The compression layer wrapped
  every response, asked for or not (its body wrapper, the body boxed a second time): a
  request without `Accept-Encoding` now skips it, which took opkit's server CPU per medium call
  from ~20.0 to ~19.5 µs (medians of 9 rounds, alternated; with compression off, ~18.5 µs),
  and its response still carries `Vary: Accept-Encoding` as a compressed one would. What
  remains is the `Value` in the middle of the output (the registry's contract returns a
  `ResponseEnvelope<Value>`, which middleware reads): serializing the fn's output straight to
  the response bytes needs an execute path that returns serialized data.
- **MCP in process, tiny (issue 36, 3.06×).** `perf record` of `profile mcp` (opkit's
  `call_tool` in a loop): `registry.serve` ~24% (the guard, the input check, the fn, the
  envelope), the result's `_meta` and structured content built as `Value` maps ~14%
  (`envelope_result`), the call's context from the request ~8% (the progress forwarder and
  elicitor each clone the request's `Peer`, whose drop is ~3.6% by itself), two clock reads,
  a request id from the RNG; the rest (the runtime, rmcp's own `RequestContext`, building
  and dropping the arguments map) is on both sides. Medium meets the target (0.85×): the
  per-call work is fixed, and for a larger input rmcp's `Parameters<JsonObject>` rebuilds the
  map where opkit reads it once.
- **One middleware (issue 36's "middleware off must cost nothing").** Without middleware a
  call takes the plain path (the unary rows). A typed call through middleware had its input,
  fn and result erased to one shared implementation in this round's build-time work (the
  chain, endpoints and guard compiled once in opkit instead of per operation), which cost
  three allocations more per call: tiny `add::call` through one no-op middleware went from
  ~340 ns to ~490 ns. Three of the allocations are gone again (the backend's middleware shared
  as an `Arc` instead of boxed per call, the reply future and its map in one box, the reply
  downcast in place instead of boxed again): ~426 ns in the same A/B. The rest of the erased
  path (the input and the result each behind a box, the fn's future boxed) is the price of
  compiling it once. The plain typed call (no middleware) measured 134 ns before this issue's
  work and ~162 ns now; an A/B of the binaries before the build-time cuts (`3d5574b`) and now
  gives 144–157 ns against 164–165 ns (the cuts: ~10–20 ns), the rest came with the
  restructuring between those commits and was not bisected further. `registry.execute` did
  not move measurably across the cuts (335–365 ns against 345–357 ns).
- **The input check.** Over HTTP the two axum rows (with and without the check) swap places
  from run to run: the check (~30–50 ns tiny, ~400–500 ns medium in process, the floor
  rows) is under the noise of a loopback request here, so the gap that remains is not the
  check (the HTTP medium note above profiles where it goes for medium requests). In process,
  MCP medium is at or under the checking rmcp server (whose `Parameters<JsonObject>`
  rebuilds the arguments into a map before they are checked and deserialized); tiny stays
  at ~2.8–3.1×: the check adds ~150–300 ns to rmcp's ~400–600 ns, and opkit's remaining time
  is the per-call work of the MCP note above (`_meta`, the context, the request id, the
  progress forwarder). Over
  Streamable HTTP both sides are dominated by rmcp's own per-request work. A Streamable HTTP
  service makes a server per request in the stateless era: the checking rmcp server compiles
  its validators once per process, not per server (compiling them per server made it 2.5×
  slower than plain rmcp in a first run).
- **WebSocket vs a raw relay through a hub.** The raw relay does the same two hops with
  nothing else: one id parsed per frame at the hub, no acknowledgements, no envelopes. An
  opkit call also has each publish answered by the hub with a receipt, its events encoded and
  decoded at each end, and `execute` with its input check on the serving side. Profiled under
  load (`perf record --call-graph dwarf`, the serving bench's opkit side, 64 in flight):
  before this round, sending on TCP was 43.5% of all samples, 31.6% of them the hub's writer
  flushing after every frame and ~12% the spokes' writers: one `write` per frame. The hub's
  and the spokes' writers now feed every frame already queued and flush once per batch (up to
  64 KiB; the hub's byte budget counts a batch until it is flushed), as the relay's writers
  do, which brought opkit's writes per call to the relay's (~11.2k vs ~12.5k over ~10k calls).
  The next cost was decoding frame headers (~16% of the calling thread): serde's internally
  tagged enum buffers every field before it reads the tag. The three headers every call sends
  (`publish`, `message`, `ok`) are now written and read by hand in exactly serde's form (a
  test holds both paths to serde's bytes and readings; anything else goes to serde). In a
  back-to-back A/B of the two binaries (base and final, alternated) 64 in flight went from
  16% to 48% of the relay, 8 in flight from 33% to 45%, one call from 49% to 51%. What
  still separates them, from the same profiles: six frames per call against four (the two
  `ok` receipts, to the caller and to the serving spoke: each a write, a read and a wake-up;
  they are how a caller learns that a request reached nobody, so they stay); the hub's
  in-memory bus → per-subscription forwarder task → outgoing queue → writer, where the relay
  goes reader → writer, plus the call handler's loop and the map's listener; the protocol's
  JSON (request id, deadline, traceparent, the envelope's meta), the hub's in-flight
  tracking and a timer per publish. One call at a time `perf stat` counts 6 writes, 5.8
  reads and 5.2 epoll waits per call against 4, 4 and 4.1, and ~117 µs of CPU against
  ~45 µs: CPU and syscalls, not waiting. Next steps, not started: the hub delivering straight
  into the spokes' outgoing queues (no forwarder task), one deadline sweep per connection
  instead of a timer per publish, coalesced receipts.
- **Allocations per call on the transports (issue 49).** `profile ws|redis <calls> <n>`
  prints the heap allocations and bytes per call (a counting global allocator) beside the CPU
  time; they do not move with the machine's load, where this virtual machine's CPU time varied
  ±20% run to run and did not separate before from after. 64 in flight, every side in one
  process, before → after: WebSocket 76.5 → 57.5 allocations and 15.5 → 11.2 KB per call
  (the raw relay: 8.5 and 0.6 KB); Redis 92.9 → 82.9 and 25.9 → 22.4 KB (the raw stream:
  55.9 and 7.0 KB). What went: the hub reads a spoke's request through
  `wire::check_request` (the fast decoder's checks on every field, nothing built) instead of
  decoding it in full (5 allocations); a frame's buffer is allocated at its exact length, so
  `Bytes` takes it over without a shared header (4, one per data frame);
  `CallEvent::to_bytes` writes into a per-thread scratch buffer and copies the event once
  (2 per event); the hub compares a reply's topic with its request id's without building it
  (1) and reads a `publish` frame's topic borrowed from the frame (2); a caller writes its
  `call.requested` from what it holds (`wire::RequestOut`: ids, identity and trace borrowed,
  `traceparent` from a stack buffer; the same bytes as `CallRequested`) (3). The call protocol's call future went from 4,008 to 1,680 bytes: `CallSpan::run_in` and
  `Bounds::run` were `async fn`s, which keep their argument beside the future they await, so
  the future they raced was held twice (`-Zprint-type-sizes`); a caller pays that size in
  every buffered or spawned call. What remains, by allocation site (`perf probe` on `malloc`
  with call graphs): a JSON tree per hop (the input at the caller and at the handler, the
  output, the reply's data: each object a 632-byte B-tree node), owned strings for ids and
  topics (the request topic, the reply's request id), the handler's per-request edge fact
  (a state map, its table and the fact), the trace context carried on (an `Arc` of extras on
  each side), a boxed `PubSub::publish` future per publish and a
  oneshot per spoke request.
- **Redis vs a raw stream and consumer group.** The same primitive on both sides (`XADD`,
  `XREADGROUP` in a group, `XACK`, the reply by pub/sub); opkit adds the publish script's
  live-member check and channel `PUBLISH` (its receipt), leases, the reply through a second
  script and the protocol's envelopes. Profiled at 8 in flight (`perf record --call-graph
  dwarf`, the serving bench, each side alone for the same calls): the serving side's thread
  spends ~2.1× the raw worker's CPU per call (617 vs 297 samples; `server_cpu_us` 28–34 vs
  14–16 µs). Of opkit's: ~30% redis-rs writing commands (one `writev` per command: the reply
  script, the `XACK` and the next `XREADGROUP` go out one by one, where the raw worker sends
  `PUBLISH` + `XACK` as one pipeline), ~24% the call handler accepting a request (decoding the
  event, its lease, starting the call), ~13% the reply script's call; on the calling side
  ~19% redis-rs writes and ~15% the publish script's call. Redis itself runs two `EVALSHA` per
  opkit call (~7 µs each, `INFO commandstats`) against the raw side's `XADD`, `PUBLISH` and
  `XACK` (~1–2.5 µs each). Closing the gap: the serving side's reply and acknowledgement in
  one pipeline (fewer writes), and less work in the two scripts (the receipt's live-member
  check, the lease bookkeeping).
- **Redis: where Redis' own time goes, after the reply became one `PUBLISH`.** `INFO
  commandstats` over one round of `redis_inflight_1` (5,000 calls, each side alone against a
  fresh `redis-server` 7.0, `CONFIG RESETSTAT` before): an opkit call costs Redis ~22 µs, the
  publish script's `EVALSHA` 14.1 µs of it (its four commands 4.9: `PUBLISH` 0.5, `TIME` 0.2,
  `ZRANGE` 1.2, `XADD` with `MINID` trimming 3.0; the other ~9 µs is the script call itself),
  `XREADGROUP` 6.8, `XACK` 0.7 and the reply's `PUBLISH` 0.5; a raw call 9.1 µs (`XADD` 1.6,
  `XREADGROUP` 6.5, `XACK` 0.5, `PUBLISH` 0.6). One call in flight, Redis' time is on every
  call's path: the script is ~12 µs of the ~40 µs between opkit's p50 (112 µs) and raw's
  (72 µs) in that run. What it buys is the receipt's promise: a request is queued only while a
  live member serves its topic, in one atomic step, so a caller told that nobody serves it
  knows the request cannot run later; an unconditional `XADD` pipelined with a `ZCOUNT` would
  leave it for a server that joins after the caller gave up.
- **Noise.** The reference machine has 2 cores shared with other work; a whole group can run
  slow (every row of it), so compare ratios within one run and rerun a group that looks off
  (`BENCH_FILTER=tiny bash benches/run.sh` prints without rewriting this file).
"""

PEERS = ["json_floor_jsonschema", "jsonrpsee_raw_json_request", "tarpc_channel", "async_graphql_execute"]


SERVING = re.compile(r"^serving (?P<path>\S+) (?P<side>\S+) rps=(?P<rate>[0-9.]+) p50_us=(?P<p50>[0-9.]+) p99_us=(?P<p99>[0-9.]+) bytes=(?P<bytes>[0-9.]+)(?: server_cpu_us=(?P<cpu>[0-9.]+))?(?: client_cpu_us=(?P<client>[0-9.]+))?")


def parse_serving(paths):
    """{(path, side): [(rate, p50_us, p99_us, bytes, server_cpu_us or None, client_cpu_us or
    None), ...]}: every round of benches/benches/serving.rs."""
    rounds = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                match = SERVING.match(line.strip())
                if match:
                    key = (match.group("path"), match.group("side"))
                    cpus = (match.group("cpu"), match.group("client"))
                    rounds.setdefault(key, []).append(
                        tuple(float(match.group(k)) for k in ("rate", "p50", "p99", "bytes"))
                        + tuple(None if cpu is None else float(cpu) for cpu in cpus))
    return rounds


def median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def best_of(paths):
    """Each bench's lowest median across runs."""
    best = {}
    for path in paths:
        for key, median in parse(path).items():
            best[key] = min(median, best.get(key, median))
    return best


BUILD_TIME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build-time", "results.md")


def build_time_parts():
    """The build-time section and its rows of the Targets table, from build-time/results.md: this
    run does not measure build time (build-time/run.sh does, and its figures are copied there by
    hand); the rows follow the line `<!-- targets -->`."""
    if not os.path.exists(BUILD_TIME):
        return None, []
    with open(BUILD_TIME, encoding="utf-8") as handle:
        section, _, rows = handle.read().partition("<!-- targets -->")
    return section.strip() + "\n", [line for line in rows.splitlines() if line.startswith("|")]


def main():
    lock, outputs = sys.argv[1], sys.argv[2:]
    serving = parse_serving(outputs)
    outputs = [path for path in outputs if not parse_serving([path])]
    medians = best_of(outputs)
    get = lambda group, name: medians.get(f"{group}::{name}")  # noqa: E731
    per_item = lambda name: (get("stream", name) / ITEMS) if get("stream", name) else None  # noqa: E731
    out = []
    w = out.append
    w("# Benchmarks\n")
    w("Generated by `bash benches/run.sh` (do not edit by hand). opkit against the JSON floor and the")
    w("frameworks users would pick instead, measured by one binary (`benches/benches/compare.rs`,")
    w("divan, tokio `current_thread`, release). Figures are medians, each the best of "
      f"{len(outputs)} run(s) of the")
    w("whole suite; only ratios are meaningful across machines. Inputs are built outside the timed")
    w("section.\n")
    samples = os.environ.get("SAMPLES")
    if samples:
        w(f"This run took {samples} samples per bench (`SAMPLES={samples}`; the default is 100, or the")
        w("group's own `sample_count`): quicker and noisier than a default run.\n")
    w("- **tiny**: `add(a, b) -> {sum}`")
    w("- **medium**: 10 input fields incl. a nested object and a 20-item array; similar output")
    w(f"- **stream**: {ITEMS} `{{sum}}` items per iteration, reported per item\n")
    w("## Machine\n")
    cpu = sh("lscpu | sed -n 's/^Model name: *//p'") or platform.processor()
    w(f"- CPU: {cpu} ({sh('nproc')} cores available to the run)")
    w(f"- OS: {platform.system()} {platform.release()}")
    w(f"- {sh('rustc --version')}")
    redis = sh("redis-server --version")
    if redis:
        w(f"- {redis}")
    w(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
    w("- crates: " + ", ".join(f"{name} {version}" for name, version in versions(lock)))
    w("")

    w("## Unary calls\n")
    w("| bench | tiny | × JSON floor | medium | × JSON floor |")
    w("|---|---:|---:|---:|---:|")
    for key, label in UNARY_ROWS:
        tiny, med = get("tiny", key), get("medium", key)
        w(f"| {label} | {fmt_ns(tiny)} | {ratio(tiny, get('tiny', 'json_floor'))} | {fmt_ns(med)} | {ratio(med, get('medium', 'json_floor'))} |")
    w("")
    w("### opkit relative to each peer (opkit time / peer time; below 1× means opkit is faster)\n")
    w("| opkit path | vs | tiny | medium |")
    w("|---|---|---:|---:|")
    for ours in ["opkit_execute", "opkit_typed_call", "opkit_protocol_memory"]:
        for peer in PEERS:
            w(f"| `{ours}` | `{peer}` | {ratio(get('tiny', ours), get('tiny', peer))} | {ratio(get('medium', ours), get('medium', peer))} |")
    w("")
    w(EXECUTE_48)

    w("## Subscriptions (per item)\n")
    w("| bench | per item | items/s | × JSON floor |")
    w("|---|---:|---:|---:|")
    for key, label in STREAM_ROWS:
        item = per_item(key)
        rate = f"{1e9 / item / 1e6:.1f} M" if item else "—"
        w(f"| {label} | {fmt_ns(item)} | {rate} | {ratio(item, per_item('json_floor'))} |")
    w("")

    raw, ours = get("redis_rt", "raw_pubsub_round_trip"), get("redis_rt", "opkit_protocol_redis")
    w("## Redis round trip (tiny, one call at a time)\n")
    if raw and ours:
        w("| bench | round trip | calls/s |")
        w("|---|---:|---:|")
        w(f"| raw redis-rs request/reply (PUBLISH → subscriber → PUBLISH back) | {fmt_ns(raw)} | {1e9 / raw:,.0f} |")
        w(f"| **opkit** call protocol over `RedisPubSub` (streams + pub/sub) | {fmt_ns(ours)} | {1e9 / ours:,.0f} |")
        plain = get("redis_rt", "opkit_protocol_redis_no_redelivery")
        if plain:
            w(f"| **opkit**, query redelivery off (`CallHandler::with_query_redelivery(false)`) | {fmt_ns(plain)} | {1e9 / plain:,.0f} |")
    else:
        w("Not measured in this run (no `redis-server` on PATH and no `REDIS_URL`).")
    w("")

    raw_ws, ours_ws = get("websocket_rt", "raw_round_trip"), get("websocket_rt", "opkit_round_trip")
    w("## WebSocket round trip (tiny, one call at a time; loopback, one process)\n")
    if raw_ws and ours_ws:
        w("| bench | round trip | calls/s | % of raw throughput |")
        w("|---|---:|---:|---:|")
        w(f"| raw `tokio-tungstenite` request/reply (client → server computing the add → client) | {fmt_ns(raw_ws)} | {1e9 / raw_ws:,.0f} | 100% |")
        w(f"| **opkit** call protocol over `WsHub` + two `WsSpoke`s (caller → hub → serving spoke → hub → caller) | {fmt_ns(ours_ws)} | "
          f"{1e9 / ours_ws:,.0f} | {percent(raw_ws, ours_ws)} |")
    else:
        w("Not measured in this run.")
    w("")

    raw_c, ours_c = get("redis_rt", "raw_cluster_round_trip"), get("redis_rt", "opkit_protocol_redis_cluster")
    w("## Redis Cluster round trip (tiny, one call at a time; 3 masters on loopback)\n")
    if raw_c and ours_c:
        w("| bench | round trip | calls/s | vs one server (opkit) | vs raw on the cluster |")
        w("|---|---:|---:|---:|---:|")
        w(f"| raw redis-rs cluster request/reply (SPUBLISH → sharded subscriber → SPUBLISH back) | {fmt_ns(raw_c)} | {1e9 / raw_c:,.0f} | — | 1.00× |")
        w(f"| **opkit** call protocol over `RedisPubSub::connect_cluster` | {fmt_ns(ours_c)} | {1e9 / ours_c:,.0f} | "
          f"{ratio(ours_c, ours)} | {ratio(ours_c, raw_c)} |")
    else:
        w("Not measured in this run (no `redis-server`/`redis-cli` on PATH and no `REDIS_CLUSTER_NODES`).")
    w("")

    w("## MCP `tools/call`, in process (issue 20)\n")
    w("`ServerHandler::call_tool` with a `RequestContext` on a live peer: opkit's `McpHandler` serving")
    w("the registry vs an rmcp `#[tool_router]` server with the same tools returning `Json<T>`.\n")
    w("| size | opkit `McpHandler` | rmcp `#[tool]` router | opkit / rmcp |")
    w("|---|---:|---:|---:|")
    for size in ["tiny", "medium"]:
        ours_m, theirs_m = get("mcp_call_tool", f"{size}_opkit_call_tool"), get("mcp_call_tool", f"{size}_rmcp_tool_router")
        w(f"| {size} | {fmt_ns(ours_m)} | {fmt_ns(theirs_m)} | {ratio(ours_m, theirs_m)} |")
    w("")

    serving_section(w, serving)
    equal_work_section(w, get, serving)
    concurrency_section(w, serving)

    w("## One middleware (issues 31 and 36)\n")
    w("The same calls on a registry with one middleware that only passes the call on")
    w("(`middleware::from_fn(|call, next| next.run(call))`), beside the registry without any: what")
    w("one layer costs a call. Without middleware a call takes the plain path (the rows above).\n")
    w("| call | size | no middleware | one no-op middleware | added |")
    w("|---|---|---:|---:|---:|")
    for key, label in [("opkit_execute", "`registry.execute`"), ("opkit_typed_call", "typed `add::call` / `medium::call`")]:
        for size in ["tiny", "medium"]:
            plain, layered = get(size, key), get(size, f"{key}_noop_middleware")
            added = fmt_ns(layered - plain) if plain and layered else "—"
            w(f"| {label} | {size} | {fmt_ns(plain)} | {fmt_ns(layered)} | {added} |")
    plain, layered = per_item("opkit_subscribe"), per_item("opkit_subscribe_noop_middleware")
    added = fmt_ns(layered - plain) if plain and layered else "—"
    w(f"| `registry.subscribe`, per item of {ITEMS} | stream | {fmt_ns(plain)} | {fmt_ns(layered)} | {added} |")
    w("")

    tracing_rows = [
        ("a_execute_no_subscriber", "no `tracing` subscriber"),
        ("b_execute_subscriber_opkit_off", "a subscriber with `opkit` off (`Targets`: default TRACE, `opkit` OFF)"),
        ("c_execute_subscriber_opkit_on", "a subscriber recording opkit's spans (a `Registry`, no output layer)"),
    ]
    none = get("tracing_overhead", "a_execute_no_subscriber")
    w("## Tracing overhead (issue 23; tiny `registry.execute`)\n")
    if none:
        w("| bench | tiny | × no subscriber |")
        w("|---|---:|---:|")
        for key, label in tracing_rows:
            value = get("tracing_overhead", key)
            w(f"| {label} | {fmt_ns(value)} | {ratio(value, none)} |")
    else:
        w("Not measured in this run.")
    w("")

    w("## The OpenAPI document (issue 48; `openapi_document`)\n")
    served = get("openapi_document", "served::identity")
    gzipped = get("openapi_document", "served::gzip")
    built = get("openapi_document", "built_per_request")
    if served and built:
        w("`GET /openapi.json` of a registry of 100 operations of the medium bench's shape (644 KB of")
        w("JSON, 14 KB gzipped), through `HttpServer::router` in process: the document as served,")
        w("kept since the registry last changed (and its gzipped form, for a request that accepts")
        w("gzip), against building and writing it for the request, as every request did before.\n")
        w("| bench | time | × served |")
        w("|---|---:|---:|")
        w(f"| served (kept per registry revision) | {fmt_ns(served)} | 1.00× |")
        w(f"| served with `Accept-Encoding: gzip` (its gzipped form kept too) | {fmt_ns(gzipped)} | {ratio(gzipped, served)} |")
        w(f"| built per request (`HttpServer::openapi` as JSON) | {fmt_ns(built)} | {ratio(built, served)} |")
        w("")
        w(OPENAPI_48)
    else:
        w("Not measured in this run.")
    w("")

    w("## gzip's levels (issue 48; `gzip_level`)\n")
    # Sizes with `flate2` on `zlib-rs` (`4b5c539`); `miniz_oxide` wrote 2,432, 2,287 and 2,286.
    levels = [(1, "`CompressionLevel::Fastest` (gzip 1)", "3,390"), (6, "`CompressionLevel::Default` (gzip 6)", "2,268"),
              (9, "`CompressionLevel::Best` (gzip 9)", "2,286")]
    default = get("gzip_level", "level::6")
    if default:
        w("What `HttpServer::compression_level` chooses between: a 19,156-byte JSON answer (200 records")
        w("of a list endpoint's shape, in its envelope) gzipped by `flate2` (on `zlib-rs`, as the HTTP server")
        w("builds it) at each level, a new encoder each time.\n")
        w("| level | time | × default | bytes |")
        w("|---|---:|---:|---:|")
        for level, label, size in levels:
            value = get("gzip_level", f"level::{level}")
            w(f"| {label} | {fmt_ns(value)} | {ratio(value, default)} | {size} |")
    else:
        w("Not measured in this run.")
    w("")

    w("## Reading a call protocol reply (issue 49; `wire_decode`)\n")
    floor, decoded = get("wire_decode", "json_floor_reply"), get("wire_decode", "opkit_reply")
    if floor and decoded:
        w("What a caller pays per call to read a `call.responded` of a tiny result: opkit's decoder")
        w("(`CallEvent::from_slice`, its fast path) beside serde_json reading the same bytes into a")
        w("`Value`.\n")
        w("| bench | time | × JSON floor |")
        w("|---|---:|---:|")
        w(f"| serde_json `Value` (JSON floor) | {fmt_ns(floor)} | 1.00× |")
        w(f"| **opkit** `CallEvent::from_slice` | {fmt_ns(decoded)} | {ratio(decoded, floor)} |")
    else:
        w("Not measured in this run.")
    w("")

    w("## Cost growth (issue 20; `execute` over `n` fields and `n` array items)\n")
    w("| n | JSON floor | opkit `execute` | × JSON floor |")
    w("|---:|---:|---:|---:|")
    for n in [1, 10, 100, 1000]:
        floor, ours_g = get("growth", f"json_floor::{n}"), get("growth", f"opkit_execute::{n}")
        w(f"| {n} | {fmt_ns(floor)} | {fmt_ns(ours_g)} | {ratio(ours_g, floor)} |")
    w("")

    build_time, build_time_rows = build_time_parts()
    if build_time:
        w(build_time)
    w("## Targets (issues 9, 20, 36 and 49)\n")
    w("| target | measured | met |")
    w("|---|---|:---:|")

    def target(label, value, ok):
        w(f"| {label} | {value} | {'—' if ok is None else ('yes' if ok else '**no**')} |")

    def check(a, b, limit, label, better_is_lower=True):
        if a is None or b is None:
            target(label, "not measured", None)
            return
        r = a / b
        target(label, f"{r:.2f}×", r <= limit if better_is_lower else r >= limit)

    check(get("tiny", "opkit_execute"), get("tiny", "json_floor"), 2.5, "tiny `execute` ≤ 2.5× JSON floor")
    check(get("medium", "opkit_execute"), get("medium", "json_floor"), 1.4, "medium `execute` ≤ 1.4× JSON floor")
    for size in ["tiny", "medium"]:
        check(get(size, "opkit_typed_call"), get(size, "direct_typed_plus_envelope"), 3.0,
              f"{size} typed call ≤ 3× direct call + envelope")
    item = per_item("opkit_subscribe")
    target("subscribe ≥ 5 M items/s on one core", f"{1e9 / item / 1e6:.1f} M/s" if item else "not measured",
           None if item is None else item <= 200)
    check(item, per_item("jsonrpsee_subscription"), 1.0, "subscribe faster than jsonrpsee (ratio < 1)")
    for size in ["tiny", "medium"]:
        check(get(size, "opkit_protocol_memory"), get(size, "tarpc_channel"), 1.0,
              f"{size} `MemoryPubSub` round trip faster than tarpc channel (ratio < 1)")
    for size in ["tiny", "medium"]:
        check(get("mcp_call_tool", f"{size}_opkit_call_tool"), get("mcp_call_tool", f"{size}_rmcp_tool_router"), 1.0,
              f"{size} MCP `call_tool` in process ≤ 1.0× rmcp's `#[tool]` router (issue 20)")
    if raw and ours:
        target("Redis ≥ 50% of raw redis-rs round-trip throughput", f"{raw / ours * 100:.0f}%", raw / ours >= 0.5)
    else:
        target("Redis ≥ 50% of raw redis-rs round-trip throughput", "not measured", None)
    for path, label in [("http_tiny", "tiny"), ("http_medium", "medium")]:
        rate, p99 = serving_ratio(serving, path, "opkit", "axum")
        target(f"HTTP {label}: ≥ 0.95× axum's requests/s", "not measured" if rate is None else f"{rate:.2f}×",
               None if rate is None else rate >= 0.95)
        target(f"HTTP {label}: p99 ≤ 1.05× axum's", "not measured" if p99 is None else f"{p99:.2f}×",
               None if p99 is None else p99 <= 1.05)
    for path, label in [("mcp_modern", "stateless 2026-07-28"), ("mcp_legacy", "legacy session")]:
        rate, _ = serving_ratio(serving, path, "opkit", "rmcp")
        target(f"MCP Streamable HTTP, {label}: ≥ 1.0× rmcp `#[tool]`'s calls/s",
               "not measured" if rate is None else f"{rate:.2f}×", None if rate is None else rate >= 1.0)
    rate, _ = serving_ratio(serving, "sse", "opkit_compact", "axum")
    target("SSE (compact encoding): ≥ 0.9× axum `Sse`'s items/s", "not measured" if rate is None else f"{rate:.2f}×",
           None if rate is None else rate >= 0.9)
    target("WebSocket round-trip throughput, % of raw tokio-tungstenite (no target set)",
           percent(raw_ws, ours_ws) if raw_ws and ours_ws else "not measured", None)
    equal_work_targets(target, check, get, serving)
    transport_targets_49(target, serving)
    out.extend(build_time_rows)
    w("")
    w(NOTES)
    print("\n".join(out))


def serving_median(serving, path, side, column):
    """The median over the rounds of one column (0 rate, 1 p50, 2 p99, 3 bytes, 4 server CPU
    per call, 5 the load generator's CPU per call), or None."""
    got = [r[column] for r in serving.get((path, side), []) if r[column] is not None]
    return median(got) if got else None


EXECUTE_48 = """#### What a tiny `execute` costs beyond instructions (issue 48, 2026-11-30)

Counted by callgrind (`profile tiny`, 20,000 and 40,000 calls, the difference per call), a
tiny `execute` costs 4,188 instructions against the JSON floor's 1,928 (2.2×, both with the
input built and the result dropped), while it takes 2.9× the floor's time: the gap that
instructions do not show is in atomic read-modify-writes, which the floor has none of and
callgrind counts as one instruction each. `perf record` of `compare --bench
tiny::opkit_execute` with each sample's instruction annotated (`perf annotate`) put 1.3–1.6% of
the samples on each of five locked instructions of opkit's (7% together): the registry's table
given back to `ArcSwap` after a lookup, the operation's `Arc` cloned and dropped, the
operation id's `Arc<str>` cloned into the envelope and dropped with it; `ArcSwap`'s load
itself (its slot taken) was another 1.6–2.0%. Two cuts:

- `e6a19ce`, `bbd57c5`: each thread keeps the operation table it last loaded for each of the last
  four registries it looked up in, checked against a count of the table's stores (odd while a
  store is under way) by one plain load; the shared table is loaded only after a change
  (`core/src/registry/snapshot.rs`; an unregistered operation may then be dropped later, on a
  thread that kept it, which `OperationRegistry::unregister` documents).
- `1d126d9`: a handler that reads nothing of its context (an `#[operation]` fn with no context
  or state parameter) is given a context holding only the caller's deadline and cancellation,
  not a copy of the caller's whole context.

`compare --bench tiny::opkit_execute --sample-count 400`, four runs of each build alternating,
medians: 227–235 ns before, 213–223 ns with the kept tables, 205–216 ns with both
(4,188 → 4,091 instructions). What is left above the floor with its check: the two atomic
pairs the public types need (the operation held by the running call, the id the envelope's
`LocalMeta` owns as an `Arc<str>`), two allocations (the handler's boxed future and the typed
output kept for the edge to write) and the layers of the call's future.

The typed call's regression that issue 48 names (134 → 162 ns on a Xeon after `f9506b5`): on
this machine, `f9506b5` built from its own tree and run beside this build, three runs
alternating (`--bench 'tiny::opkit_typed_call' --sample-count 300`), measures 114 ns against
59–62 ns here (`execute`: 239–250 against 215–221 ns): the typed call is half its time at
`f9506b5`, so there is nothing left to bisect.

Three more cuts (issue 48, second session of 2026-11-30), each measured with `compare --bench
'tiny::(opkit_execute|json_floor)' --sample-count 400`, the builds before and after run
alternately four or five times:

- `884055c`: `execute` asks an `#[operation]` fn's handler for its data as a `Value`
  (`DataForm::Value`, read by `__private::encode`): serialized in the handler and wrapped into
  the envelope in place (`Execution::envelope`), where it was boxed as typed data (one
  allocation and a call through the box), put in a `Reply` and serialized from the box when
  the envelope was read. The edges and middleware keep the typed form, written straight into
  their bytes. 207–220 → 201–210 ns.
- `3085494`: `LocalMeta.operation_id` is an `OperationId`: the `&'static str` an
  `#[operation]` fn was compiled with (when it is the id the operation is registered under),
  or the registry's `Arc<str>` for any other, read as a `str` either way and written as the
  same JSON string. `perf annotate` had put 32% of `Execution::poll`'s samples on the `lock
  incq` cloning the id into the envelope and 88% of the meta's drop on the `lock decq`
  dropping it (3.6% of the bench together). The edges' replies and typed calls name their
  operation the same way. ~203 → ~199 ns; typed call 60–62 → 57–58 ns.
- `6cff22c`: a unary handler is lent the call's context and takes it out only when its fn
  reads it (an `#[operation]` fn that reads none is lent it, and its run fn leaves it in
  place). A third of `unary::start`'s and `execute_plain`'s samples were on loads of the
  ~128-byte context just stored by the move before (a store not yet forwarded); the context
  was moved through the start, the guard, the handler and the run fn. ~199 → ~196 ns, within
  the noise of one comparison.

In the run above (`bash benches/run.sh` at `6cff22c`): tiny `execute` 2.40× the floor (issue
48's target 2.5×; 2.69× at `b3b4c62`), medium 1.41× (1.50×), the typed call 54 ns (60 ns).

Tried and dropped: not walking the input's depth when its schema bounds the depth of what it
accepts (a closed object of scalars, say), checking validity first. A typed operation's input
schema is open (unknown fields are allowed, as serde ignores them), so it never applied to the
operations benched, and the build with it measured slower in one alternating comparison
(200–219 against 180–197 ns, five runs each). Its tests found two things any such
shortcut must respect: `jsonschema`'s violation messages print the offending value (a
recursion as deep as the input), and `uniqueItems` compares whole items with each other (as
deep as they are), so only a validity check may run before the depth walk, and a schema with
`uniqueItems` bounds nothing.
"""


EQUAL_WORK_INTRO = """opkit checks every call's input against its operation's JSON Schema (a 400, an
`invalid_params` error or an error envelope naming the violations when it does not match) and
writes `_meta` into what it returns; the peers above do neither. The peers here do the same
input check: a `jsonschema` validator compiled once from the very schema opkit checks
(`OperationSpec::input_schema`, `opkit_benches::input_validator`), run on the input as a
`serde_json::Value` before it is deserialized (`is_valid`, and the violations collected only
when it fails), so both sides go bytes → `Value` → check → input type → output → bytes. What
opkit still does on top: its envelope and `_meta`. The raw transports do what opkit's
transports do for one call, without its envelopes, receipts, leases or deadlines.
"""


MCP_INSTRUCTIONS_48 = """#### What one tiny call costs, counted (issue 48)

Instructions per `tools/call` (callgrind: `benches/examples/profile.rs`'s `mcp` and `mcp-rmcp`
paths at 2,000 and 4,000 calls, the difference divided by 2,000; the build recipe is in that
file's docs), with the heap allocations and bytes per call from its counting allocator. These
do not move with the machine's load, where the times above move by 10–20% between runs.

| commit | opkit `McpHandler` | allocations / bytes | × rmcp `#[tool]` + check (8,842; 15 / 4,461) |
|---|---:|---:|---:|
| `63ef78a` (before) | 14,377 | 24 / 7,048 | 1.63× |
| `dc80da6`: over stdio, each call's context a clone of one per-connection context holding the edge | 14,073 | 23 / 6,928 | 1.59× |
| `4a41582`: a fresh request id written out only when read; `Option<Deadline>` in 8 bytes, so the context stays within the 128 bytes moved inline | 13,747 | 22 / 6,872 | 1.55× |
| `e7a5ad8`: a handler that reads no context runs without the call's cancellation token (the guard holds it: no clone and drop, each a lock); an unrecorded span not written to | 13,417 | 22 / 6,872 | 1.52× |
| `899af64`: the registry's serve future awaited in place, not boxed | 13,435 | 21 / 6,536 | 1.52× |
| `4701efd`: fresh ids numbered from one process-wide counter; a given id an `Arc<str>` again | 13,477 | 21 / 6,536 | 1.52× |
| `af277d7`: a call span nothing can record is not built (`tracing`'s `log` fallback built its fields) | 13,184 | 21 / 6,536 | 1.49× |
| `1badff6`: the front door polls its running call in place (awaiting it moved it into a second slot of the door's future) | 12,937 | 21 / 6,352 | 1.46× (rmcp 8,828 in this build) |
| `57c6e31`, `f259b1a` (2026-12-01): a local envelope's meta is written in `_meta` only when the server asks (`McpServer::local_meta`); the looked-up operation moves into the call | 10,048 | 13 / 4,262 | 1.13× (rmcp 8,862 in this build) |

The other paths, same method, before (`63ef78a`) and after (`4701efd`): `tiny`
(`registry.execute` with one context reused) 4,209 → 4,275 (+1.6%: the context's clone and drop,
which this path does per call, and where the compiler now inlines), `typed` (`add::call`) 534 → 524, `memory` (a call protocol round
trip) 47,034 → 46,757.

Where the remaining ~4,600 instructions go: the result's `_meta["opkit/meta"]` (two
`serde_json` maps and six strings: ~900 to build, ~1,200 more for rmcp to drop than its own
result), the call's span (~350 with no subscriber), the context and its deadline (~400), the
tool's lookup and the registry's (~330), and the layers of futures between the handler and the
result (`Served`, `Execution`, the span's `Either`: ~800 with their moves). The input check
(~600) and decode (~740) cost what rmcp's check and `Deserialize` cost.
"""

TRANSPORTS_RERUN_49 = """A re-run of these rows alone (2026-11-29: `SERVING_FILTER=inflight ROUNDS=3`, three runs of each
build alternated, one `redis-server`, no Redis Cluster), medians of 9 rounds, opkit % of raw and
server CPU per call (opkit / raw). `678d3a6` is the last commit before this session's cuts,
`b228757` after them:

| in flight | WebSocket, `678d3a6` | WebSocket, `b228757` | Redis, `678d3a6` | Redis, `b228757` |
|---:|---:|---:|---:|---:|
| 1 | 73% (58 / 40 µs) | 74% (56 / 42 µs) | 70% (58 / 48 µs) | 69% (70 / 52 µs) |
| 8 | 45% (24 / 12 µs) | 51% (22 / 12 µs) | 83% (24 / 16 µs) | 68% (24 / 16 µs) |
| 64 | 35% (16 / 6 µs) | 36% (16 / 6 µs) | 62% (16 / 10 µs) | 47% (22 / 10 µs) |

The two builds differ by ~3% of the instructions per call (counted above), which this bench
cannot see: the raw sides' own rates moved by up to 20% between runs (Redis raw at 1 in flight:
9,365 to 11,149 calls/s), and a first run of `b228757` alone read WebSocket 87% / 51% / 36% and
Redis 77% / 70% / 42%. What the re-run does show against the table above (taken before the last
three sessions' work on the hub and the call protocol): WebSocket at 64 in flight from ~20% to
~36% of raw, and nowhere near 85-90% at 8 and 64 in flight on either transport.
"""

MCP_HTTP_48 = """#### MCP over Streamable HTTP, counted (issue 48, 2026-11-30)

`benches/examples/profile.rs`'s `mcp-http` and `mcp-http-rmcp` paths send the legacy rows'
`tools/call` on one 2025-11-25 session through the servers' routers in process (no sockets;
callgrind at 2,000 and 4,000 calls, the difference divided by 2,000; allocations from the
path's counting allocator). At the start of this round opkit's router took 185,543
instructions and 236.5 allocations per call against the rmcp server's 158,827 and 191.5
(1.17×), where the in-process call (`mcp` against `mcp-rmcp`) differs by ~4,000: the rest
was the HTTP side of opkit's MCP server, each commit below measured on its own:

| commit | instructions per call | allocations |
|---|---:|---:|
| before (`c98ecfe`) | 185,543 | 236.5 |
| `d677b57`: a tool whose handler reads nothing of its context (and that no middleware covers) gets the bare MCP edge (nothing could read the rest); any other takes the HTTP request out of the request's extensions instead of copying its headers | 178,273 | 218.5 |
| `924e2bc`: the session guard a tower service around rmcp's instead of an axum `from_fn` middleware (no boxed `Next`, no clone of the inner service), a streaming body kept alive by a wrapper rather than re-streamed, session ids shared | 170,641 | 203.5 |
| `c5e5569`: the stream book keyed by rmcp's shared session id, hashed with foldhash | 168,520 | 200.5 |
| rmcp `StreamableHttpService` + check | 158,827 | 191.5 |

Mounted as the servers are mounted in `serving.rs` (opkit's `serve_http`, rmcp's
`nest_service("/mcp", ..)`): `serve_http` nested the router (a prefix strip and a second
route lookup per request, 175,011 instructions and 212.5 allocations); `21d1d6c` routes `/mcp`
directly (`McpServer::try_router_at`, for applications that merge the endpoint into their
own router): 169,129 and 201.5, against rmcp's 161,917 and 196.5 (1.045×). What is left:
`_meta["opkit/meta"]` written and dropped (~2,700 with rmcp's serializer) and a larger body
to send, the session guard (~3,200: the caller's identity, the book's lock), and the
in-process call.

The serving rows, before (`c98ecfe`) and after (`21d1d6c`), `SERVING_FILTER=mcp ROUNDS=3`,
opkit against rmcp + `jsonschema` in the same run: legacy 0.87× (29,723–29,936 against
31,743–34,546 calls/s; server CPU 33–34 against 29–31 µs per call) → 0.94–1.04×, median 0.95×
over six rounds (CPU 31–35 against 30–32 µs); stateless 0.96× → 1.02× (CPU 33–37 against
34–38 µs).
"""

FUTURES_48 = """#### Smaller futures on every call path (issues 48 and 49, 2026-11-30)

The allocation profiles (`valgrind --tool=dhat` on `profile http-plain 10000` and
`profile ws 10000 64`) showed the largest block of each call being a future: the one axum boxes
per HTTP request (1,912 bytes, against 1,097 for the axum + `jsonschema` handler) and the call
handler's per-request future (2,400 bytes). Past 1,032 bytes glibc serves a block from its
bins rather than its per-thread cache (`_int_malloc`, `_int_free`, `malloc_consolidate` in the
profiles), and every move of a future copies it whole (`memcpy` was ~900 instructions more per
HTTP call than axum's). What made them large: a `Reply` of 192 bytes (a JSON envelope inline),
which every future holding a reply or a call's outcome carried; the front door's future
captured by an edge's future and then awaited, so held twice, with the context and input it
was made from; the rare paths' futures (a stream's items, a signed reply, an error's reply, a
raw byte stream) inline in the common one's; and a wrapper future holding the HTTP request
beside the route's own future.

- `94ca015`: the call handler's request future holds the unsigned unary reply's path only;
  the others are awaited boxed (2,400 → 1,016 bytes).
- `873ef28`: `Reply` boxes a JSON envelope (what a middleware or a remote call makes); an
  `#[operation]` fn's data, the usual reply, stays inline: 192 → 72 bytes, the front door's
  future 368 → 248.
- `7077f59`: the front door's future (`OperationRegistry::serve`, `serve_found`) is a named
  `Unpin` state machine, so the HTTP server and the call handler make it before their own
  future and await it by `&mut` there (held once); the HTTP route's future owns its request
  (no wrapper holding it a second time); an authenticating server's copy of the context
  boxed; a REST route's shape borrowed. The future axum boxes 1,912 → 1,219 bytes; the call
  handler's 744.
- `d572ce8`: a caller's span's trace is written straight into its `call.requested` (it was
  copied into the call's context first: one allocation per remote call).
- `943383f`: a raw byte stream's response future awaited boxed (axum's box 1,128 bytes).

| instructions per call (callgrind, as above) | before (`8265478`) | after (`943383f`) | peer |
|---|---:|---:|---:|
| `tiny` (`registry.execute`) | 4,273 | 4,181 | JSON floor, input built in the loop: 1,924 |
| `mcp` (`tools/call` in process) | 12,967 (21 allocations, 6,351 bytes) | 12,635 (21, 6,199) | rmcp + check: 8,858 (15, 4,461) |
| `http-plain` (`POST /ops/bench.add`) | 22,820 (32, 5,808) | 21,834 (32, 5,080) | axum + check: 17,823 (33, 4,664) |
| `mcp-http` (legacy session) | 168,772 | 167,650 | — |
| `memory` (round trip over `MemoryPubSub`) | 35,053 | 33,498 | — |
| `ws`, 64 in flight | 74,597 (37.5, 9,634) | 72,408 (36.5, 7,842) | raw relay: 20,850 (8.5, 574) |
| `redis`, 64 in flight | 99,671 (77.0) | 98,157 (76.0) | raw stream: 59,252 |

The HTTP call's `memcpy` is now ~320 instructions above axum's (was ~910). None of this moves
the serving rows beyond their noise: `SERVING_FILTER=http_tiny ROUNDS=3`, the builds before
and after alternated twice, read opkit at 0.99× and 0.93× of axum + `jsonschema` before and
0.97× and 0.96× after, with server CPU per call 10.0–10.5 µs against 9.0–9.5 µs on both.

What is left of the in-process MCP call's ~3,800 instructions over rmcp's is mostly the
contract: the result's `_meta["opkit/meta"]` (two `serde_json` maps, four keys and two
strings: 8 of opkit's 21 allocations, ~2,100 instructions to build and drop); without it the
call would cost ~1.2× rmcp's in instructions. (A build measured on 2026-11-30 that was to leave
it out took only ~3% less time; that measurement was wrong, and the `_meta` is a fifth of the
call's time: see "The envelope's meta on MCP results" below.) The rest is the span and context (~400), the lookups (~330) and
the futures between the handler and the result. The HTTP call's remaining ~4,000 over axum's:
the header work opkit's contract adds (`x-request-id` read and written, `traceparent` read:
~700), the context, its deadline and the envelope's meta (~1,000), the front door and guard
(~700), the fresh request id written as a UUID (~125), and `serve_operation`'s own code.

A reply's receipt kept without a task (issue 49): a call handler publishing a unary reply over
the WebSocket spoke waited for the hub's receipt (held back and sent in batches,
`hub/receipts.rs`), though nothing reads a unary reply's receipt, so each request's future
lived in a task of its own until the receipt came. Now the handler publishes it with
`PubSub::publish_keeping`: the spoke queues the frame and keeps the request's guard (its
permit, its entry among the running requests) in its record of the publish until the receipt,
a refusal or the connection's sweep answers it. The bounds are unchanged (a handler under
one-way loss stops at its permits, the sweep still drops a silent connection:
`websocket_partition.rs`, `a_publish_keeps_what_its_publisher_holds_until_the_hub_confirms_it`),
and the request's future completes at its first poll, never spawned. Instructions per call:
77,554 → 74,441 at 8 in flight, 72,408 → 68,792 at 64. In the serving bench
(`SERVING_FILTER=ws_inflight ROUNDS=3`, the builds before and after run twice, alternated;
medians of six rounds) WebSocket went from 72% to 84% of raw at 8 in flight (1: ~97% → ~95%,
64: ~70% → ~70%, both within their noise); the concurrency table above is a later run, with
this change.
A first version that dropped the receipt (the spoke kept no record) measured the same (83%
at 8 in flight) but would have let a handler under one-way loss queue replies without bound.

A bare edge without an allocation (`8be801c`): an HTTP or call-protocol call whose handler
reads nothing of its context got the bare `Edge::HTTP` or `Edge::CALL_PROTOCOL`, and setting it
allocated the context's extras (152 bytes) per call. A context without extras now shares, for
a bare edge of opkit's own, one `Arc` of extras per thread and edge (reference counts kept by
the thread serving the call, not contended by every core); a context that changes its extras
later copies them, as it would have made them. `http-plain` 21,834 → 21,627 and `http` (with
the compression layer, what the serving bench runs) 24,127 → 23,929 instructions per call.

The compression layer (`cbb70a4`, a commit after the run of these tables): a response to a
request without `Accept-Encoding` reads its headers in one pass to decide its `Vary` (a lookup
per header before: 728 → 373 instructions), and the layer holds its inner service once,
wrapping it in tower-http's compression only for a request that accepts an encoding: axum
clones a route's service for every request, and the compressing copy kept beside the plain one
was cloned and dropped every time. `http` 23,929 → 23,345, `http-medium` 61,678 → 60,601
instructions per call
(axum + `jsonschema`: 17,812 and 70,006).
"""

CLOCKS_48 = """#### Clock reads and the last large block (issue 48, 2026-11-30, later)

A tiny call still read the precise clock (a `clock_gettime` of tens of ns on this virtual
machine, where the coarse clock is a read of memory): every bounded call when its guard checked
that the deadline had not passed (`SystemTime::now`), and every HTTP request for its body's
timer (`tokio::time::Instant::now`); and the future axum boxes per `/ops` request was still
past glibc's per-thread cache (1,128 bytes). Changes (`4f40473`..`e1294fb`):

- `Deadline::is_expired` answers a deadline more than 40 ms ahead of the coarse wall clock
  without reading the precise one: the coarse clock is never ahead of it and at most a kernel
  tick behind (a test pins the order, in reads no stall between them can break). Nearer
  deadlines are read precisely, as before.
- The request body is polled once before its timer is set: a small request's body came with
  its head, and the timer (boxed now: most requests never need it) is set only for a body still
  arriving. The `408` tests pass unchanged.
- The per-request future 1,128 → 984 bytes (`-Zprint-type-sizes`): the read's result scoped so
  it is not kept beside the call, and the call's outcome answered in a block, so that only a raw
  body's boxed future is awaited after it (the outcome, 72 bytes, was held across that await and
  set the size of every call's future). Under 1,032 bytes the block comes from the thread cache
  (`malloc_consolidate` and `_int_malloc` were ~400 instructions per call).
- A unary JSON response is built with its one `Content-Type` (through `IntoResponse` the body
  was typed `application/octet-stream` first and the header then replaced).
- MCP: a tool call reads its operation out of the kept tool names under the cache's read lock
  (no reference to the whole names taken and dropped), and `is_modern` reads the request's
  protocol revision in place (rmcp's `RequestContext::protocol_version` decodes the `_meta`
  string into a new `String`, or clones the session's, on every call).
- MCP (`d8d407e`, after this file's run): `tools/call`'s future is the call's own, 1,504 →
  1,184 bytes, with no wrapper around it (as `async fn`s, `call_tool` and `call` each kept the
  request and its context again: rustc stores an `async fn`'s parameters both as captured and
  as bound in its body). Instructions per call did not move (`mcp` 12,439; over Streamable HTTP,
  `mcp-http`, 168,038 → 167,778 against rmcp + check's 160,749: 1.044×), nor, within its noise,
  the legacy row's rate.

Counted as above (callgrind, 2,000 and 4,000 calls): `http-plain` 21,416 → 21,066 → 20,311
instructions (axum + check 17,793: 1.20× → 1.14×); `mcp` 12,603 → 12,433 (rmcp + check 8,860:
1.42× → 1.40×); `tiny` `execute` unchanged (3,814 → 3,820: it has no deadline). In time
(`compare`, the builds before and after alternated, three runs of 400 samples each): the tiny
in-process `tools/call` 815–842 → 779–812 ns, while rmcp + check measured 436–472 ns in the same
runs.

The HTTP rows sit at their goals' edge, and one run of `run.sh` lands on either side: the run
this file shows measured tiny and medium at 1.01× the requests/s of axum + check (server CPU
1.05× and 1.08×, on a machine ~15% slower for both sides than the day's other runs); the HTTP
rows alone right after (`SERVING_FILTER=http_ ROUNDS=5`, medians of five) measured tiny 78,926
against 80,761 calls/s (0.98×), server CPU 10.5 against 9.5 µs (1.11×), and medium 82,495
against 85,124 (0.97×), 11.5 against 11.5 µs (1.00×). The CPU figures come in steps of 0.5 µs.
"""

MCP_META_48 = """#### The envelope's meta on MCP results, and the atomics of a call (issue 48, 2026-12-01)

A tool result carried its local envelope's meta in `_meta["opkit/meta"]`
(`{"source":"local","operationId":..,"timestamp":..}`): two `serde_json` maps (a 632-byte
B-tree leaf each) and six strings per call. Measured again with a build that reads one flag at
start to leave it out (`compare --bench 'mcp_call_tool::tiny_(opkit_call_tool|rmcp_jsonschema)$'
--sample-count 400`, three runs alternating the flag): 773.8–780.4 ns with it, 612.1–620.2 ns
without, rmcp + check at 445.9–454.2 ns in the same runs. The bench keeps each sample's 200
results until the sample ends, as a server keeps results queued for a slow client, so their
blocks cannot come back from the thread cache: `_int_malloc`, `unlink_chunk` and
`malloc_consolidate` were a third of the time opkit spent beyond rmcp.

That meta tells an MCP client nothing its call did not (the operation is the tool it called,
the time is now), and opkit's MCP import does not read it. So `57c6e31` writes it only when the
server asks (`McpServer::local_meta(true)`); the meta of an imported HTTP API's envelope (its
status and headers) is always written, and an MCP envelope's own `_meta` always served.
`f259b1a`: `serve_found` takes the looked-up operation by value, so the MCP server and the call
protocol move it into the call (one reference count less to take and drop).

Counted (callgrind, `mcp` at 2,000 and 4,000 calls): 12,438 → 10,048 instructions per call,
against rmcp + check's 8,862 (1.40× → 1.13×); 21 → 13 allocations, 4,262 bytes (rmcp + check 15,
4,461). Over Streamable HTTP on a legacy session (`mcp-http` at 1,000 and 2,000 calls) 164,213
against 162,654 (1.01×; it was 1.04×). In time, the tiny in-process call read 624 against 451 ns
(1.38×) in a run of `run.sh` right after these two commits, and 624 against 477 ns (1.31×) in
this file's run, where the last file read 1.69×.

What holds the time ratio above the instruction ratio now: atomic read-modify-write
instructions. Attributing `perf record -F 20000` samples to the instruction after each
`lock`-prefixed one, 22% of opkit's samples in this bench land there against 19% of rmcp's, and
on this virtual machine one uncontended atomic costs about as much as 1% of the call. Those only
opkit's call does: the tool names cache's read lock (two), the reference count of the served
tool (two), rmcp's `Peer::peer_info` read lock behind the protocol revision of a client that sent
no `_meta` (two), the cancellation token's `is_cancelled` (a mutex: two, which the guard needs so
that a call cancelled before it starts does not start), and the clone and drop of the
connection's context (two). Each is a design choice with a reason written where it is kept; the
next cuts are a names table read without a lock (as the registry's per-thread snapshot is) and
the era kept per session once its `initialize` is seen.
"""

ROUTES_48 = """#### Routes as services, and a legacy session's book read once (issue 48, 2026-12-01)

The same count of atomics on the HTTP edge. axum serves a handler route by cloning the route's
boxed service for the request, and that service clones its handler and its state again for the
call: an operation's own `/ops/<id>` route (a closure holding the id, the state an
`Arc<ServerState>`) took and dropped five reference counts per request, and each REST route as
many. `b6f8b37` makes the operation's route a tower service (`OperationAt`, added with
`route_service`) holding the server and the id behind one `Arc`, whose one clone the request's
future owns; `171560b` does the same for each method of a REST route (`RestService`, on the
path's `MethodRouter` with `on_service`, its path variables read with the `Path` extractor);
`d09afc9` makes the two one type, `Routed` over a `RouteTarget`.
Counted (`http-plain` at 2,000 and 4,000 calls): 20,311 → 19,413 instructions per call against
axum + check's 17,898 (1.14× → 1.08×), 31 → 30 allocations (4,358 bytes; axum + check 33,
4,664). Sampled in process (`perf record -F 20000`, 200,000 calls of `profile http-plain` and
`http-axum`): 9,906 → 9,187 samples against axum's 8,500. Served over loopback right after
(`SERVING_FILTER=http_ ROUNDS=5`, medians of five): tiny 75,816 against 78,963 calls/s (0.96×),
server CPU 10.0 against 9.5 µs (1.05×); medium 81,131 against 83,740 (0.97×), 12.0 against 11.5
µs (1.04×). In this file's run the medium row's server CPU is at its goal (11.5 against 11.5 µs)
and the tiny row's is not (10.0 against 9.0 µs); the rates are below 1.0× in both.
`e41602d` (after this file's run): a caller's identity that needs no authenticator (one in the
request's extensions, or none on a server without one) is read at hand, without the two nested
futures `identify` and `authenticate` made and polled per request: `http-plain` 19,413 → 19,282
(1.077× axum + check's).

On a legacy (2025-11-25) Streamable HTTP session every call passed the session book three times
(the owner's check, a streaming response counted, the count given back when it ended), each
under the book's lock, and the stream book cloned the session's channel sender under its own.
`f5f910a` keeps what a request updates in the session's `Live` (its streaming count and when it
was last seen, in atomics; the order that keeps a just-ended stream's session touched is in
`sessions.rs`'s docs), so a call takes the book's lock once; `01604b0` keeps only each open
stream's HTTP request id in the stream book (closing a stream, which is rare, finds the
session's handle in the manager). Instructions did not move beyond the allocator's noise
(`mcp-http` 164,885 against rmcp + check's 162,680, 1.01×); the lock passes are what a busy
session's calls contend on. The legacy row right after (`SERVING_FILTER=mcp_legacy ROUNDS=5`):
34,135 against 34,574 calls/s (0.99×), the rounds' pairs between 0.92× and 0.99×; this file's
run 0.96×.
`449f8d0` (after this file's run) keeps a session's protocol era when its client says
`initialized`, so a legacy call no longer reads rmcp's `Peer::peer_info` (a read lock all of the
session's calls share, and a reference count); five rounds after it read 33,845 against 35,460
(0.95×, the rounds between 0.92× and 1.00×): within this row's noise, not a measured gain.
"""

DEPTH_48 = """#### Lookups, headers and copies the edges no longer make (issue 48, 2026-12-01, later)

This file's run is on another VM than the run before it (the same CPU label and 2 vCPUs, but
the JSON floor reads 112 ns here against 79 ns there), so a row that moved between the two
files moved with the machine too: `tiny execute` 2.42× → 2.69× is the machine (the same binaries
before and after this round, alternated in one run, read 448–472 against 420–452 ns).
In-process rows on this machine are bimodal: a process runs either fast (opkit's tiny MCP call
~730 ns, rmcp + check ~575 ns) or slow (~1.2 µs, ~0.9 µs), both sides of one process together,
with ASLR off as well (`setarch -R`), so its rows are compared within one process only.

Counted per call with `profile` under callgrind (at 2,000 and 4,000 calls):
- MCP in process (`mcp` against `mcp-rmcp`, 8,889): 10,066 → 9,656 instructions (1.132× →
  1.086×). `045be3f`: a tool's `Served` holds the operation its names were built with (looked
  up once per registry revision, as the names are), so a call does not look it up by id
  (−147: the hash and the table); `c36fdc8`: `OperationContext`'s by-value builders are
  `#[inline]` (−40); `b14ae29`: an `#[operation]` fn's reply whose local meta is not sent
  becomes its result from the data alone (`Reply::is_local_data`, `Reply::into_data`), no
  envelope and meta made and dropped (−200). `654a5d5` polls the front door's call inside its
  span itself instead of through two `Either`s and `Instrumented` (no instructions; one wrapper
  fewer to move through). Timed, the same process mode, base against after, four alternated
  pairs of `compare --bench 'mcp_call_tool::tiny_(opkit_call_tool|rmcp_jsonschema)$'
  --sample-count 400`: medians 1,235–1,250 ns → 1,136–1,233 ns, against rmcp + check 855–919 ns
  (mean ratio ~1.39× → ~1.31×). This file's run has the row at 1.16×, its goal met: a fast-mode
  process.
- HTTP (`http-plain` against `http-axum`, 17,888): 19,341 → 18,413 (1.081× → 1.029×), 29 → 28
  allocations. `1f0d2c0`: the trace context and the client's request id are read in one pass
  over the request's headers (three names that are not standard headers, each hashed by a
  lookup) and a fresh request id is written for the `x-request-id` header alone
  (`OperationContext::with_request_id_text`: no `OnceLock`, no `Arc<str>` kept): −691;
  `e73fbb3`: a body that arrives as one chunk is that chunk (`Bytes`), not copied into a new
  `Vec`: −237.
- MCP over Streamable HTTP, legacy session (`mcp-http` at 1,000 and 2,000): 164,982 against
  162,249 (1.017×), as before: nothing of this round is on its path but the door.

Not measured apart, noticed: opkit's accept loop sets hyper's header-read timeout (a client
that sends its headers slowly is cut off, `DEFAULT_HEADER_READ_TIMEOUT`), which `axum::serve`
does not. With it hyper makes a boxed `Sleep` for each request's head, registered in tokio's
timer wheel when the next head is not there yet and dropped when it arrives, and reads the
clock: a cost the HTTP rows carry and the peer does not. On this machine the serving rows move
±20% between runs (server CPU per call is counted in 0.5 µs steps), more than it could show.
"""

ACCEPT_48 = """#### The accept loop, measured apart (issue 48, 2026-12-01, third)

The serving rows now read each thread's CPU time from `/proc/self/task/<tid>/schedstat` (the
nanoseconds it ran), where they read `stat`'s 10 ms ticks: at 20,000 calls a round those came
in steps of 0.5 µs per call, about 5% of a tiny HTTP call. Five rounds of one side now spread
by ~0.1 µs (10.43–10.55 µs for axum + check in one run), and rows of two runs still differ by
up to 10% together (the machine), so sides are compared within one run.

What the accept loop costs (`serve_router` against `axum::serve`), with temporary switches in
one bench binary (not kept), `SERVING_FILTER=http_tiny ROUNDS=5`, medians of server CPU per
call, each line one run: opkit's router under `axum::serve` 10.64 µs against 11.23 µs under
`serve_router`; axum + check under `serve_router` 10.85 against 10.51 µs under `axum::serve`
(+0.34). With the switches: without hyper's header-read timeout +0.34 → −0.03 µs (9.01 against
9.04); without the `ConnectInfo` extension +0.14 (10.37 against 10.23); without the graceful
watch +0.19 (10.55 against 10.36). Each switch was measured alone, and the three do not add up
(one comparison moves by ~0.1–0.15 µs): the timeout is the largest part. The syscalls were the
same on both sides (`strace -f -c`: 40,016 `writev`s and ~40,140 `recvfrom`s for 20,000 calls).

`06efc11` kept hyper's timeout with one tokio sleep per connection: hyper's sleeps became a
zero-sized `HeadSleep` reading its deadline from a slot the connection's wrapper filled while
polling it, the alarm moved only when it had rung or would ring after the deadline. Counted with
`profile` under callgrind (`http-tcp` against `http-tcp-axum-serve`, 1,000 and 2,000 calls):
+2,405 → +1,732 instructions per request. What was left was hyper's: with a header-read timeout
set, its dispatcher goes round once more after each response (`notify_read`) to start the next
head's timer at once. `e5591db` takes the timeout out of hyper: the connection's wrapper
(`HeadDeadline`) counts, inside its poll, the heads read (the service is called) and the answers
ended (hyper drops the response body, an `Answer` around it, no allocation), and times only the
wait for a head, from the connection's start and each response's end; an HTTP/2 connection,
whose streams run in tasks of their own, is untimed from its first request. New tests: a call
and a stream running past the timeout are answered whole, an HTTP/2 connection is not cut off.
+1,732 → +36 (101,521 against 101,485: the accept loop now costs what `axum::serve`'s does,
the timeout included).

Served, none of it shows. Alternated pairs of `SERVING_FILTER=http_tiny ROUNDS=3` (opkit /
axum + check, server CPU): tokio's timer against `06efc11`'s, opkit minus opkit's router under
`axum::serve`, +0.61, +0.53, +0.21 µs against +0.43, +0.34, +0.31; `06efc11` against
`e5591db`, 1.065, 1.048, 1.061× against 1.065, 1.058, 1.060×; `e5591db` with its alarm against
a build that never sets it, 1.032, 1.041, 1.047× against 1.040, 1.021, 1.034×. A ratio moves by
~0.02 between runs of the same build, ~1,700 instructions are ~2% of a request's server CPU, and
the ~5% that opkit's tiny HTTP call still costs over axum + check in served CPU is not in the
instructions callgrind counts on one connection (opkit's router costs +469 more there,
`http-plain` against `http-axum`: 18,297 against 17,828).

The rest of the accept loop, kept: the `ConnectInfo` extension (~370 instructions: the request's
extension map allocated for it; the MCP server reads it to bound anonymous sessions per address,
and an application's routes may) and hyper-util's graceful watch (~160).

Tried and dropped: the graceful watch replaced by a flag each connection reads when polled and
a book of wakers woken at shutdown. Under callgrind the watch's code went (−370 instructions
per request: its poll and `Notify`'s), and glibc's allocator moved another ~1,400 (a count that
moves with the sizes of the blocks around it); served, three alternated pairs read opkit / axum
+ check 1.055, 1.028, 1.056× with the watch and 1.068, 1.059, 1.066× without. Of what
callgrind counted, only the 370 were the change's own (the allocator's share moves with any
change of block sizes): too little to replace a kept crate's code for, where the timeout's
~1,700 were hyper's design (a round of its loop per request), and the code that replaced it is
pinned by the six timeout tests of `serving/limits.rs`. The shutdown tests written for
it stay (`serving/shutdown.rs`: a call in flight is answered and its connection closed, idle and
silent connections are closed, the serve future returns).
"""

NAMES_48 = """#### An initialized session in the MCP rows, and the header-read timeout off tokio's timer (issue 48, 2026-12-01, fourth)

`a3ce393` changes the in-process MCP rows' bench, not opkit: each side is now called on a
session that a 2025-11-25 client initialized (`opkit_benches::mcp_session`: its
`initialize` taken by `serve_directly`, its `notifications/initialized` written to the
transport and handled), as every call of a real legacy session finds it. Before, the peer had
never said `initialize`, so opkit read the peer's info on every call (rmcp's
`Peer::peer_info`: a read lock) to learn the session's era, which a session that said
`initialized` keeps (`McpHandler::keep_era`). `compare --bench 'mcp_call_tool::tiny_'
--sample-count 400`, opkit / rmcp + `jsonschema`, the same opkit code: 1.27–1.35× on the old
bench (median 1.29×, five runs), 1.23–1.30× on the new (median 1.26×, seven runs).

Tried and dropped, both on the new bench (`3bf35b2` backs them out): the tool names read
through a copy each thread keeps (checked against the registry's revision, as the registry's
own table is), instead of under the names cache's read lock (`26e830c`); and a lean call on
stdio given the bare MCP edge (shared per thread) instead of a copy of the connection's
shared context (`dae107c`). Under `perf` the read lock and the reference counts they saved had been
~2% of a call. Three builds alternated, three or four runs each: 1.23–1.26× without either, 1.27–1.29× with
the copies, 1.28–1.34× with both. On one thread the atomics they saved cost less than what
they added, and the layout of a build moves this row by as much.

The tiny HTTP row's accept loop, measured apart (temporary sides and switches, not kept:
opkit without compression served by `serve_router`, the same router under `axum::serve`, and
axum + check; `SERVING_FILTER=http_tiny ROUNDS=12`, medians of server CPU per call, each
figure one run):

| variant | `serve_router` minus `axum::serve`, same router |
|---|---|
| at `d06fcf9` (the alarm a tokio sleep) | +0.27, +0.36, +0.25, +0.16 µs |
| the same, not looking at its alarm after a response (a copy of its deadline read instead) | +0.42, +0.33 |
| without the connection's `HeadDeadline` (no header-read timeout) | +0.05, 0.00, +0.07, +0.11, +0.03, +0.06 |
| `e522b8f`: the alarm kept by a watchdog thread | +0.07, +0.22, −0.09, +0.10 |

With `ROUNDS=5`: the compression layer (on by default, skipped for a request without
`Accept-Encoding`) +0.05–0.13; without `ConnectInfo` +0.23 and without the graceful watch
+0.32, against +0.25 as shipped in the same runs (within the noise). So the header-read
timeout cost ~0.3 µs a request served with 32 connections, where callgrind counts +36
instructions for the whole accept loop on one connection. Looking at the alarm was not it.
Timers were: 32 sleeps of ~10 s, looping in tasks of their own on the server's runtime with no
`HeadDeadline` anywhere, cost every side alike (+0.14, +0.03, +0.24 and +0.32, +0.24, +0.27 µs
for opkit without compression, its router under `axum::serve` and axum + check, against the run without
them). A tokio runtime with a timer pending parks an idle worker with a timeout (tokio's time
driver, `park_internal`: the clock read, an `epoll_wait` with a timeout, which arms a kernel
timer each time it sleeps), one with none parks it untimed, and the server's worker sleeps
often between requests. `e522b8f` keeps the alarms in a book of one watchdog thread of the
process (`http_server::head_alarm`: it sleeps until the first alarm is due, rings it, a flag
and the task's waker), so a server has no tokio timer for them; the ten timeout tests of
`serving/limits.rs` pass unchanged. `axum::serve` has no header-read timeout at all (a
connection may hold its slot for ever). What is left beside it, opkit's router under
`axum::serve` against axum + check: +0.16–0.32 µs.
"""

WRITES_48 = """#### Where a tiny served call's CPU goes, and one write per small answer (issue 48, 2026-12-01, seventh)

`perf record -e cpu-clock -F 20000` on the serving bench (`SERVING_FILTER=http_tiny
SERVING_SIDE=<side> ROUNDS=3`), the samples of the server's threads: opkit 38,434 of which
27,263 in the kernel, axum + check 38,607 of which 26,908. Seven tenths of a served call's CPU
is the kernel's (the socket's read, write and wake-ups), and the user-space share is opkit's
11,171 samples against axum's 11,699: what still separates the tiny rows is kernel work
(`tcp_sendmsg_locked`, `_copy_from_iter`: opkit's answer is 257 bytes with its `x-request-id`
and envelope, axum's ~120) and the machine, not the code each side runs. Changes:

- `a5bc2a2` (`http_server::coalesce`): hyper writes an HTTP/1 answer as its head and its
  body's frames, with one `writev`; the accept loop's sockets now copy a vectored write of
  4 KiB or less into one buffer and send it with one `write` (`strace -f -c`: 40,018 `sendto`
  where there were as many `writev`s), a larger one as its vectors (no frame is copied,
  however large: hyper's own `writev(false)` measured the same on the tiny call, but copies
  every frame whole into its buffer, a 16 MiB answer included). Server CPU per tiny call,
  opkit alone, alternated builds, 22 rounds each: median 9.97 → 9.73 µs.
- `978a257`: a request's extension map was made by inserting `ConnectInfo` (room for three),
  and axum's router's third insertion moved it to a larger one on every request (`perf`:
  `RawTable::reserve_rehash` 30 samples against axum's 2); it is now a clone of one per
  connection with room (`profile http-tcp`: 80 → 79 allocations a request).
- `933a81d`, `83b6bc8`: the operation id in every reply's local meta, and the ids of a call
  protocol request, are copied between quotes when nothing in them needs an escape (tested
  eight bytes at a time); serde's escaping walked them byte by byte. `LocalMeta::write_json`
  220 → 121 instructions a reply; a `MemoryPubSub` round trip 31,172 → 30,752.
- `abd9e7b`: a REST route's success of an `#[operation]` fn, on a route that reads nothing of
  the data (no `Location`, no raw bytes), is written once from its own type into the body,
  bare or in its envelope (through a `Value` before; `serialize_once`'s REST test counts one
  serialization and none into a `Value`).
"""

MCP_CLIENT_48 = """#### opkit's MCP client over Streamable HTTP (issue 48, 2026-12-01, seventh)

The serving table's `*_sdk_client` rows call through opkit's MCP import (`McpConnection`), one
connection, 32 callers. Two costs were the client's own, the same whichever server it called:

- `be63020`: `call_tool` looked up the tool by cloning every imported tool's spec, schemas and
  all (`perf`: `BTreeMap::clone_subtree`, `OperationSpec::clone`, the allocator), on every
  call. Each tool now keeps the output schema and wrapped key a call reads, behind `Arc`s, read
  under the tools' lock. Legacy session: client CPU 109–124 → 73–81 µs a call, 9.1K → 13.3K
  calls/s (`SERVING_FILTER=mcp_legacy SERVING_SIDE=opkit_sdk_client ROUNDS=1`, three runs).
- `3f7213c`: rmcp's default HTTP client keeps no idle connection: `strace -f -c -e
  trace=connect` counted 5,016 `connect`s for 5,000 calls, to opkit's server and to rmcp's
  alike. The connection now sends on kept-alive connections (redirects followed only to the
  same origin, `307`/`308`, as rmcp's client does). Legacy: 14K → 29K calls/s, client CPU 70 →
  34 µs a call, the server's 59 → 27 µs (no connection accepted per call); modern: 12.6K →
  24K. `3b1ddae` answers a stateless request's single reply as `application/json` by default
  (the bench sets rmcp's config on both sides, so not in these rows), so that a client
  reuses the connection as soon as it has read the body (`mcp_client_http.rs`:
  `calls_reuse_the_clients_connections`).
"""

MCP_FUTURES_48 = """#### The future each MCP request is held in (issue 48, 2026-12-01, eighth)

rmcp runs each request of a session (and of stdio) in a task of its own, and awaits the
stateless service's request in the HTTP request's future: one future per request whose size
is the largest of the handler's method futures, whatever the method. `profile sizes` prints
it (`size_of_val` of `Service::handle_request`), and `-Zprint-type-sizes` says which state is
the largest: opkit's was `subscriptions/listen`'s (~3 KB), held inline, so every `tools/call`
was made, moved and allocated at 4,976 bytes where rmcp's server's (with or without the check)
is 3,368. `e1432b5` boxes the rare requests' large futures when they are made (listen,
completion, prompts, resources, tasks): 3,368 bytes, a bare rmcp server's, which a test pins
(`a_requests_future_is_no_larger_than_a_bare_rmcp_servers`, failing at 4,976). `profile
mcp-http` (a legacy session through the router, no sockets, 20,000 calls, the two builds
alternated four times): 17.2–18.2 → 17.2–17.4 µs of CPU a call, 1,536 fewer bytes allocated a
call; `mcp-http-modern`: 20.8–21.8 → 20.6–21.2 µs. The serving bench's legacy row moves by
more than that between rounds (28–35 µs of server CPU a call), so it does not show there.

`2c0451b` shrinks `tools/call`'s own future, 1,200 → 824 bytes (rmcp + check's: 864): the
peer of a call whose handler reads nothing of its context is dropped at once, and the
reporting forwarder is finished at one await after the response is made, where three states
held it. The in-process row did not move by more than rmcp's own row moved between the two
binaries (alternated four times, opkit's median 586–608 → 581–590 ns, rmcp's 467–476 → 450–464
ns). `b5ebfdc` does the same for REST routes: a multipart body's reading is boxed when a
request has one, and a REST request's future (which axum boxes per request) is 3,856 → 1,600
bytes.

`b855465`: a call protocol caller's future (`PendingRequestMap::call`) held its context twice
(cloned from the caller's, then kept as an `async fn`'s parameter and again as its body's
binding) and its operation id, input and map the same way: 1,536 → 920 bytes, the caller's
context borrowed, not cloned, and the future no longer borrows the map. An env's remote call
(`OperationEnv::remote`, boxed `'static`) keeps its context once, where it kept it twice.
"""

MCP_STALLS_48 = """#### What the in-process tool call waits on (issue 48, 2026-12-01, ninth)

Under callgrind the in-process `tools/call` runs ~1.05× rmcp + check's instructions where it
takes ~1.2–1.3× its time; `perf annotate` of each side (`compare --bench --sample-count 2000`
on one bench, samples counted on the instruction after each `lock`-prefixed one) puts half the
difference in atomic read-modify-writes rmcp's path does not make, each waiting for the call's
stores before it: the operation's and the tool entry's reference counts taken and dropped, the
cancellation token's mutex (`is_cancelled`, which a call that can be cancelled must read), the
stdio context's shared parts. Most of the rest is in copies of the call's 72-byte result up the
front door's polls, wide loads right after the narrower stores that wrote it.

`938cd45` adds `OperationRegistry::serve_found_ref`: an edge that holds the operation for the
call's length (the MCP server's tool entry, an HTTP route) lends it, and the call takes no
reference count of it (two tests pin the count, with and without middleware: a chain's end
owns its operation). `2d2022f` inlines the front door's polls (`Serving`, `Served`,
`Execution`) into the edge's future, where the copies fold.

Two benches one after the other on this machine land in different stretches (fast: opkit ~600
ns, rmcp + check ~500; slow: ~900 and ~750, seconds long, opkit's ratio worse in the slow
ones), so the divan row's ratio moves by ±0.1 between runs of one binary. `profile mcp-pair`
times both sides in one process in alternating batches of 200 calls (inputs made before each
batch's clock, results dropped after it): five runs of each build alternated, 1.28–1.32× before
the inlining and 1.25–1.29× after, in a slow stretch.

Under callgrind with its cache model (`profile` built with `RUSTFLAGS="--cfg rustix_use_libc"`
in a target dir of its own; `valgrind --tool=callgrind --cache-sim=yes ... profile mcp 2000`
and `6000`, the difference over 4,000 calls) the two sides differ little in work and much in
code: per call 9,373 instructions against 8,889 (1.05×), data-cache misses none on either side,
but 613 instruction-cache misses against 193 (3.2×). opkit's call runs mostly straight-line
code spread over many functions (the front door's `serve_found_ref` and what it inlines, 166
misses a call; `replies::unary_result`, 68; the context's making, 43), where rmcp's loops in
serde's and the B-tree's code, so its path's code does not stay in the 32 KB first-level cache
from one call to the next, and each call fetches it again. A busy neighbour on this host makes
those fetches slower, which is why the ratio is worse in the slow stretches. The next cut here
is the hot path's code size (cold branches out of line, fewer and smaller steps), not its work.
"""

IMPORT_ENVELOPES_48 = """#### An imported call's envelope, passed on as built (issue 48, 2026-12-02, tenth)

Every imported operation (an MCP server's tools, resources and prompts; an OpenAPI API's
operations and event streams) answered with an envelope that carries the remote's meta (an MCP
result's blocks, an HTTP status and headers), and handed it to the registry as a `Value`: the
import wrote the envelope as JSON (`serde_json::to_value`), the pipeline found an envelope in it
and read it back (`ResponseEnvelope::from_value`). `41d2413` adds `Handler::unary_envelope` and
`Handler::stream_envelope`, whose results are envelopes as built (boxed, so the common results
stay small), finished as a written one was (meta kept, data cast and checked against the output
schema unless the envelope reports an error; a test pins the two ways to agree, both unary and
streamed), and an `#[operation]` fn's returned envelope goes the same way; `1c8cd3e` moves the
imports onto them. The round trip they no longer make, timed alone (a release build, an MCP
envelope with a text block and structured content, 20,000 times, two runs): 1.1–1.6 µs for the
tiny result, 6.4–7.9 µs for the medium one, per imported call. The in-process tool call and
`execute` did not get slower for the pipeline's new case (`profile mcp-pair 40000`, four runs of
each build alternated in a slow stretch: ratios 1.26–1.32× before, 1.19–1.25× after, within
this machine's noise and not claimed as a gain).

`1a4ba78`: a `tools/call` of a 2025-era session moves its arguments into the request; they were
cloned for every round of a call in rounds, which only the 2026-07-28 era has (an input-required
result in a 2025-era session is refused, with an error that says so). `4f2ca5d`: a tool
result's `structuredContent` and `_meta` are taken out of it for the envelope, not copied (the
envelope's data is still a copy of the structured content, which its meta keeps as sent).
"""

CLUSTER_ROUTES_49 = """#### A cluster's commands routed by the slot opkit knows (issue 49, 2026-11-30)

`profile cluster 2000` and `4000` at 64 in flight under callgrind (three masters on loopback,
`REDIS_CLUSTER_NODES`) against `profile cluster-raw`: 125,486 instructions per call against
79,895. Of the difference, the `redis` crate's cluster client routing each command itself:
`RoutingInfo::for_routable` (~3,800 per call: it copies the command's name to upper-case it
and looks it up, then finds the key) and a copy of every pipeline (`req_packed_commands`
clones it to hand it to the cluster task: the payload copied again). Every command of a call
here touches one slot that opkit computed anyway (the topic's hash tag; a reply's channel), so
`7ae5a1d` names it: `Conn::query_at` (a reader's `XREADGROUP` and `XACK`, a reply's
`SPUBLISH`) and `Conn::transaction_at` (a request's `MULTI` .. `EXEC`, the pipeline moved to
the cluster task, not copied) route to the master of the slot; a topic's slot is computed once
with its keys. On one server nothing changes. Tested on a real cluster: every transaction runs
on the topic's master alone (routed to another master, the publish fails: tried with fixed
wrong slots), and a failed command of the transaction is the publish's error, named
(`publish_path.rs`).

| `profile cluster`, 64 in flight | before (`c1e8d9f`) | after (`7ae5a1d`) | raw |
|---|---:|---:|---:|
| instructions per call | 125,486 | 114,157–116,925 | 79,895 |
| allocations per call (bytes) | 106.1 (28,984) | 90.6 (24,624) | 76.6 (15,111) |

(The cluster paths' counts move by ~2,000 between runs of the same build: how many calls share
a read or a write depends on timing. The range is three runs of builds with this change.)

Serving bench, `SERVING_FILTER=cluster ROUNDS=3`, the builds before and after alternated three
times (medians of 9 rounds, opkit % of raw; server CPU per call, opkit / raw): 8 in flight
77% (18 / 12 µs) → 88% (14 / 12 µs), 64 in flight 78% → 84% (8 / 6 µs both); at 1 in flight
86% → 78%, where the raw side's own rate moved from 7,800 to 11,700 calls/s between rounds.
What Redis runs per call (`INFO commandstats` on the topic's master, 5,000 calls at 1 in
flight): two `SPUBLISH` (the request's, for plain subscribers of the topic, and the reply),
`XREADGROUP` (4.5 µs, as the raw worker's), `XADD` (1.4 µs), `XACK`, and `MULTI`/`GET`/`EXEC`
(the `EXEC` 2.2 µs): ~10 µs against the raw stream's ~7. One call at a time is bound by
latency: the caller's CPU per call (34 against 26–30 µs) and the server's (50–56 against
44–46 µs) add up along the one call in flight, mostly the call protocol's JSON (its decode
~11,000 instructions per call, both sides) and the `redis` crate's reply parsing of the
transaction's five answers where the raw caller reads one.
"""


TRANSPORTS_REDIS_TX_49 = """#### Redis without the publish script (issue 49, 2026-11-30)

A request on a served topic is now one transaction of plain commands (`MULTI`, `GET` of the
topic's live key, `PUBLISH`, `XADD`, `EXEC`) instead of the publish script, whose four
`redis.call`s cost Redis ~9 µs beyond the commands themselves; `adapters/docs/redis.md` says
how a request reported as reaching nobody still never stays in a stream. The transaction
trims the stream at most once a second (`XADD` with `MINID ~` costs ~1.2 µs more than without,
even when nothing goes: `XADD` 3.0–3.6 → 1.75–1.95 µs per request in `INFO commandstats`).
Redis' own CPU per request (`INFO cpu` around `SERVING_FILTER=redis_inflight_64
SERVING_SIDE=opkit ROUNDS=3`, the two builds alternated three times, divided by the runs'
`XADD` count): `f92e304` 28.0, 28.3, 30.8 µs against 17.0, 18.9, 19.0 µs at `5b73481` (the
transaction); `f92e304` 21.2, 22.3, 27.5 µs against 14.3, 19.6, 17.2 µs at `a807a22` (with the
trimming), a second pair of runs. The serving rows, `f92e304` and `a807a22` alternated five
times (`SERVING_FILTER=inflight ROUNDS=3`, one `redis-server`, no Redis Cluster), medians of
15 rounds, opkit % of raw and server CPU per call (opkit / raw):

| in flight | WebSocket, `f92e304` | WebSocket, `a807a22` | Redis, `f92e304` | Redis, `a807a22` |
|---:|---:|---:|---:|---:|
| 1 | 74% (58 / 38 µs) | 72% (60 / 40 µs) | 70% (68 / 52 µs) | 77% (64 / 50 µs) |
| 8 | 52% (22 / 12 µs) | 54% (22 / 12 µs) | 59% (26 / 18 µs) | 73% (24 / 16 µs) |
| 64 | 37% (14 / 6 µs) | 37% (14 / 4 µs) | 52% (20 / 10 µs) | 63% (20 / 10 µs) |

(The same comparison with `5b73481`, before the trimming change: Redis 65 / 61 / 55% →
76 / 68 / 61%.) The WebSocket change of the same round (the hub's and spoke's tables hashed
with foldhash: 86,164 → 82,806 instructions per call at 64 in flight, `profile ws 4000` and
`8000` under callgrind) is under this bench's noise. The client pays for the transaction:
146,582 → 156,810 instructions per Redis call at 1 in flight (redis-rs builds and parses five
commands where the script was one), against ~11 µs less of Redis' time. What Redis still spends
over the raw stream (~15 against ~9 µs per call): the transaction's five commands (~3.5 µs
with the `EXEC`, where raw sends one `XADD` at ~1.5), the reply's `PUBLISH`, and reads and
acknowledgements as raw's (~3 µs); the rest is Redis reading and answering more commands per
call.
"""

TRANSPORTS_HEADS_49 = """#### Reading a call event by its head, and the lean call handler (issue 49, 2026-11-30)

The profiles at 64 in flight (`profile redis 5000` and `10000`, `profile ws 10000` and `20000`
under callgrind, the difference per call; `benches/examples/profile.rs`, build as its docs say)
found each transport reading events whole that it only routes: the Redis transport peeked
every request it holds for redelivery and every reply its process publishes (~4,000
instructions each), the hub every reply (~3,600). Now:

- `eb11f35`: `opkit::protocol::wire::peek_head` reads an event's kind and request id from its
  first bytes when they are what opkit writes first (`{"type":..,"requestId":..`, no escape in
  the id); anything written otherwise is peeked whole. The Redis transport reads its held
  requests so when nothing further on can set `subscription` (no escape, no `"subscription"`
  in the bytes: one `memchr` and one `memmem`), and its own replies so.
- `6c6b5be`: the hub routes a reply by its head; the caller reads the rest and drops what it
  cannot read (`docs/security.md`; `a_reply_malformed_after_its_head_is_not_taken`).
- `e2d30f2`: a read round's answered entries in a foldhash set (SipHash cost twice as much).
- `b96bfbb`: the call handler looks an operation up once per request, and a request whose
  handler reads no context and no middleware covers gets the bare `Edge::CALL_PROTOCOL`, its
  `traceparent` parsed only when a span records the call (the HTTP and MCP servers' rule).
- `02f976e`: a spoke writes its `publish` frame from the borrowed topic.
- `ee5d62f`: the hub keys a call's record by the request id's one `Arc` (it copied the id
  twice per call), finds a frame's header end by `memchr`, and checks an ASCII topic name for
  control characters by its bytes.
- `a8485d0`: a caller's request topic and a handler's reply topic made on the stack per call
  (`topics::TopicName`).

| instructions per call, 64 in flight | before (`e9c31be`) | eb11f35 | 6c6b5be | e2d30f2 | b96bfbb | 02f976e | ee5d62f | **a8485d0** | raw |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| Redis | 109,658 | 102,578 | — | 102,063 | 100,982 | — | — | **99,664** | 59,252 |
| WebSocket | 82,177 | — | 78,750 | — | 77,991 | 76,112 | 75,446 | **74,501** | 20,850 |

Allocations per call (the plain run of the same paths): Redis 82.0 → 77.0, WebSocket 45.5 →
37.5 (the raw relay: 8.5). Of a WebSocket call's instructions (self cost, grouped by crate, at
`02f976e`) malloc and free are 15,200 (~375 per allocation, glibc), serde_json 13,500, opkit's
own code 17,300, memcpy and memset 9,200, tokio 7,000; the relay's allocations cost 2,100. The serving rows cannot show a change this size: Redis at 1 / 8 / 64 in flight read
89 / 99 / 91% of raw before `eb11f35` and 89 / 101 / 92% after (the two builds alternated three
times, `SERVING_FILTER=redis_inflight ROUNDS=3`, medians of 9 rounds), while the raw side's
own rate moved by up to 25% between rounds.

The concurrency table now shows the load generator's CPU per call beside the server's
(`client_cpu_us`). At `209769b`, WebSocket at 64 in flight ran ~157,000 calls/s (6.4 µs
between calls) with opkit's caller at 6–8 µs and its server at 6 µs of CPU per call: both
threads saturated, against 2–4 and 4–6 µs for the raw relay; at 8 in flight the server side
(12–14 µs per call, 16 µs between calls) bounds the rate. What the server side still does per
call that the relay does not: the hub's check of each request as the handlers' decoder reads it
(~4,600 instructions: the stamping and refusal guarantees of `docs/security.md`), the handler's
decode of the request (~5,000) and the registry's call around the fn (input check, envelope),
the reply's JSON, and the caller's decode of the reply (~5,500) on the load generator's side.
"""

REDIS_PLAIN_49 = """#### A request as three plain commands, and a smaller publish (issue 49, 2026-11-30)

Three changes to the Redis transport's publish (`bb5c753`, `0d68786`, `9de4fae`):

- **A publish's future 3,256 → 992 bytes.** Every publish is a boxed future, allocated past
  the allocator's small sizes and moved whole. Connecting, the publish and settle scripts
  (which run until a topic is seen served, or when it no longer is) and the cluster client's
  futures (over a KiB each) are boxed where they run; the commands are built in a scope of
  their own, so their moved-from locals keep no space across the `.await`. A unit test pins
  the size under 1 KiB (`a_publish_future_stays_small`). `profile redis 2000` / `4000` at 64 in
  flight under callgrind: 99,064 → 98,423 instructions per call, 20,462 → 15,933 bytes
  allocated per call.
- **One server: `GET`, `PUBLISH`, `XADD` without `MULTI` .. `EXEC`.** Other clients can do
  between the `GET` and the `XADD` only what they could do right after a transaction (a last
  member leaving, a member joining), and the settle script still runs after the `XADD`,
  atomically, so a request reported as reaching nobody is still never left in a stream
  (`adapters/docs/redis.md`). Each command is answered on its own: the publish is refused (not
  sent) only when nothing ran. A cluster keeps the transaction: its client sends a pipeline
  again after `MOVED` or `ASK`, safe only for a transaction refused as a whole.
  `profile redis 20000 64` (one build, the transaction and the plain commands alternated three
  times by a switch since removed): client CPU per call 13.0–13.2 → 12.2–12.4 µs, Redis' own CPU
  per call (`INFO cpu` around each run) 6.7–6.9 → 6.2–6.4 µs, 77 → 70 allocations per call.
- **A refusal that was not one (a bug, found by the test of the change above).** A server a
  failover demoted to a replica runs `PUBLISH` for its own subscribers and refuses writes. The
  publish script published first and wrote the live key after, and a script's commands are not
  undone when a later one fails: the publish was reported refused (not sent, so safe to retry)
  though the topic's subscribers had received it. The script now writes the key first.
  `publish_path.rs`, `a_publish_a_replica_refused_is_not_sent_unless_someone_received_it`, on a
  real server turned replica (`REPLICAOF`): with a subscriber on it, the plain commands' publish
  is of unknown outcome and the subscriber has it; the script's publish after it is not sent and
  reaches nobody.

Serving bench, `4c7d05e` and `9de4fae` alternated three times (`SERVING_FILTER=redis_inflight`
and `cluster_inflight`, `ROUNDS=3`; one `redis-server`, three cluster masters; medians of the
9 rounds' opkit % of raw):

| in flight | Redis, `4c7d05e` | Redis, `9de4fae` | Redis Cluster, `4c7d05e` | Redis Cluster, `9de4fae` |
|---:|---:|---:|---:|---:|
| 1 | 91% | 96% | 91% | 88% |
| 8 | 97% | 103% | 106% | 96% |
| 64 | 99% | 99% | 78% | 80% |

The raw sides' own rates moved between the runs (Redis at 64 in flight: 65,014 and 75,008
calls/s), and the cluster rows, whose code changed only by the boxing (90.6 → 94.7 allocations
per call, CPU per call 16.3 µs both in `profile cluster 20000 64`), show this bench's spread.
What keeps the cluster at 64 in flight below raw (`profile cluster` against `cluster-raw` under
callgrind: 118,058 against 79,963 instructions per call): the call protocol's JSON and the
transaction's five answers, as on one server, and a timer per publish (`Timeout` and `Sleep`
~2,000 instructions per call): a cluster command is bounded by opkit as well as by the client's
per-attempt timeout, because the client's retries (up to its retry count, with waits) are not
bounded by it. The WebSocket rows of the same runs (its code unchanged): 96% / 82% / 69%.
(`Conn::transaction_at` of the note below is now `Conn::answers_at`, which returns each
command's answer.)
"""


WS_COALESCE_49 = """#### One pass over a call event, and a spoke's writes coalesced under load (issue 49, 2026-11-30)

Two changes, each measured by the serving bench with the builds before and after alternated
three times (`SERVING_FILTER=ws_inflight ROUNDS=3`, medians of 9 rounds, opkit % of raw):

- **`15964ec`: a request and a reply read in one pass** (`core/src/protocol/wire/scan/`). The
  hub's check of each request, the handler's decode of it and the caller's decode of each reply
  went through serde's derived structs (field names matched as strings, every nested value
  walked by a visitor to refuse repeated keys, the input or data then built by a second walk).
  A scanner now reads the events as opkit writes them in one pass: a subset reader that accepts
  only JSON it judges exactly as serde_json does (no escapes, no exponents, at most 18 integer
  digits, no repeated key at any depth, only the event's own fields; strings found eight bytes
  at a time) and leaves everything else to the serde readers, as before; the check validates
  the input without building it, the decoders build the input or data as they read it, and a
  local meta directly. Property tests hold it to the serde path on generated JSON, near misses
  included. `profile ws 5000` / `10000` at 64 in flight under callgrind: 68,234 → 63,317
  instructions per call (the check 5,065 → 3,056; a request's or a reply's decode ~5,500 →
  ~4,200). Serving: 8 in flight 83% → 87%; 1 and 64 unchanged (100% → 97%, 69% → 69%).
- **`01648b4`: a spoke's writer coalesces frames when the hub has work from it.** A profile of
  the serving bench at 64 in flight (`perf record` of the two runtimes' threads, and the
  `sendto` calls counted by thread with `perf record -e syscalls:sys_enter_sendto`) found both
  threads saturated, opkit's and raw's alike, and the load generator's thread writing one
  `sendto` per call (100,253 for ~100,000 calls; raw the same), most of its CPU in the kernel:
  a caller that queues a frame wakes the spoke's writer, and tokio runs a woken task next, so
  every request was written alone. Now, with at least 16 of the spoke's publishes awaiting the
  hub's answer (under late receipts, about its calls in flight), a frame found alone waits for
  one `yield_now` (the ready tasks run, the sockets are polled once) and the frames queued
  meanwhile share its write; the spoke keeps doing so until a wait gathers none. Holding frames
  back at any load cost 10% at 8 in flight (87% → 78%: the hub idles while the caller gathers,
  the calls move in lockstep), hence the threshold. Serving: 64 in flight 69% → 98% (server CPU
  per call 8 → 6 µs), 8 in flight 87% → 86%, 1 in flight 97% → 97%.
"""


HTTP_INSTRUCTIONS_48 = """#### What one tiny HTTP call costs, counted (issue 48)

Instructions per `POST /ops/bench.add` through the router in process (`tower::ServiceExt::oneshot`,
no sockets: everything the server does per request but hyper's connection work, which both sides
share), counted as for MCP below: `benches/examples/profile.rs`'s `http` (`HttpServer::router()`),
`http-plain` (the same routes without the compression layer: what `HttpServer::serve` runs, but
for its one compression check per request) and `http-axum` (the equal-work axum + `jsonschema`
router of `src/axum_peer.rs`: 17,681 instructions, 33 allocations, 4,664 bytes).

| commit | `router()` | allocations / bytes | × axum + check | `serve`'s routes (`http-plain`) |
|---|---:|---:|---:|---:|
| `53219c7` (before) | 29,727 | 45 / 7,833 | 1.68× | — |
| `77b45be`: the reply's local meta written directly; no allocation to tell a JSON media type; the request id a header value from the start; `Vary` decided reading the content type once | 28,078 | 43 / 7,797 | 1.59× | — |
| `9b93890`: an edge's one fact kept without a map; no cancellation token for a handler that reads no context | 26,853 | 40 / 7,449 | 1.52× | — |
| `2e34b9e`: each operation registered when the router is built has a static route (no path variable matched, decoded, allocated) | 25,860 | 37 / 7,696 | 1.46× | — |
| `006d119`: `serve` puts the compression around the router once, not in every route | 25,860 | 37 / 7,696 | 1.46× | 23,741 (33 allocations: axum's count) |
| `af277d7`: a call span nothing can record not built; the SSE encoding read only for a stream | 25,535 | 37 / 7,696 | 1.44× | 23,312 (1.32×) |
| `1badff6`: the served call's future holds the request's parts once (the call is prepared, then only its outcome awaited) and the front door polls its running call in place; `traceparent` and `tracestate` looked up by a `HeaderName` (by text, each lookup parsed the name); the route table hashed with foldhash | 25,452 | 37 / 6,776 | 1.44× | 22,928 (1.29×) |
| `81f8cff`: a JSON body's UTF-8 checked once, as a whole, then read with `from_str` (`from_slice` checks every string it reads, at a call each) | — | — | — | 22,906 (1.29× axum's 17,715 in the same build) |

The medium call (`http-medium`, `http-axum-medium`): 70,455 → 66,079 → 65,031 (`81f8cff`)
instructions against axum's 70,117 (0.93×), 77 → 69 allocations (axum 88). Where the tiny call's
remaining ~5,200 go (`http-plain` against axum, by source in callgrind): `memcpy` ~1,000 more (the
served call's future, boxed by axum and moved at each `.await`, still larger than axum's), the
`http` crate's header work ~700 (the response's `x-request-id`, the lookups of `x-request-id`
and `traceparent` opkit's contract adds), the context and its edge and the envelope's meta
(~1,000), the registry's front door and guard (~700 beyond the check and decode both do), the
fresh request id written as a UUID for `x-request-id` (~120).

The changes in shared code (the edge's one fact, the span, the wire decoder borrowing its
strings, and `4941148`: an unsigned `call.responded` written around the reply's own JSON rather
than through an envelope `Value`) cut the call protocol too, same method: a round trip over
`MemoryPubSub` 46,766 → 42,445 instructions; one WebSocket call through the hub 194,880 →
189,287 (64.0 → 55.0 allocations); one Redis call 154,301 → 148,601 (111.6 → 104.6). With 64
calls in flight (`profile ws 20000 64`, `profile redis 5000 64`): 56.5 → 47.5 allocations per
WebSocket call (the raw relay: 8.5), 81.9 → 74.9 per Redis call (raw: 55.9).

Then (`809f3bc`..`79b1ab3`), in the call protocol's own code, same method: the caller's operation
id one `Arc` from the start and its request id written on the stack (two allocations fewer per
call); every wire reader (the fast decoder, the hub's check, `peek`, the full parse) checks an
event's UTF-8 once for the whole text and reads it with `from_str` (`81f8cff`: `from_slice`
called `from_utf8` for each of ~25 strings per round trip, ~2,300 instructions); `call.requested`
written by hand, its fixed keys as bytes (`71d66ca`); a caller id's and a `traceparent`'s bytes
checked by tables, `MemoryPubSub`'s topics hashed with foldhash (`871ecd7`); a request and a
reply that start with their `type` (as opkit writes both) read by readers of their own fields,
half the size of the every-field one, which reads anything else (`c4fadff`). A round trip over
`MemoryPubSub` 42,405 → 42,379 → 40,495 (`81f8cff`) → 37,911 (`871ecd7`) → 36,894 → 36,793
(`79b1ab3`: the handler's per-request future holds the request once) instructions;
one Redis call 148,978 → 141,549 (104.6 → 102.6 allocations); one WebSocket call 187,316 → 185,032 (55 → 53
allocations; this path's count moves by ±3,000 between runs: its polls and wake-ups vary). With
64 calls in flight: 47.5 → 45.5 allocations per WebSocket call (10,283 → 9,820 bytes), 74.9 →
72.9 per Redis call.
"""

def equal_work_section(w, get, serving):
    """Issue 36: opkit against peers doing the same input check, and raw transports doing the
    same hops."""
    w("## Equal-work peers (issue 36)\n")
    w(EQUAL_WORK_INTRO)

    w("### HTTP, real loopback servers (`serving.rs`, 32 concurrent callers)\n")
    w("opkit `HttpServer` `POST /ops/<id>` vs an axum handler taking `Json<Value>`, checking it with")
    w("the compiled validator (400 with the violations), then `serde_json::from_value` into the input")
    w("type and `Json<Out>` back (`axum_peer::checked_router` in `src/axum_peer.rs`). Same serve loop")
    w("(`TCP_NODELAY`), same requests. Targets: opkit ≥ 1.0× its requests/s, p99 ≤ 1.05×. The last")
    w("columns are the CPU time the server's thread spent per call (user + system, from `/proc`'s")
    w("`schedstat`, in nanoseconds, over a round): rates on this 2-core machine move with whatever else runs, the")
    w("server's own cost per call much less.\n")
    w("| size | opkit calls/s | axum + `jsonschema` calls/s | opkit / peer | opkit p99 | peer p99 | p99 opkit / peer | server CPU per call, opkit | peer | opkit / peer |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for path, size in [("http_tiny", "tiny"), ("http_medium", "medium")]:
        serving_pair_row(w, serving, path, size, "opkit", "axum_jsonschema", cpu=True)
    w("")
    w(HTTP_INSTRUCTIONS_48)
    gzip_section(w, serving)

    w("### MCP `tools/call` in process (`compare.rs`)\n")
    w("`ServerHandler::call_tool` with a `RequestContext` on a live peer: opkit's `McpHandler` vs an")
    w("rmcp `#[tool]` server (`opkit_benches::rmcp_checked`) whose tools take the arguments as a")
    w("`JsonObject`, check them with the compiled validator (`invalid_params` with the violations),")
    w("deserialize them and return `Json<Out>` (structured content and its text, as opkit returns).")
    w("Target: opkit ≤ 1.2× its time.\n")
    w("| size | opkit `McpHandler` | rmcp `#[tool]` + `jsonschema` | opkit / peer | rmcp without the check |")
    w("|---|---:|---:|---:|---:|")
    for size in ["tiny", "medium"]:
        ours, peer = get("mcp_call_tool", f"{size}_opkit_call_tool"), get("mcp_call_tool", f"{size}_rmcp_jsonschema")
        w(f"| {size} | {fmt_ns(ours)} | {fmt_ns(peer)} | {ratio(ours, peer)} | {fmt_ns(get('mcp_call_tool', f'{size}_rmcp_tool_router'))} |")
    w("")
    w(MCP_INSTRUCTIONS_48)

    w("### MCP over Streamable HTTP (`serving.rs`, raw JSON-RPC POSTs)\n")
    w("Both on rmcp's `StreamableHttpService` at `/mcp`, the same `tools/call` of `bench.add`; the")
    w("peer is the checking rmcp server above. In the stateless 2026-07-28 era each POST carries its")
    w("version and capabilities in `_meta` (32 connections); in the legacy 2025-11-25 era every call")
    w("is on one session (64 connections). Target: opkit ≥ 1.0× its calls/s.\n")
    w("| era | opkit calls/s | rmcp + `jsonschema` calls/s | opkit / peer | opkit p99 | peer p99 | p99 opkit / peer |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    for path, era in [("mcp_modern", "stateless 2026-07-28"), ("mcp_legacy", "legacy 2025-11-25, one session")]:
        serving_pair_row(w, serving, path, era, "opkit", "rmcp_jsonschema")
    w("")
    w(MCP_HTTP_48)
    w(FUTURES_48)
    w(CLOCKS_48)
    w(MCP_META_48)
    w(ROUTES_48)
    w(DEPTH_48)
    w(ACCEPT_48)
    w(NAMES_48)
    w(WRITES_48)
    w(MCP_CLIENT_48)
    w(MCP_FUTURES_48)
    w(MCP_STALLS_48)
    w(IMPORT_ENVELOPES_48)

    raw, ours = get("websocket_rt", "raw_relay_round_trip"), get("websocket_rt", "opkit_round_trip")
    w("### WebSocket through a hub, one call at a time (`compare.rs`)\n")
    w("Both: caller → hub → serving connection → hub → caller over loopback, every socket with")
    w("`TCP_NODELAY`, all in one process on one runtime. opkit: a calling `WsSpoke` and")
    w("`PendingRequestMap`, a `WsHub`, a serving `WsSpoke` and `CallHandler` (the protocol's events")
    w("with their envelopes, each publish acknowledged with a receipt, the registry's `execute` with")
    w("its input check). Raw (`opkit_benches::ws_relay`): text frames `<id> <json>`; the hub forwards")
    w("a request to the server connection, remembering which caller sent its id, and the reply back")
    w("to that caller; the server parses the input and answers the sum. Target: opkit ≥ 70% of its")
    w("throughput.\n")
    if raw and ours:
        w("| bench | round trip | calls/s | % of raw relay throughput |")
        w("|---|---:|---:|---:|")
        w(f"| raw tokio-tungstenite relay through a hub | {fmt_ns(raw)} | {1e9 / raw:,.0f} | 100% |")
        w(f"| **opkit** over `WsHub` + two `WsSpoke`s | {fmt_ns(ours)} | {1e9 / ours:,.0f} | {percent(raw, ours)} |")
    else:
        w("Not measured in this run.")
    w("")

    raw, ours = get("redis_rt", "raw_stream_round_trip"), get("redis_rt", "opkit_protocol_redis")
    w("### Redis through a stream and a consumer group, one call at a time (`compare.rs`)\n")
    w("Both: the request goes to a stream read by a consumer group (competing consumers), the reply")
    w("comes back by pub/sub on the caller's channel. opkit: `RedisPubSub` (a Lua script doing")
    w("`PUBLISH` + live-member check + `XADD`, `XREADGROUP` by the serving replica, the reply through a")
    w("second script, `XACK` with the next read; query redelivery on, the default). Raw")
    w("(`opkit_benches::redis_stream`): `XADD` of `{id, reply, input}`, a worker's `XREADGROUP ..")
    w("COUNT 16 BLOCK 1000`, then one pipeline of `PUBLISH` of the reply and `XACK`; the caller")
    w("routes replies by id. Target: opkit ≥ 85% of its throughput.\n")
    if raw and ours:
        w("| bench | round trip | calls/s | % of raw stream throughput |")
        w("|---|---:|---:|---:|")
        w(f"| raw redis-rs `XADD` → `XREADGROUP` → `PUBLISH` + `XACK` | {fmt_ns(raw)} | {1e9 / raw:,.0f} | 100% |")
        w(f"| **opkit** call protocol over `RedisPubSub` | {fmt_ns(ours)} | {1e9 / ours:,.0f} | {percent(raw, ours)} |")
    else:
        w("Not measured in this run (no `redis-server` on PATH and no `REDIS_URL`).")
    w("")


IN_FLIGHT = [1, 8, 64]
TRANSPORTS = [("ws", "WebSocket", "raw tokio-tungstenite relay through a hub"),
              ("redis", "Redis", "raw redis-rs stream + consumer group"),
              ("cluster", "Redis Cluster", "raw redis-rs cluster stream + consumer group, sharded pub/sub replies")]

# opkit's share of the raw throughput under concurrency before issue 49 (the transports' rework):
# WebSocket and Redis from the last idle-machine run before it (`docs/benchmarks.md` at f134a34);
# the Redis Cluster paths did not exist yet, so theirs come from the A/B of that commit's binary
# against this work's, alternated on a busy machine (see the notes).
BEFORE_49 = {
    "ws": {1: 61, 8: 44, 64: 50},
    "redis": {1: 71, 8: 63, 64: 66},
    "cluster": {1: 72, 8: 48, 64: 35},
}

# Issue 49's targets: opkit's share of the raw throughput at 1, 8 and 64 in flight. The Redis
# Cluster's is one server's: the profile shows the cluster adds no command and no round trip of
# its own to a call (`INFO commandstats` summed over the masters: the same commands per call as
# on one server), so its share should be one server's, within the noise (5 points).
TARGETS_49 = {"ws": 0.85, "redis": 0.90, "cluster": 0.90}


def concurrency_section(w, serving):
    """Issue 36: calls/s and latency with 1, 8 and 64 calls in flight, opkit vs raw."""
    w("## Throughput under concurrency (issues 36 and 49)\n")
    if not any(serving.get((f"{t}_inflight_{n}", "opkit")) for t, _, _ in TRANSPORTS for n in IN_FLIGHT):
        w("Not measured in this run.\n")
        return
    w("`serving.rs`: one caller keeps 1, 8 or 64 calls of `bench.add` in flight, 5 000 calls per")
    w("round; the hub, the serving side and the raw worker run on the server runtime (one worker")
    w("thread), the caller on the load generator's (Redis itself is a third process on the same 2")
    w("cores; the cluster three). opkit against the raw baselines of the section above (the same work")
    w("per call); on the cluster the raw side is `opkit_benches::redis_cluster`: the stream and group")
    w("in one slot, each caller's reply channel in another (`SSUBSCRIBE`), the worker's `SPUBLISH`es")
    w("and `XACK` sent at once (they go to different masters). Medians of the rounds; the CPU columns")
    w("are the server runtime's CPU per call and the load generator's (its runtime and the thread")
    w("driving it), from `/proc`'s `schedstat` in nanoseconds over a round. A side whose CPU per call is near the time")
    w("between two calls (1 / the rate) is what bounds the rate.\n")
    w("| transport | in flight | raw calls/s | raw p50 | raw p99 | opkit calls/s | opkit p50 | opkit p99 | opkit % of raw | server CPU per call, opkit | raw | caller CPU per call, opkit | raw |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    curves = []
    for key, name, _ in TRANSPORTS:
        rates = []
        for n in IN_FLIGHT:
            path = f"{key}_inflight_{n}"
            raw = [serving_median(serving, path, "raw", c) for c in range(3)]
            ours = [serving_median(serving, path, "opkit", c) for c in range(3)]
            if raw[0] is None or ours[0] is None:
                continue
            rates.append((n, raw[0], ours[0]))
            cpu = [serving_median(serving, path, side, column)
                   for column in (4, 5) for side in ("opkit", "raw")]
            cpu = " | ".join("—" if c is None else f"{c:.0f} µs" for c in cpu)
            w(f"| {name} | {n} | {raw[0]:,.0f} | {raw[1] / 1e3:.2f} ms | {raw[2] / 1e3:.2f} ms | "
              f"{ours[0]:,.0f} | {ours[1] / 1e3:.2f} ms | {ours[2] / 1e3:.2f} ms | {percent(ours[0], raw[0])} | {cpu} |")
        if rates:
            curves.append((name, rates))
    w("")
    w("The curve, as measured:\n")
    for name, rates in curves:
        first_raw, first_ours = rates[0][1], rates[0][2]
        raw_curve = " → ".join(f"{r:,.0f}" for _, r, _ in rates)
        ours_curve = " → ".join(f"{o:,.0f}" for _, _, o in rates)
        levels = " → ".join(str(n) for n, _, _ in rates)
        shares = " → ".join(percent(o, r) for _, r, o in rates)
        w(f"- **{name}** ({levels} in flight): raw {raw_curve} calls/s "
          f"(×{rates[-1][1] / first_raw:.1f} from the first to the last level), opkit {ours_curve} calls/s "
          f"(×{rates[-1][2] / first_ours:.1f}); opkit at {shares} of raw.")
    w("")
    w("Before and after issue 49 (opkit % of raw; before: see `BEFORE_49` in `benches/report.py`,")
    w("the last run before the transports' rework; after: this run):\n")
    w("| transport | 1 in flight, before → after | 8 in flight | 64 in flight | target (issue 49) |")
    w("|---|---:|---:|---:|---:|")
    for key, name, _ in TRANSPORTS:
        cells = []
        for n in IN_FLIGHT:
            rate, _ = serving_ratio(serving, f"{key}_inflight_{n}", "opkit", "raw")
            after = "—" if rate is None else f"{rate * 100:.0f}%"
            cells.append(f"{BEFORE_49[key][n]}% → {after}")
        w(f"| {name} | {' | '.join(cells)} | ≥ {TARGETS_49[key] * 100:.0f}% |")
    w("")
    w(TRANSPORTS_RERUN_49)
    w(WS_COALESCE_49)
    w(REDIS_PLAIN_49)
    w(TRANSPORTS_REDIS_TX_49)
    w(TRANSPORTS_HEADS_49)
    w(CLUSTER_ROUTES_49)


GZIP_SIDES = [
    ("opkit", "opkit `HttpServer` (compression on, by default)"),
    ("opkit_min_32", "opkit compressing from 32 bytes (before `compression_min_size`)"),
    ("axum_jsonschema_gzip", "axum + `jsonschema` + tower-http `CompressionLayer::new()`"),
    ("axum_jsonschema", "axum + `jsonschema`, no compression"),
]


def gzip_section(w, serving):
    """The HTTP paths with `Accept-Encoding: gzip` on every request."""
    w("### HTTP for clients that accept gzip (`serving.rs`, 32 concurrent callers)\n")
    w("The requests above, each saying `Accept-Encoding: gzip` (what browsers, curl's `--compressed`,")
    w("Python's `requests` and Node's `fetch` send by default; the load generator reads the bytes")
    w("without decoding them). The peer an axum user would write adds tower-http's `CompressionLayer`")
    w("with its defaults (it compresses bodies from 32 bytes); opkit compresses from")
    w("`HttpServer::compression_min_size`, 1,400 bytes by default. The list answer (`bench.list`, 64")
    w("records of the medium output's shape, ~15 KB) is over both minimums. Bytes are one response's")
    w("body on the wire; ratios are against the axum + `jsonschema` + `CompressionLayer` side.\n")
    w("| size | side | calls/s | p99 | body bytes | server CPU per call | calls/s vs peer | CPU vs peer |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    paths = [("http_tiny_gzip", "tiny"), ("http_medium_gzip", "medium"), ("http_list_gzip", "list")]
    for path, size in paths:
        peer = [serving_median(serving, path, "axum_jsonschema_gzip", i) for i in (0, 4)]
        for side, label in GZIP_SIDES:
            if path == "http_list_gzip" and side == "opkit_min_32":
                side, label = "opkit_uncompressed", "opkit `HttpServer` with `compression(false)`"
            rate, p99, size_bytes, cpu = (serving_median(serving, path, side, i) for i in (0, 2, 3, 4))
            if rate is None:
                w(f"| {size} | {label} | not measured | | | | | |")
                continue
            vs_rate = f"{rate / peer[0]:.2f}×" if peer[0] else "—"
            vs_cpu = f"{cpu / peer[1]:.2f}×" if peer[1] and cpu else "—"
            cpu_text = f"{cpu:.1f} µs" if cpu else "not measured"
            w(f"| {size} | {label} | {rate:,.0f} | {p99 / 1e3:.2f} ms | {size_bytes:.0f} | {cpu_text} | {vs_rate} | {vs_cpu} |")
    w("")
    w(GZIP_48)
    w(WHOLE_48)


GZIP_48 = """#### Compression from one TCP segment up (issue 48, 2026-12-01, fifth)

The serving rows above are measured with a client that does not ask for compression. Most
clients do: browsers, curl's `--compressed`, Python's `requests` and Node's `fetch` send
`Accept-Encoding: gzip` by default. For them opkit's server compressed every answer from
tower-http's minimum, 32 bytes: a tiny call's 97-byte envelope went out as 105 bytes of gzip,
chunked, for ~4.5 µs more of server CPU per call, and each response allocated (and zeroed) a
deflate state of ~320 KiB (`profile http` with `GZIP=1`: 7.2 µs of CPU and 328,643 bytes
allocated per call, against 1.6 µs and 4,840 bytes without the header). The medium answer,
336 bytes, lost 70 of them for ~9 µs.

`b3356b1` adds `HttpServer::compression_min_size`, 1,400 bytes by default: one TCP segment's
payload on an Ethernet path, so a smaller body goes out in one segment compressed or not
(Go's `gziphandler` chose the same figure; Spring Boot and Tomcat default to 2 KiB). A smaller
answer is sent as it is and says no `Vary` (it never varies); larger ones, and bodies of unknown
size, are compressed as before. `d54fbca` adds the rows above: the same requests with the
header, against the equal-work axum handler under tower-http's `CompressionLayer::new()` (what
an axum user adds) and without it, and opkit compressing from 32 bytes, in one run. In process
(`GZIP=1 target/release/examples/profile http 20000`, CPU per call): tiny 7.2 → 2.0 µs, medium
(`http-medium`) 12.0 → 4.2 µs.

The axum peer pays what opkit paid for its medium answer, and nothing for its tiny one:
`{"sum":42}` is 10 bytes, under 32. An axum user gets opkit's behaviour with
`CompressionLayer::new().compress_when(SizeAbove::new(1400))`.
"""


WHOLE_48 = """#### Bodies in memory gzipped whole, and a faster deflate (issue 48, 2026-12-01, sixth)

tower-http's compression streams every body through a deflate state it makes for that response
(~300 KiB) and sends the result chunked, whatever the body's size. `7a8f9e8` gzips a body held in
memory (one frame of its exact size, up to 256 KiB: every operation's and REST route's answer)
in one piece with a state kept per thread and reset between bodies (`http_server/gzip.rs`; the
bytes `flate2`'s `GzEncoder` writes, which a test pins), inside tower-http's layer, which then
leaves it alone; streams and larger bodies go through tower-http as before. The answer now says
its `Content-Length`. gzip is picked as tower-http picks it (a test holds the two to one table
of `Accept-Encoding` values). With `flate2`'s default backend, `miniz_oxide`, which zeroes its
whole state, a scratch loop gzipping one 1.5 KB body per iteration took 82 µs with a fresh state
(its pages faulted in anew) against 4.9 µs with a kept one; in this server, whose heap hands the
freed state back warm, server CPU per call went: tiny from 32 bytes 15.7 → 13.2 µs, medium from
32 bytes 21.4 → 19.2 µs, the list 147 → 144 µs (`SERVING_FILTER=gzip ROUNDS=3`, the builds before
and after, medians of 3 rounds).

`4b5c539` builds `flate2` on its `zlib-rs` backend (for tower-http's streaming compression too:
one `flate2` per build, so the axum side above shares it). `gzip_level`'s 19 KB at level 6
~104 → 63 µs; the list row with gzip 140 → 101 µs of server CPU per call and 7,129 → 9,906
calls/s (the axum side 153 → 114 µs), for 1,997 → 2,091 bytes on the wire. zlib-rs's level 1
writes larger output than miniz's (3,390 against 2,432 bytes of the 19 KB), its level 6 a
little smaller (2,268 against 2,287). A fresh `zlib-rs` state costs ~1.6 µs more than a kept
one (it does not zero its window), so most of what the kept state saves now is the framing.

Without compression (`compression(false)`), the list costs opkit ~55 µs of server CPU per call
against axum + `jsonschema`'s ~70 µs.
"""

OPENAPI_48 = """`/openapi.json` was built from the registry's specs on every request (`1f574fe` keeps it):
~1 ms of CPU at 10 operations of the medium bench's shape, ~11 ms at 100 and ~110 ms at 500, on
a route that needs no credentials, on the runtime's worker. It is now built once per registry
revision (`OperationRegistry::revision`, which every change bumps), by one request at a time
and on tokio's blocking pool, and kept as its JSON without the `servers` entry, which each
request's mount point adds as a second chunk of the body (`af5621f`: the kept part is shared by
every response, not copied; a `serde_json::Map` is sorted and `servers` is its last key, so the
bytes are the ones serializing the whole document writes). Responses carry a strong
`ETag` (a digest of the kept JSON, the mount point and the encoding) and `Cache-Control:
no-cache`; an `If-None-Match` that lists the tag gets `304`. A client that accepts gzip had the
document compressed again on every request by the compression layer (0.3, 1.3 and 5.9 ms at 10,
100 and 500 operations: 78 KB → 6 KB, 644 KB → 14 KB, 3.2 MB → 48 KB); the route now gzips it
once per mount point (the last four kept) and marks it for the layer to leave alone (`549657f`).
Measured
with a scratch copy of this bench at 10, 100 and 500 operations (`router().oneshot`, 50 GETs
after the first, without `Accept-Encoding`): 1.0 ms → 2 µs, 11.4 ms → 27 µs, 112 ms → 71 µs per
GET; the first GET after a change pays the build (2, 19 and 99 ms). The Microsoft Graph import
(the OpenAPI import section below: a 60 MB document built in 2.3 s, the build raising the
process's peak to 1.9 GB) paid that on every GET; now the first GET after a change does.
"""


def serving_pair_row(w, serving, path, label, ours, theirs, cpu=False):
    rate_a, rate_b = serving_median(serving, path, ours, 0), serving_median(serving, path, theirs, 0)
    p99_a, p99_b = serving_median(serving, path, ours, 2), serving_median(serving, path, theirs, 2)
    if rate_a is None or rate_b is None:
        w(f"| {label} | not measured | | | | | |" + (" | | |" if cpu else ""))
        return
    row = (f"| {label} | {rate_a:,.0f} | {rate_b:,.0f} | {rate_a / rate_b:.2f}× | {p99_a / 1e3:.2f} ms | "
           f"{p99_b / 1e3:.2f} ms | {p99_a / p99_b:.2f}× |")
    if cpu:
        cpu_a, cpu_b = serving_median(serving, path, ours, 4), serving_median(serving, path, theirs, 4)
        row += (f" {cpu_a:.1f} µs | {cpu_b:.1f} µs | {cpu_a / cpu_b:.2f}× |" if cpu_a and cpu_b
                else " not measured | | |")
    w(row)


def times(value, limit):
    """`value` as `N.NN×`, with a third digit when two would show a missed limit as met."""
    text = f"{value:.2f}×"
    return f"{value:.3f}×" if text == f"{limit:.2f}×" else text


def equal_work_targets(target, check, get, serving):
    """The targets of issue 36 (equal-work peers and throughput under concurrency)."""
    for path, label in [("http_tiny", "tiny"), ("http_medium", "medium")]:
        rate, p99 = serving_ratio(serving, path, "opkit", "axum_jsonschema")
        target(f"HTTP {label}: ≥ 1.0× the requests/s of axum + `jsonschema` (issue 36)",
               "not measured" if rate is None else times(rate, 1.0), None if rate is None else rate >= 1.0)
        target(f"HTTP {label}: p99 ≤ 1.05× axum + `jsonschema`'s (issue 36)",
               "not measured" if p99 is None else times(p99, 1.05), None if p99 is None else p99 <= 1.05)
    for size in ["tiny", "medium"]:
        check(get("mcp_call_tool", f"{size}_opkit_call_tool"), get("mcp_call_tool", f"{size}_rmcp_jsonschema"), 1.2,
              f"{size} MCP `call_tool` in process ≤ 1.2× rmcp `#[tool]` + `jsonschema` (issue 36)")
    for path, label in [("mcp_modern", "stateless 2026-07-28"), ("mcp_legacy", "legacy 2025-11-25")]:
        rate, _ = serving_ratio(serving, path, "opkit", "rmcp_jsonschema")
        target(f"MCP Streamable HTTP, {label}: ≥ 1.0× rmcp `#[tool]` + `jsonschema`'s calls/s (issue 36)",
               "not measured" if rate is None else times(rate, 1.0), None if rate is None else rate >= 1.0)
    for key, name, group, raw_bench, ours_bench, limit in [
            ("ws", "WebSocket", "websocket_rt", "raw_relay_round_trip", "opkit_round_trip", 0.70),
            ("redis", "Redis", "redis_rt", "raw_stream_round_trip", "opkit_protocol_redis", 0.85)]:
        raw, ours = get(group, raw_bench), get(group, ours_bench)
        label = f"{name}: ≥ {limit * 100:.0f}% of the raw {'relay' if key == 'ws' else 'stream'}'s throughput"
        target(f"{label}, one call at a time (issue 36)",
               percent(raw, ours) if raw and ours else "not measured",
               None if not (raw and ours) else raw / ours >= limit)
        for n in IN_FLIGHT:
            rate, _ = serving_ratio(serving, f"{key}_inflight_{n}", "opkit", "raw")
            target(f"{label}, {n} in flight (issue 36)",
                   "not measured" if rate is None else f"{rate * 100:.0f}%",
                   None if rate is None else rate >= limit)


def transport_targets_49(target, serving):
    """Issue 49: the call protocol at the speed of its engine, at 1, 8 and 64 in flight."""
    for key, name, _ in TRANSPORTS:
        limit = TARGETS_49[key]
        for n in IN_FLIGHT:
            rate, _ = serving_ratio(serving, f"{key}_inflight_{n}", "opkit", "raw")
            target(f"{name}: ≥ {limit * 100:.0f}% of the raw round trip's throughput, {n} in flight (issue 49)",
                   "not measured" if rate is None else f"{rate * 100:.0f}%",
                   None if rate is None else rate >= limit)
    for n in IN_FLIGHT:
        cluster, _ = serving_ratio(serving, f"cluster_inflight_{n}", "opkit", "raw")
        single, _ = serving_ratio(serving, f"redis_inflight_{n}", "opkit", "raw")
        measured = None if cluster is None or single is None else (cluster - single) * 100
        target(f"Redis Cluster: its share of raw within 5 points of one server's, {n} in flight (issue 49)",
               "not measured" if measured is None else f"{measured:+.0f} points",
               None if measured is None else measured >= -5)


def serving_ratio(serving, path, ours, theirs):
    """(opkit rate / theirs, opkit p99 / theirs) from the median of the rounds, or Nones."""
    a, b = serving.get((path, ours)), serving.get((path, theirs))
    if not a or not b:
        return None, None
    rate = median(r[0] for r in a) / median(r[0] for r in b)
    p99 = median(r[2] for r in a) / median(r[2] for r in b)
    return rate, p99


SERVING_PATHS = [
    ("http_tiny", "`POST /ops/bench.add` vs an axum `Json<In> -> Json<Out>` handler", ["opkit", "axum", "axum_jsonschema"]),
    ("http_medium", "`POST /ops/bench.medium` vs the same axum handler for the medium op", ["opkit", "axum", "axum_jsonschema"]),
    ("mcp_modern", "`tools/call`, stateless 2026-07-28 era, raw JSON-RPC POSTs, vs an rmcp `#[tool]` server",
     ["opkit", "rmcp", "rmcp_jsonschema", "opkit_sdk_client", "rmcp_sdk_client"]),
    ("mcp_legacy", "`tools/call`, legacy era, 64 connections on one session, vs an rmcp `#[tool]` server",
     ["opkit", "rmcp", "rmcp_jsonschema", "opkit_sdk_client", "rmcp_sdk_client"]),
]


def serving_section(w, serving):
    w("## Serving, on real loopback servers (issue 20)\n")
    if not serving:
        w("Not measured in this run (`bash benches/run.sh` runs `benches/benches/serving.rs`).\n")
        return
    rounds = max(len(v) for v in serving.values())
    w("`benches/benches/serving.rs`: each server on a tokio runtime with one worker thread, the load")
    w("generator (reqwest, 32 concurrent callers unless said otherwise) on another: one core per side.")
    w(f"The sides alternate round by round; figures are the medians of {rounds} round(s). `*_sdk_client`")
    w("rows call through one opkit MCP client connection instead of raw POSTs (the client's own cost")
    w("dominates them). `axum_jsonschema` and `rmcp_jsonschema` are the equal-work peers (next")
    w("section); the ratio columns here compare opkit with the peer that does not check its input.\n")
    w("| path | side | calls/s | p50 | p99 | calls/s vs alternative | p99 vs alternative |")
    w("|---|---|---:|---:|---:|---:|---:|")
    pairs = {"opkit": None, "opkit_sdk_client": "rmcp_sdk_client"}
    for path, label, sides in SERVING_PATHS:
        for side in sides:
            got = serving.get((path, side))
            if not got:
                continue
            rate, p50, p99 = (median(r[i] for r in got) for i in range(3))
            versus = serving.get((path, pairs[side] or sides[1])) if side in pairs else None
            vs_rate = f"{rate / median(r[0] for r in versus):.2f}×" if versus else "—"
            vs_p99 = f"{p99 / median(r[2] for r in versus):.2f}×" if versus else "—"
            w(f"| {label if side == sides[0] else ''} | {side} | {rate:,.0f} | {p50 / 1e3:.2f} ms | {p99 / 1e3:.2f} ms | {vs_rate} | {vs_p99} |")
    w("")
    sse = {side: serving.get(("sse", side)) for side in ["opkit", "opkit_compact", "axum"]}
    if all(sse.values()):
        axum_rate = median(r[0] for r in sse["axum"])
        axum_cpu = median(r[4] for r in sse["axum"] if r[4] is not None) if any(r[4] for r in sse["axum"]) else None
        w("SSE: one subscription of 20 000 tiny items, read to the end by one client. The rate is the")
        w("client's: it spends tens of µs of CPU per item (reading the chunks as they come, one")
        w("`Bytes` each), the servers under 1 µs, so the server's CPU per item is the figure that")
        w("compares the sides.\n")
        w("| side | items/s | bytes per item | server CPU per item | client CPU per item | items/s vs axum `Sse` | server CPU vs axum |")
        w("|---|---:|---:|---:|---:|---:|---:|")
        labels = {"opkit": "opkit, envelope encoding (default)",
                  "opkit_compact": "opkit, `Accept: text/event-stream; opkit=data`",
                  "axum": "axum `Sse`, `Event::json_data` per item"}
        for side, got in sse.items():
            rate, size = median(r[0] for r in got), median(r[3] for r in got)
            cpus = [r[4] for r in got if r[4] is not None]
            clients = [r[5] for r in got if r[5] is not None]
            cpu = median(cpus) if cpus else None
            client = median(clients) if clients else None
            cpu_text = f"{cpu * 1e3:,.0f} ns" if cpu is not None else "—"
            client_text = f"{client:.1f} µs" if client is not None else "—"
            vs_cpu = f"{cpu / axum_cpu:.2f}×" if cpu is not None and axum_cpu else "—"
            w(f"| {labels[side]} | {rate:,.0f} | {size:.1f} | {cpu_text} | {client_text} | {rate / axum_rate:.2f}× | {vs_cpu} |")
        w("")
        w(SSE_48)


SSE_48 = """#### What an SSE item costs the server (issue 48, 2026-12-01, sixth)

The table above read only the rate, which is the client's; the server's CPU per item (now
beside it) put opkit at 540 ns an item in its envelope encoding and 440 ns in the compact one,
against axum `Sse`'s 340 (the last run before this session). `profile sse`, `sse-compact` and
`sse-axum` (new: 1,000 items a subscription through the routers in process, 1,000 rounds) put
them at 386, 306 and 184 ns, with 7, 6 and 4 allocations, and `perf` on the compact one found two
costs per item the axum handler does not have:

- axum's `KeepAlive`, which opkit's events used, resets its timer at every event: a precise
  clock read and a timer-wheel update (7% of the samples in the clock, 6% in the timer).
  `1710f57` writes the event stream by hand with its own keep-alive, whose timer rings once per
  interval and sends a comment when no event went out since (an idle stream gets one between
  one and two intervals after its last event; `an_idle_subscription_is_kept_alive_with_comments`).
- The registry's guard polled the call's cancellation listener before every item: two locks
  (tokio-util's token and tokio's `Notify`, 8% of the samples). `4f87b04` polls it on every
  wake-up, whenever the items are not ready, and before every 16th item of a run that never
  waits (such a stream ends within 16 items of its cancellation: `docs/limits.md`).

`1781b13` writes an event's `id:` with `itoa` (a `String` per event before). In process: the
envelope encoding 386 → 278 ns and 7 → 6 allocations an item, the compact one 306 → 226 ns; axum
176–184 ns. The rest of the compact gap was the reply's data written into a `Vec` and copied into
axum's event buffer, and the layers of a subscription (its span, the middleware pipeline).

`1711871` (the seventh round) writes each event by hand into one buffer: its `data: ` prefix,
the reply's JSON appended in place (`Reply::write_json`, `write_data_json`, public now), its
`id:` and the blank line; the event stream is the response's body itself. axum's `Event` had
copied JSON made in a buffer of its own into its own (growing it as it went) and checked it
again for UTF-8 and line breaks; here a line break in the JSON (serde writes none) starts a
`data:` line of its own, so nothing in the data can be read as a field of the event
(`line_breaks_in_the_data_start_data_lines_not_fields`). `profile sse`, `sse-compact`,
`sse-axum`, 300 rounds of 1,000 items, three runs each: the envelope encoding 293 → 147 ns an
item, the compact one 227 → 133 ns, against axum's 173; 6 → 3 allocations an item (axum 4).
The table above is served, with the one write per small answer of the note on the tiny HTTP
call.
"""


if __name__ == "__main__":
    main()
