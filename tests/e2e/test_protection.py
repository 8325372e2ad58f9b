"""Provider deletion protection, as Crossplane's ``TestProviderDeletionProtection`` checks it
(issue 31; test/e2e/protection_provider_test.go, docs/design.md, "Provider deletion
protection"), on both clusters.

Install a Provider, create one of its resources: a ClusterUsage labelled
``crossplane.io/provider-protection=true`` naming the Provider appears, and ``kubectl delete
provider`` is refused with the usage and the fix. Delete the resource: the usage is gone
within 60 s, and the Provider's foreground deletion completes, its CRD included. With the
setting off, a Provider with resources is deleted as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.test_install import allow_secrets, provider_root
from tests.fixtures.stack import Stack, running_stack
from tests.helpers import unique, wait_for

KUBE = pytest.mark.kube_shows(
    "the authorizer: a Provider type watched only while its revision's RBAC allows it")

Obj = dict[str, Any]
USAGES = ("protection.crossplane.io", "v1beta1", "clusterusages")
LABEL = "crossplane.io/provider-protection=true"


def install_with_widget(stack: Stack, tmp: Path) -> tuple[str, str, str]:
    """A Healthy Provider with one Widget; returns (provider, API group, widget)."""
    allow_secrets(stack)
    root, group = provider_root(tmp)
    name, widget = unique("provider"), unique("widget")
    stack.apply_package("Provider", name, stack.push(root, repo=unique("protected")))
    stack.wait_healthy("Provider", name, timeout=90)
    stack.custom.create_cluster_custom_object(group, "v1alpha1", "widgets", {
        "apiVersion": f"{group}/v1alpha1", "kind": "Widget", "metadata": {"name": widget}})
    return name, group, widget


def usages_of(stack: Stack, provider: str) -> list[Obj]:
    """The ClusterUsages labelled for provider protection whose ``spec.of`` is ``provider``."""
    found = stack.custom.list_cluster_custom_object(*USAGES, label_selector=LABEL)["items"]
    return [u for u in found if u["spec"]["of"]["kind"] == "Provider"
            and u["spec"]["of"].get("resourceRef", {}).get("name") == provider]


def crd_exists(stack: Stack, name: str) -> bool:
    try:
        client.ApiextensionsV1Api(stack.api).read_custom_resource_definition(name)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def delete_and_wait_gone(stack: Stack, provider: str, crd: str) -> None:
    """``kubectl delete provider --cascade=foreground``; the Provider and its CRD go."""
    stack.kubectl("delete", "providers.pkg.crossplane.io", provider, "--cascade=foreground",
                  "--wait=false")
    wait_for(lambda: stack.get_package("Provider", provider) is None
             and not crd_exists(stack, crd), timeout=120, interval=0.5,
             what=f"Provider {provider} and CRD {crd} deleted")


@KUBE
def test_a_provider_in_use_is_not_deleted_until_its_resources_are_gone(
        stack: Stack, tmp_path: Path) -> None:
    name, group, widget = install_with_widget(stack, tmp_path)
    crd = f"widgets.{group}"
    [usage] = wait_for(lambda: usages_of(stack, name), timeout=60, interval=0.2,
                       what=f"a ClusterUsage of Provider {name}")
    # Named, labelled and worded as Crossplane's protection controller makes it.
    assert usage["metadata"]["name"] == (
        "provider-protection-" + hashlib.sha256(crd.encode()).digest()[:26].hex())
    assert usage["metadata"]["labels"] == {
        "crossplane.io/provider-protection": "true", "pkg.crossplane.io/package": name,
        "apiextensions.crossplane.io/mrd": crd}
    assert usage["spec"]["of"] == {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
                                   "resourceRef": {"name": name}}
    assert usage["spec"]["reason"] == (
        f"Provider has active managed resources of type Widget.{group}")

    refused = stack.kubectl("delete", "providers.pkg.crossplane.io", name, check=False)
    assert refused.returncode != 0
    said = refused.stderr
    assert "nousages.protection.crossplane.io" in said and "denied request" in said, said
    assert (f'This resource is in-use by usage(s), including the *v1beta1.ClusterUsage '
            f'"{usage["metadata"]["name"]}" with reason: "{usage["spec"]["reason"]}".') in said
    assert "Delete the managed resources of that type first" in said, said
    assert "LOCKWRIGHT_PROVIDER_DELETION_PROTECTION=false" in said, said
    pkg = stack.get_package("Provider", name)
    assert pkg is not None and not pkg["metadata"].get("deletionTimestamp")

    stack.custom.delete_cluster_custom_object(group, "v1alpha1", "widgets", widget)
    wait_for(lambda: not usages_of(stack, name), timeout=60, interval=0.2,
             what=f"the ClusterUsage of Provider {name} gone")
    delete_and_wait_gone(stack, name, crd)


@pytest.fixture(scope="module")
def unprotected(registry: Any, auth_registry: Any, temporal_env: Any,
                cluster_kind: str) -> Iterator[Stack]:
    """A stack of its own whose worker runs with deletion protection off."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind,
                       worker_env={"LOCKWRIGHT_PROVIDER_DELETION_PROTECTION": "false"}) as s:
        yield s


def test_with_protection_off_a_provider_in_use_is_deleted_as_before(
        unprotected: Stack, tmp_path: Path) -> None:
    stack = unprotected
    name, group, widget = install_with_widget(stack, tmp_path)
    delete_and_wait_gone(stack, name, f"widgets.{group}")
    assert usages_of(stack, name) == []
