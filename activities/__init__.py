"""Temporal activities: thin I/O around the pure core (reference: DESIGN.md, invariants 2–6).

One module per concern (``package``, ``lifecycle``, ``revision``, ``lock``, ``objects``,
``rbac``, ``runtime``); :class:`Activities` combines them over one set of dependencies and
:func:`build` returns every activity bound to it, for ``Worker(activities=...)``. They are
synchronous (the Kubernetes client is), so the worker needs an ``activity_executor``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.approval import ApprovalActivities
from activities.base import Settings
from activities.dependencies import DependencyActivities
from activities.lifecycle import LifecycleActivities
from activities.package import PackageActivities
from activities.plan import PlanActivities
from activities.rbac import RbacActivities
from activities.revision import RevisionActivities
from activities.runtime import RuntimeActivities
from lockwright.k8s import Kube
from lockwright.oci.cache import PackageCache
from lockwright.settings import Settings as ProcessSettings

__all__ = ["Activities", "Settings", "build"]


class Activities(PackageActivities, LifecycleActivities, RevisionActivities, RbacActivities,
                 RuntimeActivities, ApprovalActivities, DependencyActivities, PlanActivities):
    """Every activity, sharing settings, one ``Kube`` and one package cache."""

    def all(self) -> list[Callable[..., Any]]:
        """Every activity as a bound method, in contract order."""
        return [self.read_package, self.resolve_digest, self.ensure_revision,
                self.set_active_revision, self.collect_revisions, self.write_package_status,
                self.cleanup_package, self.fetch_package, self.parse_package,
                self.check_crossplane_version, self.take_lock, self.ensure_tls,
                self.establish_objects, self.ensure_rbac, self.ensure_runtime,
                self.check_health, self.write_revision_status, self.record_event,
                self.record_approval, self.resolve_dependencies, self.apply_resolution,
                self.plan_revision]


def build(settings: Settings | ProcessSettings, kube: Kube | None = None,
          cache: PackageCache | None = None) -> list[Callable[..., Any]]:
    """Every activity bound to one :class:`Activities` built from ``settings``.

    Args:
        settings: namespace, cache directory, registries, version and runtime mode; the
            worker's ``lockwright.settings.Settings`` is accepted as is.
        kube: the Kubernetes seam; by default connected from ``settings.kubeconfig``
            (in-cluster when unset and running in a Pod).
        cache: the package cache; by default at ``settings.cache_dir``.
    """
    if not isinstance(settings, Settings):
        settings = Settings.from_process(settings)
    acts = Activities(settings, kube or Kube.connect(settings.kubeconfig),
                      cache or PackageCache(settings.cache_dir))
    return acts.all()
