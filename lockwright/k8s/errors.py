"""Turn Kubernetes API answers into the lockwright error tree, once.

The API answers failures with a ``Status`` body (``reason``, ``message``); we keep both,
classify by HTTP status, and truncate the message so a huge validation report or an echoed
object never travels further. Connection-level failures (refused, reset, timeouts, TLS)
become :class:`KubernetesUnavailable` (see :func:`answered`), chained from the original
exception. A watch reports failures in-band, as ``ERROR`` events carrying a ``Status``
object: :func:`status_object_error` classifies those the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
from kubernetes.client import exceptions as kexceptions

from lockwright.errors import (
    KubeAlreadyExists,
    KubeCacheBehind,
    KubeConflict,
    KubeError,
    KubeForbidden,
    KubeGone,
    KubeInvalid,
    KubeNotFound,
    KubernetesUnavailable,
    LockwrightError,
)

MAX_DETAIL = 400
#: How kube-apiserver words a 504 for a version its watch cache has not reached
#: (``storage.NewTooLargeResourceVersionError``).
CACHE_BEHIND = "Too large resource version"
#: What a request that got no HTTP answer raises: the pool's errors, the client's own
#: (auth plugins, TLS set-up) and the socket's.
NO_ANSWER = (urllib3.exceptions.HTTPError, kexceptions.ApiException, OSError)


def _status_body(body: bytes) -> tuple[str, str]:
    """``(reason, message)`` of a ``Status`` body; the raw text when it is not one."""
    try:
        doc = json.loads(body or b"{}")
    except ValueError:
        return "", body[:MAX_DETAIL].decode("utf-8", "replace")
    if not isinstance(doc, dict):
        return "", ""
    return str(doc.get("reason") or ""), str(doc.get("message") or "")


def status_error(status: int, body: bytes, method: str, path: str) -> LockwrightError:
    """The error for a non-2xx answer to ``method path``.

    Args:
        status: the HTTP status.
        body: the response body (a ``Status`` object, usually).
        method: the HTTP method, for the message.
        path: the request path without query, for the message.
    """
    reason, message = _status_body(body)
    return _classify(status, reason, message, method, path)


def status_object_error(status: dict[str, Any], method: str, path: str) -> LockwrightError:
    """The error a decoded ``Status`` object reports (a watch's ``ERROR`` event holds one).

    Args:
        status: the ``Status`` object; its ``code`` is the HTTP status it stands for.
        method: the HTTP method, for the message.
        path: the request path without query, for the message.
    """
    code = status.get("code")
    return _classify(code if isinstance(code, int) else 0, str(status.get("reason") or ""),
                     str(status.get("message") or ""), method, path)


def _classify(status: int, reason: str, message: str, method: str,
              path: str) -> LockwrightError:
    text = f"{method} {path}: {status} {reason or 'error'}: {message[:MAX_DETAIL]}"
    if status == 404:
        return KubeNotFound(text, status, reason)
    if status == 409:
        cls = KubeAlreadyExists if reason == "AlreadyExists" else KubeConflict
        return cls(text, status, reason)
    if status == 410:
        return KubeGone(text, status, reason)
    if status in (401, 403):
        return KubeForbidden(text, status, reason)
    if status == 504 and CACHE_BEHIND in message:
        return KubeCacheBehind(text)
    if status == 429 or status >= 500:
        return KubernetesUnavailable(text)
    if 400 <= status < 500:
        return KubeInvalid(text, status, reason)
    return KubeError(text, status, reason)


def unavailable(method: str, path: str, exc: BaseException) -> KubernetesUnavailable:
    """The error for a request that got no HTTP answer at all."""
    detail = str(exc).splitlines()[0][:MAX_DETAIL] if str(exc) else ""
    return KubernetesUnavailable(
        f"{method} {path}: Kubernetes API unreachable: {type(exc).__name__}: {detail}")


@contextmanager
def answered(method: str, path: str) -> Iterator[None]:
    """Raise :class:`KubernetesUnavailable` for a request inside that got no HTTP answer.

    Args:
        method: the HTTP method, for the message.
        path: the request path without query, for the message.
    """
    try:
        yield
    except NO_ANSWER as exc:
        raise unavailable(method, path, exc) from exc
