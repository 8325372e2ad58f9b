"""The activities of one wiring by name (``acts.read_package``), as tests call them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockwright.activities import wire
from lockwright.activities.api_dependencies import IndexReader
from lockwright.k8s import Kube
from lockwright.oci.cache import PackageCache
from lockwright.settings import Settings


class Activities:
    """Every activity of :func:`activities.wire` as an attribute named as it is, beside the
    settings, the cache and the Lock keeper tests reach into."""

    def __init__(self, settings: Settings, kube: Kube, cache: PackageCache,
                 indexes: IndexReader | None = None) -> None:
        wired = wire(settings, kube, cache, indexes)
        self.settings, self.kube, self.cache = settings, kube, cache
        self.keeper = wired.parts.keeper
        self._all = wired.all()
        for fn in self._all:
            setattr(self, fn.__name__, fn)

    def all(self) -> list[Callable[..., Any]]:
        """Every activity, in contract order."""
        return list(self._all)

    def __getattr__(self, name: str) -> Any:
        # Activities are set per instance above; this only tells type checkers so.
        raise AttributeError(name)
