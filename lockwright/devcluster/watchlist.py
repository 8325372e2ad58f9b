"""Watch-list options as kube-apiserver reads them: ``sendInitialEvents`` and
``resourceVersionMatch`` on a watch (its WatchList feature, on by default since Kubernetes
1.34), validated and defaulted as its ListOptions are.

A watch-list starts with the current state as ADDED events; when it allows bookmarks, a
BOOKMARK annotated ``k8s.io/initial-events-end: "true"`` follows them at once. kube-apiserver
defaults a watch from no resourceVersion (or ``0``) that names neither option to a watch-list,
so clients that only set ``allowWatchBookmarks`` get that bookmark too.
"""

from __future__ import annotations

from typing import Any

from lockwright.devcluster.errors import ApiError

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
NOT_OLDER_THAN = "NotOlderThan"
MSG_MATCH_ALONE = ("Forbidden: resourceVersionMatch is forbidden for watch unless "
                   "sendInitialEvents is provided")


def sends_initial_events(q: dict[str, str]) -> bool:
    """Whether the watch asked for by query ``q`` starts with the current state.

    Raises:
        ApiError: 422 Invalid ``ListOptions``, with kube-apiserver's causes, for options
            it refuses.
    """
    raw = q.get("sendInitialEvents")
    match = q.get("resourceVersionMatch", "")
    causes = _causes(raw, match)
    if causes:
        raise invalid_list_options(causes)
    if raw is None and not match:
        return q.get("resourceVersion", "") in ("", "0")
    return query_bool(raw)


def query_bool(raw: str | None) -> bool:
    """A boolean query parameter as kube-apiserver converts one: absent, ``0``, ``false``
    and ``off`` (any case) are false; anything else, even an empty value, is true."""
    if raw is None:
        return False
    return not (raw == "0" or raw.lower() in ("false", "off"))


def _causes(raw: str | None, match: str) -> list[tuple[str, str, str]]:
    causes: list[tuple[str, str, str]] = []
    if raw is not None and match != NOT_OLDER_THAN:
        causes.append(("FieldValueForbidden", "resourceVersionMatch",
                       "Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
                       + NOT_OLDER_THAN))
    if match and raw is None:
        causes.append(("FieldValueForbidden", "resourceVersionMatch", MSG_MATCH_ALONE))
    if match and match != NOT_OLDER_THAN:
        causes.append(("FieldValueNotSupported", "resourceVersionMatch",
                       f'Unsupported value: "{match}": supported values: "{NOT_OLDER_THAN}"'))
    return causes


def invalid_list_options(causes: list[tuple[str, str, str]]) -> ApiError:
    """kube-apiserver's 422 for refused list options (an aggregate when there are several)."""
    texts = [f"{field}: {message}" for _, field, message in causes]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {
        "group": "meta.k8s.io", "kind": "ListOptions",
        "causes": [{"reason": reason, "message": message, "field": field}
                   for reason, field, message in causes]}
    return ApiError(422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: {joined}', details)


def end_bookmark(kind: str, api_version: str, rv: int) -> dict[str, Any]:
    """The bookmark that ends a watch-list's initial events."""
    return {"kind": kind, "apiVersion": api_version,
            "metadata": {"resourceVersion": str(rv),
                         "annotations": {INITIAL_EVENTS_END: "true"}}}
