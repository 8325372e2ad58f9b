"""deploy/'s RBAC is exactly what lockwright uses (issue 10, "What it must show").

One stack of its own, devcluster enforcing RBAC and lockwright running as deploy/'s
ServiceAccount, goes through a representative life: a Provider shipping every kind a
provider installs (applied before its tag exists, so it fails and retries first), one
whose runtime never becomes available (its health check watches it), a
Configuration shipping every kind a configuration installs with a missing Provider,
Function and Configuration as dependencies, an upgrade of each that keeps some objects
and drops the others (one CRD still in use), dependency upgrades that move the three
dependencies and collect their old revisions, an orphaning deletion (once the last
Widget is gone, and with it its ClusterUsage) and re-creation, a cascading deletion, and
provider deletion protection turned off. Then devcluster's record must show every verb of every resource of
every rule of deploy/'s ClusterRole and Role allowing some request, and no request denied.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from lockwright.devcluster.rbac import atoms
from lockwright.managed.protection import POLICY_NAME as POLICY
from tests.e2e.packages import OPEN_KINDS, OPS, crd
from tests.e2e.test_dependencies import Repos, dep
from tests.e2e.test_install import SIMULATE, allow_secrets, ensure_crossplane_crds, write_package
from tests.fixtures.deploy import deploy_objects
from tests.fixtures.devcluster import DevCluster
from tests.fixtures.stack import PKG_GROUP, PLURALS, Stack, running_stack
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kube_shows(
    "kube-apiserver's RBAC authorizer and ClusterRole aggregation, every refusal in its audit log")

Obj = dict[str, Any]
XP = "apiextensions.crossplane.io"
META = "meta.pkg.crossplane.io/v1"
IMAGE = "registry.example.org/example/provider-audited:v1"


@pytest.fixture(scope="module")
def audited(registry: Any, auth_registry: Any, temporal_env: Any,
            cluster_kind: str) -> Iterator[Stack]:
    """A stack of its own, moving dependencies up when a dependent asks."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind,
                       worker_env={"LOCKWRIGHT_DEPENDENCY_UPGRADES": "true"}) as s:
        yield s


# --- what the packages ship ------------------------------------------------------------
def install_crossplane_kinds(stack: Stack) -> None:
    """Crossplane core's CRDs for what packages ship (as the cluster's admin)."""
    ensure_crossplane_crds(stack)
    ext = client.ApiextensionsV1Api(stack.api)
    for group, kind, plural in OPEN_KINDS:
        ext.create_custom_resource_definition(crd(group, kind, plural=plural))  # type: ignore[arg-type]

    def served() -> bool:
        return all(stack.custom.list_cluster_custom_object(g, "v1alpha1", p) is not None
                   for g, _, p in OPEN_KINDS)

    wait_for(served, timeout=30, interval=0.1, what="Crossplane kinds served")


def webhook(kind: str, name: str, group: str) -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.{group}", "admissionReviewVersions": ["v1"],
                          "sideEffects": "None",
                          "clientConfig": {"service": {"name": "provider-audited",
                                                       "namespace": "upbound-system",
                                                       "path": "/validate"}},
                          "rules": [{"apiGroups": [group], "apiVersions": ["v1alpha1"],
                                     "operations": ["CREATE"], "resources": ["gadgets"]}]}]}


def mrd(group: str, kind: str) -> Obj:
    """A ManagedResourceDefinition: a CRD's spec under Crossplane's kind."""
    return {**crd(group, kind), "apiVersion": f"{XP}/v1alpha1",
            "kind": "ManagedResourceDefinition"}


def tagged(obj: Obj, tag: str) -> Obj:
    """``obj`` labelled with the version that ships it: an upgrade rewrites it whole (an
    object kept as it was only changes hands, by its owner references)."""
    meta = {**obj["metadata"], "labels": {**obj["metadata"].get("labels", {}),
                                          "audited.example.org/tag": tag}}
    return {**obj, "metadata": meta}


def provider_objects(group: str, tag: str, hooks: str) -> list[Obj]:
    """What a provider ships at ``tag``.

    v1 ships two MRDs, three CRDs and both webhook configurations (Crossplane names a
    provider's webhook configurations after it: one of each kind per provider); v2 keeps
    the first MRD and CRD as they were and the webhook configuration ``hooks`` names,
    changed.
    """
    kept = [crd(group, "Gadget"), mrd(group, "Thing")]
    dropped = [crd(group, "Widget"), crd(group, "Doohickey"), mrd(group, "Other")]
    configs = {kind: tagged(webhook(f"{kind}WebhookConfiguration", f"{kind.lower()}-{group}",
                                    group), tag)
               for kind in ("Validating", "Mutating")}
    if tag == "v1.0.0":
        return kept + dropped + list(configs.values())
    return [*kept, configs[hooks]]


def push_provider(stack: Stack, tmp: Path, repo: str, group: str, tag: str,
                  hooks: str = "Validating") -> str:
    requests = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    meta = {"apiVersion": META, "kind": "Provider", "metadata": {"name": "provider-audited"},
            "spec": {"controller": {"image": IMAGE, "permissionRequests": requests}}}
    root = tmp / unique(tag)
    root.mkdir()
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "objects.yaml").write_text(
        yaml.safe_dump_all(provider_objects(group, tag, hooks)))
    return stack.push(root, repo=repo, tag=tag)


def composition_pair(group: str, kind: str) -> list[Obj]:
    plural = f"x{kind.lower()}s"
    xrd = {"apiVersion": f"{XP}/v1", "kind": "CompositeResourceDefinition",
           "metadata": {"name": f"{plural}.{group}"},
           "spec": {"group": group, "names": {"kind": f"X{kind}", "plural": plural},
                    "versions": [{"name": "v1alpha1", "served": True, "referenceable": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    composition = {"apiVersion": f"{XP}/v1", "kind": "Composition",
                   "metadata": {"name": f"{plural}.{group}"},
                   "spec": {"compositeTypeRef": {"apiVersion": f"{group}/v1alpha1",
                                                 "kind": f"X{kind}"},
                            "mode": "Pipeline",
                            "pipeline": [{"step": "s", "functionRef": {"name": "f"}}]}}
    return [xrd, composition]


def operations(name: str) -> list[Obj]:
    pipeline = {"pipeline": [{"step": "s", "functionRef": {"name": "f"}}]}
    return [{"apiVersion": f"{XP}/v1alpha1", "kind": "ManagedResourceActivationPolicy",
             "metadata": {"name": name}, "spec": {"activate": ["*.example.org"]}},
            {"apiVersion": f"{OPS}/v1alpha1", "kind": "Operation", "metadata": {"name": name},
             "spec": {"mode": "Pipeline", **pipeline}},
            {"apiVersion": f"{OPS}/v1alpha1", "kind": "CronOperation",
             "metadata": {"name": name},
             "spec": {"schedule": "@daily", "operationTemplate": {"spec": pipeline}}},
            {"apiVersion": f"{OPS}/v1alpha1", "kind": "WatchOperation",
             "metadata": {"name": name},
             "spec": {"watch": {"apiVersion": "v1", "kind": "ConfigMap"},
                      "operationTemplate": {"spec": pipeline}}}]


def configuration_objects(group: str, prefix: str, tag: str) -> list[Obj]:
    """v1 ships two of each kind; v2 and v3 keep the first, changed."""
    kept = [tagged(o, tag) for o in composition_pair(group, "Network")
            + operations(f"{prefix}-a")]
    dropped = composition_pair(group, "Subnet") + operations(f"{prefix}-b")
    return kept + dropped if tag == "v1.0.0" else kept


def push_configuration(r: Repos, group: str, tag: str, constraint: str,
                       dependencies: dict[str, str]) -> str:
    """The configuration at ``tag``, depending on each of ``dependencies`` (kind: repo)."""
    meta = {"apiVersion": META, "kind": "Configuration", "metadata": {"name": "audited"},
            "spec": {"dependsOn": [dep(kind, repo, constraint)
                                   for kind, repo in dependencies.items()]}}
    root = r.tmp / unique(tag)
    write_package(root, {"crossplane.yaml": meta})
    (root / "objects.yaml").write_text(yaml.safe_dump_all(
        configuration_objects(group, group.split(".")[0], tag)))
    return r.stack.push(root, repo=f"{r.ns}/audited", tag=tag)


# --- the life the packages go through ------------------------------------------------
def events_about(stack: Stack, name: str) -> list[Any]:
    return list(client.CoreV1Api(stack.api).list_event_for_all_namespaces(
        field_selector=f"involvedObject.name={name}").items)


def install_provider(stack: Stack, tmp: Path, group: str,
                     fail_first: bool = False) -> tuple[str, str]:
    """Install a provider: with ``fail_first``, applied before its tag exists (it fails
    and retries with a repeated Warning Event) and then pushed."""
    repo, name = unique("audited"), unique("provider")
    if fail_first:
        stack.apply_package("Provider", name, f"{stack.registry_host}/{repo}:v1.0.0")
        wait_for(lambda: any((e.count or 0) >= 2 for e in events_about(stack, name)),
                 timeout=60, interval=0.2, what="a repeated Warning Event")
    ref = push_provider(stack, tmp, repo, group, "v1.0.0")
    if not fail_first:
        stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name, timeout=90)
    return repo, name


def install_unavailable(stack: Stack, tmp: Path, group: str) -> None:
    """A Provider whose runtime is never available (a runtime config's pod-template
    annotation, which devcluster and kwok honour): its health check lists the Deployment,
    finds it unavailable and watches it. Runtimes that are available at the first list
    (devcluster's come 50 ms after a write) are never watched, so without this one the
    Role's watch of Deployments was used or not by how fast the worker was. The Provider
    is deleted once the watch is in the record."""
    drc = unique("unavailable")
    stack.custom.create_cluster_custom_object(
        PKG_GROUP, "v1beta1", "deploymentruntimeconfigs",
        {"apiVersion": f"{PKG_GROUP}/v1beta1", "kind": "DeploymentRuntimeConfig",
         "metadata": {"name": drc},
         "spec": {"deploymentTemplate": {"spec": {
             "selector": {}, "template": {"metadata": {"annotations": {SIMULATE: "unavailable"}},
                                          "spec": {"containers": []}}}}}})
    name = unique("provider")
    stack.apply_package("Provider", name, push_provider(stack, tmp, unique("audited"), group,
                                                        "v1.0.0"), runtimeConfigRef={"name": drc})
    wait_for(lambda: any(u["atom"][:3] == ["watch", "apps", "deployments"]
                         for u in record_of(stack)["allowed"]), timeout=90, interval=0.5,
             what=f"Provider {name}'s health check watching its unavailable Deployment")
    delete(stack, "Provider", name, "Background")


def use_widgets(stack: Stack, group: str) -> None:
    """A custom resource of the Widget CRD, which the provider's v2 no longer ships."""
    stack.custom.create_cluster_custom_object(group, "v1alpha1", "widgets", {
        "apiVersion": f"{group}/v1alpha1", "kind": "Widget", "metadata": {"name": "in-use"}})


def rbac_of(stack: Stack, name: str) -> tuple[Any, str, str]:
    """The RBAC API, and the system ClusterRole and binding of the Provider's revision."""
    [rev] = stack.revisions("Provider", name)
    role = f"crossplane:provider:{rev['metadata']['name']}:system"
    return client.RbacAuthorizationV1Api(stack.api), role, role


def repair_drift(stack: Stack, name: str) -> None:
    """Edit the Provider's system ClusterRole and binding by hand, then pause and resume
    the package: the full pass that follows puts both back (a spec change would roll a
    new revision instead: docs/design.md, "Revision names")."""
    api, role, binding = rbac_of(stack, name)
    api.patch_cluster_role(role, {"rules": [{"apiGroups": [""], "resources": ["pods"],
                                              "verbs": ["get"]}]})
    api.patch_cluster_role_binding(binding, [{"op": "remove", "path": "/subjects"}])
    pause(stack, name, "true")
    wait_for(lambda: stack.conditions("Provider", name).get("Synced", {}).get("status")
             == "False", timeout=60, interval=0.2, what="the Provider paused")
    pause(stack, name, None)

    def repaired() -> bool:
        rules = api.read_cluster_role(role).rules or []
        return len(rules) > 1 and bool(api.read_cluster_role_binding(binding).subjects)

    wait_for(repaired, timeout=60, interval=0.2, what="the system role and binding repaired")


def pause(stack: Stack, name: str, value: str | None) -> None:
    """Set (or, with None, remove) the Provider's ``crossplane.io/paused`` annotation."""
    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name, {
        "metadata": {"annotations": {"crossplane.io/paused": value}}})


def upgrade(stack: Stack, kind: str, name: str, ref: str) -> None:
    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", PLURALS[kind], name,
                                             {"spec": {"package": ref}})


def wait_dropped(stack: Stack, name: str, group: str, in_use: bool) -> None:
    """v1-only objects gone, except the Widget CRD while it has a custom resource."""
    ext = client.ApiextensionsV1Api(stack.api)

    def dropped() -> bool:
        names = {c.metadata.name for c in ext.list_custom_resource_definition().items}
        kept = any(e.reason == "DropObject" for e in events_about(stack, name))
        return (kept == in_use and f"doohickeys.{group}" not in names
                and (f"widgets.{group}" in names) == in_use)

    wait_for(dropped, timeout=90, interval=0.2, what=f"{name}'s v1-only objects dropped")
    stack.wait_healthy("Provider", name)


def dependencies(r: Repos) -> dict[str, str]:
    """A Provider, a Function and a Configuration at v1, v2 and v3: kind → repository."""
    return {kind: r.versions(kind, f"dep-{kind.lower()}", "v1.0.0", "v2.0.0", "v3.0.0")
            for kind in ("Provider", "Function", "Configuration")}


def at_version(stack: Stack, kind: str, name: str, ref: str) -> None:
    wait_for(lambda: (stack.get_package(kind, name) or {}).get("spec", {}).get(
        "package") == ref, timeout=90, interval=0.2, what=f"{kind} {name} at {ref}")
    stack.wait_healthy(kind, name, timeout=90)


def moved(stack: Stack, r: Repos, deps: dict[str, str], tag: str) -> None:
    """Each dependency moved to ``tag`` by the resolver, and healthy."""
    for kind, repo in deps.items():
        at_version(stack, kind, r.package_name(f"dep-{kind.lower()}"), f"{repo}:{tag}")


def collected(stack: Stack, r: Repos, deps: dict[str, str]) -> None:
    """Each dependency's v1 revision deleted (one old revision is kept by default)."""
    for kind, repo in deps.items():
        name = r.package_name(f"dep-{kind.lower()}")
        wait_for(lambda: sorted(v["spec"]["image"] for v in stack.revisions(
            kind, name)) == [f"{repo}:v2.0.0", f"{repo}:v3.0.0"],
                 timeout=90, interval=0.2, what=f"{kind} {name}'s v1 revision collected")


def configuration_life(stack: Stack, tmp: Path) -> str:
    """Install with missing dependencies, then ask twice for their next major."""
    r = Repos(stack, tmp)
    deps, group = dependencies(r), f"{unique('cfg')}.example.org"
    name = unique("configuration")
    stack.apply_package("Configuration", name,
                        push_configuration(r, group, "v1.0.0", ">=v1.0.0, <v2.0.0", deps))
    stack.wait_healthy("Configuration", name, timeout=120)
    for tag, constraint in (("v2.0.0", ">=v2.0.0, <v3.0.0"), ("v3.0.0", ">=v3.0.0")):
        upgrade(stack, "Configuration", name, push_configuration(r, group, tag, constraint,
                                                                 deps))
        moved(stack, r, deps, tag)
        stack.wait_healthy("Configuration", name, timeout=120)
    collected(stack, r, deps)
    return name


def delete(stack: Stack, kind: str, name: str, propagation: str) -> None:
    stack.custom.delete_cluster_custom_object(PKG_GROUP, "v1", PLURALS[kind], name,
                                              propagation_policy=propagation)
    wait_for(lambda: stack.get_package(kind, name) is None, timeout=60, interval=0.2,
             what=f"{kind} {name} gone")


def stop_using_widgets(stack: Stack, group: str) -> None:
    """Delete the Widget; its ClusterUsage goes, so the Provider may be deleted again."""
    stack.custom.delete_cluster_custom_object(group, "v1alpha1", "widgets", "in-use")
    wait_for(lambda: not stack.custom.list_cluster_custom_object(
        "protection.crossplane.io", "v1beta1", "clusterusages")["items"], timeout=60,
        interval=0.2, what="the ClusterUsage of the Widget type gone")


def unprotect(stack: Stack) -> None:
    """Turn provider deletion protection off (the worker restarted with the setting, the
    watcher restarted, whose first lists signal the protection workflow): the admission
    policy and its binding are deleted."""
    stack.restart_worker(LOCKWRIGHT_PROVIDER_DELETION_PROTECTION="false")
    for proc in stack.watcher_processes:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    stack.start_watcher()
    admission = client.AdmissionregistrationV1Api(stack.api)

    def gone() -> bool:
        try:
            admission.read_validating_admission_policy_binding(POLICY)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, timeout=60, interval=0.2, what="the protection policy's binding deleted")


def orphan_and_adopt(stack: Stack, name: str) -> None:
    """Delete the Provider leaving its revisions and Secrets; a new one adopts them."""
    ref = stack.get_package("Provider", name)["spec"]["package"]  # type: ignore[index]
    delete(stack, "Provider", name, "Orphan")
    stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name, timeout=90)


# --- the record ------------------------------------------------------------------------
def record_of(stack: Stack) -> Obj:
    """Which rule allowed which requests, and the refusals: devcluster records them; on
    kube the record is rebuilt from the audit log (the role that allowed each request,
    then its first matching rule)."""
    return (stack.cluster.rbac_record() if isinstance(stack.cluster, DevCluster)
            else stack.cluster.rbac_record(stack.api))


def role_key(role: Obj) -> tuple[str, str]:
    meta = role["metadata"]
    name = f"{meta['namespace']}/{meta['name']}" if role["kind"] == "Role" else meta["name"]
    return role["kind"], name


def unused(record: Obj) -> list[str]:
    """Each (verb, group, resource) of deploy/'s rules that allowed no request."""
    used = {(u["roleKind"], u["role"], u["rule"], tuple(u["atom"])) for u in record["allowed"]}
    out = []
    for role in deploy_objects(("ClusterRole", "Role")):
        kind, name = role_key(role)
        for i, rule in enumerate(role.get("rules") or []):
            out += [f"{kind} {name} rule {i}: {a}" for a in atoms(rule)
                    if (kind, name, i, a) not in used]
    return out


def aggregated_uses(record: Obj) -> list[Obj]:
    return [u for u in record["allowed"]
            if u["role"] == "lockwright:provider-resources" and u.get("aggregatedFrom")]


def test_every_rule_of_deploy_rbac_is_used_and_nothing_is_refused(
        audited: Stack, tmp_path: Path) -> None:
    stack = audited
    install_crossplane_kinds(stack)
    allow_secrets(stack)
    groups = [f"{unique('prov')}.example.org" for _ in range(2)]
    installed = [install_provider(stack, tmp_path, groups[0], fail_first=True),
                 install_provider(stack, tmp_path, groups[1])]
    install_unavailable(stack, tmp_path, f"{unique('down')}.example.org")
    use_widgets(stack, groups[0])
    repair_drift(stack, installed[0][1])
    configuration = configuration_life(stack, tmp_path)
    for (repo, name), group, hooks in zip(installed, groups, ("Validating", "Mutating")):
        upgrade(stack, "Provider", name, push_provider(stack, tmp_path, repo, group,
                                                       "v2.0.0", hooks))
    for (_, name), group in zip(installed, groups):
        wait_dropped(stack, name, group, in_use=group == groups[0])
    stop_using_widgets(stack, groups[0])
    orphan_and_adopt(stack, installed[0][1])
    delete(stack, "Configuration", configuration, "Background")
    unprotect(stack)

    assert stack.denials() == []
    record = record_of(stack)
    assert record["denied"] == []
    # The health poll reads the runtime Deployment with a get; it runs only where the
    # health watch (list and watch) cannot, and in runs started before the watch
    # (PATCH_HEALTH_WATCH): the rule stays for them, and nothing here breaks a watch.
    left = [u for u in unused(record) if not u.endswith("('get', 'apps', 'deployments')")]
    if stack.kind == "kube":
        # kube-apiserver checks escalate and bind inside a role or binding write, and its
        # audit log does not show those checks (devcluster's record does).
        left = [u for u in left if not re.search(r"\('(escalate|bind)', ", u)]
        # Nor the get on a policy's paramKind it asks inside a ValidatingAdmissionPolicy
        # write (deletion protection's ClusterUsages).
        left = [u for u in left if not re.search(r"\('get', 'protection.crossplane.io', ", u)]
    assert left == [], "\n".join(left)
    # Before deleting a dropped CRD, its custom resources were counted, and deletion
    # protection lists and watches every Provider type, through the view roles of the
    # providers' revisions and the Providers' read roles, aggregated into deploy/'s
    # provider-resources role.
    listed = {(u["atom"][0], u["atom"][1], u["atom"][2]) for u in aggregated_uses(record)}
    assert {("list", g, plural) for g in groups for plural in ("widgets", "doohickeys")
            } <= listed
    assert {verb for verb, _, _ in listed} == {"list", "watch"}
    assert all(re.fullmatch(r"crossplane:provider:.+:aggregate-to-view|lockwright:provider:.+:read",
                            u["aggregatedFrom"]) for u in aggregated_uses(record))
