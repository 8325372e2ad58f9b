"""A switch's hand-off (``set_active_revision`` with ``keep_runtime``) only flips
``desiredState``: the new revision Active, the old one Inactive and still running. It reads
the package's revisions and nothing else: no runtime Deployments and no Lock, which decide
only what a retirement removes. A retirement (without ``keep_runtime``) reads both; a
finished switch's retirement does not read the objects the new revision controls."""

from __future__ import annotations

from typing import Any

import pytest

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

    def get(self, api: str, kind: str, name: str) -> Any:
        return None


class _Reader:
    def __init__(self, revisions: list[Any]) -> None:
        self.revisions = revisions
        self.bounds: list[str] = []

    def revisions_of(self, kind: str, package: str, not_older_than: str = "") -> list[Any]:
        self.bounds.append(not_older_than)
        return self.revisions

    def revision(self, kind: str, name: str) -> Any:
        return next(r for r in self.revisions if r["metadata"]["name"] == name)

    def event(self, *_: Any) -> None:
        pass


class _Keeper:
    def __init__(self, kube: _Kube, locked: tuple[str, ...] = ()) -> None:
        self.kube = kube
        self.locked = locked

    def read_lock(self) -> dict[str, Any]:
        self.kube.calls.append(("read_lock",))
        return {"packages": [{"name": n} for n in self.locked]}

    def leave_lock(self, name: str) -> None:
        self.kube.calls.append(("leave_lock", name))


class _Establisher:
    def __init__(self, kube: _Kube) -> None:
        self.kube = kube

    def release_objects(self, kind: str, rev: Any, taken: frozenset[Any] = frozenset()
                        ) -> int:
        self.kube.calls.append(("release", rev["metadata"]["name"], *sorted(
            n for _, _, n in taken)))
        return 0


class _Dropped:
    def drop_unshipped(self, *_: Any) -> int:
        return 0


def _set_active(keep_runtime: bool, revisions: list[Any], finish: bool = False,
                locked: tuple[str, ...] = (), reader: _Reader | None = None
                ) -> list[tuple[str, ...]]:
    kube = _Kube()
    reader, keeper = reader or _Reader(revisions), _Keeper(kube, locked)
    acts = LifecycleActivities(
        kube, "crossplane-system", reader, keeper,  # type: ignore[arg-type]
        _Establisher(kube), _Dropped())  # type: ignore[arg-type]
    run = LifecycleActivities.set_active_revision.__wrapped__  # type: ignore[attr-defined]
    result = run(acts, c.SetActiveRevisionInput(c.PROVIDER, "nop", "nop-2",
                                                keep_runtime=keep_runtime,
                                                drop_unshipped=finish))
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


def _refs(*names: str) -> dict[str, Any]:
    return {"objectRefs": [{"apiVersion": "apiextensions.k8s.io/v1",
                            "kind": "CustomResourceDefinition", "name": n} for n in names]}


@pytest.mark.parametrize(("finish", "skipped"), [(True, ("a", "b")), (False, ())])
def test_a_finished_switch_does_not_read_what_the_new_revision_controls(
        finish: bool, skipped: tuple[str, ...]) -> None:
    """The finish (``drop_unshipped``) hands the release the new revision's objects, which
    it established under its control; any other retirement hands it none."""
    old = {**OLD, "status": _refs("a", "b", "c")}
    new = {**NEW, "spec": {"revision": 2, "desiredState": "Active"}, "status": _refs("a", "b")}
    calls = _set_active(keep_runtime=False, revisions=[old, new], finish=finish,
                        locked=("nop-1",))
    assert ("release", "nop-1", *skipped) in calls, calls


@pytest.mark.parametrize(("keep_runtime", "finish", "bound"), [
    (False, True, "42"), (False, False, ""), (True, False, "")])
def test_only_a_finished_switch_lists_revisions_as_new_as_its_target(
        keep_runtime: bool, finish: bool, bound: str) -> None:
    """A finished switch lists the revisions no older than its target as read (its last
    revision write), which the watch cache answers at once; every other call lists them
    consistently."""
    old = {**OLD, "status": _refs("a")}
    new = {"metadata": {"name": "nop-2", "uid": "u2", "resourceVersion": "42"},
           "spec": {"revision": 2, "desiredState": "Active"}, "status": _refs("a")}
    reader = _Reader([old, new])
    _set_active(keep_runtime=keep_runtime, revisions=[], finish=finish, locked=("nop-1",),
                reader=reader)
    assert reader.bounds == [bound]
