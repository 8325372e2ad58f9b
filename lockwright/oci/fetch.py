"""Fetch a package as the installer does: resolve, read, verify, extract, validate, cache.

The algorithm is Crossplane's ``Get`` (docs/crossplane.md §7.5): resolve the tag to a digest (HEAD,
then GET), use the cache unless the policy is ``Always``, otherwise follow an image index
to linux/amd64 (or its only manifest), read only the layer annotated
``io.crossplane.xpkg: base`` (the annotation on the manifest, else the builder's config
label), or flatten all layers when none is marked, and take ``package.yaml``. Every
manifest and blob read is checked against its sha256; blobs stream to temporary files in
the cache directory, never whole into memory. Nothing reaches the cache until the
package.yaml has been extracted within limits and parsed; that one parse also writes the
entry's ``documents.jsonl``, which is what the installer reads afterwards.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import structlog

from lockwright.errors import InvalidPackage, PackageNotFound
from lockwright.oci.cache import CacheEntry, PackageCache
from lockwright.oci.client import MAX_MANIFEST_BYTES, RegistryClient
from lockwright.oci.extract import extract_package_yaml
from lockwright.oci.reference import Reference, parse
from lockwright.oci.types import BASE, XPKG_ANNOTATION, Descriptor, Manifest
from lockwright.oci.validate import validate_package

if TYPE_CHECKING:
    from lockwright.xpkg.parse import PackageSummary

log = structlog.get_logger(__name__)

PullPolicy = Literal["IfNotPresent", "Always", "Never"]
MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Bounds on what a registry can make us read."""

    manifest_bytes: int = MAX_MANIFEST_BYTES
    layer_bytes: int = 1024 * MiB
    package_yaml_bytes: int = 200 * MiB
    decompressed_bytes: int = 1024 * MiB


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class FetchedPackage:
    """A package in the cache: ``digest`` is the resolved digest (of the index, if any)."""

    ref: str
    digest: str
    entry: CacheEntry
    from_cache: bool
    summary: PackageSummary | None = None

    @property
    def path(self) -> Path:
        return self.entry.path


def fetch_package(ref: str, client: RegistryClient, cache: PackageCache,
                  policy: PullPolicy = "IfNotPresent", limits: Limits = DEFAULT_LIMITS,
                  expected_kind: str | None = None) -> FetchedPackage:
    """Make ``ref``'s package.yaml available in ``cache`` and return where it is.

    Args:
        ref: a fully qualified image reference.
        client: the registry client (credentials, insecure hosts).
        cache: the package cache.
        policy: ``IfNotPresent`` uses an intact cache entry; ``Always`` refetches;
            ``Never`` uses only the cache (a tag is looked up among ``cache load`` aliases).
        limits: size bounds.
        expected_kind: ``Provider``, ``Configuration`` or ``Function`` to enforce.

    Raises:
        PackageNotFound, Unauthorized, InvalidPackage, RegistryUnavailable.
    """
    reference = parse(ref)
    if policy == "Never":
        return _from_cache_only(ref, reference, cache)
    digest = client.resolve(reference)
    entry = cache.get(digest) if policy != "Always" else None
    if entry is not None:
        log.debug("fetch.cache_hit", ref=ref, digest=digest)
        return FetchedPackage(ref, digest, entry, True)
    entry, summary = _fetch_into_cache(client, reference.with_digest(digest), cache, limits,
                                       expected_kind)
    return FetchedPackage(ref, digest, entry, False, summary)


def _from_cache_only(ref: str, reference: Reference, cache: PackageCache) -> FetchedPackage:
    digest = reference.digest or cache.alias(str(reference))
    entry = cache.get(digest) if digest else None
    if entry is None or digest is None:
        raise PackageNotFound(f"package {ref} not in cache and pull policy is Never")
    return FetchedPackage(ref, digest, entry, True)


def _fetch_into_cache(client: RegistryClient, ref: Reference, cache: PackageCache,
                      limits: Limits, expected_kind: str | None,
                      ) -> tuple[CacheEntry, PackageSummary]:
    assert ref.digest is not None
    top = client.get_manifest(ref, ref.digest)
    image = select_image(client, ref, top)
    layers, base = layers_to_read(client, ref, image, limits)
    if top.is_index:
        same_base_everywhere(client, ref, top, limits)
    with cache.temp_file(".yaml") as (yaml_path, out), cache.temp_file(".jsonl") as (
            docs_path, docs), _downloaded(client, ref, cache, layers, limits) as files:
        extracted = extract_package_yaml(files, out, limits.package_yaml_bytes,
                                         limits.decompressed_bytes)
        out.close()
        summary = validate_package(yaml_path, expected_kind, docs)
        docs.close()
        entry = cache.put(ref.digest, yaml_path, extracted.sha256, ref.source, base,
                          documents=docs_path)
    log.info("fetch.fetched", ref=str(ref), digest=ref.digest, manifest=image.digest,
             base_layer=base, size=extracted.size)
    return entry, summary


def select_image(client: RegistryClient, ref: Reference, top: Manifest) -> Manifest:
    """The image manifest to read: ``top`` itself, or the index's linux/amd64 (or only) one."""
    if not top.is_index:
        return top
    entries = top.manifests()
    chosen = entries[0] if len(entries) == 1 else next(
        (m for m in entries if (m.platform or {}).get("os") == "linux"
         and (m.platform or {}).get("architecture") == "amd64"), None)
    if chosen is None:
        raise InvalidPackage(f"image index {top.digest} has several manifests and none for "
                             "linux/amd64")
    image = client.get_manifest(ref, chosen.digest)
    if image.is_index:
        raise InvalidPackage(f"image index {top.digest} points at another index")
    return image


def same_base_everywhere(client: RegistryClient, ref: Reference, index: Manifest,
                         limits: Limits) -> None:
    """Refuse an image index whose platforms carry different base layers.

    A package's API is its package.yaml; the seeds require the same on every platform,
    which ``xpkg push`` checks, but an index pushed by another tool may not be so.

    Raises:
        InvalidPackage: naming each platform's base layer.
    """
    bases: dict[str, str] = {}
    for entry in index.manifests():
        image = client.get_manifest(ref, entry.digest)
        layers, base = layers_to_read(client, ref, image, limits)
        platform = "/".join(str(v) for v in (entry.platform or {}).values()) or entry.digest
        bases[platform] = base or ",".join(layer.digest for layer in layers)
    if len(set(bases.values())) > 1:
        listed = ", ".join(f"{p}: {b[:19]}" for p, b in bases.items())
        raise InvalidPackage(f"image index {index.digest} carries different base layers on "
                             f"its platforms ({listed}); a package's package.yaml must be "
                             "the same on every platform")


def layers_to_read(client: RegistryClient, ref: Reference, image: Manifest,
                   limits: Limits) -> tuple[list[Descriptor], str]:
    """The base layer alone if one is marked (returned second), else every layer."""
    layers = image.layers()
    for layer in layers:
        if layer.annotations.get(XPKG_ANNOTATION) == BASE:
            return [layer], layer.digest
    labels = _config_labels(client, ref, image, limits)
    for layer in layers:
        if labels.get(f"{XPKG_ANNOTATION}:{layer.digest}") == BASE:
            return [layer], layer.digest
    return layers, ""


def _config_labels(client: RegistryClient, ref: Reference, image: Manifest,
                   limits: Limits) -> dict[str, str]:
    # The builder keeps the base marker as a config label because tarballs lose layer
    # annotations; the config is small and bounded like a manifest, so memory is fine.
    config = image.config()
    buffer = io.BytesIO()
    client.download_blob(ref, config.digest, buffer, limits.manifest_bytes)
    try:
        doc = json.loads(buffer.getvalue())
    except ValueError:
        raise InvalidPackage(f"image config {config.digest} is not JSON") from None
    config_doc = doc.get("config") if isinstance(doc, dict) else None
    labels = config_doc.get("Labels") if isinstance(config_doc, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


@contextlib.contextmanager
def _downloaded(client: RegistryClient, ref: Reference, cache: PackageCache,
                layers: list[Descriptor], limits: Limits) -> Iterator[list[tuple[Path, str]]]:
    with contextlib.ExitStack() as stack:
        files = []
        for layer in layers:
            if layer.size > limits.layer_bytes:
                raise InvalidPackage(f"layer {layer.digest} is {layer.size} bytes, over the "
                                     f"limit of {limits.layer_bytes}")
            path, f = stack.enter_context(cache.temp_file(".layer"))
            client.download_blob(ref, layer.digest, f, limits.layer_bytes)
            f.flush()
            files.append((path, f"layer {layer.digest}"))
        yield files
