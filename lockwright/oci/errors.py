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


def root_cause(exc: BaseException, limit: int = 200) -> str:
    """The innermost OS error's words (``connection refused``), else :func:`short`.

    requests wraps the cause three deep (ConnectionError → MaxRetryError →
    NewConnectionError → ConnectionRefusedError); the outer texts are long and the cause
    comes last, where truncation would cut it.
    """
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return f"{current.strerror[0].lower()}{current.strerror[1:]}"[:limit]
        nested = [getattr(current, "reason", None), current.__cause__, current.__context__,
                  *current.args]
        todo.extend(e for e in nested if isinstance(e, BaseException))
    return short(exc, limit)


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
        # Say it in words too: a status code alone reads as noise on a condition.
        return PackageNotFound(f"{ref} not found: {detail}")
    if status in (401, 403) or _DENIED_CODES.intersection(codes):
        creds = "the configured credentials" if had_credentials else "anonymous access"
        return Unauthorized(f"{detail}: {creds} refused")
    if status == 429 or status >= 500:
        return RegistryUnavailable(detail)
    return InvalidPackage(detail)
