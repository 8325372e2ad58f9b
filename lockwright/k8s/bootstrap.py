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

from lockwright.k8s.crds import load_crds

log = structlog.get_logger("lockwright.k8s.bootstrap")

HASH_ANNOTATION = "lockwright.dev/manifest-sha256"
PKG_GROUP, PKG_BETA = "pkg.crossplane.io", "v1beta1"
CRD_GROUP, CRD_VERSION, CRD_PLURAL = "apiextensions.k8s.io", "v1", "customresourcedefinitions"
DEFAULT_DRC = "default"
LOCK_NAME = "lock"
ESTABLISH_TIMEOUT_S = 60.0
_CAS_ATTEMPTS = 5


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


def _status(exc: BaseException) -> int:
    return int(getattr(exc, "status", 0) or 0)


def ensure_crd(api: Any, crd: dict[str, Any], current: dict[str, Any] | None = None) -> str:
    """Create or update one CRD; returns ``created``, ``updated`` or ``unchanged``.

    Args:
        api: a ``CustomObjectsApi``.
        crd: the desired CRD.
        current: the stored CRD if already read (saves a request), else None.
    """
    from kubernetes.client.exceptions import ApiException

    desired = _with_hash(crd)
    name, want = crd["metadata"]["name"], desired["metadata"]["annotations"][HASH_ANNOTATION]
    for _ in range(_CAS_ATTEMPTS):
        if current is None:
            try:
                api.create_cluster_custom_object(CRD_GROUP, CRD_VERSION, CRD_PLURAL, desired)
                return "created"
            except ApiException as exc:
                if _status(exc) != 409:
                    raise
            current = api.get_cluster_custom_object(CRD_GROUP, CRD_VERSION, CRD_PLURAL, name)
        if (current["metadata"].get("annotations") or {}).get(HASH_ANNOTATION) == want:
            return "unchanged"
        desired["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            api.replace_cluster_custom_object(CRD_GROUP, CRD_VERSION, CRD_PLURAL, name, desired)
            return "updated"
        except ApiException as exc:
            if _status(exc) not in (404, 409):  # raced with another writer: read again
                raise
        current = None
    raise RuntimeError(f"CRD {name}: gave up after {_CAS_ATTEMPTS} conflicting writes")


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _stored_crds(api: Any) -> dict[str, dict[str, Any]]:
    listed = api.list_cluster_custom_object(CRD_GROUP, CRD_VERSION, CRD_PLURAL)
    return {item["metadata"]["name"]: item for item in listed.get("items", [])}


def wait_established(api: Any, names: list[str], timeout: float = ESTABLISH_TIMEOUT_S) -> None:
    """Poll the CRDs until each is ``Established``; raise ``TimeoutError`` past the deadline."""
    deadline, delay = time.monotonic() + timeout, 0.02
    while True:
        stored = _stored_crds(api)
        pending = [n for n in names if not _established(stored.get(n, {}))]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"CRDs not Established after {timeout:.0f}s: {', '.join(pending)}")
        time.sleep(delay)  # poll interval of a readiness check with a deadline
        delay = min(delay * 2, 0.5)


def install_crds(api_client: Any, report: BootstrapReport | None = None) -> BootstrapReport:
    """Apply every packaged CRD and wait until all are Established."""
    from kubernetes import client

    report = report or BootstrapReport()
    api = client.CustomObjectsApi(api_client)
    crds, stored = load_crds(), _stored_crds(api)
    for crd in crds:
        name = crd["metadata"]["name"]
        outcome = ensure_crd(api, crd, stored.get(name))
        report.record(outcome, f"crd/{name}")
        log.debug("crd", name=name, outcome=outcome)
    wait_established(api, [c["metadata"]["name"] for c in crds])
    return report


def _create_if_missing(create: Any, *args: Any) -> str:
    from kubernetes.client.exceptions import ApiException

    try:
        create(*args)
        return "created"
    except ApiException as exc:
        if _status(exc) == 409:
            return "unchanged"
        raise


def _ensure_namespace(core: Any, name: str) -> str:
    """The system namespace, read first: where it exists (deploy/ makes it), lockwright
    needs no right to create namespaces; created when missing.

    Raises:
        PermissionError: it is missing and this identity may not create it.
    """
    from kubernetes.client.exceptions import ApiException

    try:
        core.read_namespace(name)
        return "unchanged"
    except ApiException as exc:
        if _status(exc) != 404:
            raise
    try:
        return _create_if_missing(core.create_namespace, {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiException as exc:
        if _status(exc) != 403:
            raise
        raise PermissionError(
            f"the system namespace {name} does not exist and this identity may not create "
            f"it: create it (kubectl create namespace {name}), or set "
            "LOCKWRIGHT_SYSTEM_NAMESPACE to one that exists") from None


def ensure_system_objects(api_client: Any, namespace: str,
                          report: BootstrapReport | None = None) -> BootstrapReport:
    """Create the system namespace, the ``default`` DRC and the ``lock`` Lock if missing."""
    from kubernetes import client

    report = report or BootstrapReport()
    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    report.record(_ensure_namespace(core, namespace), f"namespace/{namespace}")
    drc = {"apiVersion": f"{PKG_GROUP}/{PKG_BETA}", "kind": "DeploymentRuntimeConfig",
           "metadata": {"name": DEFAULT_DRC}, "spec": {}}
    report.record(_create_if_missing(custom.create_cluster_custom_object, PKG_GROUP, PKG_BETA,
                                     "deploymentruntimeconfigs", drc),
                  f"deploymentruntimeconfig/{DEFAULT_DRC}")
    lock = {"apiVersion": f"{PKG_GROUP}/{PKG_BETA}", "kind": "Lock",
            "metadata": {"name": LOCK_NAME}, "packages": []}
    report.record(_create_if_missing(custom.create_cluster_custom_object, PKG_GROUP, PKG_BETA,
                                     "locks", lock), f"lock/{LOCK_NAME}")
    return report


def bootstrap(api_client: Any, namespace: str) -> BootstrapReport:
    """Install the CRDs, then the system objects that depend on them.

    Args:
        api_client: a ``kubernetes.client.ApiClient``.
        namespace: the system namespace (``crossplane-system`` by default).

    Returns:
        What was created, updated or left unchanged.
    """
    report = install_crds(api_client)
    ensure_system_objects(api_client, namespace, report)
    log.info("bootstrap done", created=len(report.created), updated=len(report.updated),
             unchanged=len(report.unchanged), namespace=namespace)
    return report
