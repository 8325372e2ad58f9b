"""Two clusters' API surfaces compared type by type, definitions explained field by field.

``lockwright api diff A B`` reads both clusters' rows (:mod:`lockwright.identity.surface`)
and their live CRDs. A type version served by both differs in its ``definition`` when the
live objects' digests differ (what each API server serves), or when both recorded a type
digest at install and those differ; in its ``controller`` when the controller digests
differ. A definition difference is explained with the compatibility verdicts upgrade plans
use (:mod:`lockwright.crdcompat`), reading B's CRD as an upgrade of A's: each change with
its verdict (``breaking`` or ``compatible``), each new field as ``added (compatible)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lockwright.crdcompat import Change, FieldSummary, compare
from lockwright.identity.sums import CONTROLLER, DEFINITION
from lockwright.identity.surface import TypeRow

Obj = dict[str, Any]
ONLY_A, ONLY_B = "only-a", "only-b"
#: How many added, removed or changed paths a definition difference lists per version.
PATHS = 50
BREAKING, COMPATIBLE = "breaking", "compatible"
NO_SCHEMA_CHANGE = ("no schema change (descriptions, names, printer columns or other parts of "
                    "the definition differ)")


@dataclass(frozen=True)
class TypeDiff:
    """How one type version differs between cluster A and cluster B.

    Attributes:
        how: ``definition``, ``controller``, ``only-a`` or ``only-b``.
        a, b: the digests (or packages) compared, for people.
        verdict: for a definition, ``breaking`` or ``compatible`` (B's read as an upgrade
            of A's), empty otherwise.
        fields: for a definition, one line per field: ``path: what (verdict)``.
    """

    key: str
    how: str
    a: str = ""
    b: str = ""
    verdict: str = ""
    fields: list[str] = field(default_factory=list)


def _crd_name(row: TypeRow) -> str:
    return f"{row.plural}.{row.group}"


def diff(rows_a: Iterable[TypeRow], rows_b: Iterable[TypeRow],
         crds_a: Mapping[str, Obj], crds_b: Mapping[str, Obj]) -> list[TypeDiff]:
    """Each served type version that differs, sorted by key then how.

    Args:
        rows_a, rows_b: each cluster's rows (only served ones are compared).
        crds_a, crds_b: each cluster's live CRDs by name, to explain definitions.
    """
    a = {r.key: r for r in rows_a if r.served}
    b = {r.key: r for r in rows_b if r.served}
    found: list[TypeDiff] = []
    for key in sorted(a.keys() | b.keys()):
        left, right = a.get(key), b.get(key)
        if left is None or right is None:
            found.append(TypeDiff(key, ONLY_B if left is None else ONLY_A))
            continue
        if definition_differs(left, right):
            found.append(explain(left, right, crds_a.get(_crd_name(left)) or {},
                                 crds_b.get(_crd_name(right)) or {}))
        if left.controller != right.controller:
            found.append(TypeDiff(key, CONTROLLER, _controller(left), _controller(right)))
    return found


def definition_differs(a: TypeRow, b: TypeRow) -> bool:
    """Whether the two served definitions differ (see the module)."""
    recorded = bool(a.recorded) and bool(b.recorded)
    return a.live != b.live or (recorded and a.recorded != b.recorded)


def _controller(row: TypeRow) -> str:
    return f"{row.controller or '-'} ({row.package or 'no package'})"


def explain(a: TypeRow, b: TypeRow, crd_a: Obj, crd_b: Obj) -> TypeDiff:
    """The definition difference of one type version, field by field."""
    verdict = compare(crd_a, crd_b, limit=PATHS)
    changes = [c for c in verdict.changes if _about(c.version, a.version)]
    summaries = [s for s in verdict.fields if s.version == a.version]
    lines = [change_line(c) for c in changes] + [
        line for s in summaries for line in summary_lines(s, changes)]
    breaking = any(c.blocking for c in changes)
    return TypeDiff(a.key, DEFINITION, a.digest, b.digest,
                    BREAKING if breaking else COMPATIBLE, lines or [NO_SCHEMA_CHANGE])


def _about(change_version: str, version: str) -> bool:
    return not change_version or version in change_version.split(" -> ")


def _path(path: str) -> str:
    return path.lstrip(".") or "(the whole version)"


def change_line(change: Change) -> str:
    """``spec.x: type-changed (breaking): string -> integer``."""
    verdict = BREAKING if change.blocking else COMPATIBLE
    where = _path(change.path) if change.path or change.version else "(the whole definition)"
    return f"{where}: {change.kind} ({verdict}): {change.detail}"


def summary_lines(summary: FieldSummary, changes: list[Change]) -> list[str]:
    """Added fields (compatible; a new required one is a change already listed). A version
    added or removed is a type version only one cluster serves, listed as such."""
    listed = {_path(c.path) for c in changes}
    if summary.status != "changed":
        return []
    return [f"{_path(p)}: added ({COMPATIBLE})" for p in summary.first_added
            if _path(p) not in listed]
