"""The real control plane's components killed with SIGKILL and started again on their data,
as the fault tests do: etcd keeps what was written, kube-apiserver comes back on the same
address, and nothing about the restart needs a new kubeconfig.

Runs when ``LOCKWRIGHT_TEST_CLUSTER`` selects ``kube``; a control plane of its own, since a
killed server would fail any other test sharing it.
"""

from __future__ import annotations

import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockwright.controlplane import cluster as controlplane
from tests.fixtures.kube import cluster_kinds
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.skipif("kube" not in cluster_kinds(),
                                reason="the real control plane is not selected "
                                       "(LOCKWRIGHT_TEST_CLUSTER)")


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[controlplane.ControlPlane]:
    cp = controlplane.start(Path(tmp_path_factory.mktemp("restart")) / "kube")
    try:
        yield cp
    finally:
        cp.stop()


def _config_map(cp: controlplane.ControlPlane, name: str) -> dict[str, str]:
    got = cp.request("GET", f"/api/v1/namespaces/default/configmaps/{name}")
    assert isinstance(got, dict)
    return dict(got.get("data") or {})


def _down(cp: controlplane.ControlPlane) -> bool:
    try:
        return cp.request("GET", "/readyz") != "ok"
    except (urllib.error.URLError, OSError):
        return True


def test_etcd_killed_and_restarted_keeps_the_data(plane: controlplane.ControlPlane) -> None:
    name = unique("kept")
    plane.request("POST", "/api/v1/namespaces/default/configmaps",
                  {"metadata": {"name": name}, "data": {"k": "v"}})
    plane.kill("etcd")
    wait_for(lambda: _down(plane), timeout=60, interval=0.2,
             what="kube-apiserver to report not ready without etcd")
    plane.restart("etcd")
    assert wait_for(lambda: _config_map(plane, name), timeout=60, interval=0.2,
                    what="the ConfigMap readable again") == {"k": "v"}


def test_apiserver_killed_and_restarted_serves_on_the_same_address(
        plane: controlplane.ControlPlane) -> None:
    name, url = unique("same"), plane.url
    plane.request("POST", "/api/v1/namespaces/default/configmaps",
                  {"metadata": {"name": name}, "data": {"k": "w"}})
    plane.kill("kube-apiserver")
    assert _down(plane)
    plane.restart("kube-apiserver")
    assert plane.url == url and _config_map(plane, name) == {"k": "w"}


def test_restart_refuses_a_running_component(plane: controlplane.ControlPlane) -> None:
    with pytest.raises(controlplane.StartError, match="still running"):
        plane.restart("kube-scheduler")
