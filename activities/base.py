"""What every activity shares: settings, the Kubernetes seam, the package cache, and reads.

The activities are plain ``def`` s: the official Kubernetes client is synchronous, so the
worker runs them on a thread pool (``Worker(activity_executor=ThreadPoolExecutor(...))``).
Pull secrets are read here, inside the activity that needs them, and go straight into a
registry client; they never reach a log line, an argument or a result (invariant 2).
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import json
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from temporalio import activity

from activities.connection import TemporalConnection, from_settings
from lockwright.images import imageconfig
from lockwright.errors import KubeNotFound, ObjectGone, Unauthorized
from lockwright.k8s import Kube, Obj
from lockwright.oci.auth import DockerAuths
from lockwright.oci.cache import CacheEntry, PackageCache
from lockwright.oci.client import RegistryClient
from lockwright.oci.fetch import fetch_package
from lockwright.oci.reference import parse
from lockwright.oci.validate import validate_documents
from lockwright.settings import Settings as ProcessSettings

if TYPE_CHECKING:
    from lockwright.xpkg.parse import PackageSummary

PKG_V1, PKG_V1BETA1 = "pkg.crossplane.io/v1", "pkg.crossplane.io/v1beta1"
LABEL_PACKAGE = "pkg.crossplane.io/package"
DOCKER_CONFIG_KEY = ".dockerconfigjson"
DEPLOYMENT_RUNTIME = "Deployment"
KINDS = {"provider": "Provider", "configuration": "Configuration", "function": "Function"}
SUMMARIES_KEPT = 64


def kind_of(kind: str) -> str:
    """``Provider`` for ``provider`` (contracts use lower case; Kubernetes title case)."""
    return KINDS.get(kind.lower(), kind)


def revision_kind(kind: str) -> str:
    """``ProviderRevision`` for ``provider``."""
    return f"{kind_of(kind)}Revision"


def spec(obj: Obj | None) -> Obj:
    """``obj.spec``, or an empty dict."""
    out: Obj = (obj or {}).get("spec") or {}
    return out


def meta(obj: Obj | None) -> Obj:
    """``obj.metadata``, or an empty dict."""
    out: Obj = (obj or {}).get("metadata") or {}
    return out


def secret_names(refs: list[Obj] | None) -> list[str]:
    """Names out of a ``[{name: …}]`` list such as ``packagePullSecrets``."""
    return [str(r["name"]) for r in refs or [] if r.get("name")]


@dataclass(frozen=True)
class Settings:
    """How the activities are configured; the worker builds this from flags and env."""

    system_namespace: str = "crossplane-system"
    cache_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir())
                            / "lockwright-cache")
    insecure_registries: frozenset[str] = frozenset()
    crossplane_version: str = "v1.20.0"
    package_runtime: str = DEPLOYMENT_RUNTIME
    kubeconfig: str | None = None
    crossplane_service_account: str = "crossplane"
    cas_attempts: int = 25
    establish_workers: int = 8
    temporal_address: str = "127.0.0.1:7233"
    temporal_namespace: str = "default"
    # How record_approval reaches Temporal (TLS, API key) as the worker does; None: plainly.
    temporal: TemporalConnection | None = None
    # May the resolver move installed dependencies up, or down (implies up)?
    dependency_upgrades: bool = False
    dependency_downgrades: bool = False
    # Verify the signatures ImageConfigs ask for (off: install unverified, and say so).
    signature_verification: bool = True

    @classmethod
    def from_process(cls, process: ProcessSettings) -> Settings:
        """The activity settings out of the worker's resolved process settings."""
        return cls(system_namespace=process.system_namespace, cache_dir=Path(process.cache_dir),
                   insecure_registries=frozenset(process.insecure_registries),
                   crossplane_version=process.crossplane_version,
                   package_runtime=process.package_runtime,
                   kubeconfig=process.kubeconfig or None,
                   temporal_address=process.temporal_address,
                   temporal_namespace=process.temporal_namespace,
                   temporal=from_settings(process),
                   dependency_upgrades=process.dependency_upgrades,
                   dependency_downgrades=process.dependency_downgrades,
                   signature_verification=process.signature_verification)


@contextlib.contextmanager
def heartbeating(every: float = 5.0) -> Iterator[None]:
    """Heartbeat from a side thread while a long call that cannot report progress runs."""
    if not activity.in_activity():
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            activity.heartbeat()

    thread = threading.Thread(target=contextvars.copy_context().run, args=(beat,),
                              daemon=True, name="heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class Base:
    """Dependencies and the reads every activity module uses."""

    def __init__(self, settings: Settings, kube: Kube, cache: PackageCache) -> None:
        self.settings = settings
        self.kube = kube
        self.cache = cache
        self._summaries: OrderedDict[str, PackageSummary] = OrderedDict()
        self._summaries_lock = threading.Lock()

    @property
    def namespace(self) -> str:
        """The system namespace: runtimes, TLS and pull secrets live there."""
        return self.settings.system_namespace

    def log(self, **fields: Any) -> Any:
        """A structlog logger with ``fields`` (package=, revision=, digest=) bound."""
        return structlog.get_logger("activities").bind(**fields)

    # --- package objects ----------------------------------------------------------------
    def package(self, kind: str, name: str) -> Obj:
        """The package object.

        Raises:
            ObjectGone: it is gone or being deleted; nothing may be written for it.
        """
        return _living(self.kube.get(PKG_V1, kind_of(kind), name), f"{kind_of(kind)} {name}")

    def revision(self, kind: str, name: str) -> Obj:
        """The revision object.

        Raises:
            ObjectGone: it is gone or being deleted; nothing may be written for it.
        """
        return _living(self.kube.get(PKG_V1, revision_kind(kind), name),
                       f"{revision_kind(kind)} {name}")

    def revisions_of(self, kind: str, package: str) -> list[Obj]:
        """The package's revisions, lowest ``spec.revision`` first."""
        items = self.kube.list(PKG_V1, revision_kind(kind),
                               label_selector=f"{LABEL_PACKAGE}={package}")
        return sorted(items, key=lambda r: (int(spec(r).get("revision") or 0),
                                            meta(r).get("name", "")))

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record a Kubernetes Event about ``obj`` (never fails the activity)."""
        self.kube.create_event(obj, type_, reason, message)

    # --- registry access ----------------------------------------------------------------
    def image_configs(self) -> list[Obj]:
        """Every ImageConfig, in list order (ties in matching go to the first)."""
        try:
            return self.kube.list(PKG_V1BETA1, "ImageConfig")
        except KubeNotFound:
            return []

    def registry(self, pull_secrets: list[str]) -> RegistryClient:
        """A registry client holding the credentials of ``pull_secrets`` (system namespace)."""
        merged: dict[str, Any] = {}
        for name in dict.fromkeys(pull_secrets):
            secret = self.kube.get("v1", "Secret", name, self.namespace)
            raw = ((secret or {}).get("data") or {}).get(DOCKER_CONFIG_KEY)
            if not raw:
                continue
            try:
                doc = json.loads(base64.b64decode(raw))
            except ValueError:
                # Say which secret, never what is in it.
                raise Unauthorized(f"pull secret {self.namespace}/{name} does not hold a "
                                   "valid .dockerconfigjson") from None
            merged.update(doc.get("auths", doc) if isinstance(doc, dict) else {})
        auths = DockerAuths.from_json(json.dumps({"auths": merged}))
        return RegistryClient(insecure=self.settings.insecure_registries, auths=auths)

    @contextlib.contextmanager
    def naming_missing_secrets(self, pull_secrets: list[str]) -> Iterator[None]:
        """When the registry refuses us, say which named pull Secrets do not exist.

        Checked only after a refusal, so a pull that needs no credentials costs nothing.
        """
        try:
            yield
        except Unauthorized as err:
            missing = [f"{self.namespace}/{n}" for n in dict.fromkeys(pull_secrets)
                       if self.kube.get("v1", "Secret", n, self.namespace) is None]
            if not missing:
                raise
            raise Unauthorized(f"{err.message}; pull secret {', '.join(missing)} not found: "
                               "create it and the package is retried at once") from err

    def resolution(self, image: str) -> imageconfig.Resolution:
        """What the ImageConfigs say about ``image`` (rewrite, pull secret, runtime)."""
        return imageconfig.resolve(self.image_configs(), image)

    # --- the package cache --------------------------------------------------------------
    def cached(self, kind: str, revision: Obj, digest: str) -> CacheEntry:
        """The revision's package.yaml in the cache, fetched again on a miss."""
        entry = self.cache.get(digest)
        if entry is not None:
            return entry
        image = str(spec(revision).get("image", ""))
        resolved = self.resolution(image)
        secrets = secret_names(spec(revision).get("packagePullSecrets"))
        secrets += [resolved.pull_secret] if resolved.pull_secret else []
        client = self.registry(secrets)
        ref = str(parse(resolved.resolved).with_digest(digest))
        self.log(revision=meta(revision).get("name"), digest=digest).info("cache.refetch")
        with heartbeating(), self.naming_missing_secrets(secrets):
            fetched = fetch_package(ref, client, self.cache, expected_kind=kind_of(kind))
        if fetched.summary is not None:
            self.remember(digest, fetched.summary)
        return fetched.entry

    def remember(self, digest: str, summary: PackageSummary) -> None:
        """Keep a parsed summary for ``digest`` (small: no objects), LRU-bounded."""
        with self._summaries_lock:
            self._summaries[digest] = summary
            self._summaries.move_to_end(digest)
            while len(self._summaries) > SUMMARIES_KEPT:
                self._summaries.popitem(last=False)

    def summary(self, kind: str, revision: Obj, digest: str) -> PackageSummary:
        """The package's validated summary (meta, object summaries, lint warnings)."""
        with self._summaries_lock:
            known = self._summaries.get(digest)
        if known is not None:
            return known
        return self.summary_of(digest, self.cached(kind, revision, digest), kind_of(kind))

    def summary_of(self, digest: str, entry: CacheEntry, kind: str | None = None
                   ) -> PackageSummary:
        """The summary of a cache entry, validated and remembered for ``digest``."""
        found = validate_documents(entry.documents, kind)
        self.remember(digest, found)
        return found


def package_owner(kind: str, pkg: Obj) -> Obj:
    """The controller reference a revision holds to its package (blocks its deletion)."""
    return {"apiVersion": PKG_V1, "kind": kind_of(kind), "name": meta(pkg)["name"],
            "uid": meta(pkg)["uid"], "controller": True, "blockOwnerDeletion": True}


def deleting(obj: Obj | None) -> bool:
    """True when ``obj`` has a ``deletionTimestamp``: Kubernetes is deleting it."""
    return bool(meta(obj).get("deletionTimestamp"))


def _living(obj: Obj | None, what: str) -> Obj:
    if obj is None:
        raise ObjectGone(f"{what} is gone")
    if deleting(obj):
        raise ObjectGone(f"{what} is being deleted")
    return obj


def stream_objects(documents: Path) -> Iterator[Obj]:
    """The package's objects, one at a time, meta skipped.

    Args:
        documents: the cache entry's ``documents.jsonl`` (``CacheEntry.documents``), the
            package.yaml decoded once at fetch; reading it back is far cheaper than YAML.
    """
    from lockwright.xpkg.documents import iter_documents
    from lockwright.xpkg.meta import is_meta

    with documents.open("rb") as f:
        for _, doc in iter_documents(f):
            if not is_meta(doc):
                yield doc


def service_name(package: str, drc: Obj | None) -> str:
    """The package's Service: the DRC's ``serviceTemplate`` name, or the package name."""
    template = spec(drc).get("serviceTemplate") or {}
    return str((template.get("metadata") or {}).get("name") or package)


def service_account_name(revision: str, drc: Obj | None) -> str:
    """The runtime's ServiceAccount: the DRC's template name, or the revision name."""
    template = spec(drc).get("serviceAccountTemplate") or {}
    return str((template.get("metadata") or {}).get("name") or revision)


def deployment_name(revision: str, drc: Obj | None) -> str:
    """The runtime Deployment: the DRC's template name, or the revision name."""
    template = spec(drc).get("deploymentTemplate") or {}
    return str((template.get("metadata") or {}).get("name") or revision)


class RuntimeConfigs(Base):
    """Which DeploymentRuntimeConfig a revision's runtime uses (reference §13.1 step 3)."""

    def runtime_config(self, rev: Obj, required: bool = True
                       ) -> tuple[Obj | None, dict[str, str] | None]:
        """The DRC and, when an ImageConfig chose it, that ImageConfig's applied ref.

        Raises:
            KubeNotFound: ``required`` and the referenced DRC does not exist.
        """
        resolution = self.resolution(str(spec(rev).get("image", "")))
        chosen = next((r for r in resolution.applied
                       if r["reason"] == imageconfig.Reason.CONFIGURE_RUNTIME.value), None)
        ref = (resolution.runtime_config_ref or spec(rev).get("runtimeConfigRef")
               or {"name": "default"})
        drc = self.kube.get(PKG_V1BETA1, "DeploymentRuntimeConfig", str(ref["name"]))
        if drc is None and required:
            raise KubeNotFound("cannot get referenced deployment runtime config: "
                               f"DeploymentRuntimeConfig {ref['name']!r} not found")
        return drc, chosen
