"""RFC 7386 JSON merge patch and RFC 6902 JSON patch, as kube-apiserver applies them.

kube-apiserver uses gopkg.in/evanphx/json-patch.v4; its quirks (negative array indices,
``replace`` of a missing object key adds it) and error texts are kept.
"""

from __future__ import annotations

import copy
from typing import Any

from lockwright.devcluster.fieldset import json_equal

MAX_JSON_PATCH_OPERATIONS = 10000


class PatchError(Exception):
    """A patch that cannot be applied.

    ``code`` is the HTTP status to answer: 422 when the patch is well-formed but does not
    apply (failed ``test``, missing path), 400 when the patch itself is malformed, 413 when
    a JSON patch has too many operations, 500 where kube-apiserver itself answers 500.
    ``str(exc)`` is the Status message kube-apiserver sends; ``detail`` says what went wrong
    when that message is generic.
    """

    def __init__(self, code: int, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.detail = detail or message


def _unprocessable(detail: str) -> PatchError:
    # kube-apiserver answers every failed JSON patch operation with this generic 422 and
    # drops json-patch's own text (NewGenericServerResponse); keep it as the detail.
    return PatchError(422, "the server rejected our request due to an error in our request",
                      detail)


# -- RFC 7386 JSON merge patch ---------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch (``application/merge-patch+json``).

    Args:
        target: The current document; not modified.
        patch: The merge patch. ``null`` values delete keys.

    Returns:
        The patched document.

    Raises:
        PatchError: 400 when the patch is ``null``.
    """
    if patch is None:
        raise PatchError(400, "Invalid JSON Patch")
    return _merge(target, patch)


def _merge(target: Any, patch: Any) -> Any:
    if isinstance(patch, list):
        return [_merge(None, item) if isinstance(item, dict) else item for item in patch]
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


# -- RFC 6902 JSON patch ---------------------------------------------------------------


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch (``application/json-patch+json``).

    Args:
        target: The current document; not modified.
        operations: The list of operations (add, remove, replace, move, copy, test).

    Returns:
        The patched document.

    Raises:
        PatchError: 400 for a body that is not a list of operations, 413 for more than
            10000 operations, 422 for an operation that does not apply.
    """
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise PatchError(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(413, "The allowed maximum operations in a JSON patch is"
                              f" {MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}")
    doc = {"": copy.deepcopy(target)}
    for op in operations:
        _json_operation(doc, op)
    return doc[""]


def _json_operation(doc: dict[str, Any], op: dict[str, Any]) -> None:
    kind = op["op"] if isinstance(op.get("op"), str) else "unknown"
    handler = _OPERATIONS.get(kind)
    if handler is None:
        raise _unprocessable(f"Unexpected kind: {kind}")
    path = op.get("path")
    if not isinstance(path, str):
        raise _unprocessable(f"{kind} operation failed to decode path:"
                              " operation missing path field")
    handler(doc, op, path)


def _parent(doc: dict[str, Any], path: str) -> tuple[Any, str] | None:
    """The container holding the pointer's last token, and that token (None: missing)."""
    if not path.startswith("/"):
        return None
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]
    node: Any = doc[""]
    for token in tokens[:-1]:
        node = _child(node, token)
        if node is None:
            return None
    return node, tokens[-1]


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        return node.get(token)
    if isinstance(node, list):
        index = _index(node, token, len(node) - 1)
        return node[index] if index is not None else None
    return None


def _index(array: list[Any], token: str, highest: int) -> int | None:
    try:
        index = int(token)
    except ValueError:
        return None
    if index < 0:  # json-patch.v4 accepts negative indices counted from the end
        index += highest + 1
    return index if 0 <= index <= highest else None


def _missing(kind: str, path: str, what: str = "path") -> PatchError:
    return _unprocessable(f'{kind} operation does not apply: doc is missing {what}: "{path}"'
                           ": missing value")


def _get(doc: dict[str, Any], path: str, kind: str) -> Any:
    if path == "":
        return doc[""]
    found = _parent(doc, path)
    if found is None:
        raise _missing(kind, path)
    container, token = found
    if isinstance(container, dict):
        if token not in container:
            raise _missing(kind, path)
        return container[token]
    index = _index(container, token, len(container) - 1) if isinstance(container, list) else None
    if index is None:
        raise _missing(kind, path)
    return container[index]


def _add(doc: dict[str, Any], op: dict[str, Any], path: str, kind: str = "add") -> None:
    value = copy.deepcopy(op.get("value"))
    if path == "":
        doc[""] = value
        return
    found = _parent(doc, path)
    if found is None or not isinstance(found[0], (dict, list)):
        raise _missing(kind, path)
    container, token = found
    if isinstance(container, dict):
        container[token] = value
        return
    index = len(container) if token == "-" else _index(container, token, len(container))
    if index is None:
        raise _unprocessable(f"Unable to access invalid index: {token}: invalid index referenced")
    container.insert(index, value)


def _remove(doc: dict[str, Any], op: dict[str, Any], path: str, kind: str = "remove") -> None:
    found = _parent(doc, path)
    if found is None or not isinstance(found[0], (dict, list)):
        raise _missing(kind, path)
    container, token = found
    if isinstance(container, dict):
        if token not in container:
            raise _unprocessable(f"error in remove for path: '{path}': Unable to remove"
                                  f" nonexistent key: {token}: missing value")
        del container[token]
        return
    index = _index(container, token, len(container) - 1)
    if index is None:
        raise _unprocessable(f"error in remove for path: '{path}': Unable to access invalid"
                              f" index: {token}: invalid index referenced")
    del container[index]


def _replace(doc: dict[str, Any], op: dict[str, Any], path: str) -> None:
    found = _parent(doc, path) if path else None
    if path and (found is None or not isinstance(found[0], (dict, list))):
        raise _missing("replace", path)
    if found is not None and isinstance(found[0], list):
        if _index(found[0], found[1], len(found[0]) - 1) is None:
            raise _missing("replace", path, "key")
        _remove(doc, op, path, "replace")
    # json-patch.v4 replaces a missing object key by adding it; kube-apiserver inherits that.
    _add(doc, op, path, "replace")


def _move(doc: dict[str, Any], op: dict[str, Any], path: str) -> None:
    source = op.get("from")
    if not isinstance(source, str):
        raise _unprocessable("move operation failed to decode from: operation missing from")
    value = _get(doc, source, "move")
    _remove(doc, op, source, "move")
    _add(doc, {"value": value}, path, "move")


def _copy(doc: dict[str, Any], op: dict[str, Any], path: str) -> None:
    source = op.get("from")
    if not isinstance(source, str):
        raise _unprocessable("copy operation failed to decode from: operation missing from")
    _add(doc, {"value": _get(doc, source, "copy")}, path, "copy")


def _test(doc: dict[str, Any], op: dict[str, Any], path: str) -> None:
    try:
        actual = _get(doc, path, "test")
    except PatchError:
        actual = None
    if not json_equal(actual, op.get("value")):
        raise _unprocessable(f"testing value {path} failed: test failed")


_OPERATIONS = {"add": _add, "remove": _remove, "replace": _replace, "move": _move,
               "copy": _copy, "test": _test}
