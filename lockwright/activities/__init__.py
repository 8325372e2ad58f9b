"""Temporal activities: thin I/O around the pure core (docs/design.md invariants 2–6).

Composed, not inherited. Small collaborators, each a plain class over what it needs of the
Kubernetes seam, the package cache and the settings, are built once per worker
(:class:`Collaborators`): the package reader, registry access, the package contents, the
runtime configs, the signature verifier, the Lock keeper, the establisher of objects,
the dropper of objects an upgrade no longer ships and the recorder of API identity. One activity class per concern
(``package``, ``revision``, ``lock``, ``objects``, ``lifecycle``, ``rbac``, ``runtime``,
``approval``, ``dependencies``, ``plan``) receives the collaborators it uses; its
``@activity.defn`` methods are the activities. Decisions live in the core (``lockwright``).

:func:`wire` builds all of it over one ``lockwright.settings.Settings`` and :func:`build`
returns every activity bound, in contract order, for ``Worker(activities=...)``. They are
synchronous (the Kubernetes client is), so the worker needs an ``activity_executor``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockwright.activities.activation import ActivationActivities
from lockwright.activities.api_dependencies import ApiNeeds, IndexReader, configured_indexes
from lockwright.activities.approval import ApprovalActivities
from lockwright.activities.connection import from_settings
from lockwright.activities.contents import Contents
from lockwright.activities.definitions import Definitions
from lockwright.activities.dependencies import DependencyActivities
from lockwright.activities.dropped import DroppedObjects
from lockwright.activities.identity import Identity
from lockwright.activities.lifecycle import LifecycleActivities
from lockwright.activities.lock import LockActivities, LockKeeper
from lockwright.activities.objects import Establisher, ObjectActivities
from lockwright.activities.package import PackageActivities
from lockwright.activities.plan import PlanActivities
from lockwright.activities.protection import ProtectionActivities
from lockwright.activities.rbac import RbacActivities
from lockwright.activities.reads import PackageReader, Registries, RuntimeConfigs
from lockwright.activities.revision import RevisionActivities
from lockwright.activities.runtime import RuntimeActivities
from lockwright.activities.verify import Verifier
from lockwright.dependencies.resolver import Policy
from lockwright.k8s import Kube
from lockwright.oci.cache import PackageCache
from lockwright.settings import Settings

__all__ = ["Collaborators", "Wiring", "build", "collaborators", "wire"]


@dataclass(frozen=True)
class Collaborators:
    """What the activity classes share, each built once."""

    reader: PackageReader
    registries: Registries
    contents: Contents
    runtime_configs: RuntimeConfigs
    verifier: Verifier
    keeper: LockKeeper
    establisher: Establisher
    dropped: DroppedObjects
    definitions: Definitions
    identity: Identity


def collaborators(settings: Settings, kube: Kube, cache: PackageCache) -> Collaborators:
    """The collaborators over one seam and one cache, configured by ``settings``."""
    reader = PackageReader(kube)
    registries = Registries(kube, settings.system_namespace, settings.insecure_registries)
    contents = Contents(cache, registries)
    runtime_configs = RuntimeConfigs(kube, registries, settings.package_runtime)
    definitions = Definitions(kube, reader, contents, settings.managed_resource_definitions)
    return Collaborators(
        reader, registries, contents, runtime_configs,
        Verifier(reader, settings.system_namespace, cache, settings.signature_verification),
        LockKeeper(kube, reader),
        Establisher(kube, reader, contents, runtime_configs, definitions,
                    settings.system_namespace),
        DroppedObjects(kube, reader), definitions,
        Identity(kube, reader, contents, registries, runtime_configs))


@dataclass(frozen=True)
class Wiring:
    """Every activity class, built over one set of collaborators."""

    settings: Settings
    parts: Collaborators
    packages: PackageActivities
    revisions: RevisionActivities
    lifecycle: LifecycleActivities
    locks: LockActivities
    objects: ObjectActivities
    rbac: RbacActivities
    runtime: RuntimeActivities
    approval: ApprovalActivities
    dependencies: DependencyActivities
    plan: PlanActivities
    activation: ActivationActivities
    protection: ProtectionActivities

    def all(self) -> list[Callable[..., Any]]:
        """Every activity as a bound method, in contract order."""
        p, r, life, rt = self.packages, self.revisions, self.lifecycle, self.runtime
        return [p.read_package, p.resolve_digest, p.ensure_revision,
                life.set_active_revision, life.collect_revisions, p.write_package_status,
                life.cleanup_package, r.fetch_package, r.parse_package,
                r.check_crossplane_version, self.locks.take_lock, rt.ensure_tls,
                self.objects.establish_objects, self.rbac.ensure_rbac, rt.ensure_runtime,
                rt.check_health, r.write_revision_status, p.record_event,
                self.approval.record_approval, self.dependencies.resolve_dependencies,
                self.dependencies.apply_resolution, self.plan.plan_revision,
                self.activation.activate_definitions, self.protection.protect_providers]


def wire(settings: Settings, kube: Kube, cache: PackageCache,
         indexes: IndexReader | None = None) -> Wiring:
    """Every activity class over the collaborators of ``settings``, ``kube`` and ``cache``;
    ``indexes`` reads the package indexes (dependencies on APIs are looked up in them; by
    default those of ``settings.package_indexes``)."""
    k, ns, runtime = kube, settings.system_namespace, settings.package_runtime
    x = collaborators(settings, kube, cache)
    policy = Policy(upgrades=settings.dependency_upgrades or settings.dependency_downgrades,
                    downgrades=settings.dependency_downgrades)
    return Wiring(
        settings, x,
        PackageActivities(k, x.reader, x.registries, x.verifier, cache, runtime,
                          settings.upgrade_gate, settings.revision_names, x.runtime_configs),
        RevisionActivities(k, x.reader, x.contents, x.identity, settings.crossplane_version,
                           runtime),
        LifecycleActivities(k, ns, x.reader, x.keeper, x.establisher, x.dropped),
        LockActivities(x.reader, x.contents, x.keeper, ApiNeeds(
            k, indexes or configured_indexes(settings, x.registries))),
        ObjectActivities(x.establisher),
        RbacActivities(k, x.reader, x.contents, x.runtime_configs, ns, runtime),
        RuntimeActivities(k, x.reader, x.contents, x.registries, x.runtime_configs, ns,
                          runtime),
        ApprovalActivities(x.reader, from_settings(settings)),
        DependencyActivities(k, x.reader, x.keeper, x.registries, x.contents, x.verifier,
                             policy),
        PlanActivities(k, x.reader, x.contents, x.registries, x.verifier, x.keeper,
                       x.establisher, x.identity, runtime, settings.revision_names),
        ActivationActivities(k, x.reader, x.definitions),
        ProtectionActivities(k, settings.provider_deletion_protection))


def build(settings: Settings, kube: Kube | None = None,
          cache: PackageCache | None = None,
          indexes: IndexReader | None = None) -> list[Callable[..., Any]]:
    """Every activity, wired once over ``settings``, in contract order.

    Args:
        settings: the worker's settings (namespace, cache directory, registries, version,
            runtime mode, dependency policy, signature verification, Temporal).
        kube: the Kubernetes seam; by default connected from ``settings.kubeconfig``
            (in-cluster when unset and running in a Pod).
        cache: the package cache; by default at ``settings.cache_dir``.
        indexes: reads the package indexes; by default those of
            ``settings.package_indexes`` (:func:`activities.api_dependencies.configured_indexes`).
    """
    kube = kube or Kube.connect(settings.kubeconfig or None,
                                connections=settings.activity_threads)
    return wire(settings, kube,
                cache or PackageCache(settings.cache_dir), indexes).all()
