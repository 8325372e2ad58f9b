"""From a Provider's CRDs to ManagedResourceDefinitions.

As Crossplane v2's package manager (``internal/converter/custom_to_managed.go``): every CRD
of a Provider becomes an MRD (``apiextensions.crossplane.io/v1alpha1``) with the CRD's
metadata and spec, except the provider-config kinds, which stay CRDs. MRDs are ``Active``
unless the package declares the ``safe-start`` capability (spelled in any case, with or
without separators). A CRD whose shape cannot be read as an MRD spec fails the conversion
of the whole package, which then installs its CRDs as they are (with a Warning Event,
``ConvertCRDToMRD``).

Where lockwright differs: an MRD that is Active, or will be, is established together with
its CRD, both controlled by the revision (Crossplane's MRD controller applies the CRD
later), so upgrades, plans, deletion and the Lock treat the CRD as before. And an MRD the
activation policies in force already name is established Active in the install's first
pass, rather than Inactive and then activated (issue 33).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lockwright.xpkg.meta import capability_matches

Obj = dict[str, Any]

CRD_API_VERSION, CRD_KIND = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
MRD_API_VERSION, MRD_KIND = "apiextensions.crossplane.io/v1alpha1", "ManagedResourceDefinition"
#: Where MRDs are listed.
MRD_PATH = f"/apis/{MRD_API_VERSION}/managedresourcedefinitions"
MRAP_KIND = "ManagedResourceActivationPolicy"
ACTIVE, INACTIVE = "Active", "Inactive"
SAFE_START = "safe-start"
#: Kinds that stay CRDs: they configure the provider, they are not managed resources.
EXEMPT_KINDS = frozenset({"ProviderConfig", "ClusterProviderConfig", "ProviderConfigUsage",
                          "ClusterProviderConfigUsage"})
#: Event reason of a conversion that failed (the package installs its CRDs unconverted).
REASON_CONVERT = "ConvertCRDToMRD"


class ConversionError(ValueError):
    """A CRD that cannot be read as an MRD spec (the package keeps plain CRDs)."""


def safe_start(capabilities: Iterable[str]) -> bool:
    """Whether the package declares the ``safe-start`` capability (fuzzy, as Crossplane)."""
    return any(capability_matches(c, SAFE_START) for c in capabilities)


def awaiting_activation(capabilities: Iterable[str], definitions: int, active: int) -> bool:
    """Whether a safe-start provider's runtime waits at zero replicas: it has MRDs and none
    of them is Active (Crossplane's runtime reconciler)."""
    return safe_start(capabilities) and definitions > 0 and active == 0


def is_crd(obj: Obj) -> bool:
    """Whether ``obj`` is a CustomResourceDefinition."""
    return obj.get("apiVersion") == CRD_API_VERSION and obj.get("kind") == CRD_KIND


def converts(crd: Obj) -> bool:
    """Whether this CRD becomes an MRD: every kind but the provider-config ones (a CRD
    whose kind cannot be read counts as a managed resource, as in Crossplane)."""
    kind = ((crd.get("spec") or {}).get("names") or {}).get("kind") if _is_map(
        crd.get("spec")) else None
    return not (isinstance(kind, str) and kind in EXEMPT_KINDS)


def check(crd: Obj) -> None:
    """Raise :class:`ConversionError` when the CRD's spec cannot be an MRD's spec.

    Raises:
        ConversionError: names the CRD and the field of the wrong shape.
    """
    name = (crd.get("metadata") or {}).get("name", "?")
    problem = _shape_problem(crd.get("spec"))
    if problem:
        raise ConversionError(f"CustomResourceDefinition {name}: {problem}")


def to_mrd(crd: Obj, active: bool) -> Obj:
    """The MRD of a (checked) CRD: its metadata and spec, ``state`` set."""
    return {"apiVersion": MRD_API_VERSION, "kind": MRD_KIND,
            "metadata": dict(crd.get("metadata") or {}),
            "spec": {**(crd.get("spec") or {}), "state": ACTIVE if active else INACTIVE}}


def mrd_active(mrd: Obj | None) -> bool:
    """Whether an MRD (live or desired) is Active."""
    return bool(mrd) and ((mrd or {}).get("spec") or {}).get("state") == ACTIVE


@dataclass(frozen=True)
class Conversion:
    """How one revision's CRDs are established: as MRDs, Active by default or not, and
    which are Active (live MRDs, types served before this revision, and those the
    activation policies in force name); ``activated``: (MRD, policy) for each of the last
    that is not Active yet, so the install says which policy made it Active."""

    default_active: bool
    active: frozenset[str] = frozenset()
    activated: tuple[tuple[str, str], ...] = ()

    def objects(self, obj: Obj) -> list[Obj]:
        """What to establish for one shipped object: itself; or its MRD, and its CRD too
        while the MRD is Active."""
        if not is_crd(obj) or not converts(obj):
            return [obj]
        active = self.default_active or (obj.get("metadata") or {}).get("name") in self.active
        return [to_mrd(obj, active), obj] if active else [to_mrd(obj, False)]


def reserved(refs: list[dict[str, str]]) -> list[dict[str, str]]:
    """A revision's ``status.objectRefs`` with the CRD of each of its MRDs, whether it
    exists yet or not (an Inactive MRD's CRD name is the revision's all the same), so
    what the revision holds does not depend on what has been activated (unsorted)."""
    out = {(r["apiVersion"], r["kind"], r["name"]): r for r in refs}
    for ref in refs:
        if ref.get("kind") == MRD_KIND:
            out.setdefault((CRD_API_VERSION, CRD_KIND, ref["name"]), {
                "apiVersion": CRD_API_VERSION, "kind": CRD_KIND, "name": ref["name"]})
    return list(out.values())


def _is_map(value: Any) -> bool:
    return isinstance(value, dict)


_STRINGS = ("group", "scope")
_NAME_STRINGS = ("kind", "plural", "singular", "listKind")
_NAME_LISTS = ("shortNames", "categories")


def _shape_problem(spec: Any) -> str:
    """The first field of ``spec`` whose type an MRD spec cannot hold, or ""."""
    if not _is_map(spec):
        return "spec is not an object"
    for key in _STRINGS:
        if key in spec and not isinstance(spec[key], str):
            return f"spec.{key} is not a string"
    names = spec.get("names", {})
    if not _is_map(names):
        return "spec.names is not an object"
    for key in _NAME_STRINGS:
        if key in names and not isinstance(names[key], str):
            return f"spec.names.{key} is not a string"
    for key in _NAME_LISTS:
        if key in names and not _strings(names[key]):
            return f"spec.names.{key} is not a list of strings"
    return _versions_problem(spec.get("versions", []), spec)


def _versions_problem(versions: Any, spec: Obj) -> str:
    if not isinstance(versions, list) or not all(_is_map(v) for v in versions):
        return "spec.versions is not a list of objects"
    for i, version in enumerate(versions):
        if not isinstance(version.get("name", ""), str):
            return f"spec.versions[{i}].name is not a string"
        for flag in ("served", "storage"):
            if flag in version and not isinstance(version[flag], bool):
                return f"spec.versions[{i}].{flag} is not a boolean"
    if "conversion" in spec and not _is_map(spec["conversion"]):
        return "spec.conversion is not an object"
    if "preserveUnknownFields" in spec and not isinstance(spec["preserveUnknownFields"], bool):
        return "spec.preserveUnknownFields is not a boolean"
    return ""


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
