"""The data of cosign verification: authorities, results, failures, media types, limits."""

from __future__ import annotations

from dataclasses import dataclass

SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
COSIGN_SIGNATURE_TYPE = "cosign container image signature"
DSSE_ENVELOPE = "application/vnd.dsse.envelope.v1+json"
INTOTO_PAYLOAD = "application/vnd.in-toto+json"
BUNDLE_PREFIX = "application/vnd.dev.sigstore.bundle"
BUNDLE_V03 = "application/vnd.dev.sigstore.bundle.v0.3+json"
# The predicate type cosign v3 gives the statement it signs for `cosign sign` in bundles.
COSIGN_SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"

MAX_PAYLOAD_BYTES = 1024 * 1024
# DSSE envelopes and bundles may carry an SBOM, which is larger than a signing payload.
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
MAX_MANIFEST_BYTES = 1024 * 1024
# Each candidate costs a blob download; a signature manifest with thousands of layers must
# not turn one verification into thousands of requests.
MAX_CANDIDATES = 32
MAX_MESSAGE = 1000


@dataclass(frozen=True)
class Attestation:
    """One required attestation (ImageConfig ``authorities[].attestations[]``).

    Attributes:
        name: the attestation's name, for messages.
        predicate_type: a full URI or one of cosign's short aliases (``slsaprovenance``…).
    """

    name: str
    predicate_type: str


@dataclass(frozen=True)
class KeyAuthority:
    """One ``key`` authority, its public key already read from the Secret.

    Attributes:
        name: the authority's name.
        public_key_pem: the PEM public key.
        hash_algorithm: sha224, sha256, sha384 or sha512 (any case); Ed25519 ignores it.
        attestations: when given, these attestations are required instead of a signature.
    """

    name: str
    public_key_pem: bytes
    hash_algorithm: str = "sha256"
    attestations: tuple[Attestation, ...] = ()


@dataclass(frozen=True)
class Verified:
    """Which authority passed, and what it found (``signature tag sha256-….sig``…)."""

    authority: str
    evidence: str


class SignatureError(Exception):
    """Verification failed; the message says why, never with key material or payloads."""

    def __init__(self, message: str) -> None:
        cut = message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 15] + "… (truncated)"
        super().__init__(cut)

    @property
    def message(self) -> str:
        """The reason, as one line."""
        return str(self.args[0]) if self.args else ""
