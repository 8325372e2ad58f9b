"""The API server's object semantics, independent of HTTP.

``Cluster`` owns the store and the set of served resource types. Every write goes through
:meth:`Cluster._admit` (metadata rules, defaults, pruning, validation) and
:meth:`Cluster._commit` (resourceVersion, generation, managedFields, event), under the
store lock so compare-and-swap on ``metadata.resourceVersion`` is exact.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from typing import Any

from lockwright.devcluster import apply, crd, patch, scale, vap
from lockwright.devcluster.admission import (CRD_GROUP, CRD_PLURAL, WriteOptions, admit, now,
                                  prepare_body)
from lockwright.devcluster.builtins import BUILTINS
from lockwright.devcluster.errors import (ApiError, already_exists, bad_request, conflict, forbidden,
                               invalid, not_found, unsupported_media_type)
from lockwright.devcluster.store import Key, Store
from lockwright.devcluster.types import ResourceType, clone

Obj = dict[str, Any]
CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
BOOT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_GENERATION_KINDS = {"Deployment", "CustomResourceDefinition", "ValidatingWebhookConfiguration",
                     "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
                     "ValidatingAdmissionPolicyBinding"}
_IMMUTABLE_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                   "generation", "selfLink")


class Cluster:
    """All served resources, their objects, and the rules that govern writes."""

    def __init__(self, data_dir: str, history: int = 10_000) -> None:
        self.store = Store(data_dir, history)
        self.lock = self.store.lock
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        # Which keys of _types each CRD serves: finding them by scanning _types made every
        # CRD write cost O(CRDs), so thousands of CRDs slowed each other down.
        self._crd_keys: dict[str, list[tuple[str, str, str]]] = {}
        self.types_generation = 0
        self.listeners: list[Callable[[str, Key, Obj], None]] = []
        # Called with (type, new object, old object) before any write is committed (dry
        # runs too); raising refuses it. The RBAC guard's escalation check is one.
        self.write_checks: list[Callable[[ResourceType, Obj, Obj | None], None]] = []
        # ValidatingAdmissionPolicies: every create, update and delete passes them.
        self.admission_policies = vap.Policies(self.store, self.served)
        self.listeners.append(self.admission_policies.on_event)
        self.write_checks.append(self.admission_policies.check_write)
        for rt in BUILTINS:
            self._types[(rt.group, rt.version, rt.plural)] = rt
        for _, obj in self.store.items(CRD_GROUP, CRD_PLURAL):
            self._register_crd(obj)
        for ns in BOOT_NAMESPACES:
            if self.store.get(("", "namespaces", "", ns)) is None:
                self.create(self.resource("", "v1", "namespaces"), None,
                            {"metadata": {"name": ns}}, WriteOptions(field_manager="devcluster"))

    # -- resource types ----------------------------------------------------------------

    def resource(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self._types.get((group, version, plural))
        if rt is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return rt

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def served(self) -> list[ResourceType]:
        return list(self._types.values())

    def storage_type(self, group: str, plural: str) -> ResourceType | None:
        for rt in self._types.values():
            if rt.group == group and rt.plural == plural and rt.storage:
                return rt
        return None

    def _register_crd(self, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        self._drop_crd_types(name)
        keys = self._crd_keys[name] = []
        for rt in crd.resource_types(obj):
            keys.append((rt.group, rt.version, rt.plural))
            self._types[keys[-1]] = rt
        self.types_generation += 1

    def _unregister_crd(self, name: str) -> None:
        self._drop_crd_types(name)
        self.types_generation += 1

    def _drop_crd_types(self, name: str) -> None:
        for key in self._crd_keys.pop(name, []):
            if (rt := self._types.get(key)) is not None and rt.crd_name == name:
                del self._types[key]

    # -- reads ---------------------------------------------------------------------------

    @staticmethod
    def key(rt: ResourceType, namespace: str | None, name: str) -> Key:
        return (rt.group, rt.plural, namespace or "" if rt.namespaced else "", name)

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self.store.get(self.key(rt, namespace, name))
        if obj is None:
            raise not_found(rt, name)
        return self.present(rt, obj)

    @staticmethod
    def present(rt: ResourceType, obj: Obj) -> Obj:
        """A stored object as seen through the requested version.

        A view, not a copy: stored objects are never mutated after commit, and callers
        that change the result ``clone`` it first.
        """
        out: Obj = {"apiVersion": rt.group_version, "kind": obj.get("kind", rt.kind),
                    "metadata": obj.get("metadata", {})}
        for k, v in obj.items():
            if k not in out:
                out[k] = v
        return out

    def list_objects(self, rt: ResourceType, namespace: str | None) -> tuple[list[Obj], int]:
        """Every object of ``rt`` (in ``namespace`` if given) and the version they were read at."""
        with self.lock:
            return [o for _, o in self.store.items(rt.group, rt.plural, namespace)], self.store.rv

    # -- writes ------------------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: str | None, body: Obj,
               opts: WriteOptions, managed: list[Obj] | None = None) -> Obj:
        obj = prepare_body(rt, namespace, body)
        meta = obj["metadata"]
        with self.lock:
            self._check_crd_live(rt)
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._generate_name(rt, namespace, meta["generateName"])
            self._check_namespace(rt, namespace, meta.get("name", ""))
            key = self.key(rt, namespace, meta.get("name", ""))
            if self.store.get(key) is not None and meta.get("name"):
                raise already_exists(rt, meta["name"])
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=now())
            for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(k, None)
            if rt.has_status and rt.kind != "Namespace":
                obj.pop("status", None)
            admit(rt, obj, None, opts)
            if self._tracks_generation(rt):
                meta["generation"] = 1
            if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL:
                meta.setdefault("finalizers", [])
                if CRD_FINALIZER not in meta["finalizers"]:
                    meta["finalizers"].append(CRD_FINALIZER)
            _set_managed(meta, managed or apply.track_update(
                None, obj, manager=opts.field_manager, api_version=rt.group_version,
                kind=rt.kind, schema=rt.schema, now=now()))
            return self._commit(rt, key, obj, None, opts)

    def _check_crd_live(self, rt: ResourceType) -> None:
        if rt.crd_name is None:
            return
        owner = self.store.get((CRD_GROUP, CRD_PLURAL, "", rt.crd_name))
        if owner is not None and owner["metadata"].get("deletionTimestamp"):
            raise ApiError(405, "MethodNotAllowed", "create not allowed while custom resource"
                           " definition is terminating")

    def update(self, rt: ResourceType, namespace: str | None, name: str, body: Obj,
               opts: WriteOptions, subresource: str = "") -> Obj:
        new = prepare_body(rt, namespace, body, name)
        with self.lock:
            key = self.key(rt, namespace, name)
            old = self.store.get(key)
            if old is None:
                raise not_found(rt, name)
            sent_rv = new["metadata"].get("resourceVersion")
            if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
                raise conflict(rt, name)
            if not sent_rv and rt.is_custom:
                raise invalid(rt, name, f'{rt.kind}.{rt.group} "{name}" is invalid: metadata.'
                              "resourceVersion: Invalid value: 0x0: must be specified for an update",
                              [{"reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                                "message": "Invalid value: 0x0: must be specified for an update"}])
            return self._replace(rt, key, old, new, opts, subresource, "Update")

    def patch(self, rt: ResourceType, namespace: str | None, name: str, body: bytes,
              content_type: str, opts: WriteOptions, subresource: str = "") -> tuple[Obj, bool]:
        """Apply a patch; returns the object and whether it was created (server-side apply)."""
        ctype = content_type.split(";")[0].strip()
        with self.lock:
            key = self.key(rt, namespace, name)
            old = self.store.get(key)
            if ctype == "application/apply-patch+yaml":
                return self._apply(rt, namespace, name, key, old, body, opts, subresource)
            if old is None:
                raise not_found(rt, name)
            current = clone(self.present(rt, old))
            new = self._patched(rt, current, body, ctype)
            if not isinstance(new, dict):
                raise bad_request("the patch did not produce an object")
            sent_rv = (new.get("metadata") or {}).get("resourceVersion")
            if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
                raise conflict(rt, name)
            new = prepare_body(rt, namespace, new, name)
            return self._replace(rt, key, old, new, opts, subresource, "Update"), False

    def update_scale(self, rt: ResourceType, namespace: str | None, name: str,
                     change: Callable[[Obj], Any], opts: WriteOptions) -> Obj:
        """Read-modify-write ``spec.replicas`` through the scale subresource."""
        with self.lock:
            key = self.key(rt, namespace, name)
            old = self.store.get(key)
            if old is None or "scale" not in rt.subresources:
                raise not_found(rt, name)
            wanted = change(scale.scale_of(old))
            sent_rv = ((wanted.get("metadata") or {}) if isinstance(wanted, dict) else {}).get(
                "resourceVersion")
            if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
                raise conflict(rt, name)
            new = clone(old)
            new.setdefault("spec", {})["replicas"] = scale.replicas_of(wanted)
            return scale.scale_of(self._replace(rt, key, old, new, opts, "", "Update"))

    def patch_scale(self, rt: ResourceType, namespace: str | None, name: str, body: bytes,
                    content_type: str, opts: WriteOptions) -> Obj:
        ctype = content_type.split(";")[0].strip()
        return self.update_scale(rt, namespace, name,
                                 lambda current: self._patched(rt, current, body, ctype), opts)

    def _patched(self, rt: ResourceType, current: Obj, body: bytes, ctype: str) -> Any:
        document = _json(body)
        try:
            if ctype == "application/json-patch+json":
                return patch.json_patch(current, document)
            if ctype == "application/merge-patch+json":
                return patch.merge_patch(current, document)
            if ctype == "application/strategic-merge-patch+json" and not rt.is_custom:
                return patch.strategic_merge_patch(current, document, rt.group_version, rt.kind)
        except patch.PatchError as exc:
            raise ApiError(exc.code, _patch_reason(exc.code), str(exc), {})
        raise unsupported_media_type(ctype)

    def _apply(self, rt: ResourceType, namespace: str | None, name: str, key: Key,
               old: Obj | None, body: bytes, opts: WriteOptions, subresource: str
               ) -> tuple[Obj, bool]:
        if not opts.field_manager:
            raise invalid(rt, name, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager:'
                          " Required value: is required for apply patch",
                          [{"reason": "FieldValueRequired", "field": "fieldManager",
                            "message": "Required value: is required for apply patch"}])
        config = _yaml(body)
        if not isinstance(config, dict):
            raise bad_request("error decoding YAML: the apply patch is not an object")
        live = clone(self.present(rt, old)) if old is not None else None
        try:
            new = apply.server_side_apply(live, _applicable(rt, config, subresource),
                                          manager=opts.field_manager, force=opts.force,
                                          api_version=rt.group_version, kind=rt.kind,
                                          schema=rt.schema, now=now(), subresource=subresource)
        except apply.ApplyConflict as exc:
            raise ApiError(409, "Conflict", str(exc), {"causes": exc.causes})
        except patch.PatchError as exc:
            raise ApiError(exc.code, _patch_reason(exc.code), str(exc), {})
        managed = new["metadata"].get("managedFields")
        if old is None:
            if subresource:
                raise not_found(rt, name)
            new["metadata"].setdefault("name", name)
            return self.create(rt, namespace, new, opts, managed), True
        new = prepare_body(rt, namespace, new, name)
        return self._replace(rt, key, old, new, opts, subresource, "Apply"), False

    def _replace(self, rt: ResourceType, key: Key, old: Obj, new: Obj, opts: WriteOptions,
                 subresource: str, operation: str) -> Obj:
        meta, old_meta = new["metadata"], old["metadata"]
        if subresource == "status":
            status = new.get("status")
            new = clone(old)
            new["status"] = status
            meta = new["metadata"]
        elif subresource:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        elif rt.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        for k in _IMMUTABLE_META:
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise forbidden(rt, old_meta["name"], f'{rt.group_resource} "{old_meta["name"]}" is'
                                " forbidden: no new finalizers can be added if the object is being"
                                " deleted, found new finalizers " + str(sorted(added)))
        if subresource != "status":
            admit(rt, new, old, opts)
        if self._tracks_generation(rt) and _spec_changed(rt, old, new):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if operation == "Update" or "managedFields" not in meta:
            _set_managed(meta, apply.track_update(
                old, new, manager=opts.field_manager, api_version=rt.group_version, kind=rt.kind,
                schema=rt.schema, now=now(), subresource=subresource))
        if _same(old, new):
            return self.present(rt, old)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._remove(rt, key, new, opts)
        return self._commit(rt, key, new, old, opts)

    # -- admission -----------------------------------------------------------------------

    def _check_namespace(self, rt: ResourceType, namespace: str | None, name: str) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(("", "namespaces", "", namespace or "default"))
        if ns is None:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                           {"name": namespace, "kind": "namespaces"})
        if ns["metadata"].get("deletionTimestamp"):
            raise forbidden(rt, name, f'{rt.group_resource} "{name}" is forbidden: unable to create'
                            f" new content in namespace {namespace} because it is being terminated")

    def _generate_name(self, rt: ResourceType, namespace: str | None, prefix: str) -> str:
        alphabet = "bcdfghjklmnpqrstvwxz2456789"
        for _ in range(10):
            name = prefix[:58] + "".join(secrets.choice(alphabet) for _ in range(5))
            if self.store.get(self.key(rt, namespace, name)) is None:
                return name
        raise ApiError(500, "AlreadyExists", "could not generate a unique name")

    @staticmethod
    def _tracks_generation(rt: ResourceType) -> bool:
        return rt.is_custom or rt.kind in _GENERATION_KINDS

    # -- commit and delete ---------------------------------------------------------------

    def _commit(self, rt: ResourceType, key: Key, obj: Obj, old: Obj | None,
                opts: WriteOptions) -> Obj:
        for check in self.write_checks:
            check(rt, obj, old)
        if opts.dry_run:
            if old is None:
                obj["metadata"].pop("resourceVersion", None)
            return self.present(rt, obj)
        is_crd = rt.group == CRD_GROUP and rt.plural == CRD_PLURAL
        if is_crd:
            obj["status"] = crd.crd_status(obj, now())
        obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
        obj["apiVersion"] = self._storage_version(rt)
        self.store.put(key, obj, "ADDED" if old is None else "MODIFIED")
        if is_crd:
            self._register_crd(obj)
        self._notify("ADDED" if old is None else "MODIFIED", key, obj)
        return self.present(rt, obj)

    def _storage_version(self, rt: ResourceType) -> str:
        stored = self.storage_type(rt.group, rt.plural)
        return (stored or rt).group_version

    def _remove(self, rt: ResourceType, key: Key, obj: Obj, opts: WriteOptions) -> Obj:
        if opts.dry_run:
            return self.present(rt, obj)
        obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
        self.store.remove(key, obj)
        if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL:
            self._unregister_crd(obj["metadata"]["name"])
        self._notify("DELETED", key, obj)
        return self.present(rt, obj)

    def _notify(self, event: str, key: Key, obj: Obj) -> None:
        for listener in self.listeners:
            listener(event, key, obj)

    def delete(self, rt: ResourceType, namespace: str | None, name: str, options: Obj,
               opts: WriteOptions) -> tuple[Obj, bool]:
        """Delete or start deleting; returns the object and whether it is gone already.

        As kube-apiserver's registry does: the propagation policy becomes a GC finalizer
        (``orphan``, ``foregroundDeletion``), and an object left with any finalizer is only
        marked deleting, so the garbage collector orphans or collects its dependents first.
        """
        with self.lock:
            key = self.key(rt, namespace, name)
            old = self.store.get(key)
            if old is None:
                raise not_found(rt, name)
            _check_preconditions(rt, old, options.get("preconditions") or {})
            self.admission_policies.admit(rt, "DELETE", None, old)
            current = list(old["metadata"].get("finalizers") or [])
            finalizers = _gc_finalizers(current, _propagation(options))
            if not finalizers and not _is_namespace(rt):
                return self._remove(rt, key, clone(old), opts), True
            if old["metadata"].get("deletionTimestamp") and finalizers == current:
                return self.present(rt, old), False
            return self._commit(rt, key, self._mark_deleting(rt, old, finalizers), old, opts), False

    def _mark_deleting(self, rt: ResourceType, old: Obj, finalizers: list[str]) -> Obj:
        """A copy of ``old`` as kube-apiserver's markAsDeleting leaves it.

        The deletionTimestamp (and the generation bump) happen once, on the first delete;
        a later delete may only change the GC finalizers.
        """
        obj: Obj = clone(old)
        meta = obj["metadata"]
        meta["finalizers"] = finalizers
        if not finalizers:
            meta.pop("finalizers")
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = now()
            if self._tracks_generation(rt):
                meta["generation"] = int(meta.get("generation", 1)) + 1
        meta.setdefault("deletionGracePeriodSeconds", 0)
        if _is_namespace(rt):
            obj.setdefault("status", {})["phase"] = "Terminating"
        return obj

    def rewrite(self, key: Key, change: Callable[[Obj], None], opts: WriteOptions | None = None
                ) -> None:
        """Read-modify-write one stored object as the server itself (GC, controllers)."""
        opts = opts or WriteOptions(field_manager="devcluster")
        with self.lock:
            old = self.store.get(key)
            rt = self.storage_type(key[0], key[1])
            if old is None or rt is None:
                return
            new = clone(old)
            change(new)
            if _same(old, new):
                return
            meta = new["metadata"]
            if meta.get("deletionTimestamp") and not meta.get("finalizers") and not (
                    rt.kind == "Namespace" and not rt.group and (new.get("spec") or {}).get(
                        "finalizers")):
                self._remove(rt, key, new, opts)
            else:
                self._commit(rt, key, new, old, opts)

    def delete_stored(self, key: Key, propagation: str | None = None,
                      uid: str | None = None) -> None:
        """Delete by storage key as a controller does (ignores a missing object).

        ``propagation`` None sends no policy, so the object's own GC finalizers decide;
        ``uid`` is a precondition, as the garbage collector sets one, so a namesake
        created since the decision is never deleted by mistake.
        """
        rt = self.storage_type(key[0], key[1])
        if rt is None:
            return
        options: Obj = {"propagationPolicy": propagation} if propagation else {}
        if uid:
            options["preconditions"] = {"uid": uid}
        try:
            self.delete(rt, key[2] or None, key[3], options,
                        WriteOptions(field_manager="devcluster"))
        except ApiError:
            pass


def _patch_reason(code: int) -> str:
    return {400: "BadRequest", 413: "RequestEntityTooLarge", 422: "Invalid"}.get(code, "")


def _applicable(rt: ResourceType, config: Obj, subresource: str) -> Obj:
    """The part of an apply configuration the endpoint may change.

    The main endpoint of a type with a status subresource ignores status, and the status
    endpoint ignores everything else; otherwise the applier would be recorded as owning
    fields the server throws away.
    """
    if subresource == "status":
        meta = config.get("metadata") or {}
        out: Obj = {k: config[k] for k in ("apiVersion", "kind") if k in config}
        out["metadata"] = {k: meta[k] for k in ("name", "namespace") if k in meta}
        if "status" in config:
            out["status"] = config["status"]
        return out
    if rt.has_status and "status" in config:
        return {k: v for k, v in config.items() if k != "status"}
    return config


def _set_managed(meta: Obj, managed: list[Obj]) -> None:
    if managed:
        meta["managedFields"] = managed
    else:
        meta.pop("managedFields", None)


def _untimed(managed: Any) -> Any:
    if not isinstance(managed, list):
        return managed
    return [{k: v for k, v in m.items() if k != "time"} if isinstance(m, dict) else m
            for m in managed]


def _same(a: Obj, b: Obj) -> bool:
    """True when a write would change nothing but timestamps in managedFields."""
    am = {k: v for k, v in a.get("metadata", {}).items() if k != "resourceVersion"}
    bm = {k: v for k, v in b.get("metadata", {}).items() if k != "resourceVersion"}
    am["managedFields"] = _untimed(am.get("managedFields"))
    bm["managedFields"] = _untimed(bm.get("managedFields"))
    rest_a = {k: v for k, v in a.items() if k not in ("metadata", "apiVersion")}
    rest_b = {k: v for k, v in b.items() if k not in ("metadata", "apiVersion")}
    return am == bm and rest_a == rest_b


def _spec_changed(rt: ResourceType, old: Obj, new: Obj) -> bool:
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if rt.has_status else set())
    return ({k: v for k, v in old.items() if k not in skip}
            != {k: v for k, v in new.items() if k not in skip})


def _check_preconditions(rt: ResourceType, obj: Obj, pre: Obj) -> None:
    """As kube-apiserver's store words it: the kind (and group) named, then what differs."""
    meta = obj["metadata"]
    for field_name, label, why in (("uid", "UID", "deleted and then recreated"),
                                   ("resourceVersion", "ResourceVersion", "modified")):
        want = pre.get(field_name)
        if want and want != meta.get(field_name):
            kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {kind} '
                           f'"{meta["name"]}": the {label} in the precondition ({want}) does not '
                           f"match the {label} in record ({meta.get(field_name)}). The object "
                           f"might have been {why}",
                           {"name": meta["name"], "kind": rt.kind, "group": rt.group} if rt.group
                           else {"name": meta["name"], "kind": rt.kind})


def _propagation(options: Obj) -> str | None:
    """The policy a DeleteOptions asks for, or None when it names none.

    ``orphanDependents: false`` is explicit too: like Background it clears GC finalizers.
    """
    policy = options.get("propagationPolicy")
    if policy:
        if policy not in ("Orphan", "Background", "Foreground"):
            raise bad_request(f"propagationPolicy: Unsupported value: \"{policy}\"")
        return str(policy)
    orphan = options.get("orphanDependents")
    if orphan is None:
        return None
    return "Orphan" if orphan is True else "Background"


def _gc_finalizers(current: list[str], policy: str | None) -> list[str]:
    """The finalizers after a delete, as deletionFinalizersForGarbageCollection computes them.

    An explicit policy replaces whatever GC finalizer the object had (so a second delete
    can switch orphan and foreground); no policy keeps them. Same set, same list.
    """
    if policy is None:
        return current
    wanted = [f for f in current if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    wanted += {"Orphan": [ORPHAN_FINALIZER], "Foreground": [FOREGROUND_FINALIZER]}.get(policy, [])
    return current if set(wanted) == set(current) else wanted


def _is_namespace(rt: ResourceType) -> bool:
    """Namespaces always wait for the namespace controller, finalizers or not."""
    return rt.kind == "Namespace" and not rt.group


def _json(body: bytes) -> Any:
    import json

    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise bad_request(f"error decoding patch: {exc}") from exc


def _yaml(body: bytes) -> Any:
    import yaml

    try:
        return yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise bad_request(f"error decoding YAML: {exc}") from exc

