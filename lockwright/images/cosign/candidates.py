"""Signatures and attestations as found beside an image, before anything trusts them.

Each source (a simple-signing layer, a DSSE envelope, a sigstore bundle) becomes a
:class:`Candidate`: the exact bytes signed, the signatures over them, and what the signed
document claims. :meth:`Candidate.check` then decides, for one key, in an order that gives
the most useful reason: unreadable, then a bad signature, then a malformed or mismatching
claim. Claims are parsed before the signature is checked, but only trusted after.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace

from sigstore_models.intoto import Envelope

from lockwright.images.cosign.crypto import pae, verifies
from lockwright.images.cosign.intoto import read_statement
from lockwright.images.cosign.keys import PublicKey
from lockwright.images.cosign.model import SignatureError
from lockwright.images.cosign.payload import payload_digest

BAD_SIGNATURE = "signature does not verify with the public key"


@dataclass(frozen=True)
class Candidate:
    """One signature or attestation, untrusted.

    Attributes:
        evidence: where it was found, for :class:`~lockwright.images.cosign.model.Verified`.
        message: the bytes the signatures are over.
        signatures: raw signatures; one valid signature is enough.
        digests: the image digests the signed document names.
        predicate_type: the in-toto predicate type; empty for a plain signature.
        unreadable: why it cannot be checked at all (fetch or format problem).
        malformed: why the signed document cannot count even if its signature holds.
    """

    evidence: str
    message: bytes = b""
    signatures: tuple[bytes, ...] = ()
    digests: frozenset[str] = frozenset()
    predicate_type: str = ""
    unreadable: str = ""
    malformed: str = ""

    def check(self, key: PublicKey, hash_name: str, digest: str) -> str:
        """Empty when this candidate is a valid signature by ``key`` over ``digest``, else
        the reason it is not."""
        if self.unreadable:
            return self.unreadable
        if not any(verifies(key, sig, self.message, hash_name) for sig in self.signatures):
            return BAD_SIGNATURE
        if self.malformed:
            return self.malformed
        if digest not in self.digests:
            return f"payload is for {', '.join(sorted(self.digests))}, not {digest}"
        return ""


def unreadable(evidence: str, reason: str) -> Candidate:
    """A candidate that failed before its signature could be looked at."""
    return Candidate(evidence, unreadable=reason)


def simple_signing(evidence: str, payload: bytes, signature_b64: str) -> Candidate:
    """A cosign ``.sig`` layer: its payload blob and its signature annotation."""
    try:
        signature = base64.b64decode(signature_b64, validate=True)
    except (binascii.Error, ValueError):
        return unreadable(evidence, "signature annotation is not base64")
    found = Candidate(evidence, payload, (signature,))
    return _claiming(found, lambda: frozenset({payload_digest(payload)}))


def dsse(evidence: str, envelope: Envelope) -> Candidate:
    """A DSSE envelope: signatures over its PAE; claims from its in-toto statement."""
    found = Candidate(evidence, pae(envelope.payload_type, envelope.payload),
                      tuple(s.sig for s in envelope.signatures))
    try:
        statement = read_statement(envelope)
    except SignatureError as exc:
        return replace(found, malformed=exc.message)
    return replace(found, digests=statement.digests, predicate_type=statement.predicate_type)


def message_signature(evidence: str, signature: bytes, message_digest: str | None,
                      manifest: Callable[[], bytes]) -> Candidate:
    """A bundle's ``messageSignature``: a signature over the image manifest's bytes.

    ``message_digest`` is the bundle's ``sha256:<hex>`` claim, if it makes one. The signature
    is checked over the manifest bytes themselves (verified against their digest by the
    client), so every key type and hash works; a claim naming another digest is reported as
    such rather than as a bad signature, which is what it would otherwise look like.
    """
    body = manifest()
    actual = "sha256:" + hashlib.sha256(body).hexdigest()
    if message_digest and message_digest != actual:
        return unreadable(evidence, f"payload is for {message_digest}, not {actual}")
    return Candidate(evidence, body, (signature,), frozenset({actual}))


def _claiming(found: Candidate, claims: Callable[[], frozenset[str]]) -> Candidate:
    try:
        return replace(found, digests=claims())
    except SignatureError as exc:
        return replace(found, malformed=exc.message)
