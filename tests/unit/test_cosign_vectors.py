"""Interoperability: keys, signatures, attestations and bundles that cosign made.

The vectors and their origin are in tests/fixtures/cosign/README.md.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from lockwright.images.cosign import (
    Attestation,
    KeyAuthority,
    SignatureError,
    Verified,
    load_private_key,
    load_public_key,
    public_pem,
)
from lockwright.images.cosign.bundle import parse_bundle
from lockwright.images.cosign.candidates import dsse, simple_signing
from lockwright.images.cosign.crypto import sign, verifies
from lockwright.images.cosign.intoto import parse_envelope
from lockwright.images.cosign.model import DSSE_ENVELOPE, SIGNATURE_ANNOTATION, SIMPLE_SIGNING
from lockwright.images.cosign.registry import tag_for
from lockwright.images.cosign.verify import verify_image
from lockwright.oci.reference import parse
from lockwright.oci.types import OCI_MANIFEST
from tests.unit.test_cosign_builders import FakeRegistry, attach_bundle, digest_of

VECTORS = Path(__file__).resolve().parents[1] / "fixtures" / "cosign"
COSIGN, RS, CI = VECTORS / "cosign", VECTORS / "sigstore-rs", VECTORS / "containers-image"
CONTAINERS_PREFIX = b"\0sigstore-json\n"


def read(path: Path) -> bytes:
    return path.read_bytes()


def sha256_of(path: Path) -> str:
    return "sha256:" + hashlib.sha256(read(path)).hexdigest()


# --- keys ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["pemcosignkey", "pemcosigneckey", "pemsigstorekey"])
def test_cosigns_encrypted_keys_open_with_their_password(name: str) -> None:
    pem = read(COSIGN / "keys_test" / f"{name}.key")
    key = load_private_key(pem, b"hello")
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert verifies(load_public_key(public_pem(key)), sign(key, b"m"), b"m", "sha256")
    with pytest.raises(SignatureError, match="wrong password"):
        load_private_key(pem, b"goodbye")


@pytest.mark.parametrize(("name", "kind"), [("ecdsa_encrypted_private", ec.EllipticCurvePrivateKey),
                                           ("rsa_encrypted_private", rsa.RSAPrivateKey)])
def test_sigstore_rs_encrypted_keys(name: str, kind: type) -> None:
    pem = read(RS / f"{name}.key")
    key = load_private_key(pem, b"123")
    assert isinstance(key, kind)
    assert verifies(load_public_key(public_pem(key)), sign(key, b"m"), b"m", "sha256")
    with pytest.raises(SignatureError, match="wrong password"):
        load_private_key(pem, b"1234")


def test_a_key_cosign_generated_with_an_empty_password() -> None:
    key = load_private_key(read(RS / "cosign_generated_encrypted_empty_private.key"), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"


def test_cosigns_ci_key_pair() -> None:
    public = load_public_key(read(COSIGN / "cosign-test.pub"))
    assert isinstance(public, ec.EllipticCurvePublicKey)
    with pytest.raises(SignatureError, match="wrong password"):
        load_private_key(read(COSIGN / "cosign-test.key"), b"not the CI secret")


@pytest.mark.parametrize("name", ["validrsa", "validrsapkcs1", "validrsapkcs8", "validecp256",
                                  "validecp384", "validecp521", "validecpkcs8", "ed25519key"])
def test_keys_cosign_imports(name: str) -> None:
    key = load_private_key(read(COSIGN / "keys_test" / f"{name}.key"), None)
    assert load_public_key(public_pem(key))


@pytest.mark.parametrize(("name", "reason"), [
    ("invalidecp224", "unsupported ECDSA curve secp224r1"),
    ("invalidecunsupported", "unsupported ECDSA curve secp256k1"),
    ("invalidrsasmallkey", "unsupported RSA key size 1024"),
    ("invalidrsalargekey", "unsupported RSA key size 5120"),
    ("invalidrsawithpubkey", "not a PEM private key"),
    ("invalidkey", "not a PEM private key"),
])
def test_keys_cosign_refuses(name: str, reason: str) -> None:
    with pytest.raises(SignatureError, match=reason):
        load_private_key(read(COSIGN / "keys_test" / f"{name}.key"), None)


# --- classic signatures ----------------------------------------------------------------------

def containers_layer(path: Path) -> tuple[bytes, dict[str, str]]:
    """(payload, layer annotations) from containers/image's storage of a cosign layer."""
    raw = read(path)
    assert raw.startswith(CONTAINERS_PREFIX)
    stored = json.loads(raw[len(CONTAINERS_PREFIX):])
    assert stored["mimeType"] == SIMPLE_SIGNING
    return base64.b64decode(stored["payload"]), stored["annotations"]


def verify_stored(layers: list[tuple[bytes, dict[str, str]]], digest: str,
                  public: bytes) -> Verified:
    """Put cosign's layers at ``digest``'s .sig tag of an in-memory registry; verify."""
    registry, repo = FakeRegistry(), parse("192.168.64.2:5000/cosign-signed/image:v1")
    descriptors = [{"mediaType": SIMPLE_SIGNING, "size": len(p), "digest": registry.put_blob(p),
                    "annotations": a} for p, a in layers]
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                  "size": 2, "digest": registry.put_blob(b"{}")},
                       "layers": descriptors}).encode()
    registry.push_manifest(repo, body, OCI_MANIFEST, tag_for(digest, ".sig"))
    return verify_image(registry, repo, digest, [KeyAuthority("cosign", public)])  # type: ignore[arg-type]


def test_an_image_cosign_signed_verifies() -> None:
    digest = sha256_of(CI / "dir-img-cosign-valid" / "manifest.json")
    layer = containers_layer(CI / "dir-img-cosign-valid" / "signature-1")
    assert verify_stored([layer], digest, read(CI / "cosign.pub")) == Verified(
        "cosign", f"signature tag {tag_for(digest, '.sig')}")


def test_a_cosign_signature_with_a_rekor_bundle_verifies_by_key() -> None:
    digest = sha256_of(CI / "dir-img-cosign-key-rekor-valid" / "manifest.json")
    payload, annotations = containers_layer(CI / "dir-img-cosign-key-rekor-valid" / "signature-1")
    assert "dev.sigstore.cosign/bundle" in annotations
    assert verify_stored([(payload, annotations)], digest, read(CI / "cosign2.pub"))


def test_cosign_signatures_refused_for_the_right_reasons() -> None:
    digest = sha256_of(CI / "dir-img-cosign-valid" / "manifest.json")
    valid = containers_layer(CI / "dir-img-cosign-valid" / "signature-1")
    unknown = containers_layer(CI / "unknown-cosign-key.signature")
    with pytest.raises(SignatureError, match="does not verify with the public key"):
        verify_stored([valid, unknown], digest, read(CI / "cosign2.pub"))
    with pytest.raises(SignatureError, match="does not verify with the public key"):
        verify_stored([unknown], digest, read(CI / "cosign.pub"))
    modified = sha256_of(CI / "dir-img-cosign-modified-manifest" / "manifest.json")
    with pytest.raises(SignatureError) as caught:
        verify_stored([valid], modified, read(CI / "cosign.pub"))
    assert caught.value.message == (f'authority "cosign": payload is for {digest}, '
                                    f"not {modified}")


def test_sigstore_rs_signature_layer() -> None:
    d = RS / "signature_layer"
    payload, signature = read(d / "payload.json"), (d / "signature.b64").read_text().strip()
    digest = "sha256:f3cfc9d0dbf931d3db4685ec659b7ac68e2a578219da4aae65427886e649b06b"
    found = simple_signing("vector", payload, signature)
    assert found.check(load_public_key(read(d / "cosign.pub")), "sha256", digest) == ""
    assert "does not verify" in found.check(load_public_key(read(d / "other.pub")), "sha256",
                                            digest)
    layer = (payload, {SIGNATURE_ANNOTATION: signature})
    assert verify_stored([layer], digest, read(d / "cosign.pub")).authority == "cosign"


# --- attestations ----------------------------------------------------------------------------

BLOB = COSIGN / "verify_blob_attestation"


def envelope_candidate(name: str) -> object:
    return dsse(name, parse_envelope(read(BLOB / f"{name}.dsse.json"), name))


@pytest.mark.parametrize(("name", "reason"), [
    ("slsa-provenance", ""),
    ("multiple-subjects", ""),
    ("empty-subject", "in-toto statement names no sha256 subject"),
    ("missing-sha256", "in-toto statement names no sha256 subject"),
    ("multiple-subjects-invalid", "payload is for sha256:0da559c2"),
])
def test_cosigns_blob_attestations(name: str, reason: str) -> None:
    key = load_public_key(read(BLOB / "cosign.pub"))
    found = envelope_candidate(name)
    outcome = found.check(key, "sha256", sha256_of(BLOB / "blob"))  # type: ignore[attr-defined]
    assert outcome.startswith(reason) and bool(outcome) == bool(reason)
    other = load_public_key(public_pem(ec.generate_private_key(ec.SECP256R1())))
    assert found.check(other, "sha256", sha256_of(BLOB / "blob")) == (  # type: ignore[attr-defined]
        "signature does not verify with the public key")


def test_a_cosign_attestation_satisfies_an_attestation_authority() -> None:
    registry, repo = FakeRegistry(), parse("registry.test/blob:v1")
    digest, envelope = sha256_of(BLOB / "blob"), read(BLOB / "slsa-provenance.dsse.json")
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                       "config": {"mediaType": "application/json", "size": 2,
                                  "digest": registry.put_blob(b"{}")},
                       "layers": [{"mediaType": DSSE_ENVELOPE, "size": len(envelope),
                                   "digest": registry.put_blob(envelope)}]}).encode()
    registry.push_manifest(repo, body, OCI_MANIFEST, tag_for(digest, ".att"))
    public = read(BLOB / "cosign.pub")

    def authority(kind: str) -> KeyAuthority:
        return KeyAuthority("k", public, attestations=(Attestation(kind, kind),))

    verified = verify_image(registry, repo, digest, [authority("slsaprovenance")])  # type: ignore[arg-type]
    assert verified.evidence == "attestation https://slsa.dev/provenance/v0.2"
    with pytest.raises(SignatureError, match="no attestation of predicate type https://cosign"):
        verify_image(registry, repo, digest, [authority("custom")])  # type: ignore[arg-type]


# --- a bundle cosign wrote -------------------------------------------------------------------

def test_cosigns_oci_attestation_bundle() -> None:
    data = read(COSIGN / "oci-attestation.sigstore.json")
    bundle = parse_bundle(data)
    assert bundle.media_type == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert bundle.verification_material.certificate is not None  # keyless: no key authority
    assert bundle.dsse_envelope is not None
    found = dsse("bundle", bundle.dsse_envelope)
    assert found.predicate_type == "https://cosign.sigstore.dev/attestation/v1"
    (subject,) = found.digests
    # Offline, the signature itself still checks out with the certificate's public key.
    certificate = x509.load_der_x509_certificate(bundle.verification_material.certificate.raw_bytes)
    cert_key = load_public_key(public_pem(certificate.public_key()))  # type: ignore[arg-type]
    assert found.check(cert_key, "sha256", subject) == ""

    registry, repo = FakeRegistry(), parse("127.0.0.1:60943/repo:v1")
    registry.manifests[subject] = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                                              "config": {}, "layers": []}).encode()
    referrer = attach_bundle(registry, repo, subject, data)
    cert_pem = public_pem(certificate.public_key())  # type: ignore[arg-type]
    by_cert = KeyAuthority("cert", cert_pem, attestations=(Attestation("c", "custom"),))
    assert verify_image(registry, repo, subject, [by_cert]).evidence == (  # type: ignore[arg-type]
        "attestation https://cosign.sigstore.dev/attestation/v1")
    assert referrer == digest_of(registry.manifests[referrer])
    stranger = public_pem(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(SignatureError, match="signature does not verify"):
        verify_image(registry, repo, subject, [KeyAuthority(  # type: ignore[arg-type]
            "k", stranger, attestations=(Attestation("c", "custom"),))])
