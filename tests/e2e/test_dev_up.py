"""``lockwright dev up`` end to end: the embedded stack comes up and the example gets Healthy.

Runs the real command (Temporal dev server, docker-registry, devcluster, worker, watcher
as child processes) on free ports with ``--exit-when-healthy``, then checks that it stopped
everything it started. A second run on the same state dir reuses the data.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.temporal import temporal_kinds
from tests.helpers import free_port, wait_for
from lockwright.controlplane.ports import port_free

pytestmark = [pytest.mark.kubectl, pytest.mark.registry, pytest.mark.temporal]


def dev_up(state: Path, tport: int, rport: int, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lockwright", "dev", "up", "--state-dir", str(state),
         "--temporal-port", str(tport), "--registry-port", str(rport), "--timeout", "90",
         "--exit-when-healthy", *more],
        text=True, capture_output=True, timeout=400, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def test_dev_up_installs_the_example_provider_and_cleans_up(tmp_path: Path) -> None:
    tport, rport = free_port(gap=1000), free_port()  # Temporal's UI: port + 1000
    first = dev_up(tmp_path, tport, rport)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert re.search(r"provider\.pkg\.crossplane\.io/provider-example\s+True\s+True\s+"
                     rf"127\.0\.0\.1:{rport}/lockwright/provider-example:v0\.1\.0", first.stdout)
    assert re.search(r"providerrevision\.pkg\.crossplane\.io/provider-example-[0-9a-f]{12}\s+True"
                     r"\s+1\s+\S+\s+Active", first.stdout)
    assert f"Temporal UI:  http://127.0.0.1:{tport + 1000}" in first.stdout
    for name in ("temporal", "registry", "devcluster", "worker", "watcher"):
        assert (tmp_path / "logs" / f"{name}.log").exists()
        assert f"stopped {name}" in first.stderr
    assert port_free(tport) and port_free(rport)

    again = dev_up(tmp_path, tport, rport)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "provider-example unchanged" in again.stdout


@pytest.mark.skipif("cluster" not in temporal_kinds(),
                    reason="the Temporal cluster is not selected (LOCKWRIGHT_TEST_TEMPORAL)")
def test_dev_up_on_the_temporal_cluster_keeps_its_data(tmp_path: Path) -> None:
    """``--temporal cluster``: PostgreSQL and temporal-server instead of the dev server; a
    second run starts them again on the first run's data."""
    tport, rport = free_port(), free_port()
    first = dev_up(tmp_path, tport, rport, "--temporal", "cluster")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert f"Temporal cluster on 127.0.0.1:{tport}" in first.stdout
    assert re.search(r"provider\.pkg\.crossplane\.io/provider-example\s+True\s+True", first.stdout)
    assert (tmp_path / "temporal-cluster" / "postgres" / "PG_VERSION").exists()
    assert "stopped the Temporal cluster" in first.stderr
    assert port_free(tport) and port_free(rport)

    again = dev_up(tmp_path, tport, rport, "--temporal", "cluster")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "provider-example unchanged" in again.stdout
    # The namespace job found what the first run registered: PostgreSQL kept it.
    init_log = (tmp_path / "temporal-cluster" / "logs" / "temporal-init.log").read_text()
    assert "search attribute LockwrightPackageName already registered" in init_log
    assert port_free(tport)


@pytest.mark.kube_shows("dev up --control-plane kube: the Deployment controller and kwok")
def test_dev_up_on_the_real_control_plane(tmp_path: Path, cluster_kind: str) -> None:
    """``--control-plane kube``: the example's runtime is rolled out by the Deployment and
    ReplicaSet controllers to a Running pod on a kwok Node, and a foreground delete of the
    Provider completes through Kubernetes' own garbage collector."""
    if cluster_kind != "kube":
        pytest.skip("the real control plane is not selected (LOCKWRIGHT_TEST_CLUSTER)")
    tport, rport = free_port(gap=1000), free_port()
    out = tmp_path / "dev-up.out"
    with open(out, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lockwright", "dev", "up", "--state-dir", str(tmp_path),
             "--temporal-port", str(tport), "--registry-port", str(rport), "--timeout", "120",
             "--control-plane", "kube"], stdout=sink, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    try:
        wait_for(lambda: proc.poll() is None and "Press Ctrl-C to stop." in out.read_text()
                 or proc.poll() is not None, timeout=900, interval=0.5, what="dev up to be up")
        assert proc.poll() is None, out.read_text()[-3000:]
        text = out.read_text()
        assert re.search(r"provider\.pkg\.crossplane\.io/provider-example\s+True\s+True", text)
        kubeconfig = str(tmp_path / "kube" / "kubeconfig")
        assert f"export KUBECONFIG={kubeconfig}" in text
        rolled_out_on_kwok(kubeconfig)
        kubectl(kubeconfig, "delete", "provider", "provider-example", "--cascade=foreground",
                "--timeout=120s")
        wait_for(lambda: not kubectl(kubeconfig, "get", "deployments,replicasets,pods", "-n",
                                     "crossplane-system", "-o", "name").strip(),
                 timeout=60, interval=0.5, what="the runtime's Deployment, ReplicaSet and pod gone")
        assert not kubectl(kubeconfig, "get", "providerrevisions", "-o", "name").strip()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    assert "stopped the control plane" in out.read_text()
    assert port_free(tport) and port_free(rport)


def kubectl(kubeconfig: str, *args: str) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], text=True,
                          capture_output=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rolled_out_on_kwok(kubeconfig: str) -> None:
    """The example's pod: Running on a kwok Node, owned by a ReplicaSet its Deployment owns."""
    pods = json.loads(kubectl(kubeconfig, "get", "pods", "-n", "crossplane-system", "-o",
                              "json"))["items"]
    [pod] = [p for p in pods if p["metadata"]["name"].startswith("provider-example-")]
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == "kwok-node-0"
    [rs_ref] = pod["metadata"]["ownerReferences"]
    assert rs_ref["kind"] == "ReplicaSet"
    rs = json.loads(kubectl(kubeconfig, "get", "replicaset", "-n", "crossplane-system",
                            rs_ref["name"], "-o", "json"))
    [dep_ref] = rs["metadata"]["ownerReferences"]
    assert dep_ref["kind"] == "Deployment" and dep_ref["name"].startswith("provider-example-")
