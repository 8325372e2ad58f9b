"""The differential check of devcluster against kube-apiserver (tests/fidelity): every
request shape answered the same after normalising, or its difference explained.

Runs when the real control plane is selected (``LOCKWRIGHT_TEST_CLUSTER`` names kube).
The report is printed, and written to ``$LOCKWRIGHT_FIDELITY_REPORT`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fidelity.compare import both_servers, compare
from tests.fidelity.explained import EXPLAINED
from tests.fixtures.kube import cluster_kinds


@pytest.mark.skipif("kube" not in cluster_kinds(),
                    reason="the real control plane is not selected (LOCKWRIGHT_TEST_CLUSTER)")
def test_devcluster_answers_as_kube_apiserver_does() -> None:
    with both_servers() as (dc, kube):
        report = compare(dc, kube)
    print(report.text())
    if os.environ.get("LOCKWRIGHT_FIDELITY_REPORT"):
        Path(os.environ["LOCKWRIGHT_FIDELITY_REPORT"]).write_text(report.text() + "\n")
    found = {(d.shape, d.step) for d in report.differences}
    unexplained = [d for d in report.differences if (d.shape, d.step) not in EXPLAINED]
    assert not unexplained, report.text()
    assert found == set(EXPLAINED), f"explained but now equal: {set(EXPLAINED) - found}"
    assert len(report.compared) >= 20
