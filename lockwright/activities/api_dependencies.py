"""Dependencies on APIs at ``take_lock``: who serves each API a package requires, and the indexes.

:class:`ApiNeeds` asks the cluster and the package indexes what
:func:`lockwright.dependencies.apis.needs` decides on: which of the APIs a package's
``lockwright.dev/requires-apis`` names are served (the server's discovery, now, not a
cache), by which package in the Lock (the revision whose claim, ``status.objectRefs``,
holds the definition, as ``take_lock`` read the claims), which are defined by an Inactive MRD, and, only when some API is
neither, what the indexes list.

The indexes come from an injected :data:`IndexReader`, composed where activities are
wired (:func:`activities.wire`): :func:`configured_indexes`, the reader of
``LOCKWRIGHT_PACKAGE_INDEXES`` (``lockwright.index.read``) under the ImageConfigs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from lockwright.activities.reads import Registries
from lockwright.dependencies import apis
from lockwright.dependencies.apis import Indexes, Needs, Served
from lockwright.errors import KubeNotFound, LockwrightError
from lockwright.identity.apis import ApiRef
from lockwright.index.model import PackageIndex, merged
from lockwright.index.read import IndexReader as Reader
from lockwright.k8s import Kube, Obj
from lockwright.k8s.watch import list_all
from lockwright.managed.convert import MRD_API_VERSION, MRD_KIND, MRD_PATH
from lockwright.objects.claims import Claim
from lockwright.settings import Settings

#: Reads the configured package indexes (none configured: an empty list). Raises a
#: ``LockwrightError`` when one cannot be read or fails verification.
IndexReader = Callable[[], list[PackageIndex]]
#: The definition kinds a claim names a served type by (``plural.group``).
_DEFINITIONS = frozenset({"CustomResourceDefinition", "ManagedResourceDefinition",
                          "CompositeResourceDefinition"})


def no_indexes() -> list[PackageIndex]:
    """A reader of no index: a missing API says none is configured."""
    return []


def configured_indexes(settings: Settings, registries: Registries) -> IndexReader:
    """The reader of ``LOCKWRIGHT_PACKAGE_INDEXES``, under the ImageConfigs (rewrite, pull
    Secret, verification) as they are at each read: the worker reads as the CLI does."""
    def read() -> list[PackageIndex]:
        if not settings.package_indexes:
            return []
        return Reader(settings, registries.registry([]), registries.image_configs(),
                      registries.secret).read()
    return read


class ApiNeeds:
    """The I/O behind a package's API requirements."""

    def __init__(self, kube: Kube, indexes: IndexReader = no_indexes) -> None:
        self.kube = kube
        self.indexes = indexes

    def needs(self, annotations: Mapping[str, str], declared: Collection[str], lock: Obj,
              revision: str, claims: Mapping[str, Claim]) -> Needs:
        """What the package's required APIs add to the Lock entry of ``revision``.

        Args:
            annotations: the package metadata's annotations.
            declared: the repositories its ``dependsOn`` names.
            lock: the Lock as read.
            revision: the revision taking the Lock.
            claims: the claims of the Lock's revisions, by name, as ``take_lock`` read
                them (so the revisions are not listed twice).

        Raises:
            InvalidPackage: the annotation names something that is not an API.
        """
        required = apis.required(annotations)
        if not required:
            return Needs()
        owners = apis.holders(lock, {rev: [k.name for k in keys if k.kind in _DEFINITIONS]
                                     for rev, (_, keys) in claims.items()})
        served = {api: self.served(api, owners) for api in required}
        read = self.read() if apis.unserved(required, served) else Indexes()
        entries = lock.get("packages") or []
        recorded = next((e.get("dependencies") or [] for e in entries
                         if e.get("name") == revision), [])
        installed = {str(e.get("source", "")) for e in entries}
        return apis.needs(required, served, declared, recorded, read, installed)

    def served(self, api: ApiRef, owners: Mapping[str, Served]) -> Served | None:
        """Who serves ``api``: None when nobody does; the package whose revision in the
        Lock claims its definition; else ``Served()`` (a CRD applied by hand)."""
        plural = self.plural(api)
        if plural is None:
            return self.inactive(api, owners)
        return owners.get(f"{plural}.{api.group}", Served())

    def inactive(self, api: ApiRef, owners: Mapping[str, Served]) -> Served | None:
        """The Inactive MRD defining ``api``, who holds it; None when there is none."""
        try:
            mrds = [self.kube.get(MRD_API_VERSION, MRD_KIND, name)
                    for name in self.definitions(api)]
        except KubeNotFound:  # a cluster without MRDs (Crossplane v1's API)
            return None
        name = apis.inactive_definition(api, [m for m in mrds if m is not None])
        return replace(owners.get(name, Served()), inactive=name) if name else None

    def definitions(self, api: ApiRef) -> list[str]:
        """The names of the MRDs that may define ``api``: its own for ``plural.group``;
        for ``Kind.group`` (a name holds no kind) those of its group, listed as metadata
        only, since an MRD holds a whole CRD schema."""
        if not api.is_kind:
            return [f"{api.name.lower()}.{api.group}"]
        listed = list_all(self.kube, MRD_PATH, metadata_only=True)
        return apis.definition_names(api, (str((m.get("metadata") or {}).get("name", ""))
                                           for m in listed.items))

    def plural(self, api: ApiRef) -> str | None:
        """The plural the server serves ``api`` under, or None: discovery, read now."""
        versions = [api.version] if api.version else self.versions(api.group)
        for version in versions:
            found = self.kube.read_path(f"/apis/{api.group}/{version}") or {}
            for res in found.get("resources") or []:
                name, kind = str(res.get("name", "")), str(res.get("kind", ""))
                if "/" not in name and (kind == api.name if api.is_kind
                                        else name == api.name.lower()):
                    return name
        return None

    def versions(self, group: str) -> list[str]:
        """The versions the server serves ``group`` at (none when it does not)."""
        found = self.kube.read_path(f"/apis/{group}") or {}
        return [str(v.get("version", "")) for v in found.get("versions") or []]

    def read(self) -> Indexes:
        """The indexes' entries, or why they could not be read (never raised: the
        revision says it, and a later pass reads them again)."""
        try:
            read = self.indexes()
        except LockwrightError as err:
            return Indexes(error=err.message)
        return Indexes(tuple(merged(read)), tuple(i.source for i in read))
