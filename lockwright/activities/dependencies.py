"""``resolve_dependencies`` and ``apply_resolution``: the resolver's I/O (docs/crossplane.md §12).

``resolve_dependencies`` reads the Lock, the package objects and the revisions, asks the
pure resolver (``lockwright.dependencies.resolver``) for a decision, and returns it with the
inputs in brief; it writes nothing. The resolver sees the registry through :class:`RegistryCatalog`:
tags listed and packages fetched with what the ImageConfigs say for their prefix (rewrite,
pull secret), each package fetched into the content-addressed cache, so the one chosen
installs from it. ``apply_resolution`` carries the decision out: creates the missing
packages (named as Crossplane names them, nothing but ``spec.package`` set), moves the
ones the policy lets it move, and writes the Lock's ``Resolved`` condition, its finalizer,
and the explanations every affected revision reads.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lockwright import contracts as c
from lockwright.activities.base import KINDS, PKG_V1, heartbeating, log, meta, spec
from lockwright.activities.contents import Contents
from lockwright.activities.errors import defn, edge
from lockwright.activities.lock import LOCK_API, LockKeeper
from lockwright.activities.lockcommit import WRITERS
from lockwright.activities.reads import PackageReader, Registries
from lockwright.activities.verify import Verifier
from lockwright.dependencies import lockstatus
from lockwright.dependencies.graph import Graph, Requirement, graph_of
from lockwright.dependencies.resolver import CatalogError, Decision, Policy, resolve
from lockwright.errors import KubeAlreadyExists, LockwrightError, TransientError
from lockwright.k8s import NORMAL, Kube, Obj, deleting
from lockwright.names import LABEL_PACKAGE, parse_reference
from lockwright.objects.lock import LOCK_NAME
from lockwright.oci.fetch import fetch_package
from lockwright.oci.reference import parse
from lockwright.xpkg.constraints import is_digest

REVISION_KINDS = {kind: f"{kind}Revision" for kind in KINDS.values()}


class RegistryCatalog:
    """The resolver's :class:`~lockwright.dependencies.resolver.Catalog` over the registries."""

    def __init__(self, registries: Registries, contents: Contents, verifier: Verifier) -> None:
        self.registries = registries
        self.contents = contents
        self.verifier = verifier
        self.listed: dict[str, list[str]] = {}
        self.fetched: dict[tuple[str, str], tuple[Requirement, ...]] = {}

    def versions(self, source: str) -> list[str]:
        """Every tag of ``source``, listed where the ImageConfigs point, with their secret."""
        if source not in self.listed:
            self.listed[source] = self._ask(lambda: self._list(source))
        return self.listed[source]

    def dependencies(self, source: str, version: str) -> tuple[Requirement, ...]:
        """What ``source`` at ``version`` depends on, from its package in the cache."""
        key = (source, version)
        if key not in self.fetched:
            self.fetched[key] = self._ask(lambda: self._dependencies(source, version))
        return self.fetched[key]

    def _list(self, source: str) -> list[str]:
        resolution = self.registries.resolution(source)
        secrets = [resolution.pull_secret] if resolution.pull_secret else []
        with self.registries.naming_missing_secrets(secrets):
            return self.registries.registry(secrets).list_tags(parse(resolution.resolved))

    def _dependencies(self, source: str, version: str) -> tuple[Requirement, ...]:
        ref = _reference(source, version)
        resolution, configs = self.registries.for_pull(ref)
        secrets = [resolution.pull_secret] if resolution.pull_secret else []
        client = self.registries.registry(secrets)
        with heartbeating(), self.registries.naming_missing_secrets(secrets):
            pinned = parse(resolution.resolved)
            digest = pinned.digest or client.resolve(pinned)
            # Verified before anything of it is fetched, as an install would be.
            self.verifier.verify(resolution, digest, client, configs)
            fetched = fetch_package(str(pinned.with_digest(digest)), client, self.contents.cache)
        summary = fetched.summary or self.contents.summary_of(fetched.digest, fetched.entry)
        parent = f"{source}@{version}"
        return tuple(Requirement(d.package, d.kind, d.constraint, d.api_version, parent)
                     for d in summary.meta.depends_on)

    @staticmethod
    def _ask(call: Any) -> Any:
        """The registry's errors as CatalogError; the resolver says what it was asking."""
        try:
            return call()
        except LockwrightError as err:
            raise CatalogError(err.message, transient=isinstance(err, TransientError)) from err


def _reference(source: str, version: str) -> str:
    return f"{source}{'@' if is_digest(version) else ':'}{version}"


class DependencyActivities:
    """resolve_dependencies and apply_resolution."""

    def __init__(self, kube: Kube, reader: PackageReader, keeper: LockKeeper,
                 registries: Registries, contents: Contents, verifier: Verifier,
                 policy: Policy) -> None:
        """Resolve over the registries, moving dependencies as ``policy`` allows."""
        self.kube = kube
        self.reader = reader
        self.keeper = keeper
        self.registries = registries
        self.contents = contents
        self.verifier = verifier
        self.policy = policy

    @defn(name=c.RESOLVE_DEPENDENCIES)
    @edge
    def resolve_dependencies(self, inp: c.ResolveDependenciesInput
                             ) -> c.ResolveDependenciesResult:
        """Read the graph and decide; writes nothing."""
        lock = self.keeper.read_lock()
        packages = [p for kind in KINDS.values() for p in self.kube.list(PKG_V1, kind)]
        graph = graph_of(lock, packages)
        catalog = RegistryCatalog(self.registries, self.contents, self.verifier)
        with heartbeating():
            decision = resolve(graph, catalog, self.policy)
        after = lockstatus.with_explanations(lock, decision.explanations())
        wanted = lockstatus.lock_status(lock, decision.message, decision.explanations())
        log().info("dependencies.resolved", lock_packages=len(lock.get("packages") or []),
                        changes=len(decision.changes), unresolved=len(decision.unresolved))
        return c.ResolveDependenciesResult(
            lock_packages=len(lock.get("packages") or []), package_objects=len(packages),
            dependencies=sum(len(n.dependencies or ()) for n in graph.nodes),
            repositories_listed=len(catalog.listed), installed=_installed(graph),
            changes=_changes(decision), unresolved=_unresolved(decision),
            lock_stale=lockstatus.stale(lock, wanted), nudge=self.nudges(after),
            retry=any(u.transient for u in decision.unresolved))

    def nudges(self, lock: Obj) -> list[c.PackageRef]:
        """Packages whose active revision's dependency status the Lock has made out of date."""
        out: list[c.PackageRef] = []
        for kind, rev_kind in REVISION_KINDS.items():
            for rev in self.kube.list(PKG_V1, rev_kind):
                package = str((meta(rev).get("labels") or {}).get(LABEL_PACKAGE, ""))
                live = spec(rev).get("desiredState") == c.ACTIVE and not deleting(rev)
                if package and live and lockstatus.revision_out_of_date(lock, rev):
                    out.append(c.PackageRef(kind.lower(), package))
        return list(dict.fromkeys(out))

    @defn(name=c.APPLY_RESOLUTION)
    @edge
    def apply_resolution(self, inp: c.ApplyResolutionInput) -> c.ApplyResolutionResult:
        """Create and move packages as decided, then write the Lock's status."""
        lock = self.keeper.read_lock()
        created = [ch.package for ch in inp.changes if not ch.from_version and self.create(ch)]
        moved = [ch.package for ch in inp.changes if ch.from_version and self.move(ch)]
        explanations = {rev: u.message for u in inp.unresolved for rev in u.revisions}
        message = "; ".join(u.message for u in inp.unresolved)
        written = self.write_lock_status(lock, lockstatus.lock_status(lock, message,
                                                                      explanations))
        return c.ApplyResolutionResult(created=created, moved=moved,
                                       lock_status_written=written)

    def create(self, change: c.DependencyChange) -> bool:
        """Create the package; False when its name was taken meanwhile (next pass sees it)."""
        body = {"apiVersion": change.api_version, "kind": change.kind,
                "metadata": {"name": change.name}, "spec": {"package": change.package}}
        try:
            self.kube.create(body)
        except KubeAlreadyExists:
            return False
        self.lock_event(f"Installed dependency {change.kind} {change.name} ({change.package})")
        return True

    def move(self, change: c.DependencyChange) -> bool:
        """Point an installed dependency at the version decided (an upgrade or downgrade).

        Only from the version the resolver saw: a package someone pointed elsewhere since
        (or whose upgrade the Lock has not caught up with) is left as it is, and the
        resolution its new revision brings decides again. The patch is conditional on the
        object read, so an edit landing in between fails it (409) and the retry sees it.
        """
        pkg = self.kube.get(PKG_V1, change.kind, change.name)
        if pkg is None or spec(pkg).get("package") == change.package:
            return False
        current = str(spec(pkg).get("package", ""))
        if parse_reference(current).version != change.from_version:
            log(package=change.name).info("dependency.move_skipped", current=current,
                                               decided_from=change.from_version)
            return False
        self.kube.patch(PKG_V1, change.kind, change.name, {
            "metadata": {"resourceVersion": meta(pkg)["resourceVersion"]},
            "spec": {"package": change.package}})
        self.lock_event(f"Moved dependency {change.kind} {change.name} from "
                        f"{change.from_version} to {change.package}")
        return True

    def write_lock_status(self, lock: Obj, wanted: lockstatus.LockStatus) -> bool:
        """Annotation, finalizer and ``Resolved`` condition, each only if it differs.

        Written in this worker's turn at the Lock (``WRITERS``), and the Lock committer is
        told the Lock each write left, so its next compare-and-swap does not lose to them
        (docs/design.md, "Group commit for the Lock").
        """
        patch = lockstatus.metadata_patch(lock, wanted)
        conditions = lockstatus.conditions_after(lock, wanted, datetime.now(UTC))
        with WRITERS:
            if patch is not None:
                self.keeper.committer.saw(self.kube.patch(LOCK_API, "Lock", LOCK_NAME, patch))
            if conditions is not None:
                self.keeper.committer.saw(self.kube.patch(
                    LOCK_API, "Lock", LOCK_NAME, {"status": {"conditions": conditions}},
                    subresource="status"))
        return patch is not None or conditions is not None

    def lock_event(self, message: str) -> None:
        """A Normal Event on the Lock (``kubectl describe lock lock`` shows them)."""
        self.reader.event(self.keeper.read_lock(), NORMAL, "ResolveDependencies", message)


def _installed(graph: Graph) -> list[str]:
    listed = [f"{n.kind} {n.label}" for n in graph.nodes if n.revision]
    return listed[:c.MAX_LISTED_PACKAGES]


def _changes(decision: Decision) -> list[c.DependencyChange]:
    return [c.DependencyChange(kind=ch.kind, name=ch.name, package=ch.package,
                               api_version=ch.api_version, from_version=ch.from_version)
            for ch in decision.changes]


def _unresolved(decision: Decision) -> list[c.UnresolvedDependencies]:
    return [c.UnresolvedDependencies(revisions=list(u.revisions), message=u.message)
            for u in decision.unresolved]
