"""Verify an image against ``key`` authorities, failing closed.

An authority without attestations needs one signature, by its key, over the digest being
verified. An authority with attestations needs, for each one, a valid attestation by its
key with that predicate type whose subject is the digest (signatures are then not looked
at, as in Crossplane). The first authority that passes wins; when none does, the error
names every authority's reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from lockwright.images.cosign.candidates import Candidate
from lockwright.images.cosign.collect import Material
from lockwright.images.cosign.intoto import expand_predicate_type
from lockwright.images.cosign.keys import PublicKey, hash_algorithm, load_public_key
from lockwright.images.cosign.model import KeyAuthority, SignatureError, Verified
from lockwright.images.cosign.registry import tag_for
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import Reference

log = structlog.get_logger(__name__)


def verify_image(client: RegistryClient, repository: Reference, digest: str,
                 authorities: Sequence[KeyAuthority]) -> Verified:
    """Verify ``repository@digest``; the first authority that passes wins.

    Raises:
        SignatureError: no authority passed; the message joins every authority's reason
            as ``authority "a": <reason>; authority "b": <reason>``.
        RegistryUnavailable, Unauthorized: the registry could not be read (these heal on
            their own, so they are not verification failures).
    """
    if not authorities:
        raise SignatureError("no authorities to verify with")
    material = Material(client, repository, digest)
    reasons = []
    for authority in authorities:
        try:
            verified = Verified(authority.name, _passes(material, authority))
        except SignatureError as exc:
            reasons.append(f'authority "{authority.name}": {exc.message}')
            continue
        log.info("cosign.verified", repository=repository.source, digest=digest,
                 authority=authority.name, evidence=verified.evidence)
        return verified
    raise SignatureError("; ".join(reasons))


def _passes(material: Material, authority: KeyAuthority) -> str:
    key = load_public_key(authority.public_key_pem)
    hash_algorithm(authority.hash_algorithm)  # an unknown hash fails even with no signature
    if authority.attestations:
        return _attested(material, authority, key)
    return _signed(material, key, authority.hash_algorithm)


def _signed(material: Material, key: PublicKey, hash_name: str) -> str:
    candidates = material.signatures
    if not candidates:
        raise SignatureError(f"no signatures found (looked for tag "
                             f"{tag_for(material.digest, '.sig')} and sigstore bundles)")
    reasons = []
    for candidate in candidates:
        reason = candidate.check(key, hash_name, material.digest)
        if not reason:
            return candidate.evidence
        reasons.append(reason)
    raise SignatureError(_summary(reasons))


def _attested(material: Material, authority: KeyAuthority, key: PublicKey) -> str:
    wanted = [expand_predicate_type(a.predicate_type) for a in authority.attestations]
    valid, reasons = _check_all(material.attestations, key, authority.hash_algorithm,
                                material.digest)
    for predicate_type in wanted:
        if predicate_type not in valid:
            raise SignatureError(f"no attestation of predicate type {predicate_type} "
                                 f"({_looked(material, reasons)})")
    return ", ".join(f"attestation {p}" for p in dict.fromkeys(wanted))


def _check_all(candidates: list[Candidate], key: PublicKey, hash_name: str,
               digest: str) -> tuple[set[str], list[str]]:
    valid, reasons = set(), []
    for candidate in candidates:
        reason = candidate.check(key, hash_name, digest)
        if reason:
            reasons.append(reason)
        else:
            valid.add(candidate.predicate_type)
    return valid, reasons


def _looked(material: Material, reasons: list[str]) -> str:
    if not material.attestations:
        return (f"looked for tag {tag_for(material.digest, '.att')} and sigstore bundles; "
                "found none")
    checked = len(material.attestations)
    return f"{checked} checked" + (f": {_summary(reasons)}" if reasons else "")


def _summary(reasons: list[str]) -> str:
    # One image may carry many signatures failing the same way; say each reason once.
    return " / ".join(dict.fromkeys(reasons))
