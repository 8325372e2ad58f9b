"""Gather the candidate signatures and attestations of one image from its registry.

Everything is read at most once per verification, and only when an authority asks: an
ImageConfig whose authorities all want attestations never reads the ``.sig`` tag.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from lockwright.images.cosign.bundle import bundle_candidate
from lockwright.images.cosign.candidates import Candidate, dsse, simple_signing, unreadable
from lockwright.images.cosign.intoto import parse_envelope
from lockwright.images.cosign.model import (
    BUNDLE_PREFIX,
    COSIGN_SIGN_PREDICATE,
    DSSE_ENVELOPE,
    MAX_CANDIDATES,
    MAX_DOCUMENT_BYTES,
    MAX_PAYLOAD_BYTES,
    SIGNATURE_ANNOTATION,
    SIMPLE_SIGNING,
    SignatureError,
)
from lockwright.images.cosign.registry import (
    layers_of,
    optional_manifest,
    read_blob,
    referrers,
    tag_for,
)
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import Reference
from lockwright.oci.types import Descriptor


class Material:
    """What the registry holds beside ``repository@digest``, read lazily."""

    def __init__(self, client: RegistryClient, repository: Reference, digest: str) -> None:
        self.client, self.repository, self.digest = client, repository, digest

    @cached_property
    def signatures(self) -> list[Candidate]:
        """``.sig`` layers, then bundles holding a plain signature."""
        signed = [b for b in self.bundles if b.predicate_type in ("", COSIGN_SIGN_PREDICATE)]
        return self._tagged(".sig", SIMPLE_SIGNING, self._simple_signing) + signed

    @cached_property
    def attestations(self) -> list[Candidate]:
        """``.att`` envelopes, then bundles holding a DSSE envelope."""
        attested = [b for b in self.bundles if b.predicate_type]
        return self._tagged(".att", DSSE_ENVELOPE, self._envelope) + attested

    @cached_property
    def bundles(self) -> list[Candidate]:
        """Sigstore bundles among the image's referrers."""
        try:
            listed = referrers(self.client, self.repository, self.digest)
        except SignatureError as exc:
            return [unreadable("sigstore bundles", exc.message)]
        found = [self._bundle(d) for d in [d for d in listed if _may_be_bundle(d)][:MAX_CANDIDATES]]
        return [c for c in found if c is not None]

    @cached_property
    def manifest_body(self) -> bytes:
        """The image manifest's bytes (what a bundle's message signature is over)."""
        return self.client.get_manifest(self.repository, self.digest).body

    def _tagged(self, suffix: str, media_type: str,
                read: Callable[[str, Descriptor], Candidate]) -> list[Candidate]:
        tag = tag_for(self.digest, suffix)
        evidence = f"{'signature' if suffix == '.sig' else 'attestation'} tag {tag}"
        try:
            manifest = optional_manifest(self.client, self.repository, tag)
            layers = layers_of(manifest, tag) if manifest is not None else []
        except SignatureError as exc:
            return [unreadable(evidence, exc.message)]
        wanted = [layer for layer in layers if layer.media_type == media_type]
        return [read(evidence, layer) for layer in wanted[:MAX_CANDIDATES]]

    def _simple_signing(self, evidence: str, layer: Descriptor) -> Candidate:
        signature = layer.annotations.get(SIGNATURE_ANNOTATION)
        if not isinstance(signature, str):
            return unreadable(evidence, f"layer {layer.digest} has no {SIGNATURE_ANNOTATION} "
                                        "annotation")
        try:
            payload = read_blob(self.client, self.repository, layer, MAX_PAYLOAD_BYTES)
        except SignatureError as exc:
            return unreadable(evidence, exc.message)
        return simple_signing(evidence, payload, signature)

    def _envelope(self, evidence: str, layer: Descriptor) -> Candidate:
        try:
            data = read_blob(self.client, self.repository, layer, MAX_DOCUMENT_BYTES)
            return dsse(evidence, parse_envelope(data, f"attestation layer {layer.digest}"))
        except SignatureError as exc:
            return unreadable(evidence, exc.message)

    def _bundle(self, listed: dict[str, Any]) -> Candidate | None:
        digest = str(listed.get("digest", ""))
        evidence = f"sigstore bundle {digest}"
        try:
            layer = self._bundle_layer(digest)
            if layer is None:
                return None  # another kind of referrer (an SBOM, a signature of another tool)
            data = read_blob(self.client, self.repository, layer, MAX_DOCUMENT_BYTES)
        except SignatureError as exc:
            return unreadable(evidence, exc.message)
        return bundle_candidate(data, evidence, lambda: self.manifest_body)

    def _bundle_layer(self, digest: str) -> Descriptor | None:
        manifest = optional_manifest(self.client, self.repository, digest)
        if manifest is None or manifest.is_index:
            return None
        subject = manifest.data.get("subject")
        if not isinstance(subject, dict) or subject.get("digest") != self.digest:
            raise SignatureError(f"referrer {digest} does not refer to {self.digest}")
        return next((layer for layer in layers_of(manifest, digest)
                     if layer.media_type.startswith(BUNDLE_PREFIX)), None)


def _may_be_bundle(listed: dict[str, Any]) -> bool:
    # Registries fill artifactType in; when one does not, the manifest itself decides.
    kind = listed.get("artifactType")
    return not isinstance(kind, str) or not kind or kind.startswith(BUNDLE_PREFIX)
