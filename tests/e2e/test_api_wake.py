"""A package waiting on an API wakes when a CRD serving it appears (issue 23).

A Configuration whose ``lockwright.dev/requires-apis`` names an API nobody serves waits,
its revision saying ``cannot resolve package dependencies``; it used to be looked at
again only at the next unhealthy recheck (300 s) or resync (600 s). The watcher now
signals it when a CRD that may serve the API is added or written, so ``kubectl apply`` of
the CRD makes it Healthy within seconds, as does activating the Inactive MRD that defines it
(its CRD appears). The module's stack keeps production timings on
either cluster (worker Tuning, watcher resync), so only that signal can make it in time.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockwright.contracts import Tuning
from lockwright.identity.names import REQUIRES_APIS
from tests.e2e.packages import crd
from tests.e2e.test_mrd_activation import AWAITING, policy, provider
from tests.fixtures.stack import Stack, running_stack
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kube_shows(
    "a CRD kube-apiserver establishes waking the package that waits on its API")

#: Well under the production unhealthy recheck (and the watcher's resync).
WAKE_DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def wake_stack(registry: Any, auth_registry: Any, temporal_env: Any,
               cluster_kind: str) -> Iterator[Stack]:
    """A stack of its own with production timings; no package index configured."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind,
                       production_timings=True) as s:
        yield s


def push_configuration(stack: Stack, name: str, requires: str) -> str:
    """Push a Configuration requiring the APIs ``requires``; its reference."""
    with tempfile.TemporaryDirectory(dir=stack.state) as tmp:
        meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Configuration",
                "metadata": {"name": name, "annotations": {REQUIRES_APIS: requires}},
                "spec": {}}
        (Path(tmp) / "crossplane.yaml").write_text(yaml.safe_dump(meta))
        return stack.push(Path(tmp), repo=f"wake/{name}", tag="v1.0.0")


def waiting(stack: Stack, name: str, why: str) -> None:
    """Wait until the Configuration is Installed and not Healthy for want of an API."""
    text = f"cannot resolve package dependencies: {why}"

    def met() -> bool:
        conds = stack.conditions("Configuration", name)
        return (conds.get("Installed", {}).get("status") == "True"
                and text in conds.get("Healthy", {}).get("message", ""))
    wait_for(met, timeout=120, interval=0.2, what=f"Configuration {name} waiting: {why}")


@pytest.mark.parametrize("form", ["plural", "kind"])
def test_a_configuration_waiting_on_an_api_is_healthy_soon_after_its_crd_is_applied(
        wake_stack: Stack, form: str) -> None:
    s = wake_stack
    assert Tuning().unhealthy_recheck_s >= 5 * WAKE_DEADLINE_S  # production's recheck
    assert "unhealthy_recheck_s" not in s.tuning and s.resync_seconds == "600"
    group = f"{unique('wake')}.example.org"
    api = f"things.{group}/v1alpha1" if form == "plural" else f"Thing.{group}/v1alpha1"
    config = unique("cfg")
    s.apply_package("Configuration", config, push_configuration(s, unique("needs"), api))
    waiting(s, config, f"API {api} is not served")
    applied = time.monotonic()
    s.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(crd(group, "Thing")))
    s.wait_healthy("Configuration", config, timeout=WAKE_DEADLINE_S)
    assert time.monotonic() - applied < WAKE_DEADLINE_S


def test_a_configuration_waiting_on_an_inactive_mrds_kind_is_healthy_soon_after_activation(
        wake_stack: Stack, tmp_path: Path) -> None:
    s = wake_stack
    group, prov = f"{unique('mrd')}.example.org", unique("safe")
    s.apply_package("Provider", prov, provider(s, tmp_path, group, 1,
                                               capabilities=["safe-start"]))
    s.wait_conditions("Provider", prov, {"Installed": ("True", "ActivePackageRevision"),
                                         "Healthy": ("True", AWAITING)}, timeout=120)
    api, mrd = f"Thing00.{group}/v1alpha1", f"thing00s.{group}"
    config = unique("cfg")
    s.apply_package("Configuration", config, push_configuration(s, unique("needs-mrd"), api))
    waiting(s, config, f"API {api} is defined by ManagedResourceDefinition {mrd} of Provider ")
    applied = time.monotonic()
    s.kubectl("apply", "-f", "-", stdin=policy(unique("mrap"), mrd))
    s.wait_healthy("Configuration", config, timeout=WAKE_DEADLINE_S)
    assert time.monotonic() - applied < WAKE_DEADLINE_S
