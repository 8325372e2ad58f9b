"""lockwright.upgrade.plan: the pure parts of an upgrade plan, table by table (issue 15)."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright import crdcompat
from lockwright.crvalidate import CANNOT_CHECK, INVALID, VALID, Validation, Violation
from lockwright.objects.lock import ObjectKey
from lockwright.upgrade import gate
from lockwright.upgrade import plan as pl

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


def crd_key(name: str) -> ObjectKey:
    return ObjectKey(*CRD, name)


def meta(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
            "metadata": {"name": "p"}, "spec": spec}


def crd(name: str, props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": props, "required": required or []}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name}, "spec": {
                "group": name.partition(".")[2], "scope": "Cluster",
                "names": {"kind": "Widget", "plural": name.partition(".")[0]},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": schema}}]},
            "status": {"storedVersions": ["v1"]}}


def test_fingerprints_ignore_key_order_and_see_any_value() -> None:
    a = {"kind": "X", "spec": {"a": 1, "b": [1, 2]}}
    assert pl.fingerprint(a) == pl.fingerprint({"spec": {"b": [1, 2], "a": 1}, "kind": "X"})
    assert pl.fingerprint(a) != pl.fingerprint({"kind": "X", "spec": {"a": 1, "b": [2, 1]}})


@pytest.mark.parametrize("old, new, want", [
    ({}, {}, ([], [], [])),
    ({"a": b"1"}, {"a": b"1"}, ([], [], [])),
    ({"a": b"1"}, {"a": b"2", "b": b"3"}, (["b"], ["a"], [])),
    ({"a": b"1", "c": b"4"}, {"a": b"1"}, ([], [], ["c"])),
])
def test_object_changes(old: dict[str, bytes], new: dict[str, bytes],
                        want: tuple[list[str], ...]) -> None:
    got = pl.object_changes({crd_key(k): v for k, v in old.items()},
                            {crd_key(k): v for k, v in new.items()})
    assert tuple([k.name for k in keys] for keys in got) == want


@pytest.mark.parametrize("old, new, locked, want", [
    ([], [], {}, []),
    ([], [{"provider": "x.io/a", "version": ">=v1.0.0"}], {},
     ["install x.io/a (>=v1.0.0)"]),
    ([{"provider": "x.io/a", "version": ">=v1.0.0"}],
     [{"provider": "x.io/a", "version": ">=v2.0.0"}], {"x.io/a": "v1.2.0"},
     ["move x.io/a >=v1.0.0 → >=v2.0.0"]),
    ([{"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "package": "x.io/a",
       "version": ">=v1.0.0"}], [], {"x.io/a": "v1.2.0"}, ["no longer needs x.io/a"]),
    ([{"provider": "x.io/a", "version": ">=v1.0.0"}],
     [{"provider": "x.io/a", "version": ">=v1.0.0"}], {"x.io/a": "v1.2.0"}, []),
])
def test_dependency_changes(old: list[dict[str, str]], new: list[dict[str, str]],
                            locked: dict[str, str], want: list[str]) -> None:
    assert pl.dependency_changes(meta(dependsOn=old), meta(dependsOn=new), locked) == want


def test_rbac_follows_the_crds_and_the_permission_requests() -> None:
    request = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}
    old = pl.Side({crd_key("widgets.x.io"): b"", crd_key("gadgets.x.io"): b""}, meta())
    new = pl.Side({crd_key("widgets.x.io"): b"", crd_key("sprockets.x.io"): b""},
                  meta(controller={"permissionRequests": [request]}))
    assert pl.rbac_changes(old, new) == (["secrets.: get", "sprockets.x.io: *"],
                                         ["gadgets.x.io: *"])


@pytest.mark.parametrize("old, new, sources, want", [
    (meta(), meta(), ("r/p:v1", "r/p:v1"), []),
    (meta(), meta(), ("r/p:v1", "r/p:v2"), ["image r/p:v1 → r/p:v2"]),
    (meta(controller={"image": "r/c:v1"}), meta(controller={"image": "r/c:v1"}),
     ("r/p:v1", "r/p:v2"), []),
])
def test_runtime_image(old: dict[str, Any], new: dict[str, Any], sources: tuple[str, str],
                       want: list[str]) -> None:
    assert pl.runtime_changes(old, new, sources) == want


def test_tally_counts_rejections_and_fails_closed_on_what_it_cannot_check() -> None:
    tally = pl.Tally()
    tally.add("ok", Validation(VALID), [])
    assert tally.rejected("w.x.io", "v1") is None
    for n in range(12):
        tally.add(f"bad-{n}", Validation(INVALID, [Violation(".spec.size", "Required value")]),
                  [])
    tally.add("cel", Validation(CANNOT_CHECK, unchecked=[Violation(".spec", "CEL rule")]), [])
    found = tally.rejected("w.x.io", "v1")
    assert found is not None and found.count == 13 and len(found.first) == pl.LIMIT
    assert tally.seen == 14  # the one that passed too: the gate knows the CRD holds some
    assert (found.first[0], found.field, found.reason) == ("bad-0", ".spec.size",
                                                           "Required value")
    only_cel = pl.Tally()
    only_cel.add("cel", Validation(CANNOT_CHECK, unchecked=[Violation(".spec", "CEL rule")]),
                 [])
    assert "cannot be checked" in (only_cel.rejected("w.x.io", "v1") or pl.Rejected("", "", 0)
                                   ).reason


def plan_of(old_props: dict[str, Any], new_props: dict[str, Any],
            rejected: list[pl.Rejected] | None = None) -> pl.Plan:
    old, new = crd("widgets.x.io", old_props), crd("widgets.x.io", new_props)
    sides = (pl.Side({crd_key("widgets.x.io"): pl.fingerprint(old)}, meta()),
             pl.Side({crd_key("widgets.x.io"): pl.fingerprint(new),
                      crd_key("gadgets.x.io"): b"g"}, meta()))
    verdicts = [crdcompat.compare(old, new)]
    return pl.assemble("p-v2", "p-v1", sides, ("r/p:v1", "r/p:v1"), verdicts,
                       rejected or [], {})


def test_a_new_optional_field_is_a_compatible_plan() -> None:
    plan = plan_of({"size": {"type": "integer"}},
                   {"size": {"type": "integer"}, "color": {"type": "string"}})
    assert plan.compatible and (plan.added, plan.changed, plan.removed) == (1, 1, 0)
    assert plan.first_added == ["CustomResourceDefinition gadgets.x.io"]
    assert plan.crds[0].fields[0].first_added == [".spec.color"]
    assert plan.summary().startswith("Compatible with p-v1: 1 added, 1 changed, 0 removed")
    assert not pl.blocks(plan, "")


def test_a_removed_field_breaks_and_blocks_until_that_revision_is_accepted() -> None:
    plan = plan_of({"size": {"type": "integer"}, "color": {"type": "string"}},
                   {"size": {"type": "integer"}})
    assert not plan.compatible and plan.breaking_count == 1
    assert ".spec.color" in plan.breaking[0] and "widgets.x.io" in plan.breaking[0]
    assert pl.blocks(plan, "") and pl.blocks(plan, "p-v3") and not pl.blocks(plan, "p-v2")
    assert "kubectl annotate provider p lockwright.io/accept-plan=p-v2" in gate.refusal(
        "provider", "p", plan, gate.STRICT)


def test_resources_the_new_schema_rejects_break_the_plan_and_are_named() -> None:
    rejected = pl.Rejected("widgets.x.io", "v1", 2, ["a", "b"], ".spec.size", "Required value")
    plan = plan_of({"size": {"type": "integer"}}, {"size": {"type": "integer"}}, [rejected])
    assert plan.breaking_count == 1 and plan.rejected == [rejected]
    assert plan.breaking[0] == ("2 existing widgets.x.io (v1) would be rejected: a, b: "
                                ".spec.size: Required value")


def test_big_plans_stay_summaries() -> None:
    old = {crd_key(f"r{i}.x.io"): b"1" for i in range(3000)}
    new = {crd_key(f"r{i}.x.io"): b"2" for i in range(3000)}
    plan = pl.assemble("n", "o", (pl.Side(old), pl.Side(new)), ("a", "a"), [], [], {})
    assert plan.changed == 3000 and len(plan.first_changed) == pl.LIMIT
    assert len(plan.rbac_added) == 0


def test_a_value_at_a_removed_field_counts_even_when_the_object_validates() -> None:
    tally = pl.Tally()
    tally.add("w1", Validation(VALID), [".spec.color"])
    found = tally.rejected("w.x.io", "v1")
    assert found is not None and (found.first, found.field) == (["w1"], ".spec.color")
    assert "would be lost" in found.reason


@pytest.mark.parametrize("obj, path, want", [
    ({"spec": {"color": "red"}}, ".spec.color", True),
    ({"spec": {}}, ".spec.color", False),
    ({"spec": {"ports": [{"name": "a"}, {}]}}, ".spec.ports[*].name", True),
    ({"spec": {"ports": [{}, {}]}}, ".spec.ports[*].name", False),
    ({"spec": {"labels": {"a": {"x": 1}}}}, ".spec.labels.*.x", True),
    ({"spec": {"labels": {"a": {}}}}, ".spec.labels.*.x", False),
    ({"spec": "text"}, ".spec.color", False),
])
def test_has_path(obj: dict[str, Any], path: str, want: bool) -> None:
    assert pl.has_path(obj, path) is want


def test_removed_paths_of_one_version() -> None:
    old = crd("widgets.x.io", {"size": {"type": "integer"}, "color": {"type": "string"}})
    new = crd("widgets.x.io", {"size": {"type": "integer"}})
    verdict = crdcompat.compare(old, new)
    assert pl.removed_paths(verdict, "v1") == [".spec.color"]
    assert pl.removed_paths(verdict, "v2") == []


REFUSAL = ("Provider p: annotation lockwright.dev/pin-api-digest pins API sha256:aa, but "
           "revision p-bb has API sha256:bb; ...")
COMPATIBLE = pl.Plan(revision="p-bb", against="p-aa", weighed=True)
UNAFFECTED = pl.Plan(revision="p-bb", against="p-aa", breaking=["CRD x: field removed"],
                     breaking_count=1, weighed=True)  # the evidence gate would let it pass
CROWDED = pl.Plan(revision="p-bb", against="p-aa", breaking=["b"] * pl.BREAKING_LIMIT,
                  breaking_count=70, held=["b"] * pl.BREAKING_LIMIT, held_count=60,
                  weighed=True)


@pytest.mark.parametrize(("plan", "refusal", "breaking", "held"), [
    (COMPATIBLE, "", (0, []), (0, [])),  # the pin passes: nothing changes
    (COMPATIBLE, REFUSAL, (1, [REFUSAL]), (1, [REFUSAL])),
    (UNAFFECTED, REFUSAL, (2, [REFUSAL, "CRD x: field removed"]), (1, [REFUSAL])),
    (CROWDED, REFUSAL, (71, [REFUSAL] + ["b"] * (pl.BREAKING_LIMIT - 1)),
     (61, [REFUSAL] + ["b"] * (pl.BREAKING_LIMIT - 1))),
])
def test_a_pin_refusing_the_candidate_breaks_its_plan_first_and_holds_it(
        plan: pl.Plan, refusal: str, breaking: tuple[int, list[str]],
        held: tuple[int, list[str]]) -> None:
    found = pl.refused_by_pin(plan, refusal)
    assert (found.breaking_count, found.breaking) == breaking
    assert (found.held_count, found.held) == held
    assert found.compatible is (not refusal)
    for policy in (gate.EVIDENCE, gate.STRICT):  # no gate lets a refused revision through
        assert (gate.decide(found, policy, "") is gate.Outcome.HOLD) is bool(refusal)
