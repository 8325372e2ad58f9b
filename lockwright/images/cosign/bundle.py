"""Sigstore bundles (v0.1 to v0.3), read with ``sigstore_models``.

Only the signed content counts offline: a ``dsseEnvelope`` (cosign v3 signs images as an
in-toto statement of predicate type ``https://sigstore.dev/cosign/sign/v1``, and attests
the same way) or a ``messageSignature`` over the image manifest. The verification material
(certificate, transparency log entries, timestamps) needs online trust roots and is not
used: a bundle passes only if the authority's own key verifies its signature.
"""

from __future__ import annotations

from collections.abc import Callable

import pydantic
from sigstore_models.bundle.v1 import Bundle
from sigstore_models.common.v1 import HashAlgorithm, MessageSignature

from lockwright.images.cosign.candidates import Candidate, dsse, message_signature, unreadable
from lockwright.images.cosign.intoto import describe
from lockwright.images.cosign.model import SignatureError
from lockwright.images.cosign.payload import loads


def parse_bundle(data: bytes) -> Bundle:
    """Validate a bundle document.

    Raises:
        SignatureError: not JSON or not a sigstore bundle (only field names reported).
    """
    loads(data, "sigstore bundle")  # refuses duplicate keys, which pydantic would merge
    try:
        # JSON mode: the models are strict, and only JSON mode reads enums from strings.
        return Bundle.model_validate_json(data)
    except pydantic.ValidationError as exc:
        raise SignatureError(f"sigstore bundle is malformed ({describe(exc)})") from None


def bundle_candidate(data: bytes, evidence: str, manifest: Callable[[], bytes]) -> Candidate:
    """The candidate a bundle holds; ``manifest`` gives the image manifest's bytes, fetched
    only for a message signature."""
    try:
        bundle = parse_bundle(data)
        if bundle.dsse_envelope is not None:
            return dsse(evidence, bundle.dsse_envelope)
        assert bundle.message_signature is not None  # the model requires one of the two
        signed = bundle.message_signature
        return message_signature(evidence, signed.signature, _message_digest(signed), manifest)
    except SignatureError as exc:
        return unreadable(evidence, exc.message)


def _message_digest(signed: MessageSignature) -> str | None:
    if signed.message_digest is None:
        return None
    if signed.message_digest.algorithm != HashAlgorithm.SHA2_256:
        raise SignatureError("sigstore bundle message digest is not SHA2_256")
    return "sha256:" + signed.message_digest.digest.hex()
