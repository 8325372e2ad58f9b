"""Preflight of a CRD upgrade: what a new package may not change in a live CRD.

Checked before establishing writes anything (docs/crossplane.md §10 step 14, §18 "CRD storage
versions"). Three changes are refused, each with the fix in its message:

- dropping a version still in the live CRD's ``status.storedVersions``: Kubernetes rejects
  the update (``status.storedVersions[0]: Invalid value: "v1alpha1": must appear in
  spec.versions``) and only a storage migration, outside the package manager, can help;
- changing ``spec.scope``: the API refuses it once the CRD is established;
- no longer serving a version the live CRD serves (dropping it, or ``served: false``):
  Kubernetes allows it, but every client, Composition and controller still using that
  version breaks at once.

The checks themselves are ``lockwright.crdcompat``'s CRD-wide ones (which go on to the
schema changes a plan shows); this module keeps the preflight's shape. Plain data in,
findings out; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lockwright import crdcompat
from lockwright.objects.lock import ObjectKey

Obj = dict[str, Any]

CRD_GROUP, CRD_KIND = "apiextensions.k8s.io", "CustomResourceDefinition"


@dataclass(frozen=True)
class Finding:
    """One change a new CRD may not make to the live one.

    Attributes:
        crd: the CRD's name, such as ``widgets.example.org``.
        version: the version concerned; empty when the finding is about the whole CRD.
        problem: what the new package changes.
        fix: what would let the package through.
    """

    crd: str
    version: str
    problem: str
    fix: str

    @property
    def message(self) -> str:
        """``CustomResourceDefinition <name>: <problem>; <fix>``."""
        return f"{CRD_KIND} {self.crd}: {self.problem}; {self.fix}"


def is_crd(obj: Obj) -> bool:
    """True for an ``apiextensions.k8s.io`` CustomResourceDefinition."""
    return obj.get("kind") == CRD_KIND and ObjectKey.of(obj).group == CRD_GROUP


def check_crd(desired: Obj, live: Obj) -> list[Finding]:
    """What is wrong with replacing the ``live`` CRD by ``desired``.

    Args:
        desired: the CRD as the new package ships it.
        live: the CRD in the cluster, with its ``status.storedVersions``.

    Returns:
        The findings: the scope's, then the stored versions', then the served ones';
        empty when the update is safe.
    """
    return [Finding(c.crd, c.version, c.detail, c.fix)
            for c in crdcompat.crd_changes(live, desired)]


def preflight(objects: Iterable[Obj], live: Mapping[ObjectKey, Obj]) -> list[Finding]:
    """Check every CRD among ``objects`` that exists in ``live``; others pass.

    Args:
        objects: the objects a package ships (anything that is not a CRD is ignored).
        live: the live objects by key; a CRD missing from it is a plain create.

    Returns:
        Every finding, in :func:`ordered` order.
    """
    return ordered([f for obj in objects if is_crd(obj) and ObjectKey.of(obj) in live
                    for f in check_crd(obj, live[ObjectKey.of(obj)])])


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Sorted by CRD and version (scope first); one version's findings keep their order."""
    return sorted(findings, key=lambda f: (f.crd, f.version))
