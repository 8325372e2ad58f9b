"""crossplane.yaml decoding: every meta version and kind, every dependency form, errors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lockwright.errors import InvalidPackage
from lockwright.xpkg.meta import (
    ConfigurationMeta,
    Dependency,
    FunctionMeta,
    ProviderMeta,
    is_meta,
    parse_meta,
)

DIGEST = "sha256:" + "c" * 64


def meta(kind: str, version: str = "v1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"meta.pkg.crossplane.io/{version}", "kind": kind,
            "metadata": {"name": "pkg", "labels": {"a": "b"}, "annotations": {"c": "d"}},
            "spec": spec}


@pytest.mark.parametrize(
    ("kind", "version", "cls"),
    [("Provider", "v1", ProviderMeta), ("Provider", "v1alpha1", ProviderMeta),
     ("Configuration", "v1", ConfigurationMeta), ("Configuration", "v1alpha1", ConfigurationMeta),
     ("Function", "v1", FunctionMeta), ("Function", "v1beta1", FunctionMeta)],
)
def test_every_registered_version_decodes_to_v1(kind: str, version: str, cls: type) -> None:
    parsed = parse_meta(meta(kind, version))
    assert type(parsed) is cls
    assert (parsed.kind, parsed.name) == (kind, "pkg")
    assert parsed.labels == {"a": "b"} and parsed.annotations == {"c": "d"}


def test_provider_keeps_v1x_controller_fields() -> None:
    rule = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}
    parsed = parse_meta(meta("Provider", controller={"image": "r.io/x/ctl:v1",
                                                     "permissionRequests": [rule]}))
    assert isinstance(parsed, ProviderMeta)
    assert parsed.controller_image == "r.io/x/ctl:v1"
    assert parsed.permission_requests == (rule,)


def test_function_image_and_capabilities() -> None:
    parsed = parse_meta(meta("Function", "v1beta1", image="r.io/x/fn:v1"))
    assert isinstance(parsed, FunctionMeta) and parsed.image == "r.io/x/fn:v1"
    assert parsed.has_capability("composition")
    assert not parsed.has_capability("operation")


def test_capabilities_match_fuzzily() -> None:
    parsed = parse_meta(meta("Provider", capabilities=["SafeStart"]))
    assert parsed.has_capability("safe-start") and parsed.has_capability("safe_start")


def test_crossplane_version_is_kept_verbatim() -> None:
    assert parse_meta(meta("Provider", crossplane={"version": ">=v1.14.0-0"})) \
        .crossplane_version == ">=v1.14.0-0"
    assert parse_meta(meta("Provider")).crossplane_version is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "package": "r.io/a/p",
          "version": ">=v1.0.0"},
         Dependency("r.io/a/p", "Provider", ">=v1.0.0", False, "pkg.crossplane.io/v1")),
        ({"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "Function", "package": "r.io/a/f",
          "version": "v0.1.0"},
         Dependency("r.io/a/f", "Function", "v0.1.0", False, "pkg.crossplane.io/v1beta1")),
        ({"provider": "r.io/a/p", "version": "v1.0.0"},
         Dependency("r.io/a/p", "Provider", "v1.0.0", False, form="provider")),
        ({"configuration": "r.io/a/c", "version": "^1"},
         Dependency("r.io/a/c", "Configuration", "^1", False, form="configuration")),
        ({"function": "r.io/a/f", "version": DIGEST},
         Dependency("r.io/a/f", "Function", DIGEST, True, form="function")),
        # configuration wins over provider; form 1 needs all three of its fields
        ({"provider": "r.io/a/p", "configuration": "r.io/a/c", "version": "1"},
         Dependency("r.io/a/c", "Configuration", "1", False, form="configuration")),
        ({"kind": "Provider", "package": "r.io/a/x", "function": "r.io/a/f", "version": "1"},
         Dependency("r.io/a/f", "Function", "1", False, form="function")),
    ],
)
def test_dependency_forms(raw: dict[str, Any], expected: Dependency) -> None:
    assert parse_meta(meta("Configuration", dependsOn=[raw])).depends_on == (expected,)


INVALID = [
    ({"apiVersion": "meta.pkg.crossplane.io/v1alpha1", "kind": "Function"},
     'no kind "Function" is registered for version "meta.pkg.crossplane.io/v1alpha1"'),
    ({"apiVersion": "meta.pkg.crossplane.io/v2", "kind": "Provider"},
     'no kind "Provider" is registered'),
    ({"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider"}, "no kind"),
    (meta("Provider") | {"spec": []}, "spec must be an object"),
    (meta("Provider", crossplane={}), "spec.crossplane.version is required"),
    (meta("Provider", crossplane={"version": 1.2}), "spec.crossplane.version must be a string"),
    (meta("Provider", dependsOn={"provider": "x"}), "spec.dependsOn must be a list"),
    (meta("Provider", dependsOn=[{"version": "1"}]),
     ("spec.dependsOn[0]: encountered an invalid dependency: package dependencies must specify "
     "either a valid type, or an explicit apiVersion, kind, and package")),
    (meta("Provider", dependsOn=[{"provider": "r.io/a/p"}]), "spec.dependsOn[0]: version is required"),
    (meta("Provider", dependsOn=[{"provider": "r.io/a/p", "version": 1.2}]),
     "spec.dependsOn[0].version must be a string"),
    (meta("Provider", dependsOn=[{"apiVersion": "v1", "kind": "Secret", "package": "r.io/a",
                                  "version": "1"}]), "'Secret' is not a package kind"),
    (meta("Provider", capabilities="safe-start"), "spec.capabilities must be a list of strings"),
    (meta("Provider", controller={"permissionRequests": ["get"]}),
     "permissionRequests must be a list of PolicyRule objects"),
    (meta("Provider", controller={"image": ["x"]}), "spec.controller.image must be a string"),
    (meta("Provider") | {"metadata": {"labels": {"a": 1}}}, "metadata.labels values"),
]


@pytest.mark.parametrize(("doc", "message"), INVALID)
def test_invalid_meta(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidPackage, match=re.escape(message)):
        parse_meta(doc)


def test_is_meta() -> None:
    assert is_meta(meta("Provider"))
    assert is_meta({"apiVersion": "meta.pkg.crossplane.io/v9", "kind": "X"})
    assert not is_meta({"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider"})
    assert not is_meta({"kind": "Provider"})
