"""DSSE envelopes and the in-toto statements inside them (cosign's attestations).

Envelope and signature shapes come from ``sigstore_models`` (sigstore's protobuf-specs as
pydantic models); statements are read here, since only their type, predicate type and
subject digests matter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pydantic
from sigstore_models.intoto import Envelope

from lockwright.images.cosign.model import INTOTO_PAYLOAD, SignatureError
from lockwright.images.cosign.payload import field, loads
from lockwright.oci.reference import is_digest

# cosign's `--type` aliases (cmd/cosign/cli/options/predicate.go).
PREDICATE_ALIASES = {
    "custom": "https://cosign.sigstore.dev/attestation/v1",
    "slsaprovenance": "https://slsa.dev/provenance/v0.2",
    "slsaprovenance02": "https://slsa.dev/provenance/v0.2",
    "slsaprovenance1": "https://slsa.dev/provenance/v1",
    "spdx": "https://spdx.dev/Document",
    "spdxjson": "https://spdx.dev/Document",
    "cyclonedx": "https://cyclonedx.org/bom",
    "link": "https://in-toto.io/Link/v1",
    "vuln": "https://cosign.sigstore.dev/attestation/vuln/v1",
    "openvex": "https://openvex.dev/ns",
}
STATEMENT_TYPES = frozenset({"https://in-toto.io/Statement/v0.1",
                             "https://in-toto.io/Statement/v1"})


def expand_predicate_type(predicate_type: str) -> str:
    """An alias's URI, or ``predicate_type`` itself when it is an absolute URI.

    Raises:
        SignatureError: neither an alias nor an absolute URI (cosign refuses it too).
    """
    if predicate_type in PREDICATE_ALIASES:
        return PREDICATE_ALIASES[predicate_type]
    parts = urlsplit(predicate_type)
    if not parts.scheme or not (parts.netloc or parts.path) or " " in predicate_type:
        raise SignatureError(f"invalid predicate type {predicate_type[:100]!r}: "
                             "neither a cosign alias nor a URI")
    return predicate_type


def parse_envelope(data: bytes, what: str) -> Envelope:
    """Validate a DSSE envelope.

    Raises:
        SignatureError: not a DSSE envelope; only field names are reported.
    """
    loads(data, what)  # refuses duplicate keys, which pydantic would merge
    try:
        return Envelope.model_validate_json(data)
    except pydantic.ValidationError as exc:
        raise SignatureError(f"{what} is not a DSSE envelope ({describe(exc)})") from None


def describe(exc: pydantic.ValidationError) -> str:
    """Where validation failed, without the offending values (they may be payload)."""
    places = [".".join(str(p) for p in e["loc"]) or "document" for e in exc.errors()[:3]]
    return "invalid " + ", ".join(places)


@dataclass(frozen=True)
class Statement:
    """What an in-toto statement claims: its predicate type and its subjects' sha256."""

    predicate_type: str
    digests: frozenset[str]


def read_statement(envelope: Envelope) -> Statement:
    """The statement inside ``envelope``.

    Raises:
        SignatureError: the payload is not an in-toto statement with sha256 subjects.
    """
    if envelope.payload_type != INTOTO_PAYLOAD:
        raise SignatureError(f"DSSE payload type is not {INTOTO_PAYLOAD}")
    document = loads(envelope.payload, "in-toto statement")
    if field(document, "_type") not in STATEMENT_TYPES:
        raise SignatureError("DSSE payload is not an in-toto statement")
    predicate_type = field(document, "predicateType")
    if not isinstance(predicate_type, str) or not predicate_type:
        raise SignatureError("in-toto statement has no predicateType")
    return Statement(predicate_type, _subject_digests(field(document, "subject")))


def _subject_digests(subjects: Any) -> frozenset[str]:
    if not isinstance(subjects, list):
        raise SignatureError("in-toto statement has no subject list")
    found = set()
    for subject in subjects:
        value = field(field(subject, "digest"), "sha256")
        if isinstance(value, str) and is_digest(f"sha256:{value}"):
            found.add(f"sha256:{value}")
    if not found:
        raise SignatureError("in-toto statement names no sha256 subject")
    return frozenset(found)
