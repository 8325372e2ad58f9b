"""A cluster's API surface: the custom types it serves, one row per type version.

Plain data in, plain data out: the live CRDs, MRDs and package revisions as the API returns
them become :class:`TypeRow` s (what ``lockwright api list`` prints), and served rows become
the lines of a sum (``lockwright api sum``), which :mod:`lockwright.identity.sums` reads
back and compares.

A type's digest is the :data:`~lockwright.identity.names.TYPE_DIGEST` annotation recorded
at install when there is one (the definition as the package shipped it) and the live object
is still that definition (:mod:`lockwright.identity.edits`). A live object that is not, a
definition edited by hand after its install, is **edited**: its digest is the live
object's, marked :data:`EDITED` (``edited:sha256:...``), and the row keeps the recorded one
beside it. A definition nothing recorded has the live object's digest, marked :data:`LIVE`
(``live:sha256:...``), because the live object carries what the API server defaulted and
so never equals a recorded digest: the kinds must not be mistaken for each other. The controller digest is the revision's
:data:`~lockwright.identity.names.CONTROLLER_DIGEST` (the runtime image it runs), else its
package image digest (``lockwright.dev/digest``): either changes with a release that changes
only the controller.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from lockwright.identity import names
from lockwright.identity.apis import served_types
from lockwright.identity.digest import SHA256, canonical_bytes, type_digest
from lockwright.identity.edits import edited
from lockwright.names import LABEL_PACKAGE, REVISION_KINDS

Obj = dict[str, Any]

#: Marks a digest computed from the live object (nothing recorded it at install).
LIVE = "live:"
#: Marks the live object's digest of a definition edited after its install.
EDITED = "edited:"
#: The controller column of a type no package serves.
NO_CONTROLLER = "-"
ESTABLISHED, ACTIVE, INACTIVE, NOT_ESTABLISHED = (
    "Established", "Active", "Inactive", "not established")
#: The states in which the API server serves the type.
SERVED = (ESTABLISHED, ACTIVE)


@dataclass(frozen=True)
class Owner:
    """The package and revision that control a definition, and its controller digest."""

    package: str = ""  # ``provider/NAME``
    revision: str = ""
    controller: str = ""


@dataclass(frozen=True)
class TypeRow:
    """One served version of one custom type."""

    group: str
    version: str
    kind: str
    plural: str
    digest: str
    state: str
    package: str = ""
    revision: str = ""
    controller: str = ""
    #: Always the digest of the live object (``live:sha256:...``), recorded or not: what
    #: ``api diff`` compares, since it is what the API server serves.
    live: str = ""
    #: The digest the install recorded, "" when none did.
    recorded: str = ""

    @property
    def edited(self) -> bool:
        """Whether the live definition is not the one its install recorded."""
        return self.digest.startswith(EDITED)

    @property
    def key(self) -> str:
        """``group/version Kind``: how a sum names the type version."""
        return f"{self.group}/{self.version} {self.kind}"

    @property
    def served(self) -> bool:
        """Whether the API server serves it now."""
        return self.state in SERVED

    def to_json(self) -> Obj:
        """The row as ``api list -o json`` prints it (``edited`` too)."""
        return {**asdict(self), "edited": self.edited}


def owners(revisions: Iterable[Obj]) -> dict[tuple[str, str], Owner]:
    """Each revision by (kind, name): its package and controller digest."""
    found: dict[tuple[str, str], Owner] = {}
    for rev in revisions:
        meta = rev.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        controller = annotations.get(names.CONTROLLER_DIGEST) or annotations.get(
            names.PACKAGE_DIGEST, "")
        name = str(meta.get("name", ""))
        found[(str(rev.get("kind", "")), name)] = Owner(package_of(rev), name, str(controller))
    return found


def package_of(revision: Obj) -> str:
    """``provider/NAME``: the package label, else the owner reference to the package."""
    meta = revision.get("metadata") or {}
    kind = str(revision.get("kind", ""))
    prefix = kind.removesuffix("Revision").lower() if kind in REVISION_KINDS else ""
    label = str((meta.get("labels") or {}).get(LABEL_PACKAGE, ""))
    owner = next((str(r.get("name", "")) for r in meta.get("ownerReferences") or []
                  if prefix and str(r.get("kind", "")).lower() == prefix), "")
    return f"{prefix}/{label or owner}" if prefix and (label or owner) else ""


def owner_of(definition: Obj, known: dict[tuple[str, str], Owner]) -> Owner:
    """The revision controlling ``definition`` (its controller ownerReference), if any."""
    for ref in (definition.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") in REVISION_KINDS:
            key = (str(ref["kind"]), str(ref.get("name", "")))
            return known.get(key, Owner(revision=key[1]))
    return Owner()


def live_digest(definition: Obj) -> str:
    """The digest of the live object, marked :data:`LIVE`."""
    return LIVE + type_digest(definition)


def established(obj: Obj) -> bool:
    """Whether ``obj``'s ``Established`` condition is True."""
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def _state(crd: Obj | None, mrd: Obj | None) -> str:
    if mrd is not None and (mrd.get("spec") or {}).get("state") != ACTIVE and crd is None:
        return INACTIVE
    if crd is None or not established(crd):
        return NOT_ESTABLISHED
    return ACTIVE if mrd is not None else ESTABLISHED


def _rows(definition: Obj, state: str, owner: Owner) -> list[TypeRow]:
    """The recorded digest, else the live one (computed once: a definition is large)."""
    text = canonical_bytes(definition)
    live = LIVE + SHA256 + hashlib.sha256(text).hexdigest()
    annotations = (definition.get("metadata") or {}).get("annotations") or {}
    recorded = str(annotations.get(names.TYPE_DIGEST) or "")
    digest = recorded or live
    if recorded and edited(definition, recorded, text):
        digest = EDITED + live.removeprefix(LIVE)
    return [TypeRow(t.group, version, t.kind, t.plural, digest, state, owner.package,
                    owner.revision, owner.controller, live, recorded)
            for t in served_types(definition) for version in t.versions]


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def type_rows(crds: Iterable[Obj], mrds: Iterable[Obj],
              revisions: Iterable[Obj]) -> list[TypeRow]:
    """Every custom type version: each CRD's, and each MRD's that has no CRD, sorted.

    A CRD's owner is its controlling revision, else its MRD's (Crossplane's MRD controller
    may be the one that wrote the CRD).
    """
    known = owners(revisions)
    by_crd = {_name(c): c for c in crds}
    by_mrd = {_name(m): m for m in mrds}
    rows: list[TypeRow] = []
    for name in sorted(by_crd.keys() | by_mrd.keys()):
        crd, mrd = by_crd.get(name), by_mrd.get(name)
        owner = owner_of(crd, known) if crd is not None else Owner()
        if not owner.revision and mrd is not None:
            owner = owner_of(mrd, known)
        rows += _rows(crd if crd is not None else mrd or {}, _state(crd, mrd), owner)
    return sorted(rows, key=lambda r: r.key)


def sum_line(row: TypeRow) -> str:
    """``group/version Kind type-digest controller-digest`` (``-``: no package)."""
    return f"{row.key} {row.digest} {row.controller or NO_CONTROLLER}"


def sum_text(rows: Iterable[TypeRow]) -> str:
    """The sum of the served rows: one line each, sorted, a newline after each."""
    return "".join(f"{line}\n" for line in sorted(sum_line(r) for r in rows if r.served))
