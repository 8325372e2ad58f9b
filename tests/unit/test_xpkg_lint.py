"""Lint rules per package kind, with Crossplane's messages, and lockwright's own checks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lockwright.errors import InvalidPackage, LintError
from lockwright.xpkg.lint import LintResult, installable, lint, summarize
from lockwright.xpkg.meta import PackageMeta, parse_meta

XP = "apiextensions.crossplane.io"
CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
CRD_BETA = ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition")
MRD = (f"{XP}/v1alpha1", "ManagedResourceDefinition")
XRD = (f"{XP}/v1", "CompositeResourceDefinition")
XRD_V2 = (f"{XP}/v2", "CompositeResourceDefinition")
COMPOSITION = (f"{XP}/v1", "Composition")
REVISION = (f"{XP}/v1", "CompositionRevision")
MRAP = (f"{XP}/v1alpha1", "ManagedResourceActivationPolicy")
VWC = ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
MWC = ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
OPERATION = ("ops.crossplane.io/v1alpha1", "Operation")
CRON = ("ops.crossplane.io/v1alpha1", "CronOperation")
WATCH = ("ops.crossplane.io/v1alpha1", "WatchOperation")

PROVIDER_ERR = ("object did not pass any of the linters with following errors: object is not a "
                "CRD, object is not an MRD, object is not an ValidatingWebhookConfiguration, "
                "object is not a MutatingWebhookConfiguration")
CONFIGURATION_ERR = ("object did not pass any of the linters with following errors: object is "
                     "not an XRD, object is not an ManagedResourceActivationPolicy, object is "
                     "not a Composition, object is not an Operation, object is not a "
                     "CronOperation, object is not a WatchOperation")


def package(kind: str, **spec: Any) -> PackageMeta:
    return parse_meta({"apiVersion": "meta.pkg.crossplane.io/v1", "kind": kind,
                       "metadata": {"name": "pkg"}, "spec": spec})


def obj(gvk: tuple[str, str], name: str = "thing", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": gvk[0], "kind": gvk[1], "metadata": {"name": name}, **extra}


@pytest.mark.parametrize(
    ("kind", "gvk", "error"),
    [
        ("Provider", CRD, None), ("Provider", CRD_BETA, None), ("Provider", MRD, None),
        ("Provider", VWC, None), ("Provider", MWC, None),
        ("Provider", XRD, PROVIDER_ERR), ("Provider", COMPOSITION, PROVIDER_ERR),
        ("Configuration", XRD, None), ("Configuration", XRD_V2, None),
        ("Configuration", COMPOSITION, None), ("Configuration", MRAP, None),
        ("Configuration", OPERATION, None), ("Configuration", CRON, None),
        ("Configuration", WATCH, None),
        ("Configuration", CRD, CONFIGURATION_ERR), ("Configuration", REVISION, CONFIGURATION_ERR),
        ("Configuration", MWC, CONFIGURATION_ERR),
        ("Function", CRD, None), ("Function", XRD, "object is not a CRD"),
        ("Function", MRD, "object is not a CRD"),
    ],
)
def test_allowed_kinds_per_package(kind: str, gvk: tuple[str, str], error: str | None) -> None:
    result = lint(package(kind), [obj(gvk)])
    expected = () if error is None else (f"document 1 ({gvk[1]} thing): {error}",)
    assert result.errors == expected


META_ERRORS = [
    ({"crossplane": {"version": ">>1.0"}},
     "package version constraints are poorly formatted: improper constraint: >>1.0"),
    ({"dependsOn": [{"provider": "r.io/a/p", "version": "~>"}]},
     'dependency "r.io/a/p": version constraint is poorly formatted: improper constraint: ~>'),
    ({"dependsOn": [{"provider": "r.io/a/p:v1.0.0", "version": "v1.0.0"}]},
     'dependency "r.io/a/p:v1.0.0": package must not include a tag or digest; use version'),
    ({"dependsOn": [{"provider": "r.io/a/p@sha256:" + "a" * 64, "version": "v1.0.0"}]},
     "package must not include a tag or digest"),
    ({"dependsOn": [{"provider": "crossplane-contrib/provider-nop", "version": "v1.0.0"}]},
     'dependency "crossplane-contrib/provider-nop": package must be fully qualified'),
]


@pytest.mark.parametrize(("spec", "message"), META_ERRORS)
def test_meta_errors(spec: dict[str, Any], message: str) -> None:
    errors = lint(package("Configuration", **spec), []).errors
    assert len(errors) == 1 and message in errors[0]


@pytest.mark.parametrize(
    ("dependency", "ok"),
    [({"provider": "localhost:5000/a/p", "version": "v1"}, True),
     ({"provider": "localhost/p", "version": "v1"}, True),
     ({"provider": "r.io/a/p", "version": "sha256:" + "b" * 64}, True),
     ({"provider": "r.io/a/p", "version": "sha256:short"}, False)],
)
def test_dependency_packages(dependency: dict[str, str], ok: bool) -> None:
    assert lint(package("Configuration", dependsOn=[dependency]), []).ok is ok


def test_deprecated_dependency_forms_warn() -> None:
    meta = package("Configuration", dependsOn=[{"function": "r.io/a/f", "version": "v1"}])
    result = lint(meta, [])
    assert result.ok
    assert result.warnings == (('dependency "r.io/a/f": the function field is deprecated; use '
                               "apiVersion, kind and package"),)


def test_meta_without_name_warns() -> None:
    meta = parse_meta({"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Provider"})
    assert lint(meta, []).warnings == ("package meta has no metadata.name",)


def test_webhook_with_url_warns() -> None:
    hooks = [{"name": "a.example.org", "clientConfig": {"url": "https://x"}},
             {"name": "b.example.org", "clientConfig": {"service": {"name": "s"}}}]
    result = lint(package("Provider"), [obj(VWC, "hooks", webhooks=hooks)])
    assert result.ok
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith(
        "document 1 (ValidatingWebhookConfiguration hooks): webhook 'a.example.org' sets "
        "clientConfig.url")


def test_summaries_lint_like_objects() -> None:
    summary = summarize(7, obj(CRD, "widgets.example.org"))
    result = lint(package("Configuration"), [summary])
    assert result.errors == (
        f"document 7 (CustomResourceDefinition widgets.example.org): {CONFIGURATION_ERR}",)


def test_unregistered_objects_are_invalid_packages() -> None:
    with pytest.raises(InvalidPackage, match='no kind "Secret" is registered for version "v1"'):
        lint(package("Provider"), [obj(("v1", "Secret"))])


def test_raise_for_errors() -> None:
    LintResult(warnings=("w",)).raise_for_errors()
    with pytest.raises(LintError, match=re.escape("linting package contents failed: a; b")):
        LintResult(errors=("a", "b")).raise_for_errors()


@pytest.mark.parametrize(
    ("kind", "gvk", "expected"),
    [("Provider", CRD, True), ("Provider", MWC, True), ("Configuration", XRD_V2, True),
     ("Configuration", WATCH, True), ("Configuration", CRD, False), ("Function", CRD, False)],
)
def test_installable(kind: str, gvk: tuple[str, str], expected: bool) -> None:
    assert installable(kind, *gvk) is expected


@pytest.mark.parametrize(("value", "errors"), [
    ("buckets.s3.example.org/v1beta1, Topic.pubsub.example.org", []),
    ("buckets.s3.example.org/v1beta1,,", []),
    ("buckets, Topic.pubsub.example.org/v1/x", [
        "metadata.annotations[lockwright.dev/requires-apis]: 'buckets' is not an API",
        ("metadata.annotations[lockwright.dev/requires-apis]: 'Topic.pubsub.example.org/v1/x' "
        "is not an API")]),
])
def test_required_apis_are_apis(value: str, errors: list[str]) -> None:
    meta = parse_meta({"apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Configuration",
                       "metadata": {"name": "pkg", "annotations": {
                           "lockwright.dev/requires-apis": value}}})
    found = lint(meta, []).errors
    assert [e.split(": write it as")[0] for e in found] == errors
    assert all("plural.group/version" in e for e in found)
