"""managedFields: who owns which fields, as kube-apiserver's field manager records them.

Entries are decoded into field sets (see ``devcluster.fieldset``), updated, and encoded
back sorted the way the server sorts them (Apply before Update, then by time, manager,
apiVersion, subresource).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from lockwright.devcluster.fieldset import Path, compare, from_fields_v1, ordered, path_string, to_fields_v1
from lockwright.devcluster.mergekeys import root_node

MAX_UPDATE_MANAGERS = 10
_ANCIENT = "ancient-changes"
# Never owned by anyone (structured-merge-diff's stripMetaManager).
STRIPPED: frozenset[Path] = frozenset(
    [("f:apiVersion",), ("f:kind",), ("f:metadata",)]
    + [("f:metadata", "f:" + name) for name in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion")])
# What the Go zero value of a built-in type serialises to: these maps already exist before
# a create, so the creating manager does not own them as a whole (no "." entry).
_ZERO: dict[tuple[str, str], dict[str, Any]] = {
    ("apps/v1", "Deployment"): {"spec": {"template": {"metadata": {}, "spec": {
        "containers": None}}, "strategy": {}}, "status": {}},
    ("v1", "Service"): {"spec": {}, "status": {"loadBalancer": {}}},
    ("v1", "Namespace"): {"spec": {}, "status": {}},
    ("v1", "Event"): {"involvedObject": {}, "source": {}},
    ("events.k8s.io/v1", "Event"): {"regarding": {}, "deprecatedSource": {}},
    ("rbac.authorization.k8s.io/v1", "Role"): {"rules": None},
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {"rules": None},
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): {"roleRef": {}},
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): {"roleRef": {}},
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): {
        "spec": {"names": {}, "versions": None},
        "status": {"acceptedNames": {}, "conditions": None, "storedVersions": None}},
    ("coordination.k8s.io/v1", "Lease"): {"spec": {}},
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): {"spec": {},
                                                                      "status": {}},
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): {"spec": {}},
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {"spec": {}},
}


@dataclass
class Manager:
    """One managedFields entry, decoded."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str | None = None
    fields: set[Path] = field(default_factory=set)

    @property
    def ident(self) -> str:
        """The identity the server keys entries by (appliers are not per version)."""
        entry = {"manager": self.manager, "operation": self.operation}
        if self.operation != "Apply" and self.api_version:
            entry["apiVersion"] = self.api_version
        if self.subresource:
            entry["subresource"] = self.subresource
        return json.dumps({k: v for k, v in entry.items() if v}, separators=(",", ":"))

    def printed(self) -> str:
        """The manager as conflict messages name it."""
        text = quote(self.manager)
        if self.subresource:
            text += f" with subresource {quote(self.subresource)}"
        return text + (f" using {self.api_version}" if self.operation == "Update" else "")

    def encode(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"manager": self.manager, "operation": self.operation,
                                 "apiVersion": self.api_version}
        if self.time:
            entry["time"] = self.time
        entry.update(fieldsType="FieldsV1", fieldsV1=to_fields_v1(self.fields))
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


Managers = dict[str, Manager]


def quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class ApplyConflict(Exception):
    """An apply that would change fields other managers own (HTTP 409).

    ``conflicts`` lists (manager, field path) pairs; ``causes`` the Status causes
    kube-apiserver sends (``reason: FieldManagerConflict``).
    """

    def __init__(self, message: str, conflicts: list[tuple[str, str]],
                 causes: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.conflicts = conflicts
        self.causes = causes


def conflict_error(found: dict[str, set[Path]], managers: Managers) -> ApplyConflict:
    pairs = [(managers[ident], path) for ident in sorted(found) for path in ordered(found[ident])]
    conflicts = [(m.manager, path_string(path)) for m, path in pairs]
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {m.printed()}",
               "field": path_string(path)} for m, path in pairs]
    if len(pairs) == 1:
        message = (f"Apply failed with 1 conflict: conflict with {pairs[0][0].printed()}:"
                   f" {conflicts[0][1]}")
        return ApplyConflict(message, conflicts, causes)
    lines = []
    for ident in sorted(found):
        lines.append(f"conflicts with {managers[ident].printed()}:")
        lines.extend(f"- {path_string(path)}" for path in ordered(found[ident]))
    message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    return ApplyConflict(message, conflicts, causes)


# -- managedFields encoding ------------------------------------------------------------


def decode(entries: Any) -> Managers:
    """Decode managedFields; ValueError when any entry is malformed."""
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")  # noqa: TRY004 - callers catch ValueError
    managers: Managers = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("fieldsType") != "FieldsV1":
            raise ValueError(f"invalid managedFields entry {entry!r}")
        manager = Manager(entry.get("manager", ""), entry.get("operation", ""),
                           entry.get("apiVersion", ""), entry.get("subresource", ""),
                           entry.get("time"), from_fields_v1(entry.get("fieldsV1", {})))
        managers[manager.ident] = manager
    return managers


def live_managers(obj: dict[str, Any] | None) -> Managers:
    try:
        return decode(((obj or {}).get("metadata") or {}).get("managedFields") or [])
    except ValueError:
        return {}


def encode(managers: Managers) -> list[dict[str, Any]]:
    live = [m for m in managers.values() if m.fields]
    live.sort(key=lambda m: (m.operation, m.time or "", m.manager, m.api_version,
                             m.subresource))
    return [m.encode() for m in live]


def strip(managers: Managers) -> Managers:
    for manager in managers.values():
        manager.fields -= STRIPPED
    return {ident: m for ident, m in managers.items() if m.fields}


def without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    # A shallow copy suffices: only metadata is changed, and it is copied itself. Deep
    # copies of 1.7 MB CRDs on every write dominated create latency.
    out = dict(obj)
    if isinstance(out.get("metadata"), dict):
        out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "managedFields"}
    return out


# -- non-apply writes ------------------------------------------------------------------


def track_update(old: dict[str, Any] | None, new: dict[str, Any], *, manager: str,
                 api_version: str, kind: str, schema: dict[str, Any] | None, now: str,
                 subresource: str = "") -> list[dict[str, Any]]:
    """The managedFields after a create, update or non-apply patch.

    ``manager`` gains the fields it set or changed (and keeps what it had); every manager
    loses fields whose value changed or that were removed. ``metadata.managedFields``
    sent in ``new`` replaces the live list when it differs (``[]`` or ``[{}]`` clears it).

    Args:
        old: The stored object, or ``None`` for a create.
        new: The object about to be stored.
        manager: The request's field manager.
        api_version: The ``group/version`` the request used.
        kind: The object's kind.
        schema: The CRD version's openAPIV3Schema, or ``None`` for built-in types.
        now: The RFC 3339 time of the write.
        subresource: ``status`` for writes to the status subresource.

    Returns:
        The full new managedFields list.
    """
    node = root_node(api_version, kind, schema)
    managers = _base_managers(old, new, subresource)
    before = without_managed(old) if old is not None else _zero(api_version, kind, schema)
    diff = compare(before, without_managed(new), node)
    for entry in managers.values():
        entry.fields -= diff.changed | diff.removed
    changed = diff.changed - STRIPPED
    me = Manager(manager, "Update", api_version, subresource, now, changed)
    mine = managers.get(me.ident)
    if mine is None:
        managers[me.ident] = me
    elif changed:
        mine.fields |= changed
        mine.time = now
    return encode(_cap(strip(managers)))


def _base_managers(old: dict[str, Any] | None, new: dict[str, Any], subresource: str
                   ) -> Managers:
    live = live_managers(old)
    sent = (new.get("metadata") or {}).get("managedFields")
    if subresource or sent is None:
        return live
    if sent == [] or sent == [{}]:
        return {}
    try:
        return decode(sent) or live
    except ValueError:
        return live


def _zero(api_version: str, kind: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    zero = {} if schema is not None else _ZERO.get((api_version, kind), {})
    return {"metadata": {}, **copy.deepcopy(zero)}


def _cap(managers: Managers) -> Managers:
    """Fold the oldest updaters into ``ancient-changes`` beyond ten Update entries."""
    updaters = sorted((m for m in managers.values() if m.operation != "Apply"),
                      key=lambda m: (m.time or "", m.ident))
    count = len(updaters)
    for oldest in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        bucket = Manager(_ANCIENT, "Update", oldest.api_version)
        if oldest.ident == bucket.ident:
            continue
        previous = managers.get(bucket.ident)
        if previous is None:
            managers[bucket.ident] = bucket
            count += 1
        else:
            bucket = previous
        del managers[oldest.ident]
        count -= 1
        bucket.fields |= oldest.fields
        if oldest.time and (bucket.time is None or oldest.time > bucket.time):
            bucket.time = oldest.time
    return managers
