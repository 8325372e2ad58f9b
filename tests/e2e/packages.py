"""Small packages for end-to-end tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
OPS = "ops.crossplane.io"
#: Crossplane kinds without a CRD among the test data or lockwright's (which serves MRDs and
#: activation policies): the tests serve them with open schemas (``crd``).
OPEN_KINDS = [(OPS, "Operation", "operations"), (OPS, "CronOperation", "cronoperations"),
              (OPS, "WatchOperation", "watchoperations")]


def crd(group: str, kind: str, description: str = "", plural: str = "",
        schema: Obj | None = None, version: str = "v1alpha1") -> Obj:
    """A cluster-scoped CRD ``<plural>.<group>`` (plural: ``<kind>s`` by default) serving
    one ``version``; its schema keeps every field unless one is given."""
    plural = plural or kind.lower() + "s"
    if schema is None:
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if description:
        schema = {**schema, "description": description}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Cluster",
                     "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural,
                               "singular": kind.lower()},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def composition(group: str) -> Obj:
    """A Composition: what a Provider may not ship (a lint failure)."""
    return {"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
            "metadata": {"name": f"xthings.{group}"},
            "spec": {"compositeTypeRef": {"apiVersion": f"{group}/v1alpha1",
                                          "kind": "XThing"}, "mode": "Pipeline",
                     "pipeline": []}}
