"""Signing and verifying against the real registry (distribution 2.8, no referrers API)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import ec

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
from lockwright.images.cosign.model import SIMPLE_SIGNING
from lockwright.images.cosign.registry import tag_for
from lockwright.oci.auth import DockerAuths
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import Reference, parse
from lockwright.oci.types import OCI_MANIFEST
from tests.helpers import unique
from tests.oci_images import PROVIDER_YAML, Layer, package_layer, push_blob, push_image
from tests.unit.test_cosign_builders import attach_bundle, dsse_bundle, message_bundle, statement

pytestmark = pytest.mark.registry
VECTORS = Path(__file__).resolve().parents[1] / "fixtures" / "cosign" / "containers-image"
SLSA = "https://slsa.dev/provenance/v0.2"


@dataclass
class Pushed:
    client: RegistryClient
    repo: Reference
    digest: str
    key: ec.EllipticCurvePrivateKey
    host: str
    storage: Path

    def authority(self, name: str = "a", key: object = None, **kw: object) -> KeyAuthority:
        return KeyAuthority(name, public_pem(key or self.key), **kw)  # type: ignore[arg-type]

    def verify(self, *authorities: KeyAuthority) -> Verified:
        return verify_image(self.client, self.repo, self.digest, authorities or [self.authority()])

    def refused(self, *authorities: KeyAuthority) -> str:
        with pytest.raises(SignatureError) as caught:
            self.verify(*authorities)
        return caught.value.message

    def sign(self, digest: str = "") -> str:
        return sign_image(self.client, self.repo, digest or self.digest, self.key)

    def push_other(self, tag: str = "v2") -> str:
        yaml = PROVIDER_YAML.replace("provider-test", "provider-other")
        return push_image(self.host, self.repo.repository, tag, [Layer(package_layer(yaml))])

    def sig_manifest(self, digest: str = "") -> dict[str, object]:
        return self.client.get_manifest(self.repo, tag_for(digest or self.digest, ".sig")).data

    def put_sig_manifest(self, data: dict[str, object]) -> None:
        self.client.push_manifest(self.repo, json.dumps(data).encode(), OCI_MANIFEST,
                                  tag_for(self.digest, ".sig"))


@pytest.fixture
def pushed(registry) -> Pushed:  # type: ignore[no-untyped-def]
    repo = f"cosign/{unique('pkg')}"
    digest = push_image(registry.host, repo, "v1", [Layer(package_layer(PROVIDER_YAML))])
    client = RegistryClient(insecure=[registry.host], auths=DockerAuths())
    return Pushed(client, parse(f"{registry.host}/{repo}:v1"), digest,
                  ec.generate_private_key(ec.SECP256R1()), registry.host, registry.storage)


def other_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def test_signed_package_verifies(pushed: Pushed) -> None:
    ref = pushed.sign()
    tag = tag_for(pushed.digest, ".sig")
    assert ref.startswith(f"{pushed.repo.source}:{tag}@sha256:")
    assert pushed.verify() == Verified("a", f"signature tag {tag}")


def test_wrong_key(pushed: Pushed) -> None:
    pushed.sign()
    assert pushed.refused(pushed.authority(key=other_key())) == (
        'authority "a": signature does not verify with the public key')


def test_no_signature(pushed: Pushed) -> None:
    assert pushed.refused() == (f'authority "a": no signatures found (looked for tag '
                                f"{tag_for(pushed.digest, '.sig')} and sigstore bundles)")


def test_signature_copied_onto_another_digests_tag(pushed: Pushed) -> None:
    other = pushed.push_other()
    pushed.sign(other)
    pushed.put_sig_manifest(pushed.sig_manifest(other))
    assert pushed.refused() == f'authority "a": payload is for {other}, not {pushed.digest}'


def test_tampered_payload_pushed_under_the_old_signature(pushed: Pushed) -> None:
    pushed.sign()
    manifest = pushed.sig_manifest()
    (layer,) = manifest["layers"]  # type: ignore[misc]
    tampered = json.dumps({"critical": {"identity": {"docker-reference": pushed.repo.source},
                                        "image": {"docker-manifest-digest": pushed.digest},
                                        "type": "cosign container image signature"},
                           "optional": {"tampered": "yes"}}).encode()
    layer = dict(layer, digest=push_blob(pushed.host, pushed.repo.repository, tampered),
                 size=len(tampered))
    pushed.put_sig_manifest(dict(manifest, layers=[layer]))
    assert pushed.refused() == 'authority "a": signature does not verify with the public key'


def test_payload_blob_corrupted_in_storage(pushed: Pushed) -> None:
    pushed.sign()
    (layer,) = pushed.sig_manifest()["layers"]  # type: ignore[misc]
    hex_digest = layer["digest"].split(":")[1]
    data = (pushed.storage / "docker/registry/v2/blobs/sha256" / hex_digest[:2] / hex_digest
            / "data")
    data.write_bytes(data.read_bytes().replace(b"cosign container image", b"cosign container IMAGE"))
    assert f"blob {layer['digest']} does not match its digest" in pushed.refused()


def test_a_signature_cosign_made_verifies_from_the_registry(pushed: Pushed) -> None:
    stored = (VECTORS / "dir-img-cosign-valid" / "signature-1").read_bytes()
    layer = json.loads(stored[len(b"\0sigstore-json\n"):])
    payload = base64.b64decode(layer["payload"])
    digest = json.loads(payload)["critical"]["image"]["docker-manifest-digest"]
    config = push_blob(pushed.host, pushed.repo.repository, b"{}")
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": 2,
                           "digest": config},
                "layers": [{"mediaType": SIMPLE_SIGNING, "size": len(payload),
                            "digest": push_blob(pushed.host, pushed.repo.repository, payload),
                            "annotations": layer["annotations"]}]}
    pushed.client.push_manifest(pushed.repo, json.dumps(manifest).encode(), OCI_MANIFEST,
                                tag_for(digest, ".sig"))
    cosign = KeyAuthority("cosign", (VECTORS / "cosign.pub").read_bytes())
    assert verify_image(pushed.client, pushed.repo, digest, [cosign]).authority == "cosign"


# --- bundles through the referrers tag schema --------------------------------------------------

def test_the_registry_has_no_referrers_api(pushed: Pushed) -> None:
    url = f"http://{pushed.host}/v2/{pushed.repo.repository}/referrers/{pushed.digest}"
    assert requests.get(url, timeout=10).status_code == 404


def test_message_signature_bundle_via_the_tag_fallback(pushed: Pushed) -> None:
    body = pushed.client.get_manifest(pushed.repo, pushed.digest).body
    referrer = attach_bundle(pushed.client, pushed.repo, pushed.digest,
                             message_bundle(pushed.key, body))
    assert pushed.verify() == Verified("a", f"sigstore bundle {referrer}")


def test_dsse_bundle_via_the_tag_fallback(pushed: Pushed) -> None:
    attach_bundle(pushed.client, pushed.repo, pushed.digest,
                  dsse_bundle(other_key(), statement(pushed.digest)))
    assert "signature does not verify" in pushed.refused()
    referrer = attach_bundle(pushed.client, pushed.repo, pushed.digest,
                             dsse_bundle(pushed.key, statement(pushed.digest)))
    assert pushed.verify().evidence == f"sigstore bundle {referrer}"


def test_bundle_for_another_digest(pushed: Pushed) -> None:
    other = pushed.push_other()
    attach_bundle(pushed.client, pushed.repo, pushed.digest,
                  dsse_bundle(pushed.key, statement(other)))
    assert pushed.refused() == f'authority "a": payload is for {other}, not {pushed.digest}'


# --- attestations ------------------------------------------------------------------------------

def test_attestation_present_and_absent(pushed: Pushed) -> None:
    wants = pushed.authority(attestations=(Attestation("provenance", "slsaprovenance"),))
    assert pushed.refused(wants) == (
        f'authority "a": no attestation of predicate type {SLSA} (looked for tag '
        f"{tag_for(pushed.digest, '.att')} and sigstore bundles; found none)")
    attest_image(pushed.client, pushed.repo, pushed.digest, pushed.key, "spdxjson", {})
    assert pushed.refused(wants) == (f'authority "a": no attestation of predicate type {SLSA} '
                                     "(1 checked)")
    attest_image(pushed.client, pushed.repo, pushed.digest, pushed.key, "slsaprovenance",
                 {"builder": {"id": "https://example.com/builder"}})
    assert pushed.verify(wants) == Verified("a", f"attestation {SLSA}")
    stranger = pushed.authority("b", key=other_key(),
                                attestations=(Attestation("provenance", SLSA),))
    assert "2 checked: signature does not verify" in pushed.refused(stranger)
