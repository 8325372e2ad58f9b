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


# --- group commit: every waiting claim decided against one Lock read ---------------------
def ask(package: str, objects: str, others: dict[str, cl.Claim] | None = None,
        kind: str = "Provider") -> cl.Ask:
    """``package``'s revision ``<package>-1`` asking for one CRD per letter of ``objects``."""
    wanted = cl.keys_of([ref(o) for o in objects])
    return cl.Ask(package, cl.Claims(kind, f"{package}-1", wanted, dict(others or {})),
                  entry(f"{package}-1", kind))


def holder(package: str, objects: str) -> cl.Claim:
    return lk.Owner("Provider", package, f"{package}-1"), frozenset(key(o) for o in objects)


def outcome(batch: cl.Batch) -> list[str]:
    """Each decision as one word: won, or the holders it lost to, or unknown."""
    return ["won" if d.won else "unknown" if d.unknown else
            "lost to " + ",".join(sorted({c.holder.package for c in d.conflicts}))
            for d in batch.decisions]


@pytest.mark.parametrize(("current", "asks", "outcomes", "entries"), [
    # Nothing waiting: nothing to write.
    (lock(), [], [], None),
    # Disjoint claims all win in one write, in the order decided.
    (lock(), [ask("b", "y"), ask("a", "x")], ["won", "won"], ["a-1", "b-1"]),
    # Two want x: the first by package name wins, whatever the arrival order.
    (lock(), [ask("zeta", "x"), ask("alpha", "xw")], ["lost to alpha", "won"], ["alpha-1"]),
    # A conflict refuses only the package that has it.
    (lock(), [ask("a", "x"), ask("b", "xy"), ask("c", "z")],
     ["won", "lost to a", "won"], ["a-1", "c-1"]),
    # One that lost is no holder: the next one wanting its objects still wins.
    (lock(), [ask("a", "x"), ask("b", "xy"), ask("c", "y")],
     ["won", "lost to a", "won"], ["a-1", "c-1"]),
    # A holder already in the Lock beats everyone in the batch.
    (lock(entry("old-1")), [ask("a", "q", {"old-1": holder("old", "q")}),
                            ask("b", "r", {"old-1": holder("old", "q")})],
     ["lost to old", "won"], ["old-1", "b-1"]),
    # Every claim already in the Lock as it is: nothing to write.
    (lock(entry("a-1"), entry("b-1")), [ask("a", "x", {"b-1": holder("b", "y")}),
                                        ask("b", "y", {"a-1": holder("a", "x")})],
     ["won", "won"], None),
    # An entry nobody has read: that claim must read it first; the others go on.
    (lock(entry("new-1")), [ask("a", "x"), ask("b", "y", {"new-1": cl.UNCLAIMED})],
     ["unknown", "won"], ["new-1", "b-1"]),
    # The same package's older revision in the Lock hands over.
    (lock(entry("a-0")), [ask("a", "x", {"a-0": (lk.Owner("Provider", "a", "a-0"),
                                                  frozenset({key("x")}))})],
     ["won"], ["a-0", "a-1"]),
    # The same revision asked twice (a retried take): both win, one entry.
    (lock(), [ask("a", "x"), ask("a", "x")], ["won", "won"], ["a-1"]),
])
def test_decide_batch(current: Obj, asks: list[cl.Ask], outcomes: list[str],
                      entries: list[str] | None) -> None:
    batch = cl.decide_batch(current, asks)
    assert outcome(batch) == outcomes
    written = None if batch.lock is None else [e["name"] for e in batch.lock["packages"]]
    assert written == entries


def test_decide_batch_leaves_its_inputs_as_they_were() -> None:
    """Pure: the Lock and each claim's known claims are not touched."""
    current, asks = lock(), [ask("a", "x"), ask("b", "x")]
    cl.decide_batch(current, asks)
    assert current == lock()
    assert [a.claims.others for a in asks] == [{}, {}]


def test_decide_batch_is_the_same_in_any_arrival_order() -> None:
    asks = [ask("c", "xz"), ask("a", "x"), ask("b", "yz"), ask("d", "y")]
    first = cl.decide_batch(lock(), asks)
    again = cl.decide_batch(lock(), list(reversed(asks)))
    assert first.lock == again.lock
    assert outcome(first) == list(reversed(outcome(again)))
    assert outcome(first) == ["lost to a,b", "won", "won", "lost to b"]


def test_decide_batch_hands_on_the_winners_claims() -> None:
    """What each winner holds, as a reader of its revision would find it: the committer
    keeps them for its next batch instead of reading them back."""
    batch = cl.decide_batch(lock(), [ask("a", "x"), ask("b", "xy"), ask("c", "z")])
    assert batch.held == {"a-1": holder("a", "x"), "c-1": holder("c", "z")}
