"""Decode a YAML stream with rapidyaml, value for value as libyaml and PyYAML decode it.

Most of ``yaml.load_all`` on a 100 MB package is PyYAML building nodes and objects in
Python. rapidyaml parses a document in C++ and emits it as JSON, which orjson turns into
the same Python objects about five times faster, checks included. The two disagree on
YAML 1.1's implicit types and on some edge cases, so `load_all` cuts the stream into
documents (`.stream`) and decodes each with rapidyaml only when nothing in it could come
out differently (`.document` and `.text` say what falls back and why). A document that
falls back is decoded alone by the caller's libyaml loader, as before.

Where a cut document cannot vouch for itself (libyaml refuses it alone, or reads other
than one document in it, or it holds a directive; libyaml's reader would refuse a byte
before handing it over; text and UTF-16 streams), the rest of the stream goes to the
libyaml loader as a whole (`.stream.Replay`), so the values and errors from there on are
libyaml's own, at the same point of the iteration.

Memory stays a document's worth: a chunk of the stream, the document's text and JSON,
the objects handed over.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any, Final

import structlog
import yaml

from lockwright.xpkg.fastyaml.document import DocumentDecoder
from lockwright.xpkg.fastyaml.stream import Reader, Replay, Stream

log = structlog.get_logger(__name__)

Loader = type[yaml.CSafeLoader]
#: How often, and why, a document left the fast path ("whole: ..." for the rest of a
#: stream): statistics for operators and tests, never used to decide anything.
FALLBACKS: Counter[str] = Counter()
_BOM: Final = b"\xef\xbb\xbf"
#: A line with more than blanks or a comment; a tab counts (libyaml refuses one there).
_CONTENT: Final = re.compile(rb"^ *[^ \r\n#]", re.MULTILINE)
_NOTHING: Final = object()  # a first segment holding no document


class _Whole:
    """Only libyaml over the rest of the stream can tell, for ``reason``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def load_all(reader: Reader, loader: Loader) -> Iterator[Any]:
    """Yield each document of the stream as ``yaml.load_all(reader, Loader=loader)`` would.

    The same values and the same errors (``yaml.YAMLError`` with libyaml's marks), at the
    same point of the iteration.

    Args:
        reader: the stream, read incrementally (bytes are cut and decoded document by
            document; text is left to libyaml whole).
        loader: the libyaml loader whose results the fast path reproduces; it decodes
            every document the fast path leaves, and its implicit resolvers say which
            strings would have been another type when plain.
    """
    stream = Stream(reader)
    decoder = DocumentDecoder(loader.yaml_implicit_resolvers)
    while (segment := stream.next()) is not None:
        value = _document(decoder, segment, stream, loader)
        if isinstance(value, _Whole):
            _fell_back(f"whole: {value.reason}", offset=stream.offset, line=stream.lines + 1)
            yield from yaml.load_all(Replay(stream), Loader=loader)  # type: ignore[arg-type]
            return
        if value is not _NOTHING:
            yield value
        stream.advance(segment)


def _document(decoder: DocumentDecoder, segment: bytes, stream: Stream, loader: Loader) -> Any:
    """The document in ``segment``, `_NOTHING` or a `_Whole`."""
    if stream.whole:
        return _Whole("UTF-16" if stream.utf16 else "text stream")
    if stream.refused_before_handover(segment):
        return _Whole("a byte libyaml's reader refuses")
    first = stream.count == 1
    text = segment.removeprefix(_BOM) if first else segment
    if not _has_content(text if first else text[3:]):  # after "---": an empty document
        return _NOTHING if first else None
    value, reason = decoder.decode(text)
    if reason is None:
        return value
    _fell_back(reason, segment=stream.count - 1, size=len(text))
    return _Whole(reason) if reason == "directive" else _alone(segment, first, loader)


def _fell_back(reason: str, **fields: int) -> None:
    FALLBACKS[reason] += 1
    log.debug("yaml.fallback", reason=reason, **fields)


def _alone(segment: bytes, first: bool, loader: Loader) -> Any:
    """A segment decoded by libyaml alone: its one document (none, for a first one).

    A cut document decodes alone as in the stream; its errors are left to libyaml over
    the stream (a `_Whole`), which reports them where they are.
    """
    try:
        values = list(yaml.load_all(segment, Loader=loader))
    except yaml.YAMLError:
        return _Whole("libyaml refuses the document")
    if len(values) == 1:
        return values[0]
    return _NOTHING if first and not values else _Whole("not one document")


def _has_content(segment: bytes) -> bool:
    """Whether a first segment holds more than blank lines and comments (libyaml reads no
    document in those); a CR or non-ASCII text may break lines where the search does not
    look, so it counts as content and libyaml decides."""
    return (b"\r" in segment or not segment.isascii()
            or _CONTENT.search(segment) is not None)
