"""ValidatingAdmissionPolicies, enforced as kube-apiserver's admission plugin does.

Each ``ValidatingAdmissionPolicyBinding`` whose policy's ``matchConstraints`` (and the
binding's ``matchResources``) match the request is evaluated: its ``matchConditions`` must
all hold, then every ``validations`` expression, once per parameter object (``paramRef``
by name or by label selector; none found: ``parameterNotFoundAction``), with ``object``,
``oldObject``, ``request``, ``params`` and ``variables`` bound. A false expression is a
denial with its ``message`` (or ``messageExpression``, or ``failed expression: ...``) and
``reason`` (default ``Invalid``); an expression that fails to evaluate follows the
policy's ``failurePolicy``. Denials count only under a ``Deny`` validation action; the
first one refuses the request in kube-apiserver's words:
``<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding
'<binding>' denied request: <message>``. The expressions are CEL, evaluated by cel-python
(``celpy``); Kubernetes' CEL libraries beyond the standard ones are not there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.celtypes import BoolType, StringType
from celpy.evaluation import CELEvalError

from lockwright.devcluster.errors import ApiError
from lockwright.devcluster.policy import selects
from lockwright.devcluster.store import Key, Store
from lockwright.devcluster.types import ResourceType

Obj = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
POLICIES, BINDINGS = "validatingadmissionpolicies", "validatingadmissionpolicybindings"
_CODES = {"Unauthorized": 401, "Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}


class Denied(Exception):
    """One binding's refusal: its message and reason."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.message, self.reason = message, reason


class Policies:
    """The stored policies and bindings (kept current by the cluster's listener)."""

    def __init__(self, store: Store, served: Callable[[], list[ResourceType]]) -> None:
        self.store = store
        self.served = served  # the types the server serves (paramKind lookups)
        self._lock = threading.Lock()
        self.policies = {k[3]: o for k, o in store.items(GROUP, POLICIES)}
        self.bindings = {k[3]: o for k, o in store.items(GROUP, BINDINGS)}
        self._env = celpy.Environment()
        self._programs: dict[str, Any] = {}

    def on_event(self, event: str, key: Key, obj: Obj) -> None:
        """A stored object changed: keep the policies and bindings current."""
        if key[0] != GROUP or key[1] not in (POLICIES, BINDINGS):
            return
        held = self.policies if key[1] == POLICIES else self.bindings
        with self._lock:
            if event == "DELETED":
                held.pop(key[3], None)
            else:
                held[key[3]] = obj

    def check_write(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        """A create or update through the policies (marking an object deleting is the
        delete's, admitted as such)."""
        if old is not None and obj["metadata"].get("deletionTimestamp") and not old[
                "metadata"].get("deletionTimestamp"):
            return
        self.admit(rt, "CREATE" if old is None else "UPDATE", obj, old)

    def params_of(self, api_version: str, kind: str) -> list[Obj]:
        """The stored objects of a kind: what a policy's ``paramRef`` chooses from."""
        group, _, version = api_version.rpartition("/")
        rt = next((t for t in self.served() if t.group == group and t.version == version
                   and t.kind == kind), None)
        return [o for _, o in self.store.items(rt.group, rt.plural)] if rt else []

    def admit(self, rt: ResourceType, operation: str, obj: Obj | None, old: Obj | None
              ) -> None:
        """Refuse the request as kube-apiserver would, or return."""
        with self._lock:
            pairs = [(b, self.policies.get(str((b.get("spec") or {}).get("policyName", ""))))
                     for _, b in sorted(self.bindings.items())]
        for binding, policy in pairs:
            if policy is None or not _applies(policy, binding, rt, operation):
                continue
            try:
                self._evaluate(policy, binding, rt, operation, obj, old)
            except Denied as denied:
                if "Deny" in ((binding.get("spec") or {}).get("validationActions") or []):
                    raise _refusal(rt, obj or old or {}, policy, binding, denied) from None

    def _evaluate(self, policy: Obj, binding: Obj, rt: ResourceType, operation: str,
                  obj: Obj | None, old: Obj | None) -> None:
        spec = policy.get("spec") or {}
        request = _request(rt, operation, obj or old or {})
        base = {"object": obj, "oldObject": old, "request": request}
        for params in self._params(spec, binding):
            names: Obj = {**base, "params": params, "variables": {}}
            for var in spec.get("variables") or []:
                names["variables"][var["name"]] = self._run(spec, var["expression"], names)
            if not all(self._run(spec, m["expression"], names) is True
                       for m in spec.get("matchConditions") or []):
                continue
            for rule in spec.get("validations") or []:
                self._validate(spec, rule, names)

    def _validate(self, spec: Obj, rule: Obj, names: Obj) -> None:
        if self._run(spec, rule["expression"], names) is True:
            return
        message = rule.get("message") or f"failed expression: {rule['expression']}"
        if rule.get("messageExpression"):
            said = self._run(spec, rule["messageExpression"], names, fail=False)
            message = said if isinstance(said, str) and said.strip() else message
        raise Denied(message, str(rule.get("reason") or "Invalid"))

    def _params(self, spec: Obj, binding: Obj) -> list[Obj | None]:
        kind = spec.get("paramKind")
        if not kind:
            return [None]
        ref = (binding.get("spec") or {}).get("paramRef") or {}
        found = [o for o in self.params_of(kind.get("apiVersion", ""), kind.get("kind", ""))
                 if (o["metadata"]["name"] == ref["name"] if ref.get("name") else
                     selects(ref.get("selector") or {}, o["metadata"].get("labels") or {}))]
        if found or ref.get("parameterNotFoundAction") == "Allow":
            return list(found)
        raise Denied("failed to configure binding: no params found for policy binding "
                     "with `Deny` parameterNotFoundAction", "Invalid")

    def _run(self, spec: Obj, expression: str, names: Obj, fail: bool = True) -> Any:
        """Evaluate one expression; an error follows the policy's failurePolicy."""
        try:
            program = self._programs.get(expression)
            if program is None:
                program = self._env.program(self._env.compile(expression))
                self._programs[expression] = program
            value = program.evaluate({k: json_to_cel(v) for k, v in names.items()})
            if isinstance(value, CELEvalError):
                raise value
        except Exception as exc:  # noqa: BLE001 - any CEL failure: the failure policy decides
            if fail and spec.get("failurePolicy", "Fail") == "Fail":
                raise Denied(f"expression '{expression}' resulted in error: {exc}",
                             "Invalid") from None
            return None
        return _plain(value)


def _plain(value: Any) -> Any:
    """A CEL result as plain Python (bools and strings are what admission reads)."""
    if isinstance(value, BoolType):
        return bool(value)
    if isinstance(value, StringType):
        return str(value)
    return value


def _matches(rules: list[Obj], rt: ResourceType, operation: str) -> bool:
    return any(_in(r.get("apiGroups"), rt.group) and _in(r.get("apiVersions"), rt.version)
               and _in(r.get("resources"), rt.plural) and _in(r.get("operations"), operation)
               for r in rules)


def _in(values: list[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)  # type: ignore[operator]


def _applies(policy: Obj, binding: Obj, rt: ResourceType, operation: str) -> bool:
    """The policy's matchConstraints, then the binding's matchResources, match."""
    for match in ((policy.get("spec") or {}).get("matchConstraints"),
                  (binding.get("spec") or {}).get("matchResources")):
        if match is None:
            continue
        if match.get("resourceRules") and not _matches(match["resourceRules"], rt, operation):
            return False
        if _matches(match.get("excludeResourceRules") or [], rt, operation):
            return False
    return bool((policy.get("spec") or {}).get("matchConstraints"))


def _request(rt: ResourceType, operation: str, obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    return {"operation": operation, "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
            "resource": {"group": rt.group, "version": rt.version, "resource": rt.plural}}


def _refusal(rt: ResourceType, obj: Obj, policy: Obj, binding: Obj, denied: Denied
             ) -> ApiError:
    """kube-apiserver's answer (admission.NewForbidden, then the rule's reason and code)."""
    said = (f"ValidatingAdmissionPolicy '{policy['metadata']['name']}' with binding "
            f"'{binding['metadata']['name']}' denied request: {denied.message}")
    name = str((obj.get("metadata") or {}).get("name", ""))
    details: Obj = {"name": name, "kind": rt.plural, "causes": [{"message": said}]}
    if rt.group:
        details["group"] = rt.group
    return ApiError(_CODES.get(denied.reason, 422), denied.reason,
                    f'{rt.group_resource} "{name}" is forbidden: {said}', details)
