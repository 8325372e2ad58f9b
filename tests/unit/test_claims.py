"""A revision's claim against the Lock: read the unknown, lose to a holder, or take it."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.objects import claims as cl
from lockwright.objects import lock as lk

Obj = dict[str, Any]
CRD = "apiextensions.k8s.io/v1"


def ref(name: str) -> Obj:
    return {"apiVersion": CRD, "kind": "CustomResourceDefinition", "name": name}


def key(name: str) -> lk.ObjectKey:
    return lk.ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", name)


def entry(name: str, kind: str = "Provider") -> Obj:
    return {"name": name, "kind": kind, "source": f"r.io/{name}", "version": "v1",
            "dependencies": []}


def lock(*entries: Obj) -> Obj:
    return {**lk.new_lock(), "packages": list(entries)}


def claims(others: dict[str, cl.Claim]) -> cl.Claims:
    return cl.Claims("Provider", "mine-1", cl.keys_of([ref("a"), ref("b")]), dict(others))


THEIRS = (lk.Owner("Provider", "theirs", "theirs-1"), frozenset({key("b"), key("z")}))
SAME_PACKAGE = (lk.Owner("Provider", "mine", "mine-0"), frozenset({key("a")}))


@pytest.mark.parametrize(("others", "current", "unknown", "conflicts", "added"), [
    # An empty Lock: take it.
    ({}, lock(), [], [], True),
    # Its own entry is no rival, and already there as wanted: nothing to write.
    ({}, lock(entry("mine-1")), [], [], False),
    # An entry whose claim was not read yet: read it first.
    ({}, lock(entry("theirs-1")), [entry("theirs-1")], [], False),
    # Another package holds b.
    ({"theirs-1": THEIRS}, lock(entry("theirs-1")), [],
     [lk.Conflict(key("b"), THEIRS[0])], False),
    # The package's own older revision hands over.
    ({"mine-0": SAME_PACKAGE}, lock(entry("mine-0")), [], [], True),
    # A revision gone since its entry was written holds nothing.
    ({"gone-1": cl.UNCLAIMED}, lock(entry("gone-1")), [], [], True),
])
def test_decide(others: dict[str, cl.Claim], current: Obj, unknown: list[Obj],
                conflicts: list[lk.Conflict], added: bool) -> None:
    decision = claims(others).decide(current, "mine", entry("mine-1"))
    assert (decision.unknown, decision.conflicts) == (unknown, conflicts)
    assert (decision.lock is not None) == added
    if added:
        assert decision.lock is not None and entry("mine-1") in decision.lock["packages"]


@pytest.mark.parametrize(("rev", "claim"), [
    ({"metadata": {"name": "p-1", "labels": {cl.LABEL_PACKAGE: "p"}},
      "status": {"objectRefs": [ref("a")]}},
     (lk.Owner("Provider", "p", "p-1"), frozenset({key("a")}))),
    # No package label: an object nobody holds through it.
    ({"metadata": {"name": "p-1"}, "status": {"objectRefs": [ref("a")]}},
     (None, frozenset({key("a")}))),
    ({"metadata": {"name": "p-1", "labels": {cl.LABEL_PACKAGE: "p"}}},
     (lk.Owner("Provider", "p", "p-1"), frozenset())),
])
def test_claim_of(rev: Obj, claim: cl.Claim) -> None:
    assert cl.claim_of("Provider", rev) == claim


@pytest.mark.parametrize(("current", "kinds"), [
    (lock(), {}),
    (lock(entry("a-1"), {"name": "b-1", "type": "Function"}), {"a-1": "Provider",
                                                               "b-1": "Function"}),
])
def test_entry_kinds(current: Obj, kinds: dict[str, str]) -> None:
    assert cl.entry_kinds(current) == kinds
