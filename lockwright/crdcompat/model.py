"""The data a CRD compatibility check returns: plain frozen dataclasses.

Everything here is JSON-shaped (str, int, bool, lists of dataclasses), so a verdict travels
in a Temporal payload as it is (``dataclasses.asdict`` or :meth:`Verdict.to_dict`) and
comes back with :meth:`Verdict.from_dict`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """What changed. A ``str``: ``Kind.TYPE_CHANGED == "type-changed"``."""

    SCOPE_CHANGED = "scope-changed"
    STORED_VERSION_REMOVED = "stored-version-removed"
    SERVED_VERSION_REMOVED = "served-version-removed"
    PROPERTY_REMOVED = "property-removed"
    REQUIRED_ADDED = "required-added"
    REQUIRED_REMOVED = "required-removed"
    TYPE_CHANGED = "type-changed"
    DEFAULT_ADDED = "default-added"
    DEFAULT_CHANGED = "default-changed"
    DEFAULT_REMOVED = "default-removed"
    ENUM_ADDED = "enum-added"
    ENUM_REMOVED = "enum-removed"
    ENUM_VALUE_ADDED = "enum-value-added"
    ENUM_VALUE_REMOVED = "enum-value-removed"
    BOUND_TIGHTENED = "bound-tightened"
    BOUND_LOOSENED = "bound-loosened"
    PATTERN_CHANGED = "pattern-changed"
    PATTERN_REMOVED = "pattern-removed"
    FORMAT_CHANGED = "format-changed"
    FORMAT_REMOVED = "format-removed"
    NULLABLE_ADDED = "nullable-added"
    NULLABLE_REMOVED = "nullable-removed"
    VALIDATION_RULES_CHANGED = "validation-rules-changed"
    VALIDATION_RULES_REMOVED = "validation-rules-removed"
    LIST_TYPE_TIGHTENED = "list-type-tightened"
    LIST_TYPE_LOOSENED = "list-type-loosened"
    LIST_MAP_KEYS_CHANGED = "list-map-keys-changed"
    LIST_MAP_KEYS_ADDED = "list-map-keys-added"
    MAP_TYPE_CHANGED = "map-type-changed"
    PRESERVE_UNKNOWN_ADDED = "preserve-unknown-fields-added"
    PRESERVE_UNKNOWN_REMOVED = "preserve-unknown-fields-removed"
    UNKNOWN = "unknown"


#: The kinds that block an upgrade: each may make an existing resource or client invalid.
BLOCKING: frozenset[str] = frozenset({
    Kind.SCOPE_CHANGED, Kind.STORED_VERSION_REMOVED, Kind.SERVED_VERSION_REMOVED,
    Kind.PROPERTY_REMOVED, Kind.REQUIRED_ADDED, Kind.TYPE_CHANGED, Kind.DEFAULT_ADDED,
    Kind.DEFAULT_CHANGED, Kind.DEFAULT_REMOVED, Kind.ENUM_ADDED, Kind.ENUM_VALUE_REMOVED,
    Kind.BOUND_TIGHTENED, Kind.PATTERN_CHANGED, Kind.FORMAT_CHANGED, Kind.NULLABLE_REMOVED,
    Kind.VALIDATION_RULES_CHANGED, Kind.LIST_TYPE_TIGHTENED, Kind.LIST_MAP_KEYS_CHANGED,
    Kind.PRESERVE_UNKNOWN_REMOVED, Kind.UNKNOWN,
})


@dataclass(frozen=True)
class Change:
    """One classified difference between the old and the new CRD.

    Attributes:
        crd: the CRD's name, such as ``objects.kubernetes.crossplane.io``.
        version: the version (``v1``); ``v1alpha1 -> v1`` for a difference between two
            served versions of the new CRD; empty for the whole CRD (scope).
        path: the field, ``.spec.forProvider.region`` (``[*]`` an array's items, ``.*``
            a map's values); empty for the whole CRD or version, ``.`` for the root.
        kind: a :class:`Kind` value.
        blocking: whether the change blocks the upgrade (``kind in BLOCKING``).
        detail: what changed, for people.
        fix: what would let the upgrade through, for people; empty when nothing blocks.
    """

    crd: str
    version: str
    path: str
    kind: str
    blocking: bool
    detail: str
    fix: str = ""

    @property
    def message(self) -> str:
        """``CustomResourceDefinition <crd> version <v> field <path>: <detail>; <fix>``."""
        where = "".join((f" version {self.version}" if self.version else "",
                         f" field {self.path}" if self.path else ""))
        fix = f"; {self.fix}" if self.fix else ""
        return f"CustomResourceDefinition {self.crd}{where}: {self.detail}{fix}"


@dataclass(frozen=True)
class FieldSummary:
    """The fields of one version that a plan shows: counts and the first few paths.

    A subtree added or removed counts once, by its top field. ``changed`` counts the
    fields whose own schema changed in a way a :class:`Change` reports (descriptions
    alone do not count).

    Attributes:
        version: the version's name.
        status: ``changed``, or ``added``/``removed`` for a whole version (counts 0).
    """

    version: str
    status: str = "changed"
    added: int = 0
    removed: int = 0
    changed: int = 0
    first_added: list[str] = field(default_factory=list)
    first_removed: list[str] = field(default_factory=list)
    first_changed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    """The compatibility of one CRD's upgrade: every change found and the field summary."""

    crd: str
    changes: list[Change] = field(default_factory=list)
    fields: list[FieldSummary] = field(default_factory=list)

    @property
    def blocking(self) -> bool:
        """True when any change blocks the upgrade."""
        return any(c.blocking for c in self.changes)

    def blockers(self) -> list[Change]:
        """The blocking changes, in order."""
        return [c for c in self.changes if c.blocking]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-shaped data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """The inverse of :meth:`to_dict`."""
        return cls(crd=data["crd"], changes=[Change(**c) for c in data.get("changes", [])],
                   fields=[FieldSummary(**f) for f in data.get("fields", [])])


@dataclass(frozen=True)
class Report:
    """The CRDs of two packages compared.

    Attributes:
        verdicts: one per CRD in both whose comparison found something, by name.
        added: CRDs only the new package has, by name.
        removed: CRDs only the old package has, by name.
        unchanged: CRDs in both with nothing to report (identical, or descriptions only).
    """

    verdicts: list[Verdict] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0

    @property
    def blocking(self) -> bool:
        """True when any CRD's upgrade is blocked."""
        return any(v.blocking for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-shaped data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """The inverse of :meth:`to_dict`."""
        return cls(verdicts=[Verdict.from_dict(v) for v in data.get("verdicts", [])],
                   added=list(data.get("added", [])), removed=list(data.get("removed", [])),
                   unchanged=int(data.get("unchanged", 0)))
