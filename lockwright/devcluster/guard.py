"""Authentication and RBAC authorization in front of devcluster's request handler.

Enabled by ``--authorization-mode RBAC``. Every request is authenticated (bearer tokens,
see :mod:`devcluster.auth`) and authorized against the stored Roles, ClusterRoles and
bindings before it is served; a denial answers 403 with kube's ``Status``. Writes of
roles and bindings pass kube's escalation check (the ``escalate`` and ``bind`` verbs, or
holding every permission granted). The guard also serves the TokenRequest subresource
and ``GET /debug/rbac``: for each rule, how many requests it allowed (and which of its
verbs and resources), and every denial, so a test can tell unused rules from used ones.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from lockwright.devcluster import auth, bootstrap_policy
from lockwright.devcluster.admission import now
from lockwright.devcluster.errors import ApiError, invalid, not_found
from lockwright.devcluster.managedfields import track_update
from lockwright.devcluster.policy import RBAC_GROUP, Decision, Snapshot, compile_policy
from lockwright.devcluster.rbac import (
    Attributes,
    Rule,
    Source,
    compile_rule,
    escalation_reason,
    forbidden_error,
    forbidden_reason,
    uncovered,
)
from lockwright.devcluster.requestinfo import request_attributes
from lockwright.devcluster.types import ResourceType

if TYPE_CHECKING:
    from lockwright.devcluster.cluster import Cluster

Obj = dict[str, Any]
DEBUG_PATH = "/debug/rbac"
APPLY_TYPE = "application/apply-patch+yaml"
MAX_DENIALS = 1000
# The request being served on this thread, for the escalation check of role writes.
CURRENT: ContextVar[Attributes | None] = ContextVar("devcluster_request", default=None)
UsageKey = tuple[str, Source, tuple[str, ...]]


SSAR_GROUP, SSAR = "authorization.k8s.io", "selfsubjectaccessreviews"
VAP_GROUP = "admissionregistration.k8s.io"
SSAR_PATH = f"/apis/{SSAR_GROUP}/v1/{SSAR}"


def _review_body(body: Any) -> Obj:
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the body of the request was not a JSON object")
    return body


def access_review(body: Any, allowed: bool, manager: str) -> Obj:
    """The answer to a SelfSubjectAccessReview (created, never stored, as kube does): the
    create still records ``manager`` as the owner of the fields it sent."""
    review = _review_body(body)
    asked = {"apiVersion": f"{SSAR_GROUP}/v1", "kind": "SelfSubjectAccessReview",
             "metadata": {}, "spec": review.get("spec") or {}}
    fields = track_update(None, asked, manager=manager, api_version=f"{SSAR_GROUP}/v1",
                          kind="SelfSubjectAccessReview", schema=None, now=now())
    return {**asked, "metadata": {"managedFields": fields}, "status": {"allowed": allowed}}


class Record:
    """Which rule allowed what, and what was denied, since the server started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.used: Counter[UsageKey] = Counter()
        self.denied: list[Obj] = []

    def allowed(self, attrs: Attributes, decision: Decision) -> None:
        if decision.source is not None:
            with self._lock:
                self.used[(attrs.user.name, decision.source, decision.atom)] += 1

    def refused(self, attrs: Attributes, message: str) -> None:
        entry = {"user": attrs.user.name, "verb": attrs.verb, "group": attrs.api_group,
                 "resource": attrs.combined, "namespace": attrs.namespace,
                 "name": attrs.name, "path": attrs.path, "message": message}
        with self._lock:
            if len(self.denied) < MAX_DENIALS:
                self.denied.append(entry)

    def document(self) -> Obj:
        """The record as ``GET /debug/rbac`` answers it."""
        with self._lock:
            used = [{"user": user, **source.as_dict(), "atom": list(atom), "count": n}
                    for (user, source, atom), n in self.used.items()]
            return {"allowed": used, "denied": list(self.denied)}


class Guard:
    """Authenticates, authorizes and records every request of one devcluster."""

    def __init__(self, cluster: Cluster, data_dir: str) -> None:
        self.cluster = cluster
        self.tokens = auth.TokenAuthority(data_dir)
        self.record = Record()
        self._generation = 0
        self._built = -1
        self._snapshot: Snapshot | None = None
        cluster.listeners.append(self._changed)
        cluster.write_checks.append(self.check_write)
        bootstrap_policy.ensure(cluster)

    # -- policy ------------------------------------------------------------------------

    def _changed(self, event: str, key: tuple[str, str, str, str], obj: Obj) -> None:
        if key[0] == RBAC_GROUP:
            self._generation += 1

    def snapshot(self) -> Snapshot:
        """The compiled policy, rebuilt after any write to RBAC objects."""
        snap, generation = self._snapshot, self._generation
        if snap is not None and self._built == generation:
            return snap
        with self.cluster.lock:  # the store's lock: role writes call in holding it
            generation = self._generation
            objects = {plural: [o for _, o in self.cluster.store.items(RBAC_GROUP, plural)]
                       for plural in ("roles", "clusterroles", "rolebindings",
                                      "clusterrolebindings")}
            self._snapshot, self._built = compile_policy(objects), generation
            return self._snapshot

    def decide(self, attrs: Attributes) -> Decision:
        """RBAC's answer for ``attrs`` (recorded when it allows)."""
        if attrs.user.privileged:
            return Decision(True)
        decision = self.snapshot().decide(attrs)
        if decision.allowed:
            self.record.allowed(attrs, decision)
        return decision

    def allows(self, attrs: Attributes) -> bool:
        """Whether RBAC allows ``attrs``."""
        return self.decide(attrs).allowed

    def authorize(self, attrs: Attributes) -> None:
        """Raise kube's 403 unless RBAC allows ``attrs``."""
        decision = self.decide(attrs)
        if not decision.allowed:
            reason = forbidden_reason(attrs)
            self._refuse(attrs, f"{reason}: {decision.reason}" if decision.reason else reason)

    # -- requests ----------------------------------------------------------------------

    def admit(self, method: str, path: str, query: dict[str, str],
              headers: Any) -> Attributes:
        """Authenticate and authorize one request; the attributes it was allowed as."""
        user = self.tokens.authenticate(headers.get("Authorization"), self._account_uid)
        attrs = request_attributes(user, method, path, query)
        CURRENT.set(attrs)
        self.authorize(attrs)
        content_type = str(headers.get("Content-Type") or "").split(";")[0].strip()
        if attrs.verb == "patch" and content_type == APPLY_TYPE and not self._exists(attrs):
            self.authorize(replace(attrs, verb="create"))  # an apply that creates, creates
        return attrs

    def _account_uid(self, namespace: str, name: str) -> str | None:
        account = self.cluster.store.get(("", "serviceaccounts", namespace, name))
        return None if account is None else str(account["metadata"].get("uid", ""))

    def _exists(self, attrs: Attributes) -> bool:
        rt = self.cluster.find(attrs.api_group, attrs.api_version, attrs.resource)
        if rt is None:
            return True  # nothing to create: the handler answers 404
        key = self.cluster.key(rt, attrs.namespace, attrs.name)
        return self.cluster.store.get(key) is not None

    def answer(self, attrs: Attributes, method: str, body: Any, manager: str
               ) -> tuple[int, Obj] | None:
        """The guard's own routes: access reviews, TokenRequest and the debug record; else
        None. ``manager`` is the request's field manager."""
        if not attrs.resource_request and attrs.path == DEBUG_PATH and method == "GET":
            return 200, self.record.document()
        if (attrs.api_group, attrs.resource, method) == (SSAR_GROUP, SSAR, "POST"):
            body = _review_body(body())
            asked = (body.get("spec") or {}).get("resourceAttributes") or {}
            question = Attributes(
                attrs.user, str(asked.get("verb", "")), True, str(asked.get("group", "")),
                str(asked.get("version", "")), str(asked.get("resource", "")),
                str(asked.get("subresource", "")), str(asked.get("namespace", "")),
                str(asked.get("name", "")))
            # Not through decide(): a question is no use of the rule that would answer it.
            allowed = attrs.user.privileged or self.snapshot().decide(question).allowed
            return 201, access_review(body, allowed, manager)
        if (attrs.resource, attrs.subresource, method) == ("serviceaccounts", "token", "POST"):
            rt = self.cluster.resource("", "v1", "serviceaccounts")
            account = self.cluster.store.get(self.cluster.key(rt, attrs.namespace, attrs.name))
            if account is None:
                raise not_found(rt, attrs.name)
            return 201, auth.token_request(self.tokens, account, body())
        return None

    # -- escalation ----------------------------------------------------------------------

    def check_write(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        """Refuse a role or binding granting more than its writer may grant."""
        attrs = CURRENT.get()
        if attrs is None or attrs.user.privileged or rt.group not in (RBAC_GROUP, VAP_GROUP):
            return
        if attrs.verb not in ("create", "update", "patch") or attrs.resource != rt.plural:
            return  # a deletion's finalizer bookkeeping grants nothing
        if rt.group == VAP_GROUP:
            self._check_params(attrs, rt, obj, old)
        elif rt.plural in ("roles", "clusterroles"):
            self._check_role(attrs, rt, obj)
        elif rt.plural in ("rolebindings", "clusterrolebindings"):
            self._check_binding(attrs, rt, obj)

    def _check_params(self, attrs: Attributes, rt: ResourceType, obj: Obj, old: Obj | None
                      ) -> None:
        """As kube-apiserver's admissionregistration strategies: writing a policy's
        ``paramKind`` takes ``get`` on every object of that kind; a binding's ``paramRef``,
        ``get`` on the one it names or ``list`` on those it selects."""
        spec, before = obj.get("spec") or {}, (old or {}).get("spec") or {}
        if rt.plural == "validatingadmissionpolicies" and spec.get("paramKind") and (
                spec.get("paramKind") != before.get("paramKind")):
            kind = spec["paramKind"]
            question = self._param_question(attrs, kind, "get", "")
            said = (f'must have "get" permission on all objects of the referenced paramKind '
                    f'(kind={kind.get("kind")}, apiVersion={kind.get("apiVersion")})')
            field = "spec.paramKind"
        elif rt.plural == "validatingadmissionpolicybindings" and spec.get("paramRef") and (
                spec.get("paramRef") != before.get("paramRef")):
            ref = spec["paramRef"]
            policy = self.cluster.store.get((VAP_GROUP, "validatingadmissionpolicies", "",
                                             str(spec.get("policyName", "")))) or {}
            kind = (policy.get("spec") or {}).get("paramKind") or {}
            verb = "get" if ref.get("name") else "list"
            question = self._param_question(attrs, kind, verb, str(ref.get("name") or ""))
            said = (f'must have "{verb}" permission on the object referenced by paramRef '
                    f'{ref.get("namespace", "")}/{ref.get("name", "")}')
            field = "spec.paramRef"
        else:
            return
        if not self.decide(question).allowed:
            name = str((obj.get("metadata") or {}).get("name", ""))
            message = f"{field}: Forbidden: user {attrs.user.name} {said}"
            raise invalid(rt, name, f'{rt.kind}.{rt.group} "{name}" is invalid: {message}',
                          [{"reason": "FieldValueForbidden", "message": message,
                            "field": field}])

    def _param_question(self, attrs: Attributes, kind: Obj, verb: str, name: str
                        ) -> Attributes:
        """The question about a paramKind (every kind, when the server does not serve it)."""
        group, _, version = str(kind.get("apiVersion", "")).rpartition("/")
        rt = next((t for t in self.cluster.served() if t.group == group
                   and t.version == version and t.kind == kind.get("kind")), None)
        return Attributes(attrs.user, verb, True, group if rt else "*", version if rt else "*",
                          rt.plural if rt else "*", "", "", name)

    def _target(self, attrs: Attributes, rt: ResourceType, obj: Obj) -> Attributes:
        meta = obj.get("metadata") or {}
        return Attributes(attrs.user, attrs.verb, True, RBAC_GROUP, rt.version, rt.plural, "",
                          str(meta.get("namespace") or "") if rt.namespaced else "",
                          str(meta.get("name") or ""))

    def _check_role(self, attrs: Attributes, rt: ResourceType, obj: Obj) -> None:
        target = self._target(attrs, rt, obj)
        if self.allows(replace(target, verb="escalate", name=attrs.name)):
            return
        if obj.get("aggregationRule"):
            self._refuse(target, "must have cluster-admin privileges to use the "
                                 "aggregationRule")
        self._confirm_held(target, [compile_rule(r) for r in obj.get("rules") or []])

    def _check_binding(self, attrs: Attributes, rt: ResourceType, obj: Obj) -> None:
        target = self._target(attrs, rt, obj)
        ref = obj.get("roleRef") or {}
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        plural = "clusterroles" if kind == "ClusterRole" else "roles"
        if self.allows(replace(target, verb="bind", resource=plural, name=name)):
            return
        try:
            found = self.snapshot().role_rules(kind, target.namespace, name)
        except KeyError:
            self._refuse(target, f'{plural}.{RBAC_GROUP} "{name}" not found')
        self._confirm_held(target, [compile_rule(r) for _, r, _ in found])

    def _confirm_held(self, target: Attributes, wanted: list[Rule]) -> None:
        owned = self.snapshot().rules_for(target.user, target.namespace)
        missing = uncovered(owned, wanted)
        if missing:
            self._refuse(target, escalation_reason(target.user, missing))

    def _refuse(self, target: Attributes, reason: str) -> NoReturn:
        error: ApiError = forbidden_error(target, reason)
        self.record.refused(target, error.message)
        raise error
