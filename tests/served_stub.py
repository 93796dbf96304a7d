"""A small OpenAI-compatible streaming server for the served SUT's tests, on 127.0.0.1, whose
misbehaviour is chosen on its command line (a test starts it, then stops it by its PID).

    python -m tests.served_stub PORT MODE [TOKENS]

MODE: ok (a streamed answer of TOKENS tokens in chunks of up to 3, the usage last; a chat answer
opens with a role-only chunk), http500, http400, malformed (an event that is not JSON),
endless (events that never end), hang (headers, then nothing), die-after-3 (the process exits
at its fourth request), no-usage (no token count: the client counts with a tokenizer, or
fails). It is a test's fake of a server, never the only test of the client: the real one is
`transformers serve` (tests/integration/test_served.py).
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODE = "ok"
TOKENS = 8
SEEN = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"stub: {format % args}\n")

    def _json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {"status": "ok"})
        elif self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
        else:
            self._json(404, {"error": "no such path"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        SEEN[0] += 1
        if MODE == "die-after-3" and SEEN[0] > 3:
            os._exit(3)
        if MODE in ("http500", "http400"):
            self._json(int(MODE[4:]), {"error": {"message": f"stub says {MODE}"}})
            return
        chat = self.path.endswith("/chat/completions")
        if not body.get("stream"):
            text = "x" * TOKENS
            choice = {"message": {"content": text}} if chat else {"text": text}
            self._json(200, {"choices": [choice], "usage": {"completion_tokens": TOKENS}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if MODE == "hang":
            time.sleep(3600)
            return
        if chat:
            self._event({"choices": [{"delta": {"role": "assistant"}, "index": 0}]})
        if MODE == "malformed":
            self._chunk(b"data: {not json\n\n")
        elif MODE == "endless":
            while True:
                self._event(self._piece(chat, "z"))
        else:
            left = TOKENS
            while left > 0:
                n = min(3, left)  # a chunk of up to 3 tokens: chunks are not tokens
                self._event(self._piece(chat, "t" * n))
                left -= n
            if MODE != "no-usage":
                self._event({"choices": [], "usage": {"completion_tokens": TOKENS}})
            self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _piece(self, chat: bool, text: str) -> dict[str, Any]:
        choice = {"delta": {"content": text}, "index": 0} if chat else {"text": text, "index": 0}
        return {"choices": [choice]}

    def _event(self, event: dict[str, Any]) -> None:
        self._chunk(b"data: " + json.dumps(event).encode() + b"\n\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def main(argv: list[str]) -> None:
    global MODE, TOKENS
    port, MODE = int(argv[0]), argv[1]
    TOKENS = int(argv[2]) if len(argv) > 2 else TOKENS
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
