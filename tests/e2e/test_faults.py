"""Every server killed mid-change (issue 29 part 3), one kill of each: the CI version of
benchmarks/faults.py, on the Temporal cluster (PostgreSQL) with 3 workers and 1 watcher,
on each cluster ``LOCKWRIGHT_TEST_CLUSTER`` selects (etcd and kube-apiserver on kube only).

One stack per cluster serves every kill in turn (each kill's work has packages of its own);
the scenario and its checks are tests/faults/. Runs when ``LOCKWRIGHT_TEST_TEMPORAL`` selects
the cluster, as the rest of the cluster tier (CI's default command does not select it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lockwright.controlplane.temporalcluster import TemporalCluster
from tests.faults import fault
from tests.faults.scenario import COMPONENTS, components_for
from tests.fixtures.stack import Stack, running_stack
from tests.fixtures.temporal import STACK_WORKERS, TemporalTarget, temporal_kinds

pytestmark = [pytest.mark.skipif("cluster" not in temporal_kinds(),
                                 reason="the Temporal cluster is not selected "
                                        "(LOCKWRIGHT_TEST_TEMPORAL)"),
              pytest.mark.kube_shows("etcd, kube-apiserver and its controllers killed mid-change")]


@pytest.fixture(scope="module")
def faults_stack(registry: Any, auth_registry: Any, temporal_cluster: TemporalCluster,
                 temporal_cluster_env: Any, cluster_kind: str) -> Iterator[Stack]:
    """A stack of its own on the Temporal cluster, with production timings."""
    target = TemporalTarget("cluster", temporal_cluster_env, STACK_WORKERS["cluster"])
    with running_stack(registry, auth_registry, target, kind=cluster_kind,
                       production_timings=True, watchers=1) as s:
        yield s


@pytest.mark.parametrize("component", COMPONENTS)
async def test_kill_mid_change_converges_with_nothing_lost(
        faults_stack: Stack, temporal_cluster: TemporalCluster, temporal_cluster_env: Any,
        component: str, tmp_path: Path) -> None:
    if component not in components_for(faults_stack.kind):
        pytest.skip(f"{component} runs only on the real control plane (kube)")
    outcome = fault.run(faults_stack, temporal_cluster, component, tmp_path)
    await fault.check_workflows(temporal_cluster_env.client, faults_stack, outcome)
    assert outcome.problems() == [], "\n".join(outcome.problems())
