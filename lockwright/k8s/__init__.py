"""The Kubernetes seam: :class:`Kube` over the official client, errors mapped once.

Reads and writes (:mod:`.client`), list-and-watch (:mod:`.watch`), the bootstrap of CRDs
and system objects (:mod:`.bootstrap`), and the one kubeconfig loader
(:meth:`Kube.connect`: the kubeconfig given, else in-cluster in a Pod, else
``~/.kube/config``). Nothing outside this package imports ``kubernetes`` (an
import-linter contract in pyproject.toml holds to it); activities, the worker and the
watcher take a :class:`Kube`.
"""

from lockwright.k8s.client import Kube, Obj, deleting, no_older_than
from lockwright.k8s.discovery import Resource
from lockwright.k8s.events import NORMAL, WARNING

__all__ = ["NORMAL", "WARNING", "Kube", "Obj", "Resource", "deleting", "no_older_than"]
