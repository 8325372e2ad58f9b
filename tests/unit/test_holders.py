"""Who holds an object (lockwright.objects.holders): free, a live sibling revision, a stale
revision of the same package (restored from a backup, or re-created), or another package.

Matrix: the controller reference (none, the revision itself, our package's other revision,
another package's revision, another kind) × whether the object names our package's UID,
only its name, or another package × the controller revision's current UID (gone, another
UID, the same UID, not looked up).
"""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.objects import establish as es
from lockwright.objects import holders as ho
from lockwright.objects.holders import Hold
from lockwright.objects.lock import ObjectKey

V1 = "pkg.crossplane.io/v1"
REV = es.Revision(name="nop-222222222222", uid="rev-uid-2", kind="ProviderRevision",
                  package_kind="Provider", package_name="nop", package_uid="pkg-uid",
                  active=True)
ME = es.controller_ref(REV)
PKG = {"apiVersion": V1, "kind": "Provider", "name": "nop", "uid": "pkg-uid"}
OLD_PKG = {**PKG, "uid": "pkg-uid-before-restore"}
OLD_REV = {"apiVersion": V1, "kind": "ProviderRevision", "name": "nop-111111111111",
           "uid": "rev-uid-1", "controller": True, "blockOwnerDeletion": True}
SAME_NAME = {**OLD_REV, "name": REV.name, "uid": "rev-uid-before-restore"}
ALPHA_REV = {**OLD_REV, "name": "alpha-999999999999", "uid": "alpha-rev"}
ALPHA = {**PKG, "name": "alpha", "uid": "alpha-uid"}
CONFIG_REV = {**OLD_REV, "kind": "ConfigurationRevision"}
CONFIG = {**PKG, "kind": "Configuration", "uid": "config-uid"}
KEY = ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "things.example.org")


def _live(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": KEY.name, "resourceVersion": "3",
                         "ownerReferences": list(refs)},
            "spec": {"group": "example.org"}}


GONE, RECREATED = {OLD_REV["name"]: None}, {OLD_REV["name"]: "rev-uid-9"}
HOLDS = [
    ((), {}, Hold.FREE, None),
    ((PKG,), {}, Hold.FREE, None),  # only a plain owner: nobody controls it
    ((ME, PKG), {}, Hold.FREE, None),
    ((OLD_REV, PKG), {}, Hold.SIBLING, None),  # live hand-off: the package's UID is there
    ((OLD_REV, OLD_PKG), GONE, Hold.STALE, OLD_REV["name"]),  # restored; revision gone
    ((OLD_REV, OLD_PKG), RECREATED, Hold.STALE, OLD_REV["name"]),  # re-created revision
    ((SAME_NAME, OLD_PKG), {REV.name: REV.uid}, Hold.STALE, REV.name),  # restored as is
    ((OLD_REV, OLD_PKG), {OLD_REV["name"]: "rev-uid-1"}, Hold.FOREIGN, OLD_REV["name"]),
    ((OLD_REV, OLD_PKG), {}, Hold.FOREIGN, OLD_REV["name"]),  # not looked up: fail closed
    ((ALPHA_REV, ALPHA), {ALPHA_REV["name"]: "alpha-rev"}, Hold.FOREIGN, None),  # live other
    ((ALPHA_REV, ALPHA), {ALPHA_REV["name"]: None}, Hold.FOREIGN, None),  # gone, not ours
    ((OLD_REV,), GONE, Hold.FOREIGN, None),  # no package named: whose was it?
    ((CONFIG_REV, CONFIG), GONE, Hold.FOREIGN, None),  # another kind of package
    ((OLD_REV, ALPHA), GONE, Hold.FOREIGN, None),
]


@pytest.mark.parametrize(("refs", "current", "hold", "look_up"), HOLDS)
def test_hold_of(refs: tuple[dict[str, Any], ...], current: dict[str, str | None],
                 hold: Hold, look_up: str | None) -> None:
    live = _live(*refs)
    assert ho.to_look_up(live, REV) == look_up
    assert ho.hold_of(live, REV, current) is hold
    conflict = es.conflict_of(KEY, live, REV, current)
    assert (conflict is not None) == (hold is Hold.FOREIGN)


@pytest.mark.parametrize(("stale", "message"), [
    (ho.Stale(KEY, "ProviderRevision", "nop-1", "u1", None),
     "ProviderRevision nop-1 (UID u1), which no longer exists"),
    (ho.Stale(KEY, "ProviderRevision", "nop-1", "u1", "u2"),
     "ProviderRevision nop-1 (UID u1), which now has UID u2"),
])
def test_stale_message_names_the_old_uid(stale: ho.Stale, message: str) -> None:
    assert stale.message == message


@pytest.mark.parametrize(("refs", "dead"), [
    ([OLD_REV, OLD_PKG], {"rev-uid-1", "pkg-uid-before-restore"}),
    ([OLD_REV, OLD_PKG, ALPHA], {"rev-uid-1", "pkg-uid-before-restore"}),  # others stay
    ([OLD_REV, PKG], {"rev-uid-1"}),
    ([OLD_PKG], {"pkg-uid-before-restore"}),
    ([], set()),
])
def test_dead_uids(refs: list[dict[str, Any]], dead: set[str]) -> None:
    assert ho.dead_uids(refs, REV) == frozenset(dead)


CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": KEY.name}, "spec": {"group": "example.org"}}


@pytest.mark.parametrize(("refs", "current"), [
    ((OLD_REV, OLD_PKG), GONE),
    ((OLD_REV, OLD_PKG, ALPHA), RECREATED),
    ((SAME_NAME, OLD_PKG), {REV.name: REV.uid}),
])
def test_an_active_revision_adopts_a_stale_holders_object(
        refs: tuple[dict[str, Any], ...], current: dict[str, str | None]) -> None:
    live = _live(*refs)
    plan = es.plan_establish(REV, [CRD], {KEY: live}, ca_bundle=None, namespace="ns",
                             current=current)
    assert plan.conflicts == []
    [action] = plan.actions
    assert action.op is es.Op.ADOPT
    kept = [r for r in refs if r not in (OLD_REV, OLD_PKG, SAME_NAME)]
    assert action.object["metadata"]["ownerReferences"] == [*kept, PKG, ME]
    assert [(s.object, s.uid) for s in plan.stale] == [(KEY, refs[0]["uid"])]
    # What the checking pass keeps rebuilds the same write (the stale owners left out).
    seen = es.seen(plan, {KEY: live})
    assert es.replan(REV, [CRD], seen, ca_bundle=None, namespace="ns") == plan.actions


def test_an_inactive_revision_only_co_owns_a_stale_holders_object() -> None:
    inactive = es.Revision(**{**REV.__dict__, "active": False})
    live = _live(OLD_REV, OLD_PKG)
    plan = es.plan_establish(inactive, [CRD], {KEY: live}, ca_bundle=None, namespace="ns",
                             current=GONE)
    assert plan.conflicts == [] and plan.stale == []
    [action] = plan.actions
    assert action.op is es.Op.OWN
    assert action.object["metadata"]["ownerReferences"] == [
        OLD_REV, OLD_PKG, PKG, {k: ME[k] for k in ("apiVersion", "kind", "name", "uid")}]


def test_a_live_holder_of_another_package_is_still_a_conflict() -> None:
    live = _live(ALPHA_REV, ALPHA)
    plan = es.plan_establish(REV, [CRD], {KEY: live}, ca_bundle=None, namespace="ns",
                             current={ALPHA_REV["name"]: "alpha-rev"})
    assert plan.actions == [] and plan.stale == []
    assert plan.conflict_message == (f'{KEY} is already controlled by Provider alpha '
                                     f'(revision {ALPHA_REV["name"]})')


def _key(name: str) -> ObjectKey:
    return ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", name)


CRD_A, CRD_B, CRD_C, CRD_Z = (f'CustomResourceDefinition.apiextensions.k8s.io "{n}.x"'
                              for n in "abcz")


@pytest.mark.parametrize(("stale", "messages"), [
    ([], []),
    ([ho.Stale(_key("b.x"), "ProviderRevision", "nop-1", "u1", None),
      ho.Stale(_key("a.x"), "ProviderRevision", "nop-1", "u1", None)],
     [("took control of 2 objects from a stale owner, ProviderRevision nop-1 (UID u1), "
       f"which no longer exists: {CRD_A}, {CRD_B}")]),
    ([ho.Stale(_key(f"{n}.x"), "ProviderRevision", "nop-1", "u1", "u2") for n in "edcba"]
     + [ho.Stale(_key("z.x"), "ProviderRevision", "nop-0", "u0", None)],
     [("took control of 1 object from a stale owner, ProviderRevision nop-0 (UID u0), "
       f"which no longer exists: {CRD_Z}"),
      ("took control of 5 objects from a stale owner, ProviderRevision nop-1 (UID u1), "
       f"which now has UID u2: {CRD_A}, {CRD_B}, {CRD_C} and 2 more")]),
])
def test_adoption_messages(stale: list[ho.Stale], messages: list[str]) -> None:
    assert ho.adoption_messages(stale) == messages
