"""Failures no real registry produces on demand, served by a tiny in-process HTTP server:
a manifest that lies about its digest, a non-OCI manifest, 5xx and 429, a HEAD without a
digest, and the bearer token flow with scopes."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lockwright.errors import InvalidPackage, RegistryUnavailable, Unauthorized
from lockwright.oci.auth import DockerAuths
from lockwright.oci.cache import PackageCache
from lockwright.oci.client import RegistryClient
from lockwright.oci.fetch import fetch_package
from lockwright.oci.reference import parse

Reply = tuple[int, dict[str, str], bytes]


@dataclass
class FakeRegistry:
    """Routes ``(method, path)`` to canned replies and records what it was asked."""

    routes: dict[tuple[str, str], Reply] = field(default_factory=dict)
    seen: list[tuple[str, str, str]] = field(default_factory=list)
    host: str = ""

    def reply(self, method: str, path: str) -> Reply:
        bare = path.split("?")[0]
        return self.routes.get((method, bare)) or self.routes.get(("*", bare)) or (404, {}, b"")


def _handler(current: list[FakeRegistry]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            fake = current[0]
            fake.seen.append((self.command, self.path, self.headers.get("Authorization", "")))
            status, headers, body = fake.reply(self.command, self.path)
            self.send_response(status)
            for k, v in {"Content-Length": str(len(body)), **headers}.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = _serve

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def _server() -> Iterator[tuple[ThreadingHTTPServer, list[FakeRegistry]]]:
    current: list[FakeRegistry] = [FakeRegistry()]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(current))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield server, current
    server.shutdown()
    server.server_close()


@pytest.fixture
def fake(_server) -> FakeRegistry:
    server, current = _server
    current[0] = FakeRegistry(host=f"127.0.0.1:{server.server_address[1]}")
    return current[0]


def _client(fake: FakeRegistry, auths: DockerAuths | None = None) -> RegistryClient:
    return RegistryClient(insecure=[fake.host], auths=auths or DockerAuths())


def _digest(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def test_manifest_not_matching_its_digest(fake, tmp_path: Path):
    body = json.dumps({"schemaVersion": 2, "layers": [], "config": {}}).encode()
    wrong = "sha256:" + "1" * 64
    fake.routes[("GET", f"/v2/x/manifests/{wrong}")] = (200, {}, body)
    cache = PackageCache(tmp_path)
    with pytest.raises(InvalidPackage, match="does not match its digest"):
        fetch_package(f"{fake.host}/x@{wrong}", _client(fake), cache)
    assert [p for p in tmp_path.iterdir() if not p.name.startswith(".")] == []


@pytest.mark.parametrize(("body", "message"), [
    ({"schemaVersion": 1, "name": "x", "tag": "v1", "fsLayers": []}, "not an OCI or Docker"),
    ({"schemaVersion": 2, "mediaType": "application/vnd.cncf.helm.config.v1+json"},
     "unsupported manifest media type"),
    ({"schemaVersion": 2, "something": "else"}, "neither an OCI/Docker image manifest"),
    ([1, 2, 3], "not an OCI or Docker"),
])
def test_manifest_that_is_not_oci_or_docker(fake, tmp_path, body, message):
    raw = json.dumps(body).encode()
    fake.routes[("*", "/v2/x/manifests/v1")] = (200, {"Docker-Content-Digest": _digest(raw)}, raw)
    fake.routes[("GET", f"/v2/x/manifests/{_digest(raw)}")] = (200, {}, raw)
    with pytest.raises(InvalidPackage, match=message):
        fetch_package(f"{fake.host}/x:v1", _client(fake), PackageCache(tmp_path))


def test_head_without_digest_falls_back_to_get(fake):
    raw = json.dumps({"schemaVersion": 2, "manifests": []}).encode()
    fake.routes[("HEAD", "/v2/x/manifests/v1")] = (200, {}, b"")
    fake.routes[("GET", "/v2/x/manifests/v1")] = (200, {}, raw)
    assert _client(fake).resolve(parse(f"{fake.host}/x:v1")) == _digest(raw)
    assert [m for m, _, _ in fake.seen] == ["HEAD", "GET"]


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_server_errors_are_transient(fake, status):
    fake.routes[("*", "/v2/x/manifests/v1")] = (status, {}, b"")
    with pytest.raises(RegistryUnavailable, match=str(status)):
        _client(fake).resolve(parse(f"{fake.host}/x:v1"))


def test_forbidden_is_unauthorized(fake):
    fake.routes[("*", "/v2/x/manifests/v1")] = (403, {}, b'{"errors":[{"code":"DENIED"}]}')
    with pytest.raises(Unauthorized):
        _client(fake).get_manifest(parse(f"{fake.host}/x:v1"))


def _bearer_routes(fake: FakeRegistry, token: bytes) -> bytes:
    raw = json.dumps({"schemaVersion": 2, "manifests": []}).encode()
    challenge = (f'Bearer realm="http://{fake.host}/token",service="fake",'
                 'scope="repository:org/x:pull"')
    fake.routes[("*", "/v2/org/x/manifests/v1")] = (401, {"WWW-Authenticate": challenge}, b"")
    fake.routes[("GET", "/token")] = (200, {}, json.dumps({"token": token.decode()}).encode())
    return raw


def test_bearer_token_flow_with_credentials(fake):
    raw = _bearer_routes(fake, b"tok-123")
    auths = DockerAuths.from_json(json.dumps({"auths": {fake.host: {"auth": base64.b64encode(
        b"bob:s3cret").decode()}}}))
    client = _client(fake, auths)

    original = fake.reply

    def authorised(method: str, path: str):
        last = fake.seen[-1][2]
        if path.startswith("/v2/") and last == "Bearer tok-123":
            return (200, {"Docker-Content-Digest": _digest(raw)}, raw)
        return original(method, path)

    fake.reply = authorised  # type: ignore[method-assign]
    assert client.resolve(parse(f"{fake.host}/org/x:v1")) == _digest(raw)
    token_calls = [s for s in fake.seen if s[1].startswith("/token")]
    assert len(token_calls) == 1
    assert "scope=repository%3Aorg%2Fx%3Apull" in token_calls[0][1]
    assert "service=fake" in token_calls[0][1]
    assert token_calls[0][2] == "Basic " + base64.b64encode(b"bob:s3cret").decode()
    client.resolve(parse(f"{fake.host}/org/x:v1"))  # token reused, not fetched again
    assert len([s for s in fake.seen if s[1].startswith("/token")]) == 1


def test_bearer_token_refused_is_unauthorized(fake):
    _bearer_routes(fake, b"unused")
    fake.routes[("GET", "/token")] = (401, {}, b"")
    with pytest.raises(Unauthorized, match="refused anonymous access"):
        _client(fake).resolve(parse(f"{fake.host}/org/x:v1"))


def test_plain_http_token_realm_refused_for_tls_registry():
    from lockwright.oci.auth import Challenge, answer_challenge

    challenge = Challenge("bearer", {"realm": "http://auth.example.io/token"})
    with pytest.raises(Unauthorized, match="not HTTPS"):
        answer_challenge(None, challenge, "r.example.io", "s", None,  # type: ignore[arg-type]
                         secure=True, timeout=1)
