"""Image tarballs (``.xpkg`` files) in go-containerregistry's ``tarball.Write`` layout.

The layout is what ``docker load`` reads: a plain tar holding the config blob named
``sha256:<hex>``, each gzipped layer named ``<hex>.tar.gz`` and a ``manifest.json`` of
``[{"Config", "RepoTags", "Layers"}]``. Tarballs cannot carry layer annotations, so, as in
Crossplane, a layer's ``io.crossplane.xpkg`` annotation travels as the config label
``io.crossplane.xpkg:sha256:<layer digest>`` and becomes an annotation again in `manifest`.
Layers are never loaded whole: each one opens as a window onto the tarball on disk.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol, Self

from lockwright.errors import InvalidPackage

ANNOTATION_KEY = "io.crossplane.xpkg"
BASE_ANNOTATION = "base"
EXAMPLES_ANNOTATION = "upbound"  # Crossplane kept the original name for compatibility
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
_TO_OCI = {DOCKER_LAYER: OCI_LAYER}
_CHUNK = 1 << 20
_MAX_CONFIG = 8 << 20


def label_key(layer_digest: str) -> str:
    """The config label that carries a layer's annotation: ``io.crossplane.xpkg:<digest>``."""
    return f"{ANNOTATION_KEY}:{layer_digest}"


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _no_content() -> BinaryIO:
    raise InvalidPackage("this layer descriptor has no content attached")


@dataclass(frozen=True)
class Layer:
    """One gzipped layer blob.

    Attributes:
        digest: ``sha256:`` of the compressed blob, as pushed.
        diff_id: ``sha256:`` of the uncompressed tar, as listed in the config.
        size: size of the compressed blob in bytes.
        media_type: the layer media type.
        annotation: the ``io.crossplane.xpkg`` value (``base``, ``upbound``) or None.
    """

    digest: str
    diff_id: str
    size: int
    media_type: str = DOCKER_LAYER
    annotation: str | None = None
    opener: Callable[[], BinaryIO] = field(default=lambda: _no_content(), repr=False,
                                           compare=False)

    def open(self) -> BinaryIO:
        """A fresh binary stream of the compressed blob; the caller closes it."""
        return self.opener()


@dataclass(frozen=True)
class Platform:
    """The ``os``/``architecture`` (and ``variant``) an image config declares."""

    os: str
    architecture: str
    variant: str | None = None


@dataclass(frozen=True)
class Image:
    """An image: raw config bytes plus its layers, in order."""

    config_bytes: bytes
    layers: tuple[Layer, ...]

    @property
    def config_digest(self) -> str:
        """``sha256:`` of the config blob."""
        return sha256_digest(self.config_bytes)

    @property
    def config(self) -> dict[str, Any]:
        """The decoded config."""
        decoded: dict[str, Any] = json.loads(self.config_bytes)
        return decoded

    @property
    def platform(self) -> Platform | None:
        """The config's platform; None when it names no OS (plain packages don't)."""
        cfg = self.config
        if not cfg.get("os"):
            return None
        return Platform(cfg["os"], cfg.get("architecture", ""), cfg.get("variant") or None)

    def layer(self, annotation: str) -> Layer | None:
        """The first layer carrying ``annotation`` (the fetcher's rule), or None."""
        return next((lay for lay in self.layers if lay.annotation == annotation), None)

    def manifest(self, annotations: bool = True, oci: bool = False) -> dict[str, Any]:
        """The image manifest that ``crossplane xpkg push`` would push.

        Args:
            annotations: copy each layer's ``io.crossplane.xpkg`` label onto its descriptor.
            oci: use OCI media types instead of go-containerregistry's Docker defaults.
        """
        layers = []
        for lay in self.layers:
            media = _TO_OCI.get(lay.media_type, lay.media_type) if oci else lay.media_type
            desc: dict[str, Any] = {"mediaType": media, "size": lay.size, "digest": lay.digest}
            if annotations and lay.annotation is not None:
                desc["annotations"] = {ANNOTATION_KEY: lay.annotation}
            layers.append(desc)
        config = {"mediaType": OCI_CONFIG if oci else DOCKER_CONFIG,
                  "size": len(self.config_bytes), "digest": self.config_digest}
        return {"schemaVersion": 2, "mediaType": OCI_MANIFEST if oci else DOCKER_MANIFEST,
                "config": config, "layers": layers}

    def manifest_bytes(self, annotations: bool = True, oci: bool = False) -> bytes:
        """`manifest` serialised compactly, as go-containerregistry does."""
        return json.dumps(self.manifest(annotations, oci), separators=(",", ":")).encode()

    @property
    def digest(self) -> str:
        """The digest of the annotated manifest, i.e. the digest a push produces."""
        return sha256_digest(self.manifest_bytes())


@dataclass(frozen=True)
class ImageTarball(Image):
    """An image read from a tarball on disk; layers stream from ``path``."""

    path: Path = Path()
    repo_tags: tuple[str, ...] = ()
    workdir: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False,
                                                              compare=False)

    def close(self) -> None:
        """Remove the temporary files (recompressed layers), if any."""
        if self.workdir is not None:
            self.workdir.cleanup()


def write_image_tarball(path: str | os.PathLike[str], image: Image,
                        repo_tags: tuple[str, ...] | None = None) -> None:
    """Write ``image`` to ``path`` in the ``docker load`` layout, atomically.

    Entries are written in go-containerregistry's order (config, layers, manifest.json)
    with fixed metadata, so equal images give byte-identical files.
    """
    path = Path(path)
    layer_names = [lay.digest.split(":", 1)[1] + ".tar.gz" for lay in image.layers]
    manifest = [{"Config": image.config_digest, "RepoTags": list(repo_tags) if repo_tags else None,
                 "Layers": layer_names}]
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
            _add(tar, image.config_digest, io.BytesIO(image.config_bytes),
                 len(image.config_bytes))
            for name, lay in dict(zip(layer_names, image.layers, strict=True)).items():
                with lay.open() as blob:
                    _add(tar, name, blob, lay.size)
            data = json.dumps(manifest, separators=(",", ":")).encode()
            _add(tar, "manifest.json", io.BytesIO(data), len(data))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _add(tar: tarfile.TarFile, name: str, data: IO[bytes], size: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    tar.addfile(info, data)


def read_image_tarball(path: str | os.PathLike[str]) -> ImageTarball:
    """Read a one-image tarball (``docker save`` or ``xpkg build`` output).

    Gzipped layers are used in place; uncompressed ones (``docker save``) are gzipped
    into a temporary directory that `ImageTarball.close` removes.

    Raises:
        InvalidPackage: not a tar, no single image in manifest.json, a missing blob.
    """
    path = Path(path)
    workdir = tempfile.TemporaryDirectory(prefix="lockwright-layers-")
    try:
        with tarfile.open(path, "r:") as tar:
            members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
            entry = _single_entry(tar, members)
            config_bytes = _read_member(tar, members, entry["Config"], _MAX_CONFIG)
        labels = (json.loads(config_bytes).get("config") or {}).get("Labels") or {}
        layers = tuple(_layer(path, members, name, Path(workdir.name), labels)
                       for name in entry["Layers"])
    except (tarfile.TarError, OSError, EOFError, zlib.error, ValueError, KeyError, TypeError,
            AttributeError) as exc:
        workdir.cleanup()
        raise InvalidPackage(f"cannot read image tarball {path}: {exc}") from exc
    tags = tuple(entry.get("RepoTags") or ())
    return ImageTarball(config_bytes, layers, path=path, repo_tags=tags, workdir=workdir)


def _single_entry(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo]) -> dict[str, Any]:
    manifest = json.loads(_read_member(tar, members, "manifest.json", _MAX_CONFIG))
    if not isinstance(manifest, list) or len(manifest) != 1:
        raise ValueError("manifest.json must describe exactly one image")
    entry: dict[str, Any] = manifest[0]
    return entry


def _read_member(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str,
                 limit: int) -> bytes:
    member = members.get(name)
    if member is None:
        raise KeyError(f"{name} is missing")
    if member.size > limit:
        raise ValueError(f"{name} is larger than {limit} bytes")
    data = tar.extractfile(member)
    assert data is not None  # regular files always have data
    return data.read()


def _layer(path: Path, members: dict[str, tarfile.TarInfo], name: str, workdir: Path,
           labels: dict[str, str]) -> Layer:
    member = members.get(name)
    if member is None:
        raise KeyError(f"layer {name} is missing")
    offset, size = member.offset_data, member.size
    with window(path, offset, size) as blob:
        gzipped = blob.read(2) == b"\x1f\x8b"
    if gzipped:
        digest = _hash_stream(window(path, offset, size))
        diff_id = _hash_stream(gzip.GzipFile(fileobj=window(path, offset, size)))
        return Layer(digest, diff_id, size, annotation=labels.get(label_key(digest)),
                     opener=lambda: window(path, offset, size))
    target = workdir / f"{len(list(workdir.iterdir()))}.tar.gz"
    with window(path, offset, size) as raw, open(target, "wb") as out:
        diff_id, digest = gzip_stream(raw, out)
    return Layer(digest, diff_id, target.stat().st_size,
                 annotation=labels.get(label_key(digest)), opener=lambda: open(target, "rb"))


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...


class _Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class _Hasher(io.RawIOBase):
    """A write-only sink that hashes what passes through to ``out``."""

    def __init__(self, out: _Sink) -> None:
        self.out, self.sha = out, hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.sha.update(data)
        return self.out.write(data)

    @property
    def digest(self) -> str:
        return "sha256:" + self.sha.hexdigest()


class LayerWriter:
    """Takes a layer's uncompressed tar bytes; gzips them deterministically, hashing both.

    ``diff_id`` and ``digest`` are final once the writer is closed.
    """

    def __init__(self, out: IO[bytes]) -> None:
        self._compressed = _Hasher(out)
        self._gz = gzip.GzipFile(filename="", mode="wb", fileobj=self._compressed, mtime=0,
                                 compresslevel=6)
        self._plain = _Hasher(self._gz)

    def write(self, data: bytes) -> int:
        """Write uncompressed bytes."""
        return self._plain.write(data)

    def close(self) -> None:
        """Flush the gzip trailer."""
        self._gz.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def diff_id(self) -> str:
        """``sha256:`` of the uncompressed bytes."""
        return self._plain.digest

    @property
    def digest(self) -> str:
        """``sha256:`` of the gzip output."""
        return self._compressed.digest


def gzip_stream(src: IO[bytes], out: IO[bytes]) -> tuple[str, str]:
    """Gzip ``src`` into ``out`` deterministically (mtime 0, no name).

    Returns:
        ``(digest of src, digest of the gzip output)``: a layer's diff_id and digest.
    """
    with LayerWriter(out) as writer:
        for chunk in iter(lambda: src.read(_CHUNK), b""):
            writer.write(chunk)
    return writer.diff_id, writer.digest


def _hash_stream(stream: _Source) -> str:
    sha = hashlib.sha256()
    try:
        for chunk in iter(lambda: stream.read(_CHUNK), b""):
            sha.update(chunk)
    finally:
        stream.close()
    return "sha256:" + sha.hexdigest()


class _Window(io.RawIOBase):
    """Read-only view of ``size`` bytes at ``offset`` in a file."""

    def __init__(self, path: Path, offset: int, size: int) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._file.seek(offset)
        self._left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)[: self._left]
        n = self._file.readinto(view)
        self._left -= n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def window(path: Path, offset: int, size: int) -> BinaryIO:
    """Open a buffered, read-only view of ``size`` bytes at ``offset`` in ``path``."""
    return io.BufferedReader(_Window(path, offset, size), buffer_size=_CHUNK)
