"""On the wire: the watcher asks for Secrets as metadata only, and keeps only metadata.

A small HTTP server stands in for kube-apiserver and records each request's path and
Accept header. Like devcluster today (its list and watch ignore ``as=PartialObjectMetadata``)
it answers with whole Secrets, data included, so these tests also show that the stream
itself drops everything but a few metadata fields.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lockwright.k8s import Kube
from lockwright.k8s.watch import METADATA_LIST, METADATA_WATCH
from tests.helpers import wait_for
from tests.integration.fake_http import JsonHandler, serving
from lockwright.worker.targets import RESOURCES, in_namespace
from lockwright.worker.watcher import Changed, Message, Stream, Synced

SECRET = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
          "data": {"token": "aHVudGVyMg=="},
          "metadata": {"name": "pull", "namespace": "lw-system", "resourceVersion": "5",
                       "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                                       '{"data":{"token":"aHVudGVyMg=="}}'}}}
GONE = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
        "reason": "Expired", "message": "too old resource version"}


class FakeApi(JsonHandler):
    """Answers list and watch of Secrets with whole objects; the first watch gets 410."""

    requests: list[tuple[str, str]] = []
    watches = 0

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        """Record the request, then list, refuse (410) or stream one event and close."""
        type(self).requests.append((self.path, self.headers.get("Accept", "")))
        if "watch=true" not in self.path:
            return self.send_json({"kind": "SecretList", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": "5"}, "items": [SECRET]})
        type(self).watches += 1
        if type(self).watches == 1:
            return self.send_json(GONE, 410)
        self.send_json({"type": "ADDED", "object": SECRET})


@pytest.fixture
def fake_api() -> Iterator[str]:
    FakeApi.requests, FakeApi.watches = [], 0
    with serving(FakeApi) as url:
        yield url


def run_stream(host: str, until: Any) -> list[Message]:
    """Run the Secret stream of namespace ``lw-system`` against ``host`` until ``until``."""
    from kubernetes import client

    [res] = [r for r in in_namespace(RESOURCES, "lw-system") if r.kind == "Secret"]
    msgs: list[Message] = []
    stop = threading.Event()
    stream = Stream(res, Kube(client.ApiClient(client.Configuration(host=host))), msgs.append,
                    stop, resync_s=0)
    thread = threading.Thread(target=stream.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: until(msgs), timeout=10, what="stream messages")
    finally:
        stop.set()
        stream.interrupt()
        thread.join(10)
    return msgs


def test_secrets_are_asked_for_as_metadata_in_the_system_namespace(fake_api: str) -> None:
    run_stream(fake_api, lambda msgs: any(isinstance(m, Changed) for m in msgs))
    lists = [r for r in FakeApi.requests if "watch=true" not in r[0]]
    watches = [r for r in FakeApi.requests if "watch=true" in r[0]]
    assert lists and all(accept == METADATA_LIST for _, accept in lists)
    assert watches and all(accept == METADATA_WATCH for _, accept in watches)
    assert all(path.startswith("/api/v1/namespaces/lw-system/secrets?")
               for path, _ in FakeApi.requests)
    assert "resourceVersion=5" in watches[-1][0] and "allowWatchBookmarks=true" in watches[-1][0]


def test_whole_objects_sent_anyway_are_cut_to_metadata(fake_api: str) -> None:
    msgs = run_stream(fake_api, lambda msgs: any(isinstance(m, Changed) for m in msgs))
    objects = [o for m in msgs for o in (m.items if isinstance(m, Synced) else [m.obj])]
    assert objects and all(o == {"metadata": {"name": "pull", "namespace": "lw-system",
                                              "resourceVersion": "5"}} for o in objects)
    assert "aHVudGVyMg==" not in repr(msgs)


def test_http_410_on_watch_relists_without_signal_all(fake_api: str) -> None:
    msgs = run_stream(fake_api, lambda msgs: len([m for m in msgs if isinstance(m, Synced)]) >= 2)
    synced = [m for m in msgs if isinstance(m, Synced)]
    assert [(m.why, m.signal_all) for m in synced[:2]] == [("start", True),
                                                           ("relist after 410", False)]
