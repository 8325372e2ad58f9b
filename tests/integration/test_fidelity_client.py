"""The differential check's HTTP client retries as client-go does: a 429 with Retry-After
(kube-apiserver's answer to a watch while the resource's watch cache starts, just after its
CRD is established) is asked again; one without the header is the answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fidelity.client import Client
from tests.integration.fake_http import JsonHandler, serving

BUSY = {"kind": "Status", "code": 429, "message": "storage is (re)initializing"}


class Busy(JsonHandler):
    """Answers 429 to the first ``busy`` requests (with Retry-After: 0 when ``retry_after``),
    then 200 with an empty JSON list."""

    busy = 2
    retry_after = True
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        Busy.seen.append(self.path)
        if len(Busy.seen) > Busy.busy:
            self.send_json([])
        else:
            self.send_json(BUSY, 429, {"Retry-After": "0"} if Busy.retry_after else None)


@pytest.fixture
def server() -> Iterator[str]:
    Busy.seen = []
    with serving(Busy) as url:
        yield url


@pytest.mark.parametrize("retry_after, code, requests", [(True, 200, 3), (False, 429, 1)])
def test_a_429_is_asked_again_only_when_it_says_when(
        server: str, monkeypatch: pytest.MonkeyPatch, retry_after: bool, code: int,
        requests: int) -> None:
    monkeypatch.setattr(Busy, "retry_after", retry_after)
    got = Client(server, None).send("GET", "/apis/pkg.crossplane.io/v1/providers")
    assert got.code == code and len(Busy.seen) == requests


def test_a_watch_is_asked_again_too(server: str) -> None:
    got = Client(server, None).watch("/apis/pkg.crossplane.io/v1/providers?watch=true", 1)
    assert got.code == 200 and len(Busy.seen) == 3
    assert Busy.seen[-1].endswith("timeoutSeconds=1")
