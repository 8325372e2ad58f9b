"""Keys: cosign's encrypted format both ways, plain PEM keys, refused types, hash names."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa

from lockwright.images.cosign import (
    SignatureError,
    generate_key_pair,
    load_private_key,
    load_public_key,
    public_pem,
)
from lockwright.images.cosign.crypto import sign, verifies
from lockwright.images.cosign.encrypted import decrypt, encrypt
from lockwright.images.cosign.keys import encrypted_private_pem, hash_algorithm, pem_blocks


def pkcs8(key: object) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,  # type: ignore[attr-defined]
                             serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


KEYS = {
    "p256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "p384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "p521": lambda: ec.generate_private_key(ec.SECP521R1()),
    "rsa2048": lambda: rsa.generate_private_key(65537, 2048),
    "ed25519": ed25519.Ed25519PrivateKey.generate,
}


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_every_accepted_type_round_trips_encrypted_and_plain(kind: str) -> None:
    key = KEYS[kind]()
    locked = encrypted_private_pem(key, b"s3cret")
    assert locked.startswith(b"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
    for loaded in (load_private_key(locked, b"s3cret"), load_private_key(pkcs8(key), None)):
        assert public_pem(loaded) == public_pem(key)
    public = load_public_key(public_pem(key))
    assert verifies(public, sign(key, b"message"), b"message", "sha256")
    assert not verifies(public, sign(key, b"message"), b"other", "sha256")


def test_generated_pair_is_cosigns_default_p256() -> None:
    private, public = generate_key_pair(b"")
    key = load_private_key(private, None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    assert public_pem(key) == public and public.startswith(b"-----BEGIN PUBLIC KEY-----")


def test_encrypted_body_is_securesystemslib_json() -> None:
    body = json.loads(encrypt(b"plain", b"pw"))
    assert list(body) == ["kdf", "cipher", "ciphertext"]
    assert body["kdf"]["name"] == "scrypt" and body["kdf"]["params"] == {"N": 32768, "r": 8, "p": 1}
    assert list(body["kdf"]) == ["name", "params", "salt"]
    assert body["cipher"]["name"] == "nacl/secretbox"
    assert len(base64.b64decode(body["cipher"]["nonce"])) == 24
    assert len(base64.b64decode(body["ciphertext"])) == len(b"plain") + 16  # Poly1305 tag
    assert decrypt(json.dumps(body).encode(), b"pw") == b"plain"


@pytest.mark.parametrize("password", [b"wrong", b"", None])
def test_wrong_password_is_a_clear_error(password: bytes | None) -> None:
    locked = encrypted_private_pem(ec.generate_private_key(ec.SECP256R1()), b"right")
    with pytest.raises(SignatureError, match="cannot decrypt the private key: wrong password"):
        load_private_key(locked, password)


def test_hostile_scrypt_parameters_are_refused_before_any_work() -> None:
    body = json.loads(encrypt(b"x", b"pw"))
    body["kdf"]["params"]["N"] = 2 ** 30
    with pytest.raises(SignatureError, match="out of range"):
        decrypt(json.dumps(body).encode(), b"pw")
    body["kdf"]["params"]["N"] = "many"
    with pytest.raises(SignatureError, match="malformed scrypt"):
        decrypt(json.dumps(body).encode(), b"pw")


@pytest.mark.parametrize(("body", "reason"), [
    (b"not json", "not cosign's format"),
    (b'{"kdf": {"name": "argon2"}, "cipher": {"name": "nacl/secretbox"}}', "unsupported kdf"),
])
def test_malformed_encrypted_bodies(body: bytes, reason: str) -> None:
    with pytest.raises(SignatureError, match=reason):
        decrypt(body, b"pw")


def test_plain_pkcs8_encrypted_pem_needs_its_password() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.BestAvailableEncryption(b"pw"))
    assert public_pem(load_private_key(pem, b"pw")) == public_pem(key)
    with pytest.raises(SignatureError, match="a password is needed"):
        load_private_key(pem, None)
    with pytest.raises(SignatureError, match="cannot read the private key"):
        load_private_key(pem, b"nope")


def test_a_password_given_for_a_plain_key_is_ignored() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    assert public_pem(load_private_key(pkcs8(key), b"COSIGN_PASSWORD set anyway")) == public_pem(key)


@pytest.mark.parametrize(("key", "reason", "private_reason"), [
    (lambda: ec.generate_private_key(ec.SECP224R1()), "unsupported ECDSA curve secp224r1", ""),
    (lambda: ec.generate_private_key(ec.SECP256K1()), "unsupported ECDSA curve secp256k1", ""),
    (lambda: rsa.generate_private_key(65537, 1024), "unsupported RSA key size 1024", ""),
    (lambda: dsa.generate_private_key(2048), "unsupported public key type DSAPublicKey",
     "unsupported private key type DSAPrivateKey"),
    (ed448.Ed448PrivateKey.generate, "unsupported public key type Ed448PublicKey",
     "unsupported private key type Ed448PrivateKey"),
])
def test_unsupported_key_types_are_refused_both_ways(key: object, reason: str,
                                                     private_reason: str) -> None:
    made = key()  # type: ignore[operator]
    public = made.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    with pytest.raises(SignatureError, match=reason):
        load_public_key(public)
    with pytest.raises(SignatureError, match=private_reason or reason):
        load_private_key(pkcs8(made), None)


@pytest.mark.parametrize(("pem", "reason"), [
    (b"", "not a PEM public key"),
    (b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK", "not a PEM public key"),
    (b"-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n", "not a PEM public key"),
])
def test_unreadable_public_keys(pem: bytes, reason: str) -> None:
    with pytest.raises(SignatureError, match=reason):
        load_public_key(pem)


def test_a_private_key_given_as_public_key_is_named_without_echoing_it() -> None:
    pem = pkcs8(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(SignatureError) as caught:
        load_public_key(pem)
    assert "is a private key" in caught.value.message
    assert pem_blocks(pem)[0][1].hex()[:16] not in caught.value.message
    assert b"MIG" not in caught.value.message.encode()


def test_private_key_reading_errors() -> None:
    with pytest.raises(SignatureError, match="not a PEM private key"):
        load_private_key(b"nothing here", None)
    with pytest.raises(SignatureError, match="unsupported private key PEM type"):
        load_private_key(b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n"
                         b"-----END OPENSSH PRIVATE KEY-----\n", None)


@pytest.mark.parametrize("name", ["sha224", "SHA256", "Sha384", "sha512"])
def test_hash_names_are_case_insensitive(name: str) -> None:
    assert hash_algorithm(name).name == name.lower()


@pytest.mark.parametrize("name", ["md5", "sha1", "sha3-256", ""])
def test_other_hashes_are_refused(name: str) -> None:
    with pytest.raises(SignatureError, match="unsupported hash algorithm"):
        hash_algorithm(name)


@pytest.mark.parametrize("hash_name", ["sha224", "sha256", "sha384", "sha512"])
def test_signature_checked_with_the_authoritys_hash(hash_name: str) -> None:
    for key in (ec.generate_private_key(ec.SECP384R1()), rsa.generate_private_key(65537, 2048)):
        public = load_public_key(public_pem(key))
        signature = sign(key, b"payload", hash_name)
        assert verifies(public, signature, b"payload", hash_name)
        other = "sha512" if hash_name != "sha512" else "sha256"
        assert not verifies(public, signature, b"payload", other)


def test_ed25519_ignores_the_hash_and_rsa_pss_verifies() -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    ed = ed25519.Ed25519PrivateKey.generate()
    assert verifies(load_public_key(public_pem(ed)), sign(ed, b"m"), b"m", "sha512")
    key = rsa.generate_private_key(65537, 3072)
    pss = key.sign(b"m", padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256())
    assert verifies(load_public_key(public_pem(key)), pss, b"m", "sha256")
    assert not verifies(load_public_key(public_pem(key)), b"\0" * 384, b"m", "sha256")
