"""devcluster's garbage collector against Kubernetes' documented deletion semantics.

Matrix, one test per rule: owner classification (dangling, waiting, solid, including an
owner deleted in the background but held by a finalizer, and a namespaced owner in another
namespace); a dependent with a solid owner survives and loses its other references (two
owners, foreground deletion of one); a dependent with no solid owner is deleted with the
policy its own finalizers imply, or in the foreground below a waiting owner (a chain deletes
bottom-up, the owner last); foreground deletion waits for blockOwnerDeletion dependents
only; orphan deletion shows the ``orphan`` finalizer until the collector has stripped the
references; a second delete switches the GC finalizer; kubectl's three ``--cascade`` modes.

Nothing sleeps: "the collector has looked and left it alone" is observed by two
:func:`_full_sweep` barriers, each a dependent of a missing owner waited on until collected.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.fixtures.devcluster import DevCluster
from tests.helpers import unique, wait_for

HOLD = "example.org/hold"
Obj = dict[str, Any]


def _ref(owner: client.V1ConfigMap, block: bool = False) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
            "uid": owner.metadata.uid, "blockOwnerDeletion": block}


def _cm(core: client.CoreV1Api, namespace: str, name: str, refs: list[Obj] | None = None,
        finalizers: list[str] | None = None) -> client.V1ConfigMap:
    meta: Obj = {"name": name, "ownerReferences": refs or [], "finalizers": finalizers or []}
    return core.create_namespaced_config_map(namespace, {"metadata": meta})


def _read(core: client.CoreV1Api, namespace: str, name: str) -> client.V1ConfigMap | None:
    try:
        return core.read_namespaced_config_map(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _gone(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    return _read(core, namespace, name) is None


def _owner_uids(cm: client.V1ConfigMap | None) -> list[str]:
    assert cm is not None, "expected the object to exist"
    return [r.uid for r in cm.metadata.owner_references or []]


def _release(core: client.CoreV1Api, namespace: str, name: str) -> None:
    """Remove the test's hold finalizer, keeping any the server or GC set."""
    cm = _read(core, namespace, name)
    assert cm is not None
    kept = [f for f in cm.metadata.finalizers or [] if f != HOLD]
    core.patch_namespaced_config_map(name, namespace, {"metadata": {"finalizers": kept or None}})


def _full_sweep(core: client.CoreV1Api, namespace: str) -> None:
    """Return only once a whole GC sweep has run over everything that exists now.

    A dependent of a missing owner is collected by the first sweep that sees it; the
    second one's collection means the sweep that took the first is over.
    """
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": unique("uid")}
    for _ in range(2):
        name = unique("sweep")
        core.create_namespaced_config_map(namespace, {"metadata": {
            "name": name, "ownerReferences": [ghost]}})
        wait_for(lambda name=name: _gone(core, namespace, name), what="a GC sweep")


def _delete_raw(core: client.CoreV1Api, namespace: str, name: str, **kw: Any) -> Obj:
    """DELETE and return the body the server sent (the object while it is being deleted)."""
    resp = core.delete_namespaced_config_map(name, namespace, _preload_content=False, **kw)
    return json.loads(resp.data)  # type: ignore[no-any-return]


# -- 1. classification ----------------------------------------------------------------


def test_dangling_reference_dropped_beside_solid_owner(core: client.CoreV1Api,
                                                       namespace: str) -> None:
    """Dangling (no object has the uid) and solid owners: the dependent stays, and only
    the dangling reference goes."""
    owner = _cm(core, namespace, "owner")
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": unique("uid")}
    _cm(core, namespace, "dep", [_ref(owner), ghost])
    wait_for(lambda: _owner_uids(_read(core, namespace, "dep")) == [owner.metadata.uid],
             what="the dangling reference dropped")


def test_owner_deleted_in_background_but_held_is_solid(core: client.CoreV1Api,
                                                      namespace: str) -> None:
    """An owner with a deletionTimestamp but no foregroundDeletion finalizer still counts
    as solid: its dependents stay until it is really gone."""
    owner = _cm(core, namespace, "owner", finalizers=[HOLD])
    _cm(core, namespace, "dep", [_ref(owner, block=True)])
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")
    _full_sweep(core, namespace)
    assert _owner_uids(_read(core, namespace, "dep")) == [owner.metadata.uid]
    _release(core, namespace, "owner")
    wait_for(lambda: _gone(core, namespace, "dep"), what="dependent collected after owner")


def test_namespaced_owner_in_other_namespace_is_dangling(core: client.CoreV1Api,
                                                         namespace: str) -> None:
    """Cross-namespace owner references are not honoured: the dependent is collected
    although an object with that uid exists."""
    elsewhere = unique("ns")
    core.create_namespace({"metadata": {"name": elsewhere}})
    owner = _cm(core, elsewhere, "owner")
    _cm(core, namespace, "dep", [_ref(owner)])
    wait_for(lambda: _gone(core, namespace, "dep"), what="cross-namespace dependent collected")
    assert not _gone(core, elsewhere, "owner")


# -- 2. a solid owner keeps a dependent -------------------------------------------------


def test_two_owners_foreground_deletion_of_one(core: client.CoreV1Api, namespace: str) -> None:
    """Foreground deletion of one of two owners: the dependent survives, loses only that
    reference, and (its reference dropped) no longer blocks the owner, which goes."""
    first, second = _cm(core, namespace, "first"), _cm(core, namespace, "second")
    _cm(core, namespace, "dep", [_ref(first, block=True), _ref(second, block=True)])
    core.delete_namespaced_config_map("first", namespace, propagation_policy="Foreground")
    wait_for(lambda: _gone(core, namespace, "first"), what="the deleted owner gone")
    dep = _read(core, namespace, "dep")
    assert _owner_uids(dep) == [second.metadata.uid]
    assert dep is not None and dep.metadata.deletion_timestamp is None


# -- 3. a dependent without a solid owner is deleted with its own policy ------------------


def test_collected_dependent_honours_its_orphan_finalizer(core: client.CoreV1Api,
                                                          namespace: str) -> None:
    """A collected dependent carrying the ``orphan`` finalizer is deleted with Orphan, so
    its own dependent survives, where Background would have collected it too."""
    owner = _cm(core, namespace, "owner")
    child = _cm(core, namespace, "child", [_ref(owner)], finalizers=["orphan"])
    _cm(core, namespace, "grandchild", [_ref(child)])
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")
    wait_for(lambda: _gone(core, namespace, "child"), what="child collected")
    _full_sweep(core, namespace)
    assert _owner_uids(_read(core, namespace, "grandchild")) == []


def test_foreground_chain_deletes_bottom_up(core: client.CoreV1Api, namespace: str) -> None:
    """owner -> child -> grandchild under foreground deletion: the child, below a waiting
    owner and with a dependent of its own, is deleted in the foreground too; deletions
    happen grandchild, child, owner."""
    owner = _cm(core, namespace, "owner")
    child = _cm(core, namespace, "child", [_ref(owner, block=True)])
    _cm(core, namespace, "grandchild", [_ref(child, block=True)], finalizers=[HOLD])
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Foreground")
    wait_for(lambda: _read(core, namespace, "grandchild").metadata.deletion_timestamp,
             what="grandchild being deleted")
    _full_sweep(core, namespace)
    for name in ("owner", "child"):
        held = _read(core, namespace, name)
        assert held is not None and "foregroundDeletion" in held.metadata.finalizers
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    _release(core, namespace, "grandchild")
    assert _deletion_order(core, namespace, rv, 3) == ["grandchild", "child", "owner"]


def test_foreground_cycle_does_not_deadlock(core: client.CoreV1Api, namespace: str) -> None:
    """a owns b and b owns a, both blocking: as the real GC does, b's references stop
    blocking before b is deleted in the foreground, so both go instead of waiting for ever."""
    a = _cm(core, namespace, "a")
    b = _cm(core, namespace, "b", [_ref(a, block=True)])
    core.patch_namespaced_config_map("a", namespace, {"metadata": {
        "ownerReferences": [_ref(b, block=True)]}})
    core.delete_namespaced_config_map("a", namespace, propagation_policy="Foreground")
    wait_for(lambda: _gone(core, namespace, "a") and _gone(core, namespace, "b"),
             what="both ends of the cycle gone")


def _deletion_order(core: client.CoreV1Api, namespace: str, rv: str, count: int) -> list[str]:
    """Names of the first ``count`` non-barrier DELETED events after ``rv``, in order."""
    seen: list[str] = []
    stream = watch.Watch().stream(core.list_namespaced_config_map, namespace,
                                  resource_version=rv, timeout_seconds=10)
    for event in stream:
        if event["type"] == "DELETED" and not event["object"].metadata.name.startswith("sweep"):
            seen.append(event["object"].metadata.name)
        if len(seen) == count:
            break
    return seen


# -- 4. foreground waits for blocking dependents only -----------------------------------


def test_foreground_waits_for_blocking_dependents_only(core: client.CoreV1Api,
                                                       namespace: str) -> None:
    """Both dependents are deleted; the owner waits for the blockOwnerDeletion one and
    goes while the other is still held by its finalizer."""
    owner = _cm(core, namespace, "owner")
    _cm(core, namespace, "blocking", [_ref(owner, block=True)], finalizers=[HOLD])
    _cm(core, namespace, "loose", [_ref(owner, block=False)], finalizers=[HOLD])
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Foreground")
    for name in ("blocking", "loose"):
        wait_for(lambda name=name: _read(core, namespace, name).metadata.deletion_timestamp,
                 what=f"{name} being deleted")
    _full_sweep(core, namespace)
    held = _read(core, namespace, "owner")
    assert held is not None and "foregroundDeletion" in held.metadata.finalizers
    _release(core, namespace, "blocking")
    wait_for(lambda: _gone(core, namespace, "owner"), what="owner gone after blocking dependent")
    assert _read(core, namespace, "loose").metadata.deletion_timestamp is not None
    _release(core, namespace, "loose")
    wait_for(lambda: _gone(core, namespace, "loose"), what="loose dependent gone")


# -- 5. orphan -----------------------------------------------------------------------


@pytest.mark.parametrize("how", [
    {"propagation_policy": "Orphan"},
    {"body": client.V1DeleteOptions(orphan_dependents=True)}], ids=["policy", "legacy"])
def test_orphan_finalizer_until_references_stripped(core: client.CoreV1Api, namespace: str,
                                                    how: dict[str, Any]) -> None:
    """The delete marks the owner and adds ``orphan``; the collector strips the references
    (the dependent survives), then the finalizer; the owner goes once its own is gone."""
    owner = _cm(core, namespace, "owner", finalizers=[HOLD])
    _cm(core, namespace, "dep", [_ref(owner, block=True)])
    body = _delete_raw(core, namespace, "owner", **how)
    assert body["metadata"]["deletionTimestamp"]
    assert sorted(body["metadata"]["finalizers"]) == sorted([HOLD, "orphan"])
    wait_for(lambda: _read(core, namespace, "owner").metadata.finalizers == [HOLD],
             what="orphan finalizer removed")
    assert _owner_uids(_read(core, namespace, "dep")) == []
    _release(core, namespace, "owner")
    wait_for(lambda: _gone(core, namespace, "owner"), what="owner gone")
    _full_sweep(core, namespace)
    assert _read(core, namespace, "dep") is not None


# -- 6. background, and a second delete ------------------------------------------------


def test_background_removes_owner_at_once(core: client.CoreV1Api, namespace: str) -> None:
    owner = _cm(core, namespace, "owner")
    _cm(core, namespace, "dep", [_ref(owner, block=True)])
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")
    assert _gone(core, namespace, "owner")
    wait_for(lambda: _gone(core, namespace, "dep"), what="dependent collected afterwards")


def test_second_delete_switches_gc_finalizer(core: client.CoreV1Api, namespace: str) -> None:
    """As kube-apiserver: an explicit policy replaces the GC finalizer of an object already
    being deleted, no policy keeps it, and the deletionTimestamp never moves."""
    _cm(core, namespace, "held", finalizers=[HOLD])
    first = _delete_raw(core, namespace, "held", propagation_policy="Background")
    assert first["metadata"]["finalizers"] == [HOLD]
    stamp = first["metadata"]["deletionTimestamp"]
    for policy, wanted in (("Foreground", "foregroundDeletion"), ("Orphan", "orphan"),
                           (None, "orphan")):
        kw = {"propagation_policy": policy} if policy else {}
        meta = _delete_raw(core, namespace, "held", **kw)["metadata"]
        assert sorted(meta["finalizers"]) == sorted([HOLD, wanted]), policy
        assert meta["deletionTimestamp"] == stamp


def test_background_redelete_drops_foreground_and_deletes(core: client.CoreV1Api,
                                                          namespace: str) -> None:
    """An object waiting only on foregroundDeletion goes at once when deleted again with
    Background: the finalizer is dropped and nothing else holds it."""
    owner = _cm(core, namespace, "owner")
    _cm(core, namespace, "dep", [_ref(owner, block=True)], finalizers=[HOLD])
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Foreground")
    wait_for(lambda: _read(core, namespace, "dep").metadata.deletion_timestamp,
             what="dependent being deleted")
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")
    assert _gone(core, namespace, "owner")
    _release(core, namespace, "dep")


# -- kubectl -------------------------------------------------------------------------


@pytest.mark.kubectl
@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_kubectl_delete_cascade(devcluster: DevCluster, core: client.CoreV1Api,
                                namespace: str, cascade: str, tmp_path: Path) -> None:
    """``kubectl delete --cascade=...`` returns once the owner is gone: with foreground
    the dependent went first, with orphan it stays unowned, with background it follows."""
    owner = _cm(core, namespace, "owner")
    _cm(core, namespace, "dep", [_ref(owner, block=True)])
    env = {**os.environ, "KUBECONFIG": devcluster.kubeconfig, "HOME": str(tmp_path)}
    out = subprocess.run(["kubectl", "delete", "cm", "owner", "-n", namespace,
                          f"--cascade={cascade}"], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout
    assert out.strip() == 'configmap "owner" deleted'
    assert _gone(core, namespace, "owner")
    if cascade == "foreground":
        assert _gone(core, namespace, "dep")
    elif cascade == "orphan":
        _full_sweep(core, namespace)
        assert _owner_uids(_read(core, namespace, "dep")) == []
    else:
        wait_for(lambda: _gone(core, namespace, "dep"), what="dependent collected")
