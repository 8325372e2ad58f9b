"""Kill one component mid-change, restart it on its data, and measure what followed."""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.client import Client

from lockwright.controlplane.temporalcluster import TemporalCluster
from tests.faults import checks
from tests.faults.runtimes import RuntimeWatch
from tests.faults.scenario import CONVERGE_DEADLINE_S, KUBE_ONLY, Work
from tests.fixtures.kube import KubeCluster
from tests.fixtures.stack import Stack
from tests.helpers import wait_for, wait_for_async

#: After /readyz says ok, requests already received may still be answered by the unsynced
#: authorizer; the audit log stamps them when received (seconds, for clock granularity).
OUTAGE_MARGIN_S = 2.0
READY_LINES = {"worker": "worker polling", "watcher": "watcher synced"}


@dataclass
class Outcome:
    """What one kill showed."""

    component: str
    converged: bool = False
    down_s: float = 0.0  # SIGKILL until the component serves again
    converge_s: float = 0.0  # from the component back until the work converged
    gaps: dict[str, float] = field(default_factory=dict)  # seconds without a runtime
    blind_s: float = 0.0  # the runtime watch could not reach the API server
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    not_one_active: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    open_workflows: list[str] = field(default_factory=list)
    failed_workflows: list[str] = field(default_factory=list)
    retries: int = 0
    error: str = ""
    scope: str = ""  # the prefix of this kill's package names (its workflows name them)

    @property
    def worst_gap(self) -> float:
        return max(self.gaps.values(), default=0.0)

    def problems(self) -> list[str]:
        """Every invariant this kill broke (empty: it held)."""
        found = [] if self.converged else [f"not converged: {self.error}"]
        found += [f"no Available runtime {g:.1f}s: {p}" for p, g in self.gaps.items() if g > 0]
        found += [f"lost Lock entry: {x}" for x in self.lost]
        found += [f"duplicated Lock entry: {x}" for x in self.duplicated]
        found += [f"not one Active revision: {x}" for x in self.not_one_active]
        found += [f"orphan: {x}" for x in self.orphans]
        found += [f"open workflow: {x}" for x in self.open_workflows]
        found += [f"failed workflow: {x}" for x in self.failed_workflows]
        return found


def kill(stack: Stack, temporal: TemporalCluster | None, component: str) -> None:
    """SIGKILL ``component`` (of the stack, its Temporal cluster or its control plane)."""
    if component in READY_LINES:
        proc = (stack.worker_processes if component == "worker" else stack.watcher_processes)[0]
        proc.kill()
        proc.wait(timeout=30)
    elif component in KUBE_ONLY:
        assert isinstance(stack.cluster, KubeCluster), f"{component} runs only on kube"
        stack.cluster.plane.kill(component)
    else:
        assert temporal is not None, f"{component}: the stack runs on no Temporal cluster"
        temporal.kill(component)


def restart(stack: Stack, temporal: TemporalCluster | None, component: str) -> None:
    """Start ``component`` again on its data and wait until it serves."""
    if component in READY_LINES:
        procs = stack.worker_processes if component == "worker" else stack.watcher_processes
        procs[0] = stack._start(component, READY_LINES[component])  # noqa: SLF001
    elif component in KUBE_ONLY:
        assert isinstance(stack.cluster, KubeCluster)
        stack.cluster.plane.restart(component)
    else:
        assert temporal is not None
        temporal.restart(component)


def run(stack: Stack, temporal: TemporalCluster | None, component: str | None,
        tmp: Path) -> Outcome:
    """Prepare the work, apply it, kill ``component`` once it is in flight (None: no kill,
    the baseline), restart it, wait for convergence and check every invariant."""
    work = Work(stack)
    work.prepare(tmp)
    outcome = Outcome(component or "none (baseline)", scope=work.ns)
    watch = RuntimeWatch(stack.api, work.running)
    try:
        work.apply()
        wait_for(work.in_flight, timeout=120, interval=0.05, what="a switch-over in flight")
        if component is not None:
            killed, wall = time.monotonic(), time.time()
            kill(stack, temporal, component)
            restart(stack, temporal, component)
            outcome.down_s = time.monotonic() - killed
            if component == "kube-apiserver":
                stack.api_outages.append((wall - 1, time.time() + OUTAGE_MARGIN_S))
        back = time.monotonic()
        try:
            wait_for(work.converged, timeout=CONVERGE_DEADLINE_S, interval=0.5,
                     what="the work converged")
            outcome.converged = True
        except AssertionError as exc:
            outcome.error = f"{str(exc)[:200]}; {work.progress()}"
        outcome.converge_s = time.monotonic() - back
    finally:
        outcome.gaps, outcome.blind_s = watch.stop(), watch.blind_s
    _check(work, outcome)
    return outcome


def _check(work: Work, outcome: Outcome) -> None:
    outcome.not_one_active = checks.one_active_revision(work)
    outcome.lost, outcome.duplicated = checks.lost_and_duplicated_lock_entries(work)
    outcome.orphans = checks.orphans(work.stack)


async def check_workflows(temporal: Client, stack: Stack, outcome: Outcome) -> None:
    """Workflows closed past their work, none Failed, and the retries history shows;
    closing child workflows may trail convergence by a moment, so wait for it."""
    async def closed() -> bool:
        open_, failed = await checks.open_and_failed_workflows(temporal, stack.task_queue)
        outcome.open_workflows = [w for w in open_ if outcome.scope in w]
        outcome.failed_workflows = [w for w in failed if outcome.scope in w]
        return not outcome.open_workflows

    with contextlib.suppress(AssertionError):  # still open: reported in open_workflows
        await wait_for_async(closed, timeout=30, interval=0.5, what="workflows closed")
    outcome.retries = await checks.retried_activities(temporal, stack.task_queue)


async def keep_evidence(temporal: Client, stack: Stack, outcome: Outcome, into: Path) -> None:
    """Save what a missed kill leaves to diagnose it: the stack's logs, and the history
    (JSON, as ``temporal workflow show --output json`` gives it) and pending work of each
    workflow of the stack still open or Failed."""
    into.mkdir(parents=True, exist_ok=True)
    for log in stack.state.glob("*.log"):
        shutil.copy(log, into / log.name)
    (into / "outcome.txt").write_text(f"{outcome}\n")
    for wid in [*outcome.open_workflows, *outcome.failed_workflows]:
        handle = temporal.get_workflow_handle(wid)
        history = await handle.fetch_history()
        name = wid.replace(":", "_").replace("/", "_")
        (into / f"{name}.history.json").write_text(history.to_json())
        described = await handle.describe()
        (into / f"{name}.pending.txt").write_text(
            f"{described.raw_description.pending_activities}\n"
            f"{described.raw_description.pending_children}\n")
