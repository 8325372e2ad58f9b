"""Builders shared by the cosign tests: an in-memory registry and sigstore bundles.

The in-memory registry stands in for a real one where a unit test needs the referrers API
(our registry has none) or wants no server; the integration tests use the real registry.
The bundle builders write what cosign v3 attaches: a v0.3 bundle in a referrer manifest,
listed by the referrers API or the ``sha256-<hex>`` tag index.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tempfile
from pathlib import Path
from typing import IO, Any

import requests

from lockwright.errors import InvalidPackage, PackageNotFound
from lockwright.images.cosign import PrivateKey
from lockwright.images.cosign.crypto import pae, sign
from lockwright.images.cosign.model import (
    BUNDLE_V03,
    COSIGN_SIGN_PREDICATE,
    INTOTO_PAYLOAD,
    OCI_EMPTY,
)
from lockwright.images.cosign.registry import tag_for
from lockwright.oci.reference import Reference
from lockwright.oci.types import OCI_INDEX, OCI_MANIFEST, Call, Manifest

OCI_CONFIG = "application/vnd.oci.image.config.v1+json"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class FakeRegistry:
    """The calls lockwright.images.cosign makes on a RegistryClient, answered from dicts."""

    def __init__(self, referrers_api: bool = False) -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[str, bytes] = {}  # by digest and by tag
        self.referrers_api = referrers_api
        self.requests: list[str] = []

    def base_url(self, ref: Reference) -> str:
        return f"http://{ref.registry}/v2/{ref.repository}"

    def resolve(self, ref: Reference) -> str:
        return ref.digest or digest_of(self.manifests[ref.identifier])

    def get_manifest(self, ref: Reference, identifier: str | None = None) -> Manifest:
        ident = identifier or ref.identifier
        self.requests.append(f"manifest {ident}")
        if ident not in self.manifests:
            raise PackageNotFound(f"{ident}: MANIFEST_UNKNOWN")
        return Manifest.from_bytes(self.manifests[ident])

    def download_blob(self, ref: Reference, digest: str, out: IO[bytes], max_bytes: int) -> int:
        self.requests.append(f"blob {digest}")
        data = self.blobs.get(digest)
        if data is None:
            raise PackageNotFound(f"blob {digest}: BLOB_UNKNOWN")
        if len(data) > max_bytes:
            raise InvalidPackage(f"blob {digest} is over the limit of {max_bytes} bytes")
        if digest_of(data) != digest:
            raise InvalidPackage(f"blob {digest} does not match its digest")
        out.write(data)
        return len(data)

    def push_blob(self, ref: Reference, path: Path, digest: str, size: int) -> None:
        self.blobs[digest] = path.read_bytes()

    def push_manifest(self, ref: Reference, body: bytes, media_type: str,
                      identifier: str | None = None) -> str:
        digest = digest_of(body)
        self.manifests[digest] = body
        self.manifests[identifier or ref.identifier] = body
        return digest

    def send(self, call: Call, allow: frozenset[int] = frozenset()) -> requests.Response:
        self.requests.append(f"{call.method} {call.url}")
        resp = requests.Response()
        resp.status_code, resp._content = 404, b"404 page not found"
        if self.referrers_api and "/referrers/" in call.url:
            subject = call.url.rsplit("/", 1)[1]
            resp.status_code, resp._content = 200, self.referrers_index(subject)
        resp.raw = io.BytesIO(resp._content)
        return resp

    def referrers_index(self, subject: str) -> bytes:
        entries = []
        for digest, body in self.manifests.items():
            data = json.loads(body)
            if digest.startswith("sha256:") and (data.get("subject") or {}).get("digest") == subject:
                entries.append({"mediaType": OCI_MANIFEST, "size": len(body), "digest": digest,
                                "artifactType": data.get("artifactType", "")})
        return json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX,
                           "manifests": entries}).encode()

    def put_blob(self, data: bytes) -> str:
        self.blobs[digest_of(data)] = data
        return digest_of(data)


def image(registry: Any, repository: Reference, text: bytes = b"package") -> str:
    """Push a one-layer image through ``registry`` (fake or real client); return its digest."""
    layer = {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
             "size": len(text), "digest": push_blob(registry, repository, text)}
    config = b'{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "config": {"mediaType": OCI_CONFIG, "size": len(config),
                           "digest": push_blob(registry, repository, config)},
                "layers": [layer]}
    body = json.dumps(manifest).encode()
    return str(registry.push_manifest(repository, body, OCI_MANIFEST, repository.tag))


def push_blob(registry: Any, repository: Reference, data: bytes) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "blob"
        path.write_bytes(data)
        registry.push_blob(repository, path, digest_of(data), len(data))
    return digest_of(data)


def message_bundle(key: PrivateKey, manifest_body: bytes, claimed: str | None = None) -> bytes:
    """A v0.3 bundle with a messageSignature over ``manifest_body``."""
    digest = bytes.fromhex((claimed or digest_of(manifest_body)).split(":", 1)[1])
    return json.dumps({
        "mediaType": BUNDLE_V03,
        "verificationMaterial": {"publicKey": {"hint": "test"}, "tlogEntries": []},
        "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(digest)},
                             "signature": b64(sign(key, manifest_body))},
    }).encode()


def statement(digest: str, predicate_type: str = COSIGN_SIGN_PREDICATE,
              name: str = "repo") -> bytes:
    return json.dumps({"_type": "https://in-toto.io/Statement/v1", "predicateType": predicate_type,
                       "subject": [{"name": name, "digest": {"sha256": digest.split(":")[1]}}],
                       "predicate": {}}).encode()


def envelope(key: PrivateKey, payload: bytes) -> dict[str, Any]:
    """A DSSE envelope over ``payload`` signed by ``key``."""
    return {"payload": b64(payload), "payloadType": INTOTO_PAYLOAD,
            "signatures": [{"sig": b64(sign(key, pae(INTOTO_PAYLOAD, payload))), "keyid": ""}]}


def dsse_bundle(key: PrivateKey, payload: bytes) -> bytes:
    """A v0.3 bundle holding a DSSE envelope over ``payload``, as cosign v3 signs images."""
    return json.dumps({"mediaType": BUNDLE_V03,
                       "verificationMaterial": {"publicKey": {"hint": "test"},
                                                "tlogEntries": []},
                       "dsseEnvelope": envelope(key, payload)}).encode()


def attach_bundle(registry: Any, repository: Reference, digest: str, bundle: bytes,
                  tag_index: bool = True) -> str:
    """Attach ``bundle`` to ``digest`` as cosign does; return the referrer manifest digest.

    With ``tag_index`` the ``sha256-<hex>`` index (the referrers tag schema) lists it too,
    keeping what it listed before.
    """
    subject = registry.get_manifest(repository, digest)
    layer = {"mediaType": BUNDLE_V03, "size": len(bundle),
             "digest": push_blob(registry, repository, bundle)}
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": BUNDLE_V03,
                "config": {"mediaType": OCI_EMPTY, "size": 2,
                           "digest": push_blob(registry, repository, b"{}")},
                "layers": [layer],
                "subject": {"mediaType": subject.media_type, "size": len(subject.body),
                            "digest": digest}}
    body = json.dumps(manifest).encode()
    referrer = registry.push_manifest(repository, body, OCI_MANIFEST, digest_of(body))
    if tag_index:
        _list_referrer(registry, repository, digest, referrer, len(body))
    return str(referrer)


def _list_referrer(registry: Any, repository: Reference, digest: str, referrer: str,
                   size: int) -> None:
    tag = tag_for(digest)
    try:
        listed = registry.get_manifest(repository, tag).data["manifests"]
    except PackageNotFound:
        listed = []
    listed.append({"mediaType": OCI_MANIFEST, "size": size, "digest": referrer,
                   "artifactType": BUNDLE_V03})
    index = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": listed})
    registry.push_manifest(repository, index.encode(), OCI_INDEX, tag)


def test_builders_write_bundles_sigstore_models_reads() -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    from lockwright.images.cosign.bundle import parse_bundle

    key = ec.generate_private_key(ec.SECP256R1())
    assert parse_bundle(message_bundle(key, b"{}")).message_signature is not None
    digest = digest_of(b"x")
    parsed = parse_bundle(dsse_bundle(key, statement(digest)))
    assert parsed.dsse_envelope is not None and parsed.dsse_envelope.payload == statement(digest)


def test_fake_registry_attaches_through_the_tag_index() -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    registry = FakeRegistry()
    repo = Reference("registry.test", "acme/pkg", "v1")
    digest = image(registry, repo)
    key = ec.generate_private_key(ec.SECP256R1())
    first = attach_bundle(registry, repo, digest, dsse_bundle(key, statement(digest)))
    second = attach_bundle(registry, repo, digest, message_bundle(key, b"{}"))
    listed = registry.get_manifest(repo, tag_for(digest)).data["manifests"]
    assert [m["digest"] for m in listed] == [first, second]
