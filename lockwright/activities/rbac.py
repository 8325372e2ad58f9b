"""``ensure_rbac``: a provider revision's ClusterRoles and binding (docs/crossplane.md §15),
and, for the active revision, lockwright's read role of its Provider's types.

Requested permissions (v1.x ``spec.controller.permissionRequests``) are granted only when
ClusterRoles labelled as allowed provider permissions cover them; otherwise nothing is
applied and the revision fails naming the rejected rules. Roles and the binding carry a
controller reference to the revision and are only rewritten when they differ.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lockwright import contracts as c
from lockwright.activities.base import DEPLOYMENT_RUNTIME, kind_of, meta, service_account_name
from lockwright.activities.contents import Contents
from lockwright.activities.errors import defn, edge
from lockwright.activities.reads import PackageReader, RuntimeConfigs
from lockwright.errors import ConflictError, PermissionRejected
from lockwright.k8s import NORMAL, WARNING, Kube, Obj
from lockwright.managed.convert import safe_start
from lockwright.runtime import rbac

RBAC_API = "rbac.authorization.k8s.io/v1"
SHOWN_REJECTIONS = 5


def _and_join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", and " + items[-1]


class RbacActivities:
    """ClusterRoles, the system binding and the permission-request check."""

    def __init__(self, kube: Kube, reader: PackageReader, contents: Contents,
                 runtime_configs: RuntimeConfigs, namespace: str, package_runtime: str) -> None:
        """Bind the runtime ServiceAccount in ``namespace`` (under a Deployment runtime)."""
        self.kube = kube
        self.reader = reader
        self.contents = contents
        self.runtime_configs = runtime_configs
        self.namespace = namespace
        self.package_runtime = package_runtime

    @defn(name=c.ENSURE_RBAC)
    @edge
    def ensure_rbac(self, inp: c.EnsureRbacInput) -> c.EnsureRbacResult:
        """Apply edit/view/system ClusterRoles and bind system to the runtime's SA; for
        the active revision, the Provider's read role too."""
        if kind_of(inp.kind) != "Provider":
            return c.EnsureRbacResult()
        rev = self.reader.revision(inp.kind, inp.revision)
        uid = str(meta(rev)["uid"])
        requests = self.accepted_requests(inp, rev)
        resources = rbac.defined_resources((rev.get("status") or {}).get("objectRefs") or [])
        capabilities = getattr(self.contents.summary(inp.kind, rev, inp.digest).meta,
                               "capabilities", ())
        roles = rbac.render_cluster_roles(inp.revision, uid, resources, requests,
                                          safe_start=safe_start(capabilities))
        if not roles:
            return c.EnsureRbacResult()
        with ThreadPoolExecutor(len(roles) + 2) as pool:  # each its own round trips
            listed = pool.submit(self.binding_subjects, inp, rev, uid)
            read_role = pool.submit(self.apply_package_role, inp, rev, resources)
            applied = list(pool.map(lambda r: self.apply_owned(r, uid), roles))
            subjects = listed.result()
            read_role.result()
        changed = [meta(r)["name"] for r, done in zip(roles, applied, strict=True) if done]
        if changed:
            self.reader.event(rev, NORMAL, "ApplyClusterRoles",
                       f"Applied RBAC ClusterRoles: {_and_join(changed)}")
        # Bound only once every role is the revision's: never a role someone else holds.
        binding = rbac.render_system_binding(inp.revision, uid, subjects)
        if self.apply_owned(binding, uid):
            accounts = ", ".join(f"{ns}/{sa}" for ns, sa in subjects)
            self.reader.event(rev, NORMAL, "BindClusterRole", f'Bound system ClusterRole '
                       f'"{binding["metadata"]["name"]}" to provider ServiceAccount(s): '
                       f"{accounts}")
        return c.EnsureRbacResult(cluster_roles=len(roles), bindings=1)

    def apply_package_role(self, inp: c.EnsureRbacInput, rev: Obj,
                           resources: list[tuple[str, str]]) -> None:
        """lockwright's read of the Provider's types, from its active revision (see
        :func:`rbac.render_package_role`); nothing for an inactive one, or a revision no
        Provider owns."""
        owner = rbac.provider_owner(meta(rev)) if inp.active else None
        if owner is None:
            return
        role = rbac.render_package_role(*owner, inp.revision, str(meta(rev)["uid"]), resources)
        if role is not None:
            self.apply_owned(role, owner[1])

    def accepted_requests(self, inp: c.EnsureRbacInput, rev: Obj) -> list[dict[str, Any]]:
        """The permission requests, when every one is allowed.

        Raises:
            PermissionRejected: naming the first rejected rules (one Warning event each).
        """
        summary = self.contents.summary(inp.kind, rev, inp.digest)
        requests = [dict(r) for r in getattr(summary.meta, "permission_requests", ())]
        if not requests:
            return []
        allowed = self.kube.list(RBAC_API, "ClusterRole",
                                 label_selector=f"{rbac.LABEL_ALLOWED}=true")
        rejected = rbac.rejected_permissions(requests, rbac.allowed_rules(allowed))
        if not rejected:
            return requests
        messages = rbac.rejection_messages(rejected)
        for message in messages[:SHOWN_REJECTIONS]:
            self.reader.event(rev, WARNING, "ApplyClusterRoles", message)
        more = len(messages) - SHOWN_REJECTIONS
        raise PermissionRejected("; ".join(messages[:SHOWN_REJECTIONS])
                                 + (f" (and {more} more)" if more > 0 else ""))

    def binding_subjects(self, inp: c.EnsureRbacInput, rev: Obj,
                         uid: str) -> list[tuple[str, str]]:
        """ServiceAccounts of the revision's Deployments, plus the one its runtime will use.

        The runtime is applied after RBAC, so its ServiceAccount is named in advance rather
        than waiting for a Deployment to exist.
        """
        deployments = self.kube.list("apps/v1", "Deployment")
        subjects = rbac.binding_subjects(deployments, uid)
        if inp.active and self.package_runtime == DEPLOYMENT_RUNTIME:
            drc, _ = self.runtime_configs.runtime_config(rev, required=False)
            subjects.append((self.namespace, service_account_name(inp.revision, drc)))
        return list(dict.fromkeys(subjects))

    def apply_owned(self, obj: Obj, uid: str) -> bool:
        """Create ``obj``, or update it when it differs; True when something was written.

        Raises:
            ConflictError: the live object is controlled by someone else.
        """
        live = self.kube.get(RBAC_API, obj["kind"], obj["metadata"]["name"])
        if live is None:
            self.kube.create(obj)
            return True
        controller = next((r for r in meta(live).get("ownerReferences") or []
                           if r.get("controller")), None)
        if controller and controller.get("uid") != uid:
            raise ConflictError(f'{obj["kind"]} "{obj["metadata"]["name"]}" is already '
                                f'controlled by {controller.get("kind")} '
                                f'{controller.get("name")} (UID {controller.get("uid")})')
        if rbac.up_to_date(live, obj):
            return False
        obj["metadata"]["resourceVersion"] = meta(live)["resourceVersion"]
        self.kube.update(obj)
        return True
