"""A refusal from an API server that is not ready is retried, not taken as RBAC's answer.

A kube-apiserver restarted after a crash serves before its authorizer has synced and answers
403 to requests RBAC allows, /readyz included (docs/testing.md, "Faults: every server killed mid-change"): the fault tests saw it
within a second of the restart, but no real server does it on demand, so a loopback
stand-in answers 403 to everything, and /readyz as each test says.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from kubernetes import client

from lockwright.errors import KubeForbidden, KubernetesUnavailable
from lockwright.k8s.client import Kube

PATH = "/api/v1/namespaces/default/configmaps/settings"
FORBIDDEN = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
             "code": 403, "message": 'configmaps "settings" is forbidden: User "lockwright" '
                                     'cannot get resource "configmaps"'}


class Refusing(http.server.ThreadingHTTPServer):
    """Answers 403 to every request, and /readyz with ``ready_status``."""

    ready_status = 200
    seen: Counter[str]


class Handler(http.server.BaseHTTPRequestHandler):
    server: Refusing

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.seen[self.path.split("?")[0]] += 1
        ready = self.path.startswith("/readyz")
        status = self.server.ready_status if ready else 403
        body = b"ok" if ready and status == 200 else json.dumps(FORBIDDEN).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if ready else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Refusing]:
    srv = Refusing(("127.0.0.1", 0), Handler)
    srv.seen = Counter()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _kube(srv: Refusing) -> Kube:
    host, port = srv.server_address[:2]
    return Kube(client.ApiClient(client.Configuration(host=f"http://{host!s}:{port}")),
                timeout=10)


def test_a_refusal_while_not_ready_is_unavailable_and_retried(server: Refusing) -> None:
    server.ready_status = 500
    with pytest.raises(KubernetesUnavailable, match="not ready"):
        _kube(server).read_path(PATH)
    assert server.seen[PATH] == 1 and server.seen["/readyz"] == 1


@pytest.mark.parametrize("readyz", [401, 403])
def test_a_refusal_while_readyz_is_refused_too_is_unavailable(server: Refusing,
                                                               readyz: int) -> None:
    # A restarted kube-apiserver whose RBAC cache has no roles yet refuses /readyz too
    # (which every user may read): the audit log of the kube-apiserver fault showed 403s
    # for /readyz itself, with "clusterrole system:public-info-viewer not found".
    server.ready_status = readyz
    with pytest.raises(KubernetesUnavailable, match="not ready"):
        _kube(server).read_path(PATH)
    assert server.seen[PATH] == 1 and server.seen["/readyz"] == 1


def test_a_refusal_when_ready_is_asked_once_more_then_is_rbacs_answer(
        server: Refusing) -> None:
    with pytest.raises(KubeForbidden, match="forbidden"):
        _kube(server).read_path(PATH)
    assert server.seen[PATH] == 2 and server.seen["/readyz"] == 1
