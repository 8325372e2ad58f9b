"""``trace -o yaml|dot`` and when ``--watch --exit-healthy`` stops (commands.traceout,
commands.trace).

Matrix: the YAML is the JSON tree; the DOT graph numbers rows breadth first as Crossplane's
does, labels them with its fields, joins each to its parent, escapes quotes, and Graphviz's
``dot -Tsvg`` draws it (installed by scripts/setup.sh); the watch stops only when every
package (dependencies, missing ones included) is Installed and Healthy; ``--exit-healthy``
without ``--watch`` is refused. The watch loop over snapshots handed out in turn: a
drawing per change (a repeat is not drawn), exit 0 once healthy or once the package is
deleted, 1 when it is not there; YAML drawings are separate documents.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace

import pytest
import yaml

from lockwright.commands import main, trace
from lockwright.commands.common import PackageRef
from lockwright.commands.traceout import all_healthy, as_dot, as_yaml, label
from lockwright.commands.tree import Node, Snapshot, as_json, build
from tests.unit.test_commands_trace import REG, platform


def tree() -> Node:
    root = build(platform(), "Configuration", "platform")
    assert root is not None
    return root


def test_yaml_is_the_json_tree() -> None:
    assert yaml.safe_load(as_yaml(tree())) == json.loads(json.dumps(as_json(tree())))


def test_dot_numbers_rows_breadth_first_and_joins_each_to_its_parent() -> None:
    lines = as_dot(tree()).splitlines()
    assert lines[0] == "graph  {" and lines[-1] == "}"
    nodes = [line for line in lines if "[label=" in line]
    edges = [line.strip() for line in lines if "--" in line]
    # platform; its two revisions and provider-x; provider-x's revision; its Deployment.
    assert len(nodes) == 6 and edges == ["n1--n2;", "n1--n3;", "n1--n4;", "n4--n5;", "n5--n6;"]
    assert nodes[0] == (
        '\tn1[label="Name: platform\\nApiVersion: pkg.crossplane.io/v1\\nPackage: '
        f'{REG}/platform\\nVersion: v1.0.0\\nInstalled: True\\nHealthy: True\\n'
        'Status: HealthyPackageRevision\\n",penwidth="2"];')
    assert "Name: Deployment/acme-provider-x-ba9876543210\\nApiVersion: apps/v1\\n" \
        "Namespace: crossplane-system\\n" in nodes[5]


def test_dot_label_escapes_quotes_and_backslashes() -> None:
    node = replace(tree(), message='cannot pull "x"\\y')
    assert 'Message: cannot pull "x"\\y\n' in label(node)
    assert 'Message: cannot pull \\"x\\"\\\\y\\n' in as_dot(replace(node, children=()))


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz: scripts/setup.sh")
def test_graphviz_draws_the_dot_output() -> None:
    node = replace(tree(), message='a "quoted" message\nover two lines')
    drawn = subprocess.run(["dot", "-Tsvg"], input=as_dot(node), capture_output=True,
                           text=True, check=False, timeout=30)
    assert drawn.returncode == 0, drawn.stderr
    # Six nodes, each row's fields a line of text (Graphviz writes "-" as "&#45;").
    assert "<svg" in drawn.stdout and "<title>n6</title>" in drawn.stdout
    assert ">ApiVersion: apps/v1</text>" in drawn.stdout, drawn.stdout


def test_all_healthy_needs_every_package_installed_and_healthy() -> None:
    assert all_healthy(tree())
    snapshot = platform()
    snapshot.packages[1]["status"]["conditions"][1]["status"] = "Unknown"
    dependency_unhealthy = build(snapshot, "Configuration", "platform")
    assert dependency_unhealthy is not None and not all_healthy(dependency_unhealthy)
    snapshot = platform()
    del snapshot.packages[1]
    missing = build(snapshot, "Configuration", "platform")
    assert missing is not None and not all_healthy(missing)


def test_a_runtime_does_not_hold_the_exit_its_package_says_healthy() -> None:
    """Revisions and Deployments count through their package's Healthy."""
    snapshot = platform()
    snapshot.revisions[0]["status"]["conditions"][0]["status"] = "False"  # an old one
    root = build(snapshot, "Configuration", "platform")
    assert root is not None and all_healthy(root)


def test_exit_healthy_needs_watch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["trace", "provider/x", "--exit-healthy"]) == 2
    assert "--exit-healthy needs --watch" in capsys.readouterr().err


# --- the watch loop, over snapshots a stand-in for the cluster hands out in turn ----------
def unhealthy() -> Snapshot:
    snapshot = platform()
    snapshot.packages[1]["status"]["conditions"][1]["status"] = "False"
    return snapshot


def watched(monkeypatch: pytest.MonkeyPatch, snapshots: list[Snapshot | None],
            exit_healthy: bool = True, output: str | None = None) -> int:
    """``trace.watch`` of Configuration ``platform`` reading ``snapshots`` one per turn
    (None: the package is gone), not waiting between turns."""
    turns = iter(snapshots)

    def read(kube: object, namespace: str) -> Snapshot:
        got = next(turns)
        return got if got is not None else Snapshot()

    monkeypatch.setattr(trace, "snapshot", read)
    monkeypatch.setattr(trace, "WATCH_INTERVAL_S", 0.0)
    return trace.watch(object(), "crossplane-system",
                       PackageRef("configuration", "platform"), output, exit_healthy)


def test_watch_draws_each_change_once_and_exits_0_once_healthy(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert watched(monkeypatch, [unhealthy(), unhealthy(), platform()]) == 0
    out = capsys.readouterr().out
    # Two drawings (the repeat is not drawn again), the last with provider-x Healthy.
    assert out.count("NAME ") == 2, out
    first, last = out.split("NAME ")[1:]
    assert provider_row(first)[2:4] == ["True", "False"], first  # INSTALLED, HEALTHY
    assert provider_row(last)[2:4] == ["True", "True"], last


def provider_row(drawing: str) -> list[str]:
    return next(line.split()[1:] for line in drawing.splitlines()
                if "Provider/acme-provider-x" in line)


def test_watch_without_exit_healthy_ends_when_the_package_is_deleted(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert watched(monkeypatch, [platform(), platform(), None], exit_healthy=False,
                   output="yaml") == 0
    out, err = capsys.readouterr()
    assert len(list(yaml.safe_load_all(out))) == 1, out  # the repeat is not drawn again
    assert err == "configuration/platform was deleted\n"


def test_watch_of_a_package_that_is_not_there_exits_1(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert watched(monkeypatch, [None]) == 1
    assert capsys.readouterr().err == "error: configuration/platform not found\n"


def test_watch_of_yaml_separates_documents(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert watched(monkeypatch, [unhealthy(), platform()], output="yaml") == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["children"][2]["healthy"] for d in documents] == ["False", "True"]
