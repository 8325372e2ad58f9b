"""``lockwright xpkg build``: turn a package directory into an ``.xpkg`` image tarball.

Like ``crossplane xpkg build``: every ``*.yaml``/``*.yml`` under the package root becomes
one ``package.yaml`` stream (``crossplane.yaml`` first, then the rest sorted by path), which
is parsed and linted, then written as a gzipped tar layer labelled ``base``; examples
become ``.up/examples.yaml`` in a layer labelled ``upbound``; an embedded runtime image
contributes its config and its layers, which come first. Everything is written with fixed
metadata (mtime 0, uid/gid 0, gzip without name or time), so the same inputs always give
the same digest. Contents stream through files in a work directory, never whole in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Self

from lockwright.errors import InvalidPackage
from lockwright.xpkg.meta import PackageMeta, is_meta
from lockwright.xpkg.parse import iter_objects, scan_package
from lockwright.xpkg.tarball import (
    BASE_ANNOTATION,
    EXAMPLES_ANNOTATION,
    Image,
    Layer,
    LayerWriter,
    label_key,
    read_image_tarball,
    write_image_tarball,
)

META_FILE = "crossplane.yaml"
STREAM_FILE = "package.yaml"
EXAMPLES_FILE = ".up/examples.yaml"
_ZERO_TIME = "0001-01-01T00:00:00Z"  # go-containerregistry's zero time, kept for parity
_YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class BuiltPackage:
    """A built package: its meta, the image, and the work directory holding its layers.

    Use it as a context manager, or call `close`, to remove the work directory.
    """

    meta: PackageMeta
    image: Image
    warnings: tuple[str, ...] = ()
    cleanup: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    @property
    def digest(self) -> str:
        """The manifest digest the package will have once pushed."""
        return self.image.digest

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the package as an image tarball (see `write_image_tarball`)."""
        write_image_tarball(path, self.image)

    def close(self) -> None:
        """Remove temporary files."""
        self.cleanup.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def build_package(
    root: str | os.PathLike[str],
    examples_root: str | os.PathLike[str] | None = None,
    runtime_tarball: str | os.PathLike[str] | None = None,
) -> BuiltPackage:
    """Build a package image from a directory.

    Args:
        root: the package root; it must hold ``crossplane.yaml`` with the meta object.
        examples_root: a directory of example manifests; skipped when packaging ``root``.
        runtime_tarball: an image tarball of the runtime to embed (Providers, Functions).

    Returns:
        The built package; close it when done (its layers live in a temporary directory).

    Raises:
        InvalidPackage: no ``crossplane.yaml``, malformed YAML, not exactly one meta
            object, an unknown kind, a missing examples root or a bad runtime tarball.
        LintError: the package breaks a lint rule.
    """
    stack = contextlib.ExitStack()
    try:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lockwright-build-")))
        examples = Path(examples_root) if examples_root is not None else None
        stream = work / STREAM_FILE
        _concatenate(stream, [_meta_file(Path(root)), *_yaml_files(Path(root), examples)])
        with open(stream, "rb") as f:
            summary = scan_package(f)
        layers = [_file_layer(stream, STREAM_FILE, work, BASE_ANNOTATION)]
        if examples is not None:
            layers.append(_examples_layer(examples, work))
        base = None
        if runtime_tarball is not None:
            base = stack.enter_context(contextlib.closing(read_image_tarball(runtime_tarball)))
        image = Image(_config(base, layers), (*(base.layers if base else ()), *layers))
    except BaseException:
        stack.close()
        raise
    return BuiltPackage(summary.meta, image, summary.warnings, stack)


def _meta_file(root: Path) -> Path:
    path = root / META_FILE
    if not path.is_file():
        raise InvalidPackage(f"{path}: {META_FILE} not found; the package root must hold "
                             "the package meta object")
    with open(path, "rb") as f:
        if not any(is_meta(doc) for _, doc in iter_objects(f)):
            raise InvalidPackage(f"{path}: no meta.pkg.crossplane.io object "
                                 "(Provider, Configuration or Function)")
    return path


def _yaml_files(root: Path, exclude: Path | None = None) -> list[Path]:
    """YAML files under ``root`` sorted by relative path, minus the meta file and examples.

    Hidden files and directories (``.github/``, ``.up/``) are skipped: they hold tooling
    configuration, never package objects.
    """
    skip = exclude.resolve() if exclude is not None else None
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if relative == Path(META_FILE) or any(p.startswith(".") for p in relative.parts):
            continue
        if not path.is_file() or path.suffix not in _YAML_SUFFIXES or path.stat().st_size == 0:
            continue
        if skip is not None and path.resolve().is_relative_to(skip):
            continue
        found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _concatenate(target: Path, files: Iterable[Path]) -> None:
    """Join files into one YAML stream, a ``---`` between files, each ending in a newline."""
    with open(target, "wb") as out:
        for i, path in enumerate(files):
            if i:
                out.write(b"---\n")
            last = b"\n"
            with open(path, "rb") as src:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    out.write(chunk)
                    last = chunk[-1:]
            if last != b"\n":
                out.write(b"\n")


def _examples_layer(examples: Path, work: Path) -> Layer:
    if not examples.is_dir():
        raise InvalidPackage(f"{examples}: examples root is not a directory")
    stream = work / "examples.yaml"
    _concatenate(stream, _yaml_files(examples))
    with open(stream, "rb") as f:
        for index, doc in iter_objects(f):
            if not doc.get("apiVersion") or not doc.get("kind"):
                raise InvalidPackage(f"examples: document {index}: object has no apiVersion "
                                     "or kind")
    return _file_layer(stream, EXAMPLES_FILE, work, EXAMPLES_ANNOTATION)


def _file_layer(source: Path, arcname: str, work: Path, annotation: str) -> Layer:
    """A gzipped tar layer holding ``source`` as ``arcname`` (mode 0644, owner 0:0, mtime 0)."""
    blob = work / f"{annotation}.tar.gz"
    info = tarfile.TarInfo(arcname)
    info.size, info.mode, info.mtime = source.stat().st_size, 0o644, 0
    with (
        open(blob, "wb") as out,
        LayerWriter(out) as writer,
        open(source, "rb") as src,
        tarfile.open(fileobj=writer, mode="w|", format=tarfile.USTAR_FORMAT) as tar,  # type: ignore[call-overload]
    ):
        tar.addfile(info, src)
    return Layer(writer.digest, writer.diff_id, blob.stat().st_size, annotation=annotation,
                 opener=lambda: _open(blob))


def _open(path: Path) -> BinaryIO:
    return open(path, "rb")


def _config(base: Image | None, layers: list[Layer]) -> bytes:
    """The image config: the runtime's (or an empty one) plus our layers and labels.

    As Crossplane does, the labels are replaced, not merged: they hold only the layer
    annotations, keyed ``io.crossplane.xpkg:<layer digest>``.
    """
    cfg: dict[str, Any] = base.config if base is not None else {
        "architecture": "", "created": _ZERO_TIME, "history": [], "os": "",
        "rootfs": {"type": "layers", "diff_ids": []}, "config": {},
    }
    rootfs = cfg.setdefault("rootfs", {"type": "layers"})
    rootfs["diff_ids"] = [*(rootfs.get("diff_ids") or []), *(lay.diff_id for lay in layers)]
    cfg["history"] = [*(cfg.get("history") or []), *({"created": _ZERO_TIME} for _ in layers)]
    labels = {label_key(lay.digest): lay.annotation for lay in layers if lay.annotation}
    cfg["config"] = {**(cfg.get("config") or {}), "Labels": dict(sorted(labels.items()))}
    return json.dumps(cfg, separators=(",", ":")).encode()
