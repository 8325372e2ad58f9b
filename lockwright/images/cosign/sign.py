"""Sign and attest images in cosign's classic layout, as ``cosign sign --key`` does.

A signature is a simple-signing payload blob, listed as a layer of the image manifest at
tag ``sha256-<hex>.sig`` with its base64 signature in the layer annotation
``dev.cosignproject.cosign/signature``. Signing again appends a layer to that manifest
(cosign's behaviour: every signature stays valid); an identical layer is not repeated.
Attestations go the same way to ``sha256-<hex>.att`` as DSSE envelopes.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import structlog

from lockwright.images.cosign.crypto import pae, sign
from lockwright.images.cosign.intoto import expand_predicate_type
from lockwright.images.cosign.keys import PrivateKey
from lockwright.images.cosign.model import (
    DSSE_ENVELOPE,
    INTOTO_PAYLOAD,
    SIGNATURE_ANNOTATION,
    SIMPLE_SIGNING,
    SignatureError,
)
from lockwright.images.cosign.payload import build_payload, go_json
from lockwright.images.cosign.registry import layers_of, optional_manifest, push_bytes, tag_for
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import Reference
from lockwright.oci.types import OCI_MANIFEST

log = structlog.get_logger(__name__)

OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
ZERO_TIME = "0001-01-01T00:00:00Z"  # what go-containerregistry writes for an unset time
STATEMENT_V01 = "https://in-toto.io/Statement/v0.1"


def sign_image(client: RegistryClient, repository: Reference, digest: str,
               private_key: PrivateKey, annotations: Mapping[str, str] | None = None, *,
               hash_algorithm: str = "sha256") -> str:
    """Sign ``repository@digest`` and push the signature; return its reference.

    Args:
        annotations: claims for the payload's ``optional`` section (cosign's ``-a``).
        hash_algorithm: the hash signed with; sha256 is what ``cosign verify --key`` and
            ImageConfig authorities expect unless told otherwise.

    Returns:
        ``<repository>:sha256-<hex>.sig@<signature manifest digest>``.
    """
    payload = build_payload(repository, digest, annotations)
    signature = base64.b64encode(sign(private_key, payload, hash_algorithm)).decode()
    layer = push_bytes(client, repository, payload, SIMPLE_SIGNING,
                       {SIGNATURE_ANNOTATION: signature})
    return _append(client, repository, tag_for(digest, ".sig"), layer)


def attest_image(client: RegistryClient, repository: Reference, digest: str,
                 private_key: PrivateKey, predicate_type: str, predicate: Any, *,
                 hash_algorithm: str = "sha256") -> str:
    """Attest ``repository@digest`` as ``cosign attest --key`` does; return the reference.

    ``predicate_type`` may be a cosign alias; the statement gets its full URI.
    """
    uri = expand_predicate_type(predicate_type)
    statement = go_json({"_type": STATEMENT_V01, "predicateType": uri,
                         "subject": [{"name": repository.source,
                                      "digest": {"sha256": digest.split(":", 1)[1]}}],
                         "predicate": predicate})
    signature = sign(private_key, pae(INTOTO_PAYLOAD, statement), hash_algorithm)
    envelope = go_json({"payloadType": INTOTO_PAYLOAD, "payload": _b64(statement),
                        "signatures": [{"keyid": "", "sig": _b64(signature)}]})
    layer = push_bytes(client, repository, envelope, DSSE_ENVELOPE, {"predicateType": uri})
    return _append(client, repository, tag_for(digest, ".att"), layer)


def _append(client: RegistryClient, repository: Reference, tag: str,
            layer: dict[str, Any]) -> str:
    layers = _existing_layers(client, repository, tag)
    if layer not in layers:
        layers.append(layer)
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "config": push_bytes(client, repository, _config(layers), OCI_CONFIG),
                "layers": layers}
    pushed = client.push_manifest(repository, go_json(manifest), OCI_MANIFEST, tag)
    log.info("cosign.pushed", repository=repository.source, tag=tag, layers=len(layers))
    return f"{repository.source}:{tag}@{pushed}"


def _existing_layers(client: RegistryClient, repository: Reference,
                     tag: str) -> list[dict[str, Any]]:
    manifest = optional_manifest(client, repository, tag)
    if manifest is None:
        return []
    layers_of(manifest, tag)  # refuses a manifest that is not an image manifest
    raw = manifest.data.get("layers")
    if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
        raise SignatureError(f"cannot append to manifest {tag}: its layers are malformed")
    return list(raw)


def _config(layers: list[dict[str, Any]]) -> bytes:
    # go-containerregistry's config of an image built by appending layers to an empty one;
    # the payloads are uncompressed, so each diff_id is the layer digest.
    return go_json({"architecture": "", "created": ZERO_TIME,
                    "history": [{"created": ZERO_TIME} for _ in layers], "os": "",
                    "rootfs": {"type": "layers", "diff_ids": [x["digest"] for x in layers]},
                    "config": {}})


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
