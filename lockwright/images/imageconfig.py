"""ImageConfig matching (docs/crossplane.md §14): best match by longest prefix, per purpose.

For each purpose only the ImageConfigs carrying it are considered; among those, the one
with the longest ``spec.matchImages[].prefix`` that is a plain string prefix of the
reference wins, the first in list order on a tie. The rewrite is matched against the
original reference; pull secrets, verification and runtime against the rewritten one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from lockwright.errors import InvalidPackage

ImageConfig = dict[str, Any]

MSG_REWRITE_PREFIX_MISSING = "rewrite prefix is missing"


class Reason(str, Enum):
    """``appliedImageConfigRefs[].reason`` values."""

    SET_IMAGE_PULL_SECRET = "SetImagePullSecret"
    VERIFY_IMAGE = "VerifyImage"
    REWRITE_IMAGE = "RewriteImage"
    CONFIGURE_RUNTIME = "ConfigureRuntime"


class Purpose(str, Enum):
    """What an ImageConfig is consulted for."""

    PULL_SECRET = "pullSecret"
    VERIFICATION = "verification"
    REWRITE = "rewrite"
    RUNTIME = "runtime"


# Reasons the package client clears and re-adds on every fetch (ConfigureRuntime is not one).
CLIENT_REASONS = (Reason.REWRITE_IMAGE, Reason.SET_IMAGE_PULL_SECRET, Reason.VERIFY_IMAGE)


@dataclass(frozen=True)
class Match:
    """The winning ImageConfig for one purpose and the prefix that matched."""

    name: str
    prefix: str
    spec: dict[str, Any]


@dataclass(frozen=True)
class Resolution:
    """What the ImageConfigs say about one package reference."""

    original: str
    resolved: str
    pull_secret: str | None = None
    runtime_config_ref: dict[str, Any] | None = None
    applied: list[dict[str, str]] = field(default_factory=list)

    @property
    def package_applied(self) -> list[dict[str, str]]:
        """``applied`` without ConfigureRuntime, which only revisions record."""
        return [r for r in self.applied if r["reason"] != Reason.CONFIGURE_RUNTIME.value]


def _has_purpose(spec: dict[str, Any], purpose: Purpose) -> bool:
    if purpose is Purpose.PULL_SECRET:
        auth = (spec.get("registry") or {}).get("authentication") or {}
        return bool((auth.get("pullSecretRef") or {}).get("name"))
    if purpose is Purpose.VERIFICATION:
        return spec.get("verification") is not None
    if purpose is Purpose.REWRITE:
        return spec.get("rewriteImage") is not None
    return bool((spec.get("runtime") or {}).get("configRef"))


def _longest_prefix(spec: dict[str, Any], image: str) -> str | None:
    prefixes = [str(m.get("prefix", "")) for m in spec.get("matchImages") or []
                if m.get("type", "Prefix") == "Prefix"]
    matching = [p for p in prefixes if image.startswith(p)]
    return max(matching, key=len) if matching else None


def best_match(configs: list[ImageConfig], image: str, purpose: Purpose) -> Match | None:
    """Return the ImageConfig with the longest prefix of ``image`` among those for ``purpose``.

    Args:
        configs: ImageConfig objects, in list order (ties go to the first).
        image: the full reference, tag included, as matching is on the whole string.
        purpose: which part of the spec must be present for a config to count.
    """
    best: Match | None = None
    for config in configs:
        spec = config.get("spec") or {}
        if not _has_purpose(spec, purpose):
            continue
        prefix = _longest_prefix(spec, image)
        if prefix is not None and (best is None or len(prefix) > len(best.prefix)):
            best = Match(str(config["metadata"]["name"]), prefix, spec)
    return best


def rewrite(configs: list[ImageConfig], image: str) -> tuple[str, str | None]:
    """Apply the best ``rewriteImage``: ``(new reference, ImageConfig name or None)``.

    Raises:
        InvalidPackage: the winning rewrite has an empty prefix.
    """
    match = best_match(configs, image, Purpose.REWRITE)
    if match is None:
        return image, None
    prefix = str((match.spec.get("rewriteImage") or {}).get("prefix") or "")
    if not prefix:
        raise InvalidPackage(MSG_REWRITE_PREFIX_MISSING)
    return prefix + image[len(match.prefix):], match.name


def resolve(configs: list[ImageConfig], image: str) -> Resolution:
    """Rewrite ``image``, then find its pull secret and runtime config.

    Returns:
        The resolution with ``applied`` holding one ``{name, reason}`` per purpose used.
        Verification is left to the fetcher, which alone knows whether it ran.
    """
    resolved, rewriter = rewrite(configs, image)
    applied: list[dict[str, str]] = []
    if rewriter:
        applied.append({"name": rewriter, "reason": Reason.REWRITE_IMAGE.value})
    secret: str | None = None
    if match := best_match(configs, resolved, Purpose.PULL_SECRET):
        secret = str(match.spec["registry"]["authentication"]["pullSecretRef"]["name"])
        applied.append({"name": match.name, "reason": Reason.SET_IMAGE_PULL_SECRET.value})
    runtime_ref: dict[str, Any] | None = None
    if match := best_match(configs, resolved, Purpose.RUNTIME):
        runtime_ref = runtime_config_ref(match.spec["runtime"]["configRef"])
        applied.append({"name": match.name, "reason": Reason.CONFIGURE_RUNTIME.value})
    return Resolution(image, resolved, secret, runtime_ref, applied)


def runtime_config_ref(ref: dict[str, Any]) -> dict[str, Any]:
    """Fill the ``runtimeConfigRef`` defaults (apiVersion and kind) as the CRD would."""
    return {"apiVersion": ref.get("apiVersion") or "pkg.crossplane.io/v1beta1",
            "kind": ref.get("kind") or "DeploymentRuntimeConfig", "name": ref["name"]}


def merge_applied_refs(current: list[dict[str, str]] | None, applied: list[dict[str, str]],
                       clear: tuple[Reason, ...] = CLIENT_REASONS) -> list[dict[str, str]]:
    """Update ``appliedImageConfigRefs``: drop the ``clear`` reasons, add ``applied``.

    There is at most one entry per reason; a new one replaces the old.
    """
    cleared = {r.value for r in clear}
    out = [dict(r) for r in current or [] if r.get("reason") not in cleared]
    for ref in applied:
        out = [r for r in out if r.get("reason") != ref["reason"]] + [dict(ref)]
    return out
