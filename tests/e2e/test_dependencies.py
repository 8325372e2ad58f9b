"""Dependencies resolved, installed and explained over the whole graph (issue 9), end to end.

Everything goes through the cluster: packages are applied and read back with the Kubernetes
API and kubectl, the watcher signals the workflows. The Lock is a cluster-wide singleton,
so this module runs on a stack of its own; each test uses repositories of its own.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from lockwright import contracts as c
from tests.e2e.packages import crd
from tests.e2e.test_failures import write_pull_secret
from tests.fixtures.registry import RegistryServer
from tests.fixtures.stack import PKG_GROUP, PLURALS, Stack, running_stack
from tests.helpers import unique, wait_for

Obj = dict[str, Any]
PKG = "pkg.crossplane.io/v1"
META_API = "meta.pkg.crossplane.io/v1"


@pytest.fixture(scope="module")
def deps(registry: Any, auth_registry: Any, temporal_env: Any,
         cluster_kind: str) -> Iterator[Stack]:
    """A stack of its own: its Lock holds only this module's packages."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind) as s:
        yield s


# --- packages --------------------------------------------------------------------------
class Repos:
    """Repositories of one test: ``<registry>/<unique namespace>/<name>``."""

    def __init__(self, stack: Stack, tmp: Path, host: str = "") -> None:
        self.stack, self.tmp = stack, tmp
        self.host = host or stack.registry_host
        self.ns = f"deps-{uuid.uuid4().hex[:6]}"

    def repo(self, name: str) -> str:
        return f"{self.host}/{self.ns}/{name}"

    def package_name(self, name: str) -> str:
        """The name Crossplane gives a dependency it installs (ToDNSLabel of the path)."""
        return f"{self.ns}-{name}"

    def push(self, kind: str, name: str, tag: str, depends_on: list[Obj] | None = None,
             to: RegistryServer | None = None, group: str = "") -> str:
        """Build and push ``kind`` package ``name`` at ``tag``; returns the reference.

        A Provider ships one CRD, in ``group`` (default: one of its own).
        """
        root = self.tmp / unique(name)
        root.mkdir(parents=True)
        spec: Obj = {"dependsOn": depends_on} if depends_on else {}
        # The tag in an annotation gives every version a digest of its own.
        meta = {"apiVersion": META_API, "kind": kind,
                "metadata": {"name": name, "annotations": {"example.org/version": tag}},
                "spec": spec}
        (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
        if kind == "Provider":
            group = group or f"{name}.{self.ns}.example.org"
            (root / "crds.yaml").write_text(yaml.safe_dump(crd(group, "Thing")))
        return self.stack.push(root, repo=f"{self.ns}/{name}", tag=tag, to=to)

    def versions(self, kind: str, name: str, *tags: str) -> str:
        """Push ``tags`` of a package without dependencies; returns its repository."""
        for tag in tags:
            self.push(kind, name, tag)
        return self.repo(name)


def dep(kind: str, package: str, version: str) -> Obj:
    return {"apiVersion": PKG, "kind": kind, "package": package, "version": version}


def digest_of(ref: str) -> str:
    from lockwright.oci.client import RegistryClient
    from lockwright.oci.reference import parse

    host = ref.split("/", 1)[0]
    return RegistryClient(insecure=[host]).resolve(parse(ref))


# --- cluster reads ---------------------------------------------------------------------
def lock(stack: Stack) -> Obj:
    found: Obj = stack.custom.get_cluster_custom_object(PKG_GROUP, "v1beta1", "locks", "lock")
    return found


def resolved(stack: Stack) -> Obj:
    return next((x for x in (lock(stack).get("status") or {}).get("conditions") or []
                 if x["type"] == "Resolved"), {})


def packages_of(stack: Stack, kind: str, repo: str) -> list[Obj]:
    """Package objects of ``kind`` whose spec.package is in ``repo``."""
    items = stack.custom.list_cluster_custom_object(PKG_GROUP, "v1", PLURALS[kind])["items"]
    return [p for p in items if p["spec"]["package"].startswith(repo + ":")
            or p["spec"]["package"].startswith(repo + "@")]


def revision(stack: Stack, kind: str, name: str) -> Obj:
    [rev] = [r for r in stack.revisions(kind, name) if r["spec"]["desiredState"] == "Active"]
    return rev


def dependency_counts(stack: Stack, kind: str, name: str) -> tuple[int, int, int]:
    status = revision(stack, kind, name).get("status") or {}
    return (status.get("foundDependencies", 0), status.get("installedDependencies", 0),
            status.get("invalidDependencies", 0))


def waiting_on_dependencies(stack: Stack, kind: str, name: str, text: str,
                            timeout: float = 60) -> str:
    """Wait until the package is Installed but unhealthy with ``text`` in the message."""
    return stack.wait_unhealthy_saying(kind, name, text, timeout,
                                       context=lambda: f"lock {resolved(stack)}")


class HealthWatch:
    """A watch of one package's Healthy condition, every status it showed, in order."""

    def __init__(self, stack: Stack, kind: str, name: str) -> None:
        self.api = client.CustomObjectsApi(stack.api)
        self.plural, self.name = PLURALS[kind], name
        self.seen: list[tuple[str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for event in watch.Watch().stream(
                    self.api.list_cluster_custom_object, PKG_GROUP, "v1", self.plural,
                    field_selector=f"metadata.name={self.name}", timeout_seconds=1):
                conds = (event["object"].get("status") or {}).get("conditions") or []
                for x in conds:
                    if x["type"] == "Healthy" and (not self.seen or self.seen[-1] != (
                            x["status"], x.get("message", ""))):
                        self.seen.append((x["status"], x.get("message", "")))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


async def applied_changes(stack: Stack) -> list[list[Obj]]:
    """The ``changes`` of every ``apply_resolution`` the resolver scheduled, in every run."""
    tc = await Client.connect(stack.temporal_address)
    wid = c.resolve_workflow_id(stack.task_queue)
    out = []
    async for run in tc.list_workflows(f"WorkflowId = '{wid}'"):
        history = await tc.get_workflow_handle(wid, run_id=run.run_id).fetch_history()
        for event in history.events:
            if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                continue
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == c.APPLY_RESOLUTION:
                out.append(json.loads(attrs.input.payloads[0].data)["changes"])
    return out


# --- the tests -------------------------------------------------------------------------
def test_missing_provider_and_function_installed_at_the_highest_satisfying_tag(
        deps: Stack, tmp_path: Path) -> None:
    r = Repos(deps, tmp_path)
    provider = r.versions("Provider", "provider-a", "v1.0.0", "v1.5.0", "v2.0.0", "v1")
    function = r.versions("Function", "function-b", "v0.1.0", "v0.1.3", "v0.2.0")
    ref = r.push("Configuration", "config-c", "v1.0.0", [
        dep("Provider", provider, ">=v1.0.0, <v2.0.0"), dep("Function", function, "^v0.1")])
    name = unique("cfg")
    seen = HealthWatch(deps, "Configuration", name)
    try:
        deps.apply_package("Configuration", name, ref)
        deps.wait_healthy("Configuration", name, timeout=120)
    finally:
        seen.stop()

    [p] = packages_of(deps, "Provider", provider)
    [f] = packages_of(deps, "Function", function)
    assert (p["metadata"]["name"], p["spec"]["package"]) == (
        r.package_name("provider-a"), f"{provider}:v1.5.0")
    assert (f["metadata"]["name"], f["spec"]["package"]) == (
        r.package_name("function-b"), f"{function}:v0.1.3")
    assert "ownerReferences" not in p["metadata"] and "ownerReferences" not in f["metadata"]
    deps.wait_healthy("Provider", p["metadata"]["name"])
    deps.wait_healthy("Function", f["metadata"]["name"])
    assert dependency_counts(deps, "Configuration", name) == (2, 2, 0)
    # Healthy only after the dependencies were installed: it said why it waited first.
    assert seen.seen[-1] == ("True", "")
    assert any(s == "False" and "missing dependencies" in m for s, m in seen.seen), seen.seen
    assert resolved(deps)["status"] == "True"
    assert resolved(deps)["reason"] == "DependencyResolutionSucceeded"
    printed = deps.kubectl("get", "configurationrevisions", revision(
        deps, "Configuration", name)["metadata"]["name"]).stdout
    assert "DEP-INSTALLED" in printed

    # Deleting the Configuration never deletes its dependencies.
    deps.kubectl("delete", "configuration", name, "--timeout=60s")
    assert packages_of(deps, "Provider", provider) and packages_of(deps, "Function", function)
    sources = {e["source"] for e in lock(deps)["packages"]}
    assert {provider, function} <= sources
    wait_for(lambda: all(e["source"] != ref.rpartition(":")[0]
                         for e in lock(deps)["packages"]), timeout=30,
             what="the Configuration's Lock entry removed")
    assert packages_of(deps, "Provider", provider) and packages_of(deps, "Function", function)


async def test_transitive_chain_and_digest_pin_created_in_one_resolution(
        deps: Stack, tmp_path: Path) -> None:
    r = Repos(deps, tmp_path)
    leaf = r.versions("Provider", "provider-leaf", "v0.1.0", "v0.2.0")
    middle = r.repo("config-middle")
    r.push("Configuration", "config-middle", "v1.0.0", [dep("Provider", leaf, ">=v0.1.0")])
    pinned = r.push("Function", "function-pinned", "v0.1.0")
    r.push("Function", "function-pinned", "v0.2.0")  # newer, but the pin is what counts
    digest = digest_of(pinned)
    function = r.repo("function-pinned")
    top = r.push("Configuration", "config-top", "v1.0.0", [
        dep("Configuration", middle, ">=v1.0.0"), dep("Function", function, digest)])
    name = unique("top")
    deps.apply_package("Configuration", name, top)
    deps.wait_healthy("Configuration", name, timeout=120)

    [m] = packages_of(deps, "Configuration", middle)
    [lf] = packages_of(deps, "Provider", leaf)
    [fn] = packages_of(deps, "Function", function)
    assert m["spec"]["package"] == f"{middle}:v1.0.0"
    assert lf["spec"]["package"] == f"{leaf}:v0.2.0"
    assert fn["spec"]["package"] == f"{function}@{digest}"
    deps.wait_healthy("Configuration", m["metadata"]["name"])
    assert dependency_counts(deps, "Configuration", name) == (3, 3, 0)  # transitive counted
    together = [{ch["package"] for ch in changes} for changes in await applied_changes(deps)]
    want = {f"{middle}:v1.0.0", f"{leaf}:v0.2.0", f"{function}@{digest}"}
    assert any(want <= one for one in together), together  # one resolution, all three


def test_two_parents_whose_ranges_meet_below_the_newest_tag(deps: Stack, tmp_path: Path) -> None:
    """Greedy (Crossplane) would install v2.0.0 for the first parent and strand the second."""
    r = Repos(deps, tmp_path)
    shared = r.versions("Provider", "provider-shared", "v1.0.0", "v1.5.0", "v2.0.0")
    other = r.repo("config-other")
    r.push("Configuration", "config-other", "v1.0.0", [dep("Provider", shared, "<v2.0.0")])
    top = r.push("Configuration", "config-first", "v1.0.0", [
        dep("Provider", shared, ">=v1.0.0"), dep("Configuration", other, ">=v1.0.0")])
    name = unique("pair")
    deps.apply_package("Configuration", name, top)
    deps.wait_healthy("Configuration", name, timeout=120)
    [p] = packages_of(deps, "Provider", shared)
    assert p["spec"]["package"] == f"{shared}:v1.5.0"
    [o] = packages_of(deps, "Configuration", other)
    deps.wait_healthy("Configuration", o["metadata"]["name"])
    assert dependency_counts(deps, "Configuration", o["metadata"]["name"]) == (1, 1, 0)


def test_unsatisfiable_and_cyclic_explained_and_an_unrelated_package_unaffected(
        deps: Stack, tmp_path: Path) -> None:
    r = Repos(deps, tmp_path)
    old = r.versions("Provider", "provider-old", "v1.0.0", "v2.0.0")
    broken = r.push("Configuration", "config-broken", "v1.0.0",
                    [dep("Provider", old, ">=v3.0.0")])
    cycle_b = r.repo("config-cycle-b")
    cycle_a = r.push("Configuration", "config-cycle-a", "v1.0.0",
                     [dep("Configuration", cycle_b, ">=v1.0.0")])
    r.push("Configuration", "config-cycle-b", "v1.0.0",
           [dep("Configuration", cycle_a.rpartition(":")[0], ">=v1.0.0")])
    fine = r.versions("Function", "function-fine", "v1.0.0")
    unrelated = r.push("Configuration", "config-unrelated", "v1.0.0",
                       [dep("Function", fine, ">=v1.0.0")])
    names = {"broken": unique("broken"), "cycle": unique("cycle"), "fine": unique("fine")}
    for key, ref in (("broken", broken), ("cycle", cycle_a), ("fine", unrelated)):
        deps.apply_package("Configuration", names[key], ref)
    try:
        deps.wait_healthy("Configuration", names["fine"], timeout=120)
        message = waiting_on_dependencies(deps, "Configuration", names["broken"],
                                          f"no version of {old} satisfies")
        assert ">=v3.0.0" in message and "v1.0.0, v2.0.0" in message, message
        cyclic = waiting_on_dependencies(deps, "Configuration", names["cycle"], "cycle")
        assert cycle_b in cyclic and cycle_a.rpartition(":")[0] in cyclic, cyclic
        lock_says = resolved(deps)
        assert (lock_says["status"], lock_says["reason"]) == (
            "False", "DependencyResolutionFailed")
        assert lock_says["message"].startswith("Error occurred during dependency resolution ")
        assert f"no version of {old}" in lock_says["message"]
        assert packages_of(deps, "Provider", old) == []  # nothing created for them
        assert packages_of(deps, "Configuration", cycle_b) == []
        assert packages_of(deps, "Function", fine)
    finally:
        for key in ("broken", "cycle"):
            deps.kubectl("delete", "configuration", names[key], "--timeout=60s")
    wait_for(lambda: resolved(deps).get("status") == "True", timeout=60,
             what="the Lock resolved again once the broken packages are gone")


def test_installed_dependency_at_an_invalid_version_reported_then_moved_up_and_down(
        deps: Stack, tmp_path: Path) -> None:
    r = Repos(deps, tmp_path)
    up = r.versions("Provider", "provider-up", "v1.0.0", "v2.0.0", "v2.1.0", "v3.0.0")
    mine = unique("mine")
    deps.apply_package("Provider", mine, f"{up}:v1.0.0")
    deps.wait_healthy("Provider", mine)
    needs_up = r.push("Configuration", "config-needs-up", "v1.0.0",
                      [dep("Provider", up, ">=v2.0.0, <v3.0.0")])
    name = unique("needsup")
    try:
        deps.apply_package("Configuration", name, needs_up)
        waiting_on_dependencies(deps, "Configuration", name,
                                f"existing package {up}@v1.0.0 is incompatible with "
                                "constraint >=v2.0.0, <v3.0.0")
        assert dependency_counts(deps, "Configuration", name) == (1, 1, 1)
        wait_for(lambda: "LOCKWRIGHT_DEPENDENCY_UPGRADES" in resolved(deps).get("message", ""),
                 timeout=60, what="the Lock naming the setting that would move it")
        assert deps.get_package("Provider", mine)["spec"]["package"] == f"{up}:v1.0.0"

        deps.restart_worker(LOCKWRIGHT_DEPENDENCY_UPGRADES="true")
        deps.wait_healthy("Configuration", name, timeout=120)
        # Moved to the lowest version every dependent accepts, through an upgrade.
        assert deps.get_package("Provider", mine)["spec"]["package"] == f"{up}:v2.0.0"
        deps.wait_healthy("Provider", mine)

        down = r.versions("Provider", "provider-down", "v1.0.0", "v2.0.0", "v3.0.0")
        theirs = unique("theirs")
        deps.apply_package("Provider", theirs, f"{down}:v3.0.0")
        deps.wait_healthy("Provider", theirs)
        needs_down = r.push("Configuration", "config-needs-down", "v1.0.0",
                            [dep("Provider", down, "<=v2.0.0")])
        below = unique("needsdown")
        deps.apply_package("Configuration", below, needs_down)
        waiting_on_dependencies(deps, "Configuration", below, "incompatible")
        wait_for(lambda: "LOCKWRIGHT_DEPENDENCY_DOWNGRADES" in resolved(deps).get(
            "message", ""), timeout=60, what="the Lock naming the downgrade setting")
        deps.restart_worker(LOCKWRIGHT_DEPENDENCY_DOWNGRADES="true")
        deps.wait_healthy("Configuration", below, timeout=120)
        assert deps.get_package("Provider", theirs)["spec"]["package"] == f"{down}:v2.0.0"
    finally:
        deps.restart_worker(LOCKWRIGHT_DEPENDENCY_UPGRADES="false",
                            LOCKWRIGHT_DEPENDENCY_DOWNGRADES="false")


def test_private_dependency_pulled_with_an_imageconfig_pull_secret(
        deps: Stack, auth_registry: RegistryServer, tmp_path: Path) -> None:
    private = Repos(deps, tmp_path / "private", host=auth_registry.host)
    private.push("Function", "function-private", "v0.3.0", to=auth_registry)
    secret, config = unique("pull"), unique("private")
    write_pull_secret(deps, secret, auth_registry, str(auth_registry.password))
    deps.custom.create_cluster_custom_object(PKG_GROUP, "v1beta1", "imageconfigs", {
        "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
        "metadata": {"name": config},
        "spec": {"matchImages": [{"type": "Prefix", "prefix": f"{auth_registry.host}/"}],
                 "registry": {"authentication": {"pullSecretRef": {"name": secret}}}}})
    try:
        function = private.repo("function-private")
        ref = Repos(deps, tmp_path / "public").push(
            "Configuration", "config-private", "v1.0.0", [dep("Function", function, ">=v0.1.0")])
        name = unique("priv")
        deps.apply_package("Configuration", name, ref)
        deps.wait_healthy("Configuration", name, timeout=120)
        [fn] = packages_of(deps, "Function", function)
        assert fn["spec"]["package"] == f"{function}:v0.3.0"
        assert "packagePullSecrets" not in fn["spec"]  # the ImageConfig supplies it
        deps.wait_healthy("Function", fn["metadata"]["name"])
    finally:
        deps.custom.delete_cluster_custom_object(PKG_GROUP, "v1beta1", "imageconfigs", config)


def test_upgrade_to_a_version_with_a_new_dependency_waits_for_it_in_the_switch(
        deps: Stack, tmp_path: Path) -> None:
    """v2 enters the Lock at the switch; the resolver installs what it needs meanwhile."""
    r = Repos(deps, tmp_path)
    v1 = r.push("Configuration", "config-grows", "v1.0.0")
    function = r.versions("Function", "function-new", "v0.1.0")
    v2 = r.push("Configuration", "config-grows", "v2.0.0",
                [dep("Function", function, ">=v0.1.0")])
    name = unique("grows")
    deps.apply_package("Configuration", name, v1)
    deps.wait_healthy("Configuration", name)
    deps.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "configurations", name,
                                            {"spec": {"package": v2}})

    def switched() -> bool:
        pkg = deps.get_package("Configuration", name) or {}
        healthy = deps.conditions("Configuration", name).get("Healthy", {})
        return (pkg.get("status") or {}).get("currentIdentifier") == v2 and (
            healthy.get("status") == "True") and (
            revision(deps, "Configuration", name)["spec"]["image"] == v2)
    try:
        wait_for(switched, timeout=120, interval=0.2, what="the switch to v2")
    except AssertionError as exc:
        revs = [(r["spec"], r.get("status")) for r in deps.revisions("Configuration", name)]
        log = [ln for ln in deps.log("worker").splitlines() if name in ln or "resolve" in ln]
        raise AssertionError(f"{exc}; revisions {revs}; log " + "\n".join(log[-60:])) from exc
    [fn] = packages_of(deps, "Function", function)
    assert fn["spec"]["package"] == f"{function}:v0.1.0"
    assert dependency_counts(deps, "Configuration", name) == (1, 1, 0)


def test_skip_dependency_resolution_still_loses_a_claimed_object(
        deps: Stack, tmp_path: Path) -> None:
    """Leaving resolution out must not leave the Lock out: exactly one package wins a CRD."""
    r = Repos(deps, tmp_path)
    group = f"shared.{r.ns}.example.org"
    first = r.push("Provider", "provider-first", "v1.0.0", group=group)
    second = r.push("Provider", "provider-second", "v1.0.0", group=group,
                    depends_on=[dep("Provider", r.repo("provider-nowhere"), ">=v1.0.0")])
    winner, loser = unique("winner"), unique("skipper")
    deps.apply_package("Provider", winner, first)
    deps.wait_healthy("Provider", winner)
    deps.apply_package("Provider", loser, second, skipDependencyResolution=True)
    message = wait_for(lambda: next((x.get("message", "") for x in deps.conditions(
        "Provider", loser).values() if "already controlled by" in x.get("message", "")),
        None), timeout=60, interval=0.2, what="the skipping package to lose the CRD")
    assert winner in message, message
    crd_owner = client.ApiextensionsV1Api(deps.api).read_custom_resource_definition(
        f"things.{group}").metadata.owner_references
    assert [o.name for o in crd_owner if o.controller] == [
        revision(deps, "Provider", winner)["metadata"]["name"]]
    # Its dependencies stay out of the Lock and of resolution: nothing is installed.
    assert packages_of(deps, "Provider", r.repo("provider-nowhere")) == []
    assert all(not e.get("dependencies") for e in lock(deps)["packages"]
               if e["source"] == second.rpartition(":")[0])


# --- parity with Crossplane (issue 22) ---------------------------------------------------
def test_digest_pinned_dependency_moves_to_the_digest_its_dependent_now_pins(
        deps: Stack, tmp_path: Path) -> None:
    r = Repos(deps, tmp_path)
    provider = r.repo("provider-pinned")
    old, new = (digest_of(r.push("Provider", "provider-pinned", tag)) for tag in
                ("v1.0.0", "v2.0.0"))
    v1 = r.push("Configuration", "config-pins", "v1.0.0", [dep("Provider", provider, old)])
    v2 = r.push("Configuration", "config-pins", "v2.0.0", [dep("Provider", provider, new)])
    name = unique("pins")
    deps.restart_worker(LOCKWRIGHT_DEPENDENCY_UPGRADES="true")
    try:
        deps.apply_package("Configuration", name, v1)
        deps.wait_healthy("Configuration", name, timeout=120)
        [p] = packages_of(deps, "Provider", provider)
        assert p["spec"]["package"] == f"{provider}@{old}"
        deps.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "configurations", name,
                                                {"spec": {"package": v2}})
        moved = wait_for(lambda: (deps.get_package("Provider", p["metadata"]["name"]) or {})
                         .get("spec", {}).get("package") == f"{provider}@{new}" or None,
                         timeout=120, interval=0.2, what="the provider moved to the new digest")
        assert moved
        wait_for(lambda: [e["version"] for e in lock(deps)["packages"]
                          if e["source"] == provider] == [new] or None, timeout=120,
                 interval=0.2, what="the provider's revision at the new digest in the Lock")
        deps.wait_healthy("Provider", p["metadata"]["name"], timeout=120)
        wait_for(lambda: revision(deps, "Configuration", name)["spec"]["image"] == v2 or None,
                 timeout=120, interval=0.2, what="the Configuration switched to v2")
        wait_for(lambda: dependency_counts(deps, "Configuration", name) == (1, 1, 0) or None,
                 timeout=120, interval=0.2, what="v2's dependency met")
        deps.wait_healthy("Configuration", name, timeout=120)
    finally:
        deps.restart_worker(LOCKWRIGHT_DEPENDENCY_UPGRADES="false")


def test_unsatisfiable_graph_installs_what_it_can_and_names_the_conflict(
        deps: Stack, tmp_path: Path) -> None:
    """top asks the provider >=v2 and config-mid; config-mid asks it <v2. As Crossplane
    does, everything is installed (the provider at the version top asks for), and
    config-mid, whose constraint stays unmet, says why."""
    r = Repos(deps, tmp_path)
    provider = r.versions("Provider", "provider-split", "v1.0.0", "v2.0.0")
    function = r.versions("Function", "function-free", "v0.1.0")
    mid = r.repo("config-mid")
    r.push("Configuration", "config-mid", "v1.0.0", [dep("Provider", provider, "<v2.0.0")])
    top = r.push("Configuration", "config-top", "v1.0.0", [
        dep("Configuration", mid, ">=v1.0.0"), dep("Provider", provider, ">=v2.0.0"),
        dep("Function", function, ">=v0.1.0")])
    name = unique("top")
    deps.apply_package("Configuration", name, top)
    mid_name = r.package_name("config-mid")
    try:
        deps.wait_healthy("Configuration", name, timeout=120)
        [p] = packages_of(deps, "Provider", provider)
        [m] = packages_of(deps, "Configuration", mid)
        [f] = packages_of(deps, "Function", function)
        assert (p["spec"]["package"], m["spec"]["package"], f["spec"]["package"]) == (
            f"{provider}:v2.0.0", f"{mid}:v1.0.0", f"{function}:v0.1.0")
        deps.wait_healthy("Provider", p["metadata"]["name"])
        deps.wait_healthy("Function", f["metadata"]["name"])
        top_rev = revision(deps, "Configuration", name)["metadata"]["name"]
        message = waiting_on_dependencies(deps, "Configuration", mid_name,
                                          f"no version of {provider} satisfies", timeout=120)
        mid_rev = revision(deps, "Configuration", mid_name)["metadata"]["name"]
        assert (f"existing package {provider}@v2.0.0 is incompatible with constraint <v2.0.0"
                in message), message
        asks = sorted([f"{top_rev} asks {provider} >=v2.0.0", f"{mid_rev} asks {provider} <v2.0.0"])
        assert (f"no version of {provider} satisfies every constraint: {', '.join(asks)}; "
                "installed v2.0.0; tags: v1.0.0, v2.0.0") in message, message
        assert dependency_counts(deps, "Configuration", mid_name) == (1, 1, 1)
        lock_says = resolved(deps)
        assert (lock_says["status"], lock_says["reason"]) == ("False",
                                                              "DependencyResolutionFailed")
        assert f"no version of {provider} satisfies" in lock_says["message"]
    finally:
        for gone in (name, mid_name):
            deps.kubectl("delete", "configuration", gone, "--timeout=60s",
                         "--ignore-not-found")
    resolved_again(deps, "once the conflicting packages are gone")


def test_missing_repository_explained_naming_who_asks(deps: Stack, tmp_path: Path) -> None:
    r = Repos(deps, tmp_path)
    nowhere = r.repo("provider-never-pushed")
    ref = r.push("Configuration", "config-lost", "v1.0.0",
                 [dep("Provider", nowhere, ">=v1.0.0")])
    name = unique("lost")
    deps.apply_package("Configuration", name, ref)
    try:
        message = waiting_on_dependencies(deps, "Configuration", name,
                                          f"cannot list tags of {nowhere}")
        rev = revision(deps, "Configuration", name)["metadata"]["name"]
        assert (f"cannot list tags of {nowhere} ({rev} asks {nowhere} >=v1.0.0): {nowhere} "
                f"not found: registry {deps.registry_host} answered 404 to GET for {nowhere} "
                "(NAME_UNKNOWN)") in message, message
        assert ":latest" not in message
        assert packages_of(deps, "Provider", nowhere) == []
    finally:
        deps.kubectl("delete", "configuration", name, "--timeout=60s")
    resolved_again(deps, "once the package is gone")


def resolved_again(stack: Stack, when: str) -> None:
    """Wait for ``Resolved=True``; on a timeout, say what the Lock and the resolver said."""
    try:
        wait_for(lambda: resolved(stack).get("status") == "True", timeout=60,
                 what=f"the Lock resolved again {when}")
    except AssertionError as exc:
        entries = [(e["name"], e["source"], e["version"]) for e in lock(stack)["packages"]]
        log = [ln for ln in stack.log("worker").splitlines()
               if "resolve" in ln or "Resolve" in ln]
        raise AssertionError(f"{exc}; lock {resolved(stack)} {entries}; log "
                             + "\n".join(log[-40:])) from exc
