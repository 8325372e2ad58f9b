"""The simple-signing payload, predicate aliases, and ``sign_image`` output checked field by
field against cosign's specification (sigstore/cosign ``specs/SIGNATURE_SPEC.md`` at
``d6d86c224e58``: Properties, Storage, Payloads, Signature Schemes)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from lockwright.images.cosign import (
    PREDICATE_ALIASES,
    SignatureError,
    build_payload,
    expand_predicate_type,
    load_public_key,
    public_pem,
    sign_image,
)
from lockwright.images.cosign.crypto import verifies
from lockwright.images.cosign.payload import go_json, loads, payload_digest
from lockwright.oci.reference import Reference, parse
from tests.unit.test_cosign_builders import FakeRegistry, image

DIGEST = "sha256:4aa3054270f7a70b4528f2064ee90961788e1e1518703592ae4463de3b889dec"


def test_payload_bytes_equal_cosigns_own() -> None:
    # pkg/cosign/obsolete_test.go in sigstore/cosign expects exactly these bytes.
    expected = (b'{"critical":{"identity":{"docker-reference":"index.docker.io/namespace/image"},'
                b'"image":{"docker-manifest-digest":"sha256:4aa3054270f7a70b4528f2064ee90961788e'
                b'1e1518703592ae4463de3b889dec"},"type":"cosign container image signature"},'
                b'"optional":null}')
    assert build_payload(Reference("index.docker.io", "namespace/image"), DIGEST) == expected


def test_annotations_go_sorted_into_optional() -> None:
    payload = build_payload(parse("r.io/a/b:v1"), DIGEST, {"z": "1", "a": "<&>"})
    assert payload.endswith(b'"optional":{"a":"\\u003c\\u0026\\u003e","z":"1"}}')
    assert json.loads(payload)["optional"] == {"a": "<&>", "z": "1"}


def test_go_json_escapes_as_encoding_json() -> None:
    assert go_json({"k": "a\u2028b\u2029é"}) == '{"k":"a\\u2028b\\u2029é"}'.encode()


@pytest.mark.parametrize(("payload", "reason"), [
    (b"{", "not valid JSON"),
    (b"[]", "not a 'cosign container image signature'"),
    (b'{"critical":{"type":"atomic container signature"}}', "critical.type"),
    (b'{"critical":{"type":"cosign container image signature"}}', "names no sha256 image digest"),
    ((b'{"critical":{"type":"cosign container image signature",'
      b'"image":{"docker-manifest-digest":"sha512:ab"}}}'), "names no sha256 image digest"),
    (b'{"critical":{"type":"cosign container image signature","type":"x"}}', "not valid JSON"),
    (b'{"critical":{"type":"cosign container image signature","image":'
     b'{"docker-manifest-digest":"%s","Docker-Manifest-Digest":"%s"}}}'
     % (DIGEST.encode(), DIGEST.encode()), "twice"),
])
def test_payloads_that_name_no_digest(payload: bytes, reason: str) -> None:
    with pytest.raises(SignatureError, match=reason):
        payload_digest(payload)


def test_payload_keys_match_case_insensitively_like_cosign() -> None:
    # The spec's own example writes "Docker-manifest-digest"; Go's decoder accepts it.
    payload = (b'{"critical":{"identity":{"docker-reference":"x"},"image":'
               b'{"Docker-manifest-digest":"%s"},"type":"cosign container image signature"}}'
               % DIGEST.encode())
    assert payload_digest(payload) == DIGEST


def test_errors_never_quote_the_payload() -> None:
    secret = b'{"critical":{"type":"TOPSECRET-VALUE"}}'
    with pytest.raises(SignatureError) as caught:
        payload_digest(secret)
    assert "TOPSECRET" not in caught.value.message
    with pytest.raises(SignatureError) as caught:
        loads(b"TOPSECRET{", "payload")
    assert "TOPSECRET" not in caught.value.message


@pytest.mark.parametrize(("alias", "uri"), [
    ("custom", "https://cosign.sigstore.dev/attestation/v1"),
    ("slsaprovenance", "https://slsa.dev/provenance/v0.2"),
    ("slsaprovenance02", "https://slsa.dev/provenance/v0.2"),
    ("slsaprovenance1", "https://slsa.dev/provenance/v1"),
    ("spdx", "https://spdx.dev/Document"),
    ("spdxjson", "https://spdx.dev/Document"),
    ("cyclonedx", "https://cyclonedx.org/bom"),
    ("link", "https://in-toto.io/Link/v1"),
    ("vuln", "https://cosign.sigstore.dev/attestation/vuln/v1"),
    ("openvex", "https://openvex.dev/ns"),
])
def test_aliases_expand_as_cosign(alias: str, uri: str) -> None:
    assert expand_predicate_type(alias) == uri


def test_every_alias_of_the_reference_is_known() -> None:
    assert set(PREDICATE_ALIASES) == {"custom", "slsaprovenance", "slsaprovenance02",
                                      "slsaprovenance1", "spdx", "spdxjson", "cyclonedx",
                                      "link", "vuln", "openvex"}


@pytest.mark.parametrize("uri", ["https://example.com/predicate/v1", "urn:example:thing"])
def test_uris_pass_through(uri: str) -> None:
    assert expand_predicate_type(uri) == uri


@pytest.mark.parametrize("bad", ["notreallyslsaprovenance", "", "SPDX", "https://x y"])
def test_anything_else_is_an_invalid_predicate_type(bad: str) -> None:
    with pytest.raises(SignatureError, match="invalid predicate type"):
        expand_predicate_type(bad)


# --- sign_image output against SIGNATURE_SPEC.md, field by field -----------------------------

def signed() -> tuple[FakeRegistry, Reference, str, ec.EllipticCurvePrivateKey, str]:
    registry, repo = FakeRegistry(), parse("registry.test/acme/provider:v1")
    digest = image(registry, repo)
    key = ec.generate_private_key(ec.SECP256R1())  # "Implementations must support ECDSA-P256"
    return registry, repo, digest, key, sign_image(registry, repo, digest, key)  # type: ignore[arg-type]


def test_storage_tag_based_discovery() -> None:
    registry, repo, digest, _, ref = signed()
    # "Replace the : character with a -" and "Append the .sig suffix"; same repository.
    tag = digest.replace(":", "-") + ".sig"
    manifest = registry.get_manifest(repo, tag)
    assert ref == f"registry.test/acme/provider:{tag}@{manifest.digest}"


def test_object_type_is_one_oci_image_manifest() -> None:
    registry, repo, digest, _, _ = signed()
    data = registry.get_manifest(repo, digest.replace(":", "-") + ".sig").data
    assert data["schemaVersion"] == 2
    assert data["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    config = data["config"]
    assert config["mediaType"] == "application/vnd.oci.image.config.v1+json"
    blob = registry.blobs[config["digest"]]
    assert len(blob) == config["size"] and json.loads(blob)["rootfs"]["diff_ids"] == [
        layer["digest"] for layer in data["layers"]]


def test_payload_layer_signature_annotation_and_scheme() -> None:
    registry, repo, digest, key, _ = signed()
    (layer,) = registry.get_manifest(repo, digest.replace(":", "-") + ".sig").data["layers"]
    # Payload and mediaType: the payload is a blob referenced by digest, size and mediaType.
    assert layer["mediaType"] == "application/vnd.dev.cosign.simplesigning.v1+json"
    payload = registry.blobs[layer["digest"]]
    assert layer["digest"] == "sha256:" + hashlib.sha256(payload).hexdigest()
    assert layer["size"] == len(payload)
    # Signature: base64, in the annotation dev.cosignproject.cosign/signature, of the layer.
    assert set(layer["annotations"]) == {"dev.cosignproject.cosign/signature"}
    signature = base64.b64decode(layer["annotations"]["dev.cosignproject.cosign/signature"],
                                 validate=True)
    # Signature schemes: ECDSA-P256 with SHA-256, over the payload bytes (ASN.1 DER).
    assert signature[0] == 0x30
    assert verifies(load_public_key(public_pem(key)), signature, payload, "sha256")


def test_simple_signing_payload_fields() -> None:
    registry, repo, digest, _, _ = signed()
    (layer,) = registry.get_manifest(repo, digest.replace(":", "-") + ".sig").data["layers"]
    payload = json.loads(registry.blobs[layer["digest"]])
    assert list(payload) == ["critical", "optional"]
    critical = payload["critical"]
    assert list(critical) == ["identity", "image", "type"]
    assert critical["type"] == "cosign container image signature"
    assert critical["image"] == {"docker-manifest-digest": digest}  # MUST contain the digest
    assert critical["identity"] == {"docker-reference": "registry.test/acme/provider"}
    assert payload["optional"] is None  # no user claims: Go's nil map


def test_optional_claims_and_appending_a_second_signature() -> None:
    registry, repo, digest, key, _ = signed()
    other = ec.generate_private_key(ec.SECP256R1())
    sign_image(registry, repo, digest, other, {"GIT_HASH": "abc", "env": "prod"})
    tag = digest.replace(":", "-") + ".sig"
    layers = registry.get_manifest(repo, tag).data["layers"]
    assert len(layers) == 2  # "Multiple signatures can be embedded in one image manifest"
    optional = json.loads(registry.blobs[layers[1]["digest"]])["optional"]
    assert optional == {"GIT_HASH": "abc", "env": "prod"}
    first = base64.b64decode(layers[0]["annotations"]["dev.cosignproject.cosign/signature"])
    assert verifies(load_public_key(public_pem(key)), first,
                    registry.blobs[layers[0]["digest"]], "sha256")


def test_signing_twice_with_a_deterministic_key_adds_no_duplicate_layer() -> None:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    registry, repo = FakeRegistry(), parse("registry.test/acme/provider:v1")
    digest = image(registry, repo)
    key = ed25519.Ed25519PrivateKey.generate()
    sign_image(registry, repo, digest, key)
    sign_image(registry, repo, digest, key)
    assert len(registry.get_manifest(repo, digest.replace(":", "-") + ".sig").data["layers"]) == 1
