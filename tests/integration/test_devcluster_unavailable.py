"""``devcluster serve --unavailable-images PATTERN``: a broken release simulated by image.

Matrix: a container image matching the first pattern, an init-container image matching the
second, a non-matching image; an update from a matching to a non-matching image; and a
restart that adds a pattern, which revisits the Deployments already stored.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.fixtures.devcluster import DevCluster, start_devcluster
from tests.helpers import unique, wait_for

BROKEN = "registry.example.org/broken/*"
BAD_TAG = "*:bad-*"


@pytest.fixture(scope="module")
def cluster() -> Iterator[DevCluster]:
    """A devcluster of this module's own, started with two image patterns."""
    with tempfile.TemporaryDirectory(prefix="devcluster-unavailable-") as data_dir:
        dc = start_devcluster(data_dir, "--unavailable-images", BROKEN,
                              "--unavailable-images", BAD_TAG)
        yield dc
        dc.stop()


def _apps(dc: DevCluster) -> client.AppsV1Api:
    configuration = client.Configuration()
    config.load_kube_config(config_file=dc.kubeconfig, client_configuration=configuration)
    return client.AppsV1Api(client.ApiClient(configuration))


def _namespace(apps: client.AppsV1Api) -> str:
    name = unique("ns")
    client.CoreV1Api(apps.api_client).create_namespace({"metadata": {"name": name}})
    return name


@pytest.fixture(scope="module")
def apps(cluster: DevCluster) -> Iterator[client.AppsV1Api]:
    api = _apps(cluster)
    yield api
    api.api_client.close()


@pytest.fixture
def namespace(cluster: DevCluster, apps: client.AppsV1Api) -> str:
    return _namespace(apps)


def _deployment(name: str, image: str, init_image: str | None = None) -> dict[str, Any]:
    labels = {"app": name}
    pod: dict[str, Any] = {"containers": [{"name": "c", "image": image}]}
    if init_image:
        pod["initContainers"] = [{"name": "init", "image": init_image}]
    return {"metadata": {"name": name}, "spec": {
        "replicas": 2, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": pod}}}


def _observed(apps: client.AppsV1Api, name: str, namespace: str) -> Any:
    """The Deployment once its current generation's simulated status is written."""
    d = apps.read_namespaced_deployment(name, namespace)
    st = d.status
    return d if st and st.conditions and st.observed_generation == d.metadata.generation else None


def _conditions(d: Any) -> dict[str, Any]:
    return {c.type: c for c in d.status.conditions}


def _wait_unavailable(apps: client.AppsV1Api, name: str, namespace: str) -> None:
    def unavailable() -> Any:
        d = _observed(apps, name, namespace)
        return d if d and _conditions(d)["Available"].status == "False" else None

    d = wait_for(unavailable, what=f"{name} observed and unavailable")
    available, progressing = _conditions(d)["Available"], _conditions(d)["Progressing"]
    assert d.status.unavailable_replicas == 2 and not d.status.available_replicas
    assert not d.status.ready_replicas
    assert (available.status, available.reason, available.message) == (
        "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
    assert (progressing.status, progressing.reason) == ("True", "ReplicaSetUpdated")


def _wait_available(apps: client.AppsV1Api, name: str, namespace: str) -> None:
    def available() -> bool:
        d = _observed(apps, name, namespace)
        return bool(d) and _conditions(d)["Available"].status == "True"

    wait_for(available, what=f"{name} Available")
    d = apps.read_namespaced_deployment(name, namespace)
    assert d.status.available_replicas == 2 and not d.status.unavailable_replicas
    assert _conditions(d)["Progressing"].reason == "NewReplicaSetAvailable"


def test_matching_image_stays_unavailable(apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, _deployment(
        "broken", "registry.example.org/broken/provider:1.0"))
    _wait_unavailable(apps, "broken", namespace)


def test_other_image_becomes_available(apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, _deployment(
        "fine", "registry.example.org/fine/provider:1.0"))
    _wait_available(apps, "fine", namespace)


def test_second_pattern_matches_an_init_container(apps: client.AppsV1Api,
                                                  namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, _deployment(
        "init", "example.org/app:1", init_image="example.org/migrate:bad-2"))
    _wait_unavailable(apps, "init", namespace)


def test_fixed_image_becomes_available(apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, _deployment(
        "rollout", "registry.example.org/broken/provider:1.0"))
    _wait_unavailable(apps, "rollout", namespace)
    apps.patch_namespaced_deployment("rollout", namespace, {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "registry.example.org/fixed/provider:1.1"}]}}}})
    _wait_available(apps, "rollout", namespace)


def test_restart_with_a_pattern_revisits_stored_deployments() -> None:
    with tempfile.TemporaryDirectory(prefix="devcluster-restart-") as data_dir:
        dc, apps = _started(data_dir)
        try:
            ns = _namespace(apps)
            apps.create_namespaced_deployment(ns, _deployment("kept", "example.org/x:bad-1"))
            _wait_available(apps, "kept", ns)
        finally:
            _stop(dc, apps)
        dc, apps = _started(data_dir, "--unavailable-images", BAD_TAG)
        try:
            _wait_unavailable(apps, "kept", ns)
        finally:
            _stop(dc, apps)


def _started(data_dir: str, *extra: str) -> tuple[DevCluster, client.AppsV1Api]:
    dc = start_devcluster(data_dir, *extra)
    return dc, _apps(dc)


def _stop(dc: DevCluster, apps: client.AppsV1Api) -> None:
    apps.api_client.close()
    dc.stop()
