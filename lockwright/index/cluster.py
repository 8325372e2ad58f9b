"""Whether a cluster already serves an API (``install --api``'s first question): pure.

A CRD serving it means it is served (by the package whose revision owns the CRD, if any).
Without one, an MRD of that type decides: Active means it is served, or about to be, as
its revision establishes the CRD; Inactive means it is one activation away, which
``install --api`` makes as an activation policy would (the MRD's ``spec.state``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lockwright.identity.apis import ApiRef, served_types
from lockwright.managed.convert import mrd_active
from lockwright.names import REVISION_KINDS

Obj = dict[str, Any]
SERVED, INACTIVE = "served", "inactive"


@dataclass(frozen=True)
class InCluster:
    """What serves the API in the cluster: a CRD (``served``) or an Inactive MRD."""

    state: str
    definition: str  # the CRD's or MRD's name (plural.group)
    revision: tuple[str, str] | None = None  # (kind, name) of the owning revision


def serving_definition(api: ApiRef, definitions: Iterable[Obj]) -> Obj | None:
    """The first of ``definitions`` (CRDs or MRDs) serving ``api``."""
    return next((d for d in definitions if any(t.serves(api) for t in served_types(d))), None)


def in_cluster(api: ApiRef, crds: Iterable[Obj], mrds: Iterable[Obj]) -> InCluster | None:
    """Whether and how the cluster serves ``api``, from its CRDs and MRDs."""
    if (crd := serving_definition(api, crds)) is not None:
        return InCluster(SERVED, _name(crd), owner_revision(crd))
    mrd = serving_definition(api, mrds)
    if mrd is None:
        return None
    state = SERVED if mrd_active(mrd) else INACTIVE
    return InCluster(state, _name(mrd), owner_revision(mrd))


def owner_revision(obj: Obj) -> tuple[str, str] | None:
    """The package revision owning ``obj``: its controller first, else any owner."""
    refs = [r for r in (obj.get("metadata") or {}).get("ownerReferences") or []
            if r.get("kind") in REVISION_KINDS]
    chosen = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return (str(chosen["kind"]), str(chosen.get("name", ""))) if chosen else None


def definition_name(api: ApiRef) -> str:
    """The CRD name of a plural-form API (``plural.group``); "" for a kind form, which
    only a list of the definitions can answer."""
    return "" if api.is_kind else f"{api.name.lower()}.{api.group}"


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))
