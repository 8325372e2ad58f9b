"""Claims: which objects a revision holds, and whether the Lock lets it take them.

The Lock's ``packages[]`` schema (Crossplane's) has no room for objects, so a revision's
claim is its ``status.objectRefs``, counted only while the revision has a Lock entry. These
are the pure decisions ``take_lock`` makes on the claims it has read: which entries it
still has to read, who holds what it wants, and the Lock to write when nobody does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lockwright.names import LABEL_PACKAGE
from lockwright.objects import lock as lk
from lockwright.objects.establish import establishable, object_ref, sort_object_refs
from lockwright.objects.webhooks import inject_webhooks

if TYPE_CHECKING:
    from lockwright.xpkg.meta import Dependency
    from lockwright.xpkg.parse import PackageSummary

Obj = dict[str, Any]
#: Who holds a revision's objects (None: nobody, it has no package), and which they are.
Claim = tuple[lk.Owner | None, frozenset[lk.ObjectKey]]
UNCLAIMED: Claim = (None, frozenset())


def keys_of(refs: Iterable[Obj]) -> frozenset[lk.ObjectKey]:
    """ObjectKeys of TypedReferences (``status.objectRefs`` items)."""
    return frozenset(lk.ObjectKey.of({"apiVersion": r.get("apiVersion", ""),
                                      "kind": r.get("kind", ""),
                                      "metadata": {"name": r.get("name", "")}}) for r in refs)


def claim_of(kind: str, rev: Obj) -> Claim:
    """Who holds a revision's ``status.objectRefs``: its package, through it."""
    metadata = rev.get("metadata") or {}
    package = (metadata.get("labels") or {}).get(LABEL_PACKAGE)
    refs = (rev.get("status") or {}).get("objectRefs") or []
    owner = lk.Owner(kind, str(package), str(metadata.get("name"))) if package else None
    return owner, keys_of(refs)


def entry_kinds(lock: Obj) -> dict[str, str]:
    """Each Lock entry's revision name and package kind (``kind``, or the older ``type``)."""
    return {str(e.get("name", "")): str(e.get("kind") or e.get("type"))
            for e in lock.get("packages") or []}


def planned_refs(package_kind: str, package: str, objects: Iterable[Obj]) -> list[dict[str, str]]:
    """The sorted refs of every object the package would establish (webhooks renamed)."""
    refs = []
    for obj in objects:
        for kept in establishable(package_kind, [obj]):
            renamed = inject_webhooks(kept, package_kind=package_kind, package_name=package,
                                      active=False, ca=None, namespace="")
            refs.append(object_ref(renamed))
    return sort_object_refs(refs)


def summary_refs(package_kind: str, package: str,
                 summary: PackageSummary) -> list[dict[str, str]]:
    """:func:`planned_refs` from the object summaries kept at fetch, without a second parse."""
    return planned_refs(package_kind, package, (
        {"apiVersion": item.api_version, "kind": item.kind, "metadata": {"name": item.name}}
        for item in summary.summaries))


def dependency_meta(dep: Dependency) -> dict[str, Any]:
    """A parsed dependency back in its ``dependsOn`` form, for ``lock.lock_entry``."""
    if dep.form == "apiVersion":
        return {"apiVersion": dep.api_version, "kind": dep.kind, "package": dep.package,
                "version": dep.constraint}
    return {dep.form: dep.package, "version": dep.constraint}


@dataclass(frozen=True)
class Decision:
    """What the Lock says to one revision's claim.

    Attributes:
        unknown: other entries whose claims must be read before deciding.
        conflicts: objects another package holds (the claim loses).
        lock: the Lock with the revision's entry; None when it already holds it as is.
    """

    unknown: list[Obj] = field(default_factory=list)
    conflicts: list[lk.Conflict] = field(default_factory=list)
    lock: Obj | None = None

    @property
    def won(self) -> bool:
        """Whether the claim takes its objects (the Lock then has its entry)."""
        return not self.unknown and not self.conflicts


@dataclass
class Claims:
    """One revision's claim, and the claims of other revisions it has read.

    Attributes:
        package_kind: the claiming package's kind (``Provider``).
        revision: the claiming revision's name; its own Lock entry is never a rival.
        keys: the objects it claims.
        others: each other revision's claim, by revision name, as read.
    """

    package_kind: str
    revision: str
    keys: frozenset[lk.ObjectKey]
    others: dict[str, Claim] = field(default_factory=dict)

    def unknown(self, lock: Obj) -> list[Obj]:
        """Other entries of ``lock`` whose claims have not been read."""
        return [e for e in lock.get("packages") or []
                if e.get("name") != self.revision and str(e.get("name", "")) not in self.others]

    def conflicts(self, lock: Obj, package: str) -> list[lk.Conflict]:
        """The claimed objects another package's entry in ``lock`` holds.

        Entries whose claims were not read count as holding nothing: read them first.
        """
        holders: dict[lk.ObjectKey, lk.Owner] = {}
        for entry in lock.get("packages") or []:
            if entry.get("name") == self.revision:
                continue
            owner, keys = self.others.get(str(entry.get("name", "")), UNCLAIMED)
            if owner is None:
                continue
            for key in keys & self.keys:
                holders[key] = owner
        return lk.find_conflicts(sorted(self.keys), holders, kind=self.package_kind,
                                 package=package)

    def decide(self, lock: Obj, package: str, entry: Obj) -> Decision:
        """Read the unknown entries first; then lose to a holder, or add ``entry``."""
        unknown = self.unknown(lock)
        if unknown:
            return Decision(unknown=unknown)
        conflicts = self.conflicts(lock, package)
        if conflicts:
            return Decision(conflicts=conflicts)
        return Decision(lock=lk.upsert_entry(lock, entry))


@dataclass(frozen=True)
class Ask:
    """One claim waiting for a group commit: its package, its claim and its Lock entry."""

    package: str
    claims: Claims
    entry: Obj

    @property
    def order(self) -> tuple[str, str, str]:
        """Where it is decided in a batch: by package, kind and revision, never arrival."""
        return self.package, self.claims.package_kind, self.claims.revision


@dataclass(frozen=True)
class Batch:
    """What one Lock write says to every claim in it.

    Attributes:
        decisions: each ask's decision, in the order the asks were given.
        lock: the Lock to write; None when it already says everything the winners want.
        held: each winner's claim, by revision name, as the next batch would read it.
    """

    decisions: list[Decision]
    lock: Obj | None
    held: dict[str, Claim] = field(default_factory=dict)


def decide_batch(lock: Obj, asks: Sequence[Ask]) -> Batch:
    """Decide every ask against ``lock`` as if each took the Lock in turn, in
    :attr:`Ask.order`: an ask sees the entries and claims of those decided before it, so
    of several asks wanting one object the first wins and the others name it; a conflict
    refuses only the ask that has it."""
    decisions: dict[int, Decision] = {}
    won: dict[str, Claim] = {}
    current = lock
    for i in sorted(range(len(asks)), key=lambda i: asks[i].order):
        ask = asks[i]
        claims = replace(ask.claims, others={**ask.claims.others, **won})
        decision = decisions[i] = claims.decide(current, ask.package, ask.entry)
        if decision.won:
            current = decision.lock or current
            owner = lk.Owner(claims.package_kind, ask.package, claims.revision)
            won[claims.revision] = (owner, claims.keys)
    return Batch([decisions[i] for i in range(len(asks))],
                 None if current is lock else current, won)
