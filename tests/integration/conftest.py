"""Fixtures shared by the devcluster integration tests."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.helpers import unique


@pytest.fixture
def core(kube_client: client.ApiClient) -> client.CoreV1Api:
    """CoreV1Api on the session's devcluster."""
    return client.CoreV1Api(kube_client)


@pytest.fixture
def namespace(core: client.CoreV1Api) -> str:
    """A fresh namespace, so parallel tests never see each other's objects."""
    name = unique("ns")
    core.create_namespace({"metadata": {"name": name}})
    return name
