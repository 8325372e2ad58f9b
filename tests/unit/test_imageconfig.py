"""ImageConfig matching (docs/crossplane.md §14): longest prefix by purpose, rewrite, secrets."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.errors import InvalidPackage
from lockwright.images import imageconfig as ic


def _ic(name: str, *prefixes: str, secret: str | None = None, rewrite: str | None = None,
        runtime: str | None = None, verify: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"matchImages": [{"type": "Prefix", "prefix": p} for p in prefixes]}
    if secret:
        spec["registry"] = {"authentication": {"pullSecretRef": {"name": secret}}}
    if rewrite is not None:
        spec["rewriteImage"] = {"prefix": rewrite}
    if runtime:
        spec["runtime"] = {"configRef": {"name": runtime}}
    if verify:
        spec["verification"] = {"provider": "Cosign", "cosign": {"authorities": []}}
    return {"metadata": {"name": name}, "spec": spec}


IMG = "xpkg.upbound.io/crossplane-contrib/provider-nop:v0.2.0"
CONFIGS = [
    _ic("broad", "xpkg.upbound.io/", secret="broad-secret"),
    _ic("narrow", "xpkg.upbound.io/crossplane-contrib/", secret="narrow-secret"),
    _ic("tagged", "xpkg.upbound.io/crossplane-contrib/provider-nop:", verify=True),
    _ic("tie-first", "xpkg.upbound.io/crossplane-contrib/provider-", runtime="first"),
    _ic("tie-second", "xpkg.upbound.io/crossplane-contrib/provider-", runtime="second"),
    _ic("other", "ghcr.io/", secret="ghcr"),
]


@pytest.mark.parametrize(("image", "purpose", "name", "prefix"), [
    (IMG, ic.Purpose.PULL_SECRET, "narrow", "xpkg.upbound.io/crossplane-contrib/"),
    (IMG, ic.Purpose.VERIFICATION, "tagged", "xpkg.upbound.io/crossplane-contrib/provider-nop:"),
    (IMG.replace(":v0.2.0", "@sha256:1"), ic.Purpose.VERIFICATION, None, None),  # tag-only prefix
    (IMG, ic.Purpose.RUNTIME, "tie-first", "xpkg.upbound.io/crossplane-contrib/provider-"),
    (IMG, ic.Purpose.REWRITE, None, None),
    ("ghcr.io/x/y:v1", ic.Purpose.PULL_SECRET, "other", "ghcr.io/"),
    ("docker.io/x:v1", ic.Purpose.PULL_SECRET, None, None),
])
def test_best_match(image: str, purpose: ic.Purpose, name: str | None,
                    prefix: str | None) -> None:
    match = ic.best_match(CONFIGS, image, purpose)
    assert (match.name if match else None, match.prefix if match else None) == (name, prefix)


def test_longest_prefix_within_one_config() -> None:
    config = _ic("multi", "r.io/", "r.io/org/", rewrite="mirror.io/")
    assert ic.rewrite([config], "r.io/org/p:v1") == ("mirror.io/p:v1", "multi")


def test_rewrite_empty_prefix_fails() -> None:
    with pytest.raises(InvalidPackage, match="^rewrite prefix is missing$"):
        ic.rewrite([_ic("bad", "r.io/", rewrite="")], "r.io/p:v1")


def test_resolve_matches_secret_and_runtime_on_rewritten_ref() -> None:
    configs = [
        _ic("mirror", "xpkg.upbound.io/", rewrite="mirror.example.com/"),
        _ic("orig-secret", "xpkg.upbound.io/", secret="never"),
        _ic("mirror-secret", "mirror.example.com/", secret="mirror-pull"),
        _ic("mirror-runtime", "mirror.example.com/crossplane-contrib/", runtime="big"),
    ]
    got = ic.resolve(configs, IMG)
    assert got.original == IMG
    assert got.resolved == "mirror.example.com/crossplane-contrib/provider-nop:v0.2.0"
    assert got.pull_secret == "mirror-pull"
    assert got.runtime_config_ref == {"apiVersion": "pkg.crossplane.io/v1beta1",
                                      "kind": "DeploymentRuntimeConfig", "name": "big"}
    assert got.applied == [
        {"name": "mirror", "reason": "RewriteImage"},
        {"name": "mirror-secret", "reason": "SetImagePullSecret"},
        {"name": "mirror-runtime", "reason": "ConfigureRuntime"},
    ]
    assert [r["reason"] for r in got.package_applied] == ["RewriteImage", "SetImagePullSecret"]


def test_resolve_nothing_applies() -> None:
    got = ic.resolve([], IMG)
    assert (got.resolved, got.pull_secret, got.runtime_config_ref, got.applied) == (
        IMG, None, None, [])


@pytest.mark.parametrize(("current", "applied", "want"), [
    ([], [{"name": "a", "reason": "RewriteImage"}], [{"name": "a", "reason": "RewriteImage"}]),
    # client reasons are cleared even when not re-applied
    ([{"name": "old", "reason": "SetImagePullSecret"}], [], []),
    # ConfigureRuntime survives a package-client refresh
    ([{"name": "rt", "reason": "ConfigureRuntime"}, {"name": "old", "reason": "RewriteImage"}],
     [{"name": "new", "reason": "RewriteImage"}],
     [{"name": "rt", "reason": "ConfigureRuntime"}, {"name": "new", "reason": "RewriteImage"}]),
])
def test_merge_applied_refs(current: list[dict[str, str]], applied: list[dict[str, str]],
                            want: list[dict[str, str]]) -> None:
    assert ic.merge_applied_refs(current, applied) == want


def test_merge_applied_refs_one_per_reason() -> None:
    got = ic.merge_applied_refs([{"name": "a", "reason": "ConfigureRuntime"}],
                                [{"name": "b", "reason": "ConfigureRuntime"}],
                                clear=())
    assert got == [{"name": "b", "reason": "ConfigureRuntime"}]
