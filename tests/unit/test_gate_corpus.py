"""The gate's corpus report (issue 31) over the committed sample of real provider releases.

``tests/data/gate_corpus/sample.json`` holds CRD pairs from consecutive release tags of
crossplane-contrib's providers, cut to the fields that changed, each with its origin and
the changes the whole CRDs showed; ``summary.json`` is the report over every pair of the
corpus (tags, commits, counts). Both are written by ``scripts/gate_corpus.py``. Then the
script itself, over a small git repository made here.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockwright.upgrade import gate
from lockwright.upgrade.corpus import Tally, changes_of

Obj = dict[str, Any]
DATA = Path(__file__).parents[1] / "data" / "gate_corpus"
SCRIPT = Path(__file__).parents[2] / "scripts" / "gate_corpus.py"
SAMPLE: list[Obj] = json.loads((DATA / "sample.json").read_text())["pairs"]
SUMMARY: Obj = json.loads((DATA / "summary.json").read_text())


def test_the_sample_has_no_unclassified_change_and_its_counts() -> None:
    tally = Tally()
    for pair in SAMPLE:
        tally.pairs += 1
        tally.add_crd(pair["old"], pair["new"])
    assert tally.verdicts[gate.UNCLASSIFIED] == 0
    assert (tally.pairs, dict(tally.verdicts)) == (len(SAMPLE), EXPECTED)


EXPECTED = {gate.COMPATIBLE: 18, gate.CHECKED: 31, gate.BREAKING: 8, gate.UNCLASSIFIED: 0}


@pytest.mark.parametrize("pair", SAMPLE, ids=[f"{p['repo'].split('/')[1]}-{p['from']}-"
                                              f"{p['to']}-{p['crd']}" for p in SAMPLE])
def test_each_sampled_pair_finds_what_its_release_showed(pair: Obj) -> None:
    found = [[gate.verdict_of(c), c.kind, c.version, c.path]
             for c in changes_of(pair["old"], pair["new"])]
    assert found == pair["changes"]
    assert pair["from"] in SUMMARY_TAGS[pair["repo"]] and pair["to"] in SUMMARY_TAGS[pair["repo"]]


SUMMARY_TAGS = {r["repo"]: r["tags"] for r in SUMMARY["repos"]}


def test_the_corpus_report_says_where_each_count_came_from() -> None:
    assert SUMMARY["verdicts"][gate.UNCLASSIFIED] == 0
    assert SUMMARY["pairs"] == sum(r["pairs"] for r in SUMMARY["repos"])
    for name in ("compatible", "checked against live resources", "breaking"):
        assert SUMMARY["verdicts"][name] == sum(r["verdicts"][name] for r in SUMMARY["repos"])
    assert (SUMMARY["pairs"], SUMMARY["crds"]) == (348, 6630)
    assert SUMMARY["verdicts"] == {gate.COMPATIBLE: 2104, gate.CHECKED: 3713, gate.BREAKING: 41,
                                   gate.UNCLASSIFIED: 0}
    for repo in SUMMARY["repos"]:
        assert repo["repo"].startswith("crossplane-contrib/provider-")
        assert sorted(repo["commits"]) == sorted(repo["tags"]), repo["repo"]
        assert all(len(c) == 40 for c in repo["commits"].values())


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("gate_corpus", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _release(repo: Path, tag: str, files: dict[str, Obj]) -> None:
    crds = repo / "package" / "crds"
    for old in crds.glob("*.yaml"):
        old.unlink()
    crds.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (crds / name).write_text(yaml.safe_dump(body))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", tag], check=True)
    subprocess.run([*git, "tag", tag], check=True)


def _widgets(conditions: Obj, api: str = "apiextensions.k8s.io/v1") -> Obj:
    schema = {"type": "object", "properties": {"status": {"type": "object", "properties": {
        "conditions": conditions}}}}
    spec: Obj = {"group": "x.io", "scope": "Cluster",
                 "names": {"kind": "Widget", "plural": "widgets"}}
    if api.endswith("v1beta1"):  # the CRD-wide schema of apiextensions v1beta1
        spec |= {"version": "v1", "validation": {"openAPIV3Schema": schema}}
    else:
        spec["versions"] = [{"name": "v1", "served": True, "storage": True,
                             "schema": {"openAPIV3Schema": schema}}]
    return {"apiVersion": api, "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.x.io"}, "spec": spec}


def test_the_script_compares_consecutive_release_tags_of_a_repository(tmp_path: Path) -> None:
    repo = tmp_path / "provider-x"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    items = {"type": "object", "required": ["type"],
             "properties": {"type": {"type": "string"}}}
    listed = {"type": "array", "items": items}
    _release(repo, "v0.1.0", {"w.yaml": _widgets(listed, "apiextensions.k8s.io/v1beta1")})
    _release(repo, "v0.2.0-rc.0", {"w.yaml": _widgets({"type": "string"})})  # skipped
    _release(repo, "v0.2.0", {"w.yaml": _widgets(listed)})
    _release(repo, "v0.10.0", {"w.yaml": _widgets(
        {**listed, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})})
    out = tmp_path / "summary.json"
    assert _script().main([str(repo / ".git"), "--json", str(out), "--jobs", "1"]) == 0
    summary = json.loads(out.read_text())
    [origin] = summary["repos"]
    assert origin["tags"] == ["v0.1.0", "v0.2.0", "v0.10.0"] and origin["pairs"] == 2
    # v0.1.0 -> v0.2.0 is the same schema once v1beta1 is read as v1: nothing to report
    assert summary["kinds"] == {f"{gate.CHECKED}/list-type-tightened": 1}
