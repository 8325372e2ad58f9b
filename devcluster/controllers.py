"""The controllers kube-controller-manager would run, reduced to what clients observe.

* ``GarbageCollector``: ownerReference GC (dependents whose owners are all gone are
  deleted; dangling references beside a live owner are dropped), foreground deletion
  (``foregroundDeletion`` finalizer held until blocking dependents are gone), namespace
  deletion (contents first, then the namespace), CRD deletion (instances first).
* ``DeploymentSimulator``: like KWOK, fills in a Deployment's status shortly after each
  create or update, without running anything. The pod-template annotation
  ``devcluster.lockwright.dev/simulate: unavailable`` keeps it unavailable.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import defaultdict
from typing import Any

from devcluster.admission import CRD_GROUP, CRD_PLURAL, now
from devcluster.cluster import CRD_FINALIZER, Cluster
from devcluster.store import Key

Obj = dict[str, Any]
SIMULATE_ANNOTATION = "devcluster.lockwright.dev/simulate"


class _Loop:
    """A daemon thread that runs ``step`` when poked, and at least every ``period`` seconds."""

    def __init__(self, name: str, period: float, min_interval: float = 0.0) -> None:
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._period = period
        self._min_interval = min_interval
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)

    def poke(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._period)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.step()
            except Exception:  # noqa: BLE001 - a controller must outlive one bad object
                import traceback

                traceback.print_exc()
            # Coalesce pokes: a burst of writes costs one sweep, not one sweep per write.
            self._stop.wait(self._min_interval)

    def step(self) -> None:
        raise NotImplementedError


class GarbageCollector(_Loop):
    """Owner-reference, foreground, namespace and CRD clean-up."""

    def __init__(self, cluster: Cluster, period: float = 1.0) -> None:
        # Each sweep reads every object; spacing sweeps keeps it off the request path.
        super().__init__("devcluster-gc", period, min_interval=0.2)
        self.cluster = cluster
        cluster.listeners.append(self._on_change)

    def _on_change(self, event: str, key: Key, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        if event == "DELETED" or meta.get("deletionTimestamp") or meta.get("ownerReferences"):
            self.poke()

    def step(self) -> None:
        objects = self.cluster.store.all_objects()
        uids = {o["metadata"]["uid"] for _, o in objects}
        dependents: dict[str, list[tuple[Key, Obj]]] = defaultdict(list)
        for key, obj in objects:
            for ref in obj["metadata"].get("ownerReferences") or []:
                dependents[ref.get("uid", "")].append((key, obj))
        for key, obj in objects:
            self._collect_orphan(key, obj, uids)
            if obj["metadata"].get("deletionTimestamp"):
                self._finish_deleting(key, obj, dependents.get(obj["metadata"]["uid"], []))

    def _collect_orphan(self, key: Key, obj: Obj, uids: set[str]) -> None:
        refs = obj["metadata"].get("ownerReferences") or []
        if not refs:
            return
        alive = [r for r in refs if r.get("uid") in uids]
        if not alive:
            if not obj["metadata"].get("deletionTimestamp"):
                self.cluster.delete_stored(key)
        elif len(alive) < len(refs):
            self.cluster.rewrite(key, lambda o: o["metadata"].__setitem__("ownerReferences", [
                r for r in o["metadata"].get("ownerReferences") or [] if r.get("uid") in uids]))

    def _finish_deleting(self, key: Key, obj: Obj, deps: list[tuple[Key, Obj]]) -> None:
        finalizers = obj["metadata"].get("finalizers") or []
        if "foregroundDeletion" in finalizers:
            self._foreground(key, obj, deps)
        if key[:2] == ("", "namespaces"):
            self._finalize_namespace(key)
        if key[:2] == (CRD_GROUP, CRD_PLURAL) and CRD_FINALIZER in finalizers:
            self._finalize_crd(key, obj)

    def _foreground(self, key: Key, obj: Obj, deps: list[tuple[Key, Obj]]) -> None:
        uid = obj["metadata"]["uid"]
        blocking = False
        for dep_key, dep in deps:
            if not dep["metadata"].get("deletionTimestamp"):
                self.cluster.delete_stored(dep_key, "Foreground")
            refs = dep["metadata"].get("ownerReferences") or []
            blocking |= any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in refs)
        live_blocking = blocking and any(self.cluster.store.get(k) is not None for k, _ in deps)
        if not live_blocking:
            self.cluster.rewrite(key, lambda o: _drop_finalizer(o, "foregroundDeletion"))

    def _finalize_namespace(self, key: Key) -> None:
        ns = key[3]
        remaining = [k for k, _ in self.cluster.store.all_objects() if k[2] == ns]
        for k in remaining:
            if k[:2] != ("", "namespaces"):
                self.cluster.delete_stored(k)
        if not any(self.cluster.store.get(k) for k in remaining if k[:2] != ("", "namespaces")):
            self.cluster.rewrite(key, _finalize_ns)

    def _finalize_crd(self, key: Key, obj: Obj) -> None:
        spec = obj.get("spec") or {}
        group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
        instances = self.cluster.store.items(group, plural)
        for k, _ in instances:
            self.cluster.delete_stored(k)
        if not self.cluster.store.items(group, plural):
            self.cluster.rewrite(key, lambda o: _drop_finalizer(o, CRD_FINALIZER))


def _drop_finalizer(obj: Obj, name: str) -> None:
    finalizers = [f for f in obj["metadata"].get("finalizers") or [] if f != name]
    if finalizers:
        obj["metadata"]["finalizers"] = finalizers
    else:
        obj["metadata"].pop("finalizers", None)


def _finalize_ns(obj: Obj) -> None:
    obj.setdefault("spec", {})["finalizers"] = []
    obj["spec"].pop("finalizers")


class DeploymentSimulator(_Loop):
    """Writes Deployment status ``delay`` seconds after each spec change."""

    def __init__(self, cluster: Cluster, delay: float = 0.05) -> None:
        super().__init__("devcluster-deployments", 0.5)
        self.cluster = cluster
        self.delay = delay
        self._due: dict[Key, float] = {}
        self._lock = threading.Lock()
        cluster.listeners.append(self._on_change)

    def _on_change(self, event: str, key: Key, obj: Obj) -> None:
        if key[:2] != ("apps", "deployments") or event == "DELETED":
            return
        if _desired_status(obj) != _comparable(obj.get("status")):
            with self._lock:
                self._due.setdefault(key, time.monotonic() + self.delay)
            self.poke()

    def step(self) -> None:
        with self._lock:
            due = sorted(self._due.items(), key=lambda kv: kv[1])
        for key, at in due:
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(min(wait, self.delay))
            with self._lock:
                self._due.pop(key, None)
            self.cluster.rewrite(key, _simulate)
        with self._lock:
            if self._due:
                self.poke()


def _template_hash(obj: Obj) -> str:
    template = json.dumps((obj.get("spec") or {}).get("template") or {}, sort_keys=True)
    return hashlib.sha256(template.encode()).hexdigest()[:10]


def _unavailable(obj: Obj) -> bool:
    template = (obj.get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return annotations.get(SIMULATE_ANNOTATION) == "unavailable"


def _desired_status(obj: Obj) -> Obj:
    replicas = int((obj.get("spec") or {}).get("replicas", 1))
    status: Obj = {"observedGeneration": obj["metadata"].get("generation", 1),
                   "replicas": replicas, "updatedReplicas": replicas}
    if _unavailable(obj) and replicas > 0:
        status["unavailableReplicas"] = replicas
    elif replicas > 0:
        status.update(readyReplicas=replicas, availableReplicas=replicas)
    return status


def _comparable(status: Any) -> Obj:
    keys = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
            "availableReplicas", "unavailableReplicas")
    return {k: v for k, v in (status or {}).items() if k in keys}


def _simulate(obj: Obj) -> None:
    name, stamp = obj["metadata"]["name"], now()
    rs = f"{name}-{_template_hash(obj)}"
    status = _desired_status(obj)
    unavailable = "unavailableReplicas" in status
    old = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or []}
    available = ("False", "MinimumReplicasUnavailable",
                 "Deployment does not have minimum availability.") if unavailable else (
        "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    progressing = ("True", "ReplicaSetUpdated", f'ReplicaSet "{rs}" is progressing.') if (
        unavailable) else ("True", "NewReplicaSetAvailable",
                           f'ReplicaSet "{rs}" has successfully progressed.')
    status["conditions"] = [_condition("Available", *available, old, stamp),
                            _condition("Progressing", *progressing, old, stamp)]
    obj["status"] = status


def _condition(ctype: str, status: str, reason: str, message: str, old: dict[str, Obj],
               stamp: str) -> Obj:
    prev = old.get(ctype) or {}
    changed = prev.get("status") != status
    return {"type": ctype, "status": status, "lastUpdateTime": stamp,
            "lastTransitionTime": stamp if changed else prev.get("lastTransitionTime", stamp),
            "reason": reason, "message": message}
