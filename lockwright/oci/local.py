"""Packages from image tarballs on disk (``xpkg build`` output): extract, inspect, cache load.

A tarball is read with :func:`lockwright.xpkg.tarball.read_image_tarball` and treated as
untrusted as a registry: each layer read is checked against its digest and goes through
the same extraction limits and validation as a fetched one.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import structlog

from lockwright.errors import InvalidPackage
from lockwright.oci.cache import CacheEntry, PackageCache
from lockwright.oci.extract import Extracted, extract_package_yaml
from lockwright.oci.fetch import DEFAULT_LIMITS, Limits
from lockwright.oci.push import LayerLike, TarballLike, manifest_digest
from lockwright.oci.reference import parse
from lockwright.oci.validate import validate_package
from lockwright.xpkg.tarball import read_image_tarball

if TYPE_CHECKING:
    from lockwright.xpkg.parse import PackageSummary

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class LocalPackage:
    """What a tarball holds: the digest its pushed manifest will have, its base layer, and
    its package.yaml's decoded documents (a scratch ``documents.jsonl``)."""

    digest: str
    base_layer: str
    extracted: Extracted
    summary: PackageSummary
    documents: Path


def read_tarball(path: str | Path) -> TarballLike:
    """Read an image tarball written by ``xpkg build`` (or ``docker save``)."""
    try:
        return read_image_tarball(path)
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidPackage(f"cannot read image tarball {path}: {str(exc)[:200]}") from exc


def _copy_verified(layer: LayerLike, out: IO[bytes], limit: int) -> None:
    hasher, size = hashlib.sha256(), 0
    with layer.open() as src:
        while chunk := src.read(1024 * 1024):
            size += len(chunk)
            if size > limit:
                raise InvalidPackage(f"layer {layer.digest} is over the limit of {limit} bytes")
            hasher.update(chunk)
            out.write(chunk)
    if f"sha256:{hasher.hexdigest()}" != layer.digest:
        raise InvalidPackage(f"layer {layer.digest} does not match its digest")


@contextlib.contextmanager
def _layer_files(tarball: TarballLike, cache: PackageCache,
                 limits: Limits) -> Iterator[tuple[list[tuple[Path, str]], str]]:
    base = [layer for layer in tarball.layers if layer.annotation == "base"][:1]
    layers = base or list(tarball.layers)
    with contextlib.ExitStack() as stack:
        files = []
        for layer in layers:
            path, f = stack.enter_context(cache.temp_file(".layer"))
            _copy_verified(layer, f, limits.layer_bytes)
            f.flush()
            files.append((path, f"layer {layer.digest}"))
        yield files, base[0].digest if base else ""


@contextlib.contextmanager
def open_tarball(path: str | Path, cache: PackageCache, limits: Limits = DEFAULT_LIMITS,
                 expected_kind: str | None = None) -> Iterator[tuple[Path, LocalPackage]]:
    """Extract and validate a tarball's package.yaml into a scratch file for the block."""
    tarball = read_tarball(path)
    with contextlib.closing(tarball), cache.temp_file(".yaml") as (yaml_path, out), \
            cache.temp_file(".jsonl") as (docs_path, docs), \
            _layer_files(tarball, cache, limits) as (files, base):
        extracted = extract_package_yaml(files, out, limits.package_yaml_bytes,
                                         limits.decompressed_bytes)
        out.close()
        summary = validate_package(yaml_path, expected_kind, docs)
        docs.close()
        yield yaml_path, LocalPackage(manifest_digest(tarball), base, extracted, summary,
                                      docs_path)


def load_into_cache(cache: PackageCache, path: str | Path, as_ref: str,
                    limits: Limits = DEFAULT_LIMITS) -> CacheEntry:
    """Fill the cache from a tarball and name it ``as_ref`` (``packagePullPolicy: Never``)."""
    ref = parse(as_ref)
    with open_tarball(path, cache, limits) as (yaml_path, package):
        entry = cache.put(package.digest, yaml_path, package.extracted.sha256, ref.source,
                          package.base_layer, documents=package.documents)
    cache.set_alias(str(ref), package.digest)
    log.info("cache.loaded", ref=str(ref), digest=package.digest)
    return entry


def copy_out(source: Path, destination: Path) -> None:
    """Copy ``source`` to ``destination`` atomically (a temp file beside it, then rename)."""
    partial = destination.with_name(f".{destination.name}.partial")
    try:
        shutil.copyfile(source, partial)
        partial.replace(destination)
    finally:
        partial.unlink(missing_ok=True)
