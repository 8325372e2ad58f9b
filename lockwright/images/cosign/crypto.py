"""Signing and checking bytes with cosign's schemes, through ``cryptography``.

ECDSA signatures are ASN.1 DER over the message hashed with the authority's hash. RSA is
PKCS#1 v1.5 (what cosign writes) or PSS (what some KMS keys write). Ed25519 is pure Ed25519
and ignores the hash; cosign's Ed25519ph (used only with a transparency log) is not
verifiable with ``cryptography`` and so never verifies here.
"""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from lockwright.images.cosign.keys import PrivateKey, PublicKey, hash_algorithm


def verifies(key: PublicKey, signature: bytes, message: bytes, hash_name: str) -> bool:
    """Whether ``signature`` is ``key``'s signature over ``message`` with ``hash_name``.

    Raises:
        SignatureError: ``hash_name`` is not a supported hash.
    """
    digest = hash_algorithm(hash_name)
    try:
        _verify(key, signature, message, digest)
    except (InvalidSignature, ValueError):
        return False
    return True


def _verify(key: PublicKey, signature: bytes, message: bytes,
            digest: hashes.HashAlgorithm) -> None:
    if isinstance(key, ec.EllipticCurvePublicKey):
        key.verify(signature, message, ec.ECDSA(digest))
    elif isinstance(key, rsa.RSAPublicKey):
        try:
            key.verify(signature, message, padding.PKCS1v15(), digest)
        except InvalidSignature:
            key.verify(signature, message, padding.PSS(padding.MGF1(digest), padding.PSS.AUTO),
                       digest)
    else:
        key.verify(signature, message)


def sign(key: PrivateKey, message: bytes, hash_name: str = "sha256") -> bytes:
    """``key``'s signature over ``message``: ECDSA DER, RSA PKCS#1 v1.5, or Ed25519."""
    digest = hash_algorithm(hash_name)
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return key.sign(message, ec.ECDSA(digest))
    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(message, padding.PKCS1v15(), digest)
    return key.sign(message)


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what a DSSE signature is computed over."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
