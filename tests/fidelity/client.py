"""A raw HTTP client for the differential check: exact methods, headers and bodies, the
answer kept whole (status, content type, body; a watch's events up to a deadline)."""

from __future__ import annotations

import http.client
import json
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


# client-go's REST client: retries of a request answered with Retry-After (maxRetries).
RETRIES = 10


@dataclass(frozen=True)
class Answer:
    """What a server said: the code, the media type (parameters dropped) and the body."""

    code: int
    media: str
    body: Any


@dataclass(frozen=True)
class Raw:
    """An answer's code, media type and undecoded bytes."""

    code: int
    media: str
    data: bytes


def _headers(given: dict[str, str] | None) -> dict[str, str]:
    """Accept JSON unless told; a header given as "" is left out (a client that sent none)."""
    head = {"Accept": "application/json", **(given or {})}
    return {k: v for k, v in head.items() if v}


@dataclass
class Client:
    """Requests to one server as one identity (a bearer token or a client certificate)."""

    url: str
    context: ssl.SSLContext | None
    token: str | None = None

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        parts = urlsplit(self.url)
        if parts.scheme == "https":
            return http.client.HTTPSConnection(parts.netloc, timeout=timeout, context=self.context)
        return http.client.HTTPConnection(parts.netloc, timeout=timeout)

    def send(self, method: str, path: str, body: Any = None,
             headers: dict[str, str] | None = None) -> Answer:
        """One request; a JSON body is decoded, protobuf kept as bytes, anything else text."""
        data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
        head = dict(headers or {})
        if data is not None and "Content-Type" not in head:
            head["Content-Type"] = "application/json"
        got = self.raw(method, path, data, head)
        if "protobuf" in got.media:
            return Answer(got.code, got.media, got.data)
        return Answer(got.code, got.media, _decode(got.data, got.media))

    def _open(self, method: str, path: str, data: str | bytes | None,
              headers: dict[str, str] | None, timeout: float
              ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Send one request and read its status, as client-go's REST client does: a 429
        with a Retry-After header (kube-apiserver's answer to a watch while the resource's
        watch cache is still starting, as it is just after a CRD is established) is sent
        again after the seconds it asks, up to :data:`RETRIES` times. The caller closes the
        connection."""
        head = _headers(headers)
        if self.token:
            head["Authorization"] = f"Bearer {self.token}"
        attempt = 0
        while True:
            conn = self._connection(timeout)
            conn.request(method, path, body=data, headers=head)
            resp = conn.getresponse()
            wait = resp.getheader("Retry-After") or ""
            if resp.status != 429 or not wait.isdigit() or attempt == RETRIES:
                return conn, resp
            resp.read()
            conn.close()
            attempt += 1
            time.sleep(min(int(wait), 10))  # the server's own Retry-After

    def raw(self, method: str, path: str, data: str | bytes | None,
            headers: dict[str, str] | None = None) -> Raw:
        """One request exactly as given (headers valued "" are left out)."""
        conn, resp = self._open(method, path, data, headers, 20)
        try:
            raw = resp.read()
        finally:
            conn.close()
        return Raw(resp.status, (resp.getheader("Content-Type") or "").split(";")[0].strip(), raw)

    def watch(self, path: str, seconds: int, stop_after: int = 0,
              headers: dict[str, str] | None = None) -> Answer:
        """A watch the server ends after ``seconds`` (``timeoutSeconds``), or read until
        ``stop_after`` events came."""
        conn, resp = self._open("GET", f"{path}&timeoutSeconds={seconds}", None, headers,
                                seconds + 10)
        media = (resp.getheader("Content-Type") or "").split(";")[0].strip()
        try:
            if resp.status != 200:
                return Answer(resp.status, media, _decode(resp.read(), media))
            events: list[Any] = []
            while not (stop_after and len(events) >= stop_after):
                line = resp.readline()
                if not line:
                    break
                if line.strip():
                    events.append(json.loads(line) if line.lstrip()[:1] == b"{" else line)
            return Answer(resp.status, media, events)
        finally:
            conn.close()


def _decode(raw: bytes, media: str) -> Any:
    if media == "application/json" or raw[:1] in (b"{", b"["):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    return raw.decode(errors="replace")
