"""The FastAPI app the opkit OpenAPI import tests run against (FastAPI documents it itself).

Started by adapters/tests/openapi_import/fastapi.rs as
`python3 -m uvicorn app:app --host 127.0.0.1 --port <p>` (loopback only).
It covers: JSON and text responses, path/query/header/cookie parameters, array and
object query parameters, JSON / form-urlencoded / multipart bodies, a binary response, an
error status, and Server-Sent Events (FastAPI's EventSourceResponse, documented with the
OpenAPI 3.2 `itemSchema`), plus a counter of open event streams so a test can see that
dropping a subscription closes the HTTP connection, and a stream that drops its connection
mid-way and resumes after the `Last-Event-ID` it is sent back.
"""

import asyncio
import json
from collections.abc import AsyncIterable
from typing import Annotated, Any

from fastapi import Cookie, FastAPI, File, Form, Header, HTTPException, Query, Request, Response
from fastapi.responses import PlainTextResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import BaseModel

app = FastAPI(title="opkit test API", version="1.0.0")

OPEN_STREAMS = {"count": 0, "opened": 0}
RESUMES: list[str | None] = []


class Item(BaseModel):
    name: str
    price: float
    tags: list[str] = []
    note: str | None = None


class Created(BaseModel):
    id: int
    item: Item


class Tick(BaseModel):
    n: int
    label: str


@app.get("/items/{item_id}", operation_id="get_item", summary="Reads one item")
def get_item(
    item_id: int,
    q: str | None = None,
    verbose: bool = False,
    x_token: Annotated[str | None, Header()] = None,
    session: Annotated[str | None, Cookie()] = None,
) -> dict[str, Any]:
    return {"item_id": item_id, "q": q, "verbose": verbose, "x_token": x_token, "session": session}


@app.get("/search", operation_id="search")
def search(
    tags: Annotated[list[str], Query()] = [],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> dict[str, Any]:
    """Echoes an array query parameter (form style, exploded: tags=a&tags=b)."""
    return {"tags": tags, "limit": limit}


@app.get("/files/{path_part}", operation_id="echo_path")
def echo_path(path_part: str) -> dict[str, str]:
    """Echoes a path parameter that needs percent-encoding."""
    return {"path_part": path_part}


@app.get("/hello/{name}", response_class=PlainTextResponse, operation_id="hello")
def hello(name: str) -> str:
    """Greets in plain text."""
    return f"Hello, {name}!"


@app.post("/items", status_code=201, operation_id="create_item")
def create_item(item: Item) -> Created:
    """Creates an item from a JSON body."""
    return Created(id=7, item=item)


@app.post("/login", operation_id="login")
def login(username: Annotated[str, Form()], remember: Annotated[bool, Form()] = False) -> dict[str, Any]:
    """Takes a form-urlencoded body."""
    return {"username": username, "remember": remember}


@app.post("/upload", operation_id="upload")
def upload(
    file: Annotated[bytes, File()], description: Annotated[str, Form()] = ""
) -> dict[str, Any]:
    """Takes a multipart body."""
    return {"size": len(file), "description": description, "text": file.decode("utf-8", "replace")}


@app.get(
    "/blob",
    operation_id="blob",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
def blob() -> Response:
    """Returns three raw bytes."""
    return Response(content=b"\x00\x01\xff", media_type="application/octet-stream")


@app.get("/teapot", operation_id="teapot")
def teapot() -> dict[str, str]:
    """Always fails with 418."""
    raise HTTPException(status_code=418, detail="I'm a teapot")


@app.get("/events", response_class=EventSourceResponse, operation_id="events")
async def events(count: int = 3) -> AsyncIterable[Tick]:
    """Streams `count` ticks, with one malformed (non-JSON) frame after the first."""
    OPEN_STREAMS["count"] += 1
    OPEN_STREAMS["opened"] += 1
    try:
        for n in range(count):
            yield Tick(n=n, label=f"tick {n}")
            if n == 0:
                yield ServerSentEvent(raw_data="this is not JSON", event="noise")
    finally:
        OPEN_STREAMS["count"] -= 1


@app.get("/forever", response_class=EventSourceResponse, operation_id="forever")
async def forever() -> AsyncIterable[Tick]:
    """Streams ticks until the client goes away."""
    OPEN_STREAMS["count"] += 1
    OPEN_STREAMS["opened"] += 1
    try:
        n = 0
        while True:
            yield Tick(n=n, label="forever")
            n += 1
            await asyncio.sleep(0.05)
    finally:
        OPEN_STREAMS["count"] -= 1


@app.get("/streams", operation_id="streams")
def streams() -> dict[str, int]:
    """How many event streams are open now, and how many were ever opened."""
    return dict(OPEN_STREAMS)


class DroppingEvents(Response):
    """Ticks `start`..4 as SSE (`event: tick`, `id`, `retry: 50`), written by hand; with
    `drop`, the connection is cut after tick 2 in the middle of the chunked body, the way a
    crashing server cuts it (uvicorn closes the connection when the app fails mid-response)."""

    media_type = "text/event-stream"

    def __init__(self, start: int = 0, drop: bool = False) -> None:
        super().__init__(media_type=self.media_type)
        self.start, self.drop = start, drop

    async def __call__(self, scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})
        for n in range(self.start, 5):
            data = json.dumps({"n": n, "label": "resumable"})
            frame = f"event: tick\nid: {n}\nretry: 50\ndata: {data}\n\n".encode()
            await send({"type": "http.response.body", "body": frame, "more_body": True})
            if self.drop and n == 2:
                await asyncio.sleep(0.05)
                raise RuntimeError("the connection drops here")
        await send({"type": "http.response.body", "body": b"", "more_body": False})


@app.get(
    "/resumable",
    response_class=DroppingEvents,
    response_model=None,
    status_code=200,
    operation_id="resumable",
)
async def resumable(request: Request) -> Response:
    """Streams ticks 0..4; a first connection (no `Last-Event-ID`) is dropped after tick 2, a
    reconnection resumes after the id it names. Every `Last-Event-ID` received is recorded
    (see `/resumes`)."""
    last = request.headers.get("last-event-id")
    RESUMES.append(last)
    return DroppingEvents(int(last) + 1 if last else 0, drop=last is None)


@app.get("/resumes", operation_id="resumes")
def resumes() -> list[str | None]:
    """The `Last-Event-ID` of every request to `/resumable`, in order (`null` for none)."""
    return RESUMES
