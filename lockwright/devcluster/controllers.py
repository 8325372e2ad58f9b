"""The controllers kube-controller-manager would run, reduced to what clients observe.

* ``GarbageCollector``: ownerReference GC with Kubernetes' semantics. Each owner of a
  dependent is dangling (gone), waiting (deleted in the foreground) or solid; a dependent
  with a solid owner stays and loses its other references, one without is deleted.
  Foreground deletion holds ``foregroundDeletion`` until no blockOwnerDeletion dependent
  is left; orphan deletion strips the owner's references, then its ``orphan`` finalizer.
  Namespace deletion (contents first, then the namespace), CRD deletion (instances first).
* ``DeploymentSimulator``: like KWOK, fills in a Deployment's status shortly after each
  create or update, without running anything. The pod-template annotation
  ``devcluster.lockwright.dev/simulate: unavailable`` keeps it unavailable, and so does a
  container or init-container image matching one of ``unavailable_images`` (fnmatch).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockwright.devcluster.admission import CRD_GROUP, CRD_PLURAL, now
from lockwright.devcluster.cluster import CRD_FINALIZER, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Cluster
from lockwright.devcluster.store import Key

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
    """Owner-reference, foreground, orphan, namespace and CRD clean-up.

    kube-controller-manager's GC works from a graph and work queues; here one sweep reads
    every object once and indexes dependents by owner uid, so a sweep costs
    O(objects + references). Each decision re-reads live state under ``cluster.lock``,
    as the real GC re-reads the object before acting on it.
    """

    def __init__(self, cluster: Cluster, period: float = 1.0,
                 owner_references: bool = True) -> None:
        # Each sweep reads every object; spacing sweeps keeps it off the request path.
        super().__init__("devcluster-gc", period, min_interval=0.2)
        self.cluster = cluster
        # False: kube-controller-manager's --enable-garbage-collector=false, where nothing
        # acts on owner references or the orphan and foreground finalizers (the namespace
        # controller and the CRD clean-up are not the garbage collector, so they still run).
        self.owner_references = owner_references
        cluster.listeners.append(self._on_change)

    def _on_change(self, event: str, key: Key, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        if event == "DELETED" or meta.get("deletionTimestamp") or meta.get("ownerReferences"):
            self.poke()

    def step(self) -> None:
        """One sweep: attemptToDelete for live owned objects, finalizers for deleting ones."""
        objects = self.cluster.store.all_objects()
        dependents = _dependents_index(objects)
        for key, obj in objects:
            meta = obj["metadata"]
            if meta.get("deletionTimestamp"):
                self._finish_deleting(key, obj, dependents)
            elif (self.owner_references and meta.get("ownerReferences")
                  and not self._classify(obj).all_solid()):
                self._attempt_to_delete(key, meta["uid"], dependents)

    def _classify(self, obj: Obj) -> _Owners:
        """classifyReferences: each owner is dangling, waiting (foreground) or solid.

        A namespaced owner outside the dependent's namespace counts as absent, as the
        documentation says: cross-namespace owner references are not honoured.
        """
        owners = _Owners()
        namespace = obj["metadata"].get("namespace", "")
        for ref in obj["metadata"].get("ownerReferences") or []:
            uid = str(ref.get("uid", ""))
            owner = self.cluster.store.by_uid(uid)
            if owner is None or owner["metadata"].get("namespace", namespace) != namespace:
                owners.dangling.append(uid)
            elif _deleting_dependents(owner):
                owners.waiting.append(uid)
            else:
                owners.solid.append(uid)
        return owners

    def _attempt_to_delete(self, key: Key, uid: str, dependents: _Index) -> None:
        """attemptToDeleteItem on live state, so no write slips between decision and action.

        Like the real GC it leaves alone an object that is already being deleted (its own
        foreground processing, if any, is :meth:`_foreground`'s).
        """
        with self.cluster.lock:
            obj = self.cluster.store.get(key)
            meta = obj["metadata"] if obj is not None else {}
            if meta.get("uid") != uid or meta.get("deletionTimestamp"):
                return
            if obj is not None and meta.get("ownerReferences"):
                self._decide(key, obj, self._classify(obj), dependents)

    def _decide(self, key: Key, obj: Obj, owners: _Owners, dependents: _Index) -> None:
        """Keep an object with a solid owner, dropping its dangling and waiting references
        (which unblocks a foreground owner); otherwise delete it, in the foreground when an
        owner waits and it has dependents of its own, else as its own finalizers say."""
        uid = obj["metadata"]["uid"]
        if owners.solid:
            if not owners.all_solid():
                drop = {*owners.dangling, *owners.waiting}
                self.cluster.rewrite(key, _for_uid(uid, lambda o: _drop_owners(o, drop)))
        elif owners.waiting and self._referrers(uid, dependents):
            self._unblock_if_cycle(key, uid, dependents)
            self.cluster.delete_stored(key, "Foreground", uid)
        else:
            self.cluster.delete_stored(key, _own_policy(obj), uid)

    def _referrers(self, uid: str, dependents: _Index, blocking: bool = False) -> list[Obj]:
        """Objects in storage now that still reference ``uid`` (with blockOwnerDeletion
        if ``blocking``): the sweep's index may be stale, storage is not."""
        found: list[Obj] = []
        for key in dependents.get(uid, ()):
            obj = self.cluster.store.get(key)
            if obj is not None and any(
                    r.get("uid") == uid and (r.get("blockOwnerDeletion") or not blocking)
                    for r in obj["metadata"].get("ownerReferences") or []):
                found.append(obj)
        return found

    def _unblock_if_cycle(self, key: Key, uid: str, dependents: _Index) -> None:
        """An owner waits on this object, and one of its own dependents waits on it: a cycle
        would hold foreground deletion for ever, so (as the real GC does) this object's
        references stop blocking before it is deleted in the foreground."""
        if any(_deleting_dependents(d) for d in self._referrers(uid, dependents)):
            self.cluster.rewrite(key, _for_uid(uid, _unblock))

    def _finish_deleting(self, key: Key, obj: Obj, dependents: _Index) -> None:
        """Work an object being deleted waits for: its GC, namespace or CRD finalizer."""
        finalizers = obj["metadata"].get("finalizers") or []
        uid = obj["metadata"]["uid"]
        if ORPHAN_FINALIZER in finalizers and self.owner_references:
            self._orphan(key, uid, dependents)
        if FOREGROUND_FINALIZER in finalizers and self.owner_references:
            self._foreground(key, uid, dependents)
        if key[:2] == ("", "namespaces"):
            self._finalize_namespace(key)
        if key[:2] == (CRD_GROUP, CRD_PLURAL) and CRD_FINALIZER in finalizers:
            self._finalize_crd(key, obj)

    def _orphan(self, key: Key, uid: str, dependents: _Index) -> None:
        """attemptToOrphan: every dependent loses its reference to the owner and survives;
        then the ``orphan`` finalizer goes, and the owner with it unless others remain."""
        for dep_key in dependents.get(uid, ()):
            self.cluster.rewrite(dep_key, lambda o: _drop_owners(o, {uid}))
        self.cluster.rewrite(key, _for_uid(uid, lambda o: _drop_finalizer(o, ORPHAN_FINALIZER)))

    def _foreground(self, key: Key, uid: str, dependents: _Index) -> None:
        """processDeletingDependentsItem: the owner keeps ``foregroundDeletion`` while a
        dependent with blockOwnerDeletion is in storage. Its dependents are collected by
        :meth:`_attempt_to_delete`; those that do not block are deleted but not waited for."""
        with self.cluster.lock:
            if not self._referrers(uid, dependents, blocking=True):
                self.cluster.rewrite(key, _for_uid(
                    uid, lambda o: _drop_finalizer(o, FOREGROUND_FINALIZER)))

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


_Index = dict[str, list[Key]]


@dataclass
class _Owners:
    """One dependent's owner uids, sorted into classifyReferences' three kinds."""

    solid: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)

    def all_solid(self) -> bool:
        """Nothing for the GC to do: every owner exists and none waits on dependents."""
        return not self.dangling and not self.waiting


def _dependents_index(objects: list[tuple[Key, Obj]]) -> _Index:
    """Owner uid -> keys of the objects that reference it, built once per sweep."""
    index: _Index = defaultdict(list)
    for key, obj in objects:
        for ref in obj["metadata"].get("ownerReferences") or []:
            index[str(ref.get("uid", ""))].append(key)
    return index


def _deleting_dependents(obj: Obj) -> bool:
    """Being deleted in the foreground: the owner is waiting for its dependents."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and FOREGROUND_FINALIZER in (
        meta.get("finalizers") or [])


def _own_policy(obj: Obj) -> str:
    """The policy an object's existing GC finalizer asks for, Background without one."""
    finalizers = obj["metadata"].get("finalizers") or []
    if ORPHAN_FINALIZER in finalizers:
        return "Orphan"
    return "Foreground" if FOREGROUND_FINALIZER in finalizers else "Background"


def _for_uid(uid: str, change: Callable[[Obj], None]) -> Callable[[Obj], None]:
    """``change`` applied only to the object with ``uid``, never a namesake created since."""
    def guarded(obj: Obj) -> None:
        if obj["metadata"].get("uid") == uid:
            change(obj)
    return guarded


def _drop_owners(obj: Obj, uids: set[str]) -> None:
    refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") not in uids]
    if refs:
        obj["metadata"]["ownerReferences"] = refs
    else:
        obj["metadata"].pop("ownerReferences", None)


def _unblock(obj: Obj) -> None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("blockOwnerDeletion"):
            ref["blockOwnerDeletion"] = False


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
    """Writes Deployment status ``delay`` seconds after each spec change.

    ``unavailable_images``: fnmatch patterns; a Deployment with any pod-template container
    or init-container image matching one is kept unavailable, as the annotation keeps it.
    """

    def __init__(self, cluster: Cluster, delay: float = 0.05,
                 unavailable_images: Sequence[str] = ()) -> None:
        super().__init__("devcluster-deployments", 0.5)
        self.cluster = cluster
        self.delay = delay
        self.unavailable_images = tuple(unavailable_images)
        self._due: dict[Key, float] = {}
        self._lock = threading.Lock()
        cluster.listeners.append(self._on_change)

    def start(self) -> None:
        """Also revisit stored Deployments: the patterns may differ from the last run's."""
        for key, obj in self.cluster.store.items("apps", "deployments"):
            self._on_change("MODIFIED", key, obj)
        super().start()

    def _on_change(self, event: str, key: Key, obj: Obj) -> None:
        if key[:2] != ("apps", "deployments") or event == "DELETED":
            return
        if _desired_status(obj, self.unavailable_images) != _comparable(obj.get("status")):
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
            self.cluster.rewrite(key, self._simulate)
        with self._lock:
            if self._due:
                self.poke()

    def _simulate(self, obj: Obj) -> None:
        _simulate(obj, self.unavailable_images)


def _template_hash(obj: Obj) -> str:
    template = json.dumps((obj.get("spec") or {}).get("template") or {}, sort_keys=True)
    return hashlib.sha256(template.encode()).hexdigest()[:10]


def _unavailable(obj: Obj, patterns: Sequence[str]) -> bool:
    template = (obj.get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if annotations.get(SIMULATE_ANNOTATION) == "unavailable":
        return True
    return any(fnmatch.fnmatchcase(image, pattern)
               for image in _images(template) for pattern in patterns)


def _images(template: Obj) -> list[str]:
    """Every container and init-container image of a pod template."""
    spec = template.get("spec") or {}
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    return [c["image"] for c in containers if isinstance(c, dict) and isinstance(
        c.get("image"), str)]


def _desired_status(obj: Obj, patterns: Sequence[str] = ()) -> Obj:
    replicas = int((obj.get("spec") or {}).get("replicas", 1))
    status: Obj = {"observedGeneration": obj["metadata"].get("generation", 1),
                   "replicas": replicas, "updatedReplicas": replicas}
    if _unavailable(obj, patterns) and replicas > 0:
        status["unavailableReplicas"] = replicas
    elif replicas > 0:
        status.update(readyReplicas=replicas, availableReplicas=replicas)
    return status


def _comparable(status: Any) -> Obj:
    keys = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
            "availableReplicas", "unavailableReplicas")
    return {k: v for k, v in (status or {}).items() if k in keys}


def _simulate(obj: Obj, patterns: Sequence[str] = ()) -> None:
    name, stamp = obj["metadata"]["name"], now()
    rs = f"{name}-{_template_hash(obj)}"
    status = _desired_status(obj, patterns)
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
