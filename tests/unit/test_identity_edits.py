"""Whether a live definition is still the type its install recorded (issue 30): the live
object as the API server stores it (defaults filled in by the devcluster's copy of
kube-apiserver's CRD defaulting) against the digest of the CRD as shipped."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from lockwright.devcluster.crd import default_crd
from lockwright.identity.digest import canonical_bytes, type_digest
from lockwright.identity.edits import _without_conversion, readings
from lockwright.identity.edits import edited as edited_of
from tests.e2e.packages import crd

Obj = dict[str, Any]
SCHEMA = {"type": "object", "properties": {"spec": {
    "type": "object", "properties": {"size": {"type": "integer"}}}}}


def edited(live: Obj, recorded: str) -> bool:
    """The answer, the same with the caller's canonical text as without it."""
    found = edited_of(live, recorded)
    assert edited_of(live, recorded, canonical_bytes(live)) is found
    return found


def shipped(**names: str) -> Obj:
    """A Widget CRD as a package ships it, ``names`` replacing its names (None drops)."""
    obj = crd("example.org", "Widget", schema=copy.deepcopy(SCHEMA), version="v1")
    obj["spec"]["names"] = {k: v for k, v in {**obj["spec"]["names"], **names}.items() if v}
    return obj


def served(obj: Obj) -> Obj:
    """``obj`` as the API server stores it: defaulted, with metadata and status of its own."""
    live = copy.deepcopy(obj)
    default_crd(live)
    live["metadata"].update(uid="u-1", resourceVersion="7", generation=1)
    live["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
    return live


def schema_edit(obj: Obj) -> None:
    props = obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    props["properties"]["size"]["type"] = "string"


def description_edit(obj: Obj) -> None:
    obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "mine"


def explicit_default(obj: Obj) -> None:
    obj["spec"]["conversion"] = {"strategy": "None"}


def no_edit(obj: Obj) -> None:
    del obj


@pytest.mark.parametrize("names", [
    {}, {"singular": "", "listKind": ""}, {"singular": ""}, {"listKind": ""},
    {"singular": "wdgt", "listKind": "WidgetItems"},
])
@pytest.mark.parametrize("conversion", [None, {"strategy": "None"}])
def test_the_servers_defaults_are_not_an_edit(names: dict[str, str],
                                              conversion: Obj | None) -> None:
    obj = shipped(**names)
    if conversion:
        obj["spec"]["conversion"] = conversion
    assert not edited(served(obj), type_digest(obj))


@pytest.mark.parametrize(("change", "is_edit"), [
    (no_edit, False), (schema_edit, True), (description_edit, True),
    # Writing the value the server defaults anyway changes nothing served.
    (explicit_default, False),
])
def test_a_hand_edit_of_the_live_object(change: Callable[[Obj], None], is_edit: bool) -> None:
    obj = shipped()
    live = served(obj)
    change(live)
    assert edited(live, type_digest(obj)) is is_edit


def test_an_mrd_and_its_crd_are_read_against_the_crds_digest() -> None:
    obj = shipped()
    mrd = served(obj)
    mrd.update(apiVersion="apiextensions.crossplane.io/v1alpha1",
               kind="ManagedResourceDefinition")
    mrd["spec"]["state"] = "Active"
    assert not edited(mrd, type_digest(obj))
    schema_edit(mrd)
    assert edited(mrd, type_digest(obj))


@pytest.mark.parametrize(("recorded", "want"), [
    ("", False),  # nothing recorded: nothing to be edited from
    ("sha256:" + "1" * 64, True), ("sha256:not-hex", True),
])
def test_what_is_recorded(recorded: str, want: bool) -> None:
    assert edited(served(shipped()), recorded) is want


def test_readings_try_the_likeliest_first_and_at_most_each_combination() -> None:
    live = served(shipped())
    found = list(readings(live))
    assert len(found) == 8
    first = found[0]["spec"]
    assert "conversion" not in first and first["names"]["singular"] == "widget"
    webhook = {"kind": "ValidatingWebhookConfiguration", "webhooks": []}
    assert list(readings(webhook)) == [webhook]


@pytest.mark.parametrize("names", [{}, {"singular": "", "listKind": ""}])
def test_the_conversion_default_cut_from_the_text_is_the_first_reading(
        names: dict[str, str]) -> None:
    live = served(shipped(**names))
    first = next(readings(live))
    assert _without_conversion(canonical_bytes(live)) == canonical_bytes(first)
    live["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}}}
    assert _without_conversion(canonical_bytes(live)) is None
