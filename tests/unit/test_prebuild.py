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


def test_tests_needing_a_cold_build_run_last_in_their_order() -> None:
    items = [devcluster("a"), kube("b"), devcluster("c", "cosign_binary"), Item("d"),
             Item("e", ("docker",)), devcluster("f")]
    prebuild.reorder(items)  # type: ignore[arg-type]
    assert [i.name for i in items] == ["a", "d", "f", "b", "c", "e"]


def test_builds_start_in_the_order_tests_first_need_them() -> None:
    items = [Item("h", ("helm_executable",)), kube("k"), Item("c", ("compose_cli",
                                                                    "compose_images"))]
    assert [b.script for b in prebuild.needed(items)] == [  # type: ignore[arg-type]
        "build-helm.sh", "build-control-plane.sh", "build-compose.sh", "build-temporal.sh"]


def test_nothing_is_built_for_ready_binaries_or_unselected_clusters(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKWRIGHT_HELM_BIN", "/opt/helm")
    monkeypatch.setenv("LOCKWRIGHT_TEST_CLUSTER", "devcluster")
    items = [Item("h", ("helm_executable",)), devcluster("d"), Item("u")]
    assert prebuild.needed(items) == []  # type: ignore[arg-type]
