"""A switch's hand-off (``set_active_revision`` with ``keep_runtime``) only flips
``desiredState``: the new revision Active, the old one Inactive and still running. It reads
the package's revisions and nothing else: no runtime Deployments and no Lock, which decide
only what a retirement removes. A retirement (without ``keep_runtime``) reads both."""

from __future__ import annotations

from typing import Any

from lockwright import contracts as c
from lockwright.activities.lifecycle import LifecycleActivities

OLD = {"metadata": {"name": "nop-1", "uid": "u1"},
       "spec": {"revision": 1, "desiredState": "Active"}}
NEW = {"metadata": {"name": "nop-2", "uid": "u2"},
       "spec": {"revision": 2, "desiredState": "Inactive"}}


class _Kube:
    """Records every call; lists no Deployment."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def patch(self, api: str, kind: str, name: str, body: Any, **_: Any) -> None:
        self.calls.append(("patch", kind, name, body["spec"]["desiredState"]))

    def list(self, api: str, kind: str, namespace: str | None = None) -> list[Any]:
        self.calls.append(("list", kind))
        return []


class _Reader:
    def __init__(self, revisions: list[Any]) -> None:
        self.revisions = revisions

    def revisions_of(self, kind: str, package: str) -> list[Any]:
        return self.revisions


class _Keeper:
    def __init__(self, kube: _Kube) -> None:
        self.kube = kube

    def read_lock(self) -> dict[str, Any]:
        self.kube.calls.append(("read_lock",))
        return {"packages": []}


def _set_active(keep_runtime: bool, revisions: list[Any]) -> list[tuple[str, ...]]:
    kube = _Kube()
    acts = LifecycleActivities(
        kube, "crossplane-system", _Reader(revisions), _Keeper(kube),  # type: ignore[arg-type]
        None, None)  # type: ignore[arg-type]
    run = LifecycleActivities.set_active_revision.__wrapped__  # type: ignore[attr-defined]
    result = run(acts, c.SetActiveRevisionInput(c.PROVIDER, "nop", "nop-2",
                                                keep_runtime=keep_runtime))
    assert result.revision == "nop-2"
    return kube.calls


def test_the_hand_off_reads_neither_runtimes_nor_the_lock() -> None:
    assert _set_active(keep_runtime=True, revisions=[OLD, NEW]) == [
        ("patch", "ProviderRevision", "nop-1", "Inactive"),
        ("patch", "ProviderRevision", "nop-2", "Active")]


def test_a_retirement_reads_both() -> None:
    """Only the new revision here, so that nothing is retired: what it read is the point."""
    calls = _set_active(keep_runtime=False, revisions=[NEW])
    assert calls == [("read_lock",), ("list", "Deployment"),
                     ("patch", "ProviderRevision", "nop-2", "Active")]
