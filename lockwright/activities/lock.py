"""``take_lock``: the Lock decides which package gets what objects (docs/design.md invariants 4, 5).

Every write to the singleton Lock is a compare-and-swap on ``metadata.resourceVersion``;
a 409 means someone else wrote first, so we re-read and decide again (bounded). The takes
waiting in one worker are written together, one compare-and-swap for all of them
(``lockwright.activities.lockcommit``).

**Claims.** The Lock's ``packages[]`` schema (Crossplane's) has no room for objects, so a
revision's claim is its ``status.objectRefs``, written *before* its Lock entry. A claim
counts only while its revision has an entry (``lockwright.objects.claims`` decides on
them; :class:`LockKeeper` reads and writes). A claim is written only once the Lock as
the committer holds it lets it win, just before the entry. Two packages wanting the same
objects race on the Lock: the first CAS wins; the loser's retry re-reads the Lock, finds
the winner's entry and claim, and raises ``ConflictError`` naming who holds which object,
having written nothing (a claim left by an earlier attempt is withdrawn). It has written
no package object, so exactly one wins, every time. In one group commit the first in the
batch's order wins, and the others lose to it the same way.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lockwright import contracts as c
from lockwright.activities.api_dependencies import ApiNeeds
from lockwright.activities.base import PKG_V1, kind_of, living, log, meta, revision_kind, spec
from lockwright.activities.contents import Contents
from lockwright.activities.errors import defn, edge
from lockwright.activities.lockcommit import PARALLEL, WRITERS, LockCommitter
from lockwright.activities.reads import PackageReader
from lockwright.contracts import metrics
from lockwright import conditions
from lockwright.dependencies.graph import Report, report
from lockwright.dependencies.apis import required as required_apis
from lockwright.errors import ConflictError, KubeAlreadyExists, KubeConflict, KubeNotFound
from lockwright.identity import record
from lockwright.k8s import WARNING, Kube, Obj
from lockwright.managed.convert import reserved
from lockwright.objects import claims as cl
from lockwright.objects.holders import refs_of
from lockwright.objects import lock as lk
from lockwright.xpkg.parse import PackageSummary

LOCK_API = "pkg.crossplane.io/v1beta1"
#: Compare-and-swap rounds a Lock write gets before it gives up (and the activity retries).
CAS_ATTEMPTS = 25


class LockKeeper:
    """The Lock: read, compare-and-swap, take a revision's claim, remove entries."""

    def __init__(self, kube: Kube, reader: PackageReader, attempts: int = CAS_ATTEMPTS) -> None:
        self.kube = kube
        self.reader = reader
        self.attempts = attempts
        self.committer = LockCommitter(self)

    def take(self, claim: _Claim, package: str, entry: Obj) -> tuple[str, int]:
        """Claim and add ``entry`` in this worker's next group commit of the Lock."""
        return self.committer.commit(claim, package, entry, metrics.activity_meter())

    def write_lock(self, lock: Obj) -> Obj:
        """Write ``lock`` by compare-and-swap on its resourceVersion.

        Raises:
            KubeConflict: the Lock changed since ``lock`` was read.
        """
        return self.kube.update(lock)

    def held(self, rev: Obj, refs: list[dict[str, str]]) -> list[dict[str, str]]:
        """The refs of ``refs`` whose objects name ``rev`` as an owner, and the CRD names
        its owned MRDs reserve (read at once; a take that lost pays for them)."""
        uid = meta(rev).get("uid")

        def owned(ref: dict[str, str]) -> bool:
            live = self.kube.get(str(ref["apiVersion"]), str(ref["kind"]), str(ref["name"]))
            return any(o.get("uid") == uid for o in refs_of(live or {}))

        with ThreadPoolExecutor(PARALLEL, thread_name_prefix="lock-held") as pool:
            kept = [r for r, ok in zip(refs, pool.map(owned, refs), strict=True) if ok]
        keys = cl.keys_of(reserved(kept))
        return [r for r in refs if cl.keys_of([r]) <= keys]

    def claims_of(self, entries: list[Obj]) -> dict[str, cl.Claim]:
        """The claims of the revisions ``entries`` name (one gone since holds nothing):
        up to ``PARALLEL`` of a kind read side by side, more by a list of the kind."""
        found = dict.fromkeys(cl.entry_kinds({"packages": entries}), cl.UNCLAIMED)
        for kind, names in _by_kind(entries).items():
            found.update({str(meta(r).get("name")): cl.claim_of(kind, r)
                          for r in self.revisions(revision_kind(kind), names)
                          if r is not None and meta(r).get("name") in names})
        return found

    def revisions(self, kind: str, names: list[str]) -> list[Obj | None]:
        """The revisions ``names`` of ``kind`` (None: gone). A list of the kind carries
        every revision whole, each naming the objects it holds (4,000 for a 2,000-kind
        provider): in a round that learns of a few entries it took 1.3 s on a busy
        kube-apiserver, where reading those few takes one round trip."""
        if len(names) > PARALLEL:
            return list(self.kube.list(PKG_V1, kind))
        if len(names) == 1:
            return [self.kube.get(PKG_V1, kind, names[0])]
        with ThreadPoolExecutor(len(names), thread_name_prefix="lock-claims") as pool:
            return list(pool.map(lambda name: self.kube.get(PKG_V1, kind, name), names))

    def claim(self, kind: str, rev: Obj, refs: list[dict[str, str]]) -> _Claim:
        """``rev``'s claim on ``refs``, to take or check against the Lock."""
        return _Claim(self, kind, rev, refs)

    def refuse_claimed(self, lock: Obj, kind: str, package: str, rev: Obj,
                       refs: list[dict[str, str]]) -> None:
        """Fail when another package's entry in ``lock`` claims any of ``refs`` (created
        yet or not): the check ``take_lock`` makes before it writes.

        Raises:
            ConflictError: naming who holds which object.
        """
        claim = self.claim(kind, rev, refs)
        claim.prefetch(lock)
        claim.learn(claim.claims.unknown(lock))
        conflicts = claim.claims.conflicts(lock, package)
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
        for attempt in range(1, self.attempts + 1):
            try:
                with WRITERS:  # this process's writers take turns; others may still race
                    current = self.read_lock()
                    self.committer.saw(current)
                    wanted = change(current)
                    if wanted is None:
                        return str(meta(current).get("resourceVersion", "")), attempt
                    written = self.kube.update(wanted)
                    self.committer.saw(written)
            except KubeConflict:
                metrics.lock_cas_conflict(metrics.activity_meter())
                # Jitter spreads out a herd of writers that all lost the same round.
                time.sleep(random.uniform(0, min(0.5, 0.01 * attempt)))
                continue
            return str(meta(written).get("resourceVersion", "")), attempt
        raise KubeConflict(f"the Lock kept changing: gave up after {self.attempts} "
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


class LockActivities:
    """take_lock."""

    def __init__(self, reader: PackageReader, contents: Contents, keeper: LockKeeper,
                 apis: ApiNeeds) -> None:
        self.reader = reader
        self.contents = contents
        self.keeper = keeper
        self.apis = apis

    @defn(name=c.TAKE_LOCK)
    @edge
    def take_lock(self, inp: c.TakeLockInput) -> c.TakeLockResult:
        """Claim the package's objects and add its entry to the Lock, or name the winner."""
        kind, started = kind_of(inp.kind), time.monotonic()
        rev = self.reader.revision(inp.kind, inp.revision)
        if spec(rev).get("desiredState") != c.ACTIVE and not inp.check_only:
            return c.TakeLockResult()  # inactive: not in the Lock (docs/crossplane.md §11)
        summary = self.contents.summary(inp.kind, rev, inp.digest)
        # From the cached summary, not a second parse (a 2,000-CRD package.yaml takes ~15 s).
        refs = cl.summary_refs(kind, inp.package, summary)
        if inp.check_only:
            declared = 0 if inp.skip_dependencies else len(summary.meta.depends_on)
            return self.check_lock(inp, rev, refs, declared)
        claim = self.keeper.claim(inp.kind, rev, refs)
        deps, unmet_apis = self.dependencies(inp, summary, claim)
        entry = lk.lock_entry(inp.revision, kind, str(spec(rev).get("image", "")), deps)
        # The API identity parse_package recorded on the revision (lockwright's fields).
        entry.update(record.lock_fields(meta(rev).get("annotations")))
        prepared = time.monotonic()
        try:  # the committer writes the claim once it has won
            version, attempts = self.keeper.take(claim, inp.package, entry)
        except ConflictError as err:
            claim.withdraw()
            self.reader.event(rev, WARNING, "ResolveDependencies", err.message)
            raise
        except _Retired:
            claim.withdraw()
            return c.TakeLockResult()  # deactivated while we looked: it stays out
        log(package=inp.package, revision=inp.revision, digest=inp.digest).info(
            "lock.taken", resource_version=version, cas_attempts=attempts,
            prepared_s=round(prepared - started, 3),
            committed_s=round(time.monotonic() - prepared, 3))
        return self.taken(rev, version, attempts, inp.revision, len(deps), unmet_apis)

    def dependencies(self, inp: c.TakeLockInput, summary: PackageSummary,
                     claim: _Claim) -> tuple[list[Obj], str]:
        """The entry's dependencies (``dependsOn``, then those its required APIs add) in
        ``dependsOn`` form, and why some required API has none ("" when all do). Only
        required APIs need the Lock and its entries' claims read here."""
        if inp.skip_dependencies:
            # skipDependencyResolution: in the Lock (its claim counts), no dependencies.
            return [], ""
        declared = [cl.dependency_meta(d) for d in summary.meta.depends_on]
        if not required_apis(summary.meta.annotations):
            return declared, ""
        lock = self.keeper.read_lock()
        claim.prefetch(lock)
        needs = self.apis.needs(summary.meta.annotations,
                                [d.package for d in summary.meta.depends_on], lock,
                                inp.revision, claim.claims.others)
        return [*declared, *needs.dependencies], needs.message

    def taken(self, rev: Obj, version: str, attempts: int, revision: str,
              dependencies: int, unmet_apis: str = "") -> c.TakeLockResult:
        """The result of a take, with what the Lock says of the revision's dependencies
        and why a required API has none."""
        found = report(self.keeper.read_lock(), revision) if dependencies else Report()
        message = "; ".join(m for m in (found.message, unmet_apis) if m)
        if message:
            self.reader.event(rev, WARNING, "ResolveDependencies",
                              conditions.MSG_RESOLVE_DEPENDENCIES + message)
        return c.TakeLockResult(resource_version=version, dependencies=dependencies,
                                cas_attempts=attempts, found_dependencies=found.found,
                                installed_dependencies=found.installed,
                                invalid_dependencies=found.invalid,
                                dependency_message=message)

    def check_lock(self, inp: c.TakeLockInput, rev: Obj, refs: list[dict[str, str]],
                   dependencies: int) -> c.TakeLockResult:
        """Preparing an upgrade: would the Lock take the revision? Writes nothing.

        Raises:
            ConflictError: another package holds some of its objects.
        """
        lock = self.keeper.read_lock()
        try:
            self.keeper.refuse_claimed(lock, inp.kind, inp.package, rev, refs)
        except ConflictError as err:
            self.reader.event(rev, WARNING, "ResolveDependencies", err.message)
            raise
        return c.TakeLockResult(resource_version=str(meta(lock).get("resourceVersion", "")),
                                dependencies=dependencies)


def _by_kind(entries: list[Obj]) -> dict[str, list[str]]:
    """The revision names of ``entries``, by package kind."""
    kinds: dict[str, list[str]] = {}
    for name, kind in cl.entry_kinds({"packages": entries}).items():
        kinds.setdefault(kind, []).append(name)
    return kinds


class _Retired(Exception):
    """The revision was deactivated after take_lock first read it."""


class _Claim:
    """One revision's claim on its objects: the reads and writes around its decision
    (:class:`lockwright.objects.claims.Claims`)."""

    def __init__(self, keeper: LockKeeper, kind: str, rev: Obj,
                 refs: list[dict[str, str]]) -> None:
        self.keeper, self.kind, self.rev, self.refs = keeper, kind, rev, refs
        self.claims = cl.Claims(kind_of(kind), str(meta(rev).get("name")), cl.keys_of(refs))
        self.before = (rev.get("status") or {}).get("objectRefs")
        self.written = False

    def confirm(self, won: bool) -> None:
        """After the Lock the committer decides on was current: write the claim of a take
        that won, else read the revision again; either answer is the revision as it is now.

        Whoever retires a revision marks it (Inactive, or deleting) before removing its
        entry; so a revision still Active here was not retired before that Lock, and a
        removal since then makes the committer's compare-and-swap fail. A take that read
        the revision long ago (a cancelled install's step, still running) cannot put back
        the entry of a revision retired meanwhile.

        Raises:
            ObjectGone: the revision is gone or being deleted.
            _Retired: it is no longer Active.
        """
        name = str(meta(self.rev)["name"])
        if won and not self.in_place:
            rev = living(self._write(), f"{revision_kind(self.kind)} {name}")
        else:
            rev = self.keeper.reader.revision(self.kind, name)
        if spec(rev).get("desiredState") != c.ACTIVE:
            raise _Retired

    def learn(self, entries: list[Obj]) -> None:
        """Read the claims of ``entries`` (an entry added since :meth:`prefetch`; a
        revision gone since holds nothing)."""
        self.claims.others.update(self.keeper.claims_of(entries))

    def prefetch(self, lock: Obj) -> None:
        """Learn the claims of ``lock``'s entries with one list per kind, before the Lock
        is written (with a hundred packages installed, a read per entry made every Lock
        write wait a hundred round trips).

        Only the revisions ``lock`` already names: a revision writes its claim before
        its entry, so a claim read after its entry was seen is whole; one read earlier
        may be missing objects the revision is about to claim.
        """
        entries = cl.entry_kinds(lock)
        for kind in set(entries.values()):
            for other in self.keeper.kube.list(PKG_V1, revision_kind(kind)):
                name = str(meta(other).get("name"))
                if name in entries:
                    self.claims.others.setdefault(name, cl.claim_of(kind, other))

    @property
    def in_place(self) -> bool:
        """Whether the revision's claim is written, or what it holds covers it already
        (established MRDs come with their CRDs' names as well, see
        :func:`lockwright.managed.convert.reserved`)."""
        return self.written or cl.keys_of(self.refs) <= cl.keys_of(self.before or [])

    def _write(self) -> Obj | None:
        """The revision's claim (``status.objectRefs``), before its entry, once; the
        revision as written (None: gone)."""
        try:
            rev = self._patch(self.refs)
        except KubeNotFound:
            return None
        self.written = True
        return rev

    def withdraw(self) -> None:
        """Put the claim back to what the revision holds, after losing the Lock.

        What this take read as held (``before``) may be a claim an earlier attempt wrote and
        never withdrew: it failed, or its worker died, before the Lock decided. So only the
        objects that name the revision as an owner are kept, with the CRD names its MRDs
        reserve (docs/design.md, "Group commit for the Lock").
        """
        if not (self.written or self.before):
            return
        held = self.keeper.held(self.rev, self.before or [])
        if self.written or held != self.before:
            self._patch(held)

    def _patch(self, refs: list[Any]) -> Obj:
        return self.keeper.kube.patch(
            PKG_V1, revision_kind(self.kind), str(meta(self.rev)["name"]),
            {"status": {"objectRefs": refs}}, subresource="status")
