"""devcluster's watch-list options, as kube-apiserver validates and defaults them."""

from __future__ import annotations

import pytest

from lockwright.devcluster.errors import ApiError
from lockwright.devcluster.watchlist import query_bool, sends_initial_events

NOT_OLDER = {"resourceVersionMatch": "NotOlderThan"}


@pytest.mark.parametrize(("query", "initial"), [
    ({}, True),
    ({"resourceVersion": "0"}, True),
    ({"resourceVersion": "12"}, False),
    ({"sendInitialEvents": "true", **NOT_OLDER}, True),
    ({"sendInitialEvents": "true", "resourceVersion": "12", **NOT_OLDER}, True),
    ({"sendInitialEvents": "false", **NOT_OLDER}, False),
    ({"sendInitialEvents": "false", "resourceVersion": "0", **NOT_OLDER}, False),
])
def test_which_watches_start_with_the_current_state(query: dict[str, str], initial: bool) -> None:
    assert sends_initial_events(query) is initial


@pytest.mark.parametrize(("query", "fields", "words"), [
    ({"sendInitialEvents": "true"}, ["resourceVersionMatch"],
     "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
    (NOT_OLDER, ["resourceVersionMatch"], "forbidden for watch unless sendInitialEvents"),
    ({"resourceVersionMatch": "Exact", "resourceVersion": "3"},
     ["resourceVersionMatch", "resourceVersionMatch"], 'Unsupported value: "Exact"'),
    ({"sendInitialEvents": "true", "resourceVersionMatch": "Exact"},
     ["resourceVersionMatch", "resourceVersionMatch"], "[resourceVersionMatch: Forbidden"),
])
def test_refused_options_are_422_naming_the_field(query: dict[str, str], fields: list[str],
                                                   words: str) -> None:
    with pytest.raises(ApiError) as caught:
        sends_initial_events(query)
    err = caught.value
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message.startswith('ListOptions.meta.k8s.io "" is invalid: ') and words in err.message
    assert err.details is not None and err.details["kind"] == "ListOptions"
    assert [c["field"] for c in err.details["causes"]] == fields


@pytest.mark.parametrize(("raw", "value"), [
    (None, False), ("true", True), ("1", True), ("", True), ("yes", True),
    ("0", False), ("false", False), ("False", False), ("OFF", False),
])
def test_query_booleans_read_as_kube_apiserver_reads_them(raw: str | None, value: bool) -> None:
    assert query_bool(raw) is value
