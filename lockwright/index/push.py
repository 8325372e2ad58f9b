"""Push an index as an OCI artifact: a config of :data:`CONFIG_MEDIA_TYPE` and one layer of
:data:`MEDIA_TYPE`, the index document. Signing it is ``lockwright xpkg sign REF``, over
the manifest digest as for packages."""

from __future__ import annotations

import json

from lockwright.images.cosign.registry import push_bytes
from lockwright.index.model import CONFIG_MEDIA_TYPE, MEDIA_TYPE, PackageIndex
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import parse
from lockwright.oci.types import OCI_MANIFEST

TITLE = "org.opencontainers.image.title"


def manifest(config: dict[str, object], layer: dict[str, object]) -> bytes:
    """The artifact's manifest, in stable bytes (so an unchanged index keeps its digest)."""
    doc = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": MEDIA_TYPE,
           "config": config, "layers": [layer]}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def push_index(client: RegistryClient, ref: str, data: bytes) -> str:
    """Push the index document ``data`` to ``ref``; return the manifest digest.

    Raises:
        InvalidPackage: ``data`` is not a package index (nothing is pushed).
        Unauthorized, RegistryUnavailable: the registry refused or could not be reached.
    """
    count = len(PackageIndex.from_bytes(data, ref).entries)
    reference = parse(ref)
    layer = push_bytes(client, reference, data, MEDIA_TYPE, {TITLE: "index.json"})
    config = push_bytes(client, reference, json.dumps({"packages": count}).encode(),
                        CONFIG_MEDIA_TYPE)
    return client.push_manifest(reference, manifest(config, layer), OCI_MANIFEST)
