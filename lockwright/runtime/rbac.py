"""RBAC for provider revisions (docs/crossplane.md §15): edit/view/system ClusterRoles, the binding,
and the v1.x ``permissionRequests`` allow-check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
Rule = dict[str, Any]

PKG_API_VERSION = "pkg.crossplane.io/v1"
LABEL_ALLOWED = "rbac.crossplane.io/aggregate-to-allowed-provider-permissions"
LABEL_SYSTEM = "rbac.crossplane.io/system"
EDIT_LABELS = {"rbac.crossplane.io/aggregate-to-crossplane": "true",
               "rbac.crossplane.io/aggregate-to-admin": "true",
               "rbac.crossplane.io/aggregate-to-edit": "true"}
VIEW_LABELS = {"rbac.crossplane.io/aggregate-to-view": "true"}
# lockwright's own read of a Provider's types, aggregated into deploy/'s provider-resources
# role beside the revisions' view roles (see render_package_role).
PACKAGE_READ_LABELS = {"lockwright.dev/aggregate-to-provider-resources": "true"}
VERBS_EDIT = ["*"]
VERBS_VIEW = ["get", "list", "watch"]
VERBS_SYSTEM = ["get", "list", "watch", "update", "patch", "create"]
SYSTEM_EXTRA: Rule = {"apiGroups": ["", "coordination.k8s.io"],
                      "resources": ["secrets", "configmaps", "events", "leases"],
                      "verbs": VERBS_EDIT}
SAFE_START_EXTRA: Rule = {"apiGroups": ["apiextensions.k8s.io"],
                          "resources": ["customresourcedefinitions"], "verbs": VERBS_VIEW}
DEFINITION_KINDS = {("apiextensions.k8s.io", "CustomResourceDefinition"),
                    ("apiextensions.crossplane.io", "ManagedResourceDefinition")}
MSG_DISALLOWED = "refusing to apply any RBAC roles due to request for disallowed permission "


def role_name(revision: str, suffix: str) -> str:
    """``crossplane:provider:<revision>:<suffix>`` (suffix: aggregate-to-edit, …, system)."""
    return f"crossplane:provider:{revision}:{suffix}"


def _owner(name: str, uid: str, kind: str = "ProviderRevision") -> list[Obj]:
    return [{"apiVersion": PKG_API_VERSION, "kind": kind, "name": name,
             "uid": uid, "controller": True, "blockOwnerDeletion": True}]


def defined_resources(object_refs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(plural, group)`` of every CRD or MRD in a revision's ``status.objectRefs``."""
    out = []
    for ref in object_refs:
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        if (group, ref.get("kind")) in DEFINITION_KINDS:
            plural, _, res_group = str(ref["name"]).partition(".")
            out.append((plural, res_group))
    return out


def resource_rules(resources: list[tuple[str, str]]) -> list[Rule]:
    """One rule per API group, ``[<plural>, <plural>/status]`` each, in a stable order."""
    by_group: dict[str, list[str]] = {}
    for plural, group in sorted(set(resources), key=lambda r: r[0] + r[1]):
        by_group.setdefault(group, []).extend([plural, f"{plural}/status"])
    return [{"apiGroups": [g], "resources": rs} for g, rs in by_group.items()]


def _with_verbs(rules: list[Rule], verbs: list[str]) -> list[Rule]:
    return [{**r, "verbs": list(verbs)} for r in rules]


def _role(name: str, labels: dict[str, str], rules: list[Rule], revision: str,
          uid: str) -> Obj:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": dict(labels),
                         "ownerReferences": _owner(revision, uid)},
            "rules": rules}


def render_cluster_roles(revision: str, uid: str, resources: list[tuple[str, str]],
                         permission_requests: list[Rule] | None = None,
                         safe_start: bool = False) -> list[Obj]:
    """The edit, view and system ClusterRoles of a provider revision.

    Args:
        revision: the ProviderRevision name.
        uid: its UID, for the controller ownerReference.
        resources: ``(plural, group)`` pairs from :func:`defined_resources`.
        permission_requests: accepted v1.x requests, appended to the system role.
        safe_start: also grant reading CRDs to the system role.

    Returns:
        ``[edit, view, system]``, or ``[]`` when there are no resources.
    """
    if not resources:
        return []
    rules = resource_rules(resources)
    groups = [r["apiGroups"][0] for r in rules]
    finalizers = [{"apiGroups": [g], "resources": ["*/finalizers"], "verbs": ["update"]}
                  for g in groups]
    system_rules = [*_with_verbs(rules, VERBS_SYSTEM), *finalizers, dict(SYSTEM_EXTRA)]
    if safe_start:
        system_rules.append(dict(SAFE_START_EXTRA))
    system_rules.extend(dict(r) for r in permission_requests or [])
    return [
        _role(role_name(revision, "aggregate-to-edit"), EDIT_LABELS,
              _with_verbs(rules, VERBS_EDIT), revision, uid),
        _role(role_name(revision, "aggregate-to-view"), VIEW_LABELS,
              _with_verbs(rules, VERBS_VIEW), revision, uid),
        _role(role_name(revision, "system"), {LABEL_SYSTEM: revision}, system_rules,
              revision, uid),
    ]


def package_role_name(provider: str) -> str:
    """``lockwright:provider:<provider>:read``: lockwright's read of a Provider's types."""
    return f"lockwright:provider:{provider}:read"


def provider_owner(revision_meta: Obj) -> tuple[str, str] | None:
    """The ``(name, uid)`` of the Provider a revision's owner references name, or None."""
    for ref in revision_meta.get("ownerReferences") or []:
        if ref.get("kind") == "Provider" and ref.get("uid"):
            return str(ref.get("name", "")), str(ref["uid"])
    return None


def render_package_role(provider: str, provider_uid: str, revision: str, revision_uid: str,
                        resources: list[tuple[str, str]]) -> Obj | None:
    """lockwright's read of the Provider's types, those of its active revision ``revision``.

    The revisions' view roles grant the same, but go with a revision: one deleted by hand
    and re-created took lockwright's right to read its Provider's types for a moment, as
    the aggregation controller wrote the aggregated role without the deleted role's rules
    and then with the new one's, while the watcher's streams of those types listed and
    watched (docs/design.md, "Provider deletion protection"). This role is controlled by
    the Provider and owned by the revision too: the garbage collector deletes it once both
    are gone, so a revision deleted by hand leaves it, the Provider's deletion takes it
    with its revisions, and after an orphaning deletion it goes with the orphaned
    revision. None without types.
    """
    if not resources:
        return None
    owners = [*_owner(provider, provider_uid, "Provider"),
              {"apiVersion": PKG_API_VERSION, "kind": "ProviderRevision", "name": revision,
               "uid": revision_uid}]
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": package_role_name(provider),
                         "labels": dict(PACKAGE_READ_LABELS), "ownerReferences": owners},
            "rules": _with_verbs(resource_rules(resources), VERBS_VIEW)}


def render_system_binding(revision: str, uid: str,
                          service_accounts: list[tuple[str, str]]) -> Obj:
    """Bind the system ClusterRole to ``(namespace, name)`` ServiceAccounts."""
    name = role_name(revision, "system")
    subjects = [{"kind": "ServiceAccount", "namespace": ns, "name": sa}
                for ns, sa in dict.fromkeys(service_accounts)]
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "ownerReferences": _owner(revision, uid)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": name},
            "subjects": subjects}


#: What a rendered ClusterRole or ClusterRoleBinding says besides its metadata.
RBAC_FIELDS = ("rules", "subjects", "roleRef")


def up_to_date(live: Obj, wanted: Obj) -> bool:
    """True when ``live`` already says what the rendered ``wanted`` says: no write needed.

    Compared exactly: a role's rules, a binding's subjects and role, the labels and the
    owner references (``wanted`` always carries them). Anything else on ``live`` (server
    fields, annotations) does not count.
    """
    live_meta, wanted_meta = live.get("metadata") or {}, wanted.get("metadata") or {}
    return (all(live.get(f) == wanted.get(f) for f in RBAC_FIELDS)
            and live_meta.get("labels") == wanted_meta.get("labels")
            and live_meta.get("ownerReferences") == wanted_meta["ownerReferences"])


def binding_subjects(deployments: list[Obj], revision_uid: str) -> list[tuple[str, str]]:
    """ServiceAccounts of the Deployments owned by the revision (UID match)."""
    return [(str(d["metadata"].get("namespace", "")),
             str(d["spec"]["template"]["spec"].get("serviceAccountName") or "default"))
            for d in deployments
            if any(r.get("uid") == revision_uid
                   for r in d["metadata"].get("ownerReferences") or [])]


@dataclass(frozen=True, order=True)
class Permission:
    """One atomic permission: a resource tuple, or a non-resource URL with a verb."""

    api_group: str = ""
    resource: str = ""
    resource_name: str = ""
    verb: str = ""
    url: str = ""

    def __str__(self) -> str:
        if self.url:
            return f'{{nonResourceURL: "{self.url}", verb: "{self.verb}"}}'
        return (f'{{apiGroup: "{self.api_group}", resource: "{self.resource}", '
                f'resourceName: "{self.resource_name}", verb: "{self.verb}"}}')


def expand(rules: list[Rule]) -> list[Permission]:
    """Expand PolicyRules into atomic permissions (no resourceNames counts as ``*``)."""
    out: list[Permission] = []
    for rule in rules:
        verbs = rule.get("verbs") or []
        for url in rule.get("nonResourceURLs") or []:
            out.extend(Permission(url=url, verb=v) for v in verbs)
        names = rule.get("resourceNames") or ["*"]
        out.extend(Permission(g, r, n, v) for g in rule.get("apiGroups") or []
                   for r in rule.get("resources") or [] for n in names for v in verbs)
    return list(dict.fromkeys(out))


def _covers(allowed: Permission, wanted: Permission) -> bool:
    pairs = [(allowed.api_group, wanted.api_group), (allowed.resource, wanted.resource),
             (allowed.resource_name, wanted.resource_name), (allowed.url, wanted.url),
             (allowed.verb, wanted.verb)]
    if bool(allowed.url) != bool(wanted.url):
        return False
    return all(a == "*" or a == w for a, w in pairs)


def allowed_rules(cluster_roles: list[Obj]) -> list[Rule]:
    """Rules of every ClusterRole labelled as allowed provider permissions."""
    return [rule for role in cluster_roles
            if ((role.get("metadata") or {}).get("labels") or {}).get(LABEL_ALLOWED) == "true"
            for rule in role.get("rules") or []]


def rejected_permissions(requests: list[Rule], allowed: list[Rule]) -> list[Permission]:
    """Requested permissions no allowed rule covers (``*`` in an allowed rule matches all)."""
    grants = expand(allowed)
    return [p for p in expand(requests) if not any(_covers(g, p) for g in grants)]


def rejection_messages(rejected: list[Permission]) -> list[str]:
    """One Warning message per rejected permission, as Crossplane words it."""
    return [MSG_DISALLOWED + str(p) for p in rejected]
