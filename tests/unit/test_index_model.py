"""Table tests: the package index document and the questions asked of it."""

from __future__ import annotations

import orjson
import pytest

from lockwright.errors import InvalidPackage
from lockwright.identity.apis import ServedType, parse
from lockwright.index.model import (
    Dependency,
    Entry,
    PackageIndex,
    matching,
    merged,
    repositories,
    serving,
)


def _type(kind: str, group: str, *versions: str) -> ServedType:
    return ServedType(group=group, kind=kind, plural=kind.lower() + "s", versions=versions,
                      digest=f"sha256:{kind}")


AWS_1 = Entry("reg.example/acme/provider-aws", "v1.0.0", "sha256:a1", "Provider",
              name="provider-aws", types=(_type("Bucket", "s3.aws.example.org", "v1"),))
AWS_2 = Entry("reg.example/acme/provider-aws", "v1.1.0", "sha256:a2", "Provider",
              name="provider-aws", crossplane=">=v2.0.0",
              dependencies=(Dependency("reg.example/acme/function-x", ">=v0.1.0", "Function"),),
              requires_apis=("things.example.org/v1",),
              types=(_type("Bucket", "s3.aws.example.org", "v1", "v2"),))
OTHER = Entry("reg.example/other/provider-s3", "v0.3.0", "sha256:o", "Provider",
              types=(_type("Bucket", "s3.aws.example.org", "v1"),))


def test_round_trip_is_stable_and_remembers_its_source() -> None:
    index = PackageIndex((AWS_2, OTHER, AWS_1), source="reg.example/index:latest")
    data = index.to_bytes()
    read = PackageIndex.from_bytes(data, "reg.example/index:latest")
    assert [e.tag for e in read.entries] == ["v1.0.0", "v1.1.0", "v0.3.0"]  # sorted
    assert all(e.index == "reg.example/index:latest" for e in read.entries)
    assert read.entries[1].dependencies == AWS_2.dependencies
    assert read.entries[1].requires_apis == ("things.example.org/v1",)
    assert PackageIndex(read.entries).to_bytes() == data  # stable


@pytest.mark.parametrize(("data", "says"), [
    (b"not json", "is not JSON"),
    (orjson.dumps({"kind": "Something"}), "kind is 'Something'"),
    (orjson.dumps([1, 2]), "is not a PackageIndex"),
])
def test_a_document_that_is_not_an_index_is_refused(data: bytes, says: str) -> None:
    with pytest.raises(InvalidPackage) as caught:
        PackageIndex.from_bytes(data, "reg.example/index:v1")
    assert says in caught.value.message and "reg.example/index:v1" in caught.value.message


@pytest.mark.parametrize(("api", "tags"), [
    ("buckets.s3.aws.example.org/v1", ["v1.0.0", "v1.1.0", "v0.3.0"]),
    ("buckets.s3.aws.example.org/v2", ["v1.1.0"]),
    ("Bucket.s3.aws.example.org", ["v1.0.0", "v1.1.0", "v0.3.0"]),
    ("tables.s3.aws.example.org/v1", []),
])
def test_serving(api: str, tags: list[str]) -> None:
    assert [e.tag for e in serving([AWS_1, AWS_2, OTHER], parse(api))] == tags


def test_merged_keeps_a_version_once_from_the_first_index() -> None:
    first = PackageIndex((AWS_1,), source="one")
    second = PackageIndex((AWS_1, OTHER), source="two")
    entries = merged([first, second])
    assert [(e.tag, e.index) for e in entries] == [("v1.0.0", "one"), ("v0.3.0", "two")]
    assert repositories(entries) == ["reg.example/acme/provider-aws",
                                     "reg.example/other/provider-s3"]


@pytest.mark.parametrize(("text", "tags"), [
    ("provider-aws", ["v1.0.0", "v1.1.0"]),
    ("OTHER", ["v0.3.0"]),
    ("bucket", ["v1.0.0", "v1.1.0", "v0.3.0"]),
    ("s3.aws.example.org", ["v1.0.0", "v1.1.0", "v0.3.0"]),
    ("nothing", []),
])
def test_matching(text: str, tags: list[str]) -> None:
    assert [e.tag for e in matching([AWS_1, AWS_2, OTHER], text)] == tags


def test_tags_of_one_digest_are_each_kept() -> None:
    """``latest`` sorts before ``v1.1.0``; keeping one per digest lost the semver tag."""
    latest = Entry(AWS_2.repository, "latest", AWS_2.digest, "Provider", types=AWS_2.types)
    entries = merged([PackageIndex((AWS_1, AWS_2, latest), source="one")])
    assert sorted(e.tag for e in entries) == ["latest", "v1.0.0", "v1.1.0"]


@pytest.mark.parametrize(("packages", "says"), [
    ({"a": 1}, "packages is not a list"),
    (["not an entry"], "packages[0] is malformed"),
    ([{"repository": "r", "types": {"group": "g"}}], "packages[0] is malformed"),
    ([AWS_1.to_json(), {"types": [{"versions": 5}]}], "packages[1] is malformed"),
])
def test_a_malformed_index_is_refused_naming_the_entry(packages: object, says: str) -> None:
    data = orjson.dumps({"kind": "PackageIndex", "packages": packages})
    with pytest.raises(InvalidPackage) as caught:
        PackageIndex.from_bytes(data, "reg.example/index:v1")
    assert says in caught.value.message and "reg.example/index:v1" in caught.value.message
