"""``take_lock``: the Lock decides which package gets which objects (invariants 4 and 5).

Every write to the singleton Lock is a compare-and-swap on ``metadata.resourceVersion``;
a 409 means someone else wrote first, so we re-read and decide again (bounded).

**Claims.** The Lock's ``packages[]`` schema (Crossplane's) has no room for objects, so a
revision's claim is its ``status.objectRefs``, written *before* its Lock entry. A claim
counts only while its revision has an entry. Two packages wanting the same objects race
on the Lock: the first CAS wins; the loser's retry re-reads the Lock, finds the winner's
entry and claim, raises ``ConflictError`` naming who holds which object, and withdraws its
own claim. It has written no package object, so exactly one wins, every time.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from temporalio import activity

from activities.base import PKG_V1, Base, kind_of, meta, revision_kind, spec
from activities.errors import edge
from lockwright import conditions
from lockwright.objects import lock as lk
from lockwright.resolution.dependencies import Report, report
from lockwright.errors import ConflictError, KubeAlreadyExists, KubeConflict
from lockwright.objects.establish import establishable, object_ref, sort_object_refs
from lockwright.k8s import WARNING, Obj
from lockwright.objects.webhooks import inject_webhooks
from lockwright.xpkg.meta import Dependency
import contracts as c
from contracts import metrics

if TYPE_CHECKING:
    from lockwright.xpkg.parse import PackageSummary

LOCK_API = "pkg.crossplane.io/v1beta1"
#: The Lock's writers in this worker process: one at a time, so threads of one worker
#: never lose compare-and-swap rounds to each other (other workers still may).
_WRITERS = threading.Lock()
Claims = dict[str, tuple[lk.Owner | None, frozenset[lk.ObjectKey]]]


def dependency_meta(dep: Dependency) -> dict[str, Any]:
    """A parsed dependency back in its ``dependsOn`` form, for ``lock.lock_entry``."""
    if dep.form == "apiVersion":
        return {"apiVersion": dep.api_version, "kind": dep.kind, "package": dep.package,
                "version": dep.constraint}
    return {dep.form: dep.package, "version": dep.constraint}


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


def keys_of(refs: list[Obj]) -> frozenset[lk.ObjectKey]:
    """ObjectKeys of TypedReferences."""
    return frozenset(lk.ObjectKey.of({"apiVersion": r.get("apiVersion", ""),
                                      "kind": r.get("kind", ""),
                                      "metadata": {"name": r.get("name", "")}}) for r in refs)


class LockActivities(Base):
    """The Lock: take, compare-and-swap, remove."""

    @activity.defn(name=c.TAKE_LOCK)
    @edge
    def take_lock(self, inp: c.TakeLockInput) -> c.TakeLockResult:
        """Claim the package's objects and add its entry to the Lock, or name the winner."""
        kind = kind_of(inp.kind)
        rev = self.revision(inp.kind, inp.revision)
        if spec(rev).get("desiredState") != c.ACTIVE and not inp.check_only:
            return c.TakeLockResult()  # inactive revisions stay out of the Lock (§11)
        summary = self.summary(inp.kind, rev, inp.digest)
        # From the cached summary, not a second parse (a 2,000-CRD package.yaml takes ~15 s).
        refs = summary_refs(kind, inp.package, summary)
        # skipDependencyResolution: in the Lock (its claim counts) but with no dependencies.
        deps = [] if inp.skip_dependencies else [
            dependency_meta(d) for d in summary.meta.depends_on]
        entry = lk.lock_entry(inp.revision, kind, str(spec(rev).get("image", "")), deps)
        if inp.check_only:
            return self.check_lock(inp, rev, refs, len(deps))
        claim = _Claim(self, inp.kind, rev, refs)
        claim.prefetch(self.read_lock())  # outside the writers' turns
        try:
            version, attempts = self.take(claim, inp.package, entry)
        except ConflictError as err:
            claim.withdraw()
            self.event(rev, WARNING, "ResolveDependencies", err.message)
            raise
        except _Retired:
            return c.TakeLockResult()  # deactivated while we looked: it stays out
        self.log(package=inp.package, revision=inp.revision, digest=inp.digest).info(
            "lock.taken", resource_version=version, cas_attempts=attempts)
        found = report(self.read_lock(), inp.revision) if deps else Report()
        if found.message:
            self.event(rev, WARNING, "ResolveDependencies",
                       conditions.MSG_RESOLVE_DEPENDENCIES + found.message)
        return c.TakeLockResult(resource_version=version, dependencies=len(deps),
                                cas_attempts=attempts, found_dependencies=found.found,
                                installed_dependencies=found.installed,
                                invalid_dependencies=found.invalid,
                                dependency_message=found.message)

    def take(self, claim: _Claim, package: str, entry: Obj) -> tuple[str, int]:
        """Claim and add ``entry`` by compare-and-swap; the claims of entries added since
        the claim last looked are read outside the writers' turn, then it tries again."""
        for _ in range(self.settings.cas_attempts):
            try:
                return self.lock_cas(claim.decide(package, entry))
            except _Unknown as unknown:
                claim.learn(unknown.entries)
        raise KubeConflict("the Lock kept gaining entries: gave up after "
                           f"{self.settings.cas_attempts} attempts")

    def check_lock(self, inp: c.TakeLockInput, rev: Obj, refs: list[dict[str, str]],
                   dependencies: int) -> c.TakeLockResult:
        """Preparing an upgrade: would the Lock take the revision? Writes nothing.

        Raises:
            ConflictError: another package holds some of its objects.
        """
        lock = self.read_lock()
        try:
            self.refuse_claimed(lock, inp.kind, inp.package, rev, refs)
        except ConflictError as err:
            self.event(rev, WARNING, "ResolveDependencies", err.message)
            raise
        return c.TakeLockResult(resource_version=str(meta(lock).get("resourceVersion", "")),
                                dependencies=dependencies)

    def refuse_claimed(self, lock: Obj, kind: str, package: str, rev: Obj,
                       refs: list[dict[str, str]]) -> None:
        """Fail when another package's entry in ``lock`` claims any of ``refs`` (created
        yet or not): the check ``take_lock`` makes before it writes.

        Raises:
            ConflictError: naming who holds which object.
        """
        claim = _Claim(self, kind, rev, refs)
        claim.prefetch(lock)
        conflicts = claim.conflicts(lock, package)
        if conflicts:
            raise ConflictError(lk.conflicts_message(conflicts))

    def read_lock(self) -> Obj:
        """The Lock ``lock``, created empty if missing."""
        found = self.kube.get(LOCK_API, "Lock", lk.LOCK_NAME)
        if found is not None:
            return found
        try:
            return self.kube.create(lk.new_lock())
        except KubeAlreadyExists:
            return self.kube.get(LOCK_API, "Lock", lk.LOCK_NAME) or lk.new_lock()

    def lock_cas(self, change: Callable[[Obj], Obj | None]) -> tuple[str, int]:
        """Apply ``change`` to the Lock by compare-and-swap, re-reading after each 409.

        Returns:
            The Lock's resourceVersion afterwards, and how many attempts it took.
        """
        attempts = self.settings.cas_attempts
        for attempt in range(1, attempts + 1):
            try:
                with _WRITERS:  # this process's writers take turns; others may still race
                    current = self.read_lock()
                    wanted = change(current)
                    if wanted is None:
                        return str(meta(current).get("resourceVersion", "")), attempt
                    written = self.kube.update(wanted)
            except KubeConflict:
                metrics.lock_cas_conflict(metrics.activity_meter())
                # Jitter spreads out a herd of writers that all lost the same round.
                time.sleep(random.uniform(0, min(0.5, 0.01 * attempt)))
                continue
            return str(meta(written).get("resourceVersion", "")), attempt
        raise KubeConflict(f"the Lock kept changing: gave up after {attempts} "
                           "compare-and-swap attempts")

    def leave_lock(self, revision: str) -> int:
        """Remove ``revision``'s Lock entry, if any."""
        return self.remove_from_lock(lambda _: [revision])

    def remove_from_lock(self, revisions: Callable[[Obj], list[str]]) -> int:
        """Remove the Lock entries ``revisions(lock)`` names; how many went."""
        removed = 0

        def change(current: Obj) -> Obj | None:
            nonlocal removed
            names = [n for n in revisions(current) if lk.find_entry(current, n)]
            out = current
            for name in names:
                out = lk.remove_entry(out, name) or out
            removed = len(names)
            return out if names else None

        self.lock_cas(change)
        return removed


class _Unknown(Exception):
    """Lock entries whose claims are not known yet."""

    def __init__(self, entries: list[Obj]) -> None:
        super().__init__(f"{len(entries)} Lock entries to read")
        self.entries = entries


class _Claim:
    """One revision's claim on its objects, checked against the other Lock entries."""

    def __init__(self, acts: LockActivities, kind: str, rev: Obj,
                 refs: list[dict[str, str]]) -> None:
        self.acts, self.kind, self.rev, self.refs = acts, kind, rev, refs
        self.keys = keys_of(list(refs))
        self.before = (rev.get("status") or {}).get("objectRefs")
        self.written = False
        self.others: Claims = {}

    def decide(self, package: str, entry: Obj) -> Callable[[Obj], Obj | None]:
        """The Lock change: fail on another package's claim, else claim and add ``entry``."""
        def change(current: Obj) -> Obj | None:
            self.still_active()
            unknown = self.unknown(current)
            if unknown:
                raise _Unknown(unknown)  # read them outside the writers' turn
            conflicts = self.conflicts(current, package)
            if conflicts:
                raise ConflictError(lk.conflicts_message(conflicts))
            self.write()
            return lk.upsert_entry(current, entry)
        return change

    def still_active(self) -> None:
        """Read the revision again after the Lock, before writing its entry.

        Whoever retires a revision marks it (Inactive, or deleting) before removing its
        entry; so a revision still Active here was not retired before the Lock read, and a
        removal since then makes this write's compare-and-swap fail. A take that read the
        revision long ago (a cancelled install's step, still running) cannot put back the
        entry of a revision retired meanwhile.

        Raises:
            ObjectGone: the revision is gone or being deleted.
            _Retired: it is no longer Active.
        """
        rev = self.acts.revision(self.kind, str(meta(self.rev)["name"]))
        if spec(rev).get("desiredState") != c.ACTIVE:
            raise _Retired

    def conflicts(self, current: Obj, package: str) -> list[lk.Conflict]:
        holders: dict[lk.ObjectKey, lk.Owner] = {}
        name = meta(self.rev).get("name")
        for entry in current.get("packages") or []:
            if entry.get("name") == name:
                continue
            owner, keys = self.claim_of(entry)
            if owner is None:
                continue
            for key in keys & self.keys:
                holders[key] = owner
        return lk.find_conflicts(sorted(self.keys), holders, kind=kind_of(self.kind),
                                 package=package)

    def unknown(self, lock: Obj) -> list[Obj]:
        """Other entries of ``lock`` whose claims this claim has not read."""
        name = meta(self.rev).get("name")
        return [e for e in lock.get("packages") or []
                if e.get("name") != name and str(e.get("name", "")) not in self.others]

    def learn(self, entries: list[Obj]) -> None:
        """Read the claims of ``entries``."""
        for entry in entries:
            self.claim_of(entry)

    def prefetch(self, lock: Obj) -> None:
        """Learn the claims of ``lock``'s entries with one list per kind, before the Lock
        is written (with a hundred packages installed, a read per entry made every Lock
        write wait a hundred round trips).

        Only the revisions ``lock`` already names: a revision writes its claim before
        its entry, so a claim read after its entry was seen is whole; one read earlier
        may be missing objects the revision is about to claim.
        """
        entries = {str(e.get("name", "")): str(e.get("kind") or e.get("type"))
                   for e in lock.get("packages") or []}
        for kind in set(entries.values()):
            for other in self.acts.kube.list(PKG_V1, revision_kind(kind)):
                name = str(meta(other).get("name"))
                if name in entries:
                    self.others.setdefault(name, _claim(kind, other))

    def claim_of(self, entry: Obj) -> tuple[lk.Owner | None, frozenset[lk.ObjectKey]]:
        """The objects another Lock entry's revision holds, and who it is (read on a miss:
        an entry added since `prefetch`; a revision gone since holds nothing)."""
        name, kind = str(entry.get("name", "")), str(entry.get("kind") or entry.get("type"))
        if name not in self.others:
            other = self.acts.kube.get(PKG_V1, revision_kind(kind), name)
            self.others[name] = _claim(kind, other) if other else (None, frozenset())
        return self.others[name]

    def write(self) -> None:
        if self.written or self.before == self.refs:
            return
        self._patch(self.refs)
        self.written = True

    def withdraw(self) -> None:
        if self.written:
            self._patch(self.before or [])

    def _patch(self, refs: list[Any]) -> None:
        self.acts.kube.patch(PKG_V1, revision_kind(self.kind), str(meta(self.rev)["name"]),
                             {"status": {"objectRefs": refs}}, subresource="status")


class _Retired(Exception):
    """The revision was deactivated after take_lock first read it."""


def _claim(kind: str, rev: Obj) -> tuple[lk.Owner | None, frozenset[lk.ObjectKey]]:
    """Who holds a revision's ``status.objectRefs``: its package, through it."""
    package = meta(rev).get("labels", {}).get("pkg.crossplane.io/package")
    refs = (rev.get("status") or {}).get("objectRefs") or []
    owner = lk.Owner(kind, str(package), str(meta(rev).get("name"))) if package else None
    return owner, keys_of(refs)
