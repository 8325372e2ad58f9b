"""Preflight of a CRD upgrade: what a new package may not change in a live CRD.

Checked before establishing writes anything (reference §10 step 14, §18 "CRD storage
versions"). Three changes are refused, each with the fix in its message:

- dropping a version still in the live CRD's ``status.storedVersions``: Kubernetes rejects
  the update (``status.storedVersions[0]: Invalid value: "v1alpha1": must appear in
  spec.versions``) and only a storage migration, outside the package manager, can help;
- changing ``spec.scope``: the API refuses it once the CRD is established;
- no longer serving a version the live CRD serves (dropping it, or ``served: false``):
  Kubernetes allows it, but every client, Composition and controller still using that
  version breaks at once.

Plain data in, findings out; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lockwright.lock import ObjectKey

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


def _versions(crd: Obj) -> dict[str, Obj]:
    versions = (crd.get("spec") or {}).get("versions") or []
    return {str(v.get("name")): v for v in versions if v.get("name")}


def _stored(name: str, desired: dict[str, Obj], live: Obj) -> list[Finding]:
    stored = (live.get("status") or {}).get("storedVersions") or []
    return [Finding(name, v, f"version {v} is still in status.storedVersions but the new "
                    "package drops it",
                    f"run a storage migration to the new storage version and remove {v} "
                    f"from status.storedVersions, or keep {v} in spec.versions")
            for v in map(str, stored) if v not in desired]


def _served(name: str, desired: dict[str, Obj], live: Obj) -> list[Finding]:
    served = [v for v, body in _versions(live).items() if body.get("served")]
    return [Finding(name, v, f"version {v} is served but the new package "
                    + ("drops it" if v not in desired else "sets served: false"),
                    f"keep {v} served")
            for v in served if not (desired.get(v) or {}).get("served")]


def _scope(name: str, desired: Obj, live: Obj) -> list[Finding]:
    new = (desired.get("spec") or {}).get("scope")
    old = (live.get("spec") or {}).get("scope")
    if not new or not old or new == old:
        return []
    return [Finding(name, "", f"scope cannot change from {old} to {new}",
                    "delete the CRD (and its resources) first or keep the scope")]


def check_crd(desired: Obj, live: Obj) -> list[Finding]:
    """What is wrong with replacing the ``live`` CRD by ``desired``.

    Args:
        desired: the CRD as the new package ships it.
        live: the CRD in the cluster, with its ``status.storedVersions``.

    Returns:
        The findings: the scope's, then the stored versions', then the served ones';
        empty when the update is safe.
    """
    name = str((desired.get("metadata") or {}).get("name", ""))
    versions = _versions(desired)
    return (_scope(name, desired, live) + _stored(name, versions, live)
            + _served(name, versions, live))


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
