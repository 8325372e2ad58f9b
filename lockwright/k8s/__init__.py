"""The Kubernetes seam: :class:`Kube` over the official client, errors mapped once.

Nothing outside this package imports ``kubernetes``; activities take a :class:`Kube`.
"""

from lockwright.k8s.client import Kube, Obj
from lockwright.k8s.discovery import Resource
from lockwright.k8s.events import NORMAL, WARNING

__all__ = ["NORMAL", "WARNING", "Kube", "Obj", "Resource"]
