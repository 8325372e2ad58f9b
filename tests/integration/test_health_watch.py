"""``check_health``'s watch (lockwright.activities.health) against devcluster's Deployments.

devcluster's Deployment controller keeps a Deployment whose pod template is annotated
``devcluster.lockwright.dev/simulate: unavailable`` unavailable and makes it Available once
the annotation goes, so the change the watch must see can be made on demand.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from lockwright.activities import health
from lockwright.errors import KubernetesUnavailable
from lockwright.k8s import Kube, Obj
from tests.helpers import unique, wait_for

SIMULATE = "devcluster.lockwright.dev/simulate"


@pytest.fixture(scope="module")
def kube(devcluster: Any) -> Iterator[Kube]:
    """A connection to the session's devcluster."""
    yield Kube.connect(devcluster.kubeconfig)


def deployment(kube: Kube, namespace: str, name: str) -> Obj:
    """A Deployment kept unavailable until its ``simulate`` annotation goes."""
    labels = {"app": name}
    return kube.create({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels,
                                           "annotations": {SIMULATE: "unavailable"}},
                              "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}})


@pytest.fixture
def unavailable(kube: Kube) -> tuple[str, str]:
    """(namespace, name) of a fresh Deployment in a namespace of its own, unavailable."""
    namespace, name = unique("health"), unique("runtime")
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    deployment(kube, namespace, name)
    return namespace, name


class Listed(Kube):
    """The real connection; ``listed`` is set once the watch's opening list answered,
    ``asked`` holds its query and ``pages`` its answers."""

    def __init__(self, kube: Kube) -> None:
        self.__dict__.update(kube.__dict__)
        self.listed = threading.Event()
        self.asked: list[Any] = []
        self.pages: list[Obj] = []

    def list_pages(self, *args: Any, **kwargs: Any) -> Iterator[Obj]:
        self.asked.append(args[1] if len(args) > 1 else kwargs.get("query"))
        for page in super().list_pages(*args, **kwargs):
            self.pages.append(page)
            self.listed.set()
            yield page


def test_the_watch_sees_the_deployment_become_available(
        kube: Kube, unavailable: tuple[str, str]) -> None:
    """Unavailable when the wait begins, Available during it: healthy, from the watch."""
    namespace, name = unavailable
    listed = Listed(kube)
    with ThreadPoolExecutor(1) as pool:
        seen: Future[health.Seen] = pool.submit(health.watch_health, listed, namespace, name,
                                                "Provider", 60.0)
        assert listed.listed.wait(30)
        live = kube.get("apps/v1", "Deployment", name, namespace)
        assert not health.judged(live, "Provider")[0]  # not yet: the watch must see it
        kube.patch("apps/v1", "Deployment", name, {"spec": {"template": {"metadata": {
            "annotations": {SIMULATE: None}}}}}, namespace)
        result = seen.result(60)
    assert (result.healthy, result.watched) == (True, True)


def test_the_opening_list_includes_the_apply_it_is_asked_no_older_than(
        kube: Kube, unavailable: tuple[str, str]) -> None:
    """Given the Deployment's version as applied, the opening list asks for nothing older
    (served from the watch cache once it holds that write) and shows that write."""
    namespace, name = unavailable
    written = kube.patch("apps/v1", "Deployment", name, {"spec": {"template": {"metadata": {
        "annotations": {SIMULATE: None}}}}}, namespace)
    listed = Listed(kube)
    result = health.watch_health(listed, namespace, name, "Provider", 30.0,
                                 not_older_than=written["metadata"]["resourceVersion"])
    assert (result.healthy, result.watched) == (True, True)
    assert ("resourceVersionMatch", "NotOlderThan") in listed.asked[0]
    first = listed.pages[0]["items"][0]["metadata"]
    assert first["generation"] == written["metadata"]["generation"]


def test_a_window_without_availability_ends_unhealthy_with_the_runtime_message(
        kube: Kube, unavailable: tuple[str, str]) -> None:
    """The window ends: not healthy, the runtime's words, and it was watched (no poll)."""
    namespace, name = unavailable
    unavailable_reported(kube, namespace, name)
    result = health.watch_health(kube, namespace, name, "Provider", 1.0)
    assert (result.healthy, result.watched) == (False, True)
    assert result.message == ("provider package deployment is unavailable with message: "
                              "Deployment does not have minimum availability."), result.message


def test_the_answer_is_the_deployment_as_last_seen_on_the_watch(
        kube: Kube, unavailable: tuple[str, str]) -> None:
    """A change during the window (here: the Deployment deleted) is what the window's end
    reports, not the Deployment as listed when it began."""
    namespace, name = unavailable
    unavailable_reported(kube, namespace, name)
    listed = Listed(kube)
    with ThreadPoolExecutor(1) as pool:
        seen: Future[health.Seen] = pool.submit(health.watch_health, listed, namespace, name,
                                                "Provider", 3.0)
        assert listed.listed.wait(30)
        kube.delete("apps/v1", "Deployment", name, namespace)
        result = seen.result(60)
    assert (result.healthy, result.watched) == (False, True)
    assert result.message == 'provider package deployment has no condition of type ' \
        '"Available" yet', result.message


def unavailable_reported(kube: Kube, namespace: str, name: str) -> None:
    """Wait until the Deployment's controller has reported it unavailable."""
    def reported() -> bool:
        live = kube.get("apps/v1", "Deployment", name, namespace) or {}
        return "is unavailable" in health.judged(live, "Provider")[1]
    wait_for(reported, timeout=30, what=f"Deployment {name} reported unavailable")


def test_a_broken_watch_hands_over_to_the_poll(
        kube: Kube, unavailable: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A watch that cannot be opened (stand-in: no real server refuses one on demand) is
    not an error: the answer says it was not watched, so the workflow polls."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise KubernetesUnavailable("watch refused")

    monkeypatch.setattr(health.kwatch, "watch", refuse)
    namespace, name = unavailable
    result = health.watch_health(kube, namespace, name, "Provider", 30.0)
    assert (result.healthy, result.watched) == (False, False)
