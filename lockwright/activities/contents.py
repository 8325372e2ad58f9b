"""A package's contents: the per-worker cache, refetched on a miss, and parsed summaries.

Only counts, names and the first few lint warnings go back to workflows; the contents stay
here, keyed by digest (docs/design.md invariant 2).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from lockwright.activities.base import heartbeating, kind_of, log, meta, secret_names, spec
from lockwright.activities.reads import Registries
from lockwright.k8s import Obj
from lockwright.oci.cache import CacheEntry, PackageCache
from lockwright.oci.fetch import fetch_package
from lockwright.oci.reference import parse
from lockwright.oci.validate import validate_documents

if TYPE_CHECKING:
    from lockwright.xpkg.parse import PackageSummary

SUMMARIES_KEPT = 64


class Contents:
    """The cached package of a digest, and its summary (kept in memory, LRU-bounded)."""

    def __init__(self, cache: PackageCache, registries: Registries) -> None:
        self.cache = cache
        self.registries = registries
        self._summaries: OrderedDict[str, PackageSummary] = OrderedDict()
        self._summaries_lock = threading.Lock()

    def cached(self, kind: str, revision: Obj, digest: str) -> CacheEntry:
        """The revision's package.yaml in the cache, fetched again on a miss."""
        entry = self.cache.get(digest)
        if entry is not None:
            return entry
        image = str(spec(revision).get("image", ""))
        # From the watch cache: the digest was chosen, and vouched for, on a consistent
        # read (resolve_digest); this only says where to pull its bytes, which are checked
        # against it (docs/design.md, "Configuration read from the watch cache").
        resolved = self.registries.resolution(image, cached=True)
        secrets = secret_names(spec(revision).get("packagePullSecrets"))
        secrets += [resolved.pull_secret] if resolved.pull_secret else []
        client = self.registries.registry(secrets)
        ref = str(parse(resolved.resolved).with_digest(digest))
        log(revision=meta(revision).get("name"), digest=digest).info("cache.refetch")
        with heartbeating(), self.registries.naming_missing_secrets(secrets):
            fetched = fetch_package(ref, client, self.cache, expected_kind=kind_of(kind))
        if fetched.summary is not None:
            self.remember(digest, fetched.summary)
        return fetched.entry

    def base_layer(self, kind: str, revision: Obj, digest: str) -> str:
        """The digest of the layer the package.yaml was read from ("" when the package
        marks none); from the entry's record, fetched again only on a miss."""
        found = self.cache.base_layer(digest)
        return found if found is not None else self.cached(kind, revision, digest).base_layer

    def remember(self, digest: str, summary: PackageSummary) -> None:
        """Keep a parsed summary for ``digest`` (small: no objects), LRU-bounded."""
        with self._summaries_lock:
            self._summaries[digest] = summary
            self._summaries.move_to_end(digest)
            while len(self._summaries) > SUMMARIES_KEPT:
                self._summaries.popitem(last=False)

    def summary(self, kind: str, revision: Obj, digest: str) -> PackageSummary:
        """The package's validated summary (meta, object summaries, lint warnings)."""
        with self._summaries_lock:
            known = self._summaries.get(digest)
        if known is not None:
            return known
        return self.summary_of(digest, self.cached(kind, revision, digest), kind_of(kind))

    def summary_of(self, digest: str, entry: CacheEntry, kind: str | None = None
                   ) -> PackageSummary:
        """The summary of a cache entry, validated and remembered for ``digest``."""
        found = validate_documents(entry.documents, kind)
        self.remember(digest, found)
        return found
