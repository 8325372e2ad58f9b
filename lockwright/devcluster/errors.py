"""API errors as kube-apiserver reports them: an HTTP code and a ``Status`` body."""

from __future__ import annotations

from typing import Any

from lockwright.devcluster.types import ResourceType


class ApiError(Exception):
    """An error answered to the client as a ``Status`` object."""

    def __init__(self, code: int, reason: str, message: str,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "message": self.message,
                                "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(rt: ResourceType, name: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "kind": rt.plural}
    if rt.group:
        d["group"] = rt.group
    d.update(extra)
    return d


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{rt.group_resource} "{name}" not found', _details(rt, name))


def already_exists(rt: ResourceType, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{rt.group_resource} "{name}" already exists',
                    _details(rt, name))


def conflict(rt: ResourceType, name: str) -> ApiError:
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {rt.group_resource} "{name}": the object has'
                    " been modified; please apply your changes to the latest version and try again",
                    _details(rt, name))


def invalid(rt: ResourceType, name: str, message: str, causes: list[dict[str, Any]]) -> ApiError:
    d = _details(rt, name, causes=causes)
    d["kind"] = rt.kind
    return ApiError(422, "Invalid", message, d)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(rt: ResourceType, name: str, message: str) -> ApiError:
    return ApiError(403, "Forbidden", message, _details(rt, name))


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def unsupported_media_type(content_type: str) -> ApiError:
    """A patch of a type kube-apiserver does not take (its words, ``details: {}``)."""
    return ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


def not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource",
                    {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]})


def too_large() -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
