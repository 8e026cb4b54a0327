"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1 for judge tests.

Each POST to /v1/chat/completions pops the next scripted reply: a string (200 with that
assistant content), or a dict with "status", "content", "tool_calls" (OpenAI format) and
"delay" (seconds). Requests are
recorded (parsed JSON bodies) so tests can assert what the client sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StubServer:
    def __init__(self) -> None:
        self.script: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        self.default: Any = None
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with stub._lock:
                    stub.requests.append(body)
                    reply = stub.script.pop(0) if stub.script else stub.default
                if reply is None:
                    reply = {"status": 500, "content": "no scripted reply left"}
                if isinstance(reply, str):
                    reply = {"content": reply}
                time.sleep(reply.get("delay", 0))
                status = reply.get("status", 200)
                if status != 200:
                    payload = {"error": {"message": reply.get("content", "error"), "type": "server_error"}}
                else:
                    message = {"role": "assistant", "content": reply.get("content")}
                    if reply.get("tool_calls"):
                        message["tool_calls"] = reply["tool_calls"]
                    payload = {
                        "id": "chatcmpl-stub",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "stub"),
                        "choices": [{"index": 0, "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop", "message": message}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                    }
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
