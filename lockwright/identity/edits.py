"""Whether a live definition is still the type its install recorded.

An install records on each definition the digest of the definition as the package shipped
it (:data:`~lockwright.identity.names.TYPE_DIGEST`). The live object is that definition as
the API server stored it: kube-apiserver (and the devcluster, which copies it) fills in
``spec.names.singular`` (the lower-cased kind), ``spec.names.listKind`` (kind + ``List``)
and ``spec.conversion`` (``strategy: None``) when the package left them out, and a webhook
service's port, which the canonical form drops already. A filled-in default cannot be told
from the same value shipped explicitly, so the live object is read each way: with each
such default kept and left out (at most eight readings, the likeliest first, stopping at
the first match). The definition is **unedited** when one reading's digest is the
recorded one; otherwise someone changed it after its install (``kubectl edit``), and
:func:`edited` says so.

What this does not see: an edit that only writes a field's default value (no change to the
type), and a package that ships a value the API server does not keep as written (an
integral float ``1.0`` is stored as ``1``, a ``false`` the schema omits when empty is
dropped): such a definition reads as edited from its install on.
"""

from __future__ import annotations

from collections.abc import Iterator
import hashlib
from itertools import product
from typing import Any

from lockwright.identity.digest import CRD_KIND, MRD_KIND, SHA256, raw_type_digest

Obj = dict[str, Any]

_NONE_CONVERSION = {"strategy": "None"}


def _defaults(spec: Obj) -> list[tuple[str, str]]:
    """The (parent, key) of each value in ``spec`` that equals what the server defaults,
    the conversion first."""
    names: Obj = spec["names"] if isinstance(spec.get("names"), dict) else {}
    kind = str(names.get("kind") or "")
    found: list[tuple[str, str]] = []
    if spec.get("conversion") == _NONE_CONVERSION:
        found.append(("", "conversion"))
    if kind and names.get("singular") == kind.lower():
        found.append(("names", "singular"))
    if kind and names.get("listKind") == kind + "List":
        found.append(("names", "listKind"))
    return found


def _without(obj: Obj, drop: list[tuple[str, str]]) -> Obj:
    """``obj`` with the spec values ``drop`` names left out (``obj`` is not modified)."""
    spec = dict(obj.get("spec") or {})
    for parent, key in drop:
        if parent:
            spec[parent] = {k: v for k, v in spec[parent].items() if k != key}
        else:
            spec.pop(key, None)
    return {**obj, "spec": spec}


def readings(live: Obj) -> Iterator[Obj]:
    """The live definition with each combination of its filled-in defaults left out, the
    likeliest first: the conversion left out, the names kept (controller-gen writes the
    names, never the conversion)."""
    if live.get("kind") not in (CRD_KIND, MRD_KIND):
        yield live
        return
    defaults = _defaults(live.get("spec") or {})
    orders = [(True, False) if parent == "" else (False, True) for parent, _ in defaults]
    for choice in product(*orders):
        yield _without(live, [d for d, drop in zip(defaults, choice) if drop])


def edited(live: Obj, recorded: str, text: bytes = b"") -> bool:
    """Whether ``live`` is not the definition whose digest ``recorded`` is (see the
    module); False when nothing is recorded.

    Args:
        live: the live definition.
        recorded: its recorded type digest.
        text: ``canonical_bytes(live)`` when the caller has it: the likeliest reading is
            then cut from it instead of serialised again (serialising is most of a digest).
    """
    if not recorded.startswith(SHA256):
        return False
    want = bytes.fromhex(recorded.removeprefix(SHA256)) if _is_hex(recorded) else b""
    cut = _without_conversion(text) if text else None
    if cut is not None and hashlib.sha256(cut).digest() == want:
        return False
    return not any(raw_type_digest(r) == want for r in readings(live))


_SPEC = b',"spec":{'
_NONE = b'"conversion":{"strategy":"None"}'


def _without_conversion(text: bytes) -> bytes | None:
    """The canonical text of a CRD whose ``spec.conversion`` is the default, with it left
    out; None when it is not there. ``spec`` is the last key of the canonical form and
    ``conversion`` sorts first among a CRD spec's keys, so the default, when present, is
    the first thing after the first ``,"spec":{`` (strings before it escape their quotes)."""
    at = text.find(_SPEC)
    start = at + len(_SPEC)
    if at < 0 or not text.startswith(_NONE, start):
        return None
    end = start + len(_NONE)
    rest = text[end + 1:] if text[end:end + 1] == b"," else text[end:]
    return text[:start] + rest


def _is_hex(digest: str) -> bool:
    text = digest.removeprefix(SHA256)
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)
