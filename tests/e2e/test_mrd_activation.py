"""Crossplane v2 packages end to end: MRDs, activation policies, safe-start (issue 22).

Every step goes through kubectl and the watcher. The shared stacks run without a default
activation policy (``LOCKWRIGHT_DEFAULT_ACTIVATIONS`` empty), so each test's policies name
its own API group and nothing else; the default policy (``*``) gets a stack of its own.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from temporalio.client import Client

from lockwright import contracts as c
from tests.e2e.packages import crd
from tests.e2e.test_failures import crd_exists, package_status
from tests.fixtures.stack import Stack, running_stack
from tests.helpers import unique, wait_for, wait_for_async

pytestmark = pytest.mark.kube_shows(
    "the CRDs activated MRDs make, established by kube-apiserver, and safe-start's RBAC")

NS = "crossplane-system"
IMAGE = "registry.example.org/example/provider-gadgets:{tag}"
# Full resource names: another test's CRD may claim a short name or kind (``provider``).
PROVIDERS = "providers.pkg.crossplane.io"
MRDS = "managedresourcedefinitions.apiextensions.crossplane.io"
MRAPS = "managedresourceactivationpolicies.apiextensions.crossplane.io"
AWAITING = "AwaitingActivation"
Obj = dict[str, Any]


def things(group: str, count: int) -> list[Obj]:
    """``count`` managed resource CRDs, ``thing00s.<group>`` on, and a ProviderConfig."""
    return [*(crd(group, f"Thing{i:02d}") for i in range(count)), crd(group, "ProviderConfig")]


def provider(stack: Stack, tmp: Path, group: str, count: int, tag: str = "v1.0.0",
             capabilities: list[str] | None = None, repo: str = "") -> str:
    """Push a Provider of ``count`` CRDs in ``group`` that asks for Crossplane v2."""
    root = tmp / unique(tag)
    root.mkdir(parents=True)
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": f"provider-{group.split('.')[0]}"},
            "spec": {"controller": {"image": IMAGE.format(tag=tag)},
                     "crossplane": {"version": ">=v2.0.0"},
                     "capabilities": capabilities or []}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "objects.yaml").write_text(yaml.safe_dump_all(things(group, count)))
    return stack.push(root, repo=repo or unique("activation"), tag=tag)


def policy(name: str, *patterns: str) -> str:
    return yaml.safe_dump({"apiVersion": "apiextensions.crossplane.io/v1alpha1",
                           "kind": "ManagedResourceActivationPolicy",
                           "metadata": {"name": name}, "spec": {"activate": list(patterns)}})


def states(stack: Stack, group: str) -> dict[str, str]:
    """Each MRD of ``group``: its state, as ``kubectl get mrd`` prints it."""
    out = stack.kubectl("get", MRDS, "-o", "json").stdout
    return {m["metadata"]["name"]: m["spec"].get("state", "")
            for m in json.loads(out)["items"] if m["spec"]["group"] == group}


def active(stack: Stack, group: str) -> set[str]:
    return {name for name, state in states(stack, group).items() if state == "Active"}


def crds_of(stack: Stack, group: str) -> set[str]:
    listed = client.ApiextensionsV1Api(stack.api).list_custom_resource_definition().items
    return {c.metadata.name for c in listed if c.spec.group == group}


def controller(obj: Any) -> str:
    refs = obj.metadata.owner_references or [] if hasattr(obj, "metadata") else []
    return next((r.name for r in refs if r.controller), "")


def crd_controller(stack: Stack, name: str) -> str:
    return controller(client.ApiextensionsV1Api(stack.api).read_custom_resource_definition(name))


def active_revision(stack: Stack, package: str) -> Obj:
    return next(r for r in stack.revisions("Provider", package)
                if r["spec"]["desiredState"] == "Active")


def replicas(stack: Stack, revision: str) -> int | None:
    """The runtime Deployment's replicas (None while it does not exist)."""
    deployments = client.AppsV1Api(stack.api).list_namespaced_deployment(
        NS, field_selector=f"metadata.name={revision}").items
    return deployments[0].spec.replicas if deployments else None


def names(group: str, *numbers: int) -> set[str]:
    return {f"thing{n:02d}s.{group}" for n in numbers}


def test_safe_start_waits_for_policies_and_keeps_activation_across_an_upgrade(
        stack: Stack, tmp_path: Path) -> None:
    group, name = f"{unique('ss')}.activation.example.org", unique("safe")
    repo = unique("safe-start")
    ref = provider(stack, tmp_path, group, 50, capabilities=["SafeStart"], repo=repo)
    stack.apply_package("Provider", name, ref)
    stack.wait_conditions("Provider", name, {"Installed": ("True", "ActivePackageRevision"),
                                             "Healthy": ("True", AWAITING)}, timeout=120)
    rev = active_revision(stack, name)["metadata"]["name"]
    assert states(stack, group) == {n: "Inactive" for n in names(group, *range(50))}
    assert crds_of(stack, group) == {f"providerconfigs.{group}"}  # stays a plain CRD
    assert crd_controller(stack, f"providerconfigs.{group}") == rev
    assert replicas(stack, rev) == 0
    assert stack.conditions("Provider", name)["Healthy"]["message"].startswith(
        "Package runtime is scaled to zero")

    first = unique("mrap")
    stack.kubectl("apply", "-f", "-", stdin=policy(first, f"thing0[01]s.{group}"))
    wait_for(lambda: crds_of(stack, group) >= names(group, 0, 1), timeout=90,
             what="the two activated CRDs")
    assert active(stack, group) == names(group, 0, 1)
    assert crds_of(stack, group) == names(group, 0, 1) | {f"providerconfigs.{group}"}
    assert {crd_controller(stack, n) for n in names(group, 0, 1)} == {rev}
    wait_for(lambda: replicas(stack, rev) == 1, timeout=60, what="the runtime scaled up")
    stack.wait_healthy("Provider", name, timeout=120)
    wait_for(lambda: _activated(stack, first) == sorted(names(group, 0, 1)), timeout=30,
             what="the policy's status.activated")

    stack.kubectl("delete", MRAPS, first)
    second = unique("mrap")
    stack.kubectl("apply", "-f", "-", stdin=policy(second, f"thing1?s.{group}"))
    wait_for(lambda: crds_of(stack, group) >= names(group, *range(10, 20)), timeout=90,
             what="the second policy's CRDs")
    assert active(stack, group) == names(group, 0, 1, *range(10, 20))  # nothing deactivated
    assert crds_of(stack, group) >= names(group, 0, 1)

    v2 = provider(stack, tmp_path, group, 50, tag="v2.0.0", capabilities=["safe_start"],
                  repo=repo)
    stack.kubectl("patch", PROVIDERS, name, "--type", "merge", "-p",
                  json.dumps({"spec": {"package": v2}}))
    wait_for(lambda: active_revision(stack, name)["metadata"]["name"] != rev, timeout=120,
             what="the upgrade")
    new = active_revision(stack, name)["metadata"]["name"]
    wait_for(lambda: {crd_controller(stack, n) for n in names(group, 0, 1, *range(10, 20))}
             == {new}, timeout=120, what="the CRDs' controller to move to the new revision")
    wait_for(lambda: replicas(stack, new) == 1, timeout=60, what="the new runtime running")
    stack.wait_healthy("Provider", name, timeout=120)
    assert active(stack, group) == names(group, 0, 1, *range(10, 20))
    stack.kubectl("delete", MRAPS, second)


class Watched:
    """A watch of one group's MRDs, from before an install: every state each was seen in
    (every write the API server made of them, in order)."""

    PATH = ("apiextensions.crossplane.io", "v1alpha1", "managedresourcedefinitions")

    def __init__(self, stack: Stack, group: str) -> None:
        self.custom, self.group = stack.custom, group
        self.rv = self.custom.list_cluster_custom_object(*self.PATH)["metadata"][
            "resourceVersion"]
        self.states: dict[str, list[str]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for event in watch.Watch().stream(self.custom.list_cluster_custom_object,
                                              *self.PATH, resource_version=self.rv,
                                              timeout_seconds=1):
                mrd = event["object"]
                self.rv = mrd["metadata"]["resourceVersion"]
                if mrd["spec"].get("group") == self.group:
                    self.states.setdefault(mrd["metadata"]["name"], []).append(
                        mrd["spec"].get("state", ""))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


async def installs(stack: Stack, name: str) -> int:
    """How many times the Provider's workflow installed a revision: its state's count,
    carried across continue-as-new (the test server suggests it after a few dozen events,
    so one run's history does not hold them all)."""
    tc = await Client.connect(stack.temporal_address)
    status = await package_status(tc, stack.task_queue, name)
    return status.installs


async def installs_past(stack: Stack, name: str, count: int) -> int:
    """The install count once it is past ``count`` (0 before)."""
    now = await installs(stack, name)
    return now if now > count else 0


def _events_on(stack: Stack, policy_name: str) -> list[str]:
    listed = client.CoreV1Api(stack.api).list_event_for_all_namespaces(
        field_selector=f"involvedObject.name={policy_name}").items
    return sorted(e.message for e in listed if e.reason == "ActivateManagedResourceDefinition")


async def test_a_policy_in_force_activates_safe_start_mrds_in_the_installs_one_pass(
        stack: Stack, tmp_path: Path) -> None:
    """Issue 33: the MRDs a policy already names are established Active with their CRDs
    by the install itself, never Inactive, the runtime running at once; one install. A
    policy applied later still activates, installing again."""
    group, name = f"{unique('one')}.activation.example.org", unique("onepass")
    first, later = unique("mrap"), unique("mrap")
    stack.kubectl("apply", "-f", "-", stdin=policy(first, f"thing0[0-2]s.{group}"))
    ref = provider(stack, tmp_path, group, 20, capabilities=["SafeStart"])
    watched = Watched(stack, group)
    try:
        stack.apply_package("Provider", name, ref)
        stack.wait_healthy("Provider", name, timeout=120)  # not AwaitingActivation
        rev = active_revision(stack, name)["metadata"]["name"]
        assert replicas(stack, rev) == 1
        assert active(stack, group) == names(group, 0, 1, 2)
        assert crds_of(stack, group) == names(group, 0, 1, 2) | {f"providerconfigs.{group}"}
        assert {crd_controller(stack, n) for n in names(group, 0, 1, 2)} == {rev}
        # The activation workflow has looked at them since: it found nothing to do.
        stack.kubectl("wait", "--for=condition=Established", f"mrap/{first}",
                      "--timeout=120s")
        assert _activated(stack, first) == sorted(names(group, 0, 1, 2))
        wait_for(lambda: len(_events_on(stack, first)) == 3, timeout=30,
                 what="an Event on the policy per MRD it activated")
        assert _events_on(stack, first) == sorted(
            f"Successfully activated ManagedResourceDefinition {n}"
            for n in names(group, 0, 1, 2))
        assert await installs(stack, name) == 1
    finally:
        watched.stop()
    assert set(watched.states) == names(group, *range(20))
    assert {n: set(s) for n, s in watched.states.items() if n in names(group, 0, 1, 2)} == {
        n: {"Active"} for n in names(group, 0, 1, 2)}, watched.states  # never Inactive

    stack.kubectl("apply", "-f", "-", stdin=policy(later, f"thing1[0-1]s.{group}"))
    wait_for(lambda: crds_of(stack, group) >= names(group, 10, 11), timeout=90,
             what="the later policy's CRDs")
    assert active(stack, group) == names(group, 0, 1, 2, 10, 11)
    stack.wait_healthy("Provider", name, timeout=120)
    # The activation told the package: it installs again (its CRDs above came from that
    # install; it is counted once the install child returns).
    assert await wait_for_async(lambda: installs_past(stack, name, 1), timeout=60,
                                what="the second install") == 2
    stack.kubectl("delete", MRAPS, first, later)


def test_a_revision_of_plain_crds_upgrades_to_mrds_keeping_every_type_served(
        stack: Stack, tmp_path: Path) -> None:
    """CRD → MRD: a revision installed before MRDs (the setting off) upgraded by one after:
    the types it served stay served (their MRDs Active, safe-start or not), the CRDs move
    to the new revision, the custom resources stay, and the plan checked them."""
    group, name = f"{unique('up')}.activation.example.org", unique("crd2mrd")
    repo = unique("crd-to-mrd")
    stack.restart_worker(LOCKWRIGHT_MANAGED_RESOURCE_DEFINITIONS="false")
    try:
        stack.apply_package("Provider", name, provider(stack, tmp_path, group, 3,
                                                       capabilities=["SafeStart"], repo=repo))
        stack.wait_healthy("Provider", name, timeout=120)
        assert states(stack, group) == {}
        assert crds_of(stack, group) == names(group, 0, 1, 2) | {f"providerconfigs.{group}"}
    finally:
        stack.restart_worker(LOCKWRIGHT_MANAGED_RESOURCE_DEFINITIONS="true")
    old = active_revision(stack, name)["metadata"]["name"]
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": f"{group}/v1alpha1", "kind": "Thing00",
        "metadata": {"name": "kept"}, "spec": {"size": 3}}))
    v2 = provider(stack, tmp_path, group, 3, tag="v2.0.0", capabilities=["SafeStart"],
                  repo=repo)
    stack.kubectl("patch", PROVIDERS, name, "--type", "merge", "-p",
                  json.dumps({"spec": {"package": v2}}))
    wait_for(lambda: active_revision(stack, name)["metadata"]["name"] != old, timeout=120,
             what="the upgrade")
    new = active_revision(stack, name)["metadata"]["name"]
    wait_for(lambda: {crd_controller(stack, n) for n in names(group, 0, 1, 2)} == {new},
             timeout=120, what="the CRDs' controller to move to the new revision")
    stack.wait_healthy("Provider", name, timeout=120)
    assert active(stack, group) == names(group, 0, 1, 2)  # served before: Active
    assert crds_of(stack, group) == names(group, 0, 1, 2) | {f"providerconfigs.{group}"}
    assert json.loads(stack.kubectl("get", f"thing00s.{group}", "kept", "-o", "json").stdout)[
        "spec"] == {"size": 3}
    wait_for(lambda: replicas(stack, new) == 1, timeout=60, what="the runtime running")
    plan = {x["type"]: x for x in stack.custom.get_cluster_custom_object(
        "pkg.crossplane.io", "v1", "providerrevisions", new)["status"]["conditions"]}
    assert plan["PlanCompatible"]["status"] == "True"


def _activated(stack: Stack, name: str) -> list[str]:
    got = stack.kubectl("get", MRAPS, name, "-o", "json").stdout
    return list((json.loads(got).get("status") or {}).get("activated") or [])


def test_a_provider_without_safe_start_has_every_mrd_active(stack: Stack,
                                                            tmp_path: Path) -> None:
    group, name = f"{unique('all')}.activation.example.org", unique("plain")
    stack.apply_package("Provider", name, provider(stack, tmp_path, group, 5))
    stack.wait_healthy("Provider", name, timeout=120)
    rev = active_revision(stack, name)["metadata"]["name"]
    assert active(stack, group) == names(group, *range(5))
    assert crds_of(stack, group) == names(group, *range(5)) | {f"providerconfigs.{group}"}
    assert {crd_controller(stack, n) for n in crds_of(stack, group)} == {rev}
    assert replicas(stack, rev) != 0
    mrds = json.loads(stack.kubectl("get", MRDS, "-o", "json").stdout)["items"]
    mine = [m for m in mrds if m["spec"]["group"] == group]
    assert {m["metadata"]["ownerReferences"][0]["name"] for m in mine} == {rev}
    wait_for(lambda: all(c.get("status") == "True" for m in _mrds(stack, group)
                         for c in (m.get("status") or {}).get("conditions") or []
                         if c["type"] == "Established") and len(_mrds(stack, group)) == 5
             and all((m.get("status") or {}).get("conditions") for m in _mrds(stack, group)),
             timeout=60, what="every MRD Established")


def _mrds(stack: Stack, group: str) -> list[Obj]:
    mrds = json.loads(stack.kubectl("get", MRDS, "-o", "json").stdout)["items"]
    return [m for m in mrds if m["spec"]["group"] == group]


def test_a_configuration_ships_a_policy(stack: Stack, tmp_path: Path) -> None:
    group, name = f"{unique('cfg')}.activation.example.org", unique("gated")
    stack.apply_package("Provider", name, provider(stack, tmp_path, group, 3,
                                                   capabilities=["safe-start"]))
    stack.wait_conditions("Provider", name, {"Healthy": ("True", AWAITING)}, timeout=120)
    root = tmp_path / "configuration"
    root.mkdir()
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Configuration",
            "metadata": {"name": "activates-one"},
            "spec": {"crossplane": {"version": ">=v2.0.0"}}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "policy.yaml").write_text(policy(unique("shipped"), f"thing01s.{group}"))
    configuration = unique("cfg")
    stack.apply_package("Configuration", configuration, stack.push(root))
    stack.wait_healthy("Configuration", configuration, timeout=120)
    wait_for(lambda: crd_exists(stack, f"thing01s.{group}") is not None, timeout=90,
             what="the CRD the shipped policy activates")
    assert active(stack, group) == names(group, 1)
    stack.wait_healthy("Provider", name, timeout=120)


def _policy_conditions(stack: Stack, name: str) -> dict[str, Obj]:
    got = json.loads(stack.kubectl("get", MRAPS, name, "-o", "json").stdout)
    return {x["type"]: x for x in (got.get("status") or {}).get("conditions") or []}


def test_kubectl_wait_for_a_policys_established_returns_once_its_kinds_are_served(
        stack: Stack, tmp_path: Path) -> None:
    """``kubectl wait --for=condition=Established mrap/NAME`` (crossplane#7822): once it
    returns, every kind the policy activated is served, and a resource of one can be
    created straight away. A policy that matches nothing does not say so."""
    group, name = f"{unique('est')}.activation.example.org", unique("served")
    stack.apply_package("Provider", name, provider(stack, tmp_path, group, 3,
                                                   capabilities=["SafeStart"]))
    stack.wait_conditions("Provider", name, {"Healthy": ("True", AWAITING)}, timeout=120)
    nothing = unique("mrap")
    stack.kubectl("apply", "-f", "-", stdin=policy(nothing, f"nothing.{group}"))
    conditions = wait_for(lambda: _policy_conditions(stack, nothing).get("Healthy") and
                          _policy_conditions(stack, nothing), timeout=60,
                          what="the empty policy's conditions")
    assert (conditions["Established"]["status"], conditions["Established"]["reason"]) == (
        "Unknown", "NoManagedResources"), conditions

    mrap = unique("mrap")
    stack.kubectl("apply", "-f", "-", stdin=policy(mrap, f"thing0[01]s.{group}"))
    stack.kubectl("wait", "--for=condition=Established", f"mrap/{mrap}", "--timeout=120s")
    for crd_name in sorted(names(group, 0, 1)):
        found = crd_exists(stack, crd_name)
        assert found is not None, crd_name
        assert any(c["type"] == "Established" and c["status"] == "True"
                   for c in found["status"]["conditions"]), found["status"]
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": f"{group}/v1alpha1", "kind": "Thing00", "metadata": {"name": "now"},
        "spec": {}}))
    established = _policy_conditions(stack, mrap)["Established"]
    assert established["reason"] == "EstablishedManagedResources", established
    assert established["message"] == (
        "all 2 activated ManagedResourceDefinitions are established"), established
    stack.kubectl("delete", MRAPS, mrap, nothing)


@pytest.fixture(scope="module")
def default_policy_stack(registry: Any, auth_registry: Any, temporal_env: Any,
                         cluster_kind: str) -> Any:
    """A stack whose worker starts with the default activation policy, ``*``."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind,
                       worker_env={"LOCKWRIGHT_DEFAULT_ACTIVATIONS": "*"}) as s:
        yield s


def test_the_default_policy_activates_everything(default_policy_stack: Stack,
                                                 tmp_path: Path) -> None:
    stack = default_policy_stack
    assert json.loads(stack.kubectl("get", MRAPS, "default", "-o", "json").stdout)[
        "spec"]["activate"] == ["*"]
    group, name = f"{unique('dflt')}.activation.example.org", unique("default")
    stack.apply_package("Provider", name, provider(stack, tmp_path, group, 4,
                                                   capabilities=["SafeStart"]))
    wait_for(lambda: crds_of(stack, group) == names(group, *range(4))
             | {f"providerconfigs.{group}"}, timeout=120, what="every CRD")
    assert active(stack, group) == names(group, *range(4))
    stack.wait_healthy("Provider", name, timeout=120)
    rev = active_revision(stack, name)["metadata"]["name"]
    wait_for(lambda: replicas(stack, rev) == 1, timeout=60, what="the runtime scaled up")


def test_a_safe_start_runtime_with_replicas_waits_at_zero_then_runs_them(
        stack: Stack, tmp_path: Path) -> None:
    """A DeploymentRuntimeConfig of 3 replicas: 0 until a policy activates an MRD, then 3
    (issue 31; Crossplane scales safe-start runtimes so since v2.4)."""
    group, name = f"{unique('ssr')}.activation.example.org", unique("safe")
    drc = unique("drc")
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "DeploymentRuntimeConfig",
        "metadata": {"name": drc}, "spec": {"deploymentTemplate": {"spec": {
            "replicas": 3, "selector": {}, "template": {"spec": {"containers": []}}}}}}))
    ref = provider(stack, tmp_path, group, 2, capabilities=["safe-start"])
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "metadata": {"name": name},
        "spec": {"package": ref, "runtimeConfigRef": {"name": drc}}}))
    stack.wait_conditions("Provider", name, {"Installed": ("True", "ActivePackageRevision"),
                                             "Healthy": ("True", AWAITING)}, timeout=120)
    rev = active_revision(stack, name)["metadata"]["name"]
    assert replicas(stack, rev) == 0  # the runtime config's 3 wait for an Active MRD

    mrap = unique("mrap")
    stack.kubectl("apply", "-f", "-", stdin=policy(mrap, f"thing00s.{group}"))
    wait_for(lambda: replicas(stack, rev) == 3, timeout=90, what="the runtime at 3 replicas")
    stack.wait_healthy("Provider", name, timeout=120)
    stack.kubectl("delete", MRAPS, mrap)
    # Once up, never back to zero: the policy gone, the MRD stays Active, the runtime at 3.
    assert active(stack, group) == names(group, 0)
    assert replicas(stack, rev) == 3
