"""What must hold after a fault once the work converged (issue 29 part 3)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from temporalio.client import Client

from tests.faults.runtimes import NS
from tests.faults.scenario import Work, _deployments, _packages
from tests.fixtures.stack import PKG_GROUP, REVISION_PLURALS, Stack

Obj = dict[str, Any]
#: Workflows that end with their work (a revision's install, a plan); the package, resolver
#: and activation workflows are entities that live as long as the cluster.
PAST_THEIR_WORK = ("revision:", "plan:")


def lock_entries(stack: Stack) -> list[Obj]:
    lock = stack.custom.get_cluster_custom_object(PKG_GROUP, "v1beta1", "locks", "lock")
    return list(lock.get("packages") or [])


def expected_packages(work: Work) -> list[tuple[str, str]]:
    """(kind, name) of every package the work made or touched."""
    deps = [("Provider", n) for n, ref in _packages(work.stack, "Provider")
            if any(ref.startswith(r + ":") or ref.startswith(r + "@")
                   for r in work.dependency_repos)]
    return [*(("Provider", n) for n in [*work.switch, work.gated]),
            *(("Configuration", n) for n in work.configs), *deps]


def one_active_revision(work: Work) -> list[str]:
    """Packages without exactly one Active revision."""
    bad = []
    for kind, name in expected_packages(work):
        states = [r["spec"]["desiredState"] for r in work.stack.revisions(kind, name)]
        if states.count("Active") != 1:
            bad.append(f"{kind} {name}: {states}")
    return bad


def lost_and_duplicated_lock_entries(work: Work) -> tuple[list[str], list[str]]:
    """Active revisions with no Lock entry, and Lock entries present more than once."""
    entries = lock_entries(work.stack)
    names = Counter(str(e.get("name")) for e in entries)
    sources = Counter(str(e.get("source")) for e in entries)
    lost = [f"{kind} {name}" for kind, name in expected_packages(work)
            if names[work.active(name, kind)] == 0]
    duplicated = [n for n, c in names.items() if c > 1]
    duplicated += [f"source {s}" for s, c in sources.items() if c > 1]
    return lost, duplicated


def orphans(stack: Stack) -> list[str]:
    """lockwright-made objects whose owner is gone: revisions without their package,
    runtime Deployments without their revision."""
    packages = {p["metadata"]["uid"] for kind in ("Provider", "Configuration", "Function")
                for p in stack.custom.list_cluster_custom_object(
                    PKG_GROUP, "v1", f"{kind.lower()}s")["items"]}
    found, revisions = [], set()
    for plural in REVISION_PLURALS.values():
        for rev in stack.custom.list_cluster_custom_object(PKG_GROUP, "v1", plural)["items"]:
            revisions.add(rev["metadata"]["uid"])
            owners = {o["uid"] for o in rev["metadata"].get("ownerReferences") or []}
            if not owners & packages:
                found.append(f"{plural}/{rev['metadata']['name']}")
    for dep in _deployments(stack):
        owners = {o.uid for o in dep.metadata.owner_references or []}
        if owners and not owners & revisions:
            found.append(f"deployments/{NS}/{dep.metadata.name}")
    return found


async def open_and_failed_workflows(temporal: Client, task_queue: str) -> tuple[list[str],
                                                                               list[str]]:
    """Workflows of the stack's queue still running that end with their work
    (:data:`PAST_THEIR_WORK`), and workflows that Failed; through
    the visibility store (PostgreSQL's on the Temporal cluster)."""
    base = f"TaskQueue = '{task_queue}'"
    running = [w.id async for w in temporal.list_workflows(
        f"{base} AND ExecutionStatus = 'Running'")]
    failed = [w.id async for w in temporal.list_workflows(
        f"{base} AND ExecutionStatus = 'Failed'")]
    return [w for w in running if w.startswith(PAST_THEIR_WORK)], failed


async def retried_activities(temporal: Client, task_queue: str) -> int:
    """Activity attempts beyond the first in the queue's workflows: retries, visible."""
    retries = 0
    async for w in temporal.list_workflows(f"TaskQueue = '{task_queue}'"):
        history = await temporal.get_workflow_handle(w.id, run_id=w.run_id).fetch_history()
        for event in history.events:
            attempt = event.activity_task_started_event_attributes.attempt
            retries += max(0, attempt - 1)
    return retries
