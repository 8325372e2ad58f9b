"""Type digests (issue 23): stable across what does not change a type, different when a
byte of the definition that matters does."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from lockwright.identity import digest
from lockwright.managed.convert import to_mrd
from lockwright.objects import establish as est
from tests.e2e.packages import crd

Obj = dict[str, Any]
SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "size": {"type": "integer", "description": "How big."},
    "color": {"type": "string", "enum": ["red", "blue"]}}}}}


def widget() -> Obj:
    return crd("widgets.example.org", "Widget", schema=copy.deepcopy(SCHEMA))


def converting() -> Obj:
    obj = widget()
    obj["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "shipped", "namespace": "default",
                                     "path": "/convert"}}}}
    return obj


def webhook() -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "as-shipped"},
            "webhooks": [{"name": "widgets.example.org", "sideEffects": "None",
                          "admissionReviewVersions": ["v1"],
                          "clientConfig": {"service": {"name": "x", "namespace": "y",
                                                       "path": "/validate"}},
                          "rules": [{"operations": ["CREATE"], "apiGroups": ["example.org"],
                                     "apiVersions": ["v1"], "resources": ["widgets"]}]}]}


def reordered(obj: Any) -> Any:
    """The same data with every mapping's keys in reverse order."""
    if isinstance(obj, dict):
        return {k: reordered(obj[k]) for k in reversed(list(obj))}
    if isinstance(obj, list):
        return [reordered(v) for v in obj]
    return obj


def established(obj: Obj, **kw: Any) -> Obj:
    """``obj`` as an active revision establishes it: labels, annotations, owners, CA."""
    rev = est.Revision(name="p-0123456789ab", uid="u-1", kind="ProviderRevision",
                       package_kind="Provider", package_name="p", package_uid="u-0",
                       active=True, common_labels={"team": "a"},
                       common_annotations={"note": "b"})
    [out] = est.prepare([obj], rev, b"-----BEGIN CERTIFICATE-----\n", "crossplane-system",
                        kw.get("service", "p"))
    out = copy.deepcopy(out)
    out["metadata"]["ownerReferences"] = [est.controller_ref(rev), est.package_ref(rev)]
    out["metadata"]["resourceVersion"] = "42"
    out["status"] = {"acceptedNames": {"kind": "Widget"}}
    return out


@pytest.mark.parametrize("make", [widget, converting, webhook], ids=["crd", "conversion",
                                                                    "webhook"])
def test_the_same_type_keeps_its_digest(make: Any) -> None:
    shipped = make()
    assert established(shipped) != shipped  # the injections this test means to ignore
    same = {digest.type_digest(shipped), digest.type_digest(reordered(shipped)),
            digest.type_digest(yaml.safe_load(yaml.safe_dump(shipped, default_flow_style=True))),
            digest.type_digest(yaml.safe_load(yaml.safe_dump(shipped, sort_keys=True))),
            digest.type_digest(established(shipped)),
            digest.type_digest(established(shipped, service="renamed-by-a-drc"))}
    assert len(same) == 1 and same.pop().startswith("sha256:")


def test_an_mrd_has_the_digest_of_the_crd_it_serves() -> None:
    shipped = converting()
    assert {digest.type_digest(shipped), digest.type_digest(to_mrd(shipped, active=False)),
            digest.type_digest(to_mrd(shipped, active=True))} == {digest.type_digest(shipped)}
    assert digest.type_key(to_mrd(shipped, True)) == digest.type_key(shipped) == (
        "CustomResourceDefinition widgets.widgets.example.org")


def _set(path: str, value: Any) -> Any:
    def change(obj: Obj) -> None:
        *parents, last = path.split(".")
        for key in parents:
            obj = obj[int(key)] if isinstance(obj, list) else obj[key]
        obj[last] = value
    return change


SCHEMA_PATH = "spec.versions.0.schema.openAPIV3Schema.properties.spec.properties"


@pytest.mark.parametrize("change", [
    _set(f"{SCHEMA_PATH}.size.type", "string"),
    _set(f"{SCHEMA_PATH}.size.description", "How big, in units."),
    _set(f"{SCHEMA_PATH}.color.enum", ["red", "blue", "green"]),
    _set(f"{SCHEMA_PATH}.weight", {"type": "number"}),
    _set("spec.versions.0.served", False),
    _set("spec.versions.0.name", "v1beta1"),
    _set("spec.scope", "Namespaced"),
    _set("spec.names.shortNames", ["wd"]),
    _set("metadata.name", "gadgets.widgets.example.org"),
    _set("spec.conversion.webhook.clientConfig.service.path", "/convert-v2"),
], ids=["type", "description", "enum", "field-added", "served", "version", "scope",
        "short-names", "name", "conversion-path"])
def test_any_byte_that_matters_changes_the_digest(change: Any) -> None:
    other = converting()
    change(other)
    assert digest.type_digest(other) != digest.type_digest(converting())


def test_a_webhooks_rules_matter_and_its_name_does_not() -> None:
    renamed, narrowed = webhook(), webhook()
    renamed["metadata"]["name"] = "provider-p"
    narrowed["webhooks"][0]["rules"][0]["operations"] = ["UPDATE"]
    assert digest.type_digest(renamed) == digest.type_digest(webhook())
    assert digest.type_digest(narrowed) != digest.type_digest(webhook())


def test_the_api_digest_is_over_the_definitions_only_in_any_order() -> None:
    gadget = crd("widgets.example.org", "Gadget")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    api = digest.api_digest([widget(), gadget, webhook()])
    assert digest.api_digest([webhook(), other, gadget, widget()]) == api
    assert digest.api_digest([widget(), gadget]) != api
    assert digest.api_digest([established(widget()), to_mrd(gadget, True), webhook()]) == api



@pytest.mark.parametrize("key", [True, 200], ids=["on", "int"])
def test_yaml_keys_that_are_not_strings_digest_as_the_cached_pass_reads_them(key: Any) -> None:
    """YAML 1.1 reads a property ``on:`` as True and ``200:`` as 200; documents.jsonl
    writes them as JSON strings. Both passes give one digest, and neither raises."""
    import orjson

    shipped = widget()
    schema = shipped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"][key] = {"type": "string"}
    cached = orjson.loads(orjson.dumps(shipped, option=orjson.OPT_NON_STR_KEYS))
    assert digest.type_digest(shipped) == digest.type_digest(cached)
    assert digest.type_digest(shipped) != digest.type_digest(widget())
