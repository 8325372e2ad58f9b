"""Kubernetes answers map once into the lockwright error tree, and cross the edge typed.

Matrix: status code × Status reason → error class and retryability; messages truncated;
unknown exceptions retryable; ApplicationError type = class name, non_retryable = permanent.
"""

from __future__ import annotations

import json

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from lockwright.activities.errors import edge, to_application_error
from lockwright import errors as e
from lockwright.k8s import Kube
from lockwright.k8s.client import CACHE_BEHIND_ASKS
from lockwright.k8s.discovery import Resource
from lockwright.k8s.errors import status_error, unavailable


def _status(reason: str, message: str = "boom") -> bytes:
    return json.dumps({"kind": "Status", "reason": reason, "message": message}).encode()


@pytest.mark.parametrize(("code", "reason", "cls", "retryable"), [
    (404, "NotFound", e.KubeNotFound, True),
    (409, "Conflict", e.KubeConflict, True),
    (409, "AlreadyExists", e.KubeAlreadyExists, True),
    (410, "Expired", e.KubeGone, True),
    (422, "Invalid", e.KubeInvalid, False),
    (400, "BadRequest", e.KubeInvalid, False),
    (403, "Forbidden", e.KubeForbidden, False),
    (401, "Unauthorized", e.KubeForbidden, False),
    (429, "TooManyRequests", e.KubernetesUnavailable, True),
    (503, "ServiceUnavailable", e.KubernetesUnavailable, True),
])
def test_status_codes_map_to_the_tree(code: int, reason: str, cls: type, retryable: bool) -> None:
    err = status_error(code, _status(reason), "GET", "/api/v1/x")
    assert type(err) is cls and err.retryable is retryable
    assert err.message.startswith(f"GET /api/v1/x: {code} {reason}: boom")


@pytest.mark.parametrize(("message", "cls"), [
    # kube-apiserver's answer to a continue page its watch cache has not caught up with
    ("Timeout: Too large resource version: 20450, current: 20145", e.KubeCacheBehind),
    ("the server was unable to return a response in the time allotted",
     e.KubernetesUnavailable),
])
def test_a_504_for_a_version_the_cache_lacks_is_told_apart(message: str, cls: type) -> None:
    err = status_error(504, _status("Timeout", message), "GET", "/apis/x/v1/ys")
    assert type(err) is cls and err.retryable


def _pager(answers: list[Exception | dict[str, object]]) -> tuple[Kube, list[object]]:
    kube, asked = Kube.__new__(Kube), []

    def call(method: str, path: str, query: object = None, **kw: object) -> object:
        asked.append(query)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    kube._call = call  # type: ignore[method-assign]
    return kube, asked


def _behind() -> Exception:
    return e.KubeCacheBehind("GET /apis/x/v1/ys: 504 Timeout: Too large resource version")


def test_a_list_page_the_cache_is_behind_on_is_asked_for_again() -> None:
    kube, asked = _pager([{"items": [1], "metadata": {"continue": "t"}}, _behind(), _behind(),
                          {"items": [2], "metadata": {}}])
    assert [p["items"] for p in kube.list_pages("/apis/x/v1/ys", limit=1)] == [[1], [2]]
    assert asked[1:] == [[("limit", "1"), ("continue", "t")]] * 3


def test_a_cache_that_stays_behind_fails_the_list() -> None:
    kube, asked = _pager([_behind()] * (CACHE_BEHIND_ASKS + 1))
    with pytest.raises(e.KubeCacheBehind):
        list(kube.list_pages("/apis/x/v1/ys"))
    assert len(asked) == CACHE_BEHIND_ASKS


def test_huge_messages_are_cut_and_non_json_bodies_survive() -> None:
    assert len(status_error(422, _status("Invalid", "x" * 10_000), "PUT", "/p").message) < 600
    assert "<html>" in status_error(500, b"<html>oops</html>", "GET", "/p").message


def test_connection_errors_are_transient() -> None:
    err = unavailable("GET", "/api", ConnectionRefusedError("refused"))
    assert isinstance(err, e.KubernetesUnavailable) and "refused" in err.message


@pytest.mark.parametrize(("exc", "type_", "non_retryable"), [
    # Another package holds the object, which may go away: retried (docs/design.md invariant 6).
    (e.ConflictError("held"), "ConflictError", False),
    (e.PackageNotFound("tag v2 not pushed yet"), "PackageNotFound", False),
    (e.Unauthorized("no pull secret yet"), "Unauthorized", False),
    (e.LintError("not a CRD"), "LintError", True),
    # The object a step acts on went away: the branch ends, Temporal retries nothing.
    (e.ObjectGone("Provider p is being deleted"), "ObjectGone", True),
    (e.KubeConflict("race"), "KubeConflict", False),
    (KeyError("bug"), "KeyError", False),
])
def test_edge_types_errors(exc: BaseException, type_: str, non_retryable: bool) -> None:
    @edge
    def failing() -> None:
        raise exc

    with pytest.raises(ApplicationError) as info:
        ActivityEnvironment().run(failing)
    assert (info.value.type, info.value.non_retryable) == (type_, non_retryable)
    assert info.value.__cause__ is exc
    assert to_application_error(exc).type == type_


@pytest.mark.parametrize(("api_version", "namespace", "name", "sub", "path"), [
    ("v1", "ns", "a", None, "/api/v1/namespaces/ns/secrets/a"),
    ("v1", None, None, None, "/api/v1/secrets"),
    ("pkg.crossplane.io/v1", None, "p", "status", "/apis/pkg.crossplane.io/v1/secrets/p/status"),
])
def test_resource_paths(api_version: str, namespace: str | None, name: str | None,
                        sub: str | None, path: str) -> None:
    assert Resource(api_version, "Secret", "secrets", True).path(namespace, name, sub) == path
