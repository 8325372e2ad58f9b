"""kwok as the kubelet: its Stages, the Nodes it runs, and pods that never become Ready.

kwok's own ``pod-ready`` Stage marks every bound pod Running and Ready. For a runtime
that never starts (the upgrade gate's broken release), it is narrowed so that it passes
over pods with an image matching one of ``unavailable_images`` (fnmatch patterns, as
devcluster's ``--unavailable-images``) or with the annotation
``devcluster.lockwright.dev/simulate: unavailable`` (as devcluster honours it): such pods
stay Pending, so their Deployment stays unavailable, as the Deployment controller says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

STAGES = ("node-initialize.yaml", "node-heartbeat-with-lease.yaml", "pod-ready.yaml",
          "pod-complete.yaml", "pod-delete.yaml")
SIMULATE_ANNOTATION = "devcluster.lockwright.dev/simulate"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def jq_regex(pattern: str) -> str:
    """An fnmatch pattern (``*``, ``?``) as an anchored regular expression for jq's test()."""
    parts = {"*": ".*", "?": "."}
    return "^" + "".join(parts.get(ch, re.escape(ch)) for ch in pattern) + "$"


def _never_ready(patterns: Sequence[str]) -> list[dict[str, Any]]:
    """Expressions a pod must pass to be made Ready (each ``DoesNotExist`` or ``NotIn``)."""
    out: list[dict[str, Any]] = [{"key": f'.metadata.annotations["{SIMULATE_ANNOTATION}"]',
                                  "operator": "NotIn", "values": ["unavailable"]}]
    for pattern in patterns:
        regex = json.dumps(jq_regex(pattern))
        for containers in ("containers", "initContainers"):
            out.append({"key": f".spec.{containers}[]?.image | select(test({regex}))",
                        "operator": "DoesNotExist"})
    return out


def stages(directory: Path, unavailable_images: Sequence[str] = ()) -> str:
    """kwok's configuration: the Stages from ``directory``, pod-ready narrowed."""
    docs = []
    for name in STAGES:
        stage = yaml.safe_load((directory / name).read_text())
        if stage["metadata"]["name"] == "pod-ready":
            stage["spec"]["selector"]["matchExpressions"] += _never_ready(unavailable_images)
        docs.append(stage)
    return yaml.safe_dump_all(docs)


def node(name: str) -> dict[str, Any]:
    """A fake Node kwok manages (the annotation), with room for many pods."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                     "labels": {"type": "kwok", "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64",
                                "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"},
                   "capacity": {"cpu": "64", "memory": "256Gi", "pods": "500"}}}


def schedulable(obj: dict[str, Any]) -> bool:
    """True when the Node is Ready and the node-lifecycle controller lifted not-ready."""
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in (obj.get("status") or {}).get("conditions") or [])
    taints = [t.get("key") for t in (obj.get("spec") or {}).get("taints") or []]
    return ready and NOT_READY_TAINT not in taints
