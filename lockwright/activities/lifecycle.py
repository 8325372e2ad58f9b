"""Revision lifecycle: the switch (one Active, the rest retired), collecting old ones, clean-up.

Deactivating a revision stops its runtime, releases control of its objects, flips its
``desiredState`` to Inactive and takes it out of the Lock. A worker killed halfway leaves it
Active or in the Lock, and the retried activity retires such a revision again
(docs/design.md invariant 3). It is marked before it leaves the Lock, because
``take_lock`` decides on the revision as read after the Lock: a take still under way then
cannot put the entry back.
"""

from __future__ import annotations

from lockwright import contracts as c
from lockwright.activities.base import PKG_V1, kind_of, log, meta, revision_kind, spec
from lockwright.activities.dropped import DroppedObjects
from lockwright.activities.errors import defn, edge
from lockwright.activities.lock import LockKeeper
from lockwright.activities.objects import Establisher
from lockwright.activities.reads import PackageReader
from lockwright.activities.release import object_refs
from lockwright.errors import ObjectGone
from lockwright.k8s import NORMAL, Kube, Obj, deleting
from lockwright.objects.establish import Ref
from lockwright.upgrade import revisions as rv


class LifecycleActivities:
    """set_active_revision, collect_revisions, cleanup_package."""

    def __init__(self, kube: Kube, namespace: str, reader: PackageReader, keeper: LockKeeper,
                 establisher: Establisher, dropped: DroppedObjects) -> None:
        """Retire revisions in ``namespace``'s runtimes, the Lock and their objects."""
        self.kube = kube
        self.namespace = namespace
        self.reader = reader
        self.keeper = keeper
        self.establisher = establisher
        self.dropped = dropped

    @defn(name=c.SET_ACTIVE_REVISION)
    @edge
    def set_active_revision(self, inp: c.SetActiveRevisionInput
                          ) -> c.SetActiveRevisionResult:
        """Make ``inp.revision`` Active; retire the others, or (a switch) only flip them.

        Without ``keep_runtime`` every other revision that is Active, runs a runtime or
        holds a Lock entry is retired: it releases its objects, leaves the Lock, loses its
        runtime and is marked Inactive. With it, they are only marked Inactive, so their
        runtime keeps serving until the switch is finished or reverted.
        """
        revs = self.reader.revisions_of(inp.kind, inp.package, self.bound(inp))
        target = next((r for r in revs if meta(r)["name"] == inp.revision), None)
        if target is None:
            raise ObjectGone(f"{revision_kind(inp.kind)} {inp.revision} is gone")
        running, locked = self.holdings(inp.keep_runtime)
        # A finished switch (drop_unshipped): the target has established every object it
        # records under its control, so no retired revision controls one of those.
        taken = frozenset(object_refs(target)) if inp.drop_unshipped else frozenset()
        deactivated = []
        for rev in revs:
            if rev is target:
                continue
            if inp.keep_runtime and spec(rev).get("desiredState") == c.ACTIVE:
                self.set_state(inp.kind, rev, c.INACTIVE)
            elif not inp.keep_runtime and rv.retirable(rev, running, locked):
                self.deactivate(inp.kind, rev, running, taken)
                if inp.drop_unshipped:
                    self.dropped.drop_unshipped(self.kube.get(PKG_V1, kind_of(inp.kind), inp.package),
                                        rev, revs)
            else:
                continue
            deactivated.append(str(meta(rev)["name"]))
        if spec(target).get("desiredState") != c.ACTIVE:
            self.set_state(inp.kind, target, c.ACTIVE)
        log(package=inp.package, revision=inp.revision).info(
            "revision.activated", deactivated=deactivated, keep_runtime=inp.keep_runtime)
        return c.SetActiveRevisionResult(revision=inp.revision, deactivated=deactivated)

    def bound(self, inp: c.SetActiveRevisionInput) -> str:
        """How new the list of revisions must be: a finished switch's (``drop_unshipped``)
        need only include its target as read now, since the switch's last write of a
        revision was the target's (its health) and every earlier one is older; any other
        call reads consistently ("" here). The watch cache has seen the target's write
        moments ago, so the list does not wait for etcd's progress as a consistent one
        does (docs/design.md, "Configuration read from the watch cache")."""
        if not inp.drop_unshipped:
            return ""
        return str(meta(self.reader.revision(inp.kind, inp.revision)).get("resourceVersion")
                   or "")

    def holdings(self, keep_runtime: bool) -> tuple[list[Obj], set[str]]:
        """The runtime Deployments and the Lock's entries, which decide what is retired;
        none for a switch's hand-off (``keep_runtime``), which only flips desiredState."""
        if keep_runtime:
            return [], set()
        entries = self.keeper.read_lock().get("packages") or []
        return self.runtimes(), {str(e.get("name")) for e in entries}

    def runtimes(self) -> list[Obj]:
        """The runtime Deployments of the system namespace."""
        return self.kube.list("apps/v1", "Deployment", self.namespace)

    def deactivate(self, kind: str, rev: Obj, running: list[Obj],
                   taken: frozenset[Ref] = frozenset()) -> None:
        """Stop the runtime, release objects, mark Inactive, then leave the Lock.

        The runtime goes first: whoever retires a revision has another in control (a
        finished switch, a revert) or about to be installed, and what a runtime serves
        does not depend on the revision's objects or entry. Marked before it leaves the
        Lock: ``take_lock`` re-reads the revision after the Lock, so a take still under
        way for it cannot put the entry back. A retry after a failure part-way finds it
        still in the Lock, so retirable, and retires it again. ``taken``: objects the
        revision taking over controls, which are not read (lockwright.activities.release).
        """
        name = str(meta(rev)["name"])
        for deployment in running:
            if rv.controls(deployment, str(meta(rev)["uid"])):
                self.kube.delete("apps/v1", "Deployment", meta(deployment)["name"],
                                 self.namespace, uid=meta(deployment)["uid"])
        released = self.establisher.release_objects(kind, rev, taken)
        if spec(rev).get("desiredState") != c.INACTIVE:
            self.set_state(kind, rev, c.INACTIVE)
        self.keeper.leave_lock(name)
        self.reader.event(rev, NORMAL, "DeactivateRevision",
                   f"Deactivated revision; released control of {released} object(s)")

    def set_state(self, kind: str, rev: Obj, state: str) -> None:
        """Set ``spec.desiredState``."""
        self.kube.patch(PKG_V1, revision_kind(kind), str(meta(rev)["name"]),
                        {"spec": {"desiredState": state}})

    @defn(name=c.COLLECT_REVISIONS)
    @edge
    def collect_revisions(self, inp: c.CollectRevisionsInput) -> c.CollectRevisionsResult:
        """Delete the oldest inactive revisions beyond ``keep`` besides the current one."""
        others = [r for r in self.reader.revisions_of(inp.kind, inp.package)
                  if meta(r)["name"] != inp.current_revision]
        deleted = []
        for rev in rv.collectable(others, inp.keep):
            name = str(meta(rev)["name"])
            self.keeper.leave_lock(name)
            self.kube.delete(PKG_V1, revision_kind(inp.kind), name, uid=meta(rev)["uid"])
            deleted.append(name)
        if deleted:
            log(package=inp.package).info("revisions.collected", deleted=deleted)
        return c.CollectRevisionsResult(deleted=deleted)

    @defn(name=c.CLEANUP_PACKAGE)
    @edge
    def cleanup_package(self, inp: c.CleanupPackageInput) -> c.CleanupPackageResult:
        """The package is gone or going: drop the Lock entries of its revisions that are too.

        Revisions still there keep their entries: the garbage collector is about to remove
        those it owns, and an orphaned revision stays installed until someone deletes or
        adopts it. Nothing is created or rewritten.
        """
        kind = kind_of(inp.kind)
        revs = self.reader.revisions_of(inp.kind, inp.name)
        staying = {meta(r)["name"] for r in revs if not deleting(r)}
        removed = self.keeper.remove_from_lock(
            lambda lock: rv.gone_entries(lock, kind, inp.name, staying))
        waiting = sum(1 for r in revs if rv.owned_by_package(r, kind, inp.name))
        log(package=inp.name).info("package.cleaned_up", lock_entries=removed,
                                        waiting=waiting, orphaned=len(revs) - waiting)
        return c.CleanupPackageResult(removed=removed, waiting=waiting,
                                      orphaned=len(revs) - waiting)
