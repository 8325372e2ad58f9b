"""Streaming parse of ``package.yaml``: one meta object plus the objects it installs.

Documents are decoded one at a time with libyaml (``CSafeLoader``) straight from the file
object, so a 100 MB package never sits in memory whole: `scan_package` keeps only a small
summary per object. Every error names the document (0-based, counting empty documents)
and, where known, its kind and name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import yaml

from lockwright.errors import InvalidPackage
from lockwright.identity.digest import api_digest_of
from lockwright.xpkg import fastyaml
from lockwright.xpkg.lint import ObjectSummary, lint, summarize
from lockwright.xpkg.meta import PackageMeta, is_meta, parse_meta

#: Crossplane reads at most this much of package.yaml; we refuse more instead of cutting.
MAX_PACKAGE_BYTES = 200 * 1024 * 1024
ERR_NOT_ONE_META = "not exactly one package meta type"


@dataclass(frozen=True)
class PackageSummary:
    """A validated package without its objects.

    Attributes:
        meta: the package's meta object.
        meta_index: the document index of the meta object.
        objects: one summary per installable object, in stream order.
        counts: objects per kind.
        documents: how many documents the stream held, empty ones included.
        warnings: lint warnings (set by `scan_package`; empty from `parse_package`).
    """

    meta: PackageMeta
    meta_index: int
    summaries: tuple[ObjectSummary, ...]
    counts: Mapping[str, int]
    documents: int
    warnings: tuple[str, ...] = ()

    @property
    def types(self) -> dict[str, str]:
        """Type digest by type key, of every definition the package ships."""
        return {s.type_key: s.type_digest for s in self.summaries if s.raw_digest}

    @property
    def api_digest(self) -> str:
        """The package's API digest (``lockwright.identity.digest.api_digest`` of every
        definition it ships), from the digests the parse took."""
        return api_digest_of((s.type_key, s.type_digest) for s in self.summaries
                             if s.raw_digest)


@dataclass(frozen=True)
class ParsedPackage(PackageSummary):
    """A parsed package; ``objects`` is empty when parsed with ``keep_objects=False``."""

    objects: tuple[dict[str, Any], ...] = field(default=())


_TAG = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ = _TAG + "str", _TAG + "map", _TAG + "seq"
_PLAIN_SCALARS = frozenset(_TAG + t for t in ("int", "float", "bool", "null"))
_RESOLVED_KEPT, _RESOLVED_MAX_LEN = 4096, 32
_base_resolve: Any = yaml.CSafeLoader.resolve  # untyped in PyYAML's stubs


class _Aside(Exception):
    """A node the direct construction leaves to PyYAML's constructor."""


class _Loader(yaml.CSafeLoader):
    """libyaml loader that leaves timestamps as strings, as Kubernetes' YAML decoding does.

    Otherwise ``2024-01-01`` in an annotation or a schema default becomes a ``date``.

    PyYAML's generic constructor, in Python, is most of the cost of decoding a package:
    plain documents (maps with scalar keys, sequences, str/int/float/bool/null scalars —
    every CRD) are built by one direct recursion instead. A document holding anything
    else (an alias, a merge key, another tag, a collection as key) is built again by
    PyYAML's constructor, so its results and errors are PyYAML's.
    """

    yaml_implicit_resolvers = {  # noqa: RUF012 - PyYAML's own class-level table
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
    }
    _resolved: dict[str, str] = {}  # noqa: RUF012 - shared on purpose, bounded

    def construct_document(self, node: yaml.Node) -> Any:
        """The document's data: built directly when plain, else by PyYAML."""
        try:
            return _plain(self, node, set())
        except _Aside:
            return super().construct_document(node)

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        """The tag of a node; remembered for short plain scalars, which repeat a lot.

        With no path resolvers a plain scalar's tag depends on its text alone.
        """
        if kind is not yaml.ScalarNode or not implicit[0] or len(value) > _RESOLVED_MAX_LEN:
            return str(_base_resolve(self, kind, value, implicit))
        tag = self._resolved.get(value)
        if tag is None:
            tag = str(_base_resolve(self, kind, value, implicit))
            if len(self._resolved) < _RESOLVED_KEPT:
                self._resolved[value] = tag
        return tag


def _plain(loader: _Loader, node: yaml.Node, seen: set[int]) -> Any:
    """``node`` built directly; `_Aside` when it is not plain (see `_Loader`)."""
    tag, cls = node.tag, type(node)
    if cls is yaml.ScalarNode:
        if tag == _STR:
            return node.value
        if tag in _PLAIN_SCALARS:
            return loader.yaml_constructors[tag](loader, node)
        raise _Aside
    if id(node) in seen:  # an alias: PyYAML shares the object (and handles recursion)
        raise _Aside
    seen.add(id(node))
    if cls is yaml.MappingNode and tag == _MAP:
        return {_key(loader, k, seen): _plain(loader, v, seen) for k, v in node.value}
    if cls is yaml.SequenceNode and tag == _SEQ:
        return [_plain(loader, item, seen) for item in node.value]
    raise _Aside


def _key(loader: _Loader, node: yaml.Node, seen: set[int]) -> Any:
    key = _plain(loader, node, seen)
    if isinstance(key, (dict, list)):  # unhashable: PyYAML raises the error
        raise _Aside
    return key


class _LimitedReader:
    """File-object wrapper that refuses to read past ``limit`` bytes."""

    def __init__(self, stream: IO[bytes] | IO[str], limit: int) -> None:
        self._stream, self._left = stream, limit
        self.name = getattr(stream, "name", "package.yaml")

    def read(self, size: int = -1) -> bytes | str:
        chunk = self._stream.read(size)
        self._left -= len(chunk)
        if self._left < 0:
            raise InvalidPackage(f"package.yaml is larger than {MAX_PACKAGE_BYTES} bytes")
        return chunk


def iter_objects(
    stream: IO[bytes] | IO[str], *, limit: int = MAX_PACKAGE_BYTES
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(document index, object)`` for each non-empty document of a YAML stream.

    Args:
        stream: a binary or text file object; it is read incrementally.
        limit: refuse streams longer than this many bytes (characters for text).

    Raises:
        InvalidPackage: malformed YAML (with the line and column) or a document that is
            not a mapping.
    """
    index = 0
    docs = fastyaml.load_all(_LimitedReader(stream, limit), _Loader)
    while True:
        try:
            doc = next(docs)
        except StopIteration:
            return
        except yaml.YAMLError as exc:
            raise InvalidPackage(f"document {index}: {_yaml_problem(exc)}") from exc
        if doc is not None:
            if not isinstance(doc, dict):
                raise InvalidPackage(
                    f"document {index}: expected an object, got {type(doc).__name__}")
            yield index, doc
        index += 1


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return f"invalid YAML: {problem}"
    return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"


def parse_package(
    stream: IO[bytes] | IO[str], *, keep_objects: bool = True, expect: str | None = None
) -> ParsedPackage:
    """Parse and validate a package stream in one pass (see `parse_documents`)."""
    return parse_documents(iter_objects(stream), keep_objects=keep_objects, expect=expect)


def parse_documents(
    documents: Iterable[tuple[int, dict[str, Any]]], *, keep_objects: bool = True,
    expect: str | None = None,
) -> ParsedPackage:
    """Validate a package's decoded documents in one pass.

    Checks that every document decodes, that exactly one is a meta object, and (with
    ``expect``) that it is of the expected kind. Kind-per-package rules are lint's job.

    Args:
        documents: ``(document index, object)`` pairs, as `iter_objects` yields them.
        keep_objects: keep the decoded objects; False keeps only summaries and counts.
        expect: ``Provider``, ``Configuration`` or ``Function`` to require that kind.

    Raises:
        InvalidPackage: malformed YAML, an unknown kind, zero or several meta objects,
            a malformed meta object, or a meta object of the wrong kind.
    """
    meta: tuple[int, PackageMeta] | None = None
    objects: list[dict[str, Any]] = []
    summaries: list[ObjectSummary] = []
    count = 0
    for index, doc in documents:
        count = index + 1
        if is_meta(doc):
            meta = _take_meta(meta, index, doc)
            continue
        summaries.append(summarize(index, doc))
        if keep_objects:
            objects.append(doc)
    if meta is None:
        raise InvalidPackage(f"{ERR_NOT_ONE_META}: the package has no meta object")
    if expect is not None and meta[1].kind != expect:
        raise InvalidPackage(f"package meta type is not {expect}")
    counts = Counter(s.kind for s in summaries)
    return ParsedPackage(meta[1], meta[0], tuple(summaries), dict(counts), count,
                         objects=tuple(objects))


def _take_meta(
    seen: tuple[int, PackageMeta] | None, index: int, doc: Mapping[str, Any]
) -> tuple[int, PackageMeta]:
    kind = doc.get("kind")
    if seen is not None:
        raise InvalidPackage(f"{ERR_NOT_ONE_META}: document {index} ({kind}) is a second "
                             f"meta object after document {seen[0]} ({seen[1].kind})")
    try:
        return index, parse_meta(doc)
    except InvalidPackage as exc:
        raise InvalidPackage(f"document {index} ({kind}): {exc.message}") from exc


def scan_package(stream: IO[bytes] | IO[str], *, expect: str | None = None) -> PackageSummary:
    """Validate and lint a package stream in one pass, keeping no objects (`scan_documents`)."""
    return scan_documents(iter_objects(stream), expect=expect)


def scan_documents(documents: Iterable[tuple[int, dict[str, Any]]], *,
                   expect: str | None = None) -> PackageSummary:
    """Validate and lint a package's decoded documents in one pass, keeping no objects.

    Args:
        documents: ``(document index, object)`` pairs, as `iter_objects` yields them.
        expect: ``Provider``, ``Configuration`` or ``Function`` to require that kind.

    Returns:
        The summary, with lint warnings.

    Raises:
        InvalidPackage: as `parse_package`.
        LintError: an object is not allowed in this kind of package, or a version
            constraint is malformed; the message lists every finding.
    """
    parsed = parse_documents(documents, keep_objects=False, expect=expect)
    result = lint(parsed.meta, parsed.summaries)
    result.raise_for_errors()
    return PackageSummary(parsed.meta, parsed.meta_index, parsed.summaries, parsed.counts,
                          parsed.documents, result.warnings)
