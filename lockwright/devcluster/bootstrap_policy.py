"""The default RBAC objects kube-apiserver creates at start (its "bootstrap policy").

Only those devcluster's clients need: ``cluster-admin`` (bound to ``system:masters``),
``system:discovery`` (discovery and OpenAPI documents for every authenticated user) and
``system:public-info-viewer`` (health and version for everyone, anonymous included) and
``system:basic-user`` (SelfSubjectAccessReviews for every authenticated user).
Created when missing, as kube does, so an administrator may bind them too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lockwright.devcluster.admission import WriteOptions

if TYPE_CHECKING:
    from lockwright.devcluster.cluster import Cluster

Obj = dict[str, Any]
RBAC_V1 = "rbac.authorization.k8s.io/v1"
_META = {"labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
         "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}}
PUBLIC_INFO = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
DISCOVERY = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
             "/openapi/*", "/readyz", "/version", "/version/"]
ROLES: dict[str, list[Obj]] = {
    "cluster-admin": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                      {"nonResourceURLs": ["*"], "verbs": ["*"]}],
    "system:discovery": [{"nonResourceURLs": DISCOVERY, "verbs": ["get"]}],
    "system:public-info-viewer": [{"nonResourceURLs": PUBLIC_INFO, "verbs": ["get"]}],
    "system:basic-user": [{"apiGroups": ["authorization.k8s.io"],
                           "resources": ["selfsubjectaccessreviews",
                                         "selfsubjectrulesreviews"], "verbs": ["create"]}],
}
BINDINGS: dict[str, list[str]] = {
    "cluster-admin": ["system:masters"],
    "system:discovery": ["system:authenticated"],
    "system:public-info-viewer": ["system:authenticated", "system:unauthenticated"],
    "system:basic-user": ["system:authenticated"],
}


def _meta(name: str) -> Obj:
    return {"name": name, "labels": dict(_META["labels"]),
            "annotations": dict(_META["annotations"])}


def objects() -> list[tuple[str, Obj]]:
    """(plural, object) of every default role and binding."""
    out = [("clusterroles", {"apiVersion": RBAC_V1, "kind": "ClusterRole",
                             "metadata": _meta(name), "rules": rules})
           for name, rules in ROLES.items()]
    return out + [("clusterrolebindings", {
        "apiVersion": RBAC_V1, "kind": "ClusterRoleBinding", "metadata": _meta(name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}
                     for g in groups]}) for name, groups in BINDINGS.items()]


def ensure(cluster: Cluster) -> None:
    """Create each default role and binding that does not exist."""
    for plural, obj in objects():
        rt = cluster.resource("rbac.authorization.k8s.io", "v1", plural)
        if cluster.store.get(cluster.key(rt, None, obj["metadata"]["name"])) is None:
            cluster.create(rt, None, obj, WriteOptions(field_manager="devcluster"))
