"""The ``scale`` subresource: an ``autoscaling/v1`` Scale view of ``spec.replicas``."""

from __future__ import annotations

from typing import Any

from lockwright.devcluster.errors import bad_request

Obj = dict[str, Any]


def scale_of(obj: Obj) -> Obj:
    """The Scale object kube-apiserver serves for a Deployment."""
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    labels = (spec.get("selector") or {}).get("matchLabels") or {}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                              "creationTimestamp") if k in meta},
            "spec": {"replicas": spec.get("replicas", 1)},
            "status": {"replicas": status.get("replicas", 0),
                       "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items()))}}


def replicas_of(scale: Any) -> int:
    """``spec.replicas`` of a Scale sent by a client; a clear 400 when it is missing."""
    replicas = ((scale or {}).get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
    if not isinstance(replicas, int) or replicas < 0:
        raise bad_request("Scale.autoscaling \"\" is invalid: spec.replicas: Invalid value:"
                          f" {replicas!r}: must be a non-negative integer")
    return replicas
