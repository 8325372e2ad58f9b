"""lockwright.upgrade.gate: which breaking plans hold an upgrade, table by table (issue 22)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lockwright import crdcompat
from lockwright.crdcompat import Change, Kind, Verdict
from lockwright.upgrade import gate
from lockwright.upgrade import plan as pl
from lockwright.upgrade.gate import EVIDENCE, STRICT, Outcome

W = "widgets.x.io"


def change(kind: str, version: str = "v1", path: str = ".spec.color") -> Change:
    return Change(W, version, path, kind, kind in crdcompat.BLOCKING, f"{kind} here", "fix it")


@pytest.mark.parametrize("kind, version, checked, held", [
    # Checked resource by resource: the ones it breaks come as rejected resources.
    (Kind.PROPERTY_REMOVED, "v1", {(W, "v1"): 3}, False),
    (Kind.TYPE_CHANGED, "v1", {(W, "v1"): 3}, False),
    (Kind.VALIDATION_RULES_CHANGED, "v1", {(W, "v1"): 3}, False),  # CEL fails closed there
    (Kind.REQUIRED_ADDED, "v1", {(W, "v1"): 0}, False),
    (Kind.LIST_TYPE_TIGHTENED, "v1", {(W, "v1"): 3}, False),  # duplicates come as rejected
    (Kind.LIST_MAP_KEYS_CHANGED, "v1", {(W, "v1"): 3}, False),
    (Kind.LIST_TYPE_TIGHTENED, "v1", {}, True),
    # Pruned values are not checked one by one: held while resources exist.
    (Kind.PRESERVE_UNKNOWN_REMOVED, "v1", {(W, "v1"): 3}, True),
    (Kind.PRESERVE_UNKNOWN_REMOVED, "v1", {(W, "v1"): 0}, False),
    # Not checked at that version (not served before) while resources exist: held.
    (Kind.TYPE_CHANGED, "v2", {(W, "v1"): 3}, True),
    (Kind.PROPERTY_REMOVED, "v1", {}, True),  # nothing could be listed
    (Kind.PROPERTY_REMOVED, "v2", {(W, "v1"): 0}, False),  # no resource to break
    # Defaults change what resources read; only an empty CRD clears them.
    (Kind.DEFAULT_CHANGED, "v1", {(W, "v1"): 3}, True),
    (Kind.DEFAULT_ADDED, "v1", {(W, "v1"): 3}, True),
    (Kind.DEFAULT_REMOVED, "v1", {(W, "v1"): 0}, False),
    # Between two served versions: not checked one by one.
    (Kind.PROPERTY_REMOVED, "v1 -> v2", {(W, "v1"): 3, (W, "v2"): 3}, True),
    (Kind.PROPERTY_REMOVED, "v1 -> v2", {(W, "v1"): 0}, False),
    # Whole-CRD changes and what cannot be classified always hold.
    (Kind.STORED_VERSION_REMOVED, "v1", {(W, "v2"): 0}, True),
    (Kind.SERVED_VERSION_REMOVED, "v1", {(W, "v2"): 0}, True),
    (Kind.SCOPE_CHANGED, "", {(W, "v1"): 0}, True),
    (Kind.UNKNOWN, "v1", {(W, "v1"): 0}, True),
    # Not breaking at all.
    (Kind.ENUM_VALUE_ADDED, "v1", {(W, "v1"): 3}, False),
    (Kind.REQUIRED_REMOVED, "v2", {}, False),
])
def test_which_breaking_changes_existing_resources_do_not_clear(
        kind: str, version: str, checked: dict[tuple[str, str], int], held: bool) -> None:
    found = gate.unproven([Verdict(W, [change(kind, version)])], [], checked)
    assert bool(found) is held, found
    if held:
        assert found[0].startswith(f"CustomResourceDefinition {W}") and "(" in found[0]


@pytest.mark.parametrize("kind, version, verdict", [
    (Kind.ENUM_VALUE_ADDED, "v1", gate.COMPATIBLE),
    (Kind.LIST_TYPE_LOOSENED, "v1", gate.COMPATIBLE),
    (Kind.PROPERTY_REMOVED, "v1", gate.CHECKED),
    (Kind.LIST_TYPE_TIGHTENED, "v1", gate.CHECKED),
    (Kind.LIST_MAP_KEYS_CHANGED, "v1", gate.CHECKED),
    (Kind.VALIDATION_RULES_CHANGED, "v1", gate.CHECKED),
    (Kind.PROPERTY_REMOVED, "v1 -> v2", gate.BREAKING),
    (Kind.DEFAULT_ADDED, "v1", gate.BREAKING),
    (Kind.PRESERVE_UNKNOWN_REMOVED, "v1", gate.BREAKING),
    (Kind.SCOPE_CHANGED, "", gate.BREAKING),
    (Kind.UNKNOWN, "v1", gate.UNCLASSIFIED),
])
def test_verdict_of_agrees_with_what_unproven_holds(kind: str, version: str,
                                                    verdict: str) -> None:
    assert gate.verdict_of(change(kind, version)) == verdict
    # checked changes are cleared by a check of every resource; breaking ones are not
    held = gate.unproven([Verdict(W, [change(kind, version)])], [],
                         {(W, "v1"): 3, (W, "v2"): 3})
    assert bool(held) is (verdict in (gate.BREAKING, gate.UNCLASSIFIED))


def test_resources_the_new_schema_breaks_hold_and_are_named() -> None:
    rejected = pl.Rejected(W, "v1", 2, ["default/a", "b"], ".spec.color",
                           "removed from the schema: its value would be lost", "Widget")
    found = gate.unproven([Verdict(W, [change(Kind.PROPERTY_REMOVED)])], [rejected],
                          {(W, "v1"): 5})
    assert found == [(f"2 existing Widget ({W} v1) would be rejected: default/a, b: "
                      ".spec.color: removed from the schema: its value would be lost")]


def breaking(held: int = 0, weighed: bool = True, revision: str = "p-v2") -> pl.Plan:
    return pl.Plan(revision=revision, against="p-v1", breaking=["a field removed"],
                   breaking_count=1, held=["a resource"] * held, held_count=held,
                   weighed=weighed)


@pytest.mark.parametrize("plan, gate_, accepted, manual, want", [
    (None, EVIDENCE, "", False, Outcome.PROCEED),
    (pl.Plan(revision="p-v2"), STRICT, "", False, Outcome.PROCEED),
    (breaking(), EVIDENCE, "", False, Outcome.UNAFFECTED),
    (breaking(), STRICT, "", False, Outcome.HOLD),
    (breaking(), EVIDENCE, "", True, Outcome.HOLD),  # Manual: approved with the plan
    (breaking(held=1), EVIDENCE, "", False, Outcome.HOLD),
    (breaking(weighed=False), EVIDENCE, "", False, Outcome.HOLD),  # a plan from before
    (breaking(), "", "", False, Outcome.HOLD),  # no gate known: strict
    (breaking(held=1), EVIDENCE, "p-v2", False, Outcome.ACCEPTED),
    (breaking(), STRICT, "p-v2", True, Outcome.ACCEPTED),
    (breaking(held=1), STRICT, "p-v3", False, Outcome.HOLD),  # accepts no other revision
])
def test_decide(plan: pl.Plan | None, gate_: str, accepted: str, manual: bool,
                want: Outcome) -> None:
    assert gate.decide(plan, gate_, accepted, manual) is want


@pytest.mark.parametrize("annotation, default, want, problem", [
    ("", EVIDENCE, EVIDENCE, False),
    ("", STRICT, STRICT, False),
    ("Strict", EVIDENCE, STRICT, False),
    (" strict ", EVIDENCE, STRICT, False),
    ("EVIDENCE", STRICT, EVIDENCE, False),
    ("Lenient", EVIDENCE, STRICT, True),  # fails closed, and says so
])
def test_choose(annotation: str, default: str, want: str, problem: bool) -> None:
    got, why = gate.choose(annotation, default, "provider/p")
    assert got == want and bool(why) is problem
    if problem:
        assert all(s in why for s in ("provider/p", gate.ANNOTATION, "'Lenient'",
                                      "Evidence, Strict", "Strict until it is fixed")), why


def test_weigh_records_what_holds_and_keeps_the_count_whole() -> None:
    verdicts = [Verdict(W, [change(Kind.UNKNOWN, path=f".spec.f{i}") for i in range(60)])]
    weighed = gate.weigh(breaking(weighed=False), verdicts, {(W, "v1"): 1})
    assert weighed.weighed and weighed.held_count == 60
    assert len(weighed.held) == pl.BREAKING_LIMIT
    assert gate.reasons(weighed, EVIDENCE).endswith(" and 10 more")
    clear = gate.weigh(breaking(weighed=False), [Verdict(W, [change(Kind.PROPERTY_REMOVED)])],
                       {(W, "v1"): 4})
    assert clear.weighed and clear.held_count == 0 and clear.held == []


def test_messages_say_why_and_how_to_go_on() -> None:
    held = replace(breaking(held=1), held=["1 existing Widget (w v1) would be rejected: a"])
    refused = gate.refusal("Provider", "p", held, EVIDENCE)
    assert "upgrade gate Evidence" in refused and "would be rejected: a" in refused
    assert "kubectl annotate provider p lockwright.io/accept-plan=p-v2" in refused
    strict = gate.refusal("Provider", "p", breaking(), STRICT, "provider/p: annotation bad")
    assert "a field removed" in strict and "annotation bad" in strict
    warned = gate.unaffected("Provider", "p", breaking())
    assert "no existing resource is affected" in warned and "a field removed" in warned
    assert f"{gate.ANNOTATION}=Strict" in warned
