"""Push built packages (image tarballs) to a registry.

One tarball becomes one image whose manifest carries the layer annotations
(``io.crossplane.xpkg: base`` and friends) that tarballs cannot hold. Several tarballs
become one OCI image index with one manifest per platform; their base layers must be the
same blob, since a package's content must not depend on the platform.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import structlog

from lockwright.errors import InvalidPackage
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import Reference, parse
from lockwright.oci.types import OCI_INDEX, OCI_MANIFEST

log = structlog.get_logger(__name__)


class LayerLike(Protocol):
    """A layer of an image tarball (``lockwright.xpkg.tarball.Layer``)."""

    @property
    def digest(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def annotation(self) -> str | None: ...

    def open(self) -> IO[bytes]: ...


class TarballLike(Protocol):
    """What :func:`lockwright.xpkg.tarball.read_image_tarball` returns, as push needs it."""

    @property
    def config_bytes(self) -> bytes: ...

    @property
    def config_digest(self) -> str: ...

    @property
    def platform(self) -> Any: ...

    @property
    def layers(self) -> Sequence[LayerLike]: ...

    def manifest(self, annotations: bool = True) -> dict[str, Any]: ...

    def close(self) -> None: ...


def manifest_bytes(tarball: TarballLike) -> bytes:
    """The exact manifest bytes pushed for ``tarball`` (so its digest is predictable)."""
    serialise = getattr(tarball, "manifest_bytes", None)
    if callable(serialise):
        return bytes(serialise(annotations=True))
    return json.dumps(tarball.manifest(annotations=True), separators=(",", ":")).encode()


def manifest_digest(tarball: TarballLike) -> str:
    """The digest the pushed manifest of ``tarball`` will have."""
    return "sha256:" + hashlib.sha256(manifest_bytes(tarball)).hexdigest()


def _platform(tarball: TarballLike) -> dict[str, str]:
    platform = tarball.platform
    if isinstance(platform, str):
        os_name, _, arch = platform.partition("/")
        return {"os": os_name, "architecture": arch or "amd64"}
    if isinstance(platform, dict):
        return {str(k): str(v) for k, v in platform.items()}
    if platform is None:  # a plain package names no platform; the fetcher's default fits
        return {"os": "linux", "architecture": "amd64"}
    found = {"os": str(platform.os), "architecture": str(platform.architecture)}
    variant = getattr(platform, "variant", None)
    return found | ({"variant": str(variant)} if variant else {})


def _base_digest(tarball: TarballLike) -> str | None:
    return next((layer.digest for layer in tarball.layers if layer.annotation == "base"), None)


def _push_blobs(client: RegistryClient, ref: Reference, tarball: TarballLike,
                scratch: Path) -> None:
    config = scratch / "config.json"
    config.write_bytes(tarball.config_bytes)
    client.push_blob(ref, config, tarball.config_digest, len(tarball.config_bytes))
    for layer in tarball.layers:
        path = scratch / layer.digest.replace(":", "-")
        with layer.open() as src, path.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1024 * 1024)
        client.push_blob(ref, path, layer.digest, layer.size)
        path.unlink()


def _push_image(client: RegistryClient, ref: Reference, tarball: TarballLike,
                identifier: str | None) -> tuple[str, int, str]:
    with tempfile.TemporaryDirectory(prefix="lockwright-push-") as scratch:
        _push_blobs(client, ref, tarball, Path(scratch))
    body = manifest_bytes(tarball)
    media_type = str(tarball.manifest(annotations=True).get("mediaType") or OCI_MANIFEST)
    digest = client.push_manifest(ref, body, media_type, identifier)
    return digest, len(body), media_type


def check_platforms(tarballs: Sequence[TarballLike]) -> None:
    """Refuse a multi-platform push whose base layers differ or whose platforms repeat."""
    bases = {_base_digest(t) for t in tarballs}
    if len(bases) != 1 or None in bases:
        raise InvalidPackage("the base layers differ across platforms; a package's "
                             "package.yaml must be identical on every platform")
    platforms = [tuple(sorted(_platform(t).items())) for t in tarballs]
    if len(set(platforms)) != len(platforms):
        raise InvalidPackage("two tarballs are for the same platform")


def push_package(client: RegistryClient, ref: str, tarballs: Sequence[TarballLike]) -> str:
    """Push one image (one tarball) or one image index (several) to ``ref``.

    Returns:
        The digest of the manifest (or index) that ``ref``'s tag now names.

    Raises:
        InvalidPackage: the tarballs disagree on the base layer, or repeat a platform.
        Unauthorized, RegistryUnavailable: as the registry answers.
    """
    target = parse(ref)
    if not tarballs:
        raise InvalidPackage("nothing to push")
    if len(tarballs) == 1:
        digest, _, _ = _push_image(client, target, tarballs[0], None)
    else:
        check_platforms(tarballs)
        entries = []
        for tarball in tarballs:
            image_digest, size, media_type = _push_image(client, target, tarball,
                                                         manifest_digest(tarball))
            entries.append({"mediaType": media_type, "digest": image_digest, "size": size,
                            "platform": _platform(tarball)})
        index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}
        body = json.dumps(index, separators=(",", ":")).encode()
        digest = client.push_manifest(target, body, OCI_INDEX)
    log.info("push.pushed", ref=ref, digest=digest, images=len(tarballs))
    return digest
