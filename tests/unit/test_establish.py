"""Establish planning: create/update/adopt/own/skip, conflicts, webhook and conversion injection.

Matrix: {active, inactive} × {missing, ours, uncontrolled, same package's other revision,
another package} plus commonLabels, object filtering, ordering of objectRefs.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from lockwright.identity.record import stamped
from lockwright.objects import establish as es
from lockwright.objects.lock import ObjectKey, Owner
from tests.unit.webhook_objects import validating_webhooks

NS = "crossplane-system"
CA = b"-----BEGIN CERTIFICATE-----\nZm9v\n-----END CERTIFICATE-----\n"
CA_B64 = base64.b64encode(CA).decode()


def _rev(active: bool = True, **kw: Any) -> es.Revision:
    base: dict[str, Any] = {
        "name": "nop-222222222222", "uid": "rev-uid-2", "kind": "ProviderRevision",
        "package_kind": "Provider", "package_name": "nop", "package_uid": "pkg-uid",
        "active": active}
    return es.Revision(**{**base, **kw})


def _crd(name: str = "things.example.org", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name}, "spec": {"group": "example.org", **spec}}


CRD = _crd()
KEY = ObjectKey.of(CRD)
CTRL_ME = es.controller_ref(_rev())
PKG = {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "name": "nop", "uid": "pkg-uid"}
OLD_REV = {"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
           "name": "nop-111111111111", "uid": "rev-uid-1", "controller": True,
           "blockOwnerDeletion": True}
OTHER_REV = {"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
             "name": "alpha-999999999999", "uid": "alpha-rev", "controller": True,
             "blockOwnerDeletion": True}
OTHER_PKG = {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "name": "alpha",
             "uid": "alpha-uid"}
PLAIN_ME = {"apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
            "name": "nop-222222222222", "uid": "rev-uid-2"}


def _live(*refs: dict[str, Any], spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    obj = copy.deepcopy(CRD)
    obj["metadata"].update({"ownerReferences": list(refs), "resourceVersion": "7", **meta})
    if spec is not None:
        obj["spec"] = spec
    return obj


DECISIONS = [
    (True, None, es.Op.CREATE, [CTRL_ME, PKG]),
    (False, None, es.Op.SKIP, None),
    (True, _live(CTRL_ME, PKG), es.Op.SKIP, [CTRL_ME, PKG]),  # already as desired
    (True, _live(CTRL_ME, PKG, spec={"group": "old"}), es.Op.UPDATE, [CTRL_ME, PKG]),
    (True, _live(), es.Op.ADOPT, [PKG, CTRL_ME]),  # uncontrolled: adopt
    (True, _live(OLD_REV, PKG), es.Op.ADOPT,  # hand-off from our package's old revision
     [{**OLD_REV, "controller": False}, PKG, CTRL_ME]),
    (False, _live(OLD_REV, PKG), es.Op.OWN, [OLD_REV, PKG, PLAIN_ME]),
    (False, _live(OLD_REV, PKG, PLAIN_ME), es.Op.SKIP, [OLD_REV, PKG, PLAIN_ME]),
    (False, _live(CTRL_ME, PKG), es.Op.OWN, [PLAIN_ME, PKG]),  # release control
]


@pytest.mark.parametrize(("active", "live", "op", "refs"), DECISIONS)
def test_decisions(active: bool, live: dict[str, Any] | None, op: es.Op,
                   refs: list[dict[str, Any]] | None) -> None:
    plan = es.plan_establish(_rev(active), [CRD], {KEY: live} if live else {},
                             ca_bundle=CA, namespace=NS)
    assert plan.conflicts == []
    [action] = plan.actions
    assert action.op is op
    assert action.key == KEY
    if refs is not None:
        assert action.object["metadata"]["ownerReferences"] == refs
    if live is not None:
        assert action.object["metadata"]["resourceVersion"] == "7"
        assert action.object["spec"] == CRD["spec"]


SHIPPED = stamped(CRD)
DIGEST = SHIPPED["metadata"]["annotations"]


def _shipped_live(spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """The definition as the old revision established it: its type digest annotated."""
    return _live(OLD_REV, PKG, spec=spec, **{"annotations": DIGEST, **meta})


@pytest.mark.parametrize(("objects", "live", "labels", "op"), [
    # A definition as shipped, a server default aside: owner references only.
    ([SHIPPED], _shipped_live({"group": "example.org", "scope": "Cluster"}), {}, es.Op.TAKE),
    ([SHIPPED], _shipped_live(labels={"team": "a"}), {"team": "a"}, es.Op.TAKE),
    # v1 shipped a field v2 drops: another digest, the whole object written.
    ([SHIPPED], _live(OLD_REV, PKG, spec={"group": "example.org", "gone": 1},
                      annotations={"lockwright.dev/type-digest": "sha256:old"}), {}, es.Op.ADOPT),
    ([SHIPPED], _shipped_live(labels={"team": "b"}), {"team": "a"}, es.Op.ADOPT),  # a label
    ([CRD], _live(OLD_REV, PKG), {}, es.Op.ADOPT),  # not stamped: no digest to go by
    ([CRD], _live(OLD_REV, PKG, spec={"group": "example.org", "gone": 1},  # nor the live one's
                  annotations=DIGEST), {}, es.Op.ADOPT),
])
def test_control_of_a_definition_as_shipped_is_taken_by_owner_references_only(
        objects: list[dict[str, Any]], live: dict[str, Any], labels: dict[str, str],
        op: es.Op) -> None:
    [action] = es.plan_establish(_rev(common_labels=labels), objects, {KEY: live},
                                 ca_bundle=CA, namespace=NS).actions
    assert action.op is op
    assert action.object["metadata"]["ownerReferences"] == [
        {**OLD_REV, "controller": False}, PKG, CTRL_ME]


def _action(op: es.Op, kind: str = "CustomResourceDefinition", name: str = "a") -> es.Action:
    return es.Action(op, ObjectKey("apiextensions.k8s.io", kind, name), {})


T, A, U, C = es.Op.TAKE, es.Op.ADOPT, es.Op.UPDATE, es.Op.CREATE
MRD = "ManagedResourceDefinition"


@pytest.mark.parametrize(("actions", "checked"), [
    ([], []),
    ([_action(A, name="a"), _action(U, name="b"), _action(C, name="c")],
     ["a", "b", "c"]),  # every write but a take
    ([_action(T, name="a"), _action(T, name="b"), _action(T, name="c")], ["a"]),
    ([_action(A, name="a"), _action(T, name="b"), _action(T, name="c"),
      _action(T, MRD, "d"), _action(T, MRD, "e")], ["a", "b", "d"]),  # a take of each kind
    ([_action(T, name="a"), _action(A, name="b"), _action(T, name="c")], ["a", "b"]),
])
def test_one_take_of_control_of_each_kind_is_dry_run(actions: list[es.Action],
                                                     checked: list[str]) -> None:
    assert [a.key.name for a in es.to_dry_run(actions)] == checked


CRD_KIND = ("apiextensions.k8s.io", "CustomResourceDefinition")
MRD_KIND = ("apiextensions.k8s.io", MRD)


@pytest.mark.parametrize(("passed", "checked"), [
    (frozenset(), ["a", "b", "d"]),
    (frozenset({CRD_KIND}), ["a", "d"]),  # a CRD's take passed in an earlier batch
    (frozenset({CRD_KIND, MRD_KIND}), ["a"]),  # only what is not a take is left
])
def test_a_kind_whose_take_passed_in_an_earlier_batch_has_none_dry_run_again(
        passed: frozenset[es.Kind], checked: list[str]) -> None:
    actions = [_action(A, name="a"), _action(T, name="b"), _action(T, name="c"),
               _action(T, MRD, "d")]
    assert [a.key.name for a in es.to_dry_run(actions, passed)] == checked


def test_only_the_takes_whose_dry_run_passed_count_as_passed() -> None:
    """A take refused (409, its object changed) is read, planned and dry-run again; until
    one passes, the kind's other takes are not covered."""
    dry_run = [_action(A, name="a"), _action(T, name="b"), _action(T, MRD, "d")]
    assert es.takes_passed(dry_run, [True, True, False]) == {CRD_KIND}
    assert es.takes_passed(dry_run, [True, False, True]) == {MRD_KIND}


@pytest.mark.parametrize("active", [True, False])
def test_conflict_with_other_package_plans_nothing(active: bool) -> None:
    crd2 = _crd("others.example.org")
    live = {ObjectKey.of(crd2): _live(OTHER_REV, OTHER_PKG)}
    plan = es.plan_establish(_rev(active), [CRD, crd2], live, ca_bundle=CA, namespace=NS)
    assert plan.actions == []
    assert [c.object for c in plan.conflicts] == [ObjectKey.of(crd2)]
    assert plan.conflicts[0].holder == Owner("Provider", "alpha", "alpha-999999999999")
    assert plan.conflict_message == (
        'CustomResourceDefinition.apiextensions.k8s.io "others.example.org" is already '
        "controlled by Provider alpha (revision alpha-999999999999)")
    assert len(plan.object_refs) == 2


def test_conflict_without_package_owner_names_controller() -> None:
    foreign = {"apiVersion": "example.org/v1", "kind": "Operator", "name": "op", "uid": "x",
               "controller": True}
    plan = es.plan_establish(_rev(), [CRD], {KEY: _live(foreign)}, ca_bundle=CA, namespace=NS)
    assert plan.conflicts[0].holder == Owner("Operator", "op", "op")


def test_common_labels_and_annotations_merge() -> None:
    rev = _rev(common_labels={"team": "a", "x": "new"}, common_annotations={"note": "n"})
    crd = _crd()
    crd["metadata"]["labels"] = {"x": "old", "keep": "1"}
    live = _live(CTRL_ME, PKG, labels={"server": "s"})
    [action] = es.plan_establish(rev, [crd], {KEY: live}, ca_bundle=CA, namespace=NS).actions
    assert action.object["metadata"]["labels"] == {"server": "s", "x": "new", "keep": "1",
                                                   "team": "a"}
    assert action.object["metadata"]["annotations"] == {"note": "n"}
    assert crd["metadata"]["labels"] == {"x": "old", "keep": "1"}  # input untouched


@pytest.mark.parametrize(("kind", "objects", "kept"), [
    ("Provider", [CRD, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                  {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
                   "metadata": {"name": "m"}}], ["things.example.org"]),
    ("Configuration", [CRD, {"apiVersion": "apiextensions.crossplane.io/v1",
                             "kind": "CompositeResourceDefinition", "metadata": {"name": "x"}},
                       {"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
                        "metadata": {"name": "c"}}], ["x", "c"]),
    ("Function", [CRD], []),
])
def test_establishable(kind: str, objects: list[dict[str, Any]], kept: list[str]) -> None:
    assert [o["metadata"]["name"] for o in es.establishable(kind, objects)] == kept


def test_plan_uses_renamed_webhook_key() -> None:
    plan = es.plan_establish(_rev(), [validating_webhooks()], {}, ca_bundle=CA, namespace=NS)
    [action] = plan.actions
    assert action.key == ObjectKey("admissionregistration.k8s.io",
                                   "ValidatingWebhookConfiguration", "crossplane-provider-nop")
    assert plan.object_refs == [{"apiVersion": "admissionregistration.k8s.io/v1",
                                 "kind": "ValidatingWebhookConfiguration",
                                 "name": "crossplane-provider-nop"}]
    assert action.object["webhooks"][0]["clientConfig"]["caBundle"] == CA_B64


def test_object_refs_sorted_descending() -> None:
    refs = [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "name": n} for n in ("a.x", "c.x", "b.x")]
    refs.append({"apiVersion": "admissionregistration.k8s.io/v1",
                 "kind": "ValidatingWebhookConfiguration", "name": "z"})
    assert [r["name"] for r in es.sort_object_refs(refs)] == ["c.x", "b.x", "a.x", "z"]


@pytest.mark.parametrize(("current", "want"), [
    ([CTRL_ME, PKG], [{**CTRL_ME, "controller": False}, PKG]),
    ([OLD_REV, PKG], [OLD_REV, PKG, PLAIN_ME]),
    ([PLAIN_ME], [PLAIN_ME]),
])
def test_release_references(current: list[dict[str, Any]],
                            want: list[dict[str, Any]]) -> None:
    assert es.release_references(current, _rev(active=False)) == want


@pytest.mark.parametrize("rev", [_rev(), _rev(common_labels={"a": "b"})])
def test_replanning_after_writes_is_a_no_op(rev: es.Revision) -> None:
    [created] = es.plan_establish(rev, [validating_webhooks(), CRD], {}, ca_bundle=CA, namespace=NS).actions[1:]
    live = copy.deepcopy(created.object)
    live["metadata"]["resourceVersion"] = "1"
    [again] = es.plan_establish(rev, [CRD], {KEY: live}, ca_bundle=CA, namespace=NS).actions
    assert again.op is es.Op.SKIP


@pytest.mark.parametrize(("live", "holder"), [
    (_live(OTHER_REV, OTHER_PKG), Owner("Provider", "alpha", "alpha-999999999999")),
    (_live(OTHER_PKG), None),
    (_live(), None),
])
def test_holder_of(live: dict[str, Any], holder: Owner | None) -> None:
    assert es.holder_of(live) == holder


def test_shipped_status_dropped() -> None:
    crd = {**_crd(), "status": {"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": []}}
    [action] = es.plan_establish(_rev(), [crd], {}, ca_bundle=CA, namespace=NS).actions
    assert "status" not in action.object
    assert "status" in crd


def test_holder_prefers_the_controllers_package() -> None:
    stray = {**PKG, "name": "someone", "uid": "x"}
    live = _live({**stray, "kind": "Configuration"}, OTHER_PKG, OTHER_REV)
    assert es.holder_of(live) == Owner("Provider", "alpha", "alpha-999999999999")


@pytest.mark.parametrize(("live", "desired", "want"), [
    ({"a": 1, "b": 2}, {"a": 1}, True),  # server defaults are extra fields
    ({"a": [{"x": 1, "d": 0}]}, {"a": [{"x": 1}]}, True),
    ({"a": [{"x": 1}, {"x": 2}]}, {"a": [{"x": 1}]}, False),  # list length differs
    ({"a": {"x": 1}}, {"a": {"x": 2}}, False),
    ({}, {"a": None}, False),
    ("v", "v", True),
])
def test_contains(live: Any, desired: Any, want: bool) -> None:
    assert es.contains(live, desired) is want


def test_server_defaults_do_not_force_updates() -> None:
    live = _live(CTRL_ME, PKG, spec={**CRD["spec"], "conversion": {"strategy": "None"}},
                 labels={"other-writer": "x"}, generation=3)
    [action] = es.plan_establish(_rev(), [CRD], {KEY: live}, ca_bundle=CA, namespace=NS).actions
    assert action.op is es.Op.SKIP


@pytest.mark.parametrize(("active", "live", "op", "refs"), DECISIONS)
def test_replan_from_seen_rebuilds_the_same_actions(
        active: bool, live: dict[str, Any] | None, op: es.Op,
        refs: list[dict[str, Any]] | None) -> None:
    rev = _rev(active, common_labels={"team": "a"})  # labels: live metadata merged in
    found = {KEY: live} if live else {}
    plan = es.plan_establish(rev, [CRD], found, ca_bundle=CA, namespace=NS)
    seen = es.seen(plan, found)
    assert seen[KEY].op is plan.actions[0].op
    assert es.replan(rev, [CRD], seen, ca_bundle=CA, namespace=NS) == plan.actions


def test_seen_keeps_only_live_metadata() -> None:
    live = _live(CTRL_ME, PKG, spec={"group": "old"}, labels={"l": "1"}, uid="u", generation=2)
    plan = es.plan_establish(_rev(), [CRD], {KEY: live}, ca_bundle=CA, namespace=NS)
    assert es.seen(plan, {KEY: live})[KEY].live == {"metadata": {
        "uid": "u", "generation": 2, "ownerReferences": [CTRL_ME, PKG], "labels": {"l": "1"},
        "resourceVersion": "7"}}


def test_replan_of_an_object_never_checked_raises() -> None:
    with pytest.raises(KeyError):
        es.replan(_rev(), [CRD], {}, ca_bundle=CA, namespace=NS)


@pytest.mark.parametrize("objects", [
    [{**_crd(), "status": {"storedVersions": []}}],
    [_crd(conversion={"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}})],
    [validating_webhooks()],
])
def test_planning_never_modifies_its_input(objects: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(objects)
    live = {ObjectKey.of(o): _live(CTRL_ME, PKG) for o in objects}
    for found in ({}, live):
        plan = es.plan_establish(_rev(common_labels={"a": "b"}), objects, found,
                                 ca_bundle=CA, namespace=NS)
        es.replan(_rev(), objects, es.seen(plan, found), ca_bundle=CA, namespace=NS)
    assert objects == before


def _shipping(*names: str) -> dict[str, Any]:
    """A revision whose ``status.objectRefs`` name the CRDs ``names``."""
    return {"status": {"objectRefs": [
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "name": n} for n in names]}}


def _crd_ref(name: str) -> es.Ref:
    return ("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)


RETIRED = _shipping("c.x", "a.x", "b.x")


@pytest.mark.parametrize(("revisions", "dropped"), [
    ([RETIRED], [_crd_ref("a.x"), _crd_ref("b.x"), _crd_ref("c.x")]),  # sorted
    ([RETIRED, _shipping("a.x", "d.x")], [_crd_ref("b.x"), _crd_ref("c.x")]),
    ([_shipping("a.x"), RETIRED, _shipping("b.x")], [_crd_ref("c.x")]),
    ([RETIRED, _shipping("a.x", "b.x", "c.x")], []),  # the new revision ships them all
    ([RETIRED, copy.deepcopy(RETIRED)], []),  # an equal revision is another revision
    ([RETIRED, {}], [_crd_ref("a.x"), _crd_ref("b.x"), _crd_ref("c.x")]),  # no status yet
])
def test_unshipped(revisions: list[dict[str, Any]], dropped: list[es.Ref]) -> None:
    assert es.unshipped(RETIRED, revisions) == dropped


def test_a_revision_that_established_nothing_drops_nothing() -> None:
    assert es.unshipped({}, [{}, RETIRED]) == []


@pytest.mark.parametrize(("current", "uids", "want"), [
    ([OLD_REV, PKG], {"rev-uid-1", "pkg-uid"}, []),
    ([OLD_REV, PKG, OTHER_PKG], {"rev-uid-1", "pkg-uid"}, [OTHER_PKG]),  # another package's
    ([OTHER_REV, OLD_REV, OTHER_PKG], {"rev-uid-1"}, [OTHER_REV, OTHER_PKG]),  # order kept
    ([PLAIN_ME], {"rev-uid-1", "pkg-uid"}, [PLAIN_ME]),
    ([], {"pkg-uid"}, []),
])
def test_without_owners(current: list[dict[str, Any]], uids: set[str],
                        want: list[dict[str, Any]]) -> None:
    assert es.without_owners(current, uids) == want


MRD_API = "apiextensions.crossplane.io/v1alpha1"


def _mrd(state: str | None, *refs: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"group": "example.org", "scope": "Cluster"}
    if state:
        spec["state"] = state
    obj: dict[str, Any] = {"apiVersion": MRD_API, "kind": "ManagedResourceDefinition",
                           "metadata": {"name": "things.example.org"}, "spec": spec}
    if refs:
        obj["metadata"].update({"ownerReferences": list(refs), "resourceVersion": "7"})
    return obj


@pytest.mark.parametrize(("shipped", "live", "op", "state"), [
    ("Inactive", "Active", es.Op.SKIP, "Active"),  # an activation since: kept, nothing to do
    (None, "Active", es.Op.SKIP, "Active"),  # shipped without a state (Inactive by default)
    ("Inactive", "Inactive", es.Op.SKIP, "Inactive"),
    ("Active", "Inactive", es.Op.UPDATE, "Active"),  # a package may activate its own
])
def test_a_live_active_mrd_is_never_written_back_to_inactive(
        shipped: str | None, live: str, op: es.Op, state: str) -> None:
    """As Crossplane's establisher merges it: activation is one way (and the MRD type's
    CEL rule refuses going back, on a real API server)."""
    mrd = _mrd(shipped)
    rev = _rev()
    ours = _mrd(live, es.controller_ref(rev), es.package_ref(rev))
    plan = es.plan_establish(rev, [mrd], {ObjectKey.of(mrd): ours}, ca_bundle=CA, namespace=NS)
    [action] = plan.actions
    assert (action.op, action.object["spec"]["state"]) == (op, state)
    seen = es.seen(plan, {ObjectKey.of(mrd): ours})
    assert [(a.op, a.object["spec"]["state"]) for a in es.replan(
        rev, [mrd], seen, ca_bundle=CA, namespace=NS)] == [(op, state)]


def test_an_adopted_active_mrd_keeps_its_state() -> None:
    """A revision taking control (an upgrade) of an MRD activated under the old one."""
    old = dict(OLD_REV)
    live = _mrd("Active", old, PKG)
    [action] = es.plan_establish(_rev(), [_mrd("Inactive")], {ObjectKey.of(live): live},
                                 ca_bundle=CA, namespace=NS).actions
    assert action.op is es.Op.ADOPT and action.object["spec"]["state"] == "Active"
    seen = es.seen(es.plan_establish(_rev(), [_mrd("Inactive")], {ObjectKey.of(live): live},
                                     ca_bundle=CA, namespace=NS), {ObjectKey.of(live): live})
    [again] = es.replan(_rev(), [_mrd("Inactive")], seen, ca_bundle=CA, namespace=NS)
    assert again.object["spec"]["state"] == "Active"  # from the slim live the check kept


GUARDS = [
    # an own tests what it was decided on; a status does not move any of it
    (es.Op.OWN, _live(OLD_REV, PKG, uid="u", generation=3, labels={"l": "1"}),
     {"uid": "u", "generation": 3, "ownerReferences": [OLD_REV, PKG], "labels": {"l": "1"},
      "annotations": None}),
    # nothing counts the body's changes: the resourceVersion instead
    (es.Op.TAKE, _live(OLD_REV, uid="u"),
     {"uid": "u", "generation": None, "ownerReferences": [OLD_REV], "labels": None,
      "annotations": None, "resourceVersion": "7"}),
    (es.Op.UPDATE, _live(OLD_REV, uid="u", generation=3), {}),  # a whole write: its rv
    (es.Op.CREATE, None, {}),
]


@pytest.mark.parametrize(("op", "live", "expect"), GUARDS)
def test_owners_only_writes_test_the_metadata_they_were_decided_on(
        op: es.Op, live: dict[str, Any] | None, expect: dict[str, Any]) -> None:
    assert es.guard(op, live) == expect


def test_an_own_carries_its_guard_through_seen_and_replan() -> None:
    live = _live(OLD_REV, PKG, uid="u", generation=3)
    plan = es.plan_establish(_rev(False), [CRD], {KEY: live}, ca_bundle=CA, namespace=NS)
    [action] = plan.actions
    assert action.op is es.Op.OWN
    assert action.expect == es.guard(es.Op.OWN, live)
    seen = es.seen(plan, {KEY: live})
    assert es.replan(_rev(False), [CRD], seen, ca_bundle=CA, namespace=NS) == plan.actions
