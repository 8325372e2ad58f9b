"""A JSON-speaking HTTP server on loopback, for a stand-in of kube-apiserver that a test
scripts (refusals, early-ended watches: what no real server does at a chosen moment)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """A handler whose answers are JSON documents, one per connection, and quiet."""

    def send_json(self, body: dict[str, Any] | list[Any], status: int = 200,
                  headers: dict[str, str] | None = None) -> None:
        """Answer ``body`` with ``status`` (and ``headers``) and close the connection."""
        data = (json.dumps(body) + "\n").encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@contextlib.contextmanager
def serving(handler: type[JsonHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
