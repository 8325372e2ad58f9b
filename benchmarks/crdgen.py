"""Realistic CustomResourceDefinitions for benchmarks, shaped like upjet providers' CRDs.

provider-aws ships 2,065 CRDs in about 100 MB of YAML; most are 10–100 KB, a long tail
reaches 1.7 MB. ``crd_sizes`` draws sizes from a log-normal fitted to that spread (seeded,
so runs compare); ``make_crd`` builds a CRD whose schema is deeply nested objects with
descriptions, padded until its JSON is about the requested size.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

MAX_CRD = 1_700_000


def crd_sizes(count: int, total: int = 100_000_000, seed: int = 7) -> list[int]:
    """``count`` sizes in bytes summing to about ``total``, capped at 1.7 MB, one at the cap."""
    rng = random.Random(seed)
    raw = [rng.lognormvariate(math.log(30_000), 0.9) for _ in range(count)]
    scale = total / sum(raw)
    sizes = [min(MAX_CRD, max(4_000, int(r * scale))) for r in raw]
    sizes[0] = MAX_CRD
    return sizes


def _properties(rng: random.Random, depth: int, width: int) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for i in range(width):
        name = f"field{i}{rng.choice('abcdefgh')}"
        if depth > 0 and i % 3 == 0:
            props[name] = {"type": "object", "description": "Nested block. " * 4,
                           "properties": _properties(rng, depth - 1, width)}
        elif i % 3 == 1:
            props[name] = {"type": "array", "description": "List of values. " * 3,
                           "items": {"type": "string"}}
        else:
            props[name] = {"type": rng.choice(["string", "number", "boolean"]),
                           "description": "A provider field copied from the cloud API. " * 3}
    return props


def make_crd(index: int, size: int, group: str = "bench.example.org") -> dict[str, Any]:
    """A cluster-scoped CRD ``kind<index>`` whose JSON is roughly ``size`` bytes."""
    rng = random.Random(index)
    plural, kind = f"kind{index}s", f"Kind{index}"
    block = _properties(rng, 2, 6)
    block_size = len(json.dumps(block))
    for_provider: dict[str, Any] = {}
    for i in range(max(1, size // block_size)):
        for_provider[f"block{i}"] = {"type": "object", "properties": block}
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "forProvider": {"type": "object", "properties": for_provider},
            "deletionPolicy": {"type": "string", "enum": ["Orphan", "Delete"],
                               "default": "Delete"}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Cluster",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": f"{kind}List", "categories": ["crossplane"]},
                     "versions": [{"name": "v1beta1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema},
                                   "subresources": {"status": {}},
                                   "additionalPrinterColumns": [
                                       {"name": "READY", "type": "string",
                                        "jsonPath": ".status.conditions[?(@.type=='Ready')]"
                                                    ".status"}]}]}}
