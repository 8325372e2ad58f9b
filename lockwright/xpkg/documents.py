"""``documents.jsonl``: a package's decoded documents as JSON lines, one object a line.

Decoding the YAML of a 100 MB package.yaml costs libyaml and PyYAML's constructor tens of
seconds; decoding the same objects from JSON costs orjson well under one. So package.yaml
is decoded once, when it is fetched and validated, and every non-empty document is written
out as the line ``[index, object]``; whatever streams a package's objects afterwards reads
these lines. One line is one object, so a reader holds one object at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any

import orjson

from lockwright.errors import InvalidPackage

Document = tuple[int, dict[str, Any]]
# Integer and boolean keys (legal YAML) become strings, as Kubernetes' YAML-to-JSON does.
_DUMP_OPTIONS = orjson.OPT_NON_STR_KEYS


def dump(index: int, doc: dict[str, Any]) -> bytes:
    """One line (newline included) for document ``index``.

    Raises:
        InvalidPackage: the document holds a value JSON cannot carry (binary data, a set,
            an integer over 64 bits), which Kubernetes would refuse as well.
    """
    try:
        return orjson.dumps([index, doc], option=_DUMP_OPTIONS) + b"\n"
    except TypeError as exc:
        raise InvalidPackage(f"document {index}: not representable as JSON: {exc}") from exc


def tee(documents: Iterable[Document], out: IO[bytes]) -> Iterator[Document]:
    """Yield ``documents`` unchanged, writing each one's line to ``out`` first."""
    for index, doc in documents:
        out.write(dump(index, doc))
        yield index, doc


def iter_documents(stream: IO[bytes]) -> Iterator[Document]:
    """Yield ``(document index, object)`` from a ``documents.jsonl`` stream.

    Raises:
        ValueError: a line is not a ``[index, object]`` pair (the file is damaged).
    """
    for number, line in enumerate(stream, 1):
        pair = orjson.loads(line)
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int)
                and isinstance(pair[1], dict)):
            # A damaged file, not a caller's mistake: ValueError, like bad JSON.
            raise ValueError(f"documents.jsonl: line {number} is not [index, object]")
        yield pair[0], pair[1]
