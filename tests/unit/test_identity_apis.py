"""Table tests: an API as users name it, and the types a definition serves."""

from __future__ import annotations

import pytest

from lockwright.errors import InvalidReference
from lockwright.identity.apis import ApiRef, ServedType, parse, served_types

BUCKETS = ServedType(group="s3.example.org", kind="Bucket", plural="buckets",
                     versions=("v1beta1", "v1"), digest="sha256:b")


@pytest.mark.parametrize(("text", "want"), [
    ("buckets.s3.example.org/v1beta1", ApiRef("buckets", "s3.example.org", "v1beta1")),
    ("Bucket.s3.example.org/v1", ApiRef("Bucket", "s3.example.org", "v1")),
    ("buckets.s3.example.org", ApiRef("buckets", "s3.example.org", "")),
    ("  things.example.org/v1  ", ApiRef("things", "example.org", "v1")),
])
def test_parse(text: str, want: ApiRef) -> None:
    assert parse(text) == want
    assert str(parse(text)) == text.strip()


@pytest.mark.parametrize("text", [
    "", "buckets", "buckets/v1", "buckets.s3/v1", ".s3.example.org/v1",
    "buckets.S3.example.org/v1", "buckets.s3.example.org/v1/x", "bu-ckets.example.org/v1",
])
def test_parse_refuses_naming_the_forms(text: str) -> None:
    with pytest.raises(InvalidReference) as caught:
        parse(text)
    assert repr(text) in caught.value.message and "plural.group/version" in caught.value.message


@pytest.mark.parametrize(("text", "served"), [
    ("buckets.s3.example.org/v1beta1", True),
    ("buckets.s3.example.org/v1", True),
    ("buckets.s3.example.org", True),
    ("Bucket.s3.example.org/v1", True),
    ("Buckets.s3.example.org/v1", False),  # a kind is matched as written
    ("buckets.s3.example.org/v2", False),  # not a served version
    ("buckets.example.org/v1", False),  # another group
    ("tables.s3.example.org/v1", False),
])
def test_serves(text: str, served: bool) -> None:
    assert BUCKETS.serves(parse(text)) is served


def test_served_types_lists_served_versions_only() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "buckets.s3.example.org"},
           "spec": {"group": "s3.example.org", "names": {"kind": "Bucket", "plural": "buckets"},
                    "versions": [{"name": "v1alpha1", "served": False},
                                 {"name": "v1beta1", "served": True}, {"name": "v1"}]}}
    (served,) = served_types(crd, "sha256:x")
    assert served.versions == ("v1beta1", "v1")
    assert (served.name, served.digest, served.definition) == (
        "buckets.s3.example.org", "sha256:x", "CustomResourceDefinition")
    assert served_types({**crd, "kind": "ValidatingWebhookConfiguration"}) == []


def test_json_round_trip() -> None:
    assert ServedType.from_json(BUCKETS.to_json()) == BUCKETS
