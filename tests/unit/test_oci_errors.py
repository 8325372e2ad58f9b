"""Registry failures read well on a condition: the cause in words, not a wrapper's repr."""

from __future__ import annotations

import requests

from lockwright.errors import PackageNotFound
from lockwright.oci import errors
from lockwright.oci.reference import parse
from tests.helpers import free_port


def test_root_cause_of_a_refused_connection_is_its_os_error() -> None:
    try:
        requests.get(f"http://127.0.0.1:{free_port()}/v2/", timeout=2)
    except requests.RequestException as exc:
        assert errors.root_cause(exc) == "connection refused"
    else:
        raise AssertionError("nothing listens there, the request must fail")


def test_root_cause_without_an_os_error_is_the_short_text() -> None:
    exc = requests.ReadTimeout("x" * 500)
    assert errors.root_cause(exc, limit=50) == "x" * 50


def test_a_missing_tag_says_not_found() -> None:
    resp = requests.Response()
    resp.status_code = 404
    resp._content = b'{"errors": [{"code": "MANIFEST_UNKNOWN"}]}'
    ref = parse("127.0.0.1:5000/org/pkg:v9.9.9")
    err = errors.classify(resp, "GET", ref, had_credentials=False)
    assert isinstance(err, PackageNotFound)
    assert err.message.startswith("127.0.0.1:5000/org/pkg:v9.9.9 not found: ")
    assert "404" in err.message and "MANIFEST_UNKNOWN" in err.message
