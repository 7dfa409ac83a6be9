"""A curl-level client of axum's `todos` example API, written for the original: it drives
`GET /todos`, `POST /todos`, `PATCH /todos/{id}` and `DELETE /todos/{id}` and checks the
statuses and bodies the original answers. It knows nothing of opkit.

Usage: python3 todos_client.py http://127.0.0.1:PORT   (exit 0 and "ok" when every check passes)
"""

import json
import socket
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import urlparse

BASE = sys.argv[1].rstrip("/")


def call(method, path, body=None, raw=None, content_type="application/json"):
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else None), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), error.headers


def check(condition, what):
    if not condition:
        print("FAILED:", what)
        sys.exit(1)


# Empty at first.
status, todos, _ = call("GET", "/todos")
check(status == 200 and todos == [], f"an empty list: {status} {todos}")

# Create: 201 and the todo.
status, first, _ = call("POST", "/todos", {"text": "buy milk"})
check(status == 201, f"create answers 201: {status} {first}")
check(set(first) == {"id", "text", "completed"}, f"a todo has id, text, completed: {first}")
check(first["text"] == "buy milk" and first["completed"] is False, f"the created todo: {first}")
status, second, _ = call("POST", "/todos", {"text": "walk the dog"})
check(status == 201, f"a second create: {status}")

# List, with pagination.
status, todos, _ = call("GET", "/todos")
check(status == 200 and len(todos) == 2, f"two todos: {todos}")
check({todo["id"] for todo in todos} == {first["id"], second["id"]}, f"the two created: {todos}")
status, page, _ = call("GET", "/todos?offset=1&limit=5")
check(status == 200 and len(page) == 1, f"offset 1 leaves one: {page}")
status, page, _ = call("GET", "/todos?limit=1")
check(status == 200 and len(page) == 1, f"limit 1 gives one: {page}")

# Update: 200 and the changed todo; the fields not sent stay.
status, updated, _ = call("PATCH", f"/todos/{first['id']}", {"completed": True})
check(status == 200, f"update answers 200: {status} {updated}")
check(updated == {"id": first["id"], "text": "buy milk", "completed": True}, f"updated: {updated}")
status, renamed, _ = call("PATCH", f"/todos/{first['id']}", {"text": "buy oat milk"})
check(status == 200 and renamed["text"] == "buy oat milk" and renamed["completed"] is True, f"renamed: {renamed}")

# Unknown ids: 404.
status, _, _ = call("PATCH", "/todos/5f1a3c0e-0000-4000-8000-000000000000", {"completed": True})
check(status == 404, f"updating an unknown todo is 404: {status}")
status, _, _ = call("DELETE", "/todos/5f1a3c0e-0000-4000-8000-000000000000")
check(status == 404, f"deleting an unknown todo is 404: {status}")

# Bad bodies: malformed JSON is 400, a body without `text` is 422.
status, _, _ = call("POST", "/todos", raw=b"{not json")
check(status == 400, f"malformed JSON is 400: {status}")
status, _, _ = call("POST", "/todos", {"title": "no text"})
check(status == 422, f"a body without text is 422: {status}")
status, _, _ = call("PATCH", f"/todos/{first['id']}", {"completed": "yes"})
check(status == 422, f"a completed that is not a bool is 422: {status}")

# Bad query values are 400 (the original's `Query` extractor), bodies' 422 notwithstanding.
status, _, _ = call("GET", "/todos?offset=abc")
check(status == 400, f"an offset that is not a number is 400: {status}")
status, _, _ = call("GET", "/todos?limit=-1")
check(status == 400, f"a negative limit is 400: {status}")

# Delete: 204, then it is gone.
status, body, _ = call("DELETE", f"/todos/{first['id']}")
check(status == 204 and body is None, f"delete answers 204 with no body: {status} {body}")
status, todos, _ = call("GET", "/todos")
check([todo["id"] for todo in todos] == [second["id"]], f"one left: {todos}")

# A client too slow to send its body gets 408.
url = urlparse(BASE)
with socket.create_connection((url.hostname, url.port), timeout=30) as slow:
    slow.sendall(
        b"POST /todos HTTP/1.1\r\nHost: " + url.netloc.encode()
        + b"\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{\"text\""
    )
    started = time.monotonic()
    answer = slow.recv(4096).decode(errors="replace")
    check(answer.startswith("HTTP/1.1 408"), f"a stalled body is 408: {answer[:80]!r}")
    check(time.monotonic() - started < 25, "the 408 comes within the request timeout")

print("ok")
