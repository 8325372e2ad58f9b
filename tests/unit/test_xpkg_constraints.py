"""Semver constraints behave as Masterminds/semver v3 (what Crossplane uses)."""

from __future__ import annotations

import pytest

from lockwright.errors import ConstraintError
from lockwright.xpkg.constraints import (
    is_digest,
    parse_constraint,
    parse_loose_version,
    parse_version,
    select_highest,
    sort_semver_tags,
)

MATCHES = [
    # exact, with and without v / =
    ("v0.3.1", "0.3.1", True),
    ("=v0.3.1", "v0.3.1", True),
    ("0.3.1", "0.3.2", False),
    ("!=1.2.3", "1.2.4", True),
    ("!=1.2.3", "1.2.3", False),
    # comparisons, AND with comma or space
    (">=1.2.0, <2", "1.5.0", True),
    (">=1.2.0, <2", "2.0.0", False),
    (">=1.2.0 <2", "v1.2.0", True),
    (">= 1.2.3", "1.2.3", True),
    ("=>1.2.3", "1.2.3", True),
    ("=<1.2.3", "1.2.4", False),
    (">1.2.3", "1.2.3", False),
    # partial versions are wildcards
    ("1", "1.9.9", True),
    ("1", "2.0.0", False),
    ("1.2", "1.2.7", True),
    (">1.2", "1.2.9", False),
    (">1.2", "1.3.0", True),
    (">1", "1.9.0", False),
    ("<=1.2", "1.2.9", True),
    ("<=1.2", "1.3.0", False),
    ("<2", "1.99.0", True),
    # x and * wildcards
    ("1.2.x", "1.2.7", True),
    ("1.2.x", "1.3.0", False),
    ("1.X", "1.4.0", True),
    ("*", "5.0.0", True),
    ("!=1.2.x", "1.2.5", False),
    ("!=1.2.x", "1.3.0", True),
    # tilde
    ("~1.2", "1.2.9", True),
    ("~1.2", "1.3.0", False),
    ("~1.2.3", "1.2.2", False),
    ("~>1.2.3", "1.2.9", True),
    ("~1", "1.9.0", True),
    ("~0.0.0", "3.0.0", True),
    # caret
    ("^1.2", "1.9.0", True),
    ("^1.2", "2.0.0", False),
    ("^0.2.3", "0.2.9", True),
    ("^0.2.3", "0.3.0", False),
    ("^0.0.3", "0.0.3", True),
    ("^0.0.3", "0.0.4", False),
    ("^0", "0.9.0", True),
    ("^v0.1", "v0.1.5", True),
    # hyphen ranges
    ("1.2 - 1.4", "1.4.9", True),
    ("1.2 - 1.4", "1.5.0", False),
    ("1.2.3 - 1.4.5", "1.4.6", False),
    ("v1.2.3 - v1.4.5", "1.2.3", True),
    # OR
    ("<1 || >=3", "3.1.0", True),
    ("<1 || >=3", "2.0.0", False),
    ("^1.2 || ^2.0", "2.4.0", True),
    # pre-releases only match terms that name a pre-release
    ("*", "1.0.0-rc.1", False),
    (">=1.14.0", "1.15.0-rc.1", False),
    (">=1.14.0-0", "1.15.0-rc.1", True),
    (">=v1.14.0-0", "v1.14.0", True),
    ("v0.2.0-gt", "v0.2.0-gt", True),
    ("v0.2.0-gt", "v0.2.0", False),
    (">=1.0.0-alpha, <1.0.0", "1.0.0-beta.2", False),  # every AND term must name one
    (">=1.0.0-alpha, <1.0.0-rc", "1.0.0-beta.2", True),
    ("^1.2.3-beta.1", "1.2.3-beta.2", True),
    ("!=1.2.3", "1.2.4-beta", True),  # Masterminds skips the rule for an exact !=
    # build metadata is ignored
    ("1.2.3", "1.2.3+build.5", True),
]


@pytest.mark.parametrize(("constraint", "version", "expected"), MATCHES)
def test_allows(constraint: str, version: str, expected: bool) -> None:
    assert parse_constraint(constraint).allows(version) is expected


@pytest.mark.parametrize("text", ["", ">>1", "1.2.3.4", "foo", "sha256:abc", ">=1,,<2", "~>"])
def test_improper_constraints_name_the_segment(text: str) -> None:
    with pytest.raises(ConstraintError, match="improper constraint"):
        parse_constraint(text)


def test_error_names_the_bad_or_segment() -> None:
    with pytest.raises(ConstraintError, match=r"improper constraint:  >>2"):
        parse_constraint("1.0.0 || >>2")


def test_allows_rejects_non_versions() -> None:
    with pytest.raises(ConstraintError, match="invalid semantic version"):
        parse_constraint(">=1").allows("sha256:" + "a" * 64)


def test_str_is_the_original_text() -> None:
    assert str(parse_constraint(">= 1.2, <2")) == ">= 1.2, <2"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("v1.2.3", "1.2.3"), ("1.2.3-rc.1+b", "1.2.3-rc.1+b"), ("v1", None), ("v1.2", None),
     ("latest", None), ("01.2.3", None), ("1.2.3.4", None)],
)
def test_parse_version_wants_complete_versions(text: str, expected: str | None) -> None:
    parsed = parse_version(text)
    assert (str(parsed) if parsed else None) == expected


@pytest.mark.parametrize(("text", "expected"), [("v1", "1.0.0"), ("1.2", "1.2.0"), ("x", None)])
def test_parse_loose_version_coerces_partials(text: str, expected: str | None) -> None:
    parsed = parse_loose_version(text)
    assert (str(parsed) if parsed else None) == expected


def test_sort_semver_tags_drops_non_versions_and_orders_by_precedence() -> None:
    tags = ["v1.10.0", "latest", "v1.2.0", "v2.0.0", "v2.0.0-rc.1", "v1", "main"]
    assert sort_semver_tags(tags) == ["v1", "v1.2.0", "v1.10.0", "v2.0.0-rc.1", "v2.0.0"]


@pytest.mark.parametrize(
    ("tags", "constraint", "expected"),
    [
        (["v1.2.0", "v1.10.0", "v2.0.0"], ">=1.0.0, <2", "v1.10.0"),
        (["v1.2.0", "v2.0.0-rc.1"], ">=1.0.0", "v1.2.0"),
        (["v1.2.0", "v2.0.0-rc.1"], ">=1.0.0-0", "v2.0.0-rc.1"),
        (["v1", "v1.2"], ">=1", None),  # floating tags never win
        (["v0.9.0"], "^1", None),
        ([], "*", None),
    ],
)
def test_select_highest(tags: list[str], constraint: str, expected: str | None) -> None:
    assert select_highest(tags, constraint) == expected


def test_select_highest_accepts_a_parsed_constraint() -> None:
    assert select_highest(["1.0.0", "1.1.0"], parse_constraint("~1.0")) == "1.0.0"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("sha256:" + "a" * 64, True), ("sha256:" + "A" * 64, False), ("sha256:abc", False),
     ("v1.0.0", False), ("sha512:" + "0" * 128, True)],
)
def test_is_digest(text: str, expected: bool) -> None:
    assert is_digest(text) is expected
