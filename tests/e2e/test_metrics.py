"""The worker's Prometheus metrics and JSON log lines (issue 10), end to end.

The worker runs with ``LOCKWRIGHT_METRICS_ADDRESS`` on a stack of its own; each test
scrapes ``/metrics`` before and after what it does and asserts on the difference, so the
tests do not depend on each other's order. The worker's stderr is a file, not a
terminal, so it logs JSON: each test also reads the lines its install produced.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lockwright import contracts as c
from lockwright.contracts import metrics as m
from tests.e2e.packages import composition
from tests.e2e.test_dependencies import Repos, dep, waiting_on_dependencies
from tests.e2e.test_failures import provider_dir, push_unlinted, unique_group
from tests.fixtures.stack import PKG_GROUP, ROOT, Stack, running_stack
from tests.helpers import free_port, unique, wait_for

Obj = dict[str, Any]
Sample = tuple[str, dict[str, str], float]
_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+"
                     r"(?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass
class Metered:
    """A stack whose worker serves metrics at ``url``."""

    stack: Stack
    url: str

    def scrape(self) -> list[Sample]:
        with urllib.request.urlopen(self.url, timeout=10) as response:
            return parse(response.read().decode())


@pytest.fixture(scope="module")
def metered(registry: Any, auth_registry: Any, temporal_env: Any,
            cluster_kind: str) -> Iterator[Metered]:
    """A stack of its own whose worker serves metrics on a free port."""
    address = f"127.0.0.1:{free_port()}"
    with contextlib.ExitStack() as running:
        # running_stack starts the worker at once, so the setting goes in the environment
        # it copies, for that start only; worker_env keeps it for any restart.
        with pytest.MonkeyPatch.context() as env:
            env.setenv("LOCKWRIGHT_METRICS_ADDRESS", address)
            stack = running.enter_context(running_stack(registry, auth_registry, temporal_env,
                                                             kind=cluster_kind))
        stack.worker_env["LOCKWRIGHT_METRICS_ADDRESS"] = address
        yield Metered(stack, f"http://{address}/metrics")


# --- reading metrics and logs ------------------------------------------------------------
def parse(text: str) -> list[Sample]:
    """Prometheus text exposition: (name, labels, value) of every sample."""
    out = []
    for line in text.splitlines():
        found = _SAMPLE.match(line)
        if found and not line.startswith("#"):
            labels = dict(_LABEL.findall(found["labels"] or ""))
            out.append((found["name"], labels, float(found["value"])))
    return out


def total(samples: list[Sample], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(value for n, have, value in samples
               if n == name and labels.items() <= have.items())


def grown(metered: Metered, before: list[Sample], name: str, **labels: str) -> float:
    """Wait until ``name`` (with ``labels``) has grown since ``before``; by how much."""
    def delta() -> float:
        return total(metered.scrape(), name, **labels) - total(before, name, **labels)

    return wait_for(delta, timeout=30, interval=0.2, what=f"{name} {labels} to grow")


def log_lines(stack: Stack, **fields: Any) -> list[Obj]:
    """The worker's JSON log lines carrying every one of ``fields``."""
    out = []
    for line in stack.log("worker").splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if isinstance(entry, dict) and fields.items() <= entry.items():
                out.append(entry)
    return out


def only_revision(stack: Stack, kind: str, name: str) -> str:
    [rev] = stack.revisions(kind, name)
    return str(rev["metadata"]["name"])


def provider(stack: Stack, tmp: Path, repo: str = "", tag: str = "v1.0.0",
             group: str = "") -> str:
    """A Provider with one CRD in ``group``; its runtime image names ``tag``."""
    root = provider_dir(tmp / unique("p"), group or unique_group(),
                        spec={"controller": {"image": f"registry.example.org/x:{tag}"}})
    return stack.push(root, repo=repo or unique("metered"), tag=tag)


# --- the tests -------------------------------------------------------------------------
def test_an_install_is_counted_beside_the_sdks_metrics(metered: Metered,
                                                       tmp_path: Path) -> None:
    stack, before = metered.stack, metered.scrape()
    name = unique("counted")
    stack.apply_package("Provider", name, provider(stack, tmp_path))
    stack.wait_healthy("Provider", name)

    assert grown(metered, before, m.INSTALLS_SUCCEEDED, kind=c.PROVIDER, mode=m.INSTALL) >= 1
    after = metered.scrape()
    assert total(after, m.INSTALLS_STARTED, kind=c.PROVIDER, mode=m.INSTALL) > total(
        before, m.INSTALLS_STARTED, kind=c.PROVIDER, mode=m.INSTALL)
    seconds = f"{m.INSTALL_DURATION}_count"
    assert total(after, seconds, kind=c.PROVIDER, outcome="succeeded") > total(
        before, seconds, kind=c.PROVIDER, outcome="succeeded")
    # The bucket overrides reached the exporter: 600 s is not one of the SDK's defaults.
    assert total(after, f"{m.INSTALL_DURATION}_bucket", le="600") >= 1
    # The SDK's own metrics, served on the same endpoint.
    assert grown(metered, before, "temporal_workflow_completed",
                 workflow_type="InstallRevision") >= 1
    assert total(after, "temporal_activity_execution_latency_count",
                 activity_type=c.FETCH_PACKAGE) >= 1

    rev = only_revision(stack, "Provider", name)
    [taken] = log_lines(stack, event="lock.taken", package=name)
    assert taken["workflow_id"] == c.revision_workflow_id(c.PROVIDER, rev, stack.task_queue)
    assert (taken["revision"], taken["activity"], taken["kind"]) == (
        rev, c.TAKE_LOCK, c.PROVIDER)
    assert taken["run_id"] and taken["level"] == "info"


def test_a_failed_install_is_counted_by_its_error(metered: Metered, tmp_path: Path) -> None:
    stack, before = metered.stack, metered.scrape()
    group = unique_group()
    ref = push_unlinted(stack, provider_dir(tmp_path / "p", group, extra=[composition(group)]))
    name = unique("refused")
    stack.apply_package("Provider", name, ref)
    stack.wait_conditions("Provider", name, {"Installed": ("False", "UnpackingPackage")})

    assert grown(metered, before, m.INSTALLS_FAILED, kind=c.PROVIDER, mode=m.INSTALL,
                 error_type="LintError") >= 1
    after = metered.scrape()
    assert total(after, m.INSTALLS_SUCCEEDED) == total(before, m.INSTALLS_SUCCEEDED)
    assert total(after, "temporal_workflow_failed", workflow_type="InstallRevision") > total(
        before, "temporal_workflow_failed", workflow_type="InstallRevision")

    rev = only_revision(stack, "Provider", name)
    failed = [x for x in log_lines(stack, package=name, revision=rev, level="warning")
              if x["event"].startswith("install failed")]
    assert failed, log_lines(stack, package=name)
    assert failed[0]["workflow_id"] == c.revision_workflow_id(c.PROVIDER, rev, stack.task_queue)
    assert failed[0]["run_id"] and failed[0]["workflow_type"] == "InstallRevision"


def test_an_upgrade_records_its_switch_over(metered: Metered, tmp_path: Path) -> None:
    stack, before = metered.stack, metered.scrape()
    repo, name, group = unique("upgraded"), unique("upgraded"), unique_group()
    stack.apply_package("Provider", name, provider(stack, tmp_path, repo, "v1.0.0", group))
    stack.wait_healthy("Provider", name)
    v2 = provider(stack, tmp_path, repo, "v2.0.0", group)
    stack.custom.patch_cluster_custom_object(PKG_GROUP, "v1", "providers", name,
                                             {"spec": {"package": v2}})

    def switched() -> bool:
        pkg = stack.get_package("Provider", name) or {}
        healthy = stack.conditions("Provider", name).get("Healthy", {}).get("status")
        return (pkg.get("status") or {}).get("currentIdentifier") == v2 and healthy == "True"

    wait_for(switched, timeout=90, interval=0.2, what=f"{name} switched to v2")
    assert grown(metered, before, f"{m.SWITCH_DURATION}_count", kind=c.PROVIDER,
                 outcome="finished") >= 1
    after = metered.scrape()
    for mode in (m.PREPARE, m.SWITCH):
        assert total(after, m.INSTALLS_SUCCEEDED, mode=mode) > total(
            before, m.INSTALLS_SUCCEEDED, mode=mode), mode


def test_a_dependency_without_a_solution_counts_a_failed_resolution(
        metered: Metered, tmp_path: Path) -> None:
    stack, before = metered.stack, metered.scrape()
    repos = Repos(stack, tmp_path)
    old = repos.versions("Provider", "provider-old", "v1.0.0")
    ref = repos.push("Configuration", "config-stuck", "v1.0.0",
                     [dep("Provider", old, ">=v3.0.0")])
    name = unique("stuck")
    stack.apply_package("Configuration", name, ref)
    try:
        waiting_on_dependencies(stack, "Configuration", name, f"no version of {old}")
        assert grown(metered, before, m.RESOLUTION_FAILURES, reason="unresolved") >= 1
    finally:
        stack.kubectl("delete", "configuration", name, "--timeout=60s")


def test_a_metrics_address_in_use_stops_the_worker_at_once() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        out = subprocess.run([sys.executable, "-m", "lockwright", "worker", "--no-bootstrap",
                              "--metrics-address", address], cwd=ROOT, capture_output=True,
                             text=True, timeout=60, check=False)
    assert out.returncode == 1, out.stderr
    assert f"--metrics-address / LOCKWRIGHT_METRICS_ADDRESS: cannot serve metrics on " \
           f"{address}" in out.stderr
    assert "Address already in use" in out.stderr

