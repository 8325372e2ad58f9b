"""Provider types' streams ask discovery, shared and read at most once a second a group,
whether their type is served before they send anything of their own (docs/design.md,
"Provider deletion protection"): a 2,000-CRD Provider's streams, retrying while
kube-apiserver took minutes to serve its new types, sent 28,988 requests in one run."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest
from structlog.testing import capture_logs

from lockwright.worker.common import Backoff
from lockwright.worker.protection import MANAGED, ServedTypes, served_version, type_resource
from lockwright.worker.targets import RESOURCES
from lockwright.worker.watcher import Stream
from tests.helpers import wait_for

GROUP = "w.example.org"


class Discovery:
    """A connection answering discovery from ``served`` (version: plurals, the first the
    preferred one), each read recorded in ``reads``; any other request fails the test."""

    def __init__(self, served: dict[str, list[str]]) -> None:
        self.served, self.reads = served, list[str]()

    def read_path(self, path: str) -> dict[str, Any] | None:
        self.reads.append(path)
        if path == f"/apis/{GROUP}":
            return {"preferredVersion": {"version": next(iter(self.served))},
                    "versions": [{"version": v} for v in self.served]} if self.served else None
        version = path.removeprefix(f"/apis/{GROUP}/")
        plurals = self.served.get(version)
        return None if plurals is None else {"resources": [{"name": p} for p in plurals]}

    def can_i(self, verb: str, group: str, resource: str) -> bool:
        raise AssertionError(f"asked to {verb} {resource}.{group} though not served")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def served_types(kube: Discovery, clock: Clock | None = None, fresh_s: float = 1.0
                 ) -> ServedTypes:
    connect: Any = lambda: kube  # a stand-in for a Kube
    return ServedTypes(connect, fresh_s=fresh_s, clock=clock or Clock())


@pytest.mark.parametrize(("served", "plural", "version"), [
    ({"v1": ["widgets", "widgets/status"]}, "widgets", "v1"),
    ({"v1": ["gadgets"], "v1beta1": ["widgets", "gadgets"]}, "widgets", "v1beta1"),
    ({"v1": ["gadgets"], "v1beta1": ["gadgets"]}, "gadgets", "v1"),  # the preferred first
    ({"v1": ["gadgets"]}, "widgets", ""),  # its group served, the type not yet
    ({}, "widgets", ""),  # no type of the group served yet
])
def test_the_version_a_type_is_served_at(served: dict[str, list[str]], plural: str,
                                         version: str) -> None:
    assert served_types(Discovery(served), Clock()).version(GROUP, plural) == version


def test_one_read_a_second_answers_every_type_of_a_group() -> None:
    kube, clock = Discovery({"v1": [f"kind{i}s" for i in range(2_000)]}), Clock()
    served = served_types(kube, clock)
    found = [served.version(GROUP, f"kind{i}s") for i in range(4_000)]
    assert found == ["v1"] * 2_000 + [""] * 2_000
    assert kube.reads == [f"/apis/{GROUP}", f"/apis/{GROUP}/v1"]
    kube.served["v1"].append("kind2000s")  # Established meanwhile
    clock.now += 0.99
    assert served.version(GROUP, "kind2000s") == ""  # a read under a second old answers
    clock.now += 0.01
    assert served.version(GROUP, "kind2000s") == "v1"
    assert len(kube.reads) == 4


def test_a_type_not_served_fails_its_try_sending_nothing_of_its_own() -> None:
    """Not in discovery: no access review, no list; the stream waits as for a 404."""
    kube = Discovery({"v1": ["gadgets"]})
    stream = Stream(type_resource(f"widgets.{GROUP}"), kube=kube,  # type: ignore[arg-type]
                    emit=lambda msg: None, stop=threading.Event(), resync_s=600,
                    served=served_types(kube, Clock()))
    with pytest.raises(LookupError, match=f"widgets.{GROUP} is not served yet") as caught:
        stream._round()
    assert stream._unserved(caught.value)
    assert kube.reads == [f"/apis/{GROUP}", f"/apis/{GROUP}/v1"]


def test_only_provider_types_are_looked_up() -> None:
    kube = Discovery({})
    resolved = replace(type_resource(f"widgets.{GROUP}"), version="v2")
    for res in (RESOURCES[0], resolved):
        assert served_version(served_types(kube, Clock()), res) is res
    assert resolved.role == MANAGED and kube.reads == []


class Delays(Backoff):
    """A backoff recording the delays it gives."""

    def __init__(self, initial: float, maximum: float) -> None:
        super().__init__(initial, maximum)
        self.given: list[float] = []

    def next(self) -> float:
        self.given.append(delay := super().next())
        return delay


def test_a_write_to_its_crd_starts_its_waits_over() -> None:
    """Woken by its CRD's write (Established, or any other), a type still not served waits
    the first delay again, not the next doubled one: its next try costs the API server
    nothing of its own, and its CRD just changed."""
    kube, stop, delays = Discovery({}), threading.Event(), Delays(30, 60)
    stream = Stream(type_resource(f"widgets.{GROUP}"), kube=kube,  # type: ignore[arg-type]
                    emit=lambda msg: None, stop=stop, resync_s=600, unserved=delays,
                    served=served_types(kube, fresh_s=0))
    thread = threading.Thread(target=stream.run, daemon=True)
    with capture_logs() as logs:
        thread.start()
        try:
            wait_for(lambda: delays.given == [30], timeout=10, what="the first try's wait")
            stream.wake()
            wait_for(lambda: len(delays.given) == 2, timeout=10, what="the woken try's wait")
        finally:
            stop.set()
            stream.interrupt()
            thread.join(10)
    assert delays.given == [30, 30] and len(kube.reads) == 2
    # Told once, as 2,000 such types would otherwise fill the log while the server works.
    assert [e["log_level"] for e in logs if e["event"] == "watch failed"] == ["info", "debug"]
