"""``meta.pkg.crossplane.io``: the package metadata object (``crossplane.yaml``).

v1alpha1 (Provider, Configuration), v1beta1 (Function) and v1 (all three) are read into one
set of v1 dataclasses, as Crossplane converts them to its v1 hub. Decoding is lenient like
Crossplane's: unknown fields are ignored, wrong types are errors. We keep the v1.x fields
``spec.controller.image``/``permissionRequests`` (Provider) and ``spec.image`` (Function).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lockwright.errors import InvalidPackage
from lockwright.xpkg.constraints import is_digest

META_GROUP = "meta.pkg.crossplane.io"
PACKAGE_API_VERSION = "pkg.crossplane.io/v1"
PACKAGE_KINDS = ("Provider", "Configuration", "Function")
META_VERSIONS: Mapping[str, frozenset[str]] = {
    "v1": frozenset(PACKAGE_KINDS),
    "v1alpha1": frozenset({"Provider", "Configuration"}),
    "v1beta1": frozenset({"Function"}),
}
ERR_INVALID_DEPENDENCY = (
    "encountered an invalid dependency: package dependencies must specify either a valid "
    "type, or an explicit apiVersion, kind, and package"
)
_NON_ALNUM = re.compile(r"[^a-z0-9]")


def capability_matches(declared: str, capability: str) -> bool:
    """Whether a declared capability names ``capability``: as Crossplane's
    ``CapabilitiesContainFuzzyMatch``, only letters and digits count, in any case."""
    return _NON_ALNUM.sub("", declared.lower()) == _NON_ALNUM.sub("", capability.lower())


@dataclass(frozen=True)
class Dependency:
    """One ``spec.dependsOn`` entry, normalised to the Lock's view of it.

    Attributes:
        package: the repository, without tag (``xpkg.example.io/acme/provider-nop``).
        kind: ``Provider``, ``Configuration`` or ``Function``.
        constraint: the ``version`` text, a semver constraint or a digest.
        is_digest: ``constraint`` is a digest pin that must match exactly.
        api_version: the package API version of ``kind``.
        form: how it was written: ``apiVersion`` (preferred), or the deprecated
            ``provider``, ``configuration`` or ``function`` shorthand.
    """

    package: str
    kind: str
    constraint: str
    is_digest: bool
    api_version: str = PACKAGE_API_VERSION
    form: str = "apiVersion"


@dataclass(frozen=True, kw_only=True)
class PackageMeta:
    """Fields shared by every package meta kind (Crossplane's ``MetaSpec``)."""

    kind: ClassVar[str] = ""
    name: str
    api_version: str = f"{META_GROUP}/v1"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    crossplane_version: str | None = None
    depends_on: tuple[Dependency, ...] = ()
    capabilities: tuple[str, ...] = ()

    def has_capability(self, capability: str) -> bool:
        """Fuzzy match as Crossplane does: case and non-alphanumerics are ignored."""
        return any(capability_matches(c, capability) for c in self.capabilities)


@dataclass(frozen=True, kw_only=True)
class ProviderMeta(PackageMeta):
    """A Provider's metadata; ``controller_image`` is the v1.x runtime image."""

    kind: ClassVar[str] = "Provider"
    controller_image: str | None = None
    permission_requests: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, kw_only=True)
class ConfigurationMeta(PackageMeta):
    """A Configuration's metadata."""

    kind: ClassVar[str] = "Configuration"


@dataclass(frozen=True, kw_only=True)
class FunctionMeta(PackageMeta):
    """A Function's metadata; ``image`` is the v1.x runtime image."""

    kind: ClassVar[str] = "Function"
    image: str | None = None

    def has_capability(self, capability: str) -> bool:
        """As `PackageMeta.has_capability`; no capabilities at all means ``composition``."""
        if not self.capabilities:
            return _NON_ALNUM.sub("", capability.lower()) == "composition"
        return super().has_capability(capability)


def is_meta(doc: Mapping[str, Any]) -> bool:
    """Whether a decoded object belongs to the meta group (any version or kind)."""
    api_version = doc.get("apiVersion")
    return isinstance(api_version, str) and api_version.split("/")[0] == META_GROUP


def parse_meta(doc: Mapping[str, Any]) -> PackageMeta:
    """Decode a ``meta.pkg.crossplane.io`` object into its v1 dataclass.

    Args:
        doc: one YAML document, already decoded.

    Returns:
        A `ProviderMeta`, `ConfigurationMeta` or `FunctionMeta`.

    Raises:
        InvalidPackage: the kind/version is not a package meta type, a field has the
            wrong type, or a dependency is malformed. The message names the field.
    """
    if not isinstance(doc, Mapping):
        raise InvalidPackage("package meta is not an object")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    group, _, version = str(api_version).partition("/")
    if group != META_GROUP or kind not in META_VERSIONS.get(version, ()):
        raise InvalidPackage(f'no kind "{kind}" is registered for version "{api_version}"')
    metadata = _mapping(doc.get("metadata"), "metadata")
    spec = _mapping(doc.get("spec"), "spec")
    common: dict[str, Any] = {
        "name": _string(metadata.get("name"), "metadata.name") or "",
        "api_version": api_version,
        "labels": _string_map(metadata.get("labels"), "metadata.labels"),
        "annotations": _string_map(metadata.get("annotations"), "metadata.annotations"),
        "crossplane_version": _crossplane_version(spec),
        "depends_on": _dependencies(spec.get("dependsOn")),
        "capabilities": tuple(_string_list(spec.get("capabilities"), "spec.capabilities")),
    }
    if kind == "Provider":
        return _provider(spec, common)
    if kind == "Function":
        return FunctionMeta(image=_string(spec.get("image"), "spec.image"), **common)
    return ConfigurationMeta(**common)


def _provider(spec: Mapping[str, Any], common: dict[str, Any]) -> ProviderMeta:
    controller = _mapping(spec.get("controller"), "spec.controller")
    rules = controller.get("permissionRequests") or []
    path = "spec.controller.permissionRequests"
    if not isinstance(rules, list) or not all(isinstance(r, Mapping) for r in rules):
        raise InvalidPackage(f"{path} must be a list of PolicyRule objects")
    return ProviderMeta(
        controller_image=_string(controller.get("image"), "spec.controller.image"),
        permission_requests=tuple(dict(r) for r in rules),
        **common,
    )


def _crossplane_version(spec: Mapping[str, Any]) -> str | None:
    if spec.get("crossplane") is None:
        return None
    crossplane = _mapping(spec["crossplane"], "spec.crossplane")
    version = _string(crossplane.get("version"), "spec.crossplane.version")
    if version is None:
        raise InvalidPackage("spec.crossplane.version is required when spec.crossplane is set")
    return version


def _dependencies(raw: Any) -> tuple[Dependency, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidPackage("spec.dependsOn must be a list")
    return tuple(_dependency(item, f"spec.dependsOn[{i}]") for i, item in enumerate(raw))


def _dependency(raw: Any, path: str) -> Dependency:
    """Apply Crossplane's precedence: apiVersion+kind+package, configuration, provider, function."""
    item = _mapping(raw, path)
    fields = {k: _string(item.get(k), f"{path}.{k}") for k in _DEPENDENCY_FIELDS}
    version = fields["version"]
    if not version:
        raise InvalidPackage(f"{path}: version is required")
    pin = is_digest(version)
    api_version, kind, package = fields["apiVersion"], fields["kind"], fields["package"]
    if api_version and kind and package:
        if kind not in PACKAGE_KINDS:
            raise InvalidPackage(f"{path}: kind {kind!r} is not a package kind "
                                 "(Provider, Configuration or Function)")
        return Dependency(package, kind, version, pin, api_version, "apiVersion")
    for form in ("configuration", "provider", "function"):
        if fields[form]:
            return Dependency(str(fields[form]), form.capitalize(), version, pin, form=form)
    raise InvalidPackage(f"{path}: {ERR_INVALID_DEPENDENCY}")


_DEPENDENCY_FIELDS = (
    "apiVersion", "kind", "package", "provider", "configuration", "function", "version",
)


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidPackage(f"{path} must be an object")
    return value


def _string(value: Any, path: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidPackage(f"{path} must be a string, not {type(value).__name__}")


def _string_list(value: Any, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidPackage(f"{path} must be a list of strings")
    return value


def _string_map(value: Any, path: str) -> dict[str, str]:
    mapping = _mapping(value, path)
    if not all(isinstance(v, str) for v in mapping.values()):
        raise InvalidPackage(f"{path} values must be strings")
    return {str(k): v for k, v in mapping.items()}
