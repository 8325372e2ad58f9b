"""Prepare a cluster for lockwright: CRDs, the system namespace, the ``default`` DRC, the Lock.

Run by ``lockwright crds install`` and by the worker at start-up. Every step is
idempotent: CRDs carry a hash of their desired manifest in an annotation and are only
replaced (by ``resourceVersion``) when it changed, and the other objects are created only
when missing, so administrators' edits of the DRC or the Lock survive.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import structlog

from lockwright.errors import KubeConflict, KubeForbidden, KubeNotFound
from lockwright.k8s.client import Kube
from lockwright.k8s.crds import load_crds
from lockwright.k8s.discovery import Resource
from lockwright.managed import convert
from lockwright.managed.convert import MRD_API_VERSION
from lockwright.managed.policy import DEFAULT_POLICY

log = structlog.get_logger("lockwright.k8s.bootstrap")

HASH_ANNOTATION = "lockwright.dev/manifest-sha256"
PKG_GROUP, PKG_BETA = "pkg.crossplane.io", "v1beta1"
CRD_GROUP, CRD_VERSION, CRD_PLURAL = "apiextensions.k8s.io", "v1", "customresourcedefinitions"
CRD_API, CRD_KIND = f"{CRD_GROUP}/{CRD_VERSION}", "CustomResourceDefinition"
PKG_API = f"{PKG_GROUP}/{PKG_BETA}"
DEFAULT_DRC = "default"
MRAP_API, MRAP_KIND = MRD_API_VERSION, convert.MRAP_KIND
LOCK_NAME = "lock"
ESTABLISH_TIMEOUT_S = 60.0
_CAS_ATTEMPTS = 5
# Written the moment their CRDs are Established, which discovery may serve a little later.
KINDS = (Resource(CRD_API, CRD_KIND, CRD_PLURAL, namespaced=False),
         Resource("v1", "Namespace", "namespaces", namespaced=False),
         Resource(PKG_API, "DeploymentRuntimeConfig", "deploymentruntimeconfigs",
                  namespaced=False),
         Resource(PKG_API, "Lock", "locks", namespaced=False),
         Resource(MRAP_API, MRAP_KIND, "managedresourceactivationpolicies", namespaced=False))


@dataclass
class BootstrapReport:
    """What a bootstrap did, by object name."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def record(self, outcome: str, name: str) -> None:
        """Add ``name`` under ``outcome`` (created, updated or unchanged)."""
        getattr(self, outcome).append(name)


def manifest_hash(obj: dict[str, Any]) -> str:
    """A stable hash of a manifest, ignoring the hash annotation itself."""
    clean: dict[str, Any] = json.loads(json.dumps(obj))
    clean.get("metadata", {}).get("annotations", {}).pop(HASH_ANNOTATION, None)
    return hashlib.sha256(json.dumps(clean, sort_keys=True).encode()).hexdigest()


def _with_hash(crd: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(crd))
    out["metadata"].setdefault("annotations", {})[HASH_ANNOTATION] = manifest_hash(crd)
    return out


def ensure_crd(kube: Kube, crd: dict[str, Any], current: dict[str, Any] | None = None) -> str:
    """Create or update one CRD; returns ``created``, ``updated`` or ``unchanged``.

    Args:
        kube: the connection.
        crd: the desired CRD.
        current: the stored CRD if already read (saves a request), else None.
    """
    desired = _with_hash(crd)
    name, want = crd["metadata"]["name"], desired["metadata"]["annotations"][HASH_ANNOTATION]
    for _ in range(_CAS_ATTEMPTS):
        if current is None:
            current = _create_or_read(kube, desired)
            if current is None:
                return "created"
        if (current["metadata"].get("annotations") or {}).get(HASH_ANNOTATION) == want:
            return "unchanged"
        desired["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            kube.update(desired)
            return "updated"
        except (KubeNotFound, KubeConflict):  # raced with another writer: read again
            current = None
    raise RuntimeError(f"CRD {name}: gave up after {_CAS_ATTEMPTS} conflicting writes")


def _create_or_read(kube: Kube, crd: dict[str, Any]) -> dict[str, Any] | None:
    """None once ``crd`` is created; the stored one when its name was taken.

    Raises:
        KubeNotFound: the stored one went again before it could be read.
    """
    try:
        kube.create(crd)
        return None
    except KubeConflict:
        stored = kube.get(CRD_API, CRD_KIND, crd["metadata"]["name"])
    if stored is None:
        raise KubeNotFound(f"CRD {crd['metadata']['name']} was deleted while being read",
                           404, "NotFound")
    return stored


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _stored_crds(kube: Kube, names: list[str]) -> dict[str, dict[str, Any]]:
    """Lockwright's own CRDs as stored, each read by name. Not a list of every CRD: a
    cluster with a 2,000-CRD Provider stores hundreds of MB of them, and a worker starting
    there timed out listing them (the full-size install benchmark, on kube-apiserver)."""
    stored = {name: kube.get(CRD_API, CRD_KIND, name) for name in names}
    return {name: crd for name, crd in stored.items() if crd is not None}


def wait_established(kube: Kube, names: list[str], timeout: float = ESTABLISH_TIMEOUT_S) -> None:
    """Poll the CRDs until each is ``Established``; raise ``TimeoutError`` past the deadline."""
    deadline, delay = time.monotonic() + timeout, 0.02
    pending = list(names)
    while True:
        stored = _stored_crds(kube, pending)
        pending = [n for n in pending if not _established(stored.get(n, {}))]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"CRDs not Established after {timeout:.0f}s: {', '.join(pending)}")
        time.sleep(delay)  # poll interval of a readiness check with a deadline
        delay = min(delay * 2, 0.5)


def install_crds(kube: Kube, report: BootstrapReport | None = None) -> BootstrapReport:
    """Apply every packaged CRD and wait until all are Established."""
    report = report or BootstrapReport()
    kube.discovery.know(*KINDS)
    crds = load_crds()
    stored = _stored_crds(kube, [c["metadata"]["name"] for c in crds])
    for crd in crds:
        name = crd["metadata"]["name"]
        outcome = ensure_crd(kube, crd, stored.get(name))
        report.record(outcome, f"crd/{name}")
        log.debug("crd", name=name, outcome=outcome)
    wait_established(kube, [c["metadata"]["name"] for c in crds])
    return report


def _create_if_missing(kube: Kube, obj: dict[str, Any]) -> str:
    try:
        kube.create(obj)
        return "created"
    except KubeConflict:
        return "unchanged"


def _ensure_namespace(kube: Kube, name: str) -> str:
    """The system namespace, read first: where it exists (deploy/ makes it), lockwright
    needs no right to create namespaces; created when missing.

    Raises:
        PermissionError: it is missing and this identity may not create it.
    """
    if kube.get("v1", "Namespace", name) is not None:
        return "unchanged"
    try:
        return _create_if_missing(kube, {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except KubeForbidden as exc:
        if exc.status != 403:
            raise
        raise PermissionError(
            f"the system namespace {name} does not exist and this identity may not create "
            f"it: create it (kubectl create namespace {name}), or set "
            "LOCKWRIGHT_SYSTEM_NAMESPACE to one that exists") from None


def ensure_system_objects(kube: Kube, namespace: str,
                          report: BootstrapReport | None = None,
                          activations: tuple[str, ...] = ()) -> BootstrapReport:
    """Create the system namespace, the ``default`` DRC, the ``lock`` Lock and, when
    ``activations`` are given, the ``default`` activation policy, if missing (as
    Crossplane's initializer makes it from its ``--activation`` flags)."""
    report = report or BootstrapReport()
    kube.discovery.know(*KINDS)
    report.record(_ensure_namespace(kube, namespace), f"namespace/{namespace}")
    drc = {"apiVersion": PKG_API, "kind": "DeploymentRuntimeConfig",
           "metadata": {"name": DEFAULT_DRC}, "spec": {}}
    report.record(_create_if_missing(kube, drc), f"deploymentruntimeconfig/{DEFAULT_DRC}")
    lock = {"apiVersion": PKG_API, "kind": "Lock",
            "metadata": {"name": LOCK_NAME}, "packages": []}
    report.record(_create_if_missing(kube, lock), f"lock/{LOCK_NAME}")
    if activations:
        policy = {"apiVersion": MRAP_API, "kind": MRAP_KIND,
                  "metadata": {"name": DEFAULT_POLICY}, "spec": {"activate": list(activations)}}
        report.record(_create_if_missing(kube, policy),
                      f"managedresourceactivationpolicy/{DEFAULT_POLICY}")
    return report


def bootstrap(kube: Kube, namespace: str, activations: tuple[str, ...] = ()) -> BootstrapReport:
    """Install the CRDs, then the system objects that depend on them.

    Args:
        kube: the connection (see :meth:`Kube.connect`).
        namespace: the system namespace (``crossplane-system`` by default).
        activations: patterns of the ``default`` activation policy (none: no policy).

    Returns:
        What was created, updated or left unchanged.
    """
    report = install_crds(kube)
    ensure_system_objects(kube, namespace, report, activations)
    log.info("bootstrap done", created=len(report.created), updated=len(report.updated),
             unchanged=len(report.unchanged), namespace=namespace)
    return report


def bootstrap_at(kubeconfig: str, namespace: str,
                 activations: tuple[str, ...] = ()) -> BootstrapReport:
    """:func:`bootstrap` over a connection of its own (see :meth:`Kube.connect`).

    Args:
        kubeconfig: the kubeconfig setting; empty for in-cluster or ~/.kube/config.
        namespace: the system namespace.
    """
    with Kube.connect(kubeconfig) as kube:
        return bootstrap(kube, namespace, activations)
