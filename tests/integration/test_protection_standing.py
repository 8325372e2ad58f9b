"""``protect_providers`` on devcluster asks only the types of Providers standing: a
Provider being deleted (its deletion admitted) has nothing left to protect, and the right
to read its types goes with its revisions meanwhile; asking them was refused once the
roles were gone (the fault benchmark's clean-up deleting twenty packages at once). Its
usage goes (docs/design.md, "Provider deletion protection")."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from lockwright import contracts as c
from lockwright.activities.protection import ProtectionActivities
from lockwright.errors import KubeAlreadyExists
from lockwright.k8s import Kube
from lockwright.k8s.crds import load_crds
from lockwright.managed import protection as p
from tests.e2e.packages import crd
from tests.helpers import unique, wait_for

PKG = "pkg.crossplane.io/v1"
HOLD = "example.org/hold"  # a finalizer keeping a deleted Provider "being deleted"


@pytest.fixture(scope="module")
def kube(devcluster: Any) -> Iterator[Kube]:
    k = Kube.connect(devcluster.kubeconfig)
    for obj in load_crds():
        with contextlib.suppress(KubeAlreadyExists):
            k.create(obj)
    yield k
    k.close()


def provider_type(kube: Kube, provider: str) -> tuple[str, str]:
    """A Provider ``provider`` owning a Widget CRD with one Widget; returns the CRD's name
    and group."""
    owner = kube.create({"apiVersion": PKG, "kind": "Provider",
                         "metadata": {"name": provider, "finalizers": [HOLD]},
                         "spec": {"package": "registry.example.org/example/p:v1"}})
    group = f"{unique('std')}.example.org"
    definition = crd(group, "Widget")
    definition["metadata"]["ownerReferences"] = [{
        "apiVersion": PKG, "kind": "Provider", "name": provider,
        "uid": owner["metadata"]["uid"]}]
    kube.create(definition)
    wait_for(lambda: kube.read_path(f"/apis/{group}/v1alpha1") is not None, timeout=30,
             interval=0.05, what=f"{group} served")
    kube.create({"apiVersion": f"{group}/v1alpha1", "kind": "Widget",
                 "metadata": {"name": "in-use"}})
    return str(definition["metadata"]["name"]), group


def usages(kube: Kube) -> set[str]:
    return {o["metadata"]["name"] for o in kube.list(p.USAGE_API_VERSION, p.USAGE_KIND)}


def test_the_types_of_a_provider_being_deleted_are_not_asked_and_lose_their_usage(
        kube: Kube, monkeypatch: pytest.MonkeyPatch) -> None:
    standing, going = unique("standing"), unique("going")
    (kept, kept_group), (dropped, dropped_group) = (provider_type(kube, standing),
                                                    provider_type(kube, going))
    kube.delete(PKG, "Provider", going)  # admitted (no usage yet); its finalizer holds it
    # A usage an earlier pass applied while it stood.
    kube.apply(p.usage(p.ManagedType(dropped, "Widget", dropped_group, going)),
               p.FIELD_OWNER, force=True)
    asked: list[str] = []
    can_i = kube.can_i
    monkeypatch.setattr(kube, "can_i", lambda verb, group, resource: asked.append(
        f"{resource}.{group}") or can_i(verb, group, resource))

    ActivityEnvironment().run(ProtectionActivities(kube, enabled=True).protect_providers,
                              c.ProtectProvidersInput())

    assert kept in asked and dropped not in asked
    assert p.usage_name(kept) in usages(kube) and p.usage_name(dropped) not in usages(kube)
    for group in (kept_group, dropped_group):
        kube.delete(f"{group}/v1alpha1", "Widget", "in-use")
    kube.delete(p.USAGE_API_VERSION, p.USAGE_KIND, p.usage_name(kept))
    for name in (standing, going):
        kube.patch(PKG, "Provider", name, {"metadata": {"finalizers": None}})
        kube.delete(PKG, "Provider", name)


def test_a_pass_heartbeats_while_it_asks_the_types(
        kube: Kube, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking a 2,000-type Provider's types is thousands of requests (an access review and
    a list each); on a busy kube-apiserver that outlasted the activity's 30 s heartbeat
    timeout, and a pass that never heartbeats was retried from the start, again and again
    (the upgrade benchmark's 2,000-CRD switch-overs, 2026-12-02). Here each question waits
    for the activity's first heartbeat."""
    crd_name, _ = provider_type(kube, unique("hb"))
    beat, real = threading.Event(), kube.can_i
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beat.set()

    def after_a_heartbeat(*args: Any) -> bool:
        if not beat.wait(30):
            raise AssertionError("the pass asked the types for 30 s without a heartbeat")
        return real(*args)

    monkeypatch.setattr(kube, "can_i", after_a_heartbeat)
    result = env.run(ProtectionActivities(kube, True).protect_providers,
                     c.ProtectProvidersInput())
    assert result.in_use >= 1 and p.usage_name(crd_name) in usages(kube)
