"""Keys as cosign reads and writes them: PEM public keys, plain and encrypted private keys.

Accepted: ECDSA on P-256, P-384 and P-521; RSA of 2048 to 4096 bits; Ed25519. That is what
cosign accepts when it imports a key (smaller RSA keys and other curves are refused).
"""

from __future__ import annotations

import base64
import binascii
import re

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from lockwright.images.cosign import encrypted
from lockwright.images.cosign.model import SignatureError

PublicKey = ec.EllipticCurvePublicKey | rsa.RSAPublicKey | ed25519.Ed25519PublicKey
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey
PRIVATE_TYPES = (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey, ed25519.Ed25519PrivateKey)

COSIGN_ENCRYPTED = frozenset({"ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY"})
SIGSTORE_PEM_TYPE = "ENCRYPTED SIGSTORE PRIVATE KEY"
PLAIN_PRIVATE = frozenset({"PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY",
                           "ENCRYPTED PRIVATE KEY"})
HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "sha224": hashes.SHA224, "sha256": hashes.SHA256,
    "sha384": hashes.SHA384, "sha512": hashes.SHA512,
}
CURVES = frozenset({"secp256r1", "secp384r1", "secp521r1"})
RSA_BITS = (2048, 4096)
_PEM = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def hash_algorithm(name: str) -> hashes.HashAlgorithm:
    """The hash named ``name`` (sha224|sha256|sha384|sha512, any case).

    Raises:
        SignatureError: any other name.
    """
    factory = HASHES.get(name.strip().lower())
    if factory is None:
        raise SignatureError(f"unsupported hash algorithm {name[:20]!r} "
                             "(sha224, sha256, sha384 or sha512)")
    return factory()


def pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    """Every PEM block in ``data`` as ``(type, DER bytes)``; a body with headers (legacy
    encrypted PEM) or bad base64 gives empty bytes."""
    blocks = []
    for match in _PEM.finditer(data):
        try:
            der = base64.b64decode(b"".join(match.group(2).split()), validate=True)
        except (binascii.Error, ValueError):
            der = b""
        blocks.append((match.group(1).decode(), der))
    return blocks


def load_public_key(pem: bytes) -> PublicKey:
    """Read a PEM public key (``PUBLIC KEY`` or ``RSA PUBLIC KEY``) and check its type.

    Raises:
        SignatureError: not a PEM public key, or a type or size cosign does not accept.
    """
    if any(kind.endswith("PRIVATE KEY") for kind, _ in pem_blocks(pem)):
        raise SignatureError("the public key is a private key; give the public key instead")
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise SignatureError("the public key cannot be read: not a PEM public key") from None
    return check_key(key)


def load_private_key(pem: bytes, password: bytes | None) -> PrivateKey:
    """Read a private key: cosign's encrypted format, or a plain PKCS#8/SEC1/PKCS#1 PEM.

    A cosign key written with an empty password opens with ``password=None``.

    Raises:
        SignatureError: unreadable, wrong password, or a key type cosign does not accept.
    """
    blocks = [(kind, der) for kind, der in pem_blocks(pem) if kind.endswith("PRIVATE KEY")]
    if not blocks:
        raise SignatureError("the private key is not a PEM private key")
    kind, der = blocks[0]
    if kind in COSIGN_ENCRYPTED:
        return _check_private(_load_der(encrypted.decrypt(der, password or b""), None))
    if kind not in PLAIN_PRIVATE:
        raise SignatureError(f"unsupported private key PEM type {kind[:40]!r}")
    return _check_private(_load_plain(pem, kind, password))


def _load_plain(pem: bytes, kind: str, password: bytes | None) -> object:
    # COSIGN_PASSWORD may well be set for a plain key; only an encrypted PEM gets it.
    locked = kind == "ENCRYPTED PRIVATE KEY" or b"Proc-Type: 4,ENCRYPTED" in pem
    if locked and not password:
        raise SignatureError("the private key is encrypted: a password is needed")
    try:
        return serialization.load_pem_private_key(pem, password if locked else None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise SignatureError("cannot read the private key (wrong password or not a "
                             "PKCS#8, EC or RSA private key)") from None


def _load_der(der: bytes, password: bytes | None) -> object:
    try:
        return serialization.load_der_private_key(der, password)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise SignatureError("the decrypted private key is not a PKCS#8 key") from None


def _check_private(key: object) -> PrivateKey:
    if not isinstance(key, PRIVATE_TYPES):
        raise SignatureError(f"unsupported private key type {type(key).__name__}")
    check_key(key.public_key())
    return key


def check_key(key: object) -> PublicKey:
    """Refuse key types, curves and sizes cosign does not accept; return the key.

    Raises:
        SignatureError: naming the type, curve or size.
    """
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in CURVES:
            raise SignatureError(f"unsupported ECDSA curve {key.curve.name} "
                                 "(P-256, P-384 or P-521)")
        return key
    if isinstance(key, rsa.RSAPublicKey):
        if not RSA_BITS[0] <= key.key_size <= RSA_BITS[1]:
            raise SignatureError(f"unsupported RSA key size {key.key_size} (2048 to 4096 bits)")
        return key
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key
    raise SignatureError(f"unsupported public key type {type(key).__name__.lstrip('_')} "
                         "(ECDSA, RSA or Ed25519)")


def public_pem(key: PrivateKey | PublicKey) -> bytes:
    """The PKIX ``PUBLIC KEY`` PEM of ``key`` (its public half for a private key)."""
    public = key.public_key() if isinstance(key, PRIVATE_TYPES) else key
    return public.public_bytes(serialization.Encoding.PEM,
                               serialization.PublicFormat.SubjectPublicKeyInfo)


def encrypted_private_pem(key: PrivateKey, password: bytes) -> bytes:
    """``key`` in cosign's encrypted format (``ENCRYPTED SIGSTORE PRIVATE KEY``)."""
    der = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    body = base64.b64encode(encrypted.encrypt(der, password)).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {SIGSTORE_PEM_TYPE}-----", *lines,
                      f"-----END {SIGSTORE_PEM_TYPE}-----", ""]).encode()


def generate_key_pair(password: bytes) -> tuple[bytes, bytes]:
    """A new ECDSA P-256 key pair as cosign makes it: (encrypted private PEM, public PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    return encrypted_private_pem(key, password), public_pem(key)
