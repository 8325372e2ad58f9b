"""Crossplane's package linter, plus the checks lockwright adds.

The kind rules and their messages are Crossplane's (typos included, so that messages match
what users search for). Errors fail an install: lockwright is stricter than Crossplane,
which only raises a Warning event. Warnings are reported and the install goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lockwright.errors import ConstraintError, InvalidPackage, InvalidReference, LintError
from lockwright.identity.apis import parse as parse_api
from lockwright.identity.digest import SHA256, is_definition, key_of, raw_type_digest
from lockwright.identity.names import REQUIRES_APIS
from lockwright.xpkg.constraints import parse_constraint
from lockwright.xpkg.meta import Dependency, PackageMeta

_XP = "apiextensions.crossplane.io"
_CRD = (("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"))
_MRD = ((f"{_XP}/v1alpha1", "ManagedResourceDefinition"),)
_MRAP = ((f"{_XP}/v1alpha1", "ManagedResourceActivationPolicy"),)
_XRD = ((f"{_XP}/v1", "CompositeResourceDefinition"), (f"{_XP}/v2", "CompositeResourceDefinition"))
_COMPOSITION = ((f"{_XP}/v1", "Composition"),)
_VWC = (("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),)
_MWC = (("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),)
_OPS = "ops.crossplane.io/v1alpha1"

#: Each check is (allowed apiVersion/kind pairs, Crossplane's message when not matched).
_Check = tuple[tuple[tuple[str, str], ...], str]
_CHECKS: Mapping[str, tuple[_Check, ...]] = {
    "Provider": (
        (_CRD, "object is not a CRD"),
        (_MRD, "object is not an MRD"),
        (_VWC, "object is not an ValidatingWebhookConfiguration"),
        (_MWC, "object is not a MutatingWebhookConfiguration"),
    ),
    "Configuration": (
        (_XRD, "object is not an XRD"),
        (_MRAP, "object is not an ManagedResourceActivationPolicy"),
        (_COMPOSITION, "object is not a Composition"),
        (((_OPS, "Operation"),), "object is not an Operation"),
        (((_OPS, "CronOperation"),), "object is not a CronOperation"),
        (((_OPS, "WatchOperation"),), "object is not a WatchOperation"),
    ),
    "Function": ((_CRD, "object is not a CRD"),),
}
#: Everything Crossplane's object scheme can decode; any other kind is a parse error.
REGISTERED: frozenset[tuple[str, str]] = frozenset(
    {pair for checks in _CHECKS.values() for allowed, _ in checks for pair in allowed}
    | {(f"{_XP}/v1", "CompositionRevision")}
)
#: What the establisher creates per package kind; Function CRDs only describe inputs.
INSTALLED: Mapping[str, frozenset[tuple[str, str]]] = {
    "Provider": frozenset(_CRD + _MRD + _VWC + _MWC),
    "Configuration": frozenset(p for allowed, _ in _CHECKS["Configuration"] for p in allowed),
    "Function": frozenset(),
}
ERR_OR = "object did not pass any of the linters with following errors: "
ERR_BAD_CONSTRAINTS = "package version constraints are poorly formatted"


@dataclass(frozen=True, slots=True)
class ObjectSummary:
    """What lint, the Lock and API identity need from an object, without keeping it.

    Slotted: a package keeps one per object (2,000 for a big provider) while it streams.
    """

    index: int
    api_version: str
    kind: str
    name: str
    warnings: tuple[str, ...] = ()
    #: A definition's type digest as 32 bytes (71 characters of text cost twice the
    #: memory), taken in the one streaming pass that reads it; empty for other objects.
    raw_digest: bytes = b""

    @property
    def type_digest(self) -> str:
        """A definition's ``type_digest`` (``lockwright.identity.digest``); "" for others."""
        return SHA256 + self.raw_digest.hex() if self.raw_digest else ""

    @property
    def type_key(self) -> str:
        """A definition's ``type_key``; "" for other objects."""
        return key_of(self.kind, self.name) if self.raw_digest else ""

    @property
    def where(self) -> str:
        """``document 3 (CustomResourceDefinition widgets.example.org)``, for messages."""
        label = " ".join(part for part in (self.kind, self.name) if part)
        return f"document {self.index} ({label})" if label else f"document {self.index}"


@dataclass(frozen=True)
class LintResult:
    """Lint findings: ``errors`` fail an install, ``warnings`` are only reported."""

    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when there are no errors."""
        return not self.errors

    def raise_for_errors(self) -> None:
        """Raise `LintError` naming every error, Crossplane's prefix first."""
        if self.errors:
            raise LintError("linting package contents failed: " + "; ".join(self.errors))


def summarize(index: int, obj: Mapping[str, Any]) -> ObjectSummary:
    """Check that an object decodes in Crossplane's object scheme and summarise it.

    Raises:
        InvalidPackage: ``apiVersion`` or ``kind`` is missing, or the kind is not one a
            package may carry (Crossplane: ``no kind "X" is registered for version "v"``).
    """
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    summary = ObjectSummary(index, str(api_version or ""), str(kind or ""), str(name or ""))
    if not isinstance(kind, str) or not kind:
        raise InvalidPackage(f"{summary.where}: object has no kind")
    if not isinstance(api_version, str) or not api_version:
        raise InvalidPackage(f"{summary.where}: object has no apiVersion")
    if (api_version, kind) not in REGISTERED:
        raise InvalidPackage(
            f'{summary.where}: no kind "{kind}" is registered for version "{api_version}"')
    shipped = dict(obj)
    return ObjectSummary(index, api_version, kind, summary.name, _object_warnings(summary, obj),
                         raw_type_digest(shipped) if is_definition(shipped) else b"")


def installable(package_kind: str, api_version: str, kind: str) -> bool:
    """Whether the establisher creates this object for a package of ``package_kind``."""
    return (api_version, kind) in INSTALLED.get(package_kind, frozenset())


def lint(meta: PackageMeta, objects: Iterable[Mapping[str, Any] | ObjectSummary]) -> LintResult:
    """Lint a package: its meta object and the objects it carries.

    Args:
        meta: the parsed meta object.
        objects: the objects (decoded dicts, or summaries from a streaming scan), each
            with its document index; dicts are numbered from 1 as if the meta came first.

    Returns:
        Errors and warnings, each naming the document or dependency it is about.

    Raises:
        InvalidPackage: an object dict is not decodable (see `summarize`).
    """
    errors, warnings = _lint_meta(meta)
    for i, obj in enumerate(objects, start=1):
        summary = obj if isinstance(obj, ObjectSummary) else summarize(i, obj)
        error = _kind_error(meta.kind, summary)
        if error:
            errors.append(f"{summary.where}: {error}")
        warnings.extend(f"{summary.where}: {w}" for w in summary.warnings)
    return LintResult(tuple(errors), tuple(warnings))


def _kind_error(package_kind: str, summary: ObjectSummary) -> str | None:
    checks = _CHECKS[package_kind]
    pair = (summary.api_version, summary.kind)
    if any(pair in allowed for allowed, _ in checks):
        return None
    messages = [message for _, message in checks]
    return messages[0] if len(messages) == 1 else ERR_OR + ", ".join(messages)


def _lint_meta(meta: PackageMeta) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    warnings: list[str] = []
    if not meta.name:
        warnings.append("package meta has no metadata.name")
    if meta.crossplane_version is not None:
        try:
            parse_constraint(meta.crossplane_version)
        except ConstraintError as exc:
            errors.append(f"{ERR_BAD_CONSTRAINTS}: {exc.message}")
    for dep in meta.depends_on:
        dep_errors, dep_warnings = _lint_dependency(dep)
        errors.extend(dep_errors)
        warnings.extend(dep_warnings)
    errors.extend(_lint_required_apis(meta.annotations))
    return errors, warnings


def _lint_required_apis(annotations: Mapping[str, str]) -> list[str]:
    """Each item of ``lockwright.dev/requires-apis`` that is not an API, named."""
    errors = []
    for item in annotations.get(REQUIRES_APIS, "").split(","):
        try:
            if item.strip():
                parse_api(item.strip())
        except InvalidReference as exc:
            errors.append(f"metadata.annotations[{REQUIRES_APIS}]: {exc.message}")
    return errors


def _lint_dependency(dep: Dependency) -> tuple[list[str], list[str]]:
    where = f'dependency "{dep.package}"'
    errors: list[str] = []
    warnings: list[str] = []
    if not dep.is_digest:
        try:
            parse_constraint(dep.constraint)
        except ConstraintError as exc:
            errors.append(f"{where}: version constraint is poorly formatted: {exc.message}")
    last = dep.package.rsplit("/", 1)[-1]
    if "@" in dep.package or ":" in last:
        errors.append(f"{where}: package must not include a tag or digest; use version")
    host = dep.package.split("/", 1)[0]
    if "/" not in dep.package or not ("." in host or ":" in host or host == "localhost"):
        errors.append(f"{where}: package must be fully qualified (registry host first)")
    if dep.form != "apiVersion":
        warnings.append(f"{where}: the {dep.form} field is deprecated; "
                        "use apiVersion, kind and package")
    return errors, warnings


def _object_warnings(summary: ObjectSummary, obj: Mapping[str, Any]) -> tuple[str, ...]:
    if (summary.api_version, summary.kind) not in _VWC + _MWC:
        return ()
    webhooks = obj.get("webhooks")
    found = []
    for hook in webhooks if isinstance(webhooks, list) else []:
        config = hook.get("clientConfig") if isinstance(hook, Mapping) else None
        if isinstance(config, Mapping) and config.get("url"):
            found.append(f"webhook {hook.get('name')!r} sets clientConfig.url, which is replaced "
                         "by the provider's Service; the API server rejects both together")
    return tuple(found)
