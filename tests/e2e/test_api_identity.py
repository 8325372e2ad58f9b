"""``lockwright api`` across two clusters (issue 23), as an operator runs it.

Two stacks of this module's own (``api diff`` compares whole clusters, so no other test's
packages may be in them), one kubeconfig with a context for each. The same provider
installed on both: ``api diff`` exits 0 and each cluster's ``api sum`` verifies against
the other. Then cluster B moves, through ``kubectl``-style package edits the watcher sees:

- to a runtime-only patch release (same CRDs, another controller image): a controller
  difference only, in ``diff`` and in ``verify`` of A's sum;
- to a release adding an optional field: a definition difference naming the type and
  ``spec.color: added (compatible)``;

and ``api verify -f`` fails only for the manifests whose type differs (written against A's
digest) or is missing, while a built-in kind and an unannotated object pass.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockwright.identity import names
from tests.e2e.packages import crd
from tests.e2e.test_upgrade import GOOD_IMAGE, upgrade_to, wait_active
from tests.fixtures.stack import ROOT, Stack, running_stack
from tests.helpers import unique, wait_for

KUBE = pytest.mark.kube_shows(
    "the CRDs as kube-apiserver stores them, defaults included, giving each type's identity")

Obj = dict[str, Any]
SIZE = {"size": {"type": "integer"}}


@pytest.fixture(scope="module")
def clusters(registry: Any, auth_registry: Any, temporal_env: Any,
             cluster_kind: str) -> Iterator[tuple[Stack, Stack]]:
    """Two stacks of this module's own."""
    with running_stack(registry, auth_registry, temporal_env, kind=cluster_kind) as a, \
            running_stack(registry, auth_registry, temporal_env, kind=cluster_kind) as b:
        yield a, b


def merged_kubeconfig(a: Stack, b: Stack, path: Path) -> str:
    """One kubeconfig with contexts ``a`` and ``b`` (each stack's admin)."""
    merged: Obj = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [],
                   "contexts": [], "current-context": "a"}
    for name, stack in (("a", a), ("b", b)):
        config = yaml.safe_load(Path(stack.cluster.kubeconfig).read_text())
        merged["clusters"].append({"name": name, "cluster": config["clusters"][0]["cluster"]})
        merged["users"].append({"name": name, "user": config["users"][0]["user"]})
        merged["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    path.write_text(yaml.safe_dump(merged))
    return str(path)


def api(stack: Stack, *args: str, stdin: str | None = None,
        kubeconfig: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m lockwright api ARGS`` with the stack's settings in the environment."""
    env = {**stack.env, **({"KUBECONFIG": kubeconfig} if kubeconfig else {})}
    return subprocess.run([sys.executable, "-m", "lockwright", "api", *args], env=env,
                          cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120,
                          check=False)


def output(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


def widget_provider(stack: Stack, tmp: Path, group: str, repo: str, tag: str,
                    props: Obj) -> str:
    """A provider serving ``widgets.<group>/v1`` with ``props`` under spec; pushed."""
    root = tmp / unique(tag)
    root.mkdir()
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": f"provider-{group.split('.')[0]}"},
            "spec": {"controller": {"image": GOOD_IMAGE.format(tag=tag)}}}
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "objects.yaml").write_text(yaml.safe_dump(
        crd(group, "Widget", schema=schema, version="v1")))
    return stack.push(root, repo=repo, tag=tag)


def move(stack: Stack, name: str, ref: str) -> None:
    """Point the package at ``ref`` and wait until its new revision is Active."""
    before = {r["metadata"]["name"] for r in stack.revisions("Provider", name)}
    upgrade_to(stack, name, ref)
    new = wait_for(lambda: [r["metadata"]["name"] for r in stack.revisions("Provider", name)
                            if r["metadata"]["name"] not in before], timeout=60,
                   what=f"a new revision of {name}")
    wait_active(stack, name, new[0])


def history_id(stack: Stack, name: str) -> str:
    """The workflow id ``lockwright history`` reads for ``provider/name`` on ``stack``."""
    done = subprocess.run([sys.executable, "-m", "lockwright", "history", f"provider/{name}"],
                          env=stack.env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, output(done)
    return done.stdout.split(" ", 1)[0]


def served_digest(stack: Stack, key: str) -> str:
    """The type digest ``api sum`` prints for ``group/version Kind``."""
    done = api(stack, "sum")
    assert done.returncode == 0, output(done)
    [line] = [x for x in done.stdout.splitlines() if x.startswith(key + " ")]
    return line.split()[2]


@KUBE
def test_two_clusters_same_then_controller_then_definition_and_manifests(
        clusters: tuple[Stack, Stack], tmp_path: Path) -> None:
    a, b = clusters
    config = merged_kubeconfig(a, b, tmp_path / "both.kubeconfig")
    group, repo = f"{unique('w')}.api.example.org", unique("prov")
    # One name on both clusters: they share one Temporal namespace, each on its own task
    # queue, and each cluster's package workflow is its own (its id ends in the queue).
    name = unique("widgets")
    key = f"{group}/v1 Widget"
    v1 = widget_provider(a, tmp_path, group, repo, "v1.0.0", SIZE)
    a.apply_package("Provider", name, v1)
    b.apply_package("Provider", name, v1)
    a.wait_healthy("Provider", name)
    b.wait_healthy("Provider", name)
    for stack in (a, b):
        assert history_id(stack, name) == f"package:provider:{name}:{stack.task_queue}"

    same = api(a, "diff", "a", "b", kubeconfig=config)
    assert same.returncode == 0, output(same)
    assert same.stdout.strip() == "a and b serve the same types", output(same)
    listed = api(a, "list")
    assert listed.returncode == 0, output(listed)
    [row] = [x.split() for x in listed.stdout.splitlines() if x.startswith(group + " ")]
    assert row[:4] == [group, "v1", "Widget", f"provider/{name}"] and row[-1] == "Active", row
    # The install recorded the type digest; lockwright's own CRDs have none: live.
    assert row[5].startswith("sha256:"), row
    own = [x.split() for x in listed.stdout.splitlines() if x.startswith("pkg.crossplane.io ")
           and x.split()[2] == "Provider"]
    assert own and all(r[5].startswith("live:sha256:") and r[3] == "-"
                       and r[-1] == "Established" for r in own), own
    summed = api(a, "sum")
    assert summed.returncode == 0 and key in summed.stdout, output(summed)
    (tmp_path / "a.sum").write_text(summed.stdout)
    for stack in (a, b):
        verified = api(stack, "verify", str(tmp_path / "a.sum"))
        assert verified.returncode == 0, output(verified)

    # A runtime-only patch release on B: a controller difference, and nothing else.
    move(b, name, widget_provider(a, tmp_path, group, repo, "v1.0.1", SIZE))
    patched = api(a, "diff", "a", "b", kubeconfig=config)
    assert patched.returncode == 1, output(patched)
    [line] = patched.stdout.splitlines()
    assert line.startswith(f"{key}: controller differs (a sha256:"), output(patched)
    assert f"(provider/{name}), b sha256:" in line and line.count(f"(provider/{name})") == 2, line
    against_a = api(b, "verify", str(tmp_path / "a.sum"))
    assert against_a.returncode == 1, output(against_a)
    [line] = against_a.stdout.splitlines()
    assert line.startswith(f"{key}: controller differs (sum sha256:"), output(against_a)

    # A release adding an optional field on B: a definition difference, explained.
    written_against = served_digest(a, key)
    move(b, name, widget_provider(a, tmp_path, group, repo, "v1.1.0",
                                  {**SIZE, "color": {"type": "string"}}))
    added = api(a, "diff", "a", "b", kubeconfig=config)
    assert added.returncode == 1, output(added)
    lines = added.stdout.splitlines()
    assert lines[0].startswith(f"{key}: definition differs, compatible (a "), output(added)
    assert lines[1] == "  spec.color: added (compatible)", output(added)
    assert lines[2].startswith(f"{key}: controller differs"), output(added)
    assert len(lines) == 3, output(added)
    # Two kubeconfig files name the clusters as well as two contexts do.
    by_file = api(a, "diff", a.cluster.kubeconfig, b.cluster.kubeconfig)
    assert by_file.returncode == 1, output(by_file)
    assert by_file.stdout.splitlines()[:2] == [
        lines[0].replace("(a ", f"({a.cluster.kubeconfig} ").replace(
            ", b ", f", {b.cluster.kubeconfig} "), lines[1]], output(by_file)

    manifests = write_manifests(tmp_path / "manifests", group, written_against)
    on_a = api(a, "verify", "-f", str(manifests))
    assert on_a.returncode == 1, output(on_a)
    assert [x.split()[1] for x in on_a.stdout.splitlines()] == ["Gadget/g"], output(on_a)
    assert ": missing: the cluster does not serve this type" in on_a.stdout, output(on_a)
    on_b = api(b, "verify", "-f", str(manifests))
    assert on_b.returncode == 1, output(on_b)
    assert [x.split()[1] for x in on_b.stdout.splitlines()] == ["Widget/pinned", "Gadget/g"], \
        output(on_b)
    assert f"differs: written against {written_against}, the cluster serves" in on_b.stdout
    plain = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "plain"}}
    fine = api(b, "verify", "-f", "-", stdin=yaml.safe_dump(plain))
    assert fine.returncode == 0 and "every type served as written" in fine.stdout, output(fine)


def write_manifests(root: Path, group: str, digest: str) -> Path:
    """A directory: a ConfigMap, a Widget written against ``digest`` and one not, in
    a.yaml; a Gadget of a type no cluster serves in b.yaml."""
    root.mkdir()
    pinned = {"apiVersion": f"{group}/v1", "kind": "Widget",
              "metadata": {"name": "pinned", "annotations": {names.WRITTEN_AGAINST: digest}}}
    plain = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "plain"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    (root / "a.yaml").write_text(yaml.safe_dump_all([config, plain, pinned]))
    gadget = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    (root / "b.yaml").write_text(yaml.safe_dump(gadget))
    return root


def test_usage_errors_and_a_bad_sum_file_exit_2_naming_the_line(
        clusters: tuple[Stack, Stack], tmp_path: Path) -> None:
    a, _ = clusters
    bad = tmp_path / "bad.sum"
    bad.write_text("# made by hand\nexample.org/v1 Widget sha256:abc -\n")
    done = api(a, "verify", str(bad))
    assert done.returncode == 2, output(done)
    assert done.stderr.startswith(f"error: {bad}:2: bad type digest: a sum line is "), \
        output(done)
    neither = api(a, "verify")
    assert neither.returncode == 2 and "give a sum FILE or -f MANIFESTS" in neither.stderr
