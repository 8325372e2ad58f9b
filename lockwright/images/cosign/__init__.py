"""Offline cosign: verify image signatures and attestations with keys, and sign images.

Verification reads cosign's classic layout (``sha256-<hex>.sig`` simple-signing layers,
``sha256-<hex>.att`` DSSE attestations) and sigstore bundles attached as OCI referrers
(through the referrers API or its ``sha256-<hex>`` tag fallback). Only ``key`` authorities
exist here: keyless verification needs online trust roots (Fulcio, Rekor, CT logs), and
transparency-log entries in bundles are not checked. Whatever cannot be verified fails.
"""

from lockwright.images.cosign.intoto import PREDICATE_ALIASES, expand_predicate_type
from lockwright.images.cosign.keys import (
    PrivateKey,
    PublicKey,
    generate_key_pair,
    load_private_key,
    load_public_key,
    public_pem,
)
from lockwright.images.cosign.model import Attestation, KeyAuthority, SignatureError, Verified
from lockwright.images.cosign.payload import build_payload
from lockwright.images.cosign.sign import attest_image, sign_image
from lockwright.images.cosign.verify import verify_image

__all__ = [
    "PREDICATE_ALIASES",
    "Attestation",
    "KeyAuthority",
    "PrivateKey",
    "PublicKey",
    "SignatureError",
    "Verified",
    "attest_image",
    "build_payload",
    "expand_predicate_type",
    "generate_key_pair",
    "load_private_key",
    "load_public_key",
    "public_pem",
    "sign_image",
    "verify_image",
]
