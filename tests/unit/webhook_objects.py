"""Package objects shared by the establish and webhook unit tests."""

from __future__ import annotations

from typing import Any


def validating_webhooks() -> dict[str, Any]:
    """A package's ValidatingWebhookConfiguration: one service webhook, one URL webhook."""
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "package-webhooks"},
            "webhooks": [
                {"name": "a.example.org", "clientConfig": {"service": {
                    "name": "x", "namespace": "y", "path": "/validate-a"}}},
                {"name": "b.example.org", "clientConfig": {"url": "https://elsewhere"}},
            ]}
