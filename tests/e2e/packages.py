"""Small packages for end-to-end tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def crd(group: str, kind: str, description: str = "") -> Obj:
    """A minimal cluster-scoped CRD ``<kind>s.<group>``."""
    plural = kind.lower() + "s"
    schema: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if description:
        schema["description"] = description
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Cluster",
                     "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural,
                               "singular": kind.lower()},
                     "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}
