"""Upgrades that never leave the cluster without a working provider (issue 8), end to end.

Every test watches the package's runtime Deployments from before the upgrade to after it
settles (a watch, not samples) and requires at least one Available Deployment at every
event. A v2 that cannot be fetched, fails lint, or whose runtime never becomes available
leaves v1 Active and running, and the package says why.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from tests.e2e.test_failures import crd_exists, provider_dir, push_unlinted, unique_group
from tests.fixtures.stack import PKG_GROUP, Stack
from tests.helpers import unique, wait_for
from workflows import contracts as c

NS = "crossplane-system"
GOOD_IMAGE = "registry.example.org/example/provider-gadgets:{tag}"
BROKEN_IMAGE = "registry.example.org/example/broken-runtime:{tag}"  # see BROKEN_IMAGES
Obj = dict[str, Any]


class Runtimes:
    """A watch of a package's runtime Deployments, keeping their availability over time."""

    def __init__(self, stack: Stack, package: str) -> None:
        self.apps = client.AppsV1Api(stack.api)
        self.package = package
        listed = self.apps.list_namespaced_deployment(NS)
        self.available = {d.metadata.name: _available(d) for d in listed.items if self._ours(d)}
        self.rv = listed.metadata.resource_version
        self.events: list[tuple[str, str, bool]] = []
        self.least = sum(self.available.values())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for event in watch.Watch().stream(
                    self.apps.list_namespaced_deployment, NS, resource_version=self.rv,
                    timeout_seconds=1):
                if self._ours(event["object"]):
                    self._see(event["type"], event["object"])
                else:
                    self.rv = event["object"].metadata.resource_version

    def _ours(self, dep: Any) -> bool:
        """The package's runtimes: their selector names the package."""
        labels = dep.spec.selector.match_labels or {} if dep.spec and dep.spec.selector else {}
        return bool(labels.get("pkg.crossplane.io/provider") == self.package)

    def _see(self, type_: str, dep: Any) -> None:
        self.rv = dep.metadata.resource_version
        name, up = dep.metadata.name, _available(dep) and type_ != "DELETED"
        self.available[name] = up
        if type_ == "DELETED":
            del self.available[name]
        self.events.append((type_, name, up))
        self.least = min(self.least, sum(self.available.values()))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _available(dep: Any) -> bool:
    conditions = (dep.status.conditions if dep.status else None) or []
    return any(x.type == "Available" and x.status == "True" for x in conditions)


# --- packages --------------------------------------------------------------------------
def provider(stack: Stack, tmp: Path, group: str, repo: str, tag: str, image: str) -> str:
    root = provider_dir(tmp / unique(tag), group, spec={"controller": {"image": image}})
    return stack.push(root, repo=repo, tag=tag)


def active_and_inactive(stack: Stack, name: str) -> tuple[Obj, Obj] | None:
    revs = stack.revisions("Provider", name)
    active = [r for r in revs if r["spec"]["desiredState"] == "Active"]
    inactive = [r for r in revs if r["spec"]["desiredState"] == "Inactive"]
    return (active[0], inactive[0]) if len(active) == 1 and inactive else None


def install_v1(stack: Stack, tmp: Path, **annotations: str) -> tuple[str, str, str, Obj]:
    group, repo = unique_group(), unique("prov")
    v1 = provider(stack, tmp, group, repo, "v1.0.0", GOOD_IMAGE.format(tag="v1"))
    name = unique("upg")
    stack.apply_package("Provider", name, v1)
    if annotations:
        stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name,
                                                 {"metadata": {"annotations": annotations}})
    stack.wait_healthy("Provider", name)
    [rev] = stack.revisions("Provider", name)
    return name, group, repo, rev


def upgrade_to(stack: Stack, name: str, ref: str) -> None:
    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name,
                                             {"spec": {"package": ref}})


def controller_uid(stack: Stack, crd_name: str) -> str:
    crd = crd_exists(stack, crd_name) or {}
    return next(o["uid"] for o in crd["metadata"]["owner_references"] if o["controller"])


# --- the tests -------------------------------------------------------------------------
def test_upgrade_moves_control_and_removes_v1_only_after_v2_is_available(
        stack: Stack, tmp_path: Path) -> None:
    name, group, repo, v1 = install_v1(stack, tmp_path)
    v2_ref = provider(stack, tmp_path, group, repo, "v2.0.0", GOOD_IMAGE.format(tag="v2"))
    runtimes = Runtimes(stack, name)
    try:
        upgrade_to(stack, name, v2_ref)

        def switched() -> tuple[Obj, Obj] | None:
            found = active_and_inactive(stack, name)
            done = found and found[1]["metadata"]["name"] == v1["metadata"]["name"]
            gone = v1["metadata"]["name"] not in runtimes.available
            return found if done and gone and stack.conditions("Provider", name).get(
                "Healthy", {}).get("status") == "True" else None

        v2, old = wait_for(switched, timeout=90, interval=0.2, what="switched to v2")
    finally:
        runtimes.stop()
    assert runtimes.least >= 1, runtimes.events
    v1_name, v2_name = v1["metadata"]["name"], v2["metadata"]["name"]
    up = next(i for i, e in enumerate(runtimes.events) if e[1] == v2_name and e[2])
    down = next(i for i, e in enumerate(runtimes.events) if e[1] == v1_name
                and e[0] == "DELETED")
    assert up < down, runtimes.events  # v1's runtime went only after v2's was Available
    assert controller_uid(stack, f"gadgets.{group}") == v2["metadata"]["uid"]
    assert old["metadata"]["uid"] == v1["metadata"]["uid"]


@pytest.mark.parametrize("broken", ["unfetchable", "lint", "unavailable"])
def test_broken_v2_leaves_v1_active_and_running(stack: Stack, tmp_path: Path,
                                                broken: str) -> None:
    deadline = {c.SWITCH_DEADLINE_ANNOTATION: "3"}
    name, group, repo, v1 = install_v1(stack, tmp_path, **deadline)
    if broken == "unfetchable":
        v2_ref = f"{stack.registry_host}/{repo}:v2.9.9"  # never pushed
        says = ("Installed", "not found")
    elif broken == "lint":
        composition = {"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
                       "metadata": {"name": f"xthings.{group}"}, "spec": {}}
        v2_ref = push_unlinted(stack, provider_dir(tmp_path / "lint", group,
                                                   extra=[composition]))
        says = ("Installed", "linting package contents failed")
    else:
        v2_ref = provider(stack, tmp_path, group, repo, "v2.0.0", BROKEN_IMAGE.format(tag="v2"))
        says = ("Healthy", "deployment is unavailable")
    runtimes = Runtimes(stack, name)
    try:
        upgrade_to(stack, name, v2_ref)

        def refused() -> dict[str, Obj] | None:
            conds = stack.conditions("Provider", name)
            return conds if says[1] in conds.get(says[0], {}).get("message", "") else None

        conds = wait_for(refused, timeout=90, interval=0.2, what=f"the package says {says}")
        if broken == "unavailable":
            wait_for(lambda: stack.conditions("Provider", name)["Healthy"]["message"].endswith(
                f"reverted to {v1['metadata']['name']}"), timeout=60, interval=0.2,
                what="reverted to v1")
    finally:
        runtimes.stop()
    assert runtimes.least >= 1, runtimes.events
    assert not [e for e in runtimes.events if e[1] == v1["metadata"]["name"]
                and (e[0] == "DELETED" or not e[2])], runtimes.events
    revs = {r["metadata"]["name"]: r for r in stack.revisions("Provider", name)}
    assert revs[v1["metadata"]["name"]]["spec"]["desiredState"] == "Active"
    assert [n for n, r in revs.items() if r["spec"]["desiredState"] == "Active"] == [
        v1["metadata"]["name"]]
    assert controller_uid(stack, f"gadgets.{group}") == v1["metadata"]["uid"]
    assert conds[says[0]]["status"] == "False"


def test_rollback_to_the_old_tag_reactivates_its_revision(stack: Stack,
                                                          tmp_path: Path) -> None:
    name, group, repo, v1 = install_v1(stack, tmp_path)
    v1_ref = v1["spec"]["image"]
    v2_ref = provider(stack, tmp_path, group, repo, "v2.0.0", GOOD_IMAGE.format(tag="v2"))
    upgrade_to(stack, name, v2_ref)
    wait_for(lambda: (found := active_and_inactive(stack, name)) and
             found[0]["metadata"]["name"] != v1["metadata"]["name"], timeout=90,
             interval=0.2, what="v2 active")
    runtimes = Runtimes(stack, name)
    try:
        upgrade_to(stack, name, v1_ref)
        back = wait_for(lambda: (found := active_and_inactive(stack, name)) and
                        found[0]["metadata"]["uid"] == v1["metadata"]["uid"] and
                        len(runtimes.available) == 1 and found, timeout=90, interval=0.2,
                        what="v1 active again")
    finally:
        runtimes.stop()
    assert runtimes.least >= 1, runtimes.events
    assert back[0]["spec"]["revision"] == 3  # renumbered above v2, as Crossplane does
    stack.wait_healthy("Provider", name)
    assert controller_uid(stack, f"gadgets.{group}") == v1["metadata"]["uid"]


CRASH_ROUNDS = 10


def test_worker_killed_during_switch_overs_never_leaves_zero_runtimes(
        stack: Stack, tmp_path: Path) -> None:
    """SIGKILL at a random point of each of 10 switch-overs; overlapping, seeded."""
    import os
    import random
    import time

    seed = int(os.environ.get("LOCKWRIGHT_CRASH_SEED", time.time_ns() % 2**32))
    rng = random.Random(seed)
    rounds = []
    for i in range(CRASH_ROUNDS):
        name, group, repo, v1 = install_v1(stack, tmp_path / f"r{i}")
        v2_ref = provider(stack, tmp_path / f"r{i}", group, repo, "v2.0.0",
                          GOOD_IMAGE.format(tag="v2"))
        rounds.append((name, group, v1, v2_ref))
    started = time.monotonic()
    upgrade_to(stack, rounds[0][0], rounds[0][3])
    wait_for(lambda: v1_gone(stack, rounds[0][0], rounds[0][2]), timeout=90, interval=0.1,
             what="an undisturbed switch-over")
    typical = time.monotonic() - started
    watches = {name: Runtimes(stack, name) for name, _, _, _ in rounds[1:]}
    kills = []
    try:
        for name, _, _, v2_ref in rounds[1:]:
            upgrade_to(stack, name, v2_ref)
            delay = rng.uniform(0, typical)
            time.sleep(delay)  # chaos injection at a random point, not a synchronisation
            stack.kill_worker()
            stack.start_worker()
            kills.append(round(delay, 3))
        where = f"seed {seed}, kills after {kills} s"
        for name, _, v1, _ in rounds[1:]:
            wait_for(lambda: v1_gone(stack, name, v1), timeout=150, interval=0.2,
                     what=f"{where}: {name} switched to v2")
    finally:
        for w in watches.values():
            w.stop()
        if stack.worker is None or stack.worker.poll() is not None:
            stack.start_worker()
    for name, group, _, _ in rounds[1:]:
        check_one_active_runtime(stack, name, group, watches[name], where)


def v1_gone(stack: Stack, name: str, v1: Obj) -> bool:
    """v2 is Active and Healthy, v1 Inactive with no runtime left."""
    found = active_and_inactive(stack, name)
    apps = client.AppsV1Api(stack.api)
    left = [d.metadata.name for d in apps.list_namespaced_deployment(NS).items
            if (d.spec.selector.match_labels or {}).get("pkg.crossplane.io/provider") == name]
    healthy = stack.conditions("Provider", name).get("Healthy", {}).get("status") == "True"
    return bool(found and found[1]["metadata"]["uid"] == v1["metadata"]["uid"] and healthy
                and left == [found[0]["metadata"]["name"]])


def check_one_active_runtime(stack: Stack, name: str, group: str, watched: Runtimes,
                             where: str) -> None:
    revs = stack.revisions("Provider", name)
    active = [r for r in revs if r["spec"]["desiredState"] == "Active"]
    assert len(active) == 1, f"{where}: {name}: {[r['metadata']['name'] for r in revs]}"
    dep = client.AppsV1Api(stack.api).read_namespaced_deployment(
        active[0]["metadata"]["name"], NS)
    assert _available(dep), f"{where}: {name}: the active runtime is not Available"
    assert controller_uid(stack, f"gadgets.{group}") == active[0]["metadata"]["uid"], where
    assert watched.least >= 1, f"{where}: {name} had no Available runtime: {watched.events}"
