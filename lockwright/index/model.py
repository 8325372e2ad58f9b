"""The package index document, and the pure questions asked of it.

An index lists, per package version: repository, tag, digest, package kind, base-layer
digest, Crossplane constraint, dependencies, the APIs it requires
(:data:`lockwright.identity.names.REQUIRES_APIS`) and the types it serves with their type
digests. It is JSON (:data:`MEDIA_TYPE`), pushed as the one layer of an OCI artifact and
signed like a package. Many indexes may be read at once (``LOCKWRIGHT_PACKAGE_INDEXES``);
each entry remembers which index listed it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import orjson

from lockwright.errors import InvalidPackage
from lockwright.identity.apis import ApiRef, ServedType

Obj = dict[str, Any]

API_VERSION = "index.lockwright.dev/v1alpha1"
KIND = "PackageIndex"
#: The media type of the index layer, and of the artifact's config.
MEDIA_TYPE = "application/vnd.lockwright.package-index.v1+json"
CONFIG_MEDIA_TYPE = "application/vnd.lockwright.package-index.config.v1+json"


@dataclass(frozen=True)
class Dependency:
    """A package's dependency as its metadata declares it (Crossplane's ``dependsOn``)."""

    package: str
    version: str = ""
    kind: str = ""

    def to_json(self) -> Obj:
        """The index's form."""
        return {"package": self.package, "version": self.version, "kind": self.kind}


@dataclass(frozen=True)
class Entry:
    """One package version."""

    repository: str
    tag: str
    digest: str
    kind: str  # Provider, Configuration or Function
    name: str = ""  # metadata.name in crossplane.yaml
    base_layer: str = ""
    crossplane: str = ""  # spec.crossplane.version constraint
    api_digest: str = ""
    dependencies: tuple[Dependency, ...] = ()
    requires_apis: tuple[str, ...] = ()
    types: tuple[ServedType, ...] = ()
    #: The index this entry was read from (not written: an index does not name itself).
    index: str = ""

    @property
    def reference(self) -> str:
        """``repository:tag``, what a package's ``spec.package`` names."""
        return f"{self.repository}:{self.tag}"

    def serves(self, api: ApiRef) -> bool:
        """Whether a type of this version is ``api``."""
        return any(t.serves(api) for t in self.types)

    def to_json(self) -> Obj:
        """The index's form."""
        return {"repository": self.repository, "tag": self.tag, "digest": self.digest,
                "kind": self.kind, "name": self.name, "baseLayer": self.base_layer,
                "crossplane": self.crossplane, "apiDigest": self.api_digest,
                "dependencies": [d.to_json() for d in self.dependencies],
                "requiresApis": list(self.requires_apis),
                "types": [t.to_json() for t in self.types]}

    @classmethod
    def from_json(cls, data: Obj, index: str = "") -> Entry:
        """Read the index's form."""
        return cls(repository=str(data.get("repository", "")), tag=str(data.get("tag", "")),
                   digest=str(data.get("digest", "")), kind=str(data.get("kind", "")),
                   name=str(data.get("name", "")), base_layer=str(data.get("baseLayer", "")),
                   crossplane=str(data.get("crossplane", "")),
                   api_digest=str(data.get("apiDigest", "")),
                   dependencies=tuple(Dependency(str(d.get("package", "")),
                                                 str(d.get("version", "")),
                                                 str(d.get("kind", "")))
                                      for d in data.get("dependencies") or ()),
                   requires_apis=tuple(str(a) for a in data.get("requiresApis") or ()),
                   types=tuple(ServedType.from_json(t) for t in data.get("types") or ()),
                   index=index)


@dataclass(frozen=True)
class PackageIndex:
    """An index: its entries, sorted by repository then tag."""

    entries: tuple[Entry, ...] = ()
    source: str = ""  # the OCI reference it was read from

    def to_bytes(self) -> bytes:
        """The JSON document, stable for equal entries (sorted keys, sorted entries)."""
        doc = {"apiVersion": API_VERSION, "kind": KIND,
               "packages": [e.to_json() for e in sorted(self.entries, key=_order)]}
        return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "") -> PackageIndex:
        """Read an index document.

        Raises:
            InvalidPackage: the document is not a package index, naming ``source``.
        """
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise InvalidPackage(f"package index {source or '(file)'} is not JSON: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise InvalidPackage(f"package index {source or '(file)'} is not a {KIND} "
                                 f"(apiVersion {API_VERSION}): kind is {doc.get('kind')!r}"
                                 if isinstance(doc, dict) else
                                 f"package index {source or '(file)'} is not a {KIND}")
        return cls(_entries(doc.get("packages") or [], source), source)


def _entries(packages: object, source: str) -> tuple[Entry, ...]:
    """The entries of an index's ``packages``, each checked for shape.

    Raises:
        InvalidPackage: naming the index and the first malformed entry.
    """
    named = source or "(file)"
    if not isinstance(packages, list):
        raise InvalidPackage(f"package index {named}: packages is not a list")
    entries = []
    for n, data in enumerate(packages):
        try:
            entries.append(Entry.from_json(data, source))
        except (AttributeError, TypeError, ValueError) as exc:
            raise InvalidPackage(f"package index {named}: packages[{n}] is malformed "
                                 f"({exc}); rebuild it with lockwright index build") from exc
    return tuple(entries)


def _order(entry: Entry) -> tuple[str, str]:
    return entry.repository, entry.tag


def merged(indexes: Iterable[PackageIndex]) -> list[Entry]:
    """Every entry of ``indexes``; a version two indexes list (same repository and tag)
    is kept once, from the first index. Tags of one digest (``v1.2.0`` and ``latest``)
    are versions of their own: choosing by semver needs the ``v1.2.0``."""
    seen: set[tuple[str, str]] = set()
    out: list[Entry] = []
    for index in indexes:
        for entry in index.entries:
            if (entry.repository, entry.tag) not in seen:
                seen.add((entry.repository, entry.tag))
                out.append(entry if entry.index else replace(entry, index=index.source))
    return out


def serving(entries: Iterable[Entry], api: ApiRef) -> list[Entry]:
    """The entries (package versions) that serve ``api``."""
    return [e for e in entries if e.serves(api)]


def repositories(entries: Iterable[Entry]) -> list[str]:
    """The distinct repositories of ``entries``, sorted."""
    return sorted({e.repository for e in entries})


def matching(entries: Iterable[Entry], text: str) -> list[Entry]:
    """``lockwright search TEXT``: entries whose repository, name or a type's kind, plural
    or group contains ``text`` (case-insensitive)."""
    needle = text.lower()
    return [e for e in entries
            if needle in e.repository.lower() or needle in e.name.lower()
            or any(needle in f"{t.kind} {t.plural}.{t.group}".lower() for t in e.types)]


