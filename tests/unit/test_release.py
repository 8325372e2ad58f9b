"""A retired revision's release of control (lockwright.activities.release): a kind it
holds many objects of is read by one metadata-only list, a few one by one; only what it
still controls is written, and an object changed since the list is read again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lockwright.activities.release import LIST_FROM, Release
from lockwright.errors import KubeConflict
from lockwright.k8s.watch import METADATA_LIST

CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
MRD = ("apiextensions.crossplane.io/v1alpha1", "ManagedResourceDefinition")
OLD = {"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision", "name": "nop-1",
       "uid": "old-uid", "controller": True, "blockOwnerDeletion": True}
NEW = {**OLD, "name": "nop-2", "uid": "new-uid"}


class _Path:
    def __init__(self, kind: str) -> None:
        self.kind = kind

    def path(self, namespace: str | None, name: str | None = None) -> str:
        return f"/{self.kind}" + (f"/{name}" if name else "")


class _Kube:
    """CRDs and MRDs, the even ones still controlled by the old revision; ``changed``
    names objects written since any list (their first write answers 409)."""

    def __init__(self, names: dict[str, list[str]], changed: frozenset[str] = frozenset()
                 ) -> None:
        self.objects = {(kind, n): self._meta(n) for kind, ns in names.items() for n in ns}
        self.changed = set(changed)
        self.lists: list[str] = []
        self.gets: list[str] = []
        self.written: dict[str, list[dict[str, Any]]] = {}

    @staticmethod
    def _meta(name: str, rv: str = "1") -> dict[str, Any]:
        controller = OLD if int(name.rsplit("-", 1)[1]) % 2 == 0 else NEW
        owners = [{**r, "controller": False} for r in (OLD, NEW) if r is not controller]
        return {"name": name, "resourceVersion": rv, "ownerReferences": [*owners, controller]}

    def resource(self, api_version: str, kind: str) -> _Path:
        return _Path(kind)

    def list_pages(self, path: str, accept: str, **_: Any) -> Iterator[dict[str, Any]]:
        assert accept == METADATA_LIST, "a release reads owners, never contents"
        kind = path.strip("/")
        self.lists.append(kind)
        items = [{"metadata": m} for (k, _), m in self.objects.items() if k == kind]
        yield {"items": items[:50], "metadata": {"resourceVersion": "9"}}
        yield {"items": items[50:], "metadata": {"resourceVersion": "9"}}

    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        self.gets.append(name)
        found = self.objects.get((kind, name))
        return {"metadata": found} if found else None

    def set_owners(self, api_version: str, kind: str, name: str,
                   owners: list[dict[str, Any]], resource_version: str) -> None:
        if name in self.changed:
            self.changed.discard(name)
            self.objects[(kind, name)] = {**self.objects[(kind, name)], "resourceVersion": "2"}
            raise KubeConflict(f"{name} changed")
        assert resource_version == self.objects[(kind, name)]["resourceVersion"]
        self.written[name] = owners


def _rev(refs: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {"metadata": {"name": "nop-1", "uid": "old-uid"},
            "status": {"objectRefs": [{"apiVersion": a, "kind": k, "name": n}
                                      for a, k, n in refs]}}


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(count)]


@pytest.mark.parametrize(("crds", "mrds", "lists", "gets"), [
    (LIST_FROM, 3, ["CustomResourceDefinition"], 3),  # many CRDs listed, a few MRDs read
    (LIST_FROM - 1, 0, [], LIST_FROM - 1),  # too few to list
    (100, 100, ["CustomResourceDefinition", "ManagedResourceDefinition"], 0),
])
def test_a_kind_of_many_objects_is_read_by_one_metadata_list(
        crds: int, mrds: int, lists: list[str], gets: int) -> None:
    names = {CRD[1]: _names("crd", crds), MRD[1]: _names("mrd", mrds)}
    kube = _Kube(names)
    refs = [(*CRD, n) for n in names[CRD[1]]] + [(*MRD, n) for n in names[MRD[1]]]

    released = Release(kube, workers=4).run("Provider", _rev(refs))  # type: ignore[arg-type]

    controlled = [n for ns in names.values() for n in ns if int(n.rsplit("-", 1)[1]) % 2 == 0]
    assert released == len(controlled) and sorted(kube.written) == sorted(controlled)
    assert sorted(kube.lists) == lists and len(kube.gets) == gets
    old = [r for owners in kube.written.values() for r in owners if r["uid"] == "old-uid"]
    assert old and not any(r["controller"] for r in old)
    assert all(sum(r["controller"] for r in owners) == 0 for owners in kube.written.values())


def test_an_object_changed_since_the_list_is_read_again_and_one_gone_is_skipped() -> None:
    names = _names("crd", LIST_FROM)
    kube = _Kube({CRD[1]: names}, changed=frozenset({"crd-2"}))
    refs = [(*CRD, n) for n in names] + [(*CRD, "crd-gone-0")]

    released = Release(kube, workers=2).run("Provider", _rev(refs))  # type: ignore[arg-type]

    assert kube.gets == ["crd-2"], "only the object that changed is read again"
    assert "crd-2" in kube.written and "crd-gone-0" not in kube.written
    assert released == LIST_FROM // 2


@pytest.mark.parametrize("count", [3, LIST_FROM])
def test_objects_the_new_revision_took_are_not_read(count: int) -> None:
    """A finished switch passes the objects the new revision established under its control
    (``taken``): neither listed nor read, whether a kind would be listed or read one by
    one; an object only the old revision ships is still read and released."""
    names = _names("crd", count) + ["crd-only-old-0"]
    kube = _Kube({CRD[1]: names})
    refs = [(*CRD, n) for n in names]
    taken = frozenset(refs[:-1])

    released = Release(kube, workers=2).run(  # type: ignore[arg-type]
        "Provider", _rev(refs), taken)

    assert kube.lists == [] and kube.gets == ["crd-only-old-0"]
    assert released == 1 and list(kube.written) == ["crd-only-old-0"]
