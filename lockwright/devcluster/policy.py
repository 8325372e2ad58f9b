"""The RBAC policy stored in the cluster, compiled for per-request decisions.

A :class:`Snapshot` is every Role, ClusterRole and binding compiled into rules per subject
(``User:<name>``, ``Group:<name>``; a ServiceAccount subject is its user). It is rebuilt
only after a write to ``rbac.authorization.k8s.io`` and keeps its own cache of decisions,
so a request costs a dictionary lookup once its question was asked. ClusterRoles with an
``aggregationRule`` hold the rules of every ClusterRole their selectors match, as kube's
aggregation controller would write them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockwright.devcluster.rbac import Attributes, Rule, Source, User, compile_rule, match

Obj = dict[str, Any]
RBAC_GROUP = "rbac.authorization.k8s.io"
RoleKey = tuple[str, str, str]  # kind, namespace ("" for ClusterRoles), name


@dataclass(frozen=True)
class Decision:
    """An answer: allowed by which rule (and which of its elements), or denied and why."""

    allowed: bool
    source: Source | None = None
    atom: tuple[str, ...] = ()
    reason: str = ""


def _requirement(expr: Obj, labels: dict[str, str]) -> bool:
    key, op = str(expr.get("key", "")), str(expr.get("operator", ""))
    values = [str(v) for v in expr.get("values") or []]
    if op in ("In", "NotIn"):
        return (labels.get(key) in values) == (op == "In")
    return (key in labels) == (op == "Exists")


def selects(selector: Obj, labels: dict[str, str]) -> bool:
    """Whether a LabelSelector (matchLabels, matchExpressions) selects ``labels``."""
    wanted = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    return all(_requirement(e, labels) for e in selector.get("matchExpressions") or [])


def subject_key(subject: Obj, binding_namespace: str) -> str:
    """``User:<name>`` or ``Group:<name>`` for one binding subject."""
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_namespace
        return f"User:system:serviceaccount:{ns}:{name}"
    return f"{kind}:{name}"


def user_keys(user: User) -> list[str]:
    """The subject keys a user is bound through: itself and each of its groups."""
    return [f"User:{user.name}", *(f"Group:{g}" for g in user.groups)]


def _labels(role: Obj) -> dict[str, str]:
    return dict((role.get("metadata") or {}).get("labels") or {})


@dataclass
class Snapshot:
    """One compiled version of the policy; its decision cache dies with it."""

    roles: dict[RoleKey, Obj]
    cluster: dict[str, list[Rule]] = field(default_factory=dict)
    namespaced: dict[tuple[str, str], list[Rule]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    decisions: dict[Attributes, Decision] = field(default_factory=dict)

    def role_rules(self, kind: str, namespace: str, name: str) -> list[tuple[int, Obj, str]]:
        """(index, rule, aggregated from) of a role; KeyError when it does not exist."""
        role = self.roles[(kind, namespace if kind == "Role" else "", name)]
        selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors")
        if kind != "ClusterRole" or not selectors:
            return [(i, r, "") for i, r in enumerate(role.get("rules") or [])]
        return [(i, r, n) for (k, _, n), other in sorted(self.roles.items())
                if k == "ClusterRole" and n != name
                and any(selects(s, _labels(other)) for s in selectors)
                for i, r in enumerate(other.get("rules") or [])]

    def add_binding(self, binding: Obj, namespace: str) -> None:
        """Compile one RoleBinding (``namespace`` set) or ClusterRoleBinding into the index."""
        meta, ref = binding.get("metadata") or {}, binding.get("roleRef") or {}
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        where = f"RoleBinding {namespace}/{meta.get('name')}" if namespace else (
            f"ClusterRoleBinding {meta.get('name')}")
        keys = [subject_key(s, namespace) for s in binding.get("subjects") or []]
        try:
            found = self.role_rules(kind, namespace, name)
        except KeyError:
            for key in keys:
                self.errors.setdefault(key, []).append(
                    f'{kind.lower()}.{RBAC_GROUP} "{name}" not found')
            return
        role = f"{namespace}/{name}" if kind == "Role" else name
        rules = [compile_rule(r, Source(kind, role, i, where, agg)) for i, r, agg in found]
        for key in keys:
            target = (self.namespaced.setdefault((namespace, key), []) if namespace
                      else self.cluster.setdefault(key, []))
            target.extend(rules)

    def rules_for(self, user: User, namespace: str) -> list[Rule]:
        """Every rule that applies to ``user`` in ``namespace`` (cluster-wide ones first)."""
        keys = user_keys(user)
        out = [r for k in keys for r in self.cluster.get(k, ())]
        if namespace:
            out += [r for k in keys for r in self.namespaced.get((namespace, k), ())]
        return out

    def decide(self, attrs: Attributes) -> Decision:
        """The first rule allowing ``attrs``, or a denial (cached per question)."""
        found = self.decisions.get(attrs)
        if found is None:
            found = self._decide(attrs)
            if len(self.decisions) > 50_000:
                self.decisions.clear()
            self.decisions[attrs] = found
        return found

    def _decide(self, attrs: Attributes) -> Decision:
        for rule in self.rules_for(attrs.user, attrs.namespace):
            atom = match(rule, attrs)
            if atom is not None:
                return Decision(True, rule.source, atom)
        problems = [e for k in user_keys(attrs.user) for e in self.errors.get(k, ())]
        return Decision(False, reason=f"RBAC: {', '.join(problems)}" if problems else "")


def compile_policy(objects: dict[str, list[Obj]]) -> Snapshot:
    """A snapshot from the stored ``roles``, ``clusterroles``, ``rolebindings`` and
    ``clusterrolebindings`` (lists of objects, by plural)."""
    roles: dict[RoleKey, Obj] = {}
    for plural, kind in (("clusterroles", "ClusterRole"), ("roles", "Role")):
        for role in objects.get(plural, []):
            meta = role.get("metadata") or {}
            roles[(kind, str(meta.get("namespace") or ""), str(meta.get("name")))] = role
    snapshot = Snapshot(roles)
    for binding in objects.get("clusterrolebindings", []):
        snapshot.add_binding(binding, "")
    for binding in objects.get("rolebindings", []):
        snapshot.add_binding(binding, str((binding.get("metadata") or {}).get("namespace")))
    return snapshot
