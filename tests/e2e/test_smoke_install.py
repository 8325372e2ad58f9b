"""The shortest path of the product: a Provider applied to the cluster becomes Healthy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.stack import Stack
from tests.helpers import unique

pytestmark = pytest.mark.kube_shows(
    "the package's objects stored by kube-apiserver, its runtime rolled out")

PROVIDER_ROOT = Path(__file__).resolve().parents[1] / "data" / "packages" / "provider"


def allow_secrets(stack: Stack) -> None:
    """Grant what the example provider requests, as Crossplane's Helm chart would."""
    from kubernetes import client

    client.RbacAuthorizationV1Api(stack.api).create_cluster_role({
        "metadata": {"name": unique("allow"), "labels": {
            "rbac.crossplane.io/aggregate-to-allowed-provider-permissions": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["secrets"],
                   "verbs": ["get", "list", "watch"]}]})


def test_provider_through_the_watcher_becomes_healthy(stack: Stack) -> None:
    allow_secrets(stack)
    ref = stack.push(PROVIDER_ROOT)
    name = unique("provider")
    stack.apply_package("Provider", name, ref)
    conds = stack.wait_healthy("Provider", name)
    assert conds["Installed"]["status"] == "True"
    revisions = stack.revisions("Provider", name)
    assert len(revisions) == 1 and revisions[0]["spec"]["desiredState"] == "Active"
