"""Soak: packages created and deleted in random order with random propagation (issue 14).

30 packages (Providers, Configurations, Functions) go through ``SOAK_ROUNDS`` rounds. In
every round but the last, each package is created and later deleted in one random
sequence with no waiting in between, so deletions land mid-install, with a random
propagation policy (orphaned revisions are adopted by the next round's package of the
same name). The last round installs every package to Healthy and deletes them all with
foreground or background propagation. Afterwards: nothing of any package is left, every
workflow is closed, no history is longer than ``HISTORY_BOUND`` events, and no workflow
has work pending. ``LOCKWRIGHT_SOAK_SEED`` replays a run.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from temporalio.client import Client, WorkflowExecutionStatus

from lockwright import contracts as c
from tests.e2e.test_deletion import list_if_served
from tests.e2e.test_failures import provider_dir
from tests.e2e.test_install import (
    PACKAGES,
    configuration_root,
    copy_package,
    ensure_crossplane_crds,
)
from tests.e2e.test_resilience import everything, lock_entries, mentions
from tests.fixtures.stack import PKG_GROUP, PLURALS, REVISION_PLURALS, Stack
from tests.helpers import unique, wait_for, wait_for_async

pytestmark = pytest.mark.kube_shows(
    "the garbage collector under random propagation, deletions landing mid-install")

SOAK_PACKAGES = 30
SOAK_ROUNDS = int(os.environ.get("LOCKWRIGHT_SOAK_ROUNDS", "3"))
# A package workflow run here takes a few passes per round (install, deletion, clean-up);
# measured runs stay well under this (74 events; the test prints the maximum).
HISTORY_BOUND = 200
POLICIES = ("Foreground", "Background", "Orphan")
Obj = dict[str, Any]


@dataclass(frozen=True)
class Package:
    kind: str
    name: str
    ref: str
    group: str


def build(stack: Stack, tmp: Path, i: int) -> Package:
    """Package number ``i``: Providers, Configurations and Functions in turn."""
    kind = ("Provider", "Configuration", "Function")[i % 3]
    group = f"soak{i}-{unique('s')}.example.org"
    root = tmp / f"p{i}"
    if kind == "Provider":
        provider_dir(root, group)
    elif kind == "Configuration":
        root = configuration_root(stack, root, group)
    else:
        copy_package(PACKAGES / "function", root, {"shout.fn.example.org": group})
    return Package(kind, unique(f"soak{i}"), stack.push(root), group)


def create(stack: Stack, pkg: Package) -> None:
    stack.apply_package(pkg.kind, pkg.name, pkg.ref)


def delete(stack: Stack, pkg: Package, policy: str) -> None:
    try:
        stack.custom.delete_cluster_custom_object(PKG_GROUP, "v1", PLURALS[pkg.kind], pkg.name,
                                                  propagation_policy=policy)
    except ApiException as exc:
        if exc.status != 404:
            raise


def all_gone(stack: Stack, packages: list[Package]) -> bool:
    return all(stack.get_package(p.kind, p.name) is None for p in packages)


def healthy(stack: Stack, pkg: Package) -> bool:
    conds = stack.conditions(pkg.kind, pkg.name)
    return all(conds.get(t, {}).get("status") == "True" for t in ("Installed", "Healthy"))


def chaotic_round(stack: Stack, packages: list[Package], rng: random.Random) -> list[str]:
    """Each package created, then deleted, all operations interleaved at random."""
    order = [p for p in packages for _ in range(2)]
    rng.shuffle(order)
    created: set[str] = set()
    ops = []
    for pkg in order:
        if pkg.name not in created:  # a package's first turn creates it, its second deletes
            created.add(pkg.name)
            create(stack, pkg)
            ops.append(f"+{pkg.name}")
        else:
            policy = rng.choice(POLICIES)
            delete(stack, pkg, policy)
            ops.append(f"-{pkg.name}:{policy}")
    return ops


def final_round(stack: Stack, packages: list[Package], rng: random.Random) -> None:
    """Every package Healthy (adopting what earlier rounds orphaned), then deleted."""
    for pkg in rng.sample(packages, len(packages)):
        create(stack, pkg)
    wait_for(lambda: all(healthy(stack, p) for p in packages), timeout=240, interval=0.5,
             what="every package Healthy: " + ", ".join(
                 p.name for p in packages if not healthy(stack, p)))
    for pkg in rng.sample(packages, len(packages)):
        delete(stack, pkg, rng.choice(("Foreground", "Background")))


# --- what is left --------------------------------------------------------------------------
def leftovers(stack: Stack, packages: list[Package]) -> list[str]:
    """Anything of any package still in the cluster or the Lock."""
    names = {p.name for p in packages}
    out = [f"{p.kind} {p.name}" for p in packages if stack.get_package(p.kind, p.name)]
    for kind, plural in REVISION_PLURALS.items():
        for rev in stack.custom.list_cluster_custom_object(PKG_GROUP, "v1", plural)["items"]:
            if rev["metadata"].get("labels", {}).get("pkg.crossplane.io/package") in names:
                out.append(f"{kind}Revision {rev['metadata']['name']}")
    objects = everything(stack)
    for plural in ("compositeresourcedefinitions", "compositions"):
        objects += list_if_served(stack, "apiextensions.crossplane.io", "v1", plural)
    groups = tuple(p.group for p in packages)
    for obj in objects:
        name = str(obj["metadata"]["name"])
        if name.endswith(groups) or any(mentions(obj, n, set()) for n in names):
            out.append(f"{obj.get('kind')} {name}")
    sources = {p.ref.rsplit(":", 1)[0] for p in packages}
    out += [f"Lock entry {e['name']}" for e in lock_entries(stack) if e.get("source") in sources]
    return out


async def histories(stack: Stack, packages: list[Package]) -> tuple[list[str], int]:
    """Workflows not closed, or with work pending; and the longest history seen."""
    tc = await Client.connect(stack.temporal_address)
    open_, longest = [], 0
    for pkg in packages:
        async for run in tc.list_workflows(f"LockwrightPackageName = '{pkg.name}'"):
            handle = tc.get_workflow_handle(run.id, run_id=run.run_id)
            desc = await handle.describe()
            history = await handle.fetch_history()
            longest = max(longest, len(history.events))
            # A run cancelled while one of its steps waited out a retry backoff (production
            # timings: seconds) keeps that step in its pending list for good, as Temporal
            # leaves a closed run's record; the server never starts another attempt for a
            # closed run, and what a step wrote is owned by the revision (see leftovers).
            # A closed run with a child still pending is a leak.
            pending = desc.raw_description.pending_children or (
                desc.status == WorkflowExecutionStatus.RUNNING
                and desc.raw_description.pending_activities)
            if desc.status == WorkflowExecutionStatus.RUNNING or pending:
                open_.append(f"{run.id} {desc.status}")
    return open_, longest


async def test_soak_create_and_delete_in_random_order(stack: Stack, tmp_path: Path) -> None:
    seed = int(os.environ.get("LOCKWRIGHT_SOAK_SEED", time.time_ns() % 2**32))
    rng = random.Random(seed)
    ensure_crossplane_crds(stack)
    packages = [build(stack, tmp_path, i) for i in range(SOAK_PACKAGES)]
    where = f"seed {seed}"
    started = time.monotonic()
    for round_ in range(SOAK_ROUNDS - 1):
        ops = chaotic_round(stack, packages, rng)
        try:
            wait_for(lambda: all_gone(stack, packages), timeout=120, interval=0.5,
                     what=f"round {round_}: every package deleted")
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}; ops {ops}") from exc
    final_round(stack, packages, rng)
    wait_for(lambda: all_gone(stack, packages), timeout=120, interval=0.5,
             what=f"{where}: every package deleted at the end")
    try:
        wait_for(lambda: not leftovers(stack, packages), timeout=60, interval=0.5,
                 what="nothing left behind")
    except AssertionError as exc:
        raise AssertionError(f"{where}: {exc}: {leftovers(stack, packages)}") from exc

    async def closed() -> tuple[list[str], int] | None:
        found = await histories(stack, packages)
        return None if found[0] else found

    try:
        _, longest = await wait_for_async(closed, timeout=60, interval=0.5,
                                          what="every workflow closed, nothing pending")
    except AssertionError as exc:
        raise AssertionError(f"{where}: {exc}: {(await histories(stack, packages))[0]}") from exc
    assert longest <= HISTORY_BOUND, f"{where}: a history of {longest} events"
    assert stack.worker is not None and stack.worker.poll() is None, "the worker died"
    print(f"\nsoak {where}: {SOAK_PACKAGES} packages x {SOAK_ROUNDS} rounds in "
          f"{time.monotonic() - started:.1f}s; longest history {longest} events "
          f"(bound {HISTORY_BOUND})")
