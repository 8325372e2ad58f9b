"""The operator CLI end to end (issue 10): ``python -m lockwright install | activate | trace
| history`` run as an operator runs them, against the session's stack (its kubeconfig and
Temporal settings in the environment, stdout not a terminal, so plain text).

- ``install --wait`` of a good Provider exits 0 after printing its steps; ``history``
  then shows those steps with durations, and ``-o json`` the same as data;
- ``install --wait`` of a package that fails lint exits 1 as soon as the workflow settles,
  printing the condition's message; of a tag not pushed yet, 1 when ``--timeout`` runs
  out, printing the retrying condition; an existing name is refused;
- ``activate`` approves a Manual package's revision and prints who approved it and when;
  a revision the workflow does not know is refused with its reason; ``history`` names the
  approval and its sender;
- ``trace`` of a Configuration with a dependency draws package → revision → dependency →
  its revision → runtime Deployment, and ``-o json`` gives the same tree as data. The
  dependency lives in repositories of this test only, so the shared Lock is no obstacle.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from lockwright import contracts as c
from tests.e2e.test_dependencies import Repos, dep
from tests.e2e.test_failures import provider_dir, push_unlinted, unique_group
from tests.fixtures.stack import ROOT, Stack
from tests.helpers import unique

DURATION = re.compile(r"\s\d+(ms|\.\d\ds)\s")


def lockwright(stack: Stack, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m lockwright ARGS`` with the stack's settings in the environment."""
    return subprocess.run([sys.executable, "-m", "lockwright", *args], env=stack.env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def output(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


def test_install_wait_of_a_good_provider_then_its_history(stack: Stack, tmp_path: Path) -> None:
    repo = unique("cli")
    ref = stack.push(provider_dir(tmp_path / "p", unique_group()), repo=repo)
    done = lockwright(stack, "install", "provider", ref, "--wait", "--timeout", "60s")
    assert done.returncode == 0, output(done)
    # The name defaults as Crossplane's: the repository path as a DNS label.
    assert done.stdout.startswith(f"provider/{repo} created\n"), output(done)
    assert "fetch_package" in done.stdout and "ensure_runtime" in done.stdout, output(done)
    assert f"provider/{repo} is installed and healthy" in done.stdout, output(done)
    assert stack.conditions("Provider", repo)["Healthy"]["status"] == "True"
    again = lockwright(stack, "install", "provider", ref)
    assert again.returncode == 1 and "already exists" in again.stderr, output(again)

    history = lockwright(stack, "history", f"provider/{repo}")
    assert history.returncode == 0, output(history)
    lines = history.stdout.splitlines()
    # The stack's Temporal suggests continuing as new after a few events: one table per run.
    wid = c.package_workflow_id(c.PROVIDER, repo, stack.task_queue)  # the stack's queue
    assert lines[0].startswith(f"{wid} (PackageWorkflow) run "), lines[0]
    assert lines[1].split() == ["AT", "STEP", "TOOK", "TRIES", "RESULT", "DETAILS"]
    [fetch] = [x for x in lines if " fetch_package" in x]
    assert DURATION.search(fetch) and " ok " in fetch, fetch
    assert any("InstallRevision (child)" in x for x in lines), history.stdout
    assert re.search(r"^\d+ steps, 0 retries, ", history.stdout, re.MULTILINE), history.stdout
    data = json.loads(lockwright(stack, "history", f"provider/{repo}", "-o", "json").stdout)
    assert data["runs"][0]["workflow_type"] == "PackageWorkflow"
    [child] = data["children"].values()
    assert "fetch_package" in [s["name"] for s in child["steps"]]


def test_install_wait_of_a_lint_failure_exits_1_with_the_condition(stack: Stack,
                                                                   tmp_path: Path) -> None:
    group = unique_group()
    composition = {"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
                   "metadata": {"name": f"xthings.{group}"},
                   "spec": {"compositeTypeRef": {"apiVersion": f"{group}/v1alpha1",
                                                 "kind": "XThing"}, "pipeline": []}}
    ref = push_unlinted(stack, provider_dir(tmp_path / "p", group, extra=[composition]))
    name = unique("lint")
    done = lockwright(stack, "install", "provider", ref, "--name", name, "--wait",
                      "--timeout", "60s")
    assert done.returncode == 1, output(done)
    assert f"error: provider/{name} failed: Installed=False UnpackingPackage: " in done.stderr
    assert "linting package contents failed" in done.stderr, output(done)


def test_install_wait_of_a_missing_tag_times_out_with_the_condition(stack: Stack) -> None:
    missing = f"{stack.registry_host}/{unique('absent')}:v9.9.9"
    name = unique("absent")
    done = lockwright(stack, "install", "provider", missing, "--name", name, "--wait",
                      "--timeout", "4s")
    assert done.returncode == 1, output(done)
    assert f"error: provider/{name} not healthy within 4.00s: Installed=False " \
        "UnpackingPackage: cannot unpack package: " in done.stderr, output(done)
    assert "v9.9.9" in done.stderr and "(retrying in" in done.stderr, output(done)


def test_activate_a_manual_revision_says_who_and_history_shows_it(stack: Stack,
                                                                  tmp_path: Path) -> None:
    ref = stack.push(provider_dir(tmp_path / "p", unique_group()))
    name = unique("manual")
    done = lockwright(stack, "install", "provider", ref, "--name", name, "--manual-activation",
                      "--wait", "--timeout", "60s")
    assert done.returncode == 0, output(done)
    revision = (stack.get_package("Provider", name) or {})["status"]["currentRevision"]
    assert f"approve it with: lockwright approve provider/{name} {revision}" in done.stdout

    refused = lockwright(stack, "activate", f"provider/{name}", f"{name}-000000000000")
    assert refused.returncode == 1 and "unknown revision" in refused.stderr, output(refused)
    approved = lockwright(stack, "approve", f"provider/{name}")  # activate: older name
    assert approved.returncode == 0, output(approved)
    first, second = approved.stdout.splitlines()
    assert first == f"provider/{name}: revision {revision} is active", approved.stdout
    assert re.fullmatch(rf"Activation of {revision} approved by \S+@\S+ at \S+ \(update\)",
                        second), second
    stack.wait_healthy("Provider", name)

    history = lockwright(stack, "history", f"provider/{name}").stdout
    who = second.split(" approved by ")[1].split(" at ")[0]
    assert f"approval: update activate_revision of {revision} by {who} at " in history, history
    assert f"approval on record: record the approval of {revision}: approved by {who}" \
        in history, history


def test_trace_of_a_configuration_with_a_dependency(stack: Stack, tmp_path: Path) -> None:
    repos = Repos(stack, tmp_path)
    repos.push("Provider", "provider-dep", "v1.0.0")
    ref = repos.push("Configuration", "config-top", "v1.0.0",
                     [dep("Provider", repos.repo("provider-dep"), ">=v1.0.0")])
    name, provider = unique("cfg"), repos.package_name("provider-dep")
    done = lockwright(stack, "install", "configuration", ref, "--name", name, "--wait",
                      "--timeout", "90s")
    assert done.returncode == 0, output(done)
    stack.wait_healthy("Provider", provider)

    traced = lockwright(stack, "trace", f"configuration/{name}")
    assert traced.returncode == 0, output(traced)
    lines = traced.stdout.splitlines()
    names = [line[:lines[0].index("VERSION")].rstrip() for line in lines]
    assert names[:2] == ["NAME", f"Configuration/{name}"], traced.stdout
    assert names[2].startswith(f"├─ ConfigurationRevision/{name}-"), traced.stdout
    assert names[3] == f"└─ Provider/{provider}", traced.stdout
    assert names[4].startswith(f"   └─ ProviderRevision/{provider}-"), traced.stdout
    assert re.fullmatch(r"      └─ Deployment/\S+ \(crossplane-system\)", names[5]), names
    assert lines[1].split()[1:5] == ["v1.0.0", "True", "True", "-"], lines[1]

    tree = json.loads(lockwright(stack, "trace", f"configuration/{name}", "-o", "json").stdout)
    assert [c["kind"] for c in tree["children"]] == ["ConfigurationRevision", "Provider"]
    runtime = tree["children"][1]["children"][0]["children"]
    assert [(x["kind"], x["healthy"]) for x in runtime] == [("Deployment", "True")]
    missing = lockwright(stack, "trace", f"configuration/{unique('none')}")
    assert missing.returncode == 1 and "not found" in missing.stderr, output(missing)
