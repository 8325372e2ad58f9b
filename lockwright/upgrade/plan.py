"""Upgrade plans: what switching a package to a new revision will change, and whether it
may happen on its own.

Plain data in, a `Plan` out; no I/O. The ``plan_revision`` activity streams both
packages' documents into fingerprints (`fingerprint`), reads only the CRDs that changed,
checks the custom resources those CRDs already hold, and hands everything to `assemble`.
A plan is a summary: counts and the first few names of each list, never package
contents, so the plan of a 2,000-CRD provider stays far inside Temporal's payload limits.

A plan is breaking when it has a breaking change: a blocking CRD change, as
:mod:`lockwright.crdcompat` classifies it, or a custom resource the new schema would
reject or that cannot be checked. Whether a breaking plan holds its upgrade is the
upgrade gate's call (:mod:`lockwright.upgrade.gate`); `blocks` is the strict gate of runs
started before there was a choice.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from lockwright.crdcompat import Verdict
from lockwright.crvalidate import Validation
from lockwright.objects.lock import ObjectKey
from lockwright.xpkg.meta import parse_meta

Obj = dict[str, Any]
#: Names listed per list of a plan, and CRD verdicts kept in full.
LIMIT = 10
CRD_LIMIT = 20
#: Breaking changes spelled out (the count is always whole).
BREAKING_LIMIT = 50
#: The package annotation that accepts one revision's breaking plan.
ACCEPT_PLAN_ANNOTATION = "lockwright.io/accept-plan"
PLAN_CONDITION = "PlanCompatible"


@dataclass(frozen=True)
class Rejected:
    """Custom resources of one CRD version the new schema would reject.

    Attributes:
        crd: the CRD's name.
        version: the version they were read and checked at.
        count: how many would be rejected (or could not be checked).
        first: the first few, ``namespace/name`` or ``name``.
        field: the first one's offending field path.
        reason: why, for the first one.
        kind: their kind ("" in plans made before it was recorded).
    """

    crd: str
    version: str
    count: int
    first: list[str] = field(default_factory=list)
    field: str = ""
    reason: str = ""
    kind: str = ""

    @property
    def message(self) -> str:
        """One line for a condition or an Event: which resources, which field, why."""
        names = ", ".join(self.first) + (" and more" if self.count > len(self.first) else "")
        what = (f"{self.kind} ({self.crd} {self.version})" if self.kind
                else f"{self.crd} ({self.version})")
        return (f"{self.count} existing {what} would be rejected: "
                f"{names}: {self.field}: {self.reason}")


@dataclass
class Tally:
    """Custom resources of one CRD version checked one by one: the rejected ones.

    One that cannot be checked here (a CEL rule) counts as rejected: the check fails
    closed. ``seen`` counts every resource checked, rejected or not.
    """

    seen: int = 0
    count: int = 0
    first: list[str] = field(default_factory=list)
    field: str = ""
    reason: str = ""

    def add(self, name: str, validation: Validation, lost: list[str]) -> None:
        """Count ``name`` if ``validation`` does not pass or it has a value at a field the
        new schema removes (``lost``: the server would prune it)."""
        self.seen += 1
        if validation.ok and not lost:
            return
        self.count += 1
        self.first += [name] if len(self.first) < LIMIT else []
        if self.field:
            return
        if lost:
            self.field, self.reason = lost[0], "removed from the schema: its value would be lost"
            return
        found = (validation.violations or validation.unchecked)[0]
        self.field = found.path
        self.reason = found.reason if validation.violations else (
            f"cannot be checked before the upgrade ({found.reason})")

    def rejected(self, crd: str, version: str, kind: str = "") -> Rejected | None:
        """What the tally found, or None when every resource passed."""
        if not self.count:
            return None
        return Rejected(crd, version, self.count, self.first, self.field, self.reason, kind)


def has_path(obj: Any, path: str) -> bool:
    """Whether ``obj`` has a value at ``path`` (``.a.b``, ``[*]`` any item, ``.*`` any
    value of a map), as :mod:`lockwright.crdcompat` writes field paths."""
    tokens = _TOKEN.findall(path)
    return _has(obj, [t or "[*]" for t in tokens])


_TOKEN = re.compile(r"\.([^.\[]+)|\[\*\]")


def _has(obj: Any, tokens: list[str]) -> bool:
    if not tokens:
        return obj is not None
    head, rest = tokens[0], tokens[1:]
    if head == "[*]":
        return isinstance(obj, list) and any(_has(x, rest) for x in obj)
    if not isinstance(obj, dict):
        return False
    if head == "*":
        return any(_has(x, rest) for x in obj.values())
    return head in obj and _has(obj[head], rest)


def removed_paths(verdict: Verdict, version: str) -> list[str]:
    """The fields of ``version`` the new CRD no longer has."""
    return [ch.path for ch in verdict.changes
            if ch.version == version and ch.kind == "property-removed"]


@dataclass(frozen=True)
class Plan:
    """What switching to ``revision`` changes against ``against``, the active revision.

    Objects are named ``Kind name``. ``crds`` keeps the first `CRD_LIMIT` CRD verdicts
    (blocking first), ``breaking`` the first `BREAKING_LIMIT` breaking changes as
    sentences; ``breaking_count`` counts them all. ``held`` (first `BREAKING_LIMIT`) and
    ``held_count`` are the breaking changes the live resources do not clear, as
    :func:`lockwright.upgrade.gate.weigh` finds them; ``weighed`` says it did (plans made
    before it did not, and the evidence gate treats them as strict).
    """

    revision: str = ""
    against: str = ""
    added: int = 0
    changed: int = 0
    removed: int = 0
    first_added: list[str] = field(default_factory=list)
    first_changed: list[str] = field(default_factory=list)
    first_removed: list[str] = field(default_factory=list)
    crds: list[Verdict] = field(default_factory=list)
    rbac_added: list[str] = field(default_factory=list)
    rbac_removed: list[str] = field(default_factory=list)
    runtime: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    breaking: list[str] = field(default_factory=list)
    breaking_count: int = 0
    held: list[str] = field(default_factory=list)
    held_count: int = 0
    weighed: bool = False
    # Changed definitions whose MRD is Inactive: no CRD is served, so no resource to check.
    inactive: list[str] = field(default_factory=list)

    @property
    def compatible(self) -> bool:
        """True when nothing in the plan breaks."""
        return self.breaking_count == 0

    def summary(self) -> str:
        """The counts, for a condition and the CLI's first line."""
        parts = [f"{self.added} added, {self.changed} changed, {self.removed} removed"]
        parts += [f"dependencies: {'; '.join(self.dependencies)}"] if self.dependencies else []
        parts += [f"runtime: {'; '.join(self.runtime)}"] if self.runtime else []
        parts += [(f"{len(self.inactive)} changed definition(s) of inactive "
                   "ManagedResourceDefinitions: no resources to check")] if self.inactive else []
        if self.compatible:
            return f"Compatible with {self.against}: " + "; ".join(parts)
        return (f"{self.breaking_count} breaking change(s) against {self.against}: "
                + "; ".join(self.breaking) + ". " + "; ".join(parts))


@dataclass(frozen=True)
class Side:
    """One package's objects as a plan compares them.

    Attributes:
        prints: a fingerprint per object, by key.
        meta: the package's meta document (``crossplane.yaml``), or empty.
    """

    prints: dict[ObjectKey, bytes] = field(default_factory=dict)
    meta: Obj = field(default_factory=dict)


def fingerprint(obj: Obj) -> bytes:
    """A short digest of an object's content, key order aside."""
    return hashlib.blake2b(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS),
                           digest_size=16).digest()


def label(key: ObjectKey) -> str:
    """``Kind name``: package objects are cluster-scoped."""
    return f"{key.kind} {key.name}"


def object_changes(old: Mapping[ObjectKey, bytes], new: Mapping[ObjectKey, bytes]
                   ) -> tuple[list[ObjectKey], list[ObjectKey], list[ObjectKey]]:
    """``(added, changed, removed)``, each sorted."""
    added = sorted(k for k in new if k not in old)
    changed = sorted(k for k in new if k in old and old[k] != new[k])
    return added, changed, sorted(k for k in old if k not in new)


def is_crd(key: ObjectKey) -> bool:
    """Whether ``key`` names a CustomResourceDefinition."""
    return (key.group, key.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition")


def crd_resources(keys: Iterable[ObjectKey]) -> set[str]:
    """``plural.group`` of each CRD: what the runtime's ClusterRole grants."""
    return {k.name for k in keys if is_crd(k)}


def rbac_changes(old: Side, new: Side) -> tuple[list[str], list[str]]:
    """Rules the runtime gains and loses: its CRDs' resources and its permission requests."""
    before = {f"{r}: *" for r in crd_resources(old.prints)} | _requests(old.meta)
    after = {f"{r}: *" for r in crd_resources(new.prints)} | _requests(new.meta)
    return sorted(after - before), sorted(before - after)


def _requests(meta: Obj) -> set[str]:
    """``permissionRequests`` as ``resources.group: verbs`` lines."""
    rules = ((meta.get("spec") or {}).get("controller") or {}).get("permissionRequests") or []
    return {f"{','.join(r.get('resources') or [])}.{','.join(r.get('apiGroups') or [])}: "
            f"{','.join(r.get('verbs') or [])}" for r in rules}


def runtime_changes(old: Obj, new: Obj, sources: tuple[str, str]) -> list[str]:
    """The runtime's image: the package's, or the meta's ``spec.controller.image``."""
    before = _controller_image(old) or sources[0]
    after = _controller_image(new) or sources[1]
    return [] if before == after else [f"image {before} → {after}"]


def _controller_image(meta: Obj) -> str:
    return str(((meta.get("spec") or {}).get("controller") or {}).get("image") or "")


def dependency_changes(old: Obj, new: Obj, locked: Mapping[str, str]) -> list[str]:
    """Dependencies the new revision would install, move or drop.

    Args:
        locked: the version each package source holds in the Lock now.
    """
    before, after = _depends_on(old), _depends_on(new)
    out = []
    for package, constraint in sorted(after.items()):
        if package not in locked:
            out.append(f"install {package} ({constraint})")
        elif before.get(package) != constraint:
            out.append(f"move {package} {before.get(package) or locked[package]} → "
                       f"{constraint}")
    return out + [f"no longer needs {p}" for p in sorted(before) if p not in after]


def _depends_on(meta: Obj) -> dict[str, str]:
    """Each dependency's package and constraint, as the package's meta declares them."""
    if not meta:
        return {}
    return {d.package: d.constraint for d in parse_meta(meta).depends_on}


def assemble(revision: str, against: str, sides: tuple[Side, Side], sources: tuple[str, str],
             verdicts: list[Verdict], rejected: list[Rejected],
             locked: Mapping[str, str]) -> Plan:
    """The plan, from both sides, the changed CRDs' verdicts and the rejected resources."""
    old, new = sides
    added, changed, removed = object_changes(old.prints, new.prints)
    rbac_added, rbac_removed = rbac_changes(old, new)
    breaking = [c.message for v in verdicts for c in v.blockers()] + \
        [r.message for r in rejected]
    verdicts = sorted(verdicts, key=lambda v: (not v.blocking, v.crd))
    return Plan(revision=revision, against=against, added=len(added), changed=len(changed),
                removed=len(removed), first_added=[label(k) for k in added[:LIMIT]],
                first_changed=[label(k) for k in changed[:LIMIT]],
                first_removed=[label(k) for k in removed[:LIMIT]],
                crds=verdicts[:CRD_LIMIT], rbac_added=rbac_added[:LIMIT],
                rbac_removed=rbac_removed[:LIMIT],
                runtime=runtime_changes(old.meta, new.meta, sources),
                dependencies=dependency_changes(old.meta, new.meta, locked),
                rejected=rejected, breaking=breaking[:BREAKING_LIMIT],
                breaking_count=len(breaking))


def refused_by_pin(plan: Plan, refusal: str) -> Plan:
    """``plan`` with the package's API pin refusing its revision (``refusal``, the words an
    install would fail with; "": no refusal, the plan unchanged).

    The refusal comes first among the breaking changes and is held whatever the evidence:
    the install refuses the revision before any gate or accepted plan is consulted.
    """
    if not refusal:
        return plan
    return replace(plan, breaking=[refusal, *plan.breaking][:BREAKING_LIMIT],
                   breaking_count=plan.breaking_count + 1,
                   held=[refusal, *plan.held][:BREAKING_LIMIT], held_count=plan.held_count + 1)


def blocks(plan: Plan | None, accepted: str) -> bool:
    """Whether ``plan`` holds the switch to its revision: breaking and not accepted.

    Args:
        accepted: the revision whose plan an operator accepted (annotation or update);
            accepting one revision never accepts another.
    """
    return plan is not None and not plan.compatible and accepted != plan.revision
