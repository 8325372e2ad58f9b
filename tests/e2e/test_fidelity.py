"""The differential check of devcluster against kube-apiserver (tests/fidelity): every
request shape the end-to-end suite sent to devcluster (tests/fidelity/recorded.jsonl),
replayed on both servers with fresh objects; the known validation gaps; the hand-written
catalogue. Each difference must be explained (tests/fidelity/explained.py).

Runs when the real control plane is selected (``LOCKWRIGHT_TEST_CLUSTER`` names kube).
The report is printed, and written to ``$LOCKWRIGHT_FIDELITY_REPORT`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fidelity.explained import EXPLAINED
from tests.fidelity.report import run
from tests.fixtures.kube import cluster_kinds


@pytest.mark.skipif("kube" not in cluster_kinds(),
                    reason="the real control plane is not selected (LOCKWRIGHT_TEST_CLUSTER)")
def test_devcluster_answers_as_kube_apiserver_does() -> None:
    report = run()
    print(report.text())
    if os.environ.get("LOCKWRIGHT_FIDELITY_REPORT"):
        Path(os.environ["LOCKWRIGHT_FIDELITY_REPORT"]).write_text(report.text() + "\n")
    assert not report.unexplained(), "\n".join(report.unexplained())
    found = {(d.shape, d.step) for d in report.catalogue.differences}
    assert found == set(EXPLAINED), f"explained but now equal: {set(EXPLAINED) - found}"
    assert not report.unused_rules(), f"explained but now equal: {report.unused_rules()}"
    fixed = [c.name for c in report.validation if not c.differs]
    assert not fixed, f"validation gaps devcluster now closes (drop them): {fixed}"
    assert len(report.compared) >= 0.95 * len(report.traffic)  # 330 of 334 at the last run
