"""The checks of an embedded resource (``x-kubernetes-embedded-resource``).

The API server requires ``apiVersion`` and ``kind`` to be non-empty strings and validates
the embedded ``metadata`` as ObjectMeta. What is reproduced here exactly answers ``False``
(invalid); a value this module cannot vouch for answers ``None`` (cannot check); ``True``
only for what the server surely accepts.
"""

from __future__ import annotations

import re
from typing import Any

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SIMPLE_META = frozenset({"name", "generateName", "namespace", "labels", "annotations"})


def type_meta(key: str, value: Any) -> tuple[bool | None, str]:
    """Is the ``apiVersion`` or ``kind`` of an embedded resource valid, and why not."""
    if not isinstance(value, str):
        return False, "must be a string"
    if not value:
        return False, "must not be empty"
    if key == "apiVersion":
        return (True, "") if value.count("/") <= 1 else (None, "not a group/version")
    plain = len(value) <= 63 and _DNS1035.fullmatch(value.lower()) is not None
    return (True, "") if plain else (None, "kind outside DNS-1035 labels")


def _subdomain(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= 253 and _SUBDOMAIN.fullmatch(v) is not None


def _qualified(key: Any) -> bool:
    if not isinstance(key, str):
        return False
    prefix, slash, name = key.rpartition("/")
    return (not slash or _subdomain(prefix)) and len(name) <= 63 and \
        _QUALIFIED.fullmatch(name) is not None


def _label_value(v: Any) -> bool:
    return isinstance(v, str) and (v == "" or (len(v) <= 63 and _QUALIFIED.fullmatch(v)
                                               is not None))


def _string_map(m: Any, value_ok: Any) -> bool:
    return isinstance(m, dict) and all(_qualified(k) and value_ok(v) for k, v in m.items())


def metadata_accepted(meta: dict[str, Any]) -> bool:
    """True when the server surely accepts this embedded ObjectMeta: only names,
    namespace, labels and annotations, each well-formed. False means "cannot tell"."""
    if set(meta) - _SIMPLE_META:
        return False
    checks = (
        "name" not in meta or _subdomain(meta["name"]),
        "generateName" not in meta or _subdomain(str(meta["generateName"]) + "x"),
        "namespace" not in meta or (isinstance(meta["namespace"], str) and
                                    len(meta["namespace"]) <= 63 and
                                    _LABEL.fullmatch(meta["namespace"]) is not None),
        "labels" not in meta or _string_map(meta["labels"], _label_value),
        "annotations" not in meta or (_string_map(meta["annotations"], _is_str) and
                                      len(str(meta["annotations"])) < 200_000),
    )
    return all(checks)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)
