"""Kind → resource mapping through API discovery, cached per group/version.

Only the group/version a caller needs is fetched (``/api/v1`` or ``/apis/<g>/<v>``), never
the whole cluster. A kind missing from the cache triggers one refetch of its
group/version, because CRDs (ours and the packages') appear while we run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockwright.errors import KubeNotFound

Fetch = Callable[[str], dict[str, Any]]


@dataclass(frozen=True)
class Resource:
    """Where a kind is served: its plural and whether it lives in a namespace."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """The REST path of the collection, or of one object (and its subresource)."""
        root = f"/api/{self.api_version}" if "/" not in self.api_version else (
            f"/apis/{self.api_version}")
        parts = [root]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


def group_version_path(api_version: str) -> str:
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` for the others."""
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


class Discovery:
    """Thread-safe cache of ``APIResourceList`` documents.

    Args:
        fetch: GETs a path and returns the decoded JSON; raises ``KubeNotFound`` on 404.
    """

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._by_gv: dict[str, dict[str, Resource]] = {}

    def resource(self, api_version: str, kind: str) -> Resource:
        """Return where ``kind`` of ``api_version`` is served.

        Raises:
            KubeNotFound: the server does not serve that kind, even after a refresh.
        """
        with self._lock:
            cached = self._by_gv.get(api_version, {}).get(kind)
        if cached is not None:
            return cached
        found = self._refresh(api_version).get(kind)
        if found is None:
            raise KubeNotFound(f"the server has no kind {kind} in {api_version}")
        return found

    def know(self, *resources: Resource) -> None:
        """Take ``resources`` as served, without asking the server.

        For a caller that knows where its kinds live and writes them the moment their
        CRDs are Established, which discovery may show a little later. A kind missing
        from the cache still refetches its group/version.
        """
        with self._lock:
            for res in resources:
                self._by_gv.setdefault(res.api_version, {})[res.kind] = res

    def _refresh(self, api_version: str) -> dict[str, Resource]:
        try:
            doc = self._fetch(group_version_path(api_version))
        except KubeNotFound:
            doc = {}
        kinds = {
            str(r["kind"]): Resource(api_version, str(r["kind"]), str(r["name"]),
                                     bool(r.get("namespaced")))
            for r in doc.get("resources") or [] if "/" not in str(r.get("name", ""))
        }
        with self._lock:
            self._by_gv[api_version] = kinds
        return kinds
