"""An MCP server over Streamable HTTP, on the standard library only, that is slow to open
a session's stream and asks its questions there.

It speaks the legacy `initialize` handshake with a session (`Mcp-Session-Id`), and answers
`server/discover` with "method not found", as pre-2026 servers do. Its `GET` stream sends
its response headers only after a delay (the first argument after the port, in seconds).
Its one tool, `ask`, asks the caller a question (`elicitation/create`) on that stream, not
on the call's own response, as the conformance suite's scenario servers do; when the stream
is not open yet the question is dropped (as the TypeScript SDK's server drops it) and the
call answers with an error saying so, rather than waiting for an answer that cannot come.
A client that calls as soon as it is connected gets its answer only if it waited for the
stream.

Run: `python3 late_stream_server.py <port> <stream delay in seconds>`; it listens on
127.0.0.1 only.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SESSION = "late-stream-session"
TOOLS = [
    {
        "name": "ask",
        "description": "Asks the caller for a name on the session's stream",
        "inputSchema": {"type": "object"},
    }
]
QUESTION = {
    "message": "Who is asking?",
    "requestedSchema": {
        "type": "object",
        "properties": {"name": {"type": "string", "default": "Ada"}},
    },
}
ANSWER_PATIENCE = 10.0


class Session:
    """The session's stream and the answers to the questions asked on it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stream = None
        self.answers: dict[str, dict] = {}
        self.answered = threading.Condition(self.lock)
        self.asked = 0

    def ask(self) -> dict | None:
        """Sends a question on the stream and waits (bounded) for its answer; None when
        the stream is not open (the question is dropped)."""
        with self.lock:
            if self.stream is None:
                return None
            self.asked += 1
            question_id = f"question-{self.asked}"
            message = {
                "jsonrpc": "2.0",
                "id": question_id,
                "method": "elicitation/create",
                "params": QUESTION,
            }
            self.stream.write(f"event: message\ndata: {json.dumps(message)}\n\n".encode())
            self.stream.flush()
            deadline = time.monotonic() + ANSWER_PATIENCE
            while question_id not in self.answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    return {"error": "no answer in time"}
                self.answered.wait(left)
            return self.answers.pop(question_id)

    def answer(self, message: dict) -> None:
        with self.lock:
            self.answers[str(message.get("id"))] = message
            self.answered.notify_all()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    session: Session
    delay: float

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base's name)
        sys.stderr.write("%s\n" % (format % args))

    def send_json(self, status: int, body: dict | None, session: bool = False) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        if session:
            self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 (the base's name)
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length) or b"{}")
        method = message.get("method")
        request_id = message.get("id")
        if method is None:
            # The client's answer to a question.
            self.session.answer(message)
            self.send_json(202, None)
            return
        if request_id is None:
            self.send_json(202, None)
            return
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "late-stream", "version": "1.0.0"},
            }
            reply = {"jsonrpc": "2.0", "id": request_id, "result": result}
            self.send_json(200, reply, session=True)
            return
        if self.headers.get("Mcp-Session-Id") != SESSION:
            self.send_json(400, {"jsonrpc": "2.0", "id": request_id,
                                 "error": {"code": -32000, "message": "no session"}})
            return
        if method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            answer = self.session.ask()
            if answer is None:
                text = "the session's stream was not open: the question was dropped"
                result = {"content": [{"type": "text", "text": text}], "isError": True}
            elif "result" in answer:
                content = answer["result"].get("content")
                result = {
                    "content": [{"type": "text", "text": json.dumps(content)}],
                    "structuredContent": {"action": answer["result"].get("action"),
                                          "content": content},
                }
            else:
                text = json.dumps(answer.get("error"))
                result = {"content": [{"type": "text", "text": text}], "isError": True}
        elif method == "ping":
            result = {}
        else:
            reply = {"jsonrpc": "2.0", "id": request_id,
                     "error": {"code": -32601, "message": f"Method not found: {method}"}}
            self.send_json(200, reply)
            return
        self.send_json(200, {"jsonrpc": "2.0", "id": request_id, "result": result})

    def do_GET(self) -> None:  # noqa: N802 (the base's name)
        if self.headers.get("Mcp-Session-Id") != SESSION:
            self.send_json(400, {"error": "no session"})
            return
        time.sleep(self.delay)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        with self.session.lock:
            self.session.stream = self.wfile
        # Keep the stream open, with a comment now and then, until the client leaves.
        try:
            while True:
                time.sleep(1.0)
                with self.session.lock:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
        except OSError:
            with self.session.lock:
                if self.session.stream is self.wfile:
                    self.session.stream = None

    def do_DELETE(self) -> None:  # noqa: N802 (the base's name)
        self.send_json(200, None)


def main() -> None:
    port = int(sys.argv[1])
    Handler.session = Session()
    Handler.delay = float(sys.argv[2])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
