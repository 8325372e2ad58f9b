"""Read the package indexes of ``LOCKWRIGHT_PACKAGE_INDEXES``, under the ImageConfig rules.

An index is an OCI artifact and is reached as a package is: its reference is rewritten by
the ImageConfig whose ``spec.rewriteImage`` matches best, pulled with the pull Secret of
the one whose ``spec.registry.authentication`` matches the rewritten reference, and, when
one asks for ``spec.verification.cosign``, its manifest digest is verified before its
content is read. An index that fails verification, or has no signature when one is
required, is refused, naming the index and the ImageConfig; nothing of it is used. The CLI
and the worker use the same :class:`IndexReader`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from lockwright.errors import InvalidPackage, PackageNotFound, VerificationFailed
from lockwright.images import imageconfig, secrets, verification
from lockwright.index.model import CONFIG_MEDIA_TYPE, MEDIA_TYPE, PackageIndex
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import Reference, parse
from lockwright.oci.types import Descriptor, Manifest
from lockwright.settings import Settings

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
MAX_INDEX_BYTES = 256 * 1024 * 1024


@dataclass
class IndexReader:
    """Reads every index the settings name.

    Attributes:
        settings: ``package_indexes``, ``system_namespace``, ``insecure_registries`` and
            ``signature_verification`` are used.
        client: the registry client for indexes no ImageConfig gives a pull Secret for.
        image_configs: every ImageConfig, in list order.
        secret: a Secret of the system namespace by name (pull Secrets, keys).
    """

    settings: Settings
    client: RegistryClient
    image_configs: list[Obj] = field(default_factory=list)
    secret: secrets.SecretReader = lambda _name: None

    def read(self) -> list[PackageIndex]:
        """Every index of the setting, in its order.

        Raises:
            VerificationFailed: an index failed the verification an ImageConfig asks for.
            InvalidPackage: a reference is not an index.
            PackageNotFound, Unauthorized, RegistryUnavailable: as the registry answered.
        """
        return [self.read_one(ref) for ref in self.settings.package_indexes]

    def read_one(self, ref: str) -> PackageIndex:
        """The index at ``ref`` (its entries remember ``ref``)."""
        resolution = imageconfig.resolve(self.image_configs, ref)
        target = parse(resolution.resolved)
        client = self._client(resolution)
        digest = client.resolve(target)
        self._verify(ref, resolution.resolved, client, target, digest)
        data = read_document(client, target.with_digest(digest), ref)
        log.info("index.read", index=ref, resolved=resolution.resolved, digest=digest)
        return PackageIndex.from_bytes(data, source=ref)

    def tag_digest(self, ref: str) -> str:
        """The digest ``ref``'s tag points to now, reached as a package is (rewrite, pull
        Secret); "" when the tag is gone."""
        resolution = imageconfig.resolve(self.image_configs, ref)
        try:
            return self._client(resolution).resolve(parse(resolution.resolved))
        except PackageNotFound:
            return ""

    def _client(self, resolution: imageconfig.Resolution) -> RegistryClient:
        if not resolution.pull_secret:
            return self.client
        return secrets.registry_client(self.secret, self.settings.system_namespace,
                                       [resolution.pull_secret],
                                       self.settings.insecure_registries)

    def _verify(self, ref: str, resolved: str, client: RegistryClient, target: Reference,
                digest: str) -> None:
        try:
            plan = verification.policy(self.image_configs, resolved)
        except VerificationFailed as exc:  # the message names the ImageConfig
            raise VerificationFailed(refused(ref, resolved, digest, exc.message)) from None
        if plan is None:
            return
        if not self.settings.signature_verification:
            log.warning("index.unverified", index=ref, image_config=plan.image_config)
            return
        try:
            secrets.verified(plan, self.secret, self.settings.system_namespace, client,
                             target, digest)
        except VerificationFailed as exc:
            raise VerificationFailed(refused(
                ref, resolved, digest, f'ImageConfig "{plan.image_config}" requires a valid '
                f"signature: {exc.message}")) from None


def refused(ref: str, resolved: str, digest: str, reason: str) -> str:
    """The message of an index refused by verification; ``reason`` names the ImageConfig."""
    shown = ref if resolved == ref else f"{ref} (rewritten to {resolved})"
    return f"package index {shown}@{digest} refused: {reason}"


def read_document(client: RegistryClient, ref: Reference, source: str) -> bytes:
    """The index document of the artifact at ``ref`` (pinned to a digest).

    Raises:
        InvalidPackage: it is not a package index artifact.
    """
    assert ref.digest is not None
    manifest = client.get_manifest(ref, ref.digest)
    layer = index_layer(manifest, source)
    out = io.BytesIO()
    client.download_blob(ref, layer.digest, out, MAX_INDEX_BYTES)
    return out.getvalue()


def index_layer(manifest: Manifest, source: str) -> Descriptor:
    """The layer holding the document.

    Raises:
        InvalidPackage: naming ``source``, when the artifact is not an index.
    """
    config = manifest.config().media_type if not manifest.is_index else manifest.media_type
    if config != CONFIG_MEDIA_TYPE:
        raise InvalidPackage(f"{source} is not a package index: its config is {config!r}, "
                             f"not {CONFIG_MEDIA_TYPE} (push one with lockwright index push)")
    layers = [layer for layer in manifest.layers() if layer.media_type == MEDIA_TYPE]
    if len(layers) != 1:
        raise InvalidPackage(f"{source} is not a package index: it has {len(layers)} layers "
                             f"of type {MEDIA_TYPE}, not one")
    return layers[0]


def configured(references: Sequence[str]) -> str:
    """How messages name the indexes searched."""
    return ", ".join(references) if references else "(none: set LOCKWRIGHT_PACKAGE_INDEXES)"
