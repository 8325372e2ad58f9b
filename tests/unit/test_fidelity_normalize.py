"""The fidelity check's normalising (tests/fidelity/shapes.py): what may differ between two
servers' answers to the same replayed request is made equal, and nothing else."""

from __future__ import annotations

from typing import Any

from tests.fidelity.shapes import normalize


def entry(manager: str, time: str, label: str) -> dict[str, Any]:
    return {"manager": manager, "operation": "Update", "apiVersion": "pkg.crossplane.io/v1",
            "time": time, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {f"f:{label}": {}}}}}


def test_managed_fields_written_in_one_second_or_across_two_compare_equal() -> None:
    """Both servers sort managedFields by time to the second, then by manager: the same two
    writes come back in either order, depending on the second they fell in."""
    same_second = {"metadata": {"managedFields": [
        entry("fidelity", "2026-12-01T23:59:59Z", "fidelity"),
        entry("unknown", "2026-12-01T23:59:59Z", "other")]}}
    across = {"metadata": {"managedFields": [
        entry("unknown", "2026-12-01T23:59:59Z", "other"),
        entry("fidelity", "2026-12-02T00:00:00Z", "fidelity")]}}
    assert normalize(same_second) == normalize(across)


def test_managed_fields_that_differ_still_differ() -> None:
    one = {"metadata": {"managedFields": [entry("fidelity", "t", "fidelity")]}}
    other = {"metadata": {"managedFields": [entry("fidelity", "t", "other")]}}
    assert normalize(one) != normalize(other)
