"""Where cosign keeps signatures in a registry, and bounded reads and writes there.

- ``sha256-<hex>.sig``: an image manifest whose layers are simple-signing payloads.
- ``sha256-<hex>.att``: the same with DSSE envelopes (attestations).
- Referrers (OCI 1.1): ``GET /v2/<name>/referrers/<digest>``, or, for registries without
  that API (distribution 2.8 among them), the index at tag ``sha256-<hex>``.

Absent things (404) are empty results; registry outages and refused credentials propagate
as the client raised them, since they heal on their own; anything malformed becomes a
:class:`SignatureError` naming what was read, never its content.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
from pathlib import Path
from typing import Any

import requests

from lockwright.errors import InvalidPackage, PackageNotFound
from lockwright.images.cosign.model import MAX_MANIFEST_BYTES, SignatureError
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import Reference
from lockwright.oci.types import OCI_INDEX, Call, Descriptor, Manifest

# distribution 2.8 answers 404 for the unknown route; others have answered 400 or 405.
NO_REFERRERS_API = frozenset({400, 404, 405})


def tag_for(digest: str, suffix: str = "") -> str:
    """``sha256:<hex>`` as cosign's tag: ``sha256-<hex>`` plus ``suffix`` (``.sig``…)."""
    return digest.replace(":", "-", 1) + suffix


def optional_manifest(client: RegistryClient, repository: Reference,
                      identifier: str) -> Manifest | None:
    """The manifest at ``identifier`` (tag or digest), or ``None`` when there is none.

    Raises:
        SignatureError: it is malformed or over :data:`MAX_MANIFEST_BYTES`.
    """
    try:
        manifest = client.get_manifest(repository, identifier)
    except PackageNotFound:
        return None
    except InvalidPackage as exc:
        raise SignatureError(f"manifest {identifier}: {exc.message}") from None
    if len(manifest.body) > MAX_MANIFEST_BYTES:
        raise SignatureError(f"manifest {identifier} is over the limit of "
                             f"{MAX_MANIFEST_BYTES} bytes")
    return manifest


def layers_of(manifest: Manifest, identifier: str) -> list[Descriptor]:
    """The layers of an image manifest, as a :class:`SignatureError` when it has none."""
    try:
        return manifest.layers()
    except InvalidPackage as exc:
        raise SignatureError(f"manifest {identifier}: {exc.message}") from None


def read_blob(client: RegistryClient, repository: Reference, layer: Descriptor,
              limit: int) -> bytes:
    """The bytes of ``layer``, refused over ``limit`` and verified against its digest.

    Raises:
        SignatureError: too large, missing, or not matching its digest.
    """
    if layer.size > limit:
        raise SignatureError(f"blob {layer.digest} is {layer.size} bytes, over the limit "
                             f"of {limit}")
    out = io.BytesIO()
    try:
        client.download_blob(repository, layer.digest, out, limit)
    except PackageNotFound:
        raise SignatureError(f"blob {layer.digest} is missing from the registry") from None
    except InvalidPackage as exc:
        raise SignatureError(exc.message) from None
    return out.getvalue()


def referrers(client: RegistryClient, repository: Reference, digest: str) -> list[dict[str, Any]]:
    """The descriptors of the manifests that refer to ``digest``: from the referrers API,
    else from the tag-schema index ``sha256-<hex>``."""
    index = _referrers_api(client, repository, digest)
    if index is None:
        index = optional_manifest(client, repository, tag_for(digest))
    if index is None:
        return []
    if not index.is_index:
        raise SignatureError(f"referrers of {digest} are not an image index")
    listed = index.data.get("manifests")
    return [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []


def _referrers_api(client: RegistryClient, repository: Reference, digest: str) -> Manifest | None:
    call = Call("GET", f"{client.base_url(repository)}/referrers/{digest}", repository,
                headers={"Accept": OCI_INDEX}, stream=True)
    with client.send(call, allow=NO_REFERRERS_API) as resp:
        if resp.status_code != 200:
            return None
        body = _bounded(resp, MAX_MANIFEST_BYTES)
    try:
        return Manifest.from_bytes(body, OCI_INDEX)
    except InvalidPackage as exc:
        raise SignatureError(f"referrers of {digest}: {exc.message}") from None


def _bounded(resp: requests.Response, limit: int) -> bytes:
    parts, total = [], 0
    for chunk in resp.iter_content(64 * 1024):
        total += len(chunk)
        if total > limit:
            raise SignatureError(f"referrers response is over the limit of {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


def push_bytes(client: RegistryClient, repository: Reference, data: bytes, media_type: str,
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """Upload ``data`` as a blob; return its descriptor (cosign's field order)."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with tempfile.TemporaryDirectory(prefix="lockwright-cosign-") as scratch:
        path = Path(scratch) / "blob"
        path.write_bytes(data)
        client.push_blob(repository, path, digest, len(data))
    descriptor: dict[str, Any] = {"mediaType": media_type, "size": len(data), "digest": digest}
    if annotations:
        descriptor["annotations"] = dict(sorted(annotations.items()))
    return descriptor
