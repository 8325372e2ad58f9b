"""``devcluster serve --enable-garbage-collector false``, as kube-controller-manager's flag.

With the collector off nothing acts on owner references: an object whose owner is gone
stays, references and all, and a foreground deletion keeps its ``foregroundDeletion``
finalizer. The namespace controller still runs (it is not the garbage collector), and a
namespace's deletion finishing is the barrier that proves a sweep ran and left the rest.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fixtures.devcluster import DevCluster, start_devcluster
from tests.helpers import api_client, unique, wait_for

GONE_UID = "00000000-0000-0000-0000-00000000dead"


@pytest.fixture(scope="module")
def core() -> Iterator[client.CoreV1Api]:
    """CoreV1Api on a devcluster of this module's own, its garbage collector off."""
    with tempfile.TemporaryDirectory(prefix="devcluster-gc-off-") as data_dir:
        dc: DevCluster = start_devcluster(data_dir, "--enable-garbage-collector", "false")
        api = api_client(dc.kubeconfig)
        yield client.CoreV1Api(api)
        api.close()
        dc.stop()


def _namespace_deleted(core: client.CoreV1Api) -> None:
    """Create a namespace, delete it and wait until it is gone: the loop swept since."""
    name = unique("barrier")
    core.create_namespace({"metadata": {"name": name}})
    core.delete_namespace(name)

    def gone() -> bool:
        try:
            core.read_namespace(name)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, timeout=30, interval=0.05, what=f"namespace {name} deleted")


def test_an_object_whose_owner_is_gone_stays(core: client.CoreV1Api) -> None:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": GONE_UID,
           "controller": True}
    name = unique("orphan")
    core.create_namespaced_config_map("default", {"metadata": {
        "name": name, "ownerReferences": [ref]}})
    _namespace_deleted(core)
    _namespace_deleted(core)  # a sweep that began before the create is over too
    kept = core.read_namespaced_config_map(name, "default")
    assert [r.uid for r in kept.metadata.owner_references] == [GONE_UID]


def test_a_foreground_deletion_keeps_its_finalizer(core: client.CoreV1Api) -> None:
    name = unique("owner")
    core.create_namespaced_config_map("default", {"metadata": {"name": name}})
    core.delete_namespaced_config_map(name, "default", propagation_policy="Foreground")
    _namespace_deleted(core)
    _namespace_deleted(core)
    held = core.read_namespaced_config_map(name, "default")
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["foregroundDeletion"]
