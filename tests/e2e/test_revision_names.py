"""A revision per spec change, named as Crossplane's main branch names it (issue 31).

A revision is ``<package>-<12 hex of sha256(digest + "|" + generation)>``, so changing a
Provider's or a Function's ``runtimeConfigRef`` rolls a new revision through the switch:
health-gated, reverted when the new runtime never becomes available. Upgrading lockwright
from the commit before (which named revisions by digest) to this one switches no package
until its next spec change. Every step goes
through kubectl and the watcher.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from lockwright import names
from lockwright.upgrade.revisions import GENERATION_ANNOTATION
from tests.e2e.test_install import (
    PACKAGES,
    SIMULATE,
    allow_secrets,
    copy_package,
    manifest_digest,
    provider_root,
)
from tests.e2e.test_upgrade import Runtimes
from tests.fixtures.stack import PLURALS, ROOT, Stack, running_stack
from tests.helpers import unique, wait_for

NS = "crossplane-system"
# The pod annotation each runtime config of these tests writes: which one rendered it.
RENDERED_BY = "lockwright.test/runtime-config"
SWITCH_DEADLINE = "lockwright.dev/switch-deadline-seconds"
Obj = dict[str, Any]


def runtime_config(stack: Stack, broken: bool = False, replicas: int | None = None) -> str:
    """A DeploymentRuntimeConfig, applied with kubectl; ``broken``: its runtime never
    becomes available."""
    name = unique("drc")
    annotations = {RENDERED_BY: name, **({SIMULATE: "unavailable"} if broken else {})}
    spec: Obj = {"selector": {}, "template": {"metadata": {"annotations": annotations},
                                              "spec": {"containers": []}}}
    if replicas is not None:
        spec["replicas"] = replicas
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "DeploymentRuntimeConfig",
        "metadata": {"name": name}, "spec": {"deploymentTemplate": {"spec": spec}}}))
    return name


def push_package(stack: Stack, kind: str, tmp: Path) -> str:
    """The example Provider or Function, in an API group of its own."""
    if kind == "Provider":
        allow_secrets(stack)  # what the example provider asks for
        root, _ = provider_root(tmp)
    else:
        root = copy_package(PACKAGES / "function", tmp / "function",
                            {"shout.fn.example.org": f"{unique('f')}.fn.example.org"})
    return stack.push(root, repo=unique(kind.lower()))


def apply(stack: Stack, kind: str, name: str, ref: str, drc: str = "",
          annotations: dict[str, str] | None = None) -> None:
    """``kubectl apply`` of the package."""
    spec: Obj = {"package": ref, **({"runtimeConfigRef": {"name": drc}} if drc else {})}
    stack.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "pkg.crossplane.io/v1", "kind": kind,
        "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}))


def use_runtime_config(stack: Stack, kind: str, name: str, drc: str) -> None:
    stack.kubectl("patch", f"{PLURALS[kind]}.pkg.crossplane.io", name, "--type", "merge",
                  "-p", json.dumps({"spec": {"runtimeConfigRef": {"name": drc}}}))


def settled_on(stack: Stack, kind: str, name: str, revision: str) -> bool:
    """The switch to ``revision`` finished: the package's current revision, Healthy."""
    pkg = stack.get_package(kind, name) or {}
    healthy = stack.conditions(kind, name).get("Healthy", {}).get("status")
    return (pkg.get("status") or {}).get("currentRevision") == revision and healthy == "True"


def states(stack: Stack, kind: str, name: str) -> dict[str, str]:
    """Each revision of the package: its desired state."""
    return {r["metadata"]["name"]: r["spec"]["desiredState"]
            for r in stack.revisions(kind, name)}


def deployment(stack: Stack, name: str) -> Any:
    found = client.AppsV1Api(stack.api).list_namespaced_deployment(
        NS, field_selector=f"metadata.name={name}").items
    return found[0] if found else None


def available(dep: Any) -> bool:
    conditions = (dep.status.conditions if dep is not None and dep.status else None) or []
    return any(x.type == "Available" and x.status == "True" for x in conditions)


def rendered_by(dep: Any) -> str:
    return str((dep.spec.template.metadata.annotations or {}).get(RENDERED_BY, ""))


@pytest.mark.parametrize("kind", ["Provider", "Function"])
def test_a_runtime_config_change_rolls_a_new_revision(stack: Stack, tmp_path: Path,
                                                      kind: str) -> None:
    ref = push_package(stack, kind, tmp_path)
    first_config, name = runtime_config(stack), unique("rc")
    apply(stack, kind, name, ref, first_config)
    stack.wait_healthy(kind, name, timeout=120)
    digest = manifest_digest(stack, ref)
    first = names.revision_name(name, digest, 1)
    assert states(stack, kind, name) == {first: "Active"}
    assert rendered_by(deployment(stack, first)) == first_config

    second_config = runtime_config(stack)
    use_runtime_config(stack, kind, name, second_config)
    second = names.revision_name(name, digest, 2)  # same digest, the next generation
    wait_for(lambda: states(stack, kind, name) == {first: "Inactive", second: "Active"},
             timeout=120, interval=0.2, what="the new revision Active, the old Inactive")
    wait_for(lambda: settled_on(stack, kind, name, second), timeout=120, interval=0.2,
             what="the switch finished, Healthy")
    rev = next(r for r in stack.revisions(kind, name) if r["metadata"]["name"] == second)
    assert rev["spec"]["runtimeConfigRef"]["name"] == second_config
    assert rev["metadata"]["annotations"][GENERATION_ANNOTATION] == "2"
    assert rendered_by(deployment(stack, second)) == second_config
    wait_for(lambda: deployment(stack, first) is None, timeout=60, interval=0.2,
             what="the old runtime removed once the new one is healthy")


def test_a_runtime_config_that_breaks_the_runtime_is_reverted(stack: Stack,
                                                             tmp_path: Path) -> None:
    ref = push_package(stack, "Provider", tmp_path)
    name = unique("rcbad")
    apply(stack, "Provider", name, ref, annotations={SWITCH_DEADLINE: "5"})
    stack.wait_healthy("Provider", name, timeout=120)
    digest = manifest_digest(stack, ref)
    old, new = names.revision_name(name, digest, 1), names.revision_name(name, digest, 2)

    runtimes = Runtimes(stack, name)  # every change of the runtimes, as it happens
    try:
        use_runtime_config(stack, "Provider", name, runtime_config(stack, broken=True))

        def reverted() -> Obj | None:
            healthy = stack.conditions("Provider", name).get("Healthy", {})
            return healthy if f"reverted to {old}" in healthy.get("message", "") else None

        healthy = wait_for(reverted, timeout=150, interval=0.2, what="the switch reverted")
    finally:
        runtimes.stop()
    assert runtimes.least >= 1, runtimes.events  # never without an available runtime
    assert any(dep == new for _, dep, _ in runtimes.events)  # the new one was tried
    assert healthy is not None and healthy["status"] == "False"
    assert states(stack, "Provider", name) == {old: "Active", new: "Inactive"}
    assert available(deployment(stack, old))  # the old runtime kept running
    assert (stack.get_package("Provider", name) or {})["status"]["currentRevision"] == new


# main just before revisions were named by generation (the merge 85f1168): its worker
# and watcher name them by digest, as lockwright did until then.
PREVIOUS = "6860810ff8e257eaa836a5a57077cfc1a5a640c9"


@pytest.fixture(scope="module")
def previous_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree of :data:`PREVIOUS`, from this clone's history."""
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"],
                      capture_output=True, check=False).returncode:
        pytest.skip(f"this clone lacks commit {PREVIOUS[:12]} (a shallow clone?): "
                    "`git fetch --unshallow` brings it")
    tree = tmp_path_factory.mktemp("previous")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", PREVIOUS],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def test_upgrading_lockwright_across_the_naming_switches_no_package(
        registry: Any, auth_registry: Any, temporal_env: Any, cluster_kind: str,
        previous_code: Path, tmp_path: Path) -> None:
    """Installed by the previous commit's worker and watcher (naming revisions by digest),
    then both replaced by this checkout's, as a new image replaces them: the same revision
    stays, until the package's spec changes. A stack of its own: the previous worker must
    not meet the shared stack's workflows."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind,
                       code=previous_code) as stack:
        refs = {kind: push_package(stack, kind, tmp_path / kind)
                for kind in ("Provider", "Function")}
        pkgs = {kind: unique("old") for kind in refs}
        for kind, name in pkgs.items():
            apply(stack, kind, name, refs[kind])
        legacy = {kind: names.digest_revision_name(name, manifest_digest(stack, refs[kind]))
                  for kind, name in pkgs.items()}
        for kind, name in pkgs.items():
            stack.wait_healthy(kind, name, timeout=120)
            assert states(stack, kind, name) == {legacy[kind]: "Active"}

        # Upgrading lockwright replaces the worker and the watcher (one image): the new
        # watcher's first list signals every package (no resync is waited for).
        stack.code = ROOT
        stack.restart_worker()
        stack.restart_watcher()
        for kind, name in pkgs.items():
            # Each package looks again under the new worker: its pass keeps the revision
            # and records it.
            wait_for(lambda: _recorded(stack, kind, name, legacy[kind]) == "1", timeout=90,
                     interval=0.2, what=f"{kind} {name}: its revision kept at generation 1")
            assert states(stack, kind, name) == {legacy[kind]: "Active"}  # no new revision
            stack.wait_healthy(kind, name)
            assert available(deployment(stack, legacy[kind]))  # the same runtime runs on

        kind, name = "Provider", pkgs["Provider"]
        use_runtime_config(stack, kind, name, runtime_config(stack))
        new = names.revision_name(name, manifest_digest(stack, refs[kind]), 2)
        wait_for(lambda: states(stack, kind, name) == {legacy[kind]: "Inactive",
                                                       new: "Active"},
                 timeout=120, interval=0.2, what="the next spec change: a revision by generation")
        wait_for(lambda: settled_on(stack, kind, name, new), timeout=120, interval=0.2,
                 what="the switch finished, Healthy")


def _recorded(stack: Stack, kind: str, name: str, revision: str) -> str | None:
    """The generation ``revision`` is recorded for, or None."""
    rev = next((r for r in stack.revisions(kind, name) if r["metadata"]["name"] == revision),
               {})
    return ((rev.get("metadata") or {}).get("annotations") or {}).get(GENERATION_ANNOTATION)
