"""A small MCP server on the official Python SDK (`mcp`, pinned in requirements.txt).

Used by opkit-adapters' `mcp_python` tests. Typed returns declare an outputSchema and
return structuredContent; the other tools exercise errors, cancellation, notifications
arriving mid-call, a tool list that changes, and a server that exits.

Run: `python3 structured_server.py` (stdio) or
`python3 structured_server.py http <port>` (Streamable HTTP on 127.0.0.1:<port>/mcp).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TypedDict

from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations

server = MCPServer("opkit-structured", version="1.0.0")

# What the cancellable tool saw, read back by `slow_calls`.
STARTED: list[str] = []
CANCELLED: list[str] = []


class Weather(BaseModel):
    """Weather in a city."""

    city: str
    temperature: float = Field(description="Temperature in celsius")
    conditions: str
    humidity: int


class Point(TypedDict):
    x: int
    y: int


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> int:
    """Adds two integers (a bare int is wrapped as {"result": ...})."""
    return a + b


@server.tool(name="get-weather", annotations=ToolAnnotations(readOnlyHint=True))
def get_weather(city: str) -> Weather:
    """Returns the weather of a city as structured content."""
    return Weather(city=city, temperature=21.5, conditions="Sunny", humidity=40)


@server.tool(name="make.point")
def make_point(x: int, y: int) -> Point:
    """Builds a point (a tool name with a dot)."""
    return {"x": x, "y": y}


@server.tool()
def fail(message: str) -> str:
    """Always fails as a tool error (isError: true)."""
    raise ToolError(message)


@server.tool()
def protocol_error(message: str) -> str:
    """Always fails as a JSON-RPC error."""
    raise MCPError(-32001, message, {"hint": "protocol"})


@server.tool()
async def slow(seconds: float, tag: str = "slow") -> str:
    """Sleeps; records its tag when it starts and when it is cancelled."""
    STARTED.append(tag)
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        CANCELLED.append(tag)
        raise
    return f"slept {seconds}"


class SlowCalls(TypedDict):
    started: list[str]
    cancelled: list[str]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def slow_calls() -> SlowCalls:
    """The tags of the `slow` calls that started and that were cancelled so far."""
    return {"started": list(STARTED), "cancelled": list(CANCELLED)}


@server.tool()
async def chatty(ctx: Context, steps: int = 3) -> str:
    """Sends progress, log messages and a tools/list_changed while it runs."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        await ctx.info(f"chatty step {step + 1}")
    await notify_tools_changed(ctx)
    return f"done after {steps} steps"


@server.tool()
async def add_tool(ctx: Context, name: str) -> str:
    """Adds a tool `name` that echoes its text, and says the tool list changed."""

    def echo(text: str) -> str:
        return text

    server.add_tool(echo, name=name, description=f"Echo added at run time as {name}")
    await notify_tools_changed(ctx)
    return f"added {name}"


@server.tool()
async def remove_tool(ctx: Context, name: str) -> str:
    """Removes the tool `name`, and says the tool list changed."""
    server.remove_tool(name)
    await notify_tools_changed(ctx)
    return f"removed {name}"


@server.tool()
def exit_now(code: int = 3) -> str:
    """Exits the server process mid-call, without answering."""
    sys.stdout.flush()
    os._exit(code)


async def notify_tools_changed(ctx: Context) -> None:
    """Tells legacy clients (on the session) and modern ones (subscriptions/listen)."""
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:  # noqa: BLE001 - a modern (stateless) session has no such channel
        pass
    try:
        await ctx.notify_tools_changed()
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
