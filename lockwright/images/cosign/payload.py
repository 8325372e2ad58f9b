"""The simple-signing payload cosign signs for an image, and strict JSON reading.

Payload (cosign's SIGNATURE_SPEC, containers-signature(5))::

    {"critical": {"identity": {"docker-reference": "<registry>/<repository>"},
                  "image": {"docker-manifest-digest": "sha256:<hex>"},
                  "type": "cosign container image signature"},
     "optional": {<annotations>} | null}

cosign (Go) writes it compact, struct fields in this order and map keys sorted; we write the
same bytes so either tool's signature covers the same document.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lockwright.images.cosign.model import COSIGN_SIGNATURE_TYPE, SignatureError
from lockwright.oci.reference import Reference, is_digest


def build_payload(repository: Reference, digest: str,
                  annotations: Mapping[str, str] | None = None) -> bytes:
    """The payload cosign would sign for ``repository@digest`` with ``annotations``."""
    document = {
        "critical": {
            "identity": {"docker-reference": repository.source},
            "image": {"docker-manifest-digest": digest},
            "type": COSIGN_SIGNATURE_TYPE,
        },
        "optional": dict(sorted(annotations.items())) if annotations else None,
    }
    return go_json(document)


def go_json(document: Any) -> bytes:
    """Compact JSON as Go's encoding/json writes it: UTF-8, with <, >, & and the two line
    separators escaped (dict order is kept; sort maps before calling)."""
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_ESCAPES.items():
        text = text.replace(char, escaped)
    return text.encode()


_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
               "\u2028": "\\u2028", "\u2029": "\\u2029"}


def loads(data: bytes, what: str) -> Any:
    """Parse JSON, refusing duplicate keys (two readers could pick different ones).

    Raises:
        SignatureError: ``"<what> is not valid JSON"`` (the content is never quoted).
    """
    try:
        return json.loads(data, object_pairs_hook=_no_duplicates)
    except (ValueError, UnicodeDecodeError):
        raise SignatureError(f"{what} is not valid JSON") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate key")
    return dict(pairs)


def field(holder: Any, name: str) -> Any:
    """``holder[name]``, matched case-insensitively as Go's encoding/json does.

    Raises:
        SignatureError: two keys match ``name`` in different cases.
    """
    if not isinstance(holder, dict):
        return None
    found = [value for key, value in holder.items() if key.lower() == name.lower()]
    if len(found) > 1:
        raise SignatureError(f"payload names {name!r} twice")
    return found[0] if found else None


def payload_digest(payload: bytes) -> str:
    """The image digest a simple-signing payload names, after checking its type.

    Raises:
        SignatureError: not JSON, not a cosign container image signature, or no digest.
    """
    critical = field(loads(payload, "signature payload"), "critical")
    kind = field(critical, "type")
    if kind != COSIGN_SIGNATURE_TYPE:
        raise SignatureError(f"payload is not a {COSIGN_SIGNATURE_TYPE!r} (critical.type)")
    digest = field(field(critical, "image"), "docker-manifest-digest")
    if not isinstance(digest, str) or not is_digest(digest):
        raise SignatureError("payload names no sha256 image digest "
                             "(critical.image.docker-manifest-digest)")
    return digest
