"""Installs through the watcher, checked field by field (issue 4, "What it must show").

Every package here is applied as a user would (create the package object; the watcher
starts the workflow) and read back from the cluster: the revision, the Lock entry, the
installed objects and their owners, RBAC, and the runtime. Packages are copies of the
examples with their API groups made unique, so no two tests (or sessions of this file
against the shared stack) want the same objects.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import socket
import ssl
import threading
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lockwright import contracts as c
from lockwright import names
from tests.fixtures.stack import Stack
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kube_shows(
    "the installed objects, owners and RBAC as kube-apiserver stores and enforces them")

DATA = Path(__file__).resolve().parents[1] / "data"
PACKAGES = DATA / "packages"
CRDS = DATA / "crds"
NS = "crossplane-system"
PKG = "pkg.crossplane.io/v1"
CONTROLLER_IMAGE = "registry.example.org/example/provider-widgets-controller:v0.1.0"
SIMULATE = "devcluster.lockwright.dev/simulate"
UNAVAILABLE = "Deployment does not have minimum availability."
Obj = dict[str, Any]


# --- building packages -----------------------------------------------------------------

def copy_package(src: Path, dest: Path, replace: dict[str, str]) -> Path:
    """Copy a package root, rewriting every YAML's text with ``replace``."""
    shutil.copytree(src, dest)
    for path in dest.rglob("*.yaml"):
        text = path.read_text()
        for old, new in replace.items():
            text = text.replace(old, new)
        path.write_text(text)
    return dest


def write_package(root: Path, docs: dict[str, Obj]) -> Path:
    """A package root holding one YAML file per ``docs`` entry."""
    root.mkdir(parents=True)
    for name, doc in docs.items():
        (root / name).write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def configuration_root(stack: Stack, tmp: Path, group: str,
                       dependencies: bool = False) -> Path:
    """The example configuration, its XRD and Composition in API group ``group``.

    Its ``dependsOn`` names packages on registry.example.org, which does not exist. Without
    ``dependencies`` they are left out; with it, the example provider and function are
    pushed to the stack's registry (v0.1.0) and the configuration depends on those.
    """
    replace = {"platform.example.org": group}
    ns = unique("example")
    for name, src, api in (("provider-widgets", "provider", "widgets.example.org"),
                           ("function-shout", "function", "shout.fn.example.org")):
        if dependencies:
            root = copy_package(PACKAGES / src, tmp / name, {api: f"{unique('d')}.example.org"})
            ref = stack.push(root, repo=f"{ns}/{name}", tag="v0.1.0")
            replace[f"registry.example.org/example/{name}"] = ref.rpartition(":")[0]
    root = copy_package(PACKAGES / "configuration", tmp / "configuration", replace)
    if not dependencies:
        meta_path = root / "crossplane.yaml"
        meta = yaml.safe_load(meta_path.read_text())
        del meta["spec"]["dependsOn"]
        meta_path.write_text(yaml.safe_dump(meta, sort_keys=False))
    return root


def provider_root(tmp: Path) -> tuple[Path, str]:
    """The example provider with a unique API group; returns (root, group)."""
    group = f"{unique('w')}.example.org"
    return copy_package(PACKAGES / "provider", tmp / "provider",
                        {"widgets.example.org": group}), group


# --- reading the cluster ---------------------------------------------------------------

def plain(stack: Stack, model: Any) -> Obj:
    """A typed client model as the API's JSON (camelCase keys)."""
    return stack.api.sanitize_for_serialization(model)  # type: ignore[no-untyped-call,no-any-return]


def manifest_digest(stack: Stack, ref: str) -> str:
    """The digest the registry serves for ``ref``'s tag (read without product code)."""
    host, _, rest = ref.partition("/")
    repo, _, tag = rest.rpartition(":")
    accept = ("application/vnd.oci.image.index.v1+json, "
              "application/vnd.oci.image.manifest.v1+json, "
              "application/vnd.docker.distribution.manifest.v2+json, "
              "application/vnd.docker.distribution.manifest.list.v2+json")
    req = urllib.request.Request(f"http://{host}/v2/{repo}/manifests/{tag}", method="HEAD",
                                 headers={"Accept": accept})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return str(resp.headers["Docker-Content-Digest"])


def revision_name_for(stack: Stack, kind: str, name: str, ref: str) -> str:
    """The revision name of package ``name`` for ``ref`` at the package's generation now:
    ``<name>-<12 hex of sha256(digest|generation)>`` (Crossplane main's naming)."""
    pkg = stack.get_package(kind, name) or {}
    return names.revision_name(name, manifest_digest(stack, ref),
                               int(pkg["metadata"]["generation"]))


def get_revision(stack: Stack, kind: str, name: str) -> Obj:
    revisions = stack.revisions(kind, name)
    assert len(revisions) == 1, [r["metadata"]["name"] for r in revisions]
    return revisions[0]


def get_custom(stack: Stack, group: str, version: str, plural: str, name: str) -> Obj:
    return stack.custom.get_cluster_custom_object(  # type: ignore[return-value]
        group, version, plural, name)


def lock_entry(stack: Stack, revision: str) -> Obj:
    lock = get_custom(stack, "pkg.crossplane.io", "v1beta1", "locks", "lock")
    entries = [p for p in lock.get("packages") or [] if p.get("name") == revision]
    assert len(entries) == 1, lock.get("packages")
    return entries[0]  # type: ignore[no-any-return]


def conditions_of(obj: Obj) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c.get("message", ""))
            for c in (obj.get("status") or {}).get("conditions") or []}


def controller_of(obj: Obj) -> list[Obj]:
    return [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]


def revision_owner(rev: Obj) -> Obj:
    """The owner reference every runtime/RBAC object carries: controller → revision."""
    return {"apiVersion": PKG, "kind": rev["kind"], "name": rev["metadata"]["name"],
            "uid": rev["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def ensure_crossplane_crds(stack: Stack) -> None:
    """Create Crossplane core's XRD and Composition CRDs (idempotent), wait Established."""
    ext = client.ApiextensionsV1Api(stack.api)
    names = []
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        names.append(crd["metadata"]["name"])
        try:
            ext.create_custom_resource_definition(crd)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def established() -> bool:
        for name in names:
            conds = plain(stack, ext.read_custom_resource_definition(name))["status"]
            if not any(c["type"] == "Established" and c["status"] == "True"
                       for c in conds.get("conditions") or []):
                return False
        return True

    wait_for(established, timeout=30, interval=0.1, what="Crossplane core CRDs established")


def allow_secrets(stack: Stack) -> None:
    """Grant what the example provider requests, as Crossplane's Helm chart would."""
    client.RbacAuthorizationV1Api(stack.api).create_cluster_role({  # type: ignore[arg-type]
        "metadata": {"name": unique("allow"), "labels": {
            "rbac.crossplane.io/aggregate-to-allowed-provider-permissions": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["secrets"],
                   "verbs": ["get", "list", "watch"]}]})


# --- shared checks ---------------------------------------------------------------------

def check_package_and_revision(stack: Stack, kind: str, name: str, ref: str) -> Obj:
    """The package's status and its single revision's spec, metadata and owner."""
    digest = manifest_digest(stack, ref)
    rev_name = revision_name_for(stack, kind, name, ref)
    rev = get_revision(stack, kind, name)
    pkg = stack.get_package(kind, name)
    assert pkg is not None
    assert rev["metadata"]["name"] == rev_name
    assert rev["kind"] == f"{kind}Revision"
    assert rev["metadata"]["labels"]["pkg.crossplane.io/package"] == name
    assert rev["metadata"]["ownerReferences"] == [{
        "apiVersion": PKG, "kind": kind, "name": name, "uid": pkg["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}]
    assert rev["spec"]["desiredState"] == "Active"
    assert rev["spec"]["image"] == ref
    assert rev["spec"]["revision"] == 1
    assert rev["spec"].get("packagePullPolicy") == "IfNotPresent"
    assert rev["spec"].get("ignoreCrossplaneConstraints") is False
    assert rev["status"].get("resolvedImage") == ref
    assert pkg["status"]["currentRevision"] == rev_name
    assert pkg["status"]["currentIdentifier"] == ref
    assert pkg["status"]["resolvedPackage"] == ref
    return rev


def check_lock(stack: Stack, rev: Obj, kind: str, ref: str,
               dependencies: list[Obj] | None = None) -> None:
    """The Lock entry of the revision, as docs/crossplane.md §5 lays it out."""
    entry = lock_entry(stack, rev["metadata"]["name"])
    source, _, version = ref.rpartition(":")
    assert entry["kind"] == kind
    assert entry["apiVersion"] == PKG
    assert entry.get("type", kind) == kind  # deprecated; tolerated only when it agrees
    assert entry["source"] == source
    assert entry["version"] == version == "v1.0.0"
    assert entry["dependencies"] == (dependencies or [])


def check_object_owners(obj: Obj, rev: Obj, pkg: Obj) -> None:
    """An established object: controlled by the active revision, owned by the package."""
    refs = obj["metadata"].get("ownerReferences") or []
    assert controller_of(obj) == [revision_owner(rev)], refs
    package_refs = [r for r in refs if r.get("uid") == pkg["metadata"]["uid"]]
    assert len(package_refs) == 1 and not package_refs[0].get("controller"), refs
    assert package_refs[0]["kind"] == pkg["kind"] and package_refs[0]["name"] == (
        pkg["metadata"]["name"])


def check_runtime(stack: Stack, kind: str, name: str, rev: Obj, image: str) -> tuple[Obj, Obj]:
    """ServiceAccount, Deployment and Service of a Provider or Function revision."""
    rev_name, owner = rev["metadata"]["name"], revision_owner(rev)
    core, apps = client.CoreV1Api(stack.api), client.AppsV1Api(stack.api)
    label = f"pkg.crossplane.io/{kind.lower()}"
    selector = {"pkg.crossplane.io/revision": rev_name, label: name}

    sa = plain(stack, core.read_namespaced_service_account(rev_name, NS))
    assert sa["metadata"]["ownerReferences"] == [owner]

    dep = plain(stack, apps.read_namespaced_deployment(rev_name, NS))
    assert dep["metadata"]["ownerReferences"] == [owner]
    spec = dep["spec"]
    assert spec["replicas"] == 1
    assert spec["selector"] == {"matchLabels": selector}
    labels = spec["template"]["metadata"]["labels"]
    assert {k: labels.get(k) for k in selector} == selector
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == rev_name
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 2000,
                                      "runAsGroup": 2000}
    container = pod["containers"][0]
    assert container["name"] == "package-runtime"
    assert container["image"] == image
    assert container["imagePullPolicy"] == "IfNotPresent"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, ("webhook" if kind == "Provider" else "grpc"): 9443}
    env = {e["name"]: e for e in container["env"]}
    assert env["REVISION_UID"]["value"] == rev["metadata"]["uid"]
    assert env["REVISION_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['pkg.crossplane.io/revision']")
    name_env = "PROVIDER_NAME" if kind == "Provider" else "FUNCTION_NAME"
    assert env[name_env]["valueFrom"]["fieldRef"]["fieldPath"] == f"metadata.labels['{label}']"
    assert env["TLS_SERVER_CERTS_DIR"]["value"] == "/tls/server"
    volumes = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"]}
    assert volumes["tls-server-certs"] == f"{name}-tls-server"
    available = {c["type"]: c["status"] for c in dep["status"]["conditions"]}
    assert available["Available"] == "True"

    svc = plain(stack, core.read_namespaced_service(name, NS))
    assert svc["metadata"]["ownerReferences"] == [owner]
    assert svc["spec"]["selector"] == selector
    return dep, svc


# --- 1. the three package kinds --------------------------------------------------------

def test_provider_installs_crds_rbac_and_runtime(stack: Stack, tmp_path: Path) -> None:
    allow_secrets(stack)
    root, group = provider_root(tmp_path)
    ref = stack.push(root)
    name = unique("provider")
    stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name)

    rev = check_package_and_revision(stack, "Provider", name, ref)
    pkg = stack.get_package("Provider", name)
    assert pkg is not None
    rev_name = rev["metadata"]["name"]
    assert rev["spec"]["runtimeConfigRef"]["name"] == "default"
    assert rev["spec"]["tlsServerSecretName"] == f"{name}-tls-server"
    assert rev["spec"]["tlsClientSecretName"] == f"{name}-tls-client"
    assert rev["status"]["tlsServerSecretName"] == f"{name}-tls-server"
    assert rev["status"]["tlsClientSecretName"] == f"{name}-tls-client"
    # Meta annotations are copied onto the revision (docs/crossplane.md §3.3).
    assert rev["metadata"]["annotations"]["meta.crossplane.io/source"] == (
        "github.com/example/provider-widgets")
    conds = conditions_of(rev)
    assert conds["RevisionHealthy"][:2] == ("True", "HealthyPackageRevision")
    assert conds["RuntimeHealthy"][:2] == ("True", "HealthyPackageRevision")
    assert conds["RuntimeActive"][:2] == ("True", "ActiveRuntime")
    crd_names = [f"widgets.{group}", f"providerconfigs.{group}"]
    # Crossplane v2: the managed resource's CRD also became an (Active) MRD; the
    # ProviderConfig stays a plain CRD.
    assert rev["status"]["objectRefs"] == [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "name": n} for n in sorted(crd_names, reverse=True)] + [
        {"apiVersion": "apiextensions.crossplane.io/v1alpha1",
         "kind": "ManagedResourceDefinition", "name": f"widgets.{group}"}]
    mrd = stack.custom.get_cluster_custom_object(
        "apiextensions.crossplane.io", "v1alpha1", "managedresourcedefinitions",
        f"widgets.{group}")
    check_object_owners(mrd, rev, pkg)
    assert mrd["spec"]["state"] == "Active"

    check_lock(stack, rev, "Provider", ref)

    ext = client.ApiextensionsV1Api(stack.api)
    for crd_name in crd_names:
        crd = plain(stack, ext.read_custom_resource_definition(crd_name))
        check_object_owners(crd, rev, pkg)
        assert crd["spec"]["group"] == group

    rbac_api = client.RbacAuthorizationV1Api(stack.api)
    resources = [{"apiGroups": [group], "resources": [
        "providerconfigs", "providerconfigs/status", "widgets", "widgets/status"]}]
    expected = {
        "aggregate-to-edit": (
            {"rbac.crossplane.io/aggregate-to-crossplane": "true",
             "rbac.crossplane.io/aggregate-to-admin": "true",
             "rbac.crossplane.io/aggregate-to-edit": "true"},
            [{**r, "verbs": ["*"]} for r in resources]),
        "aggregate-to-view": (
            {"rbac.crossplane.io/aggregate-to-view": "true"},
            [{**r, "verbs": ["get", "list", "watch"]} for r in resources]),
        "system": (
            {"rbac.crossplane.io/system": rev_name},
            [*({**r, "verbs": ["get", "list", "watch", "update", "patch", "create"]}
               for r in resources),
             {"apiGroups": [group], "resources": ["*/finalizers"], "verbs": ["update"]},
             {"apiGroups": ["", "coordination.k8s.io"],
              "resources": ["secrets", "configmaps", "events", "leases"], "verbs": ["*"]},
             # The accepted permission request joins the system role (docs/crossplane.md §15).
             {"apiGroups": [""], "resources": ["secrets"],
              "verbs": ["get", "list", "watch"]}]),
    }
    for suffix, (labels, rules) in expected.items():
        role = plain(stack, rbac_api.read_cluster_role(f"crossplane:provider:{rev_name}:{suffix}"))
        assert role["metadata"]["labels"] == labels, suffix
        assert role["rules"] == rules, suffix
        assert role["metadata"]["ownerReferences"] == [revision_owner(rev)], suffix
    binding = plain(stack, rbac_api.read_cluster_role_binding(
        f"crossplane:provider:{rev_name}:system"))
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "ClusterRole",
                                  "name": f"crossplane:provider:{rev_name}:system"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": rev_name,
                                    "namespace": NS}]
    assert binding["metadata"]["ownerReferences"] == [revision_owner(rev)]

    dep, svc = check_runtime(stack, "Provider", name, rev, CONTROLLER_IMAGE)
    pod = dep["spec"]["template"]["spec"]
    volumes = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"]}
    assert volumes["tls-client-certs"] == f"{name}-tls-client"
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "8080"
    assert svc["spec"]["ports"] == [{"name": "webhook", "protocol": "TCP", "port": 9443,
                                     "targetPort": "webhook"}]


def test_configuration_installs_xrds_and_compositions(stack: Stack, tmp_path: Path) -> None:
    ensure_crossplane_crds(stack)
    group = f"{unique('p')}.example.org"
    root = configuration_root(stack, tmp_path, group, dependencies=True)
    meta = yaml.safe_load((root / "crossplane.yaml").read_text())
    provider, function = (d["package"] for d in meta["spec"]["dependsOn"])
    ref = stack.push(root)
    name = unique("configuration")
    stack.apply_package("Configuration", name, ref)
    stack.wait_healthy("Configuration", name, timeout=120)

    rev = check_package_and_revision(stack, "Configuration", name, ref)
    pkg = stack.get_package("Configuration", name)
    assert pkg is not None
    for field in ("runtimeConfigRef", "tlsServerSecretName", "tlsClientSecretName"):
        assert field not in rev["spec"], field
    conds = conditions_of(rev)
    assert conds["RevisionHealthy"][:2] == ("True", "HealthyPackageRevision")
    assert "RuntimeHealthy" not in conds
    assert rev["status"]["foundDependencies"] == 2
    xrd_name = f"xnetworks.{group}"
    assert rev["status"]["objectRefs"] == [
        {"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
         "name": xrd_name},
        {"apiVersion": "apiextensions.crossplane.io/v1",
         "kind": "CompositeResourceDefinition", "name": xrd_name}]

    # Dependencies are recorded in dependsOn order, and installed (tests/e2e/test_dependencies).
    check_lock(stack, rev, "Configuration", ref, dependencies=[
        {"apiVersion": PKG, "kind": "Provider", "package": provider, "constraints": ">=v0.1.0"},
        {"apiVersion": PKG, "kind": "Function", "package": function, "constraints": "^v0.1"}])
    assert rev["status"]["installedDependencies"] == 2

    for plural in ("compositeresourcedefinitions", "compositions"):
        obj = get_custom(stack, "apiextensions.crossplane.io", "v1", plural, xrd_name)
        check_object_owners(obj, rev, pkg)
    xrd = get_custom(stack, "apiextensions.crossplane.io", "v1",
                     "compositeresourcedefinitions", xrd_name)
    assert xrd["spec"]["group"] == group and xrd["spec"]["claimNames"]["kind"] == "Network"

    # A Configuration has no runtime and no RBAC.
    apps = client.AppsV1Api(stack.api)
    with pytest.raises(ApiException) as missing:
        apps.read_namespaced_deployment(rev["metadata"]["name"], NS)
    assert missing.value.status == 404


def test_function_installs_runtime_but_no_objects(stack: Stack, tmp_path: Path) -> None:
    group = f"{unique('f')}.fn.example.org"
    root = copy_package(PACKAGES / "function", tmp_path / "function",
                        {"shout.fn.example.org": group})
    ref = stack.push(root)
    name = unique("function")
    stack.apply_package("Function", name, ref)
    stack.wait_healthy("Function", name)

    rev = check_package_and_revision(stack, "Function", name, ref)
    rev_name = rev["metadata"]["name"]
    assert rev["spec"]["runtimeConfigRef"]["name"] == "default"
    assert rev["spec"]["tlsServerSecretName"] == f"{name}-tls-server"
    assert "tlsClientSecretName" not in rev["spec"]  # no client cert (docs/crossplane.md §3.1)
    assert rev["status"]["endpoint"] == f"dns:///{name}.{NS}:9443"
    assert rev["status"]["capabilities"] == ["composition"]
    conds = conditions_of(rev)
    assert conds["RevisionHealthy"][:2] == ("True", "HealthyPackageRevision")
    assert conds["RuntimeHealthy"][:2] == ("True", "HealthyPackageRevision")
    assert conds["RuntimeActive"][:2] == ("True", "ActiveRuntime")
    # Function CRDs only describe inputs and are never created (docs/crossplane.md §7.3).
    assert not (rev["status"].get("objectRefs") or [])
    with pytest.raises(ApiException) as missing:
        client.ApiextensionsV1Api(stack.api).read_custom_resource_definition(f"inputs.{group}")
    assert missing.value.status == 404

    check_lock(stack, rev, "Function", ref)

    # The runtime image is the package itself: a Function has no controller image.
    _, svc = check_runtime(stack, "Function", name, rev, ref)
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["ports"] == [{"name": "grpc", "protocol": "TCP", "port": 9443,
                                     "targetPort": "grpc", "appProtocol": "tls"}]
    roles = plain(stack, client.RbacAuthorizationV1Api(stack.api).list_cluster_role())
    assert not [r["metadata"]["name"] for r in roles["items"]
                if rev_name in r["metadata"]["name"]]


# --- 2. a runtime that stays unavailable -----------------------------------------------

async def still_installing(stack: Stack, revision: str) -> bool:
    """True while the revision's InstallRevision workflow runs (its health wait)."""
    from temporalio.client import Client, WorkflowExecutionStatus

    temporal = await Client.connect(stack.temporal_address)
    handle = temporal.get_workflow_handle(c.revision_workflow_id(c.PROVIDER, revision,
                                                                 stack.task_queue))
    desc = await handle.describe()
    return desc.status == WorkflowExecutionStatus.RUNNING


def test_unavailable_runtime_ends_unhealthy_with_its_message(stack: Stack,
                                                            tmp_path: Path) -> None:
    allow_secrets(stack)
    drc = unique("drc")
    stack.custom.create_cluster_custom_object(
        "pkg.crossplane.io", "v1beta1", "deploymentruntimeconfigs",
        {"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "DeploymentRuntimeConfig",
         "metadata": {"name": drc},
         "spec": {"deploymentTemplate": {"spec": {
             "selector": {},
             "template": {"metadata": {"annotations": {SIMULATE: "unavailable"}},
                          "spec": {"containers": []}}}}}})
    root, _ = provider_root(tmp_path)
    ref = stack.push(root)
    name = unique("provider")
    stack.apply_package("Provider", name, ref, runtimeConfigRef={"name": drc})

    runtime_message = f"provider package deployment is unavailable with message: {UNAVAILABLE}"

    def settled() -> dict[str, tuple[str, str, str]] | None:
        conds = conditions_of(stack.get_package("Provider", name) or {})
        return conds if conds.get("Healthy", ("", "", ""))[2].endswith(UNAVAILABLE) else None

    # The health wait polls the Deployment Tuning.health_polls times (12 s or more); the
    # package shows the runtime's words as soon as the revision does, while it still waits.
    try:
        conds = wait_for(settled, timeout=150, interval=0.2,
                         what="Healthy=False with the runtime's message")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; package: {stack.get_package('Provider', name)}; "
                             f"worker log tail: {stack.log('worker')[-2000:]}") from exc
    assert conds is not None
    rev_name = get_revision(stack, "Provider", name)["metadata"]["name"]
    assert asyncio.run(still_installing(stack, rev_name)), "the health wait had already ended"
    assert conds["Installed"][:2] == ("True", "ActivePackageRevision")
    status, reason, message = conds["Healthy"]
    assert (status, reason) == ("False", "UnhealthyPackageRevision")
    assert message.startswith('Package runtime health is "False" with message: ')
    assert runtime_message in message

    rev = get_revision(stack, "Provider", name)
    assert rev["spec"]["runtimeConfigRef"]["name"] == drc
    rev_conds = conditions_of(rev)
    assert rev_conds["RevisionHealthy"][:2] == ("True", "HealthyPackageRevision")
    rt_status, rt_reason, rt_message = rev_conds["RuntimeHealthy"]
    assert (rt_status, rt_reason) == ("False", "UnhealthyPackageRevision")
    assert rt_message == f"post establish runtime hook failed for package: {runtime_message}"
    assert message == f'Package runtime health is "False" with message: {rt_message}'

    dep = plain(stack, client.AppsV1Api(stack.api).read_namespaced_deployment(
        rev["metadata"]["name"], NS))
    assert dep["spec"]["template"]["metadata"]["annotations"][SIMULATE] == "unavailable"
    available = next(c for c in dep["status"]["conditions"] if c["type"] == "Available")
    assert (available["status"], available["message"]) == ("False", UNAVAILABLE)


# --- 3. webhooks and conversion webhooks with TLS --------------------------------------

def webhook_provider(root: Path, group: str) -> Path:
    """A provider shipping a ValidatingWebhookConfiguration and a conversion-webhook CRD."""
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group, "scope": "Cluster",
            "names": {"kind": "Gadget", "listKind": "GadgetList", "plural": "gadgets",
                      "singular": "gadget"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": False,
                          "schema": schema},
                         {"name": "v1beta1", "served": True, "storage": True,
                          "schema": schema}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "provider-gadgets",
                                             "namespace": "upbound-system",
                                             "path": "/convert"}}}}}}
    webhook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "provider-gadgets"},
        "webhooks": [{
            "name": f"gadgets.{group}",
            "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Fail",
            "clientConfig": {"service": {"name": "provider-gadgets",
                                         "namespace": "upbound-system",
                                         "path": "/validate-gadgets", "port": 443}},
            "rules": [{"apiGroups": [group], "apiVersions": ["v1beta1"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["gadgets"]}]}]}
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": "provider-gadgets"},
            "spec": {"controller": {"image": CONTROLLER_IMAGE}}}
    return write_package(root, {"crossplane.yaml": meta, "crd.yaml": crd,
                                "webhook.yaml": webhook})


def pem_certs(data: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(data)


def check_tls_handshake(server_secret: Obj, ca_bundle: bytes, hostname: str,
                        tmp: Path) -> None:
    """A TLS client trusting only ``ca_bundle`` accepts the server cert for ``hostname``."""
    cert, key = tmp / "tls.crt", tmp / "tls.key"
    cert.write_bytes(base64.b64decode(server_secret["data"]["tls.crt"]))
    key.write_bytes(base64.b64decode(server_secret["data"]["tls.key"]))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cadata=ca_bundle.decode())
    listener = socket.create_server(("127.0.0.1", 0))
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            conn, _ = listener.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as tls_conn:
                tls_conn.recv(1)
        except (OSError, ssl.SSLError) as exc:
            errors.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with socket.create_connection(listener.getsockname(), timeout=10) as raw, \
                client_ctx.wrap_socket(raw, server_hostname=hostname) as tls_conn:
            tls_conn.sendall(b"x")
    finally:
        thread.join(timeout=10)
        listener.close()
    assert not errors, errors


def check_client_config(config: Obj, name: str, path: str) -> bytes:
    """Service and caBundle as injected; returns the decoded caBundle."""
    assert config["service"] == {"name": name, "namespace": NS, "port": 9443, "path": path}
    return base64.b64decode(config["caBundle"])


def test_webhooks_point_at_the_package_service_with_a_verifying_ca(
        stack: Stack, tmp_path: Path) -> None:
    group = f"{unique('g')}.example.org"
    ref = stack.push(webhook_provider(tmp_path / "webhooks", group))
    name = unique("provider")
    stack.apply_package("Provider", name, ref)
    stack.wait_healthy("Provider", name)
    rev = get_revision(stack, "Provider", name)
    pkg = stack.get_package("Provider", name)
    assert pkg is not None

    hooks = client.AdmissionregistrationV1Api(stack.api)
    vwc = plain(stack, hooks.read_validating_webhook_configuration(
        f"crossplane-provider-{name}"))
    check_object_owners(vwc, rev, pkg)
    assert len(vwc["webhooks"]) == 1 and vwc["webhooks"][0]["name"] == f"gadgets.{group}"
    assert vwc["webhooks"][0]["rules"][0]["apiGroups"] == [group]  # the rest kept as shipped
    assert vwc["webhooks"][0]["failurePolicy"] == "Fail"
    webhook_ca = check_client_config(vwc["webhooks"][0]["clientConfig"], name,
                                     "/validate-gadgets")
    with pytest.raises(ApiException) as original:
        hooks.read_validating_webhook_configuration("provider-gadgets")
    assert original.value.status == 404  # only the renamed copy is installed

    crd = plain(stack, client.ApiextensionsV1Api(stack.api).read_custom_resource_definition(
        f"gadgets.{group}"))
    check_object_owners(crd, rev, pkg)
    conversion = crd["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook"
    assert conversion["webhook"]["conversionReviewVersions"] == ["v1"]
    conversion_ca = check_client_config(conversion["webhook"]["clientConfig"], name,
                                        "/convert")
    assert conversion_ca == webhook_ca
    assert sorted(r["kind"] for r in rev["status"]["objectRefs"]) == [
        "CustomResourceDefinition", "ManagedResourceDefinition",
        "ValidatingWebhookConfiguration"]

    core = client.CoreV1Api(stack.api)
    svc = plain(stack, core.read_namespaced_service(name, NS))
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [("webhook", 9443)]
    secret = plain(stack, core.read_namespaced_secret(f"{name}-tls-server", NS))
    assert secret["type"] == "kubernetes.io/tls"
    # The TLS Secrets carry the revision's owners: the Provider (docs/crossplane.md §13.1 step 7).
    assert secret["metadata"]["ownerReferences"] == rev["metadata"]["ownerReferences"]
    server_cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))

    issuers = [c for c in pem_certs(webhook_ca) if c.subject == server_cert.issuer]
    assert issuers, "no certificate in caBundle issued the server certificate"
    ca = issuers[0]
    server_cert.verify_directly_issued_by(ca)  # raises InvalidSignature if not
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    root = plain(stack, core.read_namespaced_secret("crossplane-root-ca", NS))
    root_cert = x509.load_pem_x509_certificate(base64.b64decode(root["data"]["tls.crt"]))
    assert ca == root_cert
    now = datetime.now(UTC)
    assert server_cert.not_valid_before_utc <= now < server_cert.not_valid_after_utc
    sans = server_cert.extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert {name, f"{name}.{NS}", f"{name}.{NS}.svc"} <= set(sans)
    usages = server_cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usages
    check_tls_handshake(secret, webhook_ca, f"{name}.{NS}.svc", tmp_path)

