"""Reading an install from Temporal: the package workflow, its children, pending steps.

Everything read here becomes plain data (:mod:`commands.timeline`) before anything is
decided or printed, so ``history`` and ``install --wait`` share one reading and their
rendering stays testable without a server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from lockwright.commands.common import PackageRef
from lockwright.commands.rows import child_key
from lockwright.commands.timeline import CHILD, Pending, Timeline, parse, with_pending

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.

# A query needs a worker to answer; without one the reader goes on without the status.
QUERY_TIMEOUT = timedelta(seconds=3)
# Runs read back along the continue-as-new chain unless asked for more.
MAX_RUNS = 20


@dataclass(frozen=True)
class Install:
    """What Temporal knows of one package: its workflow's runs (oldest first; a package
    workflow continues as new as its history grows), its children's runs (by
    :func:`commands.rows.child_key`), and the ``status`` query's answer if it gave one."""

    runs: tuple[Timeline, ...] = ()
    children: dict[str, Timeline] = field(default_factory=dict)
    status: Any = None
    # Older runs exist that were not read (more than the reader was asked for).
    earlier: bool = False


async def read_install(client: Client, ref: PackageRef, task_queue: str, query: bool = False,
                       max_runs: int = MAX_RUNS) -> Install:
    """The package workflow's latest ``max_runs`` runs and the InstallRevision children
    they started.

    Returns an empty :class:`Install` while the workflow does not exist yet (the watcher
    starts it when it sees the package).
    """
    from lockwright.contracts import package_workflow_id

    handle = client.get_workflow_handle(package_workflow_id(ref.kind, ref.name, task_queue))
    runs = await read_runs(client, handle.id, max_runs)
    if not runs:
        return Install()
    children: dict[str, Timeline] = {}
    for step in (s for run in runs for s in run.steps):
        if step.kind == CHILD and step.child and step.child_run:
            found = await read_timeline(client.get_workflow_handle(step.child,
                                                                   run_id=step.child_run))
            if found is not None:
                children[child_key(step)] = found
    return Install(runs, children, await status(handle) if query else None,
                   bool(runs[0].continued_from))


async def read_runs(client: Client, workflow_id: str, max_runs: int) -> tuple[Timeline, ...]:
    """The latest run and the runs it continued from, back to ``max_runs``, oldest first."""
    runs: list[Timeline] = []
    run_id = ""
    while len(runs) < max_runs:
        found = await read_timeline(client.get_workflow_handle(workflow_id,
                                                               run_id=run_id or None))
        if found is None:
            break
        runs.insert(0, found)
        run_id = found.continued_from
        if not run_id:
            break
    return tuple(runs)


async def read_timeline(handle: WorkflowHandle[Any, Any]) -> Timeline | None:
    """One run's timeline with its pending activities, or None when there is no such run."""
    from temporalio.service import RPCError, RPCStatusCode

    try:
        history = await handle.fetch_history()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    timeline = parse(handle.id, history.to_json_dict(), handle.run_id or history.run_id)
    if timeline.end is None:
        timeline = with_pending(timeline, await pending(handle))
    return timeline


async def pending(handle: WorkflowHandle[Any, Any]) -> list[Pending]:
    """The run's activities still running or being retried, as plain data."""
    described = await handle.describe()
    return [Pending(p.activity_type.name, p.attempt, p.last_failure.message)
            for p in described.raw_description.pending_activities]


async def status(handle: WorkflowHandle[Any, Any]) -> Any:
    """The ``status`` query's answer (``PackageStatusResult``), or None if none came."""
    from temporalio.client import WorkflowQueryFailedError, WorkflowQueryRejectedError
    from temporalio.service import RPCError

    from lockwright import contracts as c

    try:
        return await handle.query(c.QUERY_STATUS, result_type=c.PackageStatusResult,
                                  rpc_timeout=QUERY_TIMEOUT)
    except (RPCError, TimeoutError, WorkflowQueryFailedError, WorkflowQueryRejectedError):
        return None
