"""The fidelity report's figures (tests/fidelity/report.py), from plain outcomes: the
traffic and the validation gaps counted together, and explanations no difference needs."""

from __future__ import annotations

from tests.fidelity.compare import Report
from tests.fidelity.explained import TRAFFIC_RULES
from tests.fidelity.report import Fidelity
from tests.fidelity.traffic import Outcome
from tests.fidelity.validation import Case

V3 = {"method": "GET", "path": "/openapi/v3", "query": {}, "accept": "application/json,*/*",
      "content_type": "", "body": ""}


def _shape(path: str) -> dict[str, object]:
    return {**V3, "path": path}


def test_validation_gaps_are_counted_with_the_traffic() -> None:
    traffic = [Outcome(_shape("/api")), Outcome(V3, [".media: 'a' vs 'b'"]),
               Outcome(_shape("/debug/rbac"), not_compared="devcluster's own")]
    validation = [Case("date-time", (201, 422), "devcluster's date-time"),
                  Case("agrees", (201, 201), "")]
    report = Fidelity(traffic, validation, Report([], []))

    lines = report.text().splitlines()

    assert lines[0].startswith("recorded traffic: 3 shapes seen, 2 compared, 1 identical, "
                               "1 different (1 explained)")
    assert "in all: 4 compared, 2 identical, 2 different (2 explained)" in lines
    assert not report.unexplained()


def test_an_explanation_no_difference_needs_is_reported_unless_a_race_decides() -> None:
    report = Fidelity([Outcome(V3, [".media: 'a' vs 'b'"])], [], Report([], []))

    unused = report.unused_rules()

    assert "/openapi/v3 index media type" not in unused
    assert "/openapi/v2 in protobuf" in unused
    assert not [r.name for r in TRAFFIC_RULES if r.varies and r.name in unused]
