"""A deliberately quirky MCP server over stdio, on the standard library only.

It speaks the legacy `initialize` handshake (and answers `server/discover` with
"method not found", as pre-2026 servers do) and does what SDK-built servers never do,
so opkit-adapters' `mcp_scripted` tests can check the client's edge cases:

* `tools/list` is paginated one tool per page, and the second cursor is the empty
  string (a valid cursor, not the end);
* tool names that sanitize to the same operation name (`a-b`, `a.b`, `a_b`);
* results with content block types no SDK knows, `structuredContent: null`, a
  non-object `structuredContent`, a `_meta`, and annotations on every block;
* an input-required result (of the 2026-07-28 era) in its 2025-era session;
* a JSON-RPC error for an unknown tool.

Run: `python3 scripted_server.py`.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {
        "name": "future-blocks",
        "description": "Returns blocks of types no SDK knows between known ones",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "a-b",
        "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
    },
    {"name": "a.b", "inputSchema": {"type": "object"}},
    {"name": "a_b", "inputSchema": {"type": "object"}},
    {
        "name": "null-structured",
        "description": "structuredContent is present but null",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "scalar-structured",
        "description": "structuredContent is a bare number (allowed from 2026-07-28)",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "integer"},
    },
    {
        "name": "annotated",
        "description": "Every block type with annotations",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "in-rounds",
        "description": "Answers with an input-required result, which its era does not have",
        "inputSchema": {"type": "object"},
    },
]

# Cursor of the page that starts at each index: page 2's cursor is "".
CURSORS = ["start", ""] + [f"page-{i}" for i in range(2, len(TOOLS))]

ANNOTATIONS = {"audience": ["user"], "priority": 0.25, "lastModified": "2025-06-01T00:00:00Z"}


def call(name: str) -> dict | None:
    if name == "future-blocks":
        return {
            "content": [
                {"type": "text", "text": "before"},
                {"type": "hologram", "frames": [1, 2, 3], "annotations": {"priority": 0.5}},
                {"type": "text", "text": "after"},
            ],
            "_meta": {"example.com/trace": "t-1"},
        }
    if name == "null-structured":
        return {"content": [{"type": "text", "text": "nothing structured"}], "structuredContent": None}
    if name == "scalar-structured":
        return {"content": [{"type": "text", "text": "42"}], "structuredContent": 42}
    if name == "annotated":
        return {
            "content": [
                {"type": "text", "text": "t", "annotations": ANNOTATIONS},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png", "annotations": ANNOTATIONS},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "annotations": ANNOTATIONS},
                {
                    "type": "resource",
                    "resource": {"uri": "mem://blob", "mimeType": "application/octet-stream", "blob": "AAEC"},
                    "annotations": ANNOTATIONS,
                },
                {"type": "resource_link", "uri": "mem://doc", "name": "doc", "title": "A doc", "size": 12},
            ],
            "isError": False,
        }
    if name == "in-rounds":
        question = {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}
        return {
            "resultType": "input_required",
            "inputRequests": {"sure": {"method": "elicitation/create", "params": question}},
            "requestState": "round-1",
        }
    if name in ("a-b", "a.b", "a_b"):
        return {"content": [{"type": "text", "text": name}]}
    return None


def answer(request: dict) -> dict | None:
    method = request.get("method")
    rid = request.get("id")
    if rid is None:  # a notification
        return None
    params = request.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "opkit-scripted", "version": "1.0.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        cursor = params.get("cursor")
        index = 0 if cursor is None else CURSORS.index(cursor)
        result = {"tools": [TOOLS[index]]}
        if index + 1 < len(TOOLS):
            result["nextCursor"] = CURSORS[index + 1]
    elif method == "tools/call":
        result = call(params.get("name", ""))
        if result is None:
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32602, "message": f"Unknown tool: {params.get('name')}"},
            }
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> None:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        response = answer(json.loads(line))
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
