"""The background builds (tests/fixtures/prebuild.py): which builds a session needs, in the
order its tests first need them, and which tests wait until last."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import prebuild


@dataclass
class Spec:
    params: dict[str, Any]


@dataclass
class Item:
    name: str
    fixturenames: tuple[str, ...] = ()
    path: Path = Path(__file__)
    callspec: Spec | None = None


def kube(name: str) -> Item:
    return Item(name, ("stack",), callspec=Spec({"cluster_kind": "kube"}))


def devcluster(name: str, *fixtures: str) -> Item:
    return Item(name, ("stack", *fixtures), callspec=Spec({"cluster_kind": "devcluster"}))


@pytest.fixture(autouse=True)
def both_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKWRIGHT_TEST_CLUSTER", "devcluster,kube")
    for build in prebuild.BUILDS:
        if build.ready:
            monkeypatch.delenv(build.ready, raising=False)


def test_tests_run_as_their_builds_finish_the_control_plane_first() -> None:
    items = [devcluster("a"), kube("b"), devcluster("c", "cosign_binary"), Item("d"),
             Item("e", ("docker",)), devcluster("f"), kube("g")]
    prebuild.reorder(items)  # type: ignore[arg-type]
    assert [i.name for i in items] == ["a", "d", "f", "b", "e", "g", "c"]


def test_builds_start_in_their_order_the_control_plane_first() -> None:
    # The session stacks' builds (cosign, helm) before the ones only compose's own stack
    # needs: the last build's tests run at the run's end, on the oldest stacks.
    items = [Item("h", ("helm_executable",)), kube("k"), Item("c", ("compose_cli",
                                                                    "compose_images")),
             devcluster("s", "cosign_binary")]
    assert [b.script for b in prebuild.needed(items)] == [  # type: ignore[arg-type]
        "build-control-plane.sh", "build-cosign.sh", "build-helm.sh", "build-compose.sh",
        "build-temporal.sh"]
    assert [b.nice for b in prebuild.needed(items)] == [0, 10, 10, 10, 10]  # type: ignore


def test_a_ready_build_does_not_hold_its_tests_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKWRIGHT_CONTROL_PLANE_BIN", "/opt/kube")
    items = [devcluster("c", "cosign_binary"), kube("k"), Item("u")]
    prebuild.reorder(items)  # type: ignore[arg-type]
    assert [i.name for i in items] == ["k", "u", "c"]  # kube waits for nothing now


def test_nothing_is_built_for_ready_binaries_or_unselected_clusters(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKWRIGHT_HELM_BIN", "/opt/helm")
    monkeypatch.setenv("LOCKWRIGHT_TEST_CLUSTER", "devcluster")
    items = [Item("h", ("helm_executable",)), devcluster("d"), Item("u")]
    assert prebuild.needed(items) == []  # type: ignore[arg-type]
