"""Webhook renaming and caBundle/service injection, for configurations and conversions."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from lockwright.errors import RuntimeNotReady
from lockwright.objects import webhooks as wh
from tests.unit.webhook_objects import validating_webhooks

NS = "crossplane-system"
CA = b"-----BEGIN CERTIFICATE-----\nZm9v\n-----END CERTIFICATE-----\n"
CA_B64 = base64.b64encode(CA).decode()


def _inject(obj: dict[str, Any], active: bool, ca: bytes | None,
            service: str | None = None) -> dict[str, Any]:
    return wh.inject_webhooks(obj, package_kind="Provider", package_name="nop", active=active,
                              ca=ca, namespace=NS, service=service)


def _crd(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.org"}, "spec": {"group": "example.org", **spec}}


def test_webhook_configuration_renamed_and_injected() -> None:
    got = _inject(validating_webhooks(), True, CA)
    assert got["metadata"]["name"] == "crossplane-provider-nop"
    assert [h["clientConfig"] for h in got["webhooks"]] == [
        {"caBundle": CA_B64, "service": {"name": "nop", "namespace": NS, "port": 9443,
                                         "path": "/validate-a"}},
        {"caBundle": CA_B64, "service": {"name": "nop", "namespace": NS, "port": 9443}},
    ]


def test_webhook_inactive_renamed_not_injected() -> None:
    got = _inject(validating_webhooks(), False, None)
    assert got["metadata"]["name"] == "crossplane-provider-nop"
    assert got["webhooks"] == validating_webhooks()["webhooks"]


@pytest.mark.parametrize("obj", [
    validating_webhooks(), _crd(conversion={"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"]}}),
])
def test_injection_needs_a_bundle(obj: dict[str, Any]) -> None:
    """Until the runtime provides one: it heals when the TLS Secret appears, so retried."""
    with pytest.raises(RuntimeNotReady) as caught:
        _inject(obj, True, None)
    assert caught.value.retryable


def test_conversion_webhook_injected() -> None:
    crd = _crd(conversion={"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1", "v1beta1"],
        "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/convert"}}}})
    got = _inject(crd, True, CA, service="custom-svc")
    assert got["spec"]["conversion"] == {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1", "v1beta1"],
        "clientConfig": {"caBundle": CA_B64, "service": {
            "name": "custom-svc", "namespace": NS, "port": 9443, "path": "/convert"}}}}
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"] == "s"


def test_conversion_none_untouched() -> None:
    crd = _crd(conversion={"strategy": "None"})
    assert _inject(crd, True, None) == crd


@pytest.mark.parametrize("active", [True, False])
def test_object_needing_nothing_is_returned_as_is(active: bool) -> None:
    # Not even copied: copying every CRD of a 2,000-CRD package cost seconds per pass.
    crd = _crd(conversion={"strategy": "None"})
    assert _inject(crd, active, CA) is crd


def test_renaming_copies_the_configuration() -> None:
    vwc = validating_webhooks()
    _inject(vwc, True, CA)
    assert vwc == validating_webhooks()


def test_conversion_v1beta1_crd() -> None:
    crd = {**_crd(conversion={"strategy": "Webhook"}),
           "apiVersion": "apiextensions.k8s.io/v1beta1"}
    got = _inject(crd, True, CA)
    assert got["spec"]["conversion"]["webhookClientConfig"]["caBundle"] == CA_B64


def test_mutating_configuration_renamed_too() -> None:
    mwc = {**validating_webhooks(), "kind": "MutatingWebhookConfiguration"}
    got = _inject(mwc, True, CA)
    assert got["metadata"]["name"] == "crossplane-provider-nop"
    assert all(h["clientConfig"]["caBundle"] == CA_B64 for h in got["webhooks"])


def test_other_objects_untouched() -> None:
    xrd = {"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
           "metadata": {"name": "c"}}
    assert _inject(xrd, True, None) == xrd
