"""What an ImageConfig's ``spec.verification`` asks of a package (docs/crossplane.md §6.2, §14).

Pure: :func:`policy` finds the ImageConfig that verifies a (rewritten) reference and reads
its authorities into plain data. Verification fails closed: a setting lockwright does not
implement is an authority that cannot pass (``keyless`` needs online trust roots this
offline verifier does not have), and a block it cannot read at all fails the package. The
activities read each key Secret and run the check (``lockwright.images.cosign``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from lockwright.errors import VerificationFailed
from lockwright.images.imageconfig import ImageConfig, Purpose, best_match

PREFIX = "signature verification failed: "
HASHES = ("sha224", "sha256", "sha384", "sha512")
AUTHORITY_FIELDS = frozenset({"name", "key", "keyless", "attestations"})
KEY_FIELDS = frozenset({"secretRef", "hashAlgorithm"})
MSG_KEYLESS = ("keyless verification needs online trust roots (Fulcio, Rekor, CT log) that "
               "this offline verifier does not have; give a key authority instead")


@dataclass(frozen=True)
class Authority:
    """One authority as the ImageConfig states it; ``problem`` says why it cannot pass."""

    name: str
    secret: str = ""
    key: str = ""
    hash_algorithm: str = "sha256"
    attestations: tuple[tuple[str, str], ...] = ()  # (name, predicateType)
    problem: str = ""


@dataclass(frozen=True)
class Policy:
    """The verifying ImageConfig and its authorities, in order (the first that passes wins)."""

    image_config: str
    authorities: tuple[Authority, ...]

    def fingerprint(self, keys: dict[str, bytes]) -> str:
        """A digest of the policy and the key bytes: a verification done under it stands."""
        raw = json.dumps([self.image_config, [a.__dict__ for a in self.authorities],
                          {k: hashlib.sha256(v).hexdigest() for k, v in sorted(keys.items())}],
                         sort_keys=True, default=list)
        return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()


def policy(configs: list[ImageConfig], image: str) -> Policy | None:
    """The verification asked of ``image`` (the rewritten reference), or None.

    Raises:
        VerificationFailed: the block cannot be used at all (another provider than Cosign,
            no ``cosign`` block, no authorities); the message names the ImageConfig.
    """
    match = best_match(configs, image, Purpose.VERIFICATION)
    if match is None:
        return None
    block = match.spec.get("verification") or {}
    where = f'ImageConfig "{match.name}"'
    if block.get("provider") != "Cosign":
        raise VerificationFailed(f"{PREFIX}{where}: verification provider "
                                 f"{block.get('provider')!r} is not supported; use Cosign")
    cosign = block.get("cosign")
    if not isinstance(cosign, dict):
        raise VerificationFailed(f"{PREFIX}{where}: cosign verification config is missing")
    raw = cosign.get("authorities") or []
    if not raw:
        raise VerificationFailed(f"{PREFIX}{where}: no authorities given in "
                                 "spec.verification.cosign.authorities")
    return Policy(match.name, tuple(authority(item, i) for i, item in enumerate(raw)))


def authority(raw: Any, index: int) -> Authority:
    """One ``authorities[]`` item; anything lockwright cannot check becomes its problem."""
    if not isinstance(raw, dict):
        return Authority(f"#{index}", problem="not an object")
    name = str(raw.get("name") or f"#{index}")
    unknown = sorted(set(raw) - AUTHORITY_FIELDS)
    if unknown:
        return Authority(name, problem=f"unsupported fields {', '.join(unknown)}")
    if raw.get("keyless") is not None:
        return Authority(name, problem=MSG_KEYLESS)
    key = raw.get("key")
    if not isinstance(key, dict):
        return Authority(name, problem="neither key nor keyless is given")
    return _key_authority(name, key, raw.get("attestations") or [])


def _key_authority(name: str, key: dict[str, Any], attestations: list[Any]) -> Authority:
    unknown = sorted(set(key) - KEY_FIELDS)
    ref = key.get("secretRef") or {}
    algorithm = str(key.get("hashAlgorithm") or "sha256").lower()
    problem = (f"unsupported key fields {', '.join(unknown)}" if unknown
               else "key.secretRef needs name and key" if not (ref.get("name") and ref.get("key"))
               else f"hash algorithm {algorithm!r} is not one of {', '.join(HASHES)}"
               if algorithm not in HASHES else "")
    wanted = tuple((str(a.get("name", "")), str(a.get("predicateType", "")))
                   for a in attestations if isinstance(a, dict))
    if len(wanted) != len(attestations) or any(not p for _, p in wanted):
        problem = problem or "every attestation needs a predicateType"
    return Authority(name, str(ref.get("name", "")), str(ref.get("key", "")), algorithm,
                     wanted, problem)


def failed(reasons: list[tuple[str, str]]) -> VerificationFailed:
    """The package's error: every authority and why it did not pass, in order."""
    joined = "; ".join(f'authority "{name}": {why}' for name, why in reasons)
    return VerificationFailed(PREFIX + joined)
