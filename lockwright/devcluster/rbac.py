"""RBAC rules as kube-apiserver evaluates them: pure matching, covering and messages.

A request is described by :class:`Attributes` (who, which verb on which resource or path);
a :class:`Rule` is one PolicyRule of a Role or ClusterRole, compiled once and tagged with
the :class:`Source` it came from. Matching follows ``k8s.io/kubernetes/plugin/pkg/auth/
authorizer/rbac`` (``*`` wildcards, ``*/subresource``, resourceNames, nonResourceURL
prefixes ending in ``*``); covering follows ``pkg/registry/rbac/validation`` (the
escalation check), and denials read as kube-apiserver's 403 ``Status`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lockwright.devcluster.errors import ApiError

Obj = dict[str, Any]
ALL = "*"
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class User:
    """An authenticated identity: its name, groups and (for ServiceAccounts) UID."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    @property
    def privileged(self) -> bool:
        """Members of ``system:masters`` are allowed everything, as in kube-apiserver."""
        return MASTERS in self.groups


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    """The user a ServiceAccount token authenticates as, with the groups kube gives it."""
    return User(f"{SA_PREFIX}{namespace}:{name}",
                ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                 AUTHENTICATED), uid)


@dataclass(frozen=True)
class Attributes:
    """One authorization question: may ``user`` do ``verb`` on this resource or path?"""

    user: User
    verb: str
    resource_request: bool
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def combined(self) -> str:
        """``resource`` or ``resource/subresource``, as rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass(frozen=True)
class Source:
    """Where a rule comes from: the role, its index there, the binding granting it."""

    role_kind: str
    role: str
    index: int
    binding: str
    aggregated_from: str = ""

    def as_dict(self) -> Obj:
        out: Obj = {"roleKind": self.role_kind, "role": self.role, "rule": self.index,
                    "binding": self.binding}
        if self.aggregated_from:
            out["aggregatedFrom"] = self.aggregated_from
        return out


@dataclass(frozen=True)
class Rule:
    """One compiled PolicyRule."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: frozenset[str] = frozenset()
    urls: tuple[str, ...] = ()
    source: Source | None = None


def compile_rule(raw: Obj, source: Source | None = None) -> Rule:
    """A PolicyRule dict (as stored) compiled for matching."""
    return Rule(tuple(raw.get("verbs") or ()), tuple(raw.get("apiGroups") or ()),
                tuple(raw.get("resources") or ()), frozenset(raw.get("resourceNames") or ()),
                tuple(raw.get("nonResourceURLs") or ()), source)


def _first(values: Sequence[str], wanted: str) -> str | None:
    """The first of ``values`` that is ``*`` or ``wanted``: the element that matched."""
    return next((v for v in values if v == ALL or v == wanted), None)


def _resource(values: Sequence[str], resource: str, subresource: str) -> str | None:
    combined = f"{resource}/{subresource}" if subresource else resource
    for value in values:
        if value in (ALL, combined) or (subresource and value == f"*/{subresource}"):
            return value
    return None


def _url(values: Sequence[str], path: str) -> str | None:
    return next((v for v in values if v == path or v == ALL
                 or (v.endswith("*") and path.startswith(v[:-1]))), None)


def match(rule: Rule, attrs: Attributes) -> tuple[str, ...] | None:
    """The rule's elements that allow ``attrs`` (verb, group, resource or verb, url), else None.

    The elements returned are the rule's own (``*`` when a wildcard matched), so counting
    them tells which parts of a rule are ever used.
    """
    verb = _first(rule.verbs, attrs.verb)
    if verb is None:
        return None
    if not attrs.resource_request:
        url = _url(rule.urls, attrs.path)
        return None if url is None else (verb, url)
    group = _first(rule.api_groups, attrs.api_group)
    resource = _resource(rule.resources, attrs.resource, attrs.subresource)
    if group is None or resource is None:
        return None
    if rule.resource_names and attrs.name not in rule.resource_names:
        return None
    return verb, group, resource


def atoms(rule: Obj) -> list[tuple[str, ...]]:
    """Every (verb, group, resource) and (verb, url) a PolicyRule dict names."""
    verbs = rule.get("verbs") or []
    out = [(v, g, r) for v in verbs for g in rule.get("apiGroups") or []
           for r in rule.get("resources") or []]
    return out + [(v, u) for v in verbs for u in rule.get("nonResourceURLs") or []]


# -- escalation: does one set of rules cover another? ----------------------------------


def _breakdown(rule: Rule) -> Iterable[Rule]:
    """A rule split into rules of one verb, one group, one resource, one name (or URL)."""
    names: Iterable[str] = sorted(rule.resource_names) or [""]
    for verb in rule.verbs:
        for url in rule.urls:
            yield Rule((verb,), urls=(url,))
        for group in rule.api_groups:
            for resource in rule.resources:
                for name in names:
                    yield Rule((verb,), (group,), (resource,),
                               frozenset([name]) if name else frozenset())


def _resource_covers(owned: Sequence[str], wanted: str) -> bool:
    if ALL in owned or wanted in owned:
        return True
    resource, _, sub = wanted.partition("/")
    return bool(sub) and (f"{resource}/*" in owned or f"*/{sub}" in owned)


def _url_covers(owned: Sequence[str], wanted: str) -> bool:
    return any(o == wanted or (o.endswith("*") and wanted.startswith(o[:-1])) for o in owned)


def covers(owner: Rule, atom: Rule) -> bool:
    """Whether ``owner`` grants everything the atomic rule ``atom`` grants."""
    if not (ALL in owner.verbs or atom.verbs[0] in owner.verbs):
        return False
    if atom.urls:
        return _url_covers(owner.urls, atom.urls[0])
    if not atom.api_groups or not (ALL in owner.api_groups
                                   or atom.api_groups[0] in owner.api_groups):
        return False
    if not _resource_covers(owner.resources, atom.resources[0]):
        return False
    if not owner.resource_names:
        return True
    return bool(atom.resource_names) and atom.resource_names <= owner.resource_names


def uncovered(owned: Sequence[Rule], wanted: Iterable[Rule]) -> list[Rule]:
    """The atomic parts of ``wanted`` that no rule in ``owned`` covers."""
    return [atom for rule in wanted for atom in _breakdown(rule)
            if not any(covers(o, atom) for o in owned)]


def describe(rule: Rule) -> str:
    """A rule as kube's escalation message prints it."""
    parts = []
    for label, values in (("APIGroups", rule.api_groups), ("Resources", rule.resources),
                          ("ResourceNames", tuple(sorted(rule.resource_names))),
                          ("NonResourceURLs", rule.urls), ("Verbs", rule.verbs)):
        if values:
            parts.append(f"{label}:[{' '.join(_quote(v) for v in values)}]")
    return "{" + ", ".join(parts) + "}"


def _quote(value: str) -> str:
    return '"' + value.replace('"', '\\"') + '"'


# -- answers -------------------------------------------------------------------------


def _group_resource(attrs: Attributes) -> str:
    return f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource


def forbidden_reason(attrs: Attributes) -> str:
    """kube's ``User "x" cannot <verb> resource "r" in API group "g" ...`` sentence."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    scope = (f'in the namespace "{attrs.namespace}"' if attrs.namespace
             else "at the cluster scope")
    return (f'User "{user}" cannot {attrs.verb} resource "{attrs.combined}" in API group '
            f'"{attrs.api_group}" {scope}')


def forbidden_error(attrs: Attributes, reason: str) -> ApiError:
    """A 403 with the Status body kube-apiserver answers (message, reason, details)."""
    if not attrs.resource_request:
        return ApiError(403, "Forbidden", f"forbidden: {reason}", {})
    details: Obj = {"name": attrs.name, "group": attrs.api_group, "kind": attrs.resource}
    details = {k: v for k, v in details.items() if v}
    gr = _group_resource(attrs)
    subject = f'{gr} "{attrs.name}"' if attrs.name else gr
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {reason}", details)


def escalation_reason(user: User, missing: Sequence[Rule]) -> str:
    """kube's message for a role or binding granting rights its author does not hold."""
    groups = " ".join(_quote(g) for g in user.groups)
    lines = "\n".join(describe(r) for r in missing)
    return (f'user "{user.name}" (groups=[{groups}]) is attempting to grant RBAC '
            f"permissions not currently held:\n{lines}")
