"""cosign's encrypted private key body (go-securesystemslib ``encrypted``).

The PEM body of an ``ENCRYPTED SIGSTORE PRIVATE KEY`` (or the older ``ENCRYPTED COSIGN
PRIVATE KEY``) is a JSON document: a scrypt key derivation (``N``, ``r``, ``p``, salt) and a
NaCl secretbox (XSalsa20-Poly1305) holding the PKCS#8 DER private key. The secretbox comes
from PyNaCl (libsodium), since ``cryptography`` has no XSalsa20.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

import nacl.exceptions
import nacl.secret

from lockwright.images.cosign.model import SignatureError

# cosign's own parameters (go-securesystemslib's defaults when cosign writes a key).
SCRYPT_N, SCRYPT_R, SCRYPT_P = 32768, 8, 1
KEY_BYTES = nacl.secret.SecretBox.KEY_SIZE
# A hostile key file must not make us allocate gigabytes: scrypt needs 128 * N * r bytes.
MAX_SCRYPT_MEMORY = 256 * 1024 * 1024


def encrypt(plaintext: bytes, password: bytes) -> bytes:
    """Seal ``plaintext`` the way cosign does; return the JSON body (bytes)."""
    salt = os.urandom(32)
    nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
    key = _derive(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    sealed = nacl.secret.SecretBox(key).encrypt(plaintext, nonce).ciphertext
    document = {
        "kdf": {"name": "scrypt", "params": {"N": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P},
                "salt": _b64(salt)},
        "cipher": {"name": "nacl/secretbox", "nonce": _b64(nonce)},
        "ciphertext": _b64(sealed),
    }
    return json.dumps(document, separators=(",", ":")).encode()


def decrypt(body: bytes, password: bytes) -> bytes:
    """Open a cosign encrypted key body with ``password``.

    Raises:
        SignatureError: the body is malformed, its parameters are unsupported, or the
            password is wrong.
    """
    document = _document(body)
    n, r, p = _scrypt_params(document["kdf"])
    salt = _field_bytes(document["kdf"], "salt")
    nonce = _field_bytes(document["cipher"], "nonce")
    sealed = _field_bytes(document, "ciphertext")
    try:
        return nacl.secret.SecretBox(_derive(password, salt, n, r, p)).decrypt(sealed, nonce)
    except (nacl.exceptions.CryptoError, ValueError, TypeError):
        raise SignatureError("cannot decrypt the private key: wrong password") from None


def _derive(password: bytes, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password, salt=salt, n=n, r=r, p=p, dklen=KEY_BYTES,
                          maxmem=MAX_SCRYPT_MEMORY + 1024 * 1024)


def _document(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body)
    except ValueError:
        raise SignatureError("the encrypted private key is not cosign's format") from None
    if (not isinstance(document, dict) or not isinstance(document.get("kdf"), dict)
            or not isinstance(document.get("cipher"), dict)):
        raise SignatureError("the encrypted private key is not cosign's format")
    if document["kdf"].get("name") != "scrypt" or document["cipher"].get("name") != "nacl/secretbox":
        raise SignatureError("the encrypted private key uses an unsupported kdf or cipher "
                             "(only scrypt with nacl/secretbox)")
    return document


def _scrypt_params(kdf: dict[str, Any]) -> tuple[int, int, int]:
    params = kdf.get("params")
    values = [params.get(k) if isinstance(params, dict) else None for k in ("N", "r", "p")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise SignatureError("the encrypted private key has malformed scrypt parameters")
    n, r, p = (int(v) for v in values)  # type: ignore[arg-type]  # checked just above
    if n < 2 or n & (n - 1) or 128 * n * r > MAX_SCRYPT_MEMORY or p > 16:
        raise SignatureError("the encrypted private key's scrypt parameters are out of range")
    return n, r, p


def _field_bytes(holder: dict[str, Any], name: str) -> bytes:
    value = holder.get(name)
    try:
        return base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except ValueError:
        raise SignatureError(f"the encrypted private key's {name} is not base64") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
