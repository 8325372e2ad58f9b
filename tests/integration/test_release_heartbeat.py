"""A revision's release of its objects heartbeats while it reads them, and reads a kind it
holds many of by one metadata-only list (on devcluster).

A switched 2,000-CRD provider's old revision reads its 4,000 objects as it is deactivated
(``set_active_revision``, the upgrade's finish); one after another, on a busy
kube-apiserver, that took two minutes without a heartbeat, past the activity's 30 s
heartbeat timeout: the finish failed and its pass ran again (the 2,000-CRD switch-over on
the real control plane, 2026-12-01). Here a read past the first few waits for a heartbeat.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from lockwright.activities.objects import Establisher
from lockwright.activities.release import LIST_FROM
from lockwright.k8s import Kube
from tests.e2e.packages import crd
from tests.helpers import unique
from tests.integration.test_activities import kube  # noqa: F401 - fixture used by name

API = "apiextensions.k8s.io/v1"
OLD = {"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision", "name": "nop-1",
       "uid": "old-uid", "controller": True, "blockOwnerDeletion": True}
NEW = {**OLD, "name": "nop-2", "uid": "new-uid"}
WORKERS = 4


class _Kube:
    """Objects still controlled by the old revision (the even ones) or handed over; a read
    past the first ``WORKERS`` waits (up to a deadline) for the activity's first heartbeat."""

    def __init__(self, beat: threading.Event) -> None:
        self.beat = beat
        self.reads = 0
        self.lock = threading.Lock()
        self.patched: dict[str, list[dict[str, Any]]] = {}

    def get(self, api: str, kind: str, name: str) -> dict[str, Any]:
        with self.lock:
            self.reads += 1
            first = self.reads <= WORKERS
        if not first and not self.beat.wait(30):
            raise AssertionError("the release read for 30 s without a heartbeat")
        controller = OLD if int(name.split("-")[1]) % 2 == 0 else NEW
        others = [{**r, "controller": False} for r in (OLD, NEW) if r is not controller]
        return {"metadata": {"name": name, "resourceVersion": "7",
                             "ownerReferences": [*others, controller]}}

    def set_owners(self, api: str, kind: str, name: str, owners: list[dict[str, Any]],
                   resource_version: str) -> None:
        with self.lock:
            self.patched[name] = owners


def test_a_release_heartbeats_while_it_reads_and_releases_only_what_it_controls() -> None:
    beat = threading.Event()
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beat.set()
    kube = _Kube(beat)
    establisher = Establisher(kube, None, None, None, None, "ns",  # type: ignore[arg-type]
                              workers=WORKERS)
    refs = [{"apiVersion": API, "kind": "CustomResourceDefinition", "name": f"crd-{i}"}
            for i in range(20)]
    rev = {"metadata": {"name": "nop-1", "uid": "old-uid"}, "status": {"objectRefs": refs}}

    released = env.run(establisher.release_objects, "Provider", rev)

    assert released == 10
    assert sorted(kube.patched) == sorted(f"crd-{i}" for i in range(0, 20, 2))
    assert all(not r.get("controller") for refs_ in kube.patched.values() for r in refs_
               if r["uid"] == "old-uid")


def _revision(kube: Kube, name: str) -> dict[str, Any]:
    return kube.create({"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
                        "metadata": {"name": name},
                        "spec": {"image": "registry.invalid/p:v1", "desiredState": "Inactive",
                                 "revision": 1}})


def _owner(rev: dict[str, Any], controller: bool) -> dict[str, Any]:
    return {"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
            "name": rev["metadata"]["name"], "uid": rev["metadata"]["uid"],
            "controller": controller, "blockOwnerDeletion": True}


def test_a_release_of_many_crds_lists_their_owners_and_writes_what_it_controls(
        kube: Kube, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811 - the fixture
    old, new = (_revision(kube, unique(n)) for n in ("rel-old", "rel-new"))
    group = f"{unique('rel')}.example.org"
    names = []
    for i in range(LIST_FROM + 6):
        obj = crd(group, f"Kind{i}")
        mine = i % 3 == 0  # the old revision still controls every third
        obj["metadata"]["ownerReferences"] = [_owner(old, mine), _owner(new, not mine)]
        names.append(kube.create(obj)["metadata"]["name"])
    refs = [{"apiVersion": API, "kind": "CustomResourceDefinition", "name": n} for n in names]
    rev = {**old, "status": {"objectRefs": refs}}
    establisher = Establisher(kube, None, None, None, None, "ns")  # type: ignore[arg-type]
    reads: list[str] = []

    def counting_get(*args: Any, **kw: Any) -> Any:
        reads.append(args[2])
        return Kube.get(kube, *args, **kw)

    monkeypatch.setattr(kube, "get", counting_get)

    released = ActivityEnvironment().run(establisher.release_objects, "Provider", rev)

    assert reads == [], "the owners come from one metadata-only list, not a read each"
    assert released == len(range(0, LIST_FROM + 6, 3))
    for name in names:
        live = kube.get(API, "CustomResourceDefinition", name) or {}
        by_uid = {r["uid"]: r["controller"] for r in live["metadata"]["ownerReferences"]}
        assert by_uid[old["metadata"]["uid"]] is False, name
    for name in names:  # the session's devcluster serves every later test: leave no kinds
        kube.delete(API, "CustomResourceDefinition", name)
    for rev_ in (old, new):
        kube.delete("pkg.crossplane.io/v1", "ProviderRevision", rev_["metadata"]["name"])
