"""Parse and lint a package.yaml before it may enter the cache.

A thin seam over :func:`lockwright.xpkg.parse.scan_package` (one streaming pass with
libyaml, no objects kept), so the fetcher never caches a package the installer would
refuse: malformed YAML, zero or two meta objects, an object of the wrong kind for the
package, or a malformed version constraint.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lockwright.errors import ConstraintError, InvalidPackage

if TYPE_CHECKING:
    from lockwright.xpkg.parse import PackageSummary


def validate_package(path: Path, expected_kind: str | None = None) -> PackageSummary:
    """Scan the package.yaml at ``path``; return its summary.

    Raises:
        InvalidPackage: it does not parse, or breaks a lint rule (``LintError``); a
            malformed constraint met while parsing is reported the same way.
    """
    from lockwright.xpkg.parse import scan_package

    with path.open("rb") as f:
        try:
            return scan_package(f, expect=expected_kind)
        except ConstraintError as exc:
            raise InvalidPackage(f"invalid version constraint: {exc.message}") from exc
