"""verify_image in memory: sign → verify, and every reason to refuse."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

from lockwright.errors import RegistryUnavailable
from lockwright.images.cosign import (
    Attestation,
    KeyAuthority,
    SignatureError,
    Verified,
    attest_image,
    public_pem,
    sign_image,
    verify_image,
)
from lockwright.images.cosign.model import MAX_CANDIDATES, SIMPLE_SIGNING
from lockwright.images.cosign.registry import tag_for
from lockwright.oci.reference import Reference, parse
from lockwright.oci.types import OCI_MANIFEST
from tests.unit.test_cosign_builders import (
    FakeRegistry,
    attach_bundle,
    digest_of,
    dsse_bundle,
    image,
    message_bundle,
    statement,
)

SLSA = "https://slsa.dev/provenance/v0.2"


@dataclass
class Setup:
    registry: FakeRegistry = field(default_factory=FakeRegistry)
    repo: Reference = field(default_factory=lambda: parse("registry.test/acme/pkg:v1"))
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    digest: str = ""

    def __post_init__(self) -> None:
        self.digest = image(self.registry, self.repo)

    def authority(self, name: str = "a", key: object = None, **kw: object) -> KeyAuthority:
        return KeyAuthority(name, public_pem(key or self.key), **kw)  # type: ignore[arg-type]

    def verify(self, *authorities: KeyAuthority) -> Verified:
        return verify_image(self.registry, self.repo, self.digest,  # type: ignore[arg-type]
                            authorities or [self.authority()])

    def refused(self, *authorities: KeyAuthority) -> str:
        with pytest.raises(SignatureError) as caught:
            self.verify(*authorities)
        return caught.value.message

    def sign(self, key: object = None, digest: str = "", **kw: object) -> str:
        return sign_image(self.registry, self.repo, digest or self.digest,  # type: ignore[arg-type]
                          key or self.key, **kw)

    def sig_layers(self) -> list[dict[str, object]]:
        return list(self.registry.get_manifest(self.repo, tag_for(self.digest, ".sig"))
                    .data["layers"])

    def put_sig_manifest(self, layers: list[dict[str, object]]) -> None:
        body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                           "config": {"mediaType": "application/json", "size": 2,
                                      "digest": self.registry.put_blob(b"{}")},
                           "layers": layers}).encode()
        self.registry.push_manifest(self.repo, body, OCI_MANIFEST, tag_for(self.digest, ".sig"))


def other_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.mark.parametrize("make", [
    lambda: ec.generate_private_key(ec.SECP256R1()),
    lambda: ec.generate_private_key(ec.SECP521R1()),
    lambda: rsa.generate_private_key(65537, 2048),
    ed25519.Ed25519PrivateKey.generate,
])
def test_sign_then_verify(make: object) -> None:
    s = Setup(key=make())  # type: ignore[operator]
    s.sign()
    assert s.verify() == Verified("a", f"signature tag {tag_for(s.digest, '.sig')}")


def test_the_authoritys_hash_is_the_one_checked() -> None:
    s = Setup(key=ec.generate_private_key(ec.SECP384R1()))
    s.sign(hash_algorithm="sha384")
    assert s.verify(s.authority(hash_algorithm="SHA384")).authority == "a"
    assert "does not verify" in s.refused(s.authority(hash_algorithm="sha256"))


def test_no_signature_at_all() -> None:
    s = Setup()
    assert s.refused() == (f'authority "a": no signatures found (looked for tag '
                           f"{tag_for(s.digest, '.sig')} and sigstore bundles)")


def test_wrong_key() -> None:
    s = Setup()
    s.sign()
    assert s.refused(s.authority(key=other_key())) == (
        'authority "a": signature does not verify with the public key')


def test_signature_copied_from_another_digest() -> None:
    s = Setup()
    other = image(s.registry, s.repo.with_tag("v2"), b"another package")
    s.sign(digest=other)
    layers = s.registry.get_manifest(s.repo, tag_for(other, ".sig")).data["layers"]
    s.put_sig_manifest(layers)
    assert s.refused() == f'authority "a": payload is for {other}, not {s.digest}'


def test_tampered_payload_under_the_original_signature() -> None:
    s = Setup()
    s.sign()
    (layer,) = s.sig_layers()
    payload = s.registry.blobs[str(layer["digest"])].replace(b'"optional":null',
                                                              b'"optional":{"x":"y"}')
    s.put_sig_manifest([dict(layer, digest=s.registry.put_blob(payload), size=len(payload))])
    assert s.refused() == 'authority "a": signature does not verify with the public key'


def test_payload_blob_not_matching_its_digest() -> None:
    s = Setup()
    s.sign()
    (layer,) = s.sig_layers()
    s.registry.blobs[str(layer["digest"])] = b"tampered in storage"
    assert f"blob {layer['digest']} does not match its digest" in s.refused()


@pytest.mark.parametrize(("change", "reason"), [
    ({"annotations": {}}, "has no dev.cosignproject.cosign/signature annotation"),
    ({"annotations": {"dev.cosignproject.cosign/signature": "!!not base64!!"}},
     "signature annotation is not base64"),
    ({"size": 2 * 1024 * 1024}, "over the limit of 1048576"),
])
def test_malformed_signature_layers(change: dict[str, object], reason: str) -> None:
    s = Setup()
    s.sign()
    s.put_sig_manifest([dict(s.sig_layers()[0], **change)])
    assert reason in s.refused()


def test_a_missing_payload_blob() -> None:
    s = Setup()
    s.sign()
    (layer,) = s.sig_layers()
    del s.registry.blobs[str(layer["digest"])]
    assert "is missing from the registry" in s.refused()


def test_other_layer_types_in_the_signature_manifest_are_not_signatures() -> None:
    s = Setup()
    s.put_sig_manifest([{"mediaType": "text/plain", "size": 2,
                         "digest": s.registry.put_blob(b"hi")}])
    assert "no signatures found" in s.refused()


def test_one_good_signature_among_bad_ones_is_enough() -> None:
    s = Setup()
    s.sign(key=other_key())
    s.sign()
    assert s.verify().evidence.startswith("signature tag")


def test_candidates_are_capped() -> None:
    s = Setup()
    s.sign(key=other_key())
    bad = s.sig_layers()[0]
    s.sign()
    s.put_sig_manifest([bad] * (MAX_CANDIDATES + 5) + [s.sig_layers()[1]])
    s.registry.requests.clear()
    assert "does not verify" in s.refused()  # the good one is past the cap
    assert len([r for r in s.registry.requests if r.startswith("blob")]) == MAX_CANDIDATES


def test_signature_manifest_over_the_limit() -> None:
    s = Setup()
    s.sign()
    layer = dict(s.sig_layers()[0], annotations={"dev.cosignproject.cosign/signature": "A" * 4,
                                                 "padding": "x" * (1024 * 1024)})
    s.put_sig_manifest([layer])
    assert "is over the limit of 1048576 bytes" in s.refused()


@pytest.mark.parametrize(("pem", "reason"), [
    (b"garbage", "the public key cannot be read: not a PEM public key"),
    (dsa.generate_private_key(2048).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
     "unsupported public key type DSAPublicKey (ECDSA, RSA or Ed25519)"),
], ids=["garbage", "dsa"])
def test_unusable_keys(pem: bytes, reason: str) -> None:
    s = Setup()
    s.sign()
    assert s.refused(KeyAuthority("k", pem)) == f'authority "k": {reason}'


def test_unsupported_hash_fails_even_without_signatures() -> None:
    s = Setup()
    assert "unsupported hash algorithm 'md5'" in s.refused(s.authority(hash_algorithm="md5"))


def test_first_passing_authority_wins_and_failures_are_joined() -> None:
    s = Setup()
    s.sign()
    wrong = s.authority("first", key=other_key())
    assert s.verify(wrong, s.authority("second")).authority == "second"
    assert s.refused(wrong, s.authority("third", key=other_key())) == (
        'authority "first": signature does not verify with the public key; '
        'authority "third": signature does not verify with the public key')


def test_no_authorities_is_a_failure() -> None:
    s = Setup()
    with pytest.raises(SignatureError, match="no authorities"):
        verify_image(s.registry, s.repo, s.digest, [])  # type: ignore[arg-type]


def test_errors_carry_no_key_material_or_payload() -> None:
    s = Setup()
    s.sign()
    pem = public_pem(other_key())
    message = s.refused(KeyAuthority("k", pem), KeyAuthority("p", b"-----BEGIN PRIVATE KEY-----\n"
                                                               b"c2VjcmV0\n-----END PRIVATE KEY-----\n"))
    body = pem.decode().splitlines()[1]
    assert body not in message and "c2VjcmV0" not in message
    assert "docker-reference" not in message and "cosign container image" not in message


def test_registry_outages_are_not_verification_failures() -> None:
    s = Setup()

    def down(*args: object, **kwargs: object) -> None:
        raise RegistryUnavailable("registry.test unreachable")

    s.registry.get_manifest = down  # type: ignore[assignment,method-assign]
    with pytest.raises(RegistryUnavailable):
        s.verify()


# --- attestations --------------------------------------------------------------------------

def attested(*types: str) -> KeyAuthority:
    s = Setup()
    return s.authority(attestations=tuple(Attestation(t, t) for t in types))


def test_attestation_present() -> None:
    s = Setup()
    attest_image(s.registry, s.repo, s.digest, s.key, "slsaprovenance", {"builder": {"id": "x"}})
    authority = s.authority(attestations=(Attestation("prov", "slsaprovenance"),))
    assert s.verify(authority) == Verified("a", f"attestation {SLSA}")


def test_attestation_authority_does_not_read_signatures() -> None:
    s = Setup()
    attest_image(s.registry, s.repo, s.digest, s.key, SLSA, {})
    s.verify(s.authority(attestations=(Attestation("prov", SLSA),)))
    assert not any(tag_for(s.digest, ".sig") in r for r in s.registry.requests)


def test_attestation_absent() -> None:
    s = Setup()
    s.sign()  # a signature is not an attestation
    authority = s.authority(attestations=(Attestation("prov", "slsaprovenance"),))
    assert s.refused(authority) == (
        f'authority "a": no attestation of predicate type {SLSA} (looked for tag '
        f"{tag_for(s.digest, '.att')} and sigstore bundles; found none)")


def test_every_required_predicate_type_must_be_attested() -> None:
    s = Setup()
    attest_image(s.registry, s.repo, s.digest, s.key, "slsaprovenance", {})
    authority = s.authority(attestations=(Attestation("p", "slsaprovenance"),
                                          Attestation("s", "spdxjson")))
    assert s.refused(authority) == ('authority "a": no attestation of predicate type '
                                    "https://spdx.dev/Document (1 checked)")
    attest_image(s.registry, s.repo, s.digest, s.key, "spdxjson", {"spdxVersion": "SPDX-2.3"})
    assert s.verify(authority).evidence == (f"attestation {SLSA}, "
                                            "attestation https://spdx.dev/Document")


def test_attestation_by_another_key_or_for_another_digest() -> None:
    s = Setup()
    attest_image(s.registry, s.repo, s.digest, other_key(), "slsaprovenance", {})
    other = image(s.registry, s.repo.with_tag("v2"), b"other")
    attest_image(s.registry, s.repo, other, s.key, "slsaprovenance", {})
    moved = s.registry.get_manifest(s.repo, tag_for(other, ".att")).data["layers"]
    layers = s.registry.get_manifest(s.repo, tag_for(s.digest, ".att")).data["layers"] + moved
    body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                       "config": {"mediaType": "application/json", "size": 2,
                                  "digest": s.registry.put_blob(b"{}")}, "layers": layers})
    s.registry.push_manifest(s.repo, body.encode(), OCI_MANIFEST, tag_for(s.digest, ".att"))
    authority = s.authority(attestations=(Attestation("prov", "slsaprovenance"),))
    assert s.refused(authority) == (
        f'authority "a": no attestation of predicate type {SLSA} (2 checked: signature does '
        f"not verify with the public key / payload is for {other}, not {s.digest})")


def test_invalid_predicate_type_fails_the_authority() -> None:
    s = Setup()
    assert "invalid predicate type 'nonsense'" in s.refused(
        s.authority(attestations=(Attestation("x", "nonsense"),)))


# --- sigstore bundles ----------------------------------------------------------------------

def body_of(s: Setup) -> bytes:
    return s.registry.get_manifest(s.repo, s.digest).body


def test_message_signature_bundle_through_the_tag_fallback() -> None:
    s = Setup()
    referrer = attach_bundle(s.registry, s.repo, s.digest, message_bundle(s.key, body_of(s)))
    assert s.verify() == Verified("a", f"sigstore bundle {referrer}")
    assert any(r.startswith("GET") and "/referrers/" in r for r in s.registry.requests)


def test_cosign_v3_dsse_bundle_through_the_referrers_api() -> None:
    s = Setup(registry=FakeRegistry(referrers_api=True))
    referrer = attach_bundle(s.registry, s.repo, s.digest, dsse_bundle(s.key, statement(s.digest)),
                             tag_index=False)
    assert s.verify() == Verified("a", f"sigstore bundle {referrer}")


@pytest.mark.parametrize(("bundle", "reason"), [
    (lambda s: message_bundle(other_key(), body_of(s)), "signature does not verify"),
    (lambda s: dsse_bundle(other_key(), statement(s.digest)), "signature does not verify"),
    (lambda s: dsse_bundle(s.key, statement(digest_of(b"x"))), "payload is for sha256:2d711642"),
    (lambda s: message_bundle(s.key, b"{}", digest_of(b"{}")), "payload is for sha256:44136fa3"),
    (lambda s: b'{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}',
     "sigstore bundle is malformed (invalid verificationMaterial"),
    (lambda s: b"not json", "sigstore bundle is not valid JSON"),
])
def test_bundles_that_do_not_pass(bundle: object, reason: str) -> None:
    s = Setup()
    attach_bundle(s.registry, s.repo, s.digest, bundle(s))  # type: ignore[operator]
    assert reason in s.refused()


def test_a_bundle_attestation_is_not_a_signature_but_is_an_attestation() -> None:
    s = Setup()
    attach_bundle(s.registry, s.repo, s.digest, dsse_bundle(s.key, statement(s.digest, SLSA)))
    assert "no signatures found" in s.refused()
    authority = s.authority(attestations=(Attestation("prov", "slsaprovenance"),))
    assert s.verify(authority).evidence == f"attestation {SLSA}"


def test_referrers_for_another_subject_are_refused() -> None:
    s = Setup()
    other = image(s.registry, s.repo.with_tag("v2"), b"other")
    referrer = attach_bundle(s.registry, s.repo, other, dsse_bundle(s.key, statement(s.digest)),
                             tag_index=False)
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [{"mediaType": OCI_MANIFEST, "digest": referrer, "size": 1}]}
    s.registry.push_manifest(s.repo, json.dumps(index).encode(),
                             "application/vnd.oci.image.index.v1+json", tag_for(s.digest))
    assert f"referrer {referrer} does not refer to {s.digest}" in s.refused()


def test_other_referrers_are_ignored() -> None:
    s = Setup(registry=FakeRegistry(referrers_api=True))
    sbom = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": "application/spdx+json",
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
                       "digest": s.registry.put_blob(b"{}")},
            "layers": [{"mediaType": SIMPLE_SIGNING, "size": 2, "digest": digest_of(b"{}")}],
            "subject": {"mediaType": OCI_MANIFEST, "size": 1, "digest": s.digest}}
    s.registry.push_manifest(s.repo, json.dumps(sbom).encode(), OCI_MANIFEST, "sbom")
    assert "no signatures found" in s.refused()
    assert not any(r == "manifest sbom" for r in s.registry.requests)
