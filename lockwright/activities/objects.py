"""``establish_objects``: all or nothing, controller if active (docs/crossplane.md §10 step 14).

Two streaming passes over the cached package's documents (``documents.jsonl``), in
batches, so a 2,000-CRD package never sits in memory whole. The first checks: it reads
every live object once, collects every conflict, and, when the revision takes control,
every CRD change Kubernetes or the CRD's clients cannot take (``lockwright.objects.crdcheck``);
while none is found it sends each planned write as a server-side dry run, so the API
validates and admits all of them (one refused with 409, its object changed since the read,
is re-read, re-planned and dry-run again, a few times at most). Control taken of definitions
already as shipped (an upgrade's hand-over of unchanged CRDs) writes owner references
only, and one such write of each kind is dry-run for all of them. Any conflict raises
``ConflictError`` naming who holds which object, any CRD finding ``PreflightError`` with
the fix, any API rejection ``KubeInvalid``: all before a single write. It keeps per object
only its decision and live metadata (``establish.Seen``). The second rebuilds those writes
and makes them, batch by batch. Writes are compare-and-swap (the ``resourceVersion`` read
in the first pass travels with each update, a write of owner references alone tests the
metadata it was decided on, so a status written since does not refuse it, and a create
fails if the name was taken since). A write refused so reads its object again, and is
planned, checked, dry-run and sent again, a few times at most; an object that keeps
changing fails the attempt with ``KubeConflict`` and the retry re-plans everything.

An upgrade's switch on the worker that prepared it writes from the preparation's checks
without reading every object again (:class:`lockwright.activities.trust.Kept`): its writes
carry the ``resourceVersion`` (or the tested metadata) the preparation read, and one
refused so is checked again.

A first install (the revision takes control and the package's first object does not
exist) skips the checking pass, whose reads and dry runs would double the API work of a
2,000-CRD provider: it creates every object straight away and, should the API refuse one
or a name turn out taken, deletes what it created (then fails as the check would, or
falls back to it). A worker killed in between leaves created objects its retry adopts;
they are owned by the revision, so they go with it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import replace
from itertools import islice
from pathlib import Path

from lockwright import contracts as c
from lockwright.activities.base import (
    beat,
    kind_of,
    log,
    meta,
    pulse,
    revision_kind,
    service_name,
    spec,
    stream_objects,
)
from lockwright.activities.contents import Contents
from lockwright.activities.definitions import Definitions
from lockwright.activities import trust
from lockwright.activities.checked import Checked, Surroundings, dry_run_result, refuse
from lockwright.activities.errors import defn, edge
from lockwright.activities.lock import LOCK_API
from lockwright.activities.reads import PackageReader, RuntimeConfigs
from lockwright.activities.release import Release
from lockwright import names
from lockwright.errors import (
    ConflictError,
    KubeAlreadyExists,
    KubeConflict,
    KubeInvalid,
    PreflightError,
)
from lockwright.identity.record import stamped
from lockwright.k8s import NORMAL, WARNING, Kube, Obj
from lockwright.managed.convert import Conversion, reserved
from lockwright.managed.policy import MSG_ACTIVATED, REASON_ACTIVATED
from lockwright.objects import crdcheck, holders
from lockwright.objects import establish as est
from lockwright.objects.establish import Ref
from lockwright.objects.lock import LOCK_NAME, ObjectKey
from lockwright.runtime import tls

BATCH = 100
#: Objects read, dry-run or written at once by one establish.
ESTABLISH_WORKERS = 8
UNDO_DEADLINE_S, UNDO_POLL_S = 60.0, 0.05
#: apiVersion, kind, name, namespace of an object this attempt created.
Address = tuple[str, str, str, str | None]
SYNC_FAILED = "cannot establish control of object: "
#: Dry runs a batch gets when objects change between their read and their dry run (409);
#: each re-reads what changed. A new CRD's status settles in a few writes.
DRY_RUN_ATTEMPTS = 5
#: The owner UID a candidate's dry-run writes carry: no revision exists for it.
CANDIDATE_UID = "00000000-0000-0000-0000-000000000000"


def batches(revision: est.Revision, documents: Path, size: int = BATCH) -> Iterator[list[Obj]]:
    """The package's establishable objects in lists of ``size``, from ``documents.jsonl``
    (CRDs converted to MRDs, each Active one followed by its CRD, when the revision says),
    each definition annotated with its type digest (``lockwright.identity.record``)."""
    # Type digests are taken of the objects as shipped: before conversion and injection.
    objects: Iterator[Obj] = (stamped(o) for o in stream_objects(documents)
                              if est.establishable(revision.package_kind, [o]))
    if revision.conversion is not None:
        objects = (x for o in objects for x in revision.conversion.objects(o))
    while chunk := list(islice(objects, size)):
        yield chunk


class ObjectActivities:
    """establish_objects."""

    def __init__(self, establisher: Establisher) -> None:
        self.establisher = establisher

    @defn(name=c.ESTABLISH_OBJECTS)
    @edge
    def establish_objects(self, inp: c.EstablishObjectsInput) -> c.EstablishObjectsResult:
        """Create/adopt (active) or co-own (inactive) every object; nothing on conflict."""
        return self.establisher.establish(inp)


class Establisher:
    """Establish, check and release a revision's objects."""

    def __init__(self, kube: Kube, reader: PackageReader, contents: Contents,
                 runtime_configs: RuntimeConfigs, definitions: Definitions, namespace: str,
                 workers: int = ESTABLISH_WORKERS) -> None:
        self.kube = kube
        self.definitions = definitions
        self.reader = reader
        self.contents = contents
        self.runtime_configs = runtime_configs
        self.namespace = namespace
        self.workers = workers
        #: Preparations' checks, for their switches on this worker.
        self.kept: trust.Kept[Checked] = trust.Kept()

    def establish(self, inp: c.EstablishObjectsInput) -> c.EstablishObjectsResult:
        """All or nothing: see the module."""
        rev = self.reader.revision(inp.kind, inp.revision)
        documents = self.contents.cached(inp.kind, rev, inp.digest).documents
        with ThreadPoolExecutor(self.workers) as pool:
            around = self.surroundings(pool, inp, rev)
            revision = replace(self.est_revision(inp, rev, around.package),
                               conversion=self.definitions.conversion(inp.kind, rev, inp.digest,
                                                                      documents))
            with self.saying_why(rev):
                fresh = self._fresh(pool, inp, revision, documents, around.target)
                if fresh is not None:
                    (refs, counts), checked = fresh, Checked()
                else:
                    refs, checked = self._checked_or_kept(pool, inp, revision, documents,
                                                          around)
                    if inp.dry_run:  # preparing an upgrade: all checked, nothing written
                        return dry_run_result(refs, checked)
                    counts = self._write_all(pool, revision, documents, checked, around.target)
        self.say_adopted(rev, checked.stale)
        activated = self.say_activated(revision.conversion)
        refs, (definitions, active) = self._record(inp, rev, revision, refs)
        created = counts[est.Op.CREATE]
        updated = counts[est.Op.UPDATE] + counts[est.Op.ADOPT] + counts[est.Op.TAKE]
        log(package=inp.package, revision=inp.revision, digest=inp.digest).info(
            "objects.established", objects=len(refs), created=created, updated=updated,
            owned=counts[est.Op.OWN], control=inp.control, stale_adopted=len(checked.stale),
            trusted=checked.trusted, from_preparation=checked.kept,
            rechecked=checked.rechecked, activated_by_policy=len(activated))
        return c.EstablishObjectsResult(objects=len(refs), created=created,
                                        updated=updated + counts[est.Op.OWN],
                                        definitions=definitions, active_definitions=active,
                                        trusted=checked.trusted,
                                        activated=activated[:c.MAX_NAMES],
                                        activated_count=len(activated),
                                        from_preparation=checked.kept,
                                        rechecked=checked.rechecked)

    def surroundings(self, pool: ThreadPoolExecutor, inp: c.EstablishObjectsInput,
                     rev: Obj) -> Surroundings:
        """The package, the Lock and the webhook target, read side by side: none depends
        on another, and one after another they were a quarter of a small switch's
        establish."""
        package = pool.submit(self.reader.package, inp.kind, inp.package)
        lock = pool.submit(self.kube.get, LOCK_API, "Lock", LOCK_NAME)
        target = pool.submit(self.webhook_target, inp, rev)
        return Surroundings(package=package.result(), lock=lock.result() or {},
                            target=target.result())

    def _checked_or_kept(self, pool: ThreadPoolExecutor, inp: c.EstablishObjectsInput,
                         revision: est.Revision, documents: Path, around: Surroundings
                         ) -> tuple[list[dict[str, str]], Checked]:
        """The checking pass. A switch takes its preparation's, kept by this worker, when
        it was checked over the same revision, webhook target, basis and fingerprints
        (:class:`lockwright.activities.trust.Kept`): its writes carry the
        ``resourceVersion`` read then, so an object changed since is refused and checked
        again on its own. A preparation's is kept for its switch."""
        start = trust.basis(around.package, around.lock, inp.digest, inp.revision)
        target = around.target
        key, over = (inp.kind, inp.package, inp.revision, inp.digest), (revision, target, start)
        kept = (self.kept.take(key, (*over, tuple(inp.trust)))
                if inp.trust and not inp.dry_run else None)
        if kept is not None:
            return est.sort_object_refs(kept.refs), replace(kept, trusted=len(kept.seen),
                                                            kept=True)
        refs, checked = self._check(pool, revision, documents, *target, (start, inp.trust))
        if inp.dry_run:
            self.kept.keep(key, (*over, tuple(checked.prints)), checked)
        return refs, checked

    def _record(self, inp: c.EstablishObjectsInput, rev: Obj, revision: est.Revision,
                refs: list[dict[str, str]]
                ) -> tuple[list[dict[str, str]], tuple[int, int]]:
        """Write what the revision established (``status.objectRefs``) and, when it
        controls MRDs, how many are Active (the annotation activation compares against).

        Returns:
            The refs as written, and (MRDs, Active MRDs).
        """
        counts = est.definition_counts(refs)
        if revision.conversion is not None:  # the names of Inactive MRDs' CRDs too
            refs = est.sort_object_refs(reserved(refs))
        writes: list[tuple[Obj, str | None]] = [({"status": {"objectRefs": refs}}, "status")]
        recorded = (meta(rev).get("annotations") or {}).get(c.ACTIVE_DEFINITIONS_ANNOTATION)
        if counts[0] and inp.control and recorded != str(counts[1]):
            writes.append(({"metadata": {"annotations": {
                c.ACTIVE_DEFINITIONS_ANNOTATION: str(counts[1])}}}, None))
        self._patch_side_by_side(revision, writes)
        return refs, counts

    def _patch_side_by_side(self, revision: est.Revision,
                            writes: list[tuple[Obj, str | None]]) -> None:
        """Merge-patch the revision once per (body, subresource), all at once: the status
        and the metadata, neither read back, take 20-40 ms each on a busy kube-apiserver."""
        with ThreadPoolExecutor(len(writes)) as pool:
            for done in [pool.submit(self.kube.patch, est.PKG_API_VERSION, revision.kind,
                                     revision.name, body, subresource=sub)
                         for body, sub in writes]:
                done.result()

    @contextmanager
    def saying_why(self, rev: Obj) -> Iterator[None]:
        """A refusal (conflict, CRD finding, API rejection) also goes on the revision as
        a ``SyncPackage`` Warning Event."""
        try:
            yield
        except (ConflictError, PreflightError, KubeInvalid) as exc:
            self.reader.event(rev, WARNING, "SyncPackage", SYNC_FAILED + exc.message)
            raise

    def say_activated(self, conversion: Conversion | None) -> list[c.Activated]:
        """A Normal ``ActivateManagedResourceDefinition`` Event on the policy for each MRD
        this install established Active because that policy names it (as the activation
        workflow says it when it activates one); those MRDs, each with its policy."""
        pairs = conversion.activated if conversion is not None else ()
        if not pairs:
            return []
        policies = {meta(o)["name"]: o for o in self.definitions.policies()}
        said = [(policies[by], name) for name, by in pairs if by in policies]
        with ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(lambda x: self.reader.event(
                x[0], NORMAL, REASON_ACTIVATED, f"{MSG_ACTIVATED} {x[1]}"), said))
        return [c.Activated(definition=name, policy=by) for name, by in pairs]

    def say_adopted(self, rev: Obj, stale: list[holders.Stale]) -> None:
        """An ``AdoptStaleOwner`` Event on the revision per stale holder it took objects
        from, naming the holder's old UID (``lockwright.objects.holders``)."""
        for message in holders.adoption_messages(stale):
            self.reader.event(rev, NORMAL, "AdoptStaleOwner", message)

    def check_candidate(self, kind: str, package: str, rev: Obj, digest: str) -> int:
        """A candidate's writes (``lockwright plan --package``), checked and dry-run as an
        upgrade's preparation makes them, for the revision an apply would create.

        Its UID is a placeholder (a dry run keeps nothing) and no Event is written: the
        cluster stays as it was. Returns how many objects were checked.

        Raises:
            ConflictError, PreflightError, KubeInvalid: as the preparation would.
        """
        inp = c.EstablishObjectsInput(kind=kind, package=package, digest=digest, control=True,
                                      revision=str(meta(rev)["name"]))
        documents = self.contents.cached(kind, rev, digest).documents
        revision = replace(self.est_revision(inp, {**rev, "metadata": {"uid": CANDIDATE_UID}},
                                             self.reader.package(kind, package)),
                           conversion=self.definitions.conversion(kind, rev, digest, documents))
        ca, service = self.webhook_target(inp, rev)
        with ThreadPoolExecutor(self.workers) as pool:
            refs, _ = self._check(pool, revision, documents, ca, service)
        return len(refs)

    def est_revision(self, inp: c.EstablishObjectsInput, rev: Obj, pkg: Obj) -> est.Revision:
        """The revision of package ``pkg`` as ``lockwright.objects.establish`` sees it."""
        return est.Revision(
            name=inp.revision, uid=str(meta(rev)["uid"]), kind=revision_kind(inp.kind),
            package_kind=kind_of(inp.kind), package_name=inp.package,
            package_uid=str(meta(pkg)["uid"]), active=inp.control,
            common_labels=dict(spec(rev).get("commonLabels") or {}),
            common_annotations=dict(spec(rev).get("commonAnnotations") or {}))

    def webhook_target(self, inp: c.EstablishObjectsInput, rev: Obj) -> tuple[bytes | None, str]:
        """The CA bundle and Service name webhooks point at (active runtimes only).

        Under the External runtime the Secret is the one its controller reports in the
        revision's ``status.tlsServerSecretName`` (none yet: no bundle).
        """
        if not inp.control or inp.kind not in c.KINDS_WITH_RUNTIME:
            return None, inp.package
        drc, _ = self.runtime_configs.runtime_config(rev, required=False)
        secret_name = (spec(rev).get("tlsServerSecretName")
                       or names.tls_server_secret_name(inp.package))
        if self.runtime_configs.external:
            secret_name = (rev.get("status") or {}).get("tlsServerSecretName")
            if not secret_name:
                return None, inp.package
        secret = self.kube.get("v1", "Secret", str(secret_name), self.namespace)
        data = (secret or {}).get("data") or {}
        ca = tls.ca_bundle(data) if data.get(tls.TLS_CERT) else None
        return ca, service_name(inp.package, drc)

    def _fresh(self, pool: ThreadPoolExecutor, inp: c.EstablishObjectsInput,
               revision: est.Revision, documents: Path, target: tuple[bytes | None, str]
               ) -> tuple[list[dict[str, str]], dict[est.Op, int]] | None:
        """A first install's objects created straight away, or None to check first.

        Taken when the revision takes control, no preparation checked its writes (a
        switch's did: it reads nothing more here), and the package's first object does
        not exist (a first install, most likely): then every write is a create, and the
        checking pass (a read and a dry run per object) would double the work. All or
        nothing still holds: a create the API refuses, or a name found taken, deletes
        what this attempt created; a refusal then fails as the checking pass would, a
        taken name falls back to it (it names who holds what).
        """
        if (not inp.control or inp.dry_run or inp.trust
                or self._first_exists(revision, documents)):
            return None
        created: list[Address] = []  # addresses only: 2,000 CRDs are 100 MB of objects
        try:
            refs = self._create_all(pool, revision, documents, target, created)
        except KubeAlreadyExists:
            self._undo(created)
            return None
        except KubeInvalid:
            self._undo(created)
            raise
        return est.sort_object_refs(refs), {**dict.fromkeys(est.Op, 0),
                                            est.Op.CREATE: len(created)}

    def _first_exists(self, revision: est.Revision, documents: Path) -> bool:
        first = next(batches(revision, documents, 1), [])
        return any(self.kube.get(str(o["apiVersion"]), str(o["kind"]),
                                 str(o["metadata"]["name"])) is not None for o in first)

    def _create_all(self, pool: ThreadPoolExecutor, revision: est.Revision,
                    documents: Path, target: tuple[bytes | None, str],
                    created: list[Address]) -> list[dict[str, str]]:
        """Create every object, batch by batch; ``created`` lists those made so far."""
        refs: list[dict[str, str]] = []
        for done, batch in enumerate(batches(revision, documents)):
            plan = est.plan_establish(revision, batch, {}, ca_bundle=target[0],
                                      namespace=self.namespace, service=target[1])
            refs.extend(plan.object_refs)
            futures = [pool.submit(self.kube.create, a.object) for a in plan.actions]
            wait(futures)
            created.extend(_address(a.object) for a, f in zip(plan.actions, futures,
                                                              strict=True)
                           if f.exception() is None)
            for future in futures:
                future.result()  # the batch's first failure, once every create is known
            beat(done)
        return refs

    def _undo(self, created: list[Address]) -> None:
        """Delete what a refused first install created, and wait until it is gone (a CRD
        goes after its clean-up finalizer): the checking pass that may follow must not
        find it terminating and take it for installed.

        Raises:
            KubeConflict: still there after ``UNDO_DEADLINE_S`` (retried).
        """
        for api_version, kind, name, namespace in created:
            self.kube.delete(api_version, kind, name, namespace)
        deadline = time.monotonic() + UNDO_DEADLINE_S
        for api_version, kind, name, namespace in created:
            while self.kube.get(api_version, kind, name, namespace) is not None:
                if time.monotonic() > deadline:
                    raise KubeConflict(f"{kind} {name}, created by a refused attempt, is "
                                       "still being deleted")
                pulse()  # not beat(): an undo runs to its end, cancelled or not
                time.sleep(UNDO_POLL_S)  # polling the API for the deletion, not a test

    def _check(self, pool: ThreadPoolExecutor, revision: est.Revision, documents: Path,
               ca: bytes | None, service: str,
               prepared: tuple[bytes, list[str]] = (b"", [])
               ) -> tuple[list[dict[str, str]], Checked]:
        """Read, plan, preflight and dry-run every object; raise before any write.

        ``prepared``: the fingerprints' basis, and those of the preparation's dry run: a
        batch whose fingerprint is the preparation's is not dry-run again
        (:mod:`lockwright.activities.trust`).
        """
        checked, dry = Checked(), self.kube.dry_runs()
        start, trusted = prepared
        for i, batch in enumerate(batches(revision, documents)):
            plan, live, findings = self._read_and_plan(pool, revision, batch, (ca, service),
                                                       checked.current)
            if checked.clean and not plan.conflicts and not findings:
                # Only while nothing forbids writing: once the attempt will fail, dry
                # runs would be wasted. A batch planned as the preparation dry-ran it is
                # trusted; any other is dry-run (re-read and re-planned on a 409).
                prints = trust.fingerprint(start, plan.actions, live)
                if i < len(trusted) and trusted[i] == prints:
                    checked.trusted += len(plan.actions)
                else:
                    plan, live = self._dry_run(pool, dry, revision, batch, (plan, live),
                                               (ca, service), checked.current,
                                               checked.takes_passed)
                    findings = crdcheck.preflight(batch, live) if revision.active else []
                    prints = trust.fingerprint(start, plan.actions, live)
                checked.prints.append(prints)
            checked.add(plan, live, findings)
            beat()
        refuse(checked)
        return est.sort_object_refs(checked.refs), checked

    def _read_and_plan(self, pool: ThreadPoolExecutor, revision: est.Revision,
                       batch: list[Obj], target: tuple[bytes | None, str],
                       current: dict[str, str | None]
                       ) -> tuple[est.Plan, dict[ObjectKey, Obj], list[crdcheck.Finding]]:
        """A batch's plan and CRD findings over its objects as the watch cache has them
        (cheaper for a busy API server than reading etcd: every write the plan makes is a
        compare-and-swap), read again from etcd when the plan would refuse: a refusal is
        never made on what may be moments old."""
        for cached in (True, False):
            plan, live = self._plan(pool, revision, batch, *target, current, cached=cached)
            findings = crdcheck.preflight(batch, live) if revision.active else []
            if not plan.conflicts and not findings:
                break
        return plan, live, findings

    def _plan(self, pool: ThreadPoolExecutor, revision: est.Revision, batch: list[Obj],
              ca: bytes | None, service: str, current: dict[str, str | None],
              cached: bool = False) -> tuple[est.Plan, dict[ObjectKey, Obj]]:
        prepared = est.prepare(batch, revision, ca, self.namespace, service)
        found = pool.map(lambda o: self.kube.get(str(o["apiVersion"]), str(o["kind"]),
                                                 str(o["metadata"]["name"]), cached=cached),
                         prepared)
        live = {ObjectKey.of(o): f for o, f in zip(prepared, found, strict=True) if f}
        self._look_up(revision, live, current)
        return est.plan_establish(revision, batch, live, ca_bundle=ca, namespace=self.namespace,
                                  service=service, current=current), live

    def _look_up(self, revision: est.Revision, live: dict[ObjectKey, Obj],
                 current: dict[str, str | None]) -> None:
        """Add to ``current`` the UID now of each revision a controller reference in
        ``live`` names that decides who holds it (once each, however many name it)."""
        for name in {n for o in live.values() if (n := holders.to_look_up(o, revision))}:
            if name not in current:
                found = self.kube.get(est.PKG_API_VERSION, revision.kind, name)
                current[name] = str(meta(found)["uid"]) if found else None

    def _dry_run(self, pool: ThreadPoolExecutor, dry: Kube, revision: est.Revision,
                 batch: list[Obj], planned: tuple[est.Plan, dict[ObjectKey, Obj]],
                 target: tuple[bytes | None, str], current: dict[str, str | None],
                 takes: set[est.Kind]) -> tuple[est.Plan, dict[ObjectKey, Obj]]:
        """Dry-run the planned writes of ``batch`` (of the takes of control, one of each
        kind not in ``takes``, which gains the kinds whose take passes: ``to_dry_run``).
        A write refused with 409 (its object changed since the read: a busy server's
        controllers write a new CRD's status) re-reads that object, re-plans the batch and
        is dry-run again, at most ``DRY_RUN_ATTEMPTS`` times.

        Returns:
            The plan and live objects the dry runs passed with (the writes carry them).

        Raises:
            KubeConflict: an object kept changing (transient: the activity retries).
        """
        plan, live = planned
        actions = plan.actions
        for _ in range(DRY_RUN_ATTEMPTS):
            checking = est.to_dry_run(actions, frozenset(takes))
            passed = list(pool.map(lambda a: self._dry_write(a, dry), checking))
            takes |= est.takes_passed(checking, passed)
            changed = [a for a, ok in zip(checking, passed, strict=True) if not ok]
            if not changed:
                return plan, live
            live = self._reread(pool, live, [a.object for a in changed])
            self._look_up(revision, live, current)
            plan = est.plan_establish(revision, batch, live, ca_bundle=target[0],
                                      namespace=self.namespace, service=target[1],
                                      current=current)
            keys = {a.key for a in changed}
            actions = [a for a in plan.actions if a.key in keys]  # none on a conflict
        raise KubeConflict(f"{changed[0].key} kept changing while its write was dry-run: "
                           f"gave up after {DRY_RUN_ATTEMPTS} attempts")

    def _dry_write(self, action: est.Action, dry: Kube) -> bool:
        """Dry-run one write; False when the object changed since it was read (409)."""
        try:
            self._write(action, dry)
        except KubeConflict:  # a stale resourceVersion, or a name taken since (_write)
            log().info("establish.dry_run_conflict", object=str(action.key))
            return False
        return True

    def _reread(self, pool: ThreadPoolExecutor, live: dict[ObjectKey, Obj],
                objects: list[Obj]) -> dict[ObjectKey, Obj]:
        """``live`` with ``objects`` read again (dropped when gone)."""
        found = pool.map(lambda o: self.kube.get(str(o["apiVersion"]), str(o["kind"]),
                                                 str(o["metadata"]["name"])), objects)
        fresh = dict(live)
        for obj, now in zip(objects, found, strict=True):
            fresh.pop(ObjectKey.of(obj), None)
            fresh.update({ObjectKey.of(obj): now} if now is not None else {})
        return fresh

    def _write_all(self, pool: ThreadPoolExecutor, revision: est.Revision, documents: Path,
                   checked: Checked, target: tuple[bytes | None, str]) -> dict[est.Op, int]:
        counts = {op: 0 for op in est.Op}
        for done, batch in enumerate(batches(revision, documents)):
            actions = est.replan(revision, batch, checked.seen, ca_bundle=target[0],
                                 namespace=self.namespace, service=target[1])
            ops = list(pool.map(self._write_once, actions))
            changed = [a for a, op in zip(actions, ops, strict=True) if op is None]
            done_ops = [op for op in ops if op is not None]
            if changed:
                checked.rechecked += len(changed)
                done_ops += self._rewrite(pool, revision, batch, changed, target,
                                          checked.current)
            for op in done_ops:
                counts[op] += 1
            beat(done)
        return counts

    def _write_once(self, action: est.Action) -> est.Op | None:
        """Make one planned write; None when its object changed since it was read (409)."""
        try:
            return self._write(action)
        except KubeConflict:
            log().info("establish.write_conflict", object=str(action.key))
            return None

    def _rewrite(self, pool: ThreadPoolExecutor, revision: est.Revision, batch: list[Obj],
                 changed: list[est.Action], target: tuple[bytes | None, str],
                 current: dict[str, str | None]) -> list[est.Op]:
        """The writes of ``batch`` refused with 409, their objects changed since the check
        read them (a busy API server's controllers write a new CRD's status for minutes):
        each object read, planned, checked and dry-run again as the check does, then
        written, at most ``DRY_RUN_ATTEMPTS`` times (not failing the attempt, whose retry
        read and dry-ran every object again).

        Raises:
            ConflictError, PreflightError: what the check would raise for those objects now.
            KubeConflict: an object kept changing (transient: the activity retries).
        """
        dry, written = self.kube.dry_runs(), []
        for _ in range(DRY_RUN_ATTEMPTS):
            keys = {a.key for a in changed}
            subset = [o for o in batch if ObjectKey.of(o) in keys]
            plan, live = self._dry_run(pool, dry, revision, subset, self._plan(
                pool, revision, subset, *target, current), target, current, set())
            again = Checked()
            again.add(plan, live, crdcheck.preflight(subset, live) if revision.active else [])
            refuse(again)
            ops = list(pool.map(self._write_once, plan.actions))
            written += [op for op in ops if op is not None]
            changed = [a for a, op in zip(plan.actions, ops, strict=True) if op is None]
            if not changed:
                return written
        raise KubeConflict(f"{changed[0].key} kept changing while it was written: gave up "
                           f"after {DRY_RUN_ATTEMPTS} attempts")

    def _write(self, action: est.Action, kube: Kube | None = None) -> est.Op:
        """Make one planned write through ``kube`` (this activity's, or a dry-run view).

        The dry run and the real write share this code, so the API checks exactly what
        will be sent.
        """
        kube, obj = kube or self.kube, action.object
        if action.op is est.Op.CREATE:
            try:
                kube.create(obj)
            except KubeAlreadyExists as exc:
                raise KubeConflict(f"{action.key} appeared while establishing") from exc
        elif action.op in (est.Op.UPDATE, est.Op.ADOPT):
            kube.update(obj)
        elif action.op in (est.Op.OWN, est.Op.TAKE):
            kube.set_owners_if(str(obj["apiVersion"]), str(obj["kind"]), action.key.name,
                               obj["metadata"]["ownerReferences"], action.expect)
        return action.op

    def release_objects(self, kind: str, rev: Obj,
                        taken: frozenset[Ref] = frozenset()) -> int:
        """Deactivation: drop the revision's controller flag on each of its objects but
        ``taken`` (lockwright.activities.release); how many it still controlled."""
        return Release(self.kube, self.workers).run(kind, rev, taken)


def _address(obj: Obj) -> Address:
    meta_ = obj["metadata"]
    return (str(obj["apiVersion"]), str(obj["kind"]), str(meta_["name"]),
            meta_.get("namespace"))
