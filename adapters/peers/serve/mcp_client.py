"""Drives opkit's MCP server with the official Python MCP SDK client (pip package `mcp`).

Connects over stdio (starting a server command) or Streamable HTTP, lists the tools, makes
the calls given as JSON, and prints one JSON report on stdout for the Rust test to check:

    {"protocolVersion": .., "serverInfo": {..}, "tools": [..],
     "calls": [{"name": .., "arguments": .., "result": {..} | "error": "..", "progress": [..]}]}

Usage:
    python mcp_client.py --stdio CMD [--arg ARG ...] --calls '[{"name": .., "arguments": {..}}]'
    python mcp_client.py --http URL [--token TOKEN] [--mode legacy|auto] --calls '[..]'

The SDK client validates every `structuredContent` against the tool's `outputSchema` (a
mismatch raises, and is reported as the call's "error").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def drive(args: argparse.Namespace) -> dict[str, Any]:
    if args.stdio:
        server: Any = StdioServerParameters(command=args.stdio, args=args.arg)
    else:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
        http_client = create_mcp_http_client(headers=headers)
        server = streamable_http_client(args.http, http_client=http_client)
    calls = json.loads(args.calls)
    report: dict[str, Any] = {}
    async with Client(server, mode=args.mode) as client:
        report["protocolVersion"] = client.protocol_version
        info = client.server_info
        report["serverInfo"] = dump(info) if info is not None else None
        tools = []
        cursor = None
        for _ in range(100):
            page = await client.list_tools(cursor=cursor)
            tools.extend(dump(tool) for tool in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        report["tools"] = tools
        report["calls"] = []
        for call in calls:
            progress: list[dict[str, Any]] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append({"progress": value, "total": total, "message": message})

            entry: dict[str, Any] = {"name": call["name"], "arguments": call.get("arguments", {})}
            try:
                result = await client.call_tool(
                    call["name"], call.get("arguments", {}), progress_callback=on_progress
                )
                entry["result"] = dump(result)
            except Exception as error:  # reported, the Rust test decides
                entry["error"] = f"{type(error).__name__}: {error}"
            entry["progress"] = progress
            report["calls"].append(entry)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", help="server command to start")
    target.add_argument("--http", help="Streamable HTTP endpoint URL")
    parser.add_argument("--arg", action="append", default=[], help="argument of the stdio command")
    parser.add_argument("--token", help="bearer token (HTTP)")
    parser.add_argument("--mode", default="auto", help="legacy, auto, or a modern protocol version")
    parser.add_argument("--calls", default="[]", help="JSON list of {name, arguments}")
    args = parser.parse_args()
    report = asyncio.run(drive(args))
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
