"""The External package runtime end to end (issue 22): another controller runs providers.

The module's stack runs its worker with ``LOCKWRIGHT_PACKAGE_RUNTIME=External``. The test
plays the external runtime controller: it writes the revision's ``RuntimeHealthy`` as such
a controller would (read, change, write over the version read). lockwright installs the
revision and its objects, deploys nothing (no Deployment, ServiceAccount, Service or TLS
Secret), reads no DeploymentRuntimeConfig for a ``runtimeConfigRef`` of another kind, never
writes the runtime's conditions, and follows them: True makes the package Healthy, False
past the switch deadline reverts an upgrade. Webhooks wait (retrying) for the TLS Secret
the controller reports, then get its CA.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lockwright import contracts as c
from lockwright.runtime import tls
from tests.e2e.test_failures import crd_exists, provider_dir, unique_group
from tests.e2e.test_install import webhook_provider
from tests.e2e.test_upgrade import GOOD_IMAGE, active_and_inactive, controller_uid
from tests.fixtures.stack import PKG_GROUP, REVISION_PLURALS, Stack, running_stack
from tests.helpers import unique, wait_for

NS = "crossplane-system"
Obj = dict[str, Any]
#: What the external controller's runtime config is: a kind lockwright knows nothing of.
RUNTIME_REF = {"apiVersion": "runtime.example.org/v1alpha1", "kind": "PodRuntimeConfig"}


@pytest.fixture(scope="module")
def external(registry: Any, auth_registry: Any, temporal_env: Any,
             cluster_kind: str) -> Iterator[Stack]:
    """A stack whose worker leaves runtimes to an external controller."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind,
                       worker_env={"LOCKWRIGHT_PACKAGE_RUNTIME": "External"}) as s:
        yield s


def push_provider(stack: Stack, tmp: Path, group: str, repo: str, tag: str) -> str:
    root = provider_dir(tmp / unique(tag), group,
                        spec={"controller": {"image": GOOD_IMAGE.format(tag=tag)}})
    return stack.push(root, repo=repo, tag=tag)


def kubectl_apply_provider(stack: Stack, name: str, ref: str, **annotations: str) -> None:
    manifest = {"apiVersion": f"{PKG_GROUP}/v1", "kind": "Provider",
                "metadata": {"name": name, "annotations": annotations},
                "spec": {"package": ref, "runtimeConfigRef": {**RUNTIME_REF, "name": name}}}
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest))


def revision_named(stack: Stack, package: str, revision: str) -> Obj:
    return next(r for r in stack.revisions("Provider", package)
                if r["metadata"]["name"] == revision)


def runtime_says(stack: Stack, revision: str, status: str, reason: str, message: str) -> None:
    """Write the revision's RuntimeHealthy and RuntimeActive as an external controller:
    over the version it read, again on a conflict."""
    api = client.CustomObjectsApi(stack.api)
    plural = REVISION_PLURALS["Provider"]
    mine = {"RuntimeHealthy": (status, reason, message),
            "RuntimeActive": ("True", "ActiveRuntime", "")}

    def written() -> bool:
        rev = api.get_cluster_custom_object(PKG_GROUP, "v1", plural, revision)
        conds = [x for x in (rev.get("status") or {}).get("conditions") or []
                 if x["type"] not in mine]
        conds += [{"type": t, "status": s, "reason": r, "message": m,
                   "lastTransitionTime": "2026-01-01T00:00:00Z"}
                  for t, (s, r, m) in mine.items()]
        rev.setdefault("status", {})["conditions"] = conds
        try:
            api.replace_cluster_custom_object_status(PKG_GROUP, "v1", plural, revision, rev)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    wait_for(written, timeout=30, interval=0.1, what=f"RuntimeHealthy={status} on {revision}")


def runtime_reports_tls(stack: Stack, revision: str, secret: str) -> bytes:
    """Issue a server certificate into Secret ``secret`` and report it in the revision's
    status, as an external controller does; returns the certificate (PEM)."""
    now = datetime.now(UTC)
    data = tls.ensure_server_cert(None, tls.ensure_ca(None, now), secret, NS, now)
    client.CoreV1Api(stack.api).create_namespaced_secret(NS, {
        "metadata": {"name": secret}, "type": tls.SECRET_TYPE, "data": data})
    client.CustomObjectsApi(stack.api).patch_cluster_custom_object_status(
        PKG_GROUP, "v1", REVISION_PLURALS["Provider"], revision,
        {"status": {"tlsServerSecretName": secret}})
    return tls.ca_bundle(data)


def runtime_condition(stack: Stack, package: str, revision: str) -> Obj:
    conds = (revision_named(stack, package, revision).get("status") or {}).get("conditions")
    return next((x for x in conds or [] if x["type"] == "RuntimeHealthy"), {})


def runtime_objects(stack: Stack, package: str) -> list[str]:
    """Deployments, ServiceAccounts, Services and Secrets named for ``package`` (or owned
    by one of its revisions) in the system namespace."""
    core, apps = client.CoreV1Api(stack.api), client.AppsV1Api(stack.api)
    uids = {r["metadata"]["uid"] for r in stack.revisions("Provider", package)}
    found = []
    for kind, listed in (("Deployment", apps.list_namespaced_deployment(NS)),
                         ("ServiceAccount", core.list_namespaced_service_account(NS)),
                         ("Service", core.list_namespaced_service(NS)),
                         ("Secret", core.list_namespaced_secret(NS))):
        for obj in listed.items:
            owners = {o.uid for o in obj.metadata.owner_references or []}
            if package in obj.metadata.name or owners & uids:
                found.append(f"{kind}/{obj.metadata.name}")
    return found


def installed_waiting(stack: Stack, name: str, group: str) -> Obj:
    """The package installed (its CRD established), unhealthy until the runtime says so."""
    def waiting() -> Obj | None:
        conds = stack.conditions("Provider", name)
        revs = stack.revisions("Provider", name)
        ok = (conds.get("Installed", {}).get("status") == "True"
              and "external runtime controller" in conds.get("Healthy", {}).get("message", "")
              and crd_exists(stack, f"gadgets.{group}") and len(revs) == 1)
        return revs[0] if ok else None

    return wait_for(waiting, timeout=90, interval=0.2, what=f"{name} installed, waiting")


# --- the tests -------------------------------------------------------------------------
def test_external_runtime_installs_no_runtime_and_follows_runtime_healthy(
        external: Stack, tmp_path: Path) -> None:
    group, name = unique_group(), unique("ext")
    kubectl_apply_provider(external, name, push_provider(external, tmp_path, group,
                                                         unique("prov"), "v1.0.0"))
    rev = installed_waiting(external, name, group)
    revision = rev["metadata"]["name"]
    assert runtime_objects(external, name) == []
    # The runtime's fields are its controller's: not copied, not written.
    assert "tlsServerSecretName" not in rev["spec"]
    assert (rev["spec"].get("runtimeConfigRef") or {}).get("kind") != RUNTIME_REF["kind"]
    assert runtime_condition(external, name, revision) == {}
    assert controller_uid(external, f"gadgets.{group}") == rev["metadata"]["uid"]

    runtime_says(external, revision, "True", "PodsReady", "2/2 pods ready")
    external.wait_healthy("Provider", name)
    said = runtime_condition(external, name, revision)
    assert (said["reason"], said["message"]) == ("PodsReady", "2/2 pods ready")
    assert runtime_objects(external, name) == []


def test_external_runtime_false_past_the_switch_deadline_reverts_an_upgrade(
        external: Stack, tmp_path: Path) -> None:
    group, repo, name = unique_group(), unique("prov"), unique("ext")
    kubectl_apply_provider(external, name, push_provider(external, tmp_path, group, repo,
                                                         "v1.0.0"),
                           **{c.SWITCH_DEADLINE_ANNOTATION: "4"})
    v1 = installed_waiting(external, name, group)["metadata"]["name"]
    runtime_says(external, v1, "True", "PodsReady", "2/2 pods ready")
    external.wait_healthy("Provider", name)

    v2_ref = push_provider(external, tmp_path, group, repo, "v2.0.0")
    external.kubectl("patch", "provider.pkg.crossplane.io", name, "--type=merge",
                     "-p", json.dumps({"spec": {"package": v2_ref}}))
    v2 = wait_for(lambda: next((r["metadata"]["name"] for r in external.revisions(
        "Provider", name) if r["metadata"]["name"] != v1), None), timeout=60, interval=0.1,
        what="the v2 revision")
    runtime_says(external, v2, "False", "CrashLoopBackOff", "pod crash-looping")

    def reverted() -> Obj | None:
        healthy = external.conditions("Provider", name).get("Healthy", {})
        return healthy if healthy.get("message", "").endswith(f"reverted to {v1}") else None

    healthy = wait_for(reverted, timeout=120, interval=0.2, what=f"reverted to {v1}")
    assert healthy["status"] == "False" and "pod crash-looping" in healthy["message"]
    found = active_and_inactive(external, name)
    assert found is not None
    assert (found[0]["metadata"]["name"], found[1]["metadata"]["name"]) == (v1, v2)
    assert controller_uid(external, f"gadgets.{group}") == found[0]["metadata"]["uid"]
    # Neither revision's runtime condition was rewritten by lockwright.
    assert runtime_condition(external, name, v1)["reason"] == "PodsReady"
    assert runtime_condition(external, name, v2)["message"] == "pod crash-looping"
    assert runtime_objects(external, name) == []


def test_external_runtime_webhooks_wait_for_the_tls_secret_its_controller_reports(
        external: Stack, tmp_path: Path) -> None:
    group, name = unique_group(), unique("ext")
    root = webhook_provider(tmp_path / "webhooks", group)
    kubectl_apply_provider(external, name, external.push(root, repo=unique("hooks")))

    def waiting() -> Obj | None:
        healthy = external.conditions("Provider", name).get("Healthy", {})
        message = healthy.get("message", "")  # the CRD's conversion webhook comes first
        return healthy if "without having a TLS bundle" in message and "retrying" in message \
            else None

    try:
        wait_for(waiting, timeout=90, interval=0.2, what=f"{name} waiting for the TLS Secret")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; conditions: {external.conditions('Provider', name)}; "
                             f"revisions: {external.revisions('Provider', name)}") from exc
    hooks = client.AdmissionregistrationV1Api(external.api)
    webhook_name = f"crossplane-provider-{name}"
    assert webhook_name not in [w.metadata.name for w in
                                hooks.list_validating_webhook_configuration().items]
    [rev] = external.revisions("Provider", name)
    ca = runtime_reports_tls(external, rev["metadata"]["name"], unique("ext-tls"))

    def injected() -> Any:
        try:
            return hooks.read_validating_webhook_configuration(webhook_name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    webhook = wait_for(injected, timeout=120, interval=0.2, what="the webhook injected")
    config = webhook.webhooks[0].client_config
    assert base64.b64decode(config.ca_bundle) == ca
    assert (config.service.name, config.service.namespace) == (name, NS)
    conversion = (crd_exists(external, f"gadgets.{group}") or {})["spec"]["conversion"]
    assert base64.b64decode(conversion["webhook"]["client_config"]["ca_bundle"]) == ca
    runtime_says(external, rev["metadata"]["name"], "True", "PodsReady", "1/1 pods ready")
    external.wait_healthy("Provider", name)
    assert runtime_objects(external, name) == []
