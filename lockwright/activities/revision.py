"""Revision-level activities: fetch into the cache, parse and lint, version check, status.

Only counts, names and the first few lint warnings go back to the workflow; the package
contents stay in the per-worker cache by digest, refetched on a miss (docs/design.md invariant 2).
"""

from __future__ import annotations

import contextlib

from lockwright import contracts as c
from lockwright.activities import status as st
from lockwright.activities.base import PKG_V1, kind_of, log, meta, revision_kind
from lockwright.activities.contents import Contents
from lockwright.activities.errors import defn, edge
from lockwright.activities.identity import Identity
from lockwright.activities.reads import PackageReader
from lockwright import conditions, names
from lockwright.errors import (
    ConstraintError,
    InvalidPackage,
    KubeConflict,
    LintError,
    LockwrightError,
    PreflightError,
)
from lockwright.k8s import NORMAL, WARNING, Kube, Obj
from lockwright.runtime import external
from lockwright.xpkg.constraints import parse_constraint
from lockwright.xpkg.lint import installable
from lockwright.xpkg.parse import PackageSummary

FIRST_WARNINGS = 5
#: Guarded status writes made before a lost race is left to the activity's retry.
WRITE_ATTEMPTS = 3


def capabilities(summary: PackageSummary) -> list[str]:
    """Meta capabilities; a Function with none reports ``composition`` (docs/crossplane.md §3.2)."""
    caps = list(summary.meta.capabilities)
    return caps or (["composition"] if summary.meta.kind == "Function" else [])


class RevisionActivities:
    """fetch_package, parse_package, check_crossplane_version, write_revision_status."""

    def __init__(self, kube: Kube, reader: PackageReader, contents: Contents,
                 identity: Identity, crossplane_version: str,
                 package_runtime: str = external.DEPLOYMENT) -> None:
        """Record API identity and hold revisions to API pins through ``identity``; check
        packages against ``crossplane_version`` (what the worker reports); write the
        runtime's conditions only when ``package_runtime`` is ``Deployment``."""
        self.kube = kube
        self.reader = reader
        self.contents = contents
        self.crossplane_version = crossplane_version
        self.package_runtime = package_runtime
        self.identity = identity

    @defn(name=c.FETCH_PACKAGE)
    @edge
    def fetch_package(self, inp: c.FetchPackageInput) -> c.FetchPackageResult:
        """Pull the package by digest into the cache (a hit costs nothing)."""
        rev = self.reader.revision(inp.kind, inp.revision)
        hit = self.contents.cache.get(inp.digest) is not None
        try:
            entry = self.contents.cached(inp.kind, rev, inp.digest)
            summary = self.contents.summary(inp.kind, rev, inp.digest)
        except LockwrightError as err:
            self.reader.event(rev, WARNING, "ParsePackage", f"cannot get package: {err.message}")
            raise
        log(package=inp.package, revision=inp.revision, digest=inp.digest).info(
            "package.fetched", cached=hit, size=entry.size)
        return c.FetchPackageResult(digest=inp.digest, size=entry.size, cached=hit,
                                    object_counts=dict(summary.counts))

    @defn(name=c.PARSE_PACKAGE)
    @edge
    def parse_package(self, inp: c.ParsePackageInput) -> c.ParsePackageResult:
        """Validate and lint; copy meta labels onto the revision; warnings as Events."""
        rev = self.reader.revision(inp.kind, inp.revision)
        try:
            summary = self.contents.summary(inp.kind, rev, inp.digest)
        except InvalidPackage as err:
            reason = "LintPackage" if isinstance(err, LintError) else "ValidatePackage"
            self.reader.event(rev, WARNING, reason, err.message)
            raise
        for warning in summary.warnings[:FIRST_WARNINGS]:
            self.reader.event(rev, WARNING, "LintPackage", warning)
        self.copy_meta(inp.kind, rev, summary,
                       self.identity.annotations(inp.kind, rev, inp.digest, summary))
        self.hold_to_pin(inp, rev, summary)
        kind = kind_of(inp.kind)
        objects = sum(1 for s in summary.summaries if installable(kind, s.api_version, s.kind))
        return c.ParsePackageResult(
            meta_name=summary.meta.name,
            crossplane_constraint=summary.meta.crossplane_version or "",
            dependencies=len(summary.meta.depends_on), objects=objects,
            warnings=len(summary.warnings),
            first_warnings=[w[:300] for w in summary.warnings[:FIRST_WARNINGS]],
            capabilities=capabilities(summary))

    def hold_to_pin(self, inp: c.ParsePackageInput, rev: Obj,
                    summary: PackageSummary) -> None:
        """Refuse the revision, its API identity recorded, if its package pins another API
        (before the Lock and any object: ``activities.identity``)."""
        try:
            self.identity.check_pin(inp.kind, rev, summary)
        except PreflightError as err:
            self.reader.event(rev, WARNING, "PinnedAPI", err.message)
            raise

    def copy_meta(self, kind: str, rev: Obj, summary: PackageSummary,
                  identity: dict[str, str | None]) -> None:
        """Meta labels and annotations onto the revision, with the ``identity`` annotations
        that moved, in one write; v1.x permissionRequests to status."""
        labels, annotations = names.from_metadata(dict(summary.meta.labels),
                                                  dict(summary.meta.annotations))
        current = meta(rev)
        body: Obj = {}
        if any((current.get("labels") or {}).get(k) != v for k, v in labels.items()):
            body["labels"] = labels
        if any((current.get("annotations") or {}).get(k) != v for k, v in annotations.items()):
            body["annotations"] = annotations
        if identity:  # its keys win over the package's own, as when they were written second
            body["annotations"] = {**body.get("annotations", {}), **identity}
        name = str(current["name"])
        if body:
            self.kube.patch(PKG_V1, revision_kind(kind), name, {"metadata": body})
        requests = [dict(r) for r in getattr(summary.meta, "permission_requests", ())]
        if requests and (rev.get("status") or {}).get("permissionRequests") != requests:
            self.kube.patch(PKG_V1, revision_kind(kind), name,
                            {"status": {"permissionRequests": requests}}, subresource="status")

    @defn(name=c.CHECK_CROSSPLANE_VERSION)
    @edge
    def check_crossplane_version(self, inp: c.CheckCrossplaneVersionInput
                                 ) -> c.CheckCrossplaneVersionResult:
        """Crossplane's version must meet ``spec.crossplane.version`` (docs/crossplane.md §7.4)."""
        version = self.crossplane_version
        message = conditions.MSG_INCOMPATIBLE_CROSSPLANE.format(version)
        try:
            allowed = parse_constraint(inp.constraint).allows(version)
        except ConstraintError as err:
            raise ConstraintError(f"{message}: {err.message}") from err
        if not allowed:
            raise ConstraintError(message)
        return c.CheckCrossplaneVersionResult(version=version)

    @defn(name=c.WRITE_REVISION_STATUS)
    @edge
    def write_revision_status(self, inp: c.WriteRevisionStatusInput
                              ) -> c.WriteRevisionStatusResult:
        """Store conditions and counts; Events when health turns.

        Under the External runtime the runtime's controller writes the revision's status
        too, so the write is guarded and made again over a fresh read when it lost.
        """
        guarded = external.is_external(self.package_runtime)
        for _ in range(WRITE_ATTEMPTS - 1 if guarded else 0):
            with contextlib.suppress(KubeConflict):
                return self.revision_status(inp, guarded)
        return self.revision_status(inp, guarded)

    def revision_status(self, inp: c.WriteRevisionStatusInput,
                        guarded: bool) -> c.WriteRevisionStatusResult:
        """One read and, when something differs, one write of the revision's status."""
        rev = self.reader.revision(inp.kind, inp.revision)
        fields: Obj = {"foundDependencies": inp.found_dependencies,
                       "installedDependencies": inp.installed_dependencies,
                       "invalidDependencies": inp.invalid_dependencies}
        if inp.resolved_image:
            fields["resolvedImage"] = inp.resolved_image
        if inp.capabilities:
            fields["capabilities"] = list(inp.capabilities)
        # Under External, RuntimeHealthy and RuntimeActive are the runtime controller's:
        # writing them would overwrite its word (which check_health reads).
        ours = [x for x in inp.conditions
                if external.lockwright_writes(x.type, self.package_runtime)]
        written = st.write_status(self.kube, revision_kind(inp.kind), rev, st.StatusChange(
            ours, int(meta(rev).get("generation") or 0), fields, guarded=guarded))
        if written is None:
            return c.WriteRevisionStatusResult(changed=False)
        self.status_events(rev, written.before, written.after)
        return c.WriteRevisionStatusResult(changed=True)

    def status_events(self, rev: Obj, before: list[Obj] | None, after: list[Obj]) -> None:
        """SyncPackage Events for health transitions (docs/crossplane.md §4.3)."""
        if st.turned(before, after, conditions.REVISION_HEALTHY, conditions.TRUE):
            self.reader.event(rev, NORMAL, "SyncPackage", "Successfully reconciled package revision")
        if st.turned(before, after, conditions.RUNTIME_HEALTHY, conditions.TRUE):
            self.reader.event(rev, NORMAL, "SyncPackage", "Successfully configured package revision")
        if message := st.new_message(before, after, conditions.REVISION_HEALTHY):
            self.reader.event(rev, WARNING, "SyncPackage", message)
