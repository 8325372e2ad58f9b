"""Take ``package.yaml`` out of image layers without trusting them.

Layers are read as streams (``tarfile`` mode ``r|``), gzip or uncompressed (decided by the
magic bytes, since a media type can lie), with a bound on decompressed bytes per layer so
a gzip bomb stops early. Entries that escape the root (absolute or ``..``) are refused;
``package.yaml`` must be a regular file, never a link or device. Across several layers the
top-most ``package.yaml`` wins unless a whiteout (``.wh.<name>`` or an opaque
``.wh..wh..opq``) in a higher layer hides it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import posixpath
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

from lockwright.errors import InvalidPackage

PACKAGE_FILE = "package.yaml"
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Extracted:
    """package.yaml as written to the output file."""

    size: int
    sha256: str


class _Bounded(io.RawIOBase):
    """A read-only stream that refuses to yield more than ``limit`` bytes."""

    def __init__(self, inner: IO[bytes], limit: int, what: str) -> None:
        self._inner, self._limit, self._what, self.count = inner, limit, what, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(len(buffer))
        self.count += len(data)
        if self.count > self._limit:
            raise InvalidPackage(f"{self._what} decompresses to more than {self._limit} bytes")
        buffer[: len(data)] = data
        return len(data)


def _open_layer(f: IO[bytes], limit: int, what: str) -> IO[bytes]:
    magic = f.read(2)
    f.seek(0)
    inner = cast(IO[bytes], gzip.GzipFile(fileobj=f, mode="rb")) if magic == b"\x1f\x8b" else f
    return io.BufferedReader(_Bounded(inner, limit, what), _CHUNK)


def _clean(name: str, what: str) -> str:
    path = posixpath.normpath(name.removeprefix("./")) if name not in ("", ".", "./") else "."
    if name.startswith("/") or path == ".." or path.startswith("../"):
        raise InvalidPackage(f"{what}: tar entry {name[:200]!r} escapes the package root")
    return path


@dataclass
class _Hidden:
    """Paths hidden from lower layers by whiteouts in higher ones."""

    paths: set[str] = field(default_factory=set)
    opaque: set[str] = field(default_factory=set)

    def covers(self, path: str) -> bool:
        parts = path.split("/")
        ancestors = {"/".join(parts[:i]) or "." for i in range(len(parts))}
        return path in self.paths or bool(ancestors & (self.paths | self.opaque))

    def record(self, path: str) -> None:
        directory, base = posixpath.split(path)
        if base == OPAQUE:
            self.opaque.add(directory or ".")
        else:
            self.paths.add(posixpath.join(directory, base[len(WHITEOUT):]))


def _members(stream: IO[bytes], what: str) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                yield tar, member
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InvalidPackage(f"{what} is not a valid (gzip) tar: {str(exc)[:200]}") from None


def _copy(tar: tarfile.TarFile, member: tarfile.TarInfo, out: IO[bytes], limit: int) -> Extracted:
    if member.size > limit:
        raise InvalidPackage(f"package.yaml is {member.size} bytes, over the limit of {limit}")
    source = tar.extractfile(member)
    if source is None:
        raise InvalidPackage("package.yaml is not a regular file")
    hasher, size = hashlib.sha256(), 0
    while chunk := source.read(_CHUNK):
        size += len(chunk)
        hasher.update(chunk)
        out.write(chunk)
    return Extracted(size, hasher.hexdigest())


def _scan_layer(path: Path, what: str, out: IO[bytes], hidden: _Hidden, limits: tuple[int, int],
                ) -> tuple[Extracted | None, _Hidden]:
    yaml_limit, decompressed_limit = limits
    found: _Hidden = _Hidden()
    with path.open("rb") as f:
        for tar, member in _members(_open_layer(f, decompressed_limit, what), what):
            name = _clean(member.name, what)
            base = posixpath.basename(name)
            if base.startswith(WHITEOUT):
                found.record(name)
            elif base == PACKAGE_FILE and not hidden.covers(name):
                if not member.isreg():
                    raise InvalidPackage(f"{what}: {name} is a link or special file, "
                                         "not a regular file")
                return _copy(tar, member, out, yaml_limit), found
    return None, found


def extract_package_yaml(layers: Sequence[tuple[Path, str]], out: IO[bytes],
                         yaml_limit: int, decompressed_limit: int) -> Extracted:
    """Write the package.yaml of the flattened ``layers`` (bottom first) to ``out``.

    Args:
        layers: ``(file, description)`` per layer; one layer when it is the base layer.
        out: where package.yaml is written.
        yaml_limit: largest package.yaml accepted.
        decompressed_limit: largest decompressed size of one layer.

    Raises:
        InvalidPackage: hostile or malformed tar, a limit exceeded, or no package.yaml.
    """
    hidden = _Hidden()
    for path, what in reversed(layers):
        result, found = _scan_layer(path, what, out, hidden, (yaml_limit, decompressed_limit))
        if result is not None:
            return result
        hidden.paths |= found.paths
        hidden.opaque |= found.opaque
    raise InvalidPackage("package.yaml not found in package")
