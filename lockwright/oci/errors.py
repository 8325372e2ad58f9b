"""Turn registry responses into the ``lockwright.errors`` tree, once, at the edge.

Messages name the host, repository and status and the registry's error codes; they never
carry request headers, so credentials cannot leak through them.
"""

from __future__ import annotations

import requests

from lockwright.errors import (
    InvalidPackage,
    LockwrightError,
    PackageNotFound,
    RegistryUnavailable,
    Unauthorized,
)
from lockwright.oci.reference import Reference

_NOT_FOUND_CODES = frozenset({"MANIFEST_UNKNOWN", "NAME_UNKNOWN", "BLOB_UNKNOWN"})
_DENIED_CODES = frozenset({"UNAUTHORIZED", "DENIED"})


def short(exc: BaseException, limit: int = 200) -> str:
    """The first ``limit`` characters of an exception's text."""
    return str(exc)[:limit]


def error_codes(resp: requests.Response) -> list[str]:
    """The ``errors[].code`` values of a distribution error body, if any."""
    try:
        body = resp.json()
    except ValueError:
        return []
    errors = body.get("errors") if isinstance(body, dict) else None
    return [str(e.get("code")) for e in errors or [] if isinstance(e, dict) and e.get("code")]


def classify(resp: requests.Response, method: str, ref: Reference,
             had_credentials: bool) -> LockwrightError:
    """The typed error for a failed response (the response is closed)."""
    status = resp.status_code
    codes = error_codes(resp) if method != "HEAD" else []
    resp.close()
    detail = f"registry {ref.api_host} answered {status} to {method} for {ref}" + (
        f" ({', '.join(codes)})" if codes else "")
    if status == 404 or _NOT_FOUND_CODES.intersection(codes):
        return PackageNotFound(detail)
    if status in (401, 403) or _DENIED_CODES.intersection(codes):
        creds = "the configured credentials" if had_credentials else "anonymous access"
        return Unauthorized(f"{detail}: {creds} refused")
    if status == 429 or status >= 500:
        return RegistryUnavailable(detail)
    return InvalidPackage(detail)
