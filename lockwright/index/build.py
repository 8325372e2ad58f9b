"""``lockwright index build``: one index entry per package version, from base layers only.

For each repository every tag is listed and resolved to its digest. Tags that are not
packages are skipped with a note: cosign's signature, attestation and referrer tags
(``sha256-<hex>[.sig|.att|...]``), artifacts whose config is not an image's (an index
itself, among others) and images holding no package.yaml. Of a package only the layer
marked ``io.crossplane.xpkg: base`` is read, as the installer reads it
(:func:`lockwright.oci.fetch.layers_to_read`); a package with no marked base layer has all
its layers read, and a note says so. The package.yaml is streamed once: its meta object
gives name, kind, Crossplane constraint, dependencies and required APIs, and each
definition its served types and type digest, without keeping the objects.

Reading is the cost (a 2,000-CRD package.yaml is about 100 MB of YAML), so nothing is read
twice: a version whose manifest digest a previous index already lists (``--previous``) is
taken from it, and versions sharing a base layer (a release that changes only the
controller image) are read once.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from lockwright.errors import InvalidPackage
from lockwright.identity import digest as digests
from lockwright.identity.apis import ServedType, served_types
from lockwright.identity.names import REQUIRES_APIS
from lockwright.index.model import CONFIG_MEDIA_TYPE, Dependency, Entry, PackageIndex
from lockwright.oci.client import RegistryClient
from lockwright.oci.extract import extract_package_yaml
from lockwright.oci.fetch import DEFAULT_LIMITS, Limits, layers_to_read, select_image
from lockwright.oci.reference import Reference, parse
from lockwright.oci.types import Descriptor, Manifest
from lockwright.xpkg.meta import PackageMeta, is_meta, parse_meta
from lockwright.xpkg.parse import iter_objects

Note = Callable[[str], None]
_COSIGN_TAG = re.compile(r"^sha256-[0-9a-f]{64}(\.[A-Za-z0-9]+)?$")
#: The config media types of images (a package is an image); any other is an artifact.
IMAGE_CONFIGS = frozenset({"application/vnd.oci.image.config.v1+json",
                           "application/vnd.docker.container.image.v1+json"})


@dataclass
class Known:
    """What a build need not read again: a previous index's entries by (repository,
    manifest digest), and the contents already read in this run by base layer."""

    entries: dict[tuple[str, str], Entry] = field(default_factory=dict)
    contents: dict[str, Contents] = field(default_factory=dict)

    @classmethod
    def of(cls, previous: PackageIndex | None) -> Known:
        """What ``previous`` (if any) already knows."""
        entries = previous.entries if previous is not None else ()
        return cls({(e.repository, e.digest): replace(e, index="") for e in entries})


@dataclass(frozen=True)
class Contents:
    """What an index keeps of a package.yaml."""

    meta: PackageMeta
    types: tuple[ServedType, ...]
    api_digest: str


def build(client: RegistryClient, repositories: Sequence[str], note: Note,
          limits: Limits = DEFAULT_LIMITS, previous: PackageIndex | None = None
          ) -> PackageIndex:
    """The index of every package version in ``repositories``; what ``previous`` lists
    under the same manifest digest is not read again.

    Raises:
        PackageNotFound, Unauthorized, RegistryUnavailable: a repository cannot be listed
            or a tag read (the registry's own error, naming the repository).
        InvalidReference: a repository is not a reference.
    """
    entries: list[Entry] = []
    known = Known.of(previous)
    for repository in repositories:
        entries.extend(repository_entries(client, parse(repository), note, limits, known))
    return PackageIndex(tuple(entries))


def repository_entries(client: RegistryClient, repository: Reference, note: Note,
                       limits: Limits = DEFAULT_LIMITS, known: Known | None = None
                       ) -> Iterator[Entry]:
    """An entry per package tag of ``repository``; other tags are noted and skipped."""
    for tag in client.list_tags(repository):
        if _COSIGN_TAG.match(tag):
            note(f"{repository.source}:{tag}: skipped, a signature, attestation or "
                 "referrers tag")
            continue
        entry = tag_entry(client, repository.with_tag(tag), note, limits, known or Known())
        if entry is not None:
            yield entry


def tag_entry(client: RegistryClient, tagged: Reference, note: Note,
              limits: Limits = DEFAULT_LIMITS, known: Known | None = None) -> Entry | None:
    """The entry of one tag, or None (noted) when it is not a package."""
    known = known if known is not None else Known()
    digest = client.resolve(tagged)
    if (listed := known.entries.get((tagged.source, digest))) is not None:
        return replace(listed, tag=tagged.tag or "")
    pinned = tagged.with_digest(digest)
    top = client.get_manifest(pinned, digest)
    if why := not_a_package(top):
        note(f"{tagged}: skipped, {why}")
        return None
    return _read_entry(client, pinned, top, note, limits, known)


def _read_entry(client: RegistryClient, pinned: Reference, top: Manifest, note: Note,
                limits: Limits, known: Known) -> Entry | None:
    """The entry of a package image; its base layer is read unless already read."""
    tagged = pinned.with_tag(pinned.tag or "")
    layers, base = layers_to_read(client, pinned, select_image(client, pinned, top), limits)
    if not base:
        note(f"{tagged}: no layer is marked as the base layer; read all {len(layers)} layers")
    try:
        contents = known.contents.get(base) or read_contents(client, pinned, layers, limits)
    except InvalidPackage as exc:
        note(f"{tagged}: skipped, not a package: {exc.message}")
        return None
    if base:
        known.contents[base] = contents
    return entry_of(tagged, top.digest, base, contents)


def not_a_package(top: Manifest) -> str:
    """Why the manifest at a tag is not a package image, or ""."""
    if top.is_index:
        return ""
    media_type = top.config().media_type
    if media_type == CONFIG_MEDIA_TYPE:
        return "a package index"
    if media_type not in IMAGE_CONFIGS:
        return f"an artifact of config type {media_type or '(none)'}, not a package image"
    return ""


def read_contents(client: RegistryClient, ref: Reference, layers: Sequence[Descriptor],
                  limits: Limits = DEFAULT_LIMITS) -> Contents:
    """Download ``layers`` (bottom first) and read their package.yaml.

    Raises:
        InvalidPackage: no package.yaml, a limit exceeded, malformed YAML, no or several
            meta objects.
    """
    with tempfile.TemporaryDirectory(prefix="lockwright-index-") as scratch:
        files = []
        for i, layer in enumerate(layers):
            if layer.size > limits.layer_bytes:
                raise InvalidPackage(f"layer {layer.digest} is {layer.size} bytes, over the "
                                     f"limit of {limits.layer_bytes}")
            path = Path(scratch) / f"layer-{i}"
            with path.open("wb") as out:
                client.download_blob(ref, layer.digest, out, limits.layer_bytes)
            files.append((path, f"layer {layer.digest}"))
        yaml_path = Path(scratch) / "package.yaml"
        with yaml_path.open("wb") as out:
            extract_package_yaml(files, out, limits.package_yaml_bytes,
                                 limits.decompressed_bytes)
        with yaml_path.open("rb") as f:
            return scan(iter_objects(f, limit=limits.package_yaml_bytes))


def scan(documents: Iterator[tuple[int, dict[str, object]]]) -> Contents:
    """The meta object and the served types of a package's documents, in one pass.

    Raises:
        InvalidPackage: no meta object, or several.
    """
    meta: PackageMeta | None = None
    types: list[ServedType] = []
    keyed: list[tuple[str, str]] = []
    for index, doc in documents:
        if is_meta(doc):
            if meta is not None:
                raise InvalidPackage(f"document {index} is a second meta object")
            meta = parse_meta(doc)
        elif digests.is_definition(doc):
            digest = digests.type_digest(doc)
            keyed.append((digests.type_key(doc), digest))
            types.extend(served_types(doc, digest))
    if meta is None:
        raise InvalidPackage("the package has no meta object (crossplane.yaml)")
    return Contents(meta, tuple(types), digests.api_digest_of(keyed))


def entry_of(tagged: Reference, digest: str, base_layer: str, contents: Contents) -> Entry:
    """The index entry of a package version read at ``tagged``."""
    meta = contents.meta
    requires = meta.annotations.get(REQUIRES_APIS, "")
    return Entry(repository=tagged.source, tag=tagged.tag or "", digest=digest,
                 kind=meta.kind, name=meta.name, base_layer=base_layer,
                 crossplane=meta.crossplane_version or "", api_digest=contents.api_digest,
                 dependencies=tuple(Dependency(d.package, d.constraint, d.kind)
                                    for d in meta.depends_on),
                 requires_apis=tuple(a.strip() for a in requires.split(",") if a.strip()),
                 types=contents.types)
