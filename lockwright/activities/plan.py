"""``plan_revision``: what switching a package to a prepared revision would change.

Runs in the prepare step, after the Lock's check and the dry run of every write (for a
candidate of ``lockwright plan --package``, which has no revision to prepare, it makes
both itself, first). It streams both packages' cached documents once into fingerprints
(memory: a digest per object), reads the live CRD of each CRD that changed (what the
active revision established, with its stored versions), classifies the change
(:mod:`lockwright.crdcompat`) and checks the custom resources that CRD already holds
against the new schema, a page at a time (:mod:`lockwright.crvalidate`).
:func:`lockwright.upgrade.plan.assemble` builds the plan and
:func:`lockwright.upgrade.gate.weigh` adds what the evidence gate would hold on; the plan is
the activity's result (in the workflow's history and its ``plan`` query); the workflow
writes its verdict as the revision's ``PlanCompatible`` condition. A candidate whose API
digest the package's ``lockwright.dev/pin-api-digest`` refuses has that refusal, in the
install's words, as its first breaking change (:func:`lockwright.upgrade.plan.refused_by_pin`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from lockwright import contracts as c
from lockwright.activities.base import (
    PKG_V1,
    PKG_V1BETA1,
    beat,
    kind_of,
    log,
    meta,
    revision_kind,
)
from lockwright.activities.contents import Contents
from lockwright.activities.errors import defn, edge
from lockwright.activities.identity import Identity
from lockwright.activities.lock import LockKeeper
from lockwright.activities.objects import Establisher
from lockwright.activities.package import pull_secrets, revision_spec
from lockwright.activities.reads import PackageReader, Registries
from lockwright.activities.verify import Verifier
from lockwright import crdcompat, crvalidate, names
from lockwright.k8s import Kube, Obj
from lockwright.managed.convert import MRD_API_VERSION, MRD_KIND, mrd_active
from lockwright.objects.claims import summary_refs
from lockwright.objects.establish import establishable
from lockwright.objects.lock import LOCK_NAME, ObjectKey
from lockwright.oci.reference import parse
from lockwright.upgrade import gate
from lockwright.upgrade import plan as pl
from lockwright.upgrade import revisions as rv
from lockwright.xpkg.documents import iter_documents
from lockwright.xpkg.meta import is_meta

#: Custom resources read per page when checking them.
PAGE = 500
CRD_API = "apiextensions.k8s.io/v1"
#: A CRD's name and one of its versions.
Version = tuple[str, str]


class PlanActivities:
    """Plan an upgrade."""

    def __init__(self, kube: Kube, reader: PackageReader, contents: Contents,
                 registries: Registries, verifier: Verifier, keeper: LockKeeper,
                 establisher: Establisher, identity: Identity, package_runtime: str,
                 revision_names: str = rv.BY_GENERATION) -> None:
        """Plan candidates' revisions as ``ensure_revision`` would make them under
        ``package_runtime``, named as ``revision_names`` says."""
        self.kube = kube
        self.reader = reader
        self.contents = contents
        self.registries = registries
        self.verifier = verifier
        self.keeper = keeper
        self.establisher = establisher
        self.identity = identity
        self.package_runtime = package_runtime
        self.revision_names = revision_names

    @defn(name=c.PLAN_REVISION)
    @edge
    def plan_revision(self, inp: c.PlanRevisionInput) -> pl.Plan:
        """The plan of switching ``inp.package`` to ``inp.revision``; see the module."""
        new_rev, digest = self._new(inp)
        old_rev = self.kube.get(PKG_V1, revision_kind(inp.kind), inp.against)
        new = self.contents.cached(inp.kind, new_rev, digest).documents
        old = self.contents.cached(inp.kind, old_rev, inp.against_digest).documents if (
            old_rev is not None and inp.against_digest) else None
        sides = (_side(inp.kind, old), _side(inp.kind, new))
        _, changed, _ = pl.object_changes(sides[0].prints, sides[1].prints)
        inactive: list[str] = []
        verdicts, rejected, checked = self._crds(new, {k for k in changed if pl.is_crd(k)},
                                                 inactive)
        result = replace(gate.weigh(pl.assemble(
            inp.revision, inp.against, sides, (_image(old_rev), _image(new_rev)), verdicts,
            rejected, self._locked()), verdicts, checked), inactive=inactive[:pl.CRD_LIMIT])
        result = pl.refused_by_pin(result, self._pin(inp, new_rev, digest))
        log(package=inp.package, revision=inp.revision).info(
            "plan.ready", against=inp.against, breaking=result.breaking_count,
            held=result.held_count, added=result.added, changed=result.changed,
            removed=result.removed)
        return result

    def _new(self, inp: c.PlanRevisionInput) -> tuple[Obj, str]:
        """The planned revision and its digest; for a candidate, the revision an apply
        would make (nothing is written), its digest resolved and verified as an install's,
        and its writes checked and dry-run as the upgrade's preparation would make them."""
        if not inp.candidate:
            return self.reader.revision(inp.kind, inp.revision), inp.digest
        pkg = self.reader.package(inp.kind, inp.package)
        resolution, configs = self.registries.for_pull(inp.candidate)
        client = self.registries.registry(pull_secrets(pkg, resolution))
        digest = client.resolve(parse(resolution.resolved))
        self.verifier.verify(resolution, digest, client, configs)
        rev = {"metadata": {"name": self._candidate_name(inp, pkg, digest)},
               "spec": revision_spec(inp.kind, pkg, inp.candidate,
                                     self.package_runtime)}
        self._prepare(inp.kind, inp.package, rev, digest)
        return rev, digest

    def _candidate_name(self, inp: c.PlanRevisionInput, pkg: Obj, digest: str) -> str:
        """The name the candidate's revision would get: applying another ``spec.package``
        is a spec change, one more generation."""
        if self.revision_names == rv.BY_DIGEST:
            return names.digest_revision_name(inp.package, digest)
        generation = int(meta(pkg).get("generation") or 0)
        moved = inp.candidate != str((pkg.get("spec") or {}).get("package", ""))
        return names.revision_name(inp.package, digest, generation + int(moved))

    def _pin(self, inp: c.PlanRevisionInput, rev: Obj, digest: str) -> str:
        """A candidate's refusal by its package's API pin ("" when it passes); a prepared
        revision passed the pin when it was parsed."""
        if not inp.candidate:
            return ""
        summary = self.contents.summary(inp.kind, rev, digest)
        return self.identity.pin_refusal(inp.kind, inp.package, rev, summary)

    def _prepare(self, kind: str, package: str, rev: Obj, digest: str) -> None:
        """A candidate's checks, as an upgrade's preparation makes them: the Lock's claims
        (objects another package claimed but has not created yet), then the dry run."""
        refs = summary_refs(kind_of(kind), package, self.contents.summary(kind, rev, digest))
        lock = self.kube.get(PKG_V1BETA1, "Lock", LOCK_NAME) or {}
        self.keeper.refuse_claimed(lock, kind, package, rev, refs)
        self.establisher.check_candidate(kind, package, rev, digest)

    def _crds(self, documents: Path, changed: set[ObjectKey], inactive: list[str]
              ) -> tuple[list[crdcompat.Verdict], list[pl.Rejected], dict[Version, int]]:
        """A verdict per changed CRD, the resources its new schema would reject, and how
        many resources were checked per CRD and version. A CRD not served because its MRD
        is Inactive goes to ``inactive`` (nothing stored under it to check)."""
        verdicts: list[crdcompat.Verdict] = []
        rejected: list[pl.Rejected] = []
        checked: dict[Version, int] = {}
        for crd in _objects(documents, changed):
            live = self.kube.get(CRD_API, "CustomResourceDefinition", crdcompat.name_of(crd))
            if live is None:
                mrd = self.kube.get(MRD_API_VERSION, MRD_KIND, crdcompat.name_of(crd))
                inactive += [crdcompat.name_of(crd)] if mrd and not mrd_active(mrd) else []
                continue
            verdict = crdcompat.compare(live, crd)
            if verdict.changes or verdict.fields:
                verdicts.append(verdict)
                rejected += self._existing(live, crd, verdict, checked)
            beat()
        return verdicts, rejected, checked

    def _existing(self, live: Obj, crd: Obj, verdict: crdcompat.Verdict,
                  checked: dict[Version, int]) -> list[pl.Rejected]:
        """Per version both CRDs serve: the stored resources the new schema rejects (how
        many were checked goes to ``checked``)."""
        news = crdcompat.versions_of(crd)
        out = []
        for version, body in crdcompat.versions_of(live).items():
            if body.get("served") and version in news:
                # a CEL rule the live CRD has already judged every stored resource by is left out
                schema = crdcompat.new_rules_only(crdcompat.schema_of(body),
                                                  crdcompat.schema_of(news[version]))
                tally = self._check_version(live, version, schema,
                                            pl.removed_paths(verdict, version))
                checked[(crdcompat.name_of(live), version)] = tally.seen
                found = tally.rejected(crdcompat.name_of(live), version,
                                       str(live["spec"]["names"]["kind"]))
                out += [found] if found is not None else []
        return out

    def _check_version(self, live: Obj, version: str, schema: Obj,
                       removed: list[str]) -> pl.Tally:
        """The resources stored under ``live`` as ``version``, checked: those ``schema``
        rejects or that hold a value at a ``removed`` field, and how many there were."""
        kind = str(live["spec"]["names"]["kind"])
        tally = pl.Tally()
        for page in self.kube.pages(f"{live['spec']['group']}/{version}", kind, limit=PAGE):
            for obj in page:
                lost = [path for path in removed if pl.has_path(obj, path)]
                tally.add(_name(obj), crvalidate.validate(obj, schema), lost)
            beat()
        return tally

    def _locked(self) -> dict[str, str]:
        """The version of each package source in the Lock."""
        lock = self.kube.get(PKG_V1BETA1, "Lock", LOCK_NAME) or {}
        return {str(e.get("source")): str(e.get("version") or "")
                for e in lock.get("packages") or []}


def _side(kind: str, documents: Path | None) -> pl.Side:
    """Fingerprints of a package's establishable objects, and its meta document."""
    prints: dict[ObjectKey, bytes] = {}
    meta_doc: Obj = {}
    for doc in _documents(documents):
        if is_meta(doc):
            meta_doc = doc
        elif establishable(kind_of(kind), [doc]):
            prints[ObjectKey.of(doc)] = pl.fingerprint(doc)
    return pl.Side(prints, meta_doc)


def _documents(documents: Path | None) -> Iterator[Obj]:
    """The cache entry's documents, meta included; none without an entry."""
    if documents is None:
        return
    with documents.open("rb") as f:
        for _, doc in iter_documents(f):
            yield doc


def _objects(documents: Path, keys: set[ObjectKey]) -> Iterator[Obj]:
    """The documents named by ``keys``, one at a time."""
    if not keys:
        return
    for doc in _documents(documents):
        if not is_meta(doc) and ObjectKey.of(doc) in keys:
            yield doc


def _image(rev: Obj | None) -> str:
    return str(((rev or {}).get("spec") or {}).get("image") or "")


def _name(obj: Obj) -> str:
    m = meta(obj)
    return f"{m['namespace']}/{m['name']}" if m.get("namespace") else str(m.get("name"))
