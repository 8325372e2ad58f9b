"""Objects an upgrade no longer ships: they lose the retired revision's references and go.

After a switch is finished, each object the retired revision established but the active
one does not is released by the package: the retired revision's owner reference goes, and
so does the package's unless another of its revisions still ships the object. An object
left with no owner is deleted (Kubernetes' garbage collector never deletes an object that
has no owner references at all), except a CustomResourceDefinition that still has custom
resources: deleting it would delete them, so it is kept as it is and the package says so.
"""

from __future__ import annotations

from lockwright.activities.base import meta, spec
from lockwright.activities.reads import PackageReader
from lockwright.k8s import WARNING, Kube, Obj
from lockwright.objects.establish import Ref, unshipped, without_owners

CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")


class DroppedObjects:
    """Release and remove what a finished upgrade no longer ships."""

    def __init__(self, kube: Kube, reader: PackageReader) -> None:
        self.kube = kube
        self.reader = reader

    def drop_unshipped(self, pkg: Obj | None, retired: Obj, revisions: list[Obj]) -> int:
        """Release the objects only ``retired`` ships; returns how many were deleted.

        Args:
            pkg: the package (None when gone: nothing is dropped then).
            retired: the revision retired by the switch.
            revisions: every revision of the package, ``retired`` included.
        """
        if pkg is None:
            return 0
        return sum(self.drop_one(ref, pkg, retired) for ref in unshipped(retired, revisions))

    def drop_one(self, ref: Ref, pkg: Obj, retired: Obj) -> int:
        """Release one object; 1 when it was deleted."""
        live = self.kube.get(*ref)
        if live is None:
            return 0
        refs = without_owners(meta(live).get("ownerReferences") or [],
                              {meta(retired)["uid"], meta(pkg)["uid"]})
        if refs:
            self.kube.set_owners(*ref, refs, meta(live)["resourceVersion"])
            return 0
        if ref[:2] == CRD and (count := self.custom_resources(live)):
            self.reader.event(pkg, WARNING, "DropObject",
                       f"CustomResourceDefinition {ref[2]} is no longer shipped but still has "
                       f"{count} custom resource(s): kept; delete them and then the CRD")
            return 0
        self.kube.delete(ref[0], ref[1], ref[2], uid=meta(live)["uid"])
        return 1

    def custom_resources(self, crd: Obj) -> int:
        """How many custom resources of ``crd`` exist, in its first served version."""
        s = spec(crd)
        served = [v["name"] for v in s.get("versions") or [] if v.get("served")]
        if not served:
            return 0
        return len(self.kube.list(f"{s['group']}/{served[0]}", s["names"]["kind"]))
