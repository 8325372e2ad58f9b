"""A big Provider's type streams start a few at a time.

When a Provider turns Healthy the watcher starts one stream per CRD of it (Provider
deletion protection). Each begins with a review, a discovery read and a list; a 2,000-CRD
Provider's 2,000 streams once sent all of them together, and on kube-apiserver, not yet
serving every new type, the lists failed (404) and were retried, thousands of times, while
the API server's other clients timed out. The streams now share a gate held until their
watch is sent: at most ``TYPES_PREPARING`` lists are in flight at once.

A small HTTP server stands in for kube-apiserver: it holds each list a moment, so that
lists sent together overlap, and counts how many are in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from lockwright.k8s import Kube
from lockwright.settings import Settings
from lockwright.worker.protection import type_resource
from lockwright.worker.watcher import TYPES_PREPARING, Watcher
from tests.helpers import wait_for
from tests.integration.fake_http import JsonHandler, serving

GROUP = "g.example.org"
TYPES = 3 * TYPES_PREPARING


class FakeApi(JsonHandler):
    """Discovery, reviews (allowed), lists held a moment and counted, watches held open."""

    guard = threading.Lock()
    lists_in_flight = 0
    most = 0
    watches = 0
    done = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        """Discovery, a list (held 0.2 s, or until too many are in flight), or a watch."""
        cls = type(self)
        if self.path == f"/apis/{GROUP}":
            return self.send_json({"kind": "APIGroup", "name": GROUP, "preferredVersion": {
                "groupVersion": f"{GROUP}/v1", "version": "v1"}})
        if self.path == f"/apis/{GROUP}/v1":
            return self.send_json({"kind": "APIResourceList", "groupVersion": f"{GROUP}/v1",
                                   "resources": [{"name": f"thing{i}s", "kind": f"Thing{i}"}
                                                 for i in range(TYPES)]})
        if "watch=true" in self.path:
            with cls.guard:
                cls.watches += 1
            cls.done.wait(30)  # open until the test ends
            return self.send_json({"type": "BOOKMARK", "object": {
                "kind": "Thing", "metadata": {"resourceVersion": "5"}}})
        with cls.guard:
            cls.lists_in_flight += 1
            cls.most = max(cls.most, cls.lists_in_flight)
        cls.done.wait(0.2)  # so that lists sent together are in flight together
        with cls.guard:
            cls.lists_in_flight -= 1
        self.send_json({"kind": "ThingList", "apiVersion": f"{GROUP}/v1",
                        "metadata": {"resourceVersion": "5"}, "items": []})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        """A SelfSubjectAccessReview: allowed."""
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_json({"kind": "SelfSubjectAccessReview",
                        "apiVersion": "authorization.k8s.io/v1", "status": {"allowed": True}})


@pytest.fixture
def fake_api() -> Iterator[str]:
    FakeApi.lists_in_flight = FakeApi.most = FakeApi.watches = 0
    FakeApi.done = threading.Event()
    with serving(FakeApi) as url:
        try:
            yield url
        finally:
            FakeApi.done.set()


def test_a_big_providers_type_streams_list_a_few_at_a_time(fake_api: str) -> None:
    from kubernetes import client

    def kube() -> Kube:
        return Kube(client.ApiClient(client.Configuration(host=fake_api)))

    watcher = Watcher(Settings(), client=None, kube_factory=kube, resources=())
    stop = threading.Event()
    try:
        for i in range(TYPES):  # as a Provider of TYPES CRDs turns Healthy
            watcher._start(type_resource(f"thing{i}s.{GROUP}"), stop)
        wait_for(lambda: FakeApi.watches == TYPES, timeout=60,
                 what=f"all {TYPES} type streams watching")
    finally:
        stop.set()
    assert 1 < FakeApi.most <= TYPES_PREPARING, FakeApi.most
