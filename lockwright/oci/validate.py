"""Parse and lint a package.yaml before it may enter the cache.

A thin seam over :func:`lockwright.xpkg.parse.scan_documents` (one streaming pass with
libyaml, no objects kept), so the fetcher never caches a package the installer would
refuse: malformed YAML, zero or two meta objects, an object of the wrong kind for the
package, or a malformed version constraint. The same pass writes ``documents.jsonl``
(:mod:`lockwright.xpkg.documents`), so the YAML is decoded once per fetch and never again.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from lockwright.errors import ConstraintError, InvalidPackage
from lockwright.xpkg import documents as jsonl
from lockwright.xpkg.documents import iter_documents
from lockwright.xpkg.parse import iter_objects, scan_documents

if TYPE_CHECKING:
    from lockwright.xpkg.parse import PackageSummary


def validate_package(path: Path, expected_kind: str | None = None,
                     documents: IO[bytes] | None = None) -> PackageSummary:
    """Scan the package.yaml at ``path``; return its summary.

    Args:
        path: the package.yaml.
        expected_kind: ``Provider``, ``Configuration`` or ``Function`` to enforce.
        documents: where to write the ``documents.jsonl`` lines, if anywhere; on an
            exception it holds a partial file the caller must discard.

    Raises:
        InvalidPackage: it does not parse, or breaks a lint rule (``LintError``); a
            malformed constraint met while parsing is reported the same way.
    """
    with path.open("rb") as f:
        docs = iter_objects(f)
        return _scan(jsonl.tee(docs, documents) if documents is not None else docs,
                     expected_kind)


def validate_documents(path: Path, expected_kind: str | None = None) -> PackageSummary:
    """The summary again, from a cached, verified ``documents.jsonl`` instead of the YAML.

    Raises:
        InvalidPackage: as `validate_package` (the same rules over the same objects).
    """
    with path.open("rb") as f:
        return _scan(iter_documents(f), expected_kind)


def _scan(documents: Iterable[tuple[int, dict[str, Any]]],
          expected_kind: str | None) -> PackageSummary:
    try:
        return scan_documents(documents, expect=expected_kind)
    except ConstraintError as exc:
        raise InvalidPackage(f"invalid version constraint: {exc.message}") from exc
