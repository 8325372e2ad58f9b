"""What establish records on the revision once its objects are written: ``status.objectRefs``
and, for a revision in control of MRDs, how many are Active (the annotation activation
compares against). The two writes are of different subresources and neither is read back,
so they are made side by side (20-40 ms each on a busy kube-apiserver)."""

from __future__ import annotations

import threading
from typing import Any

from lockwright import contracts as c
from lockwright.activities.objects import Establisher
from lockwright.objects import establish as est

MRD = {"apiVersion": "apiextensions.crossplane.io/v1alpha1",
       "kind": "ManagedResourceDefinition", "name": "widgets.example.org"}
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "name": "widgets.example.org"}
REVISION = est.Revision(name="nop-2", uid="u2", kind="ProviderRevision",
                        package_kind="Provider", package_name="nop", package_uid="p",
                        active=True)


class _Kube:
    """Each patch waits, up to 5 s, until ``together`` patches are in flight."""

    def __init__(self, together: int) -> None:
        self.barrier = threading.Barrier(together, timeout=5)
        self.patches: list[tuple[str | None, Any]] = []

    def patch(self, api: str, kind: str, name: str, body: Any,
              subresource: str | None = None) -> None:
        assert (kind, name) == ("ProviderRevision", "nop-2")
        self.barrier.wait()
        self.patches.append((subresource, body))


def _record(kube: _Kube, annotations: dict[str, str]) -> tuple[Any, tuple[int, int]]:
    establisher = Establisher(
        kube, None, None, None, None, "crossplane-system")  # type: ignore[arg-type]
    inp = c.EstablishObjectsInput(kind=c.PROVIDER, package="nop", revision="nop-2",
                                  control=True)
    rev = {"metadata": {"name": "nop-2", "annotations": annotations}}
    return establisher._record(inp, rev, REVISION, [MRD, CRD])


def test_the_refs_and_the_active_count_are_written_side_by_side() -> None:
    kube = _Kube(together=2)  # sequential writes would wait for each other, and time out
    refs, counts = _record(kube, {})
    assert counts == (1, 1) and refs == [MRD, CRD]
    assert sorted(kube.patches, key=lambda p: str(p[0])) == [
        (None, {"metadata": {"annotations": {c.ACTIVE_DEFINITIONS_ANNOTATION: "1"}}}),
        ("status", {"status": {"objectRefs": [MRD, CRD]}})]


def test_a_count_recorded_already_is_not_written_again() -> None:
    kube = _Kube(together=1)
    _record(kube, {c.ACTIVE_DEFINITIONS_ANNOTATION: "1"})
    assert kube.patches == [("status", {"status": {"objectRefs": [MRD, CRD]}})]
