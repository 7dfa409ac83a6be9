"""Drives an MCP server's resources, prompts, completion and elicitation with the official
Python MCP SDK client (pip package `mcp`), at the protocol revision it picks (2026-07-28,
where a question comes back as an input-required result and the client calls again with
the answer), answering every question with the content given.

Prints one JSON report for the Rust test to check:

    {"protocolVersion", "resources", "templates", "read", "prompts", "prompt", "completion",
     "completion2", .., "questions": [..], "calls": [{"name", "result"} | {"name", "error"}]}

Usage:
    python mcp_surface.py URL '<plan JSON>'
    plan: {"read": uri, "prompt": {"name", "arguments"},
           "complete": {"ref", "argument", "context"?} or a list of them,
           "answer": {..}, "calls": [{"name", "arguments"}]}
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def drive(url: str, plan: dict[str, Any]) -> dict[str, Any]:
    report: dict[str, Any] = {"questions": [], "calls": []}

    async def answer(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        report["questions"].append(dump(params))
        return types.ElicitResult(action="accept", content=plan["answer"])

    async def attempt(key: str, run: Any) -> None:
        try:
            report[key] = dump(await run())
        except Exception as error:  # reported, the Rust test decides
            report[key] = {"error": f"{type(error).__name__}: {error}"}

    async with Client(streamable_http_client(url), elicitation_callback=answer) as client:
        report["protocolVersion"] = client.protocol_version
        await attempt("resources", client.list_resources)
        await attempt("templates", client.list_resource_templates)
        await attempt("read", lambda: client.read_resource(plan["read"]))
        await attempt("prompts", client.list_prompts)
        prompt = plan["prompt"]
        await attempt("prompt", lambda: client.get_prompt(prompt["name"], prompt.get("arguments")))
        completions = plan["complete"] if isinstance(plan["complete"], list) else [plan["complete"]]
        for index, complete in enumerate(completions):
            reference = complete["ref"]
            ref: Any = (
                types.ResourceTemplateReference(type="ref/resource", uri=reference["uri"])
                if reference["type"] == "ref/resource"
                else types.PromptReference(type="ref/prompt", name=reference["name"])
            )
            context = (complete.get("context") or {}).get("arguments")
            key = "completion" if index == 0 else f"completion{index + 1}"
            await attempt(key, lambda: client.complete(ref, complete["argument"], context))
        for call in plan["calls"]:
            entry: dict[str, Any] = {"name": call["name"]}
            try:
                entry["result"] = dump(await client.call_tool(call["name"], call.get("arguments", {})))
            except Exception as error:
                entry["error"] = f"{type(error).__name__}: {error}"
            report["calls"].append(entry)
    return report


def main() -> int:
    url, plan = sys.argv[1], json.loads(sys.argv[2])
    report = asyncio.run(drive(url, plan))
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
