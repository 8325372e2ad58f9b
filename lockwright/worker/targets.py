"""Which package workflows a Kubernetes change concerns: the watcher's pure core.

The watcher feeds every list and watch event through :class:`Index`; each call returns
the :class:`Target` list to signal (``look_again``, with signal-with-start). Rules:

- A package (Provider, Configuration, Function) targets its own workflow when it is added
  or deleted, or when its ``generation``, ``deletionTimestamp``, ``crossplane.io/paused``,
  ``lockwright.io/accept-plan`` (accepting a breaking plan) or
  ``lockwright.dev/pin-api-digest`` (the API its revisions must have) changed. Status and
  metadata-only writes (the workflow's own) are ignored, so the watcher does not echo the
  workflow's writes back to it.
- A revision targets its package (controller ownerReference, else the label
  ``pkg.crossplane.io/package``) under the same rules, but for one: a revision added under
  the controller reference of the package object the index knows (its UID) was made by
  that package's own pass, which goes on with what it made, so it targets no one. Every
  install and switch-over ran a second pass for it (read, resolve, ensure, status). A
  revision added by anyone else (by hand, restored from a backup: another UID) still does.
- A DeploymentRuntimeConfig targets the Providers and Functions whose
  ``spec.runtimeConfigRef.name`` (default ``default``) names it, and the packages matched by
  an ImageConfig whose ``spec.runtime.configRef`` names it.
- An ImageConfig targets every package whose ``spec.package`` starts with one of its
  ``matchImages`` prefixes, before or after the change.
- A Secret of the system namespace targets the packages naming it in
  ``spec.packagePullSecrets`` and the packages matched by an ImageConfig whose
  ``spec.registry.authentication.pullSecretRef.name`` (or a verification key's
  ``secretRef.name``) names it, so a package applied before its pull Secret or its key
  heals when the Secret appears. Secrets have no ``generation``: one counts
  as changed when added, deleted, or its ``resourceVersion`` moved. Only metadata is ever
  kept (see :func:`metadata_only`); unreferenced Secrets (lockwright's own TLS) target no one.
- The dependency resolver (``resolve:lock``) is targeted when the Lock changes (its
  ``generation``: the resolver's own status and annotation writes do not move it) while it
  holds or held dependencies, becomes empty or stops being empty, or is first seen; and,
  while the Lock holds dependencies, with every package's own change and every change of
  an ImageConfig with a pull secret (it decides which tags the resolver may list). Without
  dependencies there is nothing to resolve: a cluster that has none pays no resolution
  per install.
- The activation workflow (``activate:definitions``) is targeted when an activation policy
  changes, an MRD is added, deleted or changes its spec (its state), or a CRD of an MRD's
  name comes or goes; but not for an MRD (or its CRD) whose controlling revision's install
  has not recorded its count of Active MRDs yet: the recording targets it, once for all
  of them. MRDs and CRDs are watched as metadata only (an MRD holds a whole CRD schema).
  A CRD of an MRD's name written (its ``Established`` condition among the writes) targets
  it only while some policy is not ``Established``: once all are, a pass reads no CRD, so
  a write changes nothing it decides (a 2,000-CRD provider's switch-over writes every CRD,
  and sent 2,639 signals). Such a target is ``deferrable``: kube-apiserver establishes a
  big provider's CRDs one by one over minutes, and a pass per write ran back to back. A
  policy whose ``Established`` condition stops being True (a pass found new MRDs for it)
  targets it too, so a CRD Established before the watcher saw the policy wait is looked
  at again.
- A CRD that is added or written (its ``resourceVersion`` moved: being Established is a
  status write) targets the packages whose revision waits on an API it may serve: its
  ``RevisionHealthy`` condition says ``cannot resolve package dependencies`` naming the
  API (:func:`lockwright.dependencies.apis.waiting_for`), ``plural.group`` as the CRD is
  named or, for ``Kind.group``, any CRD of the group. So a package requiring an API
  (``lockwright.dev/requires-apis``) installs when a CRD serving it appears, by hand or
  because an MRD was activated, not at its next unhealthy recheck. A revision whose
  status starts to wait on such an API while a CRD that may serve it exists targets its
  package too (the CRD came between the pass's discovery read and its status write).
- A list (start, periodic resync) targets every package and revision when ``signal_all``
  (lists of DRCs, ImageConfigs and Secrets then target nothing: the package lists cover
  everyone); a relist after ``410 Gone`` targets only what changed, appeared or vanished
  since the index last saw it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lockwright.contracts import (
    ACTIVE_DEFINITIONS_ANNOTATION,
    CONFIGURATION,
    FUNCTION,
    PAUSED_ANNOTATION,
    PROVIDER,
    TASK_QUEUE,
    UPGRADE_GATE_ANNOTATION,
    LookAgainInput,
    PackageInput,
    activation_workflow_id,
    package_workflow_id,
    protection_workflow_id,
    resolve_workflow_id,
)
from lockwright.conditions import REVISION_HEALTHY
from lockwright.dependencies.apis import may_serve, waiting_for
from lockwright.identity.apis import ApiRef
from lockwright.identity.names import PIN_API
from lockwright.identity.surface import established
from lockwright.k8s import deleting
from lockwright.objects.holders import controller_name
from lockwright.upgrade.plan import ACCEPT_PLAN_ANNOTATION

Obj = dict[str, Any]
PACKAGE_LABEL = "pkg.crossplane.io/package"
DEFAULT_RUNTIME_CONFIG = "default"
XP_EXTENSIONS = "apiextensions.crossplane.io"
DEFAULT_SYSTEM_NAMESPACE = "crossplane-system"  # the watcher binds Settings.system_namespace
# The metadata a metadata-only object keeps: not annotations, which may carry contents
# (``kubectl apply`` copies a whole Secret, data included, into last-applied-configuration).
# Owner references: a CRD's name the Provider whose type it is (deletion protection).
KEPT_METADATA = ("name", "namespace", "uid", "resourceVersion", "generation",
                 "deletionTimestamp", "ownerReferences")


@dataclass(frozen=True)
class Resource:
    """One watched resource type: where it lives and what it means to the watcher."""

    kind: str
    plural: str
    version: str
    # package | revision | runtimeconfig | imageconfig | secret | lock | policy | definition
    # | crd
    role: str
    package_kind: str = ""  # for packages and revisions: provider, configuration, function
    group: str = "pkg.crossplane.io"  # "" for the core API group (/api/v1)
    namespace: str = ""  # namespaced resources: the one namespace watched
    metadata_only: bool = False  # ask for and keep only metadata: never hold the contents

    @property
    def path(self) -> str:
        """The collection's URL path; core resources live under ``/api``, not ``/apis``."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"{root}{scope}/{self.plural}"

    def describe(self, name: str) -> str:
        """``Kind name``, or ``Kind namespace/name``, as signal reasons and logs name it."""
        return f"{self.kind} {self.namespace}/{name}" if self.namespace else f"{self.kind} {name}"

    def keep(self, obj: Obj) -> Obj:
        """What the watcher may hold of a received object: all of it, or only metadata."""
        return metadata_only(obj) if self.metadata_only else obj


def metadata_only(obj: Obj) -> Obj:
    """The object reduced to :data:`KEPT_METADATA`, so no contents outlive the response.

    A server that ignores the ``as=PartialObjectMetadata`` Accept header still sends whole
    objects; this keeps a Secret's data away from the index and the signals regardless.
    """
    meta = obj.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in KEPT_METADATA if k in meta}}


def in_namespace(resources: tuple[Resource, ...], namespace: str) -> tuple[Resource, ...]:
    """The resources with every namespaced one bound to ``namespace`` (the system one)."""
    return tuple(replace(r, namespace=namespace) if r.namespace else r for r in resources)


RESOURCES: tuple[Resource, ...] = (
    Resource("Provider", "providers", "v1", "package", PROVIDER),
    Resource("Configuration", "configurations", "v1", "package", CONFIGURATION),
    Resource("Function", "functions", "v1", "package", FUNCTION),
    Resource("ProviderRevision", "providerrevisions", "v1", "revision", PROVIDER),
    Resource("ConfigurationRevision", "configurationrevisions", "v1", "revision", CONFIGURATION),
    Resource("FunctionRevision", "functionrevisions", "v1", "revision", FUNCTION),
    Resource("DeploymentRuntimeConfig", "deploymentruntimeconfigs", "v1beta1", "runtimeconfig"),
    Resource("ImageConfig", "imageconfigs", "v1beta1", "imageconfig"),
    Resource("Secret", "secrets", "v1", "secret", group="",
             namespace=DEFAULT_SYSTEM_NAMESPACE, metadata_only=True),
    Resource("Lock", "locks", "v1beta1", "lock"),
    Resource("ManagedResourceActivationPolicy", "managedresourceactivationpolicies",
             "v1alpha1", "policy", group=XP_EXTENSIONS),
    Resource("ManagedResourceDefinition", "managedresourcedefinitions", "v1alpha1",
             "definition", group=XP_EXTENSIONS, metadata_only=True),
    Resource("CustomResourceDefinition", "customresourcedefinitions", "v1", "crd",
             group="apiextensions.k8s.io", metadata_only=True),
)
_PACKAGE_KINDS = {r.kind: r.package_kind for r in RESOURCES if r.role == "package"}
_KIND_OF_PACKAGE = {p: k for k, p in _PACKAGE_KINDS.items()}


RESOLVER = "resolver"  # Target.kind of the dependency resolver
ACTIVATION = "activation"  # Target.kind of the activation workflow
PROTECTION = "protection"  # Target.kind of the provider deletion protection workflow


@dataclass(frozen=True)
class Target:
    """One workflow to signal, and why (the reason is for logs only).

    A package's workflow, or with ``kind`` :data:`RESOLVER` the dependency resolver.
    """

    kind: str
    name: str
    reason: str
    generation: int = 0
    source: str = ""
    # The cluster's task queue: a package's workflow id carries it off the default queue.
    task_queue: str = TASK_QUEUE
    # A package whose spec no pass has answered yet (Summary.unanswered): a full list
    # signals it at once instead of in the paced lane.
    unanswered: bool = False
    # The activation workflow, for an MRD's CRD written while a policy waits: its pass may
    # be deferred (LookAgainInput.deferrable).
    deferrable: bool = False

    @property
    def workflow_id(self) -> str:
        """The workflow id, ``package:<kind>:<name>[:<task queue>]`` (or the resolver's)."""
        if self.kind == ACTIVATION:
            return activation_workflow_id(self.name)
        if self.kind == PROTECTION:
            return protection_workflow_id(self.name)
        return (resolve_workflow_id(self.name) if self.kind == RESOLVER
                else package_workflow_id(self.kind, self.name, self.task_queue))

    @property
    def package(self) -> bool:
        """A package's workflow (not the resolver's, activation's or protection's)."""
        return self.kind not in (RESOLVER, ACTIVATION, PROTECTION)

    @property
    def resolver(self) -> bool:
        """Whether this is the dependency resolver (``name`` is then the task queue)."""
        return self.kind == RESOLVER

    def package_input(self) -> PackageInput:
        """The workflow input used if the signal starts the workflow."""
        return PackageInput(kind=self.kind, name=self.name)

    def signal_input(self) -> LookAgainInput:
        """The ``look_again`` payload."""
        return LookAgainInput(generation=self.generation, reason=self.reason[:200],
                              deferrable=self.deferrable)


@dataclass(frozen=True)
class Summary:
    """What the index remembers of one object: enough to detect changes and route events."""

    generation: int = 0
    deleting: bool = False
    source: str = ""  # packages: spec.package
    runtime_config: str = ""  # Providers/Functions: spec.runtimeConfigRef.name
    package: str = ""  # revisions: the owning package's name
    uid: str = ""  # packages: metadata.uid; revisions: their package controller's UID
    prefixes: tuple[str, ...] = ()  # ImageConfigs: matchImages prefixes
    config_ref: str = ""  # ImageConfigs: spec.runtime.configRef.name
    # packages: spec.packagePullSecrets names; ImageConfigs: the pullSecretRef name, if any,
    # and the Secrets of their verification keys
    pull_secrets: tuple[str, ...] = ()
    version: str = ""  # Secrets: resourceVersion (they have no generation)
    paused: bool = False  # packages: the crossplane.io/paused annotation is "true"
    accepted_plan: str = ""  # packages: the lockwright.io/accept-plan annotation's revision
    upgrade_gate: str = ""  # packages: the lockwright.dev/upgrade-gate annotation
    pinned_api: str = ""  # packages: the lockwright.dev/pin-api-digest annotation
    entries: int = 0  # the Lock: how many packages it holds
    dependencies: bool = False  # the Lock: some entry has dependencies
    activated: str = ""  # Provider revisions: the lockwright.dev/active-definitions count
    controller: str = ""  # MRDs: the revision controlling it ("" when none)
    waiting: tuple[ApiRef, ...] = ()  # revisions: the APIs they wait on (status)
    seen: str = ""  # CRDs: resourceVersion (its status writes move no generation)
    established: bool = False  # activation policies: their Established condition is True
    # packages: no status condition is stamped with the current generation (a new package,
    # or one edited while no watcher ran): a pass has yet to answer its spec
    unanswered: bool = False


def _owner_package(res: Resource, obj: Obj) -> tuple[str, str]:
    """The revision's package: its controller's name and UID, else the label's name."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") and _PACKAGE_KINDS.get(ref.get("kind", "")) == res.package_kind:
            return str(ref.get("name", "")), str(ref.get("uid", ""))
    return str((meta.get("labels") or {}).get(PACKAGE_LABEL, "")), ""


def summarize(res: Resource, obj: Obj) -> Summary:
    """Reduce an object to its :class:`Summary`: only what change detection and routing use."""
    meta = obj.get("metadata") or {}
    base = Summary(generation=int(meta.get("generation") or 0), deleting=deleting(obj))
    if res.role == "secret":
        return replace(base, version=str(meta.get("resourceVersion") or ""))
    if res.role == "revision":
        package, uid = _owner_package(res, obj)
        return replace(base, package=package, uid=uid, activated=str(
            (meta.get("annotations") or {}).get(ACTIVE_DEFINITIONS_ANNOTATION) or ""),
            waiting=waiting_for(_unhealthy(obj)))
    if res.role == "crd":
        return replace(base, seen=str(meta.get("resourceVersion") or ""))
    if res.role == "definition":
        return replace(base, controller=controller_name(obj))
    if res.role == "policy":
        return replace(base, established=established(obj))
    if res.role == "lock":
        entries = obj.get("packages") or []
        return replace(base, entries=len(entries),
                       dependencies=any(e.get("dependencies") for e in entries))
    if res.role == "package":
        annotations = meta.get("annotations") or {}
        base = replace(base, uid=str(meta.get("uid") or ""),
                       paused=annotations.get(PAUSED_ANNOTATION) == "true",
                       accepted_plan=str(annotations.get(ACCEPT_PLAN_ANNOTATION) or ""),
                       upgrade_gate=str(annotations.get(UPGRADE_GATE_ANNOTATION) or ""),
                       pinned_api=str(annotations.get(PIN_API) or ""),
                       unanswered=unanswered(obj, base.generation))
    shape = {"package": _package_fields, "imageconfig": _image_config_fields}.get(res.role)
    return replace(base, **shape(res, obj.get("spec") or {})) if shape else base


def unanswered(pkg: Obj, generation: int) -> bool:
    """Whether no condition of the package's status is stamped with ``generation`` (its
    ``observedGeneration``, which every pass's status write sets): no pass has read this
    spec yet."""
    return not any(int(cond.get("observedGeneration") or 0) >= generation
                   for cond in (pkg.get("status") or {}).get("conditions") or [])


def _unhealthy(revision: Obj) -> str:
    """The message of a revision's ``RevisionHealthy=False`` condition ("" otherwise)."""
    for cond in (revision.get("status") or {}).get("conditions") or []:
        if cond.get("type") == REVISION_HEALTHY and cond.get("status") == "False":
            return str(cond.get("message") or "")
    return ""


def _package_fields(res: Resource, spec: Obj) -> dict[str, Any]:
    ref = (spec.get("runtimeConfigRef") or {}).get("name") or DEFAULT_RUNTIME_CONFIG
    return {"source": str(spec.get("package", "")),
            "runtime_config": ref if res.package_kind != CONFIGURATION else "",
            "pull_secrets": tuple(str(s["name"]) for s in spec.get("packagePullSecrets") or []
                                  if s.get("name"))}


def _image_config_fields(res: Resource, spec: Obj) -> dict[str, Any]:
    auth = (spec.get("registry") or {}).get("authentication") or {}
    secret = str((auth.get("pullSecretRef") or {}).get("name") or "")
    return {"prefixes": tuple(str(m.get("prefix", "")) for m in spec.get("matchImages") or []
                              if m.get("prefix")),
            "config_ref": str(((spec.get("runtime") or {}).get("configRef") or {}).get(
                "name", "")),
            "pull_secrets": ((secret,) if secret else ()) + _key_secrets(spec)}


def _key_secrets(spec: Obj) -> tuple[str, ...]:
    """The Secrets holding the public keys of the ImageConfig's verification authorities."""
    cosign = ((spec.get("verification") or {}).get("cosign") or {})
    refs = (((a.get("key") or {}).get("secretRef") or {}).get("name")
            for a in cosign.get("authorities") or [] if isinstance(a, dict))
    return tuple(str(r) for r in refs if r)


def _changed(old: Summary | None, new: Summary) -> bool:
    """Spec changes only (generation; ``version`` for Secrets; the pause, accept-plan,
    upgrade-gate and API-pin annotations, which move no generation), so status writes are
    not echoed."""
    return old is None or _spec_of(old) != _spec_of(new)


def _spec_of(s: Summary) -> tuple[int, bool, str, bool, str, str, str, str]:
    return (s.generation, s.deleting, s.version, s.paused, s.accepted_plan, s.upgrade_gate,
            s.activated, s.pinned_api)


@dataclass
class Index:
    """The watcher's memory of every watched object, by resource kind and name."""

    objects: dict[str, dict[str, Summary]] = field(default_factory=dict)
    task_queue: str = TASK_QUEUE  # in every target's workflow id (off the default queue)

    def of(self, kind: str) -> dict[str, Summary]:
        """The summaries of one resource kind."""
        return self.objects.setdefault(kind, {})

    def on_event(self, res: Resource, event_type: str, obj: Obj) -> list[Target]:
        """Apply one watch event (ADDED, MODIFIED, DELETED); return whom to signal."""
        name = str((obj.get("metadata") or {}).get("name", ""))
        new, old = summarize(res, obj), self.of(res.kind).get(name)
        if event_type == "DELETED":
            self.of(res.kind).pop(name, None)
        elif event_type in ("ADDED", "MODIFIED"):
            self.of(res.kind)[name] = new
        else:
            return []
        if event_type == "MODIFIED" and not _changed(old, new):
            return self._queued(self._quiet(res, name, new, old))
        if event_type == "ADDED" and self._made_by_its_package(res, new):
            return []
        return self._queued(self._route(res, name, new, old,
                                        f"{res.describe(name)} {event_type.lower()}"))

    def on_sync(self, res: Resource, items: list[Obj], signal_all: bool,
                why: str = "list") -> list[Target]:
        """Replace one kind's objects with a full list; return whom to signal.

        Args:
            res: the resource listed.
            items: every object of the list.
            signal_all: target every package concerned (start-up, periodic resync), not
                only what changed since the index last saw it (relist after 410 Gone).
            why: reason recorded on the signals.
        """
        before = dict(self.of(res.kind))
        after = {str(o["metadata"]["name"]): summarize(res, o) for o in items}
        self.objects[res.kind] = after
        if signal_all and res.role in ("runtimeconfig", "imageconfig", "secret"):
            return []  # the packages' own lists signal every package
        out: list[Target] = []
        for name, new in after.items():
            if signal_all or _changed(before.get(name), new):
                out += self._route(res, name, new, before.get(name), f"{res.describe(name)} {why}")
        for name, old in before.items():
            if name not in after:
                out += self._route(res, name, old, old, f"{res.describe(name)} gone at {why}")
        return self._queued(dedupe(out))

    def _queued(self, targets: list[Target]) -> list[Target]:
        """The targets on this cluster's task queue (their workflow ids carry it)."""
        return [replace(t, task_queue=self.task_queue) for t in targets]

    def resolver(self, reason: str) -> list[Target]:
        """The dependency resolver as a target, while the Lock holds any dependency."""
        lock = self.of("Lock").get("lock")
        return [Target(RESOLVER, self.task_queue, reason)] if lock and lock.dependencies else []

    def _lock_changed(self, new: Summary, old: Summary | None, reason: str) -> list[Target]:
        """First sight, dependencies held before or after, or the Lock (no longer) empty:
        only then can resolution decide anything new (Crossplane requeues on every change;
        a cluster without dependencies would pay a resolution per install for nothing)."""
        matters = (old is None or new.dependencies or old.dependencies
                   or bool(new.entries) != bool(old.entries))
        return [Target(RESOLVER, self.task_queue, reason)] if matters else []

    def _route(self, res: Resource, name: str, new: Summary, old: Summary | None,
               reason: str) -> list[Target]:
        if res.role == "package":
            return [Target(res.package_kind, name, reason, new.generation, new.source,
                           unanswered=new.unanswered), *self.resolver(reason)]
        if res.role == "lock":
            return self._lock_changed(new, old, reason)
        if res.role == "crd":
            return self._crd_changed(name, reason)
        if res.role == "policy":
            return [Target(ACTIVATION, self.task_queue, reason)]
        if res.role == "definition":
            return [] if self._establishing(name) else [Target(ACTIVATION, self.task_queue,
                                                               reason)]
        if res.role == "revision":
            return self._revision_changed(res, new, old, reason)
        if res.role == "runtimeconfig":
            return self._users_of_runtime_config(name, reason)
        if res.role == "secret":
            return self._users_of_secret(name, reason)
        prefixes = new.prefixes + (old.prefixes if old else ())
        # A pull secret also changes which tags the resolver may list (docs/crossplane.md §14).
        secret = new.pull_secrets or (old.pull_secrets if old else ())
        return self._matching_images(prefixes, reason) + (self.resolver(reason) if secret else [])

    def _crd_changed(self, name: str, reason: str, deferrable: bool = False) -> list[Target]:
        """The activation workflow for a CRD of an MRD's name; the packages waiting on an
        API the CRD may serve."""
        mrd = name in self.of("ManagedResourceDefinition") and not self._establishing(name)
        own = [Target(ACTIVATION, self.task_queue, reason, deferrable=deferrable)]
        return (own if mrd else []) + self._waiting_on(name, reason)

    def _crd_written(self, name: str, reason: str) -> list[Target]:
        """A CRD written: the activation workflow, deferrable, for an MRD's CRD while some
        policy is not Established (only such a policy's pass reads CRDs); the packages
        waiting on an API it may serve."""
        policies = self.of("ManagedResourceActivationPolicy").values()
        if any(not p.established for p in policies):
            return self._crd_changed(name, reason, deferrable=True)
        return self._waiting_on(name, reason)

    def _establishing(self, mrd: str) -> bool:
        """Whether MRD ``mrd`` is there and controlled by a Provider revision whose install
        has recorded no count of Active MRDs yet: that install is still establishing it,
        and its recording signals the activation workflow once for all of them (a
        2,000-MRD install started a pass per burst of its MRDs, each listing them all)."""
        found = self.of("ManagedResourceDefinition").get(mrd)
        rev = self.of("ProviderRevision").get(found.controller) if found and (
            found.controller) else None
        return rev is not None and not rev.activated

    def _quiet(self, res: Resource, name: str, new: Summary, old: Summary | None
               ) -> list[Target]:
        """A write that moved no generation, so not echoed, except: a CRD's (being
        Established) to the packages waiting on it, for discovery may serve it only now,
        and, for an MRD's CRD while a policy waits, to the activation workflow (a policy's
        ``Established`` follows its CRDs'); a policy's ``Established`` ceasing to be True,
        to the activation workflow; a revision's status starting to wait on APIs, when a
        CRD that may serve one exists (it appeared while the revision's pass was deciding
        to wait)."""
        if res.role == "crd" and old is not None and old.seen != new.seen:
            return self._crd_written(name, f"{res.describe(name)} written")
        if res.role == "policy" and old is not None and old.established and not new.established:
            return [Target(ACTIVATION, self.task_queue, f"{res.describe(name)} waits again")]
        if res.role == "revision" and new.package and new.waiting and (
                old is None or old.waiting != new.waiting):
            return self._served_already(res, new)
        return []

    def _served_already(self, res: Resource, rev: Summary) -> list[Target]:
        """The revision's package, when a CRD exists that may serve an API it waits on."""
        crds = self.of("CustomResourceDefinition")
        found = next((crd for crd in crds for api in rev.waiting if may_serve(crd, api)), "")
        return [self._package_target(res.package_kind, rev.package,
                                     f"CustomResourceDefinition {found} exists")] if found else []

    def _waiting_on(self, crd: str, reason: str) -> list[Target]:
        """The packages whose revision waits on an API the CRD ``crd`` may serve."""
        out = []
        for res in RESOURCES:
            if res.role != "revision":
                continue
            for rev in self.of(res.kind).values():
                if rev.package and any(may_serve(crd, api) for api in rev.waiting):
                    out.append(self._package_target(res.package_kind, rev.package, reason))
        return dedupe(out)

    def _revision_changed(self, res: Resource, new: Summary, old: Summary | None,
                          reason: str) -> list[Target]:
        """Its package; only the activation workflow when just the count of Active MRDs
        its install recorded moved (a count behind the MRDs activated meanwhile is how an
        activation during the install reaches the package)."""
        moved = old is not None and old.activated != new.activated
        if old is not None and moved and replace(
                old, activated=new.activated, waiting=new.waiting) == new:
            return [Target(ACTIVATION, self.task_queue, reason)]
        pkg = new.package or (old.package if old else "")
        # A count moved beside other changes (a relist merges them) still reaches activation.
        return ([self._package_target(res.package_kind, pkg, reason)] if pkg else []) + (
            [Target(ACTIVATION, self.task_queue, reason)] if moved else [])

    def _made_by_its_package(self, res: Resource, new: Summary) -> bool:
        """Whether ``new`` is a revision controlled by the package object the index knows
        (the same UID): only that package's pass makes one so, and it needs no signal."""
        if res.role != "revision" or not new.uid:
            return False
        known = self._package(res.package_kind, new.package)
        return known is not None and known.uid == new.uid

    def _package(self, kind: str, name: str) -> Summary | None:
        """What the index knows of the package ``name`` of ``kind`` (``provider``, ...)."""
        return self.of(_KIND_OF_PACKAGE[kind]).get(name)

    def _package_target(self, kind: str, name: str, reason: str) -> Target:
        known = self._package(kind, name)
        return Target(kind, name, reason, known.generation if known else 0,
                      known.source if known else "")

    def _packages(self) -> list[tuple[Resource, str, Summary]]:
        return [(r, n, s) for r in RESOURCES if r.role == "package"
                for n, s in sorted(self.of(r.kind).items())]

    def _users_of_runtime_config(self, drc: str, reason: str) -> list[Target]:
        via_images = tuple(p for s in self.of("ImageConfig").values() if s.config_ref == drc
                           for p in s.prefixes)
        return dedupe([Target(r.package_kind, n, reason, s.generation, s.source)
                       for r, n, s in self._packages()
                       if s.runtime_config == drc or _matches(s.source, via_images)])

    def _users_of_secret(self, secret: str, reason: str) -> list[Target]:
        """Packages naming the Secret, and those an ImageConfig naming it matches."""
        via_images = tuple(p for s in self.of("ImageConfig").values() if secret in s.pull_secrets
                           for p in s.prefixes)
        return dedupe([Target(r.package_kind, n, reason, s.generation, s.source)
                       for r, n, s in self._packages()
                       if secret in s.pull_secrets or _matches(s.source, via_images)])

    def _matching_images(self, prefixes: tuple[str, ...], reason: str) -> list[Target]:
        return dedupe([Target(r.package_kind, n, reason, s.generation, s.source)
                       for r, n, s in self._packages() if _matches(s.source, prefixes)])


def _matches(source: str, prefixes: tuple[str, ...]) -> bool:
    return bool(source) and any(source.startswith(p) for p in prefixes)


def dedupe(targets: list[Target]) -> list[Target]:
    """Keep the first target per workflow id, in order."""
    seen: set[str] = set()
    out = []
    for t in targets:
        if t.workflow_id not in seen:
            seen.add(t.workflow_id)
            out.append(t)
    return out
