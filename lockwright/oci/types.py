"""OCI data: media types, descriptors and manifests as read from a registry."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from lockwright.errors import InvalidPackage
from lockwright.oci.reference import Reference, is_digest

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES = (OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST)
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_LIST})
XPKG_ANNOTATION = "io.crossplane.xpkg"
BASE = "base"


@dataclass
class Call:
    """One HTTP request to a registry on behalf of ``ref``'s repository."""

    method: str
    url: str
    ref: Reference
    push: bool = False
    headers: dict[str, str] | None = None
    data: Any = None
    stream: bool = False


@dataclass(frozen=True)
class Descriptor:
    """A content descriptor (a layer, a config, or a manifest inside an index)."""

    media_type: str
    digest: str
    size: int
    annotations: dict[str, str] = field(default_factory=dict)
    platform: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> Descriptor:
        """Validate one descriptor object; ``where`` names it in errors."""
        if not isinstance(raw, dict):
            raise InvalidPackage(f"{where}: descriptor is not an object")
        digest, size = raw.get("digest"), raw.get("size")
        if not isinstance(digest, str) or not is_digest(digest):
            raise InvalidPackage(f"{where}: descriptor digest {str(digest)[:80]!r} is not sha256")
        if not isinstance(size, int) or size < 0:
            raise InvalidPackage(f"{where}: descriptor size is not a non-negative integer")
        annotations = raw.get("annotations") or {}
        platform = raw.get("platform")
        return cls(str(raw.get("mediaType", "")), digest, size,
                   dict(annotations) if isinstance(annotations, dict) else {},
                   platform if isinstance(platform, dict) else None)


@dataclass(frozen=True)
class Manifest:
    """A manifest or index: its exact bytes, their digest, and the parsed document."""

    media_type: str
    digest: str
    body: bytes
    data: dict[str, Any]

    @classmethod
    def from_bytes(cls, body: bytes, content_type: str = "") -> Manifest:
        """Parse and classify ``body``.

        Raises:
            InvalidPackage: not JSON, not schema version 2, or not an OCI/Docker image
                manifest or index.
        """
        try:
            data = json.loads(body)
        except ValueError:
            raise InvalidPackage("manifest is not valid JSON") from None
        if not isinstance(data, dict) or data.get("schemaVersion") != 2:
            raise InvalidPackage("manifest is not an OCI or Docker schema 2 manifest")
        media_type = _media_type(data, content_type.split(";")[0].strip())
        return cls(media_type, "sha256:" + hashlib.sha256(body).hexdigest(), body, data)

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_TYPES

    def manifests(self) -> list[Descriptor]:
        """The manifests an index lists."""
        raw = self.data.get("manifests")
        if not isinstance(raw, list) or not raw:
            raise InvalidPackage("image index lists no manifests")
        return [Descriptor.from_dict(m, f"index entry {i}") for i, m in enumerate(raw)]

    def layers(self) -> list[Descriptor]:
        """The layers an image manifest lists, bottom first."""
        raw = self.data.get("layers")
        if not isinstance(raw, list) or not raw:
            raise InvalidPackage("image manifest lists no layers")
        return [Descriptor.from_dict(m, f"layer {i}") for i, m in enumerate(raw)]

    def config(self) -> Descriptor:
        """The image config descriptor."""
        return Descriptor.from_dict(self.data.get("config"), "config")


def _media_type(data: dict[str, Any], header: str) -> str:
    declared = data.get("mediaType")
    if isinstance(declared, str) and declared:
        if declared not in MANIFEST_TYPES:
            raise InvalidPackage(f"unsupported manifest media type {declared[:100]!r}: "
                                 "not an OCI or Docker image manifest or index")
        return declared
    if header in MANIFEST_TYPES:
        return header
    # OCI allows mediaType to be absent; the shape then decides.
    if "manifests" in data:
        return OCI_INDEX
    if "layers" in data and "config" in data:
        return OCI_MANIFEST
    raise InvalidPackage("manifest is neither an OCI/Docker image manifest nor an index")
