"""``lockwright dev up`` end to end: the embedded stack comes up and the example gets Healthy.

Runs the real command (Temporal dev server, docker-registry, devcluster, worker, watcher
as child processes) on free ports with ``--exit-when-healthy``, then checks that it stopped
everything it started. A second run on the same state dir reuses the data.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import free_port
from worker.stack import port_free

pytestmark = [pytest.mark.kubectl, pytest.mark.registry, pytest.mark.temporal]


def dev_up(state: Path, tport: int, rport: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lockwright", "dev", "up", "--state-dir", str(state),
         "--temporal-port", str(tport), "--registry-port", str(rport), "--timeout", "90",
         "--exit-when-healthy"],
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
