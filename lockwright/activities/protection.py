"""``protect_providers``: Crossplane's provider deletion protection, one pass.

Every CRD a Provider installed (a plain owner reference to the Provider) whose kind is a
managed resource, of a Provider standing (neither gone nor being deleted) and not being
deleted itself, is asked for one resource (``limit=1``, metadata only); each type that has
one gets its ``ClusterUsage``, applied as Crossplane's controller applies it, and each
labelled usage whose type has none left (or whose CRD is gone) is deleted. The
ValidatingAdmissionPolicy and its binding, which refuse a Provider's deletion while a
usage names it, are applied on every pass. With the setting off, the pass deletes the
policy, the binding and every usage instead. The decisions are
:mod:`lockwright.managed.protection`'s (docs/design.md, "Provider deletion protection").
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lockwright import contracts as c
from lockwright.activities.base import heartbeating, log, meta
from lockwright.activities.errors import defn, edge
from lockwright.errors import KubeNotFound
from lockwright.k8s import Kube, Obj, deleting
from lockwright.k8s.watch import METADATA_LIST, list_all
from lockwright.managed import protection as p

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PROVIDER_PATH = "/apis/pkg.crossplane.io/v1/providers"
READERS = 8  # types asked at once


class ProtectionActivities:
    """protect_providers."""

    def __init__(self, kube: Kube, enabled: bool) -> None:
        self.kube = kube
        self.enabled = enabled  # Settings.provider_deletion_protection

    @defn(name=c.PROTECT_PROVIDERS)
    @edge
    def protect_providers(self, inp: c.ProtectProvidersInput) -> c.ProtectProvidersResult:
        """Apply or delete the usages, and the policy; see the module."""
        # Asking a 2,000-type Provider's types (an access review and a list each) outlasts
        # the heartbeat timeout on a busy API server.
        with heartbeating():
            return self._pass()

    def _pass(self) -> c.ProtectProvidersResult:
        existing = [str(meta(o).get("name", "")) for o in self.kube.list(
            p.USAGE_API_VERSION, p.USAGE_KIND, label_selector=f"{p.PROTECTION_LABEL}=true")]
        if not self.enabled:
            self._remove_policy()
            gone = self._delete(p.reconcile([], existing).delete)
            return c.ProtectProvidersResult(enabled=False, deleted=gone[:c.MAX_NAMES])
        self.kube.apply(p.policy(), force=True)
        self.kube.apply(p.binding(), force=True)
        # Only the types of Providers standing: a Provider gone or being deleted (its
        # deletion admitted) has nothing left to protect, and the right to read its
        # types goes with its revisions meanwhile. Asked after discovery, right before
        # the types are, so a deletion since is seen as late as this pass can see it.
        located = Types(self.kube).managed()
        standing = self._standing()
        types = [t for t in located if t.provider in standing]
        with ThreadPoolExecutor(READERS) as pool:
            seen = dict(zip(types, pool.map(self._in_use, types)))
        used = [t for t, n in seen.items() if n]
        unknown = {p.usage_name(t.crd) for t, n in seen.items() if n is None}
        changes = p.reconcile(used, [n for n in existing if n not in unknown])
        for obj in changes.apply:
            self.kube.apply(obj, p.FIELD_OWNER, force=True)
        gone = self._delete(changes.delete)
        log().info("providers.protected", types=len(types), in_use=len(used),
                   deleted=len(gone))
        return c.ProtectProvidersResult(
            types=len(types), in_use=len(used), deleted=gone[:c.MAX_NAMES],
            applied=[str(o["metadata"]["name"]) for o in changes.apply][:c.MAX_NAMES])

    def _standing(self) -> set[str]:
        """The Providers present and not being deleted (metadata only)."""
        return {str(meta(o).get("name", "")) for o in list_all(
            self.kube, PROVIDER_PATH, metadata_only=True).items if not deleting(o)}

    def _in_use(self, t: Located) -> bool | None:
        """Whether the type has a resource (in any namespace); a type no longer served
        has none; None when lockwright may not list it yet (its revision's RBAC comes
        after its CRD): its usage, if any, stays as it is."""
        if not self.kube.can_i("list", t.group, t.crd.split(".", 1)[0]):
            return None
        try:
            page = next(self.kube.list_pages(t.path, limit=1, accept=METADATA_LIST))
        except KubeNotFound:
            return False
        return bool(page.get("items"))

    def _delete(self, names: tuple[str, ...]) -> list[str]:
        return [n for n in names if self.kube.delete(p.USAGE_API_VERSION, p.USAGE_KIND, n)]

    def _remove_policy(self) -> None:
        self.kube.delete(p.ADMISSION_API_VERSION, p.BINDING_KIND, p.POLICY_NAME)
        self.kube.delete(p.ADMISSION_API_VERSION, p.POLICY_KIND, p.POLICY_NAME)


@dataclass(frozen=True)
class Located(p.ManagedType):
    """A managed type and the collection path its resources are listed at."""

    path: str = ""


class Types:
    """The Providers' managed resource types, located through discovery (one pass)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._versions: dict[str, str] = {}  # group -> preferred group/version ("" none)
        self._kinds: dict[str, dict[str, str]] = {}  # group/version -> plural -> kind

    def managed(self) -> list[Located]:
        """Every CRD with a Provider owner whose kind is a managed resource."""
        out = []
        for crd in list_all(self.kube, CRD_PATH, metadata_only=True).items:
            md = meta(crd)
            if deleting(crd):
                continue  # going with its Provider (or dropped unused): nothing to protect
            provider, name = p.provider_of(md), str(md.get("name", ""))
            found = self._locate(name, provider) if provider and "." in name else None
            if found is not None and p.protects(found.kind):
                out.append(found)
        return out

    def _locate(self, crd: str, provider: str) -> Located | None:
        plural, group = crd.split(".", 1)
        gv = self._version(group)
        kind = self._kinds_of(gv).get(plural) if gv else None
        if not kind:
            return None  # not served (yet, or any more): nothing of it can exist
        return Located(crd=crd, kind=kind, group=group, provider=provider,
                       path=f"/apis/{gv}/{plural}")

    def _version(self, group: str) -> str:
        if group not in self._versions:
            doc = self.kube.read_path(f"/apis/{group}") or {}
            self._versions[group] = str((doc.get("preferredVersion") or {}).get(
                "groupVersion") or "")
        return self._versions[group]

    def _kinds_of(self, gv: str) -> dict[str, str]:
        if gv not in self._kinds:
            doc: Obj = self.kube.read_path(f"/apis/{gv}") or {}
            self._kinds[gv] = {str(r.get("name")): str(r.get("kind"))
                               for r in doc.get("resources") or []}
        return self._kinds[gv]
