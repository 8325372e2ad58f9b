"""The Lock's ``packages[]`` entries (docs/crossplane.md §5, §11) and object-ownership conflicts.

Every function is pure: it takes the Lock as read (with its ``metadata.resourceVersion``)
and returns the Lock to write back by compare-and-swap, or None when nothing changes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from lockwright.errors import InvalidPackage
from lockwright.names import parse_reference

Lock = dict[str, Any]
Entry = dict[str, Any]

LOCK_NAME = "lock"
PKG_API_VERSION = "pkg.crossplane.io/v1"
PACKAGE_KINDS = ("Provider", "Configuration", "Function")
MSG_INVALID_DEPENDENCY = (
    "encountered an invalid dependency: package dependencies must specify either a valid "
    "type, or an explicit apiVersion, kind, and package"
)


@dataclass(frozen=True, order=True)
class ObjectKey:
    """A cluster-scoped object a package wants, by API group, kind and name."""

    group: str
    kind: str
    name: str

    @classmethod
    def of(cls, obj: dict[str, Any]) -> ObjectKey:
        """The key of a manifest (``apiVersion`` ``group/version`` or ``version``)."""
        api_version = str(obj.get("apiVersion", ""))
        group = api_version.rpartition("/")[0]
        return cls(group, str(obj.get("kind", "")), str(obj["metadata"]["name"]))

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f'{kind} "{self.name}"'


@dataclass(frozen=True)
class Owner:
    """Who holds an object: a package (kind and name) through one of its revisions."""

    kind: str
    package: str
    revision: str = ""


@dataclass(frozen=True)
class Conflict:
    """An object this package wants that another package holds."""

    object: ObjectKey
    holder: Owner

    @property
    def message(self) -> str:
        """Which package (and revision) holds which object."""
        via = f" (revision {self.holder.revision})" if self.holder.revision else ""
        return (f"{self.object} is already controlled by {self.holder.kind} "
                f"{self.holder.package}{via}")


def new_lock() -> Lock:
    """The empty singleton Lock ``lock``."""
    return {"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "Lock",
            "metadata": {"name": LOCK_NAME}, "packages": []}


def dependency_from_meta(dep: dict[str, Any]) -> Entry:
    """Turn one ``meta spec.dependsOn`` item into a Lock dependency (docs/crossplane.md §8).

    Raises:
        InvalidPackage: none of the four forms matches.
    """
    constraints = str(dep.get("version", ""))
    if dep.get("apiVersion") and dep.get("kind") and dep.get("package"):
        return {"apiVersion": dep["apiVersion"], "kind": dep["kind"],
                "package": dep["package"], "constraints": constraints}
    for form, type_ in (("configuration", "Configuration"), ("provider", "Provider"),
                        ("function", "Function")):
        if dep.get(form):
            return {"package": dep[form], "type": type_, "constraints": constraints}
    raise InvalidPackage(MSG_INVALID_DEPENDENCY)


def lock_entry(revision: str, kind: str, image: str,
               depends_on: list[dict[str, Any]] | None = None) -> Entry:
    """Build the Lock entry of a revision.

    ``source`` and ``version`` come from the revision's ``spec.image`` exactly as the user
    wrote it. ``type`` is set as v1.x did, beside the newer ``apiVersion``/``kind``.

    Args:
        revision: the revision name (the entry's ``name``).
        kind: the package kind, ``Provider``, ``Configuration`` or ``Function``.
        image: the revision's ``spec.image`` (the original, unrewritten reference).
        depends_on: the package metadata's ``spec.dependsOn``.
    """
    ref = parse_reference(image)
    return {"name": revision, "type": kind, "apiVersion": PKG_API_VERSION, "kind": kind,
            "source": ref.source, "version": ref.version,
            "dependencies": [dependency_from_meta(d) for d in depends_on or []]}


def _entry_kind(entry: Entry) -> str:
    return str(entry.get("kind") or entry.get("type") or "")


def upsert_entry(lock: Lock, entry: Entry) -> Lock | None:
    """Add or refresh ``entry`` in the Lock; None when the Lock already says the same.

    An entry with the same name and kind but another source is replaced (the image moved
    registry); one with a different version or dependencies is updated in place; a
    missing one is appended. Other packages' entries are never touched.
    """
    packages: list[Entry] = list(lock.get("packages") or [])
    same = [i for i, p in enumerate(packages)
            if p.get("name") == entry["name"] and _entry_kind(p) == _entry_kind(entry)]
    if len(same) == 1 and packages[same[0]] == entry:
        return None
    in_place = bool(same) and packages[same[0]].get("source") == entry["source"]
    kept: list[Entry] = []
    for i, p in enumerate(packages):
        if in_place and i == same[0]:
            kept.append(copy.deepcopy(entry))
        elif i not in same:
            kept.append(copy.deepcopy(p))
    if not in_place:
        kept.append(copy.deepcopy(entry))
    return {**copy.deepcopy(lock), "packages": kept}


def remove_entry(lock: Lock, revision: str) -> Lock | None:
    """Remove the entry named ``revision``; None when there is none."""
    packages = lock.get("packages") or []
    if not any(p.get("name") == revision for p in packages):
        return None
    out = copy.deepcopy(lock)
    out["packages"] = [p for p in packages if p.get("name") != revision]
    return out


def find_entry(lock: Lock, revision: str) -> Entry | None:
    """Return the entry named ``revision``, or None."""
    return next((p for p in lock.get("packages") or [] if p.get("name") == revision), None)


def find_conflicts(wanted_objects: list[ObjectKey], existing: dict[ObjectKey, Owner], *,
                   kind: str, package: str) -> list[Conflict]:
    """List the wanted objects already held by another package.

    Args:
        wanted_objects: what the package ``kind``/``package`` is about to establish.
        existing: the current holder of each object that has one.
        kind: the package kind of the would-be owner.
        package: the package name of the would-be owner.

    Returns:
        One conflict per object held by a different package, sorted by object; objects
        held by another revision of the same package are not conflicts (hand-off).
    """
    conflicts = {
        Conflict(key, holder) for key in wanted_objects
        if (holder := existing.get(key)) is not None
        and (holder.kind, holder.package) != (kind, package)
    }
    return sorted(conflicts, key=lambda c: c.object)


def conflicts_message(conflicts: list[Conflict]) -> str:
    """One line naming every conflicting object and its holder."""
    return "; ".join(c.message for c in conflicts)
