"""``lockwright plan``'s text: every section of a plan, and the verdict last."""

from __future__ import annotations

from lockwright.commands.common import PackageRef
from lockwright.commands.plan import render
from lockwright import crdcompat
from lockwright.upgrade.plan import Plan, Rejected


def test_a_breaking_plan_shows_each_section_and_the_breaking_changes() -> None:
    field = crdcompat.FieldSummary("v1", added=1, first_added=[".spec.color"])
    plan = Plan(revision="p-2", against="p-1", added=1, changed=1, removed=1,
                first_added=["CustomResourceDefinition a.x.io"],
                first_changed=["CustomResourceDefinition w.x.io"],
                first_removed=["CustomResourceDefinition g.x.io"],
                crds=[crdcompat.Verdict("w.x.io", fields=[field])],
                rbac_added=["a.x.io: *"], rbac_removed=["g.x.io: *"],
                runtime=["image r/p:v1 → r/p:v2"], dependencies=["install x.io/d (>=v1)"],
                rejected=[Rejected("w.x.io", "v1", 1, ["w"], ".spec.size", "Required value")],
                breaking=["1 existing w.x.io (v1) would be rejected"], breaking_count=1)
    text = render(PackageRef("provider", "p"), plan).splitlines()
    assert text[0] == "provider/p: p-2 against p-1"
    assert text[1] == "objects: 1 added, 1 changed, 1 removed"
    for line in ("  + CustomResourceDefinition a.x.io", "  - CustomResourceDefinition g.x.io",
                 "  w.x.io v1 (changed): +1 -0 ~0 .spec.color", "  + a.x.io: *",
                 "  - g.x.io: *", "  image r/p:v1 → r/p:v2", "  install x.io/d (>=v1)"):
        assert line in text, (line, text)
    assert text[-2:] == ["verdict: BREAKING: 1 change(s)",
                         "  ✗ 1 existing w.x.io (v1) would be rejected"]


def test_a_compatible_plan_says_so() -> None:
    text = render(PackageRef("function", "f"), Plan(revision="f-2", against="f-1"))
    assert text.splitlines() == ["function/f: f-2 against f-1",
                                 "objects: 0 added, 0 changed, 0 removed",
                                 "verdict: compatible"]


def test_a_weighed_breaking_plan_says_what_the_evidence_gate_makes_of_it() -> None:
    base = Plan(revision="p-2", against="p-1", breaking=["field removed"], breaking_count=1,
                weighed=True)
    clear = render(PackageRef("provider", "p"), base).splitlines()
    assert clear[-1].startswith("evidence gate: no existing resource affected"), clear
    held = Plan(**{**base.__dict__, "held": ["1 existing Widget (w v1) would be rejected"],
                   "held_count": 1})
    assert render(PackageRef("provider", "p"), held).splitlines()[-2:] == [
        "evidence gate: holds on 1 change(s)", "  ✗ 1 existing Widget (w v1) would be rejected"]


def test_inactive_definitions_have_no_resources_to_check_and_say_so() -> None:
    plan = Plan(revision="p-2", against="p-1", changed=2,
                inactive=["buckets.s3.aws.io", "queues.sqs.aws.io"])
    text = render(PackageRef("provider", "p"), plan).splitlines()
    assert text[-4:] == ["inactive definitions (no CRD served, no resources to check):",
                         "  buckets.s3.aws.io", "  queues.sqs.aws.io", "verdict: compatible"]
    assert plan.summary().endswith(
        "2 changed definition(s) of inactive ManagedResourceDefinitions: no resources to check")
