"""Many installs at once take the Lock together (issue 33, docs/design.md invariant 4).

The takes waiting in a worker are written in one compare-and-swap
(``lockwright.activities.lockcommit``); whatever lands in one batch, each contested object
has exactly one winner, the loser names it, and a conflict refuses only the package that
has it: the others applied in the same moment install.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.packages import crd
from tests.fixtures.stack import Stack
from tests.helpers import unique, wait_for

pytestmark = pytest.mark.kube_shows(
    "the Lock's compare-and-swap on kube-apiserver's resourceVersions")

Obj = dict[str, Any]
CONFLICT = "is already controlled by"


def provider(root: Path, name: str, groups: list[str]) -> Path:
    """A Provider package with one CRD in each of ``groups``."""
    root.mkdir(parents=True)
    meta = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": name}}
    (root / "crossplane.yaml").write_text(yaml.safe_dump(meta))
    (root / "objects.yaml").write_text(yaml.safe_dump_all([crd(g, "Gadget") for g in groups]))
    return root


def group() -> str:
    return f"{uuid.uuid4().hex[:8]}.groupcommit.example.org"


def crd_of(stack: Stack, group_: str) -> Obj | None:
    try:
        found: Obj = client.ApiextensionsV1Api(stack.api).read_custom_resource_definition(
            f"gadgets.{group_}").to_dict()
        return found
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def lock_entries(stack: Stack) -> set[str]:
    lock = stack.custom.get_cluster_custom_object("pkg.crossplane.io", "v1beta1", "locks",
                                                  "lock")
    return {p["name"] for p in lock.get("packages") or []}


def settled(stack: Stack, pair: list[str]) -> tuple[str, str] | None:
    """(winner, loser) once one of ``pair`` is Healthy and the other says who won."""
    conds = {name: stack.conditions("Provider", name).get("Healthy", {}) for name in pair}
    healthy = [n for n in pair if conds[n].get("status") == "True"]
    refused = [n for n in pair if conds[n].get("status") == "False"
               and CONFLICT in conds[n].get("message", "")]
    return (healthy[0], refused[0]) if len(healthy) == 1 and len(refused) == 1 else None


def test_installs_applied_at_once_give_each_contested_object_one_winner(
        stack: Stack, tmp_path: Path) -> None:
    contested = [group(), group()]
    own = {unique(f"gc{i}"): group() for i in range(8)}
    names = list(own)
    pairs = [names[0:2], names[2:4]]  # each pair also wants one contested CRD
    wanted = {n: [own[n]] for n in names}
    for pair, shared in zip(pairs, contested, strict=True):
        for n in pair:
            wanted[n].append(shared)
    refs = {n: stack.push(provider(tmp_path / n, f"provider-{n}", wanted[n])) for n in names}
    with ThreadPoolExecutor(len(names)) as pool:
        list(pool.map(lambda n: stack.apply_package("Provider", n, refs[n]), names))

    outcomes = [wait_for(lambda pair=pair: settled(stack, pair), timeout=120, interval=0.2,
                         what=f"one of {pair} Healthy, the other refused") for pair in pairs]
    free = names[4:]
    for name in free:
        stack.wait_healthy("Provider", name, timeout=120)

    entries = lock_entries(stack)
    for (winner, loser), shared in zip(outcomes, contested, strict=True):
        won = stack.revisions("Provider", winner)[0]
        lost = stack.revisions("Provider", loser)[0]
        message = stack.conditions("Provider", loser)["Healthy"]["message"]
        assert f"gadgets.{shared}" in message and winner in message, message
        assert won["metadata"]["name"] in entries
        assert lost["metadata"]["name"] not in entries
        owners = (crd_of(stack, shared) or {})["metadata"]["owner_references"]
        assert [o["uid"] for o in owners if o["controller"]] == [won["metadata"]["uid"]]
        # Refused as a whole: not even its own CRD, nobody else wanted, was written.
        assert crd_of(stack, own[loser]) is None
        assert crd_of(stack, own[winner]) is not None
    for name in free:
        assert stack.revisions("Provider", name)[0]["metadata"]["name"] in entries
