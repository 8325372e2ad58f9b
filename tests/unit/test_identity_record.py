"""What an install records of API identity (issue 23): type digests on the definitions it
establishes, the revision's annotations, the Lock entry's fields, the runtime image."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
import yaml

from lockwright.identity import names
from lockwright.identity.digest import api_digest, type_digest
from lockwright.identity.record import lock_fields, revision_patch, stamped
from lockwright.managed.convert import Conversion
from lockwright.objects import establish as est
from lockwright.objects.lock import ObjectKey
from lockwright.runtime.manifests import RuntimeInput, render_deployment, runtime_image
from lockwright.xpkg.parse import scan_package
from tests.e2e.packages import crd
from tests.unit.webhook_objects import validating_webhooks

Obj = dict[str, Any]
A, B, C = ("sha256:" + x * 64 for x in "abc")
NS = "crossplane-system"
CA = b"-----BEGIN CERTIFICATE-----\nZm9v\n-----END CERTIFICATE-----\n"
WIDGETS = crd("example.org", "Widget", description="A widget.")
META = {"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider",
        "metadata": {"name": "provider-x"}}


def _rev(conversion: Conversion | None = None, **kw: Any) -> est.Revision:
    return est.Revision(name="x-222222222222", uid="rev-uid", kind="ProviderRevision",
                        package_kind="Provider", package_name="x", package_uid="pkg-uid",
                        active=True, conversion=conversion, **kw)


def _digest_of(obj: Obj) -> str:
    return str(obj["metadata"]["annotations"][names.TYPE_DIGEST])


@pytest.mark.parametrize("shipped", [WIDGETS, validating_webhooks()])
def test_a_definition_carries_the_digest_of_itself_as_shipped(shipped: Obj) -> None:
    before = copy.deepcopy(shipped)
    out = stamped(shipped)
    assert _digest_of(out) == type_digest(before)
    assert shipped == before  # the input is not modified
    assert stamped(out) == out  # stamping again changes nothing


def test_a_digest_the_package_ships_is_replaced_by_the_real_one() -> None:
    lying = copy.deepcopy(WIDGETS)
    lying["metadata"]["annotations"] = {names.TYPE_DIGEST: A, "keep": "me"}
    out = stamped(lying)
    assert out["metadata"]["annotations"] == {names.TYPE_DIGEST: type_digest(WIDGETS),
                                              "keep": "me"}


def test_other_objects_carry_no_digest() -> None:
    composition = {"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
                   "metadata": {"name": "c"}, "spec": {}}
    assert stamped(composition) is composition


def test_an_mrd_and_its_crd_carry_the_crds_digest() -> None:
    """Stamped before conversion, as the establisher streams them."""
    mrd, again = Conversion(default_active=True).objects(stamped(WIDGETS))
    assert mrd["kind"] == "ManagedResourceDefinition"
    assert _digest_of(mrd) == _digest_of(again) == type_digest(WIDGETS)


@pytest.mark.parametrize("conversion", [None, Conversion(default_active=True)])
def test_a_second_establish_with_nothing_changed_writes_nothing(
        conversion: Conversion | None) -> None:
    rev = _rev(conversion, common_labels={"team": "a"})
    shipped = [stamped(o) for o in (validating_webhooks(), WIDGETS)]
    objects = [x for o in shipped for x in (conversion.objects(o) if conversion else [o])]
    first = est.plan_establish(rev, objects, {}, ca_bundle=CA, namespace=NS)
    assert {a.op for a in first.actions} == {est.Op.CREATE}
    live = {a.key: {**copy.deepcopy(a.object), "metadata": {
        **copy.deepcopy(a.object["metadata"]), "resourceVersion": "1"}} for a in first.actions}
    again = est.plan_establish(rev, objects, live, ca_bundle=CA, namespace=NS)
    assert {a.op for a in again.actions} == {est.Op.SKIP}
    assert all(_digest_of(a.object) for a in again.actions)


def test_a_live_object_established_before_digests_gets_one_update() -> None:
    rev = _rev()
    [created] = est.plan_establish(rev, [WIDGETS], {}, ca_bundle=CA, namespace=NS).actions
    live = {**copy.deepcopy(created.object), "metadata": {
        **copy.deepcopy(created.object["metadata"]), "resourceVersion": "1"}}
    [action] = est.plan_establish(rev, [stamped(WIDGETS)], {ObjectKey.of(WIDGETS): live},
                                  ca_bundle=CA, namespace=NS).actions
    assert action.op is est.Op.UPDATE and _digest_of(action.object) == type_digest(WIDGETS)


def test_the_summary_api_digest_is_the_api_digest_of_what_the_package_ships() -> None:
    gadgets = crd("example.org", "Gadget")
    text = yaml.safe_dump_all([META, WIDGETS, validating_webhooks(), gadgets])
    summary = scan_package(io.StringIO(text))
    assert summary.api_digest == api_digest([WIDGETS, validating_webhooks(), gadgets])
    assert summary.types["CustomResourceDefinition widgets.example.org"] == type_digest(WIDGETS)
    assert len(summary.types) == 3


@pytest.mark.parametrize(("current", "api", "base", "controller", "patch"), [
    ({}, A, B, C, {names.API_DIGEST: A, names.BASE_LAYER: B, names.CONTROLLER_DIGEST: C}),
    ({names.API_DIGEST: A, names.BASE_LAYER: B, names.CONTROLLER_DIGEST: C}, A, B, C, {}),
    ({names.API_DIGEST: A, names.BASE_LAYER: B, names.CONTROLLER_DIGEST: C}, A, B, A,
     {names.CONTROLLER_DIGEST: A}),  # a controller-only change
    ({names.API_DIGEST: A, names.BASE_LAYER: B, names.CONTROLLER_DIGEST: C}, A, "", "",
     {names.BASE_LAYER: None, names.CONTROLLER_DIGEST: None}),  # unknown now: removed
    ({"other": "x"}, A, "", "", {names.API_DIGEST: A}),  # nothing to remove
    (None, A, "", "", {names.API_DIGEST: A}),
])
def test_revision_patch(current: dict[str, str] | None, api: str, base: str, controller: str,
                        patch: dict[str, str | None]) -> None:
    assert revision_patch(current, api, base, controller) == patch


@pytest.mark.parametrize(("annotations", "fields"), [
    ({names.API_DIGEST: A, names.BASE_LAYER: B, names.CONTROLLER_DIGEST: C, "x": "y"},
     {"apiDigest": A, "baseLayer": B, "controllerDigest": C}),
    ({names.API_DIGEST: A}, {"apiDigest": A}),  # a Configuration: no controller
    ({names.API_DIGEST: A, names.CONTROLLER_DIGEST: ""}, {"apiDigest": A}),
    ({}, {}),
    (None, {}),
])
def test_lock_fields(annotations: dict[str, str] | None, fields: dict[str, str]) -> None:
    assert lock_fields(annotations) == fields


def _drc(*containers: Obj) -> Obj:
    return {"spec": {"deploymentTemplate": {"spec": {"template": {"spec": {
        "containers": list(containers)}}}}}}


@pytest.mark.parametrize(("drc", "controller", "image"), [
    (None, None, None),  # the package image is the runtime
    (None, "reg.example.org/ctl:v1", "reg.example.org/ctl:v1"),
    (_drc({"name": "package-runtime", "image": "reg.example.org/drc:v2"}),
     "reg.example.org/ctl:v1", "reg.example.org/drc:v2"),  # the DRC wins
    (_drc({"name": "package-runtime"}), "reg.example.org/ctl:v1", "reg.example.org/ctl:v1"),
    (_drc({"name": "sidecar", "image": "reg.example.org/side:v1"}), None, None),
    ({"spec": {}}, None, None),
])
def test_runtime_image(drc: Obj | None, controller: str | None, image: str | None) -> None:
    assert runtime_image(drc, controller) == image
    # ... the image the runtime Deployment is rendered with, whose digest is recorded
    inp = RuntimeInput(kind="Provider", package_name="x", revision_name="x-2", revision_uid="u",
                       namespace=NS, image="reg.example.org/pkg:v1", controller_image=controller)
    pod = render_deployment(inp, copy.deepcopy(drc))["spec"]["template"]["spec"]
    runtime = next(c for c in pod["containers"] if c["name"] == "package-runtime")
    assert runtime["image"] == (image or inp.image)
