"""Whether a cluster serves the types of a set of manifests, before anyone applies them.

``lockwright api verify -f MANIFESTS`` reads every object (a ``List``'s items too) and asks,
per object, whether its ``apiVersion`` and ``kind`` are served, and, when it carries
:data:`~lockwright.identity.names.WRITTEN_AGAINST` (the digest of the type it was written
against), whether the served type's digest is that one. A type's digests are the one
recorded at install and the live object's (``live:sha256:...``): either names the served
definition. A built-in kind has no definition to digest, so an object of one that carries
the annotation cannot be checked and fails, saying so (a check that cannot be made fails).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from lockwright.errors import InputError
from lockwright.identity import names
from lockwright.identity.surface import TypeRow

Obj = dict[str, Any]
#: ``(apiVersion, kind)`` → the digests naming the served type (empty for a built-in
#: kind), or None when it is not served.
Lookup = Callable[[str, str], frozenset[str] | None]
MISSING, DIFFERS, UNCHECKABLE = "missing", "differs", "uncheckable"


@dataclass(frozen=True)
class Found:
    """An object of a manifest file: where it came from and what it is."""

    source: str  # ``FILE`` or ``FILE#N`` (the N-th document, from 1)
    obj: Obj

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        meta = self.obj.get("metadata") or {}
        return str(meta.get("name") or meta.get("generateName") or "")

    @property
    def written_against(self) -> str:
        return str(((self.obj.get("metadata") or {}).get("annotations") or {}).get(
            names.WRITTEN_AGAINST, ""))


@dataclass(frozen=True)
class Problem:
    """An object whose type is missing, differs, or cannot be checked."""

    found: Found
    how: str
    detail: str

    @property
    def message(self) -> str:
        """``FILE#N Kind/name (apiVersion): how: detail``."""
        f = self.found
        return f"{f.source} {f.kind}/{f.name} ({f.api_version}): {self.how}: {self.detail}"


def documents(text: str, source: str) -> list[Found]:
    """The objects of a YAML or JSON stream (a ``...List``'s items in its place).

    Raises:
        InputError: not YAML, or a document that is not an object with apiVersion and kind,
            naming ``source`` and the document.
    """
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not YAML: {str(exc)[:300]}") from None
    found: list[Found] = []
    for number, doc in enumerate(docs, start=1):
        found += _objects(doc, f"{source}#{number}" if len(docs) > 1 else source)
    return found


def _objects(doc: Any, source: str) -> list[Found]:
    if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
        raise InputError(f"{source}: not a Kubernetes object: each document needs "
                         "apiVersion and kind")
    if str(doc["kind"]).endswith("List") and isinstance(doc.get("items"), list):
        return [o for i, item in enumerate(doc["items"], start=1)
                for o in _objects(item, f"{source} item {i}")]
    return [Found(source, doc)]


def lookup(rows: Iterable[TypeRow]) -> dict[tuple[str, str], frozenset[str]]:
    """The served custom types by (apiVersion, kind): their recorded and live digests."""
    return {(f"{r.group}/{r.version}", r.kind): frozenset({r.digest, r.live})
            for r in rows if r.served}


def check(objects: Iterable[Found], served: Lookup) -> list[Problem]:
    """Each object whose type is not served, differs from the one it was written against,
    or cannot be checked, in the order given."""
    problems: list[Problem] = []
    for found in objects:
        problem = _check(found, served(found.api_version, found.kind))
        problems += [problem] if problem else []
    return problems


def _check(found: Found, digests: frozenset[str] | None) -> Problem | None:
    if digests is None:
        return Problem(found, MISSING, "the cluster does not serve this type")
    want = found.written_against
    if not want or want in digests:
        return None
    if not digests:
        return Problem(found, UNCHECKABLE, f"{names.WRITTEN_AGAINST} is {want} but a "
                       "built-in type has no definition digest to compare it with")
    return Problem(found, DIFFERS, f"written against {want}, the cluster serves "
                   f"{' or '.join(sorted(digests))}")
