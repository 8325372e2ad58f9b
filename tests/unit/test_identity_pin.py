"""The API pin: the decision, the type differences, and what a refusal says (issue 23)."""

from __future__ import annotations

import pytest

from lockwright.identity import pin
from lockwright.identity.names import PIN_API

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
CRD = "CustomResourceDefinition widgets.example.org"
OTHER = "CustomResourceDefinition gadgets.example.org"


@pytest.mark.parametrize(("pinned", "actual", "verdict"), [
    ("", A, pin.Verdict.UNPINNED),
    ("   ", A, pin.Verdict.UNPINNED),
    (A, A, pin.Verdict.PASS),  # a controller-only release keeps its API digest
    (f" {A}\n", A, pin.Verdict.PASS),  # YAML block scalars leave whitespace around
    (A, B, pin.Verdict.REFUSE),
    (A, "", pin.Verdict.REFUSE),
    ("a" * 64, A, pin.Verdict.MALFORMED),  # no algorithm
    ("sha256:" + "A" * 64, "sha256:" + "A" * 64, pin.Verdict.MALFORMED),  # upper case
    ("sha256:abc", A, pin.Verdict.MALFORMED),
    ("sha512:" + "a" * 64, A, pin.Verdict.MALFORMED),
    ("v1.2.3", A, pin.Verdict.MALFORMED),
])
def test_decide(pinned: str, actual: str, verdict: pin.Verdict) -> None:
    assert pin.decide(pinned, actual) is verdict


@pytest.mark.parametrize(("before", "after", "want"), [
    ({CRD: A}, {CRD: A}, []),
    ({CRD: A}, {CRD: B}, [f"{CRD} (changed)"]),
    ({CRD: A}, {CRD: A, OTHER: B}, [f"{OTHER} (added)"]),
    ({CRD: A, OTHER: B}, {CRD: A}, [f"{OTHER} (removed)"]),
    ({CRD: A, OTHER: A}, {CRD: B, OTHER: B}, [f"{OTHER} (changed)", f"{CRD} (changed)"]),
    ({}, {}, []),
])
def test_differences(before: dict[str, str], after: dict[str, str], want: list[str]) -> None:
    assert pin.differences(before, after) == want


def test_a_refusal_names_package_annotation_digests_types_and_fix() -> None:
    message = pin.Refused("Provider p", "p-222", A, B, "p-111",
                          (f"{CRD} (changed)",)).message
    for part in ("Provider p", PIN_API, f"pins API {A}", f"revision p-222 has API {B}",
                 "active revision p-111", f"{CRD} (changed)",
                 f"set the annotation to {B}", "spec.package"):
        assert part in message, (part, message)


@pytest.mark.parametrize(("active", "differences", "says"), [
    ("", None, "no revision is active"),
    ("p-222", None, "p-222 is the active revision"),
    ("p-111", None, "types of the active revision p-111 could not be read"),
    ("p-111", (), "no type differs from the active revision p-111"),
])
def test_a_refusal_says_why_it_lists_no_types(active: str, differences: tuple[str, ...] | None,
                                              says: str) -> None:
    assert says in pin.Refused("Provider p", "p-222", A, B, active, differences).message


def test_a_refusal_lists_the_first_types_and_counts_the_rest() -> None:
    many = tuple(f"CustomResourceDefinition t{i:02}.example.org (changed)" for i in range(25))
    message = pin.Refused("Provider p", "p-222", A, B, "p-111", many).message
    assert "t09.example.org" in message and "t10.example.org" not in message
    assert "and 15 more" in message


def test_a_malformed_pin_names_object_field_and_fix() -> None:
    message = pin.malformed("Provider p", "v1.2.3")
    assert all(part in message for part in ("Provider p", PIN_API, "'v1.2.3'", "sha256:",
                                            "remove it"))
