"""A check reads its objects as the watch cache has them, and from etcd again before it
would refuse (lockwright.activities.objects, ``Establisher._read_and_plan``; docs/design.md,
"One dry run per switch-over")."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from lockwright.activities.objects import Establisher
from lockwright.objects import establish as es

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "things.example.org"}, "spec": {"group": "example.org"}}
REV = es.Revision(name="nop-2", uid="rev-2", kind="ProviderRevision", package_kind="Provider",
                  package_name="nop", package_uid="pkg-uid", active=True)
OTHER = {"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision", "name": "alpha-9",
         "uid": "alpha-rev", "controller": True, "blockOwnerDeletion": True}


def _live(*owners: dict[str, Any], rv: str) -> dict[str, Any]:
    obj = copy.deepcopy(CRD)
    obj["metadata"].update(ownerReferences=list(owners), resourceVersion=rv)
    return obj


class _Kube:
    """The watch cache's copy (``cached``) and etcd's (``fresh``) of the one CRD."""

    def __init__(self, cached: dict[str, Any] | None, fresh: dict[str, Any] | None) -> None:
        self.copies = {True: cached, False: fresh}
        self.reads: list[bool] = []

    def get(self, api: str, kind: str, name: str, *, cached: bool = False) -> Any:
        self.reads.append(cached)
        return copy.deepcopy(self.copies[cached])


@pytest.mark.parametrize(("cached", "fresh", "reads", "conflicts"), [
    # the cache's copy plans without a refusal: etcd is not read
    (_live(rv="5"), _live(rv="6"), [True], 0),
    (None, None, [True], 0),  # absent: a create, which the server refuses if it exists
    # the cache still shows another package's revision in control, which has let go:
    # read again from etcd, and no refusal
    (_live(OTHER, rv="5"), _live(rv="6"), [True, False], 0),
    # it still holds the CRD in etcd: refused, on etcd's copy
    (_live(OTHER, rv="5"), _live(OTHER, rv="6"), [True, False], 1),
])
def test_a_refusal_is_made_on_a_read_from_etcd_only(
        cached: dict[str, Any] | None, fresh: dict[str, Any] | None, reads: list[bool],
        conflicts: int) -> None:
    kube = _Kube(cached, fresh)
    establisher = Establisher(kube, None, None, None, None, "ns")  # type: ignore[arg-type]

    with ThreadPoolExecutor(1) as pool:
        plan, live, findings = establisher._read_and_plan(pool, REV, [CRD], (None, ""), {})

    assert kube.reads == reads
    assert len(plan.conflicts) == conflicts and not findings
    read = cached if reads == [True] else fresh
    assert [o["metadata"]["resourceVersion"] for o in live.values()] == (
        [read["metadata"]["resourceVersion"]] if read else [])
