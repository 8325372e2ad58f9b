"""A CRD edited by hand after its install (issue 30): ``api verify`` and ``api list`` read
the live definition, not the recorded annotation.

A Provider is installed through the watcher; its types verify against their own sum. Then
the managed resource's CRD has a field's type changed with ``kubectl edit`` (its editor a
script that changes the file and saves), its ``lockwright.dev/type-digest`` annotation left
alone:
``api verify`` of the sum taken before exits 1 naming the type as edited with the recorded
and the live digest, ``api list`` shows both digests and the state ``Active,edited``, the
sum line is ``edited:sha256:...``, and the ProviderConfig type nobody edited still matches.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lockwright.identity import names
from lockwright.identity.digest import type_digest
from tests.e2e.test_api_identity import api, output
from tests.e2e.test_api_identity_record import Release, annotation, kubectl_json
from tests.fixtures.stack import Stack

pytestmark = pytest.mark.kube_shows("kubectl edit of a CRD kube-apiserver serves")

EDIT = """\
import sys, yaml
path = sys.argv[-1]
crd = yaml.safe_load(open(path))
schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
schema["properties"]["spec"]["properties"]["size"]["type"] = "string"
yaml.safe_dump(crd, open(path, "w"))
"""


def editor(tmp: Path) -> str:
    """A ``KUBE_EDITOR`` that changes the Gadget's ``spec.size`` from integer to string in
    the file ``kubectl edit`` opens, as a person at the editor would, and saves it."""
    script = tmp / "edit.py"
    script.write_text(EDIT)
    return f"{sys.executable} {script}"


def short(digest: str) -> str:
    """How ``api list`` prints a digest: its ``sha256:`` and 12 hex."""
    head, _, hexes = digest.rpartition(":")
    return f"{head}:{hexes[:12]}"


def test_a_crd_edited_by_hand_fails_verify_and_lists_both_digests(
        stack: Stack, tmp_path: Path) -> None:
    release = Release(stack, tmp_path)
    ref, _, shipped = release.push("v1.0.0", "v1")
    release.install(ref)
    gadgets, config = (f"{release.group}/v1alpha1 {k}" for k in ("Gadget", "ProviderConfig"))
    before = api(stack, "sum")
    assert before.returncode == 0, output(before)
    mine = [line for line in before.stdout.splitlines() if line.startswith(release.group)]
    assert [line.split()[2] for line in mine] == [type_digest(o) for o in shipped], mine
    (tmp_path / "before.sum").write_text("\n".join(mine) + "\n")
    clean = api(stack, "verify", str(tmp_path / "before.sum"), "--ignore-extra")
    assert clean.returncode == 0, output(clean)

    crd = f"gadgets.{release.group}"
    stack.kubectl("edit", "crd", crd, env={"KUBE_EDITOR": editor(tmp_path)})
    live = kubectl_json(stack, "crd", crd)
    recorded = annotation(live, names.TYPE_DIGEST)
    assert recorded == type_digest(shipped[0])  # the annotation was left alone
    edited = type_digest(live)

    failed = api(stack, "verify", str(tmp_path / "before.sum"), "--ignore-extra")
    assert failed.returncode == 1, output(failed)
    assert failed.stdout.splitlines()[0].startswith(
        f"{gadgets}: edited (the install recorded {recorded}, the live definition is "
        f"{edited})"), output(failed)
    assert config not in failed.stdout, output(failed)

    listed = api(stack, "list")
    assert listed.returncode == 0, output(listed)
    [row] = [line.split() for line in listed.stdout.splitlines()
             if line.startswith(f"{release.group} ") and " Gadget " in line]
    assert row[5:7] == [short(recorded), short("live:" + edited)], row
    assert row[-1] == "Active,edited", row
    rows = json.loads(api(stack, "list", "-o", "json").stdout)
    [data] = [r for r in rows if r["group"] == release.group and r["kind"] == "Gadget"]
    assert (data["recorded"], data["live"], data["edited"]) == (
        recorded, "live:" + edited, True), data
    after = api(stack, "sum")
    assert f"{gadgets} edited:{edited} " in after.stdout, output(after)
