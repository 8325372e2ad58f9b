"""Package-level activities: read the package, resolve its digest, ensure its revision, status.

Each re-reads the package object (docs/design.md invariant 1). Revisions are named
``<package>-<first 12 hex of sha256(digest|generation)>`` as Crossplane's main branch names
them (an existing revision of the digest under another name may stay the package's:
``lockwright.upgrade.revisions.current_name``), created with a controller reference to
the package and numbered one above the highest. A package's first revision under
``Automatic`` activation is created Active, as Crossplane writes it (docs/crossplane.md §9
step 11), when the workflow asks (``EnsureRevisionInput.active_if_first``); every other is
created Inactive, and only ``set_active_revision`` (the switch) changes which one is Active.
"""

from __future__ import annotations

from lockwright import contracts as c
from lockwright.activities import status as st
from lockwright.activities.base import (
    DEPLOYMENT_RUNTIME,
    PKG_V1,
    kind_of,
    log,
    meta,
    revision_kind,
    secret_names,
    spec,
)
from lockwright.activities.errors import defn, edge
from lockwright.activities.reads import PackageReader, Registries, RuntimeConfigs
from lockwright.activities.verify import Outcome, Verifier
from lockwright import conditions
from lockwright.errors import (
    KubeAlreadyExists,
    KubeConflict,
    LockwrightError,
    ObjectGone,
    PackageNotFound,
    VerificationFailed,
)
from lockwright.images import imageconfig
from lockwright.images.imageconfig import Resolution
from lockwright.k8s import NORMAL, WARNING, Kube, Obj, deleting
from lockwright.names import LABEL_PACKAGE
from lockwright.oci.cache import PackageCache
from lockwright.oci.reference import Reference, parse
from lockwright.upgrade import gate, switch
from lockwright.upgrade import revisions as rv
from lockwright.upgrade.plan import ACCEPT_PLAN_ANNOTATION

MSG_CONTROLLER_CONFIG = ("controllerConfigRef is not supported by lockwright; use "
                         "runtimeConfigRef with a DeploymentRuntimeConfig")


def revision_spec(kind: str, pkg: Obj, source: str, package_runtime: str) -> Obj:
    """:func:`lockwright.upgrade.revisions.revision_spec` for a contract ``kind`` and the
    worker's ``package_runtime``."""
    return rv.revision_spec(kind_of(kind), pkg, source, package_runtime == DEPLOYMENT_RUNTIME)


def revision_metadata(package: str, digest: str, made_for: tuple[str, int] | None = None
                      ) -> Obj:
    """The labels and annotations a package's revision of ``digest`` carries, and, named by
    generation, the package object (UID) and generation it is for (``made_for``)."""
    annotations = {c.DIGEST_ANNOTATION: digest}
    if made_for is not None:
        annotations[rv.PACKAGE_UID_ANNOTATION] = made_for[0]
        annotations[rv.GENERATION_ANNOTATION] = str(made_for[1])
    return {"labels": {LABEL_PACKAGE: package}, "annotations": annotations}


def pull_secrets(pkg: Obj, resolution: Resolution) -> list[str]:
    """The package's own pull Secrets, then the ImageConfig's for its prefix."""
    secrets = secret_names(spec(pkg).get("packagePullSecrets"))
    return secrets + ([resolution.pull_secret] if resolution.pull_secret else [])


class PackageActivities:
    """Read, resolve, ensure the revision, write the package's status."""

    def __init__(self, kube: Kube, reader: PackageReader, registries: Registries,
                 verifier: Verifier, cache: PackageCache, package_runtime: str,
                 upgrade_gate: str = gate.EVIDENCE,
                 revision_names: str = rv.BY_GENERATION,
                 runtime_configs: RuntimeConfigs | None = None) -> None:
        """Make revisions for ``package_runtime`` (``Deployment`` or ``External``), named
        as ``revision_names`` says; gate upgrades with ``upgrade_gate`` unless a
        package's annotation says otherwise; ``runtime_configs`` says which DRC a
        package's runtime is rendered from."""
        self.kube = kube
        self.reader = reader
        self.registries = registries
        self.verifier = verifier
        self.cache = cache
        self.package_runtime = package_runtime
        self.upgrade_gate = upgrade_gate
        self.revision_names = revision_names
        self.runtime_configs = runtime_configs

    @defn(name=c.READ_PACKAGE)
    @edge
    def read_package(self, inp: c.ReadPackageInput) -> c.ReadPackageResult:
        """The spec fields the workflow decides on, and the package's revisions."""
        pkg = self.kube.get(PKG_V1, kind_of(inp.kind), inp.name)
        if pkg is None:
            return c.ReadPackageResult(found=False)
        if spec(pkg).get("controllerConfigRef"):
            self.reader.event(pkg, WARNING, "InstallPackageRevision", MSG_CONTROLLER_CONFIG)
        revs = self.reader.revisions_of(inp.kind, inp.name)
        s, annotations = spec(pkg), meta(pkg).get("annotations") or {}
        active = next((r for r in revs if spec(r).get("desiredState") == c.ACTIVE), None)
        upgrade_gate, problem = gate.choose(str(annotations.get(c.UPGRADE_GATE_ANNOTATION, "")),
                                            self.upgrade_gate, f"{inp.kind}/{inp.name}")
        return c.ReadPackageResult(
            found=True, uid=str(meta(pkg).get("uid", "")),
            generation=int(meta(pkg).get("generation") or 0), source=str(s.get("package", "")),
            activation_policy=str(s.get("revisionActivationPolicy") or c.AUTOMATIC),
            revision_history_limit=int(s["revisionHistoryLimit"]
                                       if s.get("revisionHistoryLimit") is not None else 1),
            ignore_crossplane_constraints=bool(s.get("ignoreCrossplaneConstraints")),
            skip_dependency_resolution=bool(s.get("skipDependencyResolution")),
            deleting=deleting(pkg),
            revisions=[meta(r)["name"] for r in revs],
            active_revision=str(meta(active).get("name", "")),
            switch_deadline_s=switch.switch_deadline(
                str(annotations.get(c.SWITCH_DEADLINE_ANNOTATION, ""))),
            active_source=str(((active or {}).get("status") or {}).get("resolvedImage")
                              or spec(active).get("image", "")),
            active_digest=str((meta(active).get("annotations") or {}).get(
                c.DIGEST_ANNOTATION, "")),
            paused=annotations.get(c.PAUSED_ANNOTATION) == "true",
            synced_paused=conditions.says_paused((pkg.get("status") or {}).get("conditions")),
            pull_policy=str(s.get("packagePullPolicy") or "IfNotPresent"),
            accept_plan=str(annotations.get(ACCEPT_PLAN_ANNOTATION, "")),
            active_definitions=_count((meta(active).get("annotations") or {}).get(
                c.ACTIVE_DEFINITIONS_ANNOTATION)),
            upgrade_gate=upgrade_gate, upgrade_gate_problem=problem,
            runtime_config=self._runtime_config(inp.kind, s))

    def _runtime_config(self, kind: str, s: Obj) -> str:
        """``name@generation`` of the DRC the package's runtime is rendered from, as its
        revisions choose it (their ``runtimeConfigRef``, or an ImageConfig's for the
        package's image); "" if none."""
        if kind == c.CONFIGURATION or self.runtime_configs is None:
            return ""
        drc, _ = self.runtime_configs.for_image(str(s.get("package", "")),
                                                s.get("runtimeConfigRef"), required=False)
        return f"{meta(drc)['name']}@{meta(drc).get('generation', 0)}" if drc else ""

    @defn(name=c.RECORD_EVENT)
    @edge
    def record_event(self, inp: c.RecordEventInput) -> c.RecordEventResult:
        """An Event the workflow decided on, about the package or one of its revisions."""
        obj = (self.kube.get(PKG_V1, revision_kind(inp.kind), inp.revision) if inp.revision
               else self.kube.get(PKG_V1, kind_of(inp.kind), inp.name))
        if obj is None:
            return c.RecordEventResult(recorded=False)
        self.reader.event(obj, inp.type, inp.reason, inp.message)
        return c.RecordEventResult(recorded=True)

    @defn(name=c.RESOLVE_DIGEST)
    @edge
    def resolve_digest(self, inp: c.ResolveDigestInput) -> c.ResolveDigestResult:
        """Tag → digest after ImageConfig rewrites, with the package's pull secrets; then
        the signature check an ImageConfig asks for, before anything is fetched."""
        pkg = self.reader.package(inp.kind, inp.name)
        resolution, configs = self.registries.for_pull(
            inp.source or str(spec(pkg).get("package", "")))
        digest = ""
        try:
            digest = self.digest_of(pkg, parse(resolution.resolved), resolution)
            outcome = self.verifier.verify(resolution, digest, self.registries.registry(
                pull_secrets(pkg, resolution)), configs)
        except LockwrightError as err:
            self.reader.event(pkg, WARNING, "UnpackPackage", f"cannot unpack package: {err.message}")
            if isinstance(err, VerificationFailed):
                self.refuse(inp, pkg, self.verifier.refusal(resolution, err, configs), digest)
            raise
        self.record_applied(inp.kind, pkg, resolution, outcome)
        self.verifier.say_verified(inp.kind, pkg, outcome, f"{resolution.resolved}@{digest}")
        log(package=inp.name, digest=digest).info("digest.resolved",
                                                        ref=resolution.resolved)
        return c.ResolveDigestResult(
            digest=digest, resolved_source=resolution.resolved,
            applied_image_configs=[r["name"] for r in resolution.package_applied])

    def refuse(self, inp: c.ResolveDigestInput, pkg: Obj, refusal: Outcome,
               digest: str) -> None:
        """A digest no authority vouches for: the package's ``Verified=False``, and, as
        Crossplane's revisions say it, an Inactive revision of the digest holding its
        ``Verified=False`` and ``RevisionHealthy=False/AwaitingSignatureVerification``.
        Nothing of the package is fetched or established; a revision that exists already
        (one that ran) is left as it is. Best effort: the refusal is what the pass raises."""
        self.verifier.say_verified(inp.kind, pkg, refusal, "")
        try:
            ensured = self.ensure_revision(c.EnsureRevisionInput(
                kind=inp.kind, package=inp.name, source=inp.source, digest=digest,
                generation=int(meta(pkg).get("generation") or 0)))
            self.verifier.hold(inp.kind, self.reader.revision(inp.kind, ensured.revision),
                               refusal, ensured.created)
        except LockwrightError as err:
            log(package=inp.name).warning("revision.refusal_not_recorded", error=err.message)

    def digest_of(self, pkg: Obj, ref: Reference, resolution: Resolution) -> str:
        """The digest ``ref`` names, asking the registry only when the pull policy says so.

        ``IfNotPresent`` trusts the digest this worker last resolved while the package's
        identifier is unchanged and its content is cached (v1.x); ``Never`` uses only that.
        """
        if ref.digest:
            return ref.digest
        policy = str(spec(pkg).get("packagePullPolicy") or "IfNotPresent")
        known = self.cache.alias(str(ref))
        unchanged = (pkg.get("status") or {}).get("currentIdentifier") == spec(pkg).get("package")
        if known and (policy == "Never" or (policy == "IfNotPresent" and unchanged)) and (
                self.cache.get(known) is not None):
            return known
        if policy == "Never":
            raise PackageNotFound(f"package {ref} not in cache and pull policy is Never")
        secrets = pull_secrets(pkg, resolution)
        with self.registries.naming_missing_secrets(secrets):
            digest = self.registries.registry(secrets).resolve(ref)
        self.cache.set_alias(str(ref), digest)
        return digest

    def record_applied(self, kind: str, pkg: Obj, resolution: Resolution,
                       verified: Outcome | None = None) -> None:
        """``status.appliedImageConfigRefs``: the client reasons cleared, this pull's added."""
        current = (pkg.get("status") or {}).get("appliedImageConfigRefs")
        ran = [verified.applied] if verified and not verified.skipped else []
        applied = imageconfig.merge_applied_refs(current, resolution.package_applied + ran)
        if applied != (current or []):
            self.kube.patch(PKG_V1, kind_of(kind), meta(pkg)["name"],
                            {"status": {"appliedImageConfigRefs": applied}},
                            subresource="status")

    @defn(name=c.ENSURE_REVISION)
    @edge
    def ensure_revision(self, inp: c.EnsureRevisionInput) -> c.EnsureRevisionResult:
        """Create the package's revision of ``inp.digest`` at its generation Inactive, or
        bring an existing one up to date (``rv.current_name`` names it)."""
        pkg = self.reader.package(inp.kind, inp.package)
        revs, adopted = self.adopt_orphans(inp.kind, pkg,
                                           self.reader.revisions_of(inp.kind, inp.package))
        top = max((int(spec(r).get("revision") or 0) for r in revs), default=0)
        wanted = revision_spec(inp.kind, pkg, inp.source, self.package_runtime)
        name = rv.current_name(inp.package, inp.digest, generation_of(inp, pkg), pkg, revs,
                               wanted, self.revision_names, adopted)
        existing = next((r for r in revs if meta(r)["name"] == name), None)
        if existing is None:
            try:
                created = self.kube.create(self.new_revision(
                    inp, pkg, name, wanted, top + 1, first=not revs))
            except KubeAlreadyExists:
                existing = self.reader.revision(inp.kind, name)
            else:
                log(package=inp.package, revision=name).info("revision.created")
                self.carry_verified(inp.kind, pkg, created)
                return c.EnsureRevisionResult(revision=name, number=top + 1, created=True,
                                              desired_state=spec(created)["desiredState"],
                                              fresh=True)
        if deleting(existing):
            # Re-created once it is gone (the watcher signals then), never while it goes.
            raise ObjectGone(f"{revision_kind(inp.kind)} {name} is being deleted")
        return self.refresh_revision(inp, pkg, existing, wanted, top)

    def carry_verified(self, kind: str, pkg: Obj, rev: Obj) -> None:
        """The package's ``Verified`` onto ``rev``, guarded where an External runtime's
        controller writes the revision's status too."""
        self.verifier.carry(kind, pkg, rev, guarded=self.package_runtime != DEPLOYMENT_RUNTIME)

    def adopt_orphans(self, kind: str, pkg: Obj, revs: list[Obj]
                      ) -> tuple[list[Obj], frozenset[str]]:
        """Revisions of this package's name that nobody controls, or that a package of
        this name but another UID controlled, become the package's (``rv.adopted_owners``).

        They are what a package deleted with ``propagationPolicy: Orphan`` left, or what a
        restore from a backup brought back; a new package of the same name takes them
        over, as Kubernetes controllers adopt orphans. Returns the revisions, and the names
        of those adopted now.
        """
        out, adopted = [], set()
        for rev in revs:
            refs = meta(rev).get("ownerReferences") or []
            owners = rv.adopted_owners(refs, kind_of(kind), pkg)
            if owners is not None and not deleting(rev):
                rev = self.kube.set_owners(PKG_V1, revision_kind(kind), meta(rev)["name"],
                                           owners, meta(rev)["resourceVersion"])
                log(package=meta(pkg)["name"], revision=meta(rev)["name"]).info(
                    "revision.adopted", stale_uids=[r.get("uid") for r in refs])
                adopted.add(str(meta(rev)["name"]))
            out.append(rev)
        return out, frozenset(adopted)

    def new_revision(self, inp: c.EnsureRevisionInput, pkg: Obj, name: str, wanted: Obj,
                     number: int, first: bool) -> Obj:
        """A new revision controlled by its package: Inactive, or Active when it is the
        package's first and the workflow said so (``inp.active_if_first``)."""
        state = c.ACTIVE if first and inp.active_if_first else c.INACTIVE
        return rv.new_revision(revision_kind(inp.kind), name,
                               self.metadata(inp, pkg), rv.package_owner(kind_of(inp.kind), pkg),
                               wanted, number, state)

    def metadata(self, inp: c.EnsureRevisionInput, pkg: Obj) -> Obj:
        """:func:`revision_metadata` of the package's revision, with the package's UID and
        generation when revisions are named by generation."""
        by_generation = self.revision_names == rv.BY_GENERATION
        return revision_metadata(inp.package, inp.digest, (
            str(meta(pkg)["uid"]), generation_of(inp, pkg)) if by_generation else None)

    def refresh_revision(self, inp: c.EnsureRevisionInput, pkg: Obj, rev: Obj, wanted: Obj,
                         top: int) -> c.EnsureRevisionResult:
        """Renumber a revision that is not the newest and copy changed package fields."""
        controller: Obj = next((r for r in meta(rev).get("ownerReferences") or []
                                if r.get("controller")), {})
        if controller.get("uid") != meta(pkg)["uid"]:
            raise KubeConflict(f"revision {meta(rev)['name']} exists but is not controlled "
                               f"by UID {meta(pkg)['uid']}")
        body, number = rv.refresh(rev, wanted, top, self.metadata(inp, pkg))
        if body:
            rev = self.kube.patch(PKG_V1, revision_kind(inp.kind), meta(rev)["name"], body)
        self.carry_verified(inp.kind, pkg, rev)
        installed = conditions.get_condition((rev.get("status") or {}).get("conditions"),
                                             conditions.REVISION_HEALTHY)
        return c.EnsureRevisionResult(revision=meta(rev)["name"], number=number,
                                      desired_state=str(spec(rev).get("desiredState")
                                                        or c.INACTIVE),
                                      fresh=installed is None)

    @defn(name=c.WRITE_PACKAGE_STATUS)
    @edge
    def write_package_status(self, inp: c.WritePackageStatusInput
                             ) -> c.WritePackageStatusResult:
        """Store the conditions and fields the workflow decided; Events on transitions."""
        pkg = self.reader.package(inp.kind, inp.name)
        fields: Obj = {"currentRevision": inp.current_revision,
                       "currentIdentifier": inp.current_identifier}
        if inp.resolved_package:
            fields["resolvedPackage"] = inp.resolved_package
        written = st.write_status(self.kube, kind_of(inp.kind), pkg, st.StatusChange(
            inp.conditions, inp.observed_generation, fields, inp.drop))
        if written is None:
            return c.WritePackageStatusResult(changed=False)
        if st.turned(written.before, written.after, conditions.HEALTHY, conditions.TRUE):
            self.reader.event(pkg, NORMAL, "InstallPackageRevision",
                       "Successfully installed package revision")
        if st.turned(written.before, written.after, "Synced", conditions.FALSE):
            self.reader.event(pkg, NORMAL, "ReconciliationPaused",
                       "Reconciliation is paused via the pause annotation")
        return c.WritePackageStatusResult(changed=True)


def generation_of(inp: c.EnsureRevisionInput, pkg: Obj) -> int:
    """The generation the pass resolved its digest at (the package's now when the input
    does not say): a spec changed since names the next pass's revision, not this one."""
    return inp.generation or int(meta(pkg).get("generation") or 0)


def _count(raw: object) -> int:
    """A count an annotation records, or -1 when there is none (or it is not a number)."""
    try:
        return int(str(raw)) if raw is not None else -1
    except ValueError:
        return -1
