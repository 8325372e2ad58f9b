"""What ``lockwright search`` shows and which version ``install --api`` picks (issue 23)."""

from __future__ import annotations

import pytest

from lockwright.errors import ApiUnserved
from lockwright.identity.apis import ServedType, parse
from lockwright.index.model import Entry
from lockwright.index.search import choose, latest, search

INDEX = "registry.example.org/team/index:v1"


def entry(repo: str, tag: str, *types: ServedType, kind: str = "Provider") -> Entry:
    return Entry(f"registry.example.org/{repo}", tag, f"sha256:{tag}", kind,
                 name=repo.rpartition("/")[2], types=types, index=INDEX)


def served(plural: str, group: str, *versions: str) -> ServedType:
    return ServedType(group, plural.removesuffix("s").capitalize(), plural,
                      versions or ("v1beta1",))


BUCKET = served("buckets", "s3.example.org", "v1beta1", "v1")
QUEUE = served("queues", "sqs.example.org")
TOPIC = served("topics", "sns.example.org")
ENTRIES = [
    entry("aws/provider-s3", "v1.0.0", BUCKET),
    entry("aws/provider-s3", "v1.10.0", BUCKET),
    entry("aws/provider-s3", "v1.9.0", BUCKET),
    entry("aws/provider-s3", "latest", BUCKET),
    entry("aws/provider-sqs", "v0.3.0", QUEUE),
    entry("other/provider-queues", "v2.0.0", QUEUE, TOPIC),
    entry("other/provider-queues", "v2.1.0-rc.1", QUEUE, TOPIC),
    entry("aws/provider-floating", "main", TOPIC),
]


@pytest.mark.parametrize(("tags", "want"), [
    (["v1.0.0", "v1.10.0", "v1.9.0"], "v1.10.0"),
    (["v2.0.0", "v2.1.0-rc.1"], "v2.1.0-rc.1"),
    (["latest", "v0.1.0"], "v0.1.0"),
    (["main", "latest"], None),
    (["v1", "v1.2"], None),  # partial tags are not versions
])
def test_latest_is_the_highest_semantic_version(tags: list[str], want: str | None) -> None:
    found = latest([entry("r", t) for t in tags])
    assert (found.tag if found else None) == want


@pytest.mark.parametrize(("api", "repository", "want"), [
    ("buckets.s3.example.org/v1", "", "aws/provider-s3:v1.10.0"),
    ("Bucket.s3.example.org/v1beta1", "", "aws/provider-s3:v1.10.0"),
    ("buckets.s3.example.org", "", "aws/provider-s3:v1.10.0"),
    ("queues.sqs.example.org/v1beta1", "registry.example.org/aws/provider-sqs",
     "aws/provider-sqs:v0.3.0"),
    ("Queue.sqs.example.org/v1beta1", "registry.example.org/other/provider-queues",
     "other/provider-queues:v2.1.0-rc.1"),
])
def test_choose_takes_the_highest_version_of_the_one_repository(
        api: str, repository: str, want: str) -> None:
    chosen = choose(ENTRIES, parse(api), [INDEX], repository)
    assert chosen.reference == f"registry.example.org/{want}"


@pytest.mark.parametrize(("api", "repository", "message"), [
    ("buckets.s3.example.org/v2", "",
     ("no package serves API buckets.s3.example.org/v2: searched the package indexes "
     f"{INDEX}")),
    ("Buckets.s3.example.org/v1", "",  # a kind is spelt as the kind
     "no package serves API Buckets.s3.example.org/v1"),
    ("queues.sqs.example.org/v1beta1", "",
     ("API queues.sqs.example.org/v1beta1 is served by 2 repositories: "
     "registry.example.org/aws/provider-sqs (Provider provider-sqs, latest v0.3.0, index "
     f"{INDEX}); registry.example.org/other/provider-queues (Provider provider-queues, "
     f"latest v2.1.0-rc.1, index {INDEX}); name one with --repository")),
    ("queues.sqs.example.org/v1beta1", "registry.example.org/aws/provider-s3",
     ("repository registry.example.org/aws/provider-s3 serves no API "
     "queues.sqs.example.org/v1beta1; the repositories that do: "
     "registry.example.org/aws/provider-sqs, registry.example.org/other/provider-queues")),
    ("topics.sns.example.org/v1beta1", "registry.example.org/aws/provider-floating",
     ("API topics.sns.example.org/v1beta1 is served only by tags that are not semantic "
     "versions (registry.example.org/aws/provider-floating:main); install one of them by "
     "reference")),
])
def test_choose_refuses_naming_the_candidates_or_the_indexes(
        api: str, repository: str, message: str) -> None:
    with pytest.raises(ApiUnserved) as err:
        choose(ENTRIES, parse(api), [INDEX], repository)
    assert err.value.message.startswith(message), err.value.message


def test_choose_with_no_index_says_how_to_set_one() -> None:
    with pytest.raises(ApiUnserved, match="set LOCKWRIGHT_PACKAGE_INDEXES"):
        choose([], parse("buckets.s3.example.org/v1"), [])


@pytest.mark.parametrize(("text", "api", "want"), [
    ("s3", "", [("aws/provider-s3", "v1.10.0", ["buckets.s3.example.org/v1beta1,v1"])]),
    ("QUEUE", "", [("aws/provider-sqs", "v0.3.0", ["queues.sqs.example.org/v1beta1"]),
                   ("other/provider-queues", "v2.1.0-rc.1",
                    ["queues.sqs.example.org/v1beta1"])]),
    ("Topic", "", [("aws/provider-floating", "main", ["topics.sns.example.org/v1beta1"]),
                   ("other/provider-queues", "v2.1.0-rc.1",
                    ["topics.sns.example.org/v1beta1"])]),
    ("nothing", "", []),
    ("", "topics.sns.example.org/v1beta1",
     [("aws/provider-floating", "main", ["topics.sns.example.org/v1beta1"]),
      ("other/provider-queues", "v2.1.0-rc.1", ["topics.sns.example.org/v1beta1"])]),
    ("", "Bucket.s3.example.org", [("aws/provider-s3", "v1.10.0",
                                    ["buckets.s3.example.org/v1beta1,v1"])]),
])
def test_search_rows_per_repository(text: str, api: str,
                                    want: list[tuple[str, str, list[str]]]) -> None:
    rows = search(ENTRIES, text, parse(api) if api else None)
    assert [(r.repository.removeprefix("registry.example.org/"), r.latest, list(r.types))
            for r in rows] == want
    assert all(r.kind == "Provider" and r.index == INDEX for r in rows)


def test_search_caps_the_types_shown() -> None:
    many = tuple(served(f"things{i}s", "big.example.org") for i in range(5))
    [row] = search([entry("big/provider-big", "v1.0.0", *many)], "big.example.org")
    assert row.types[3:] == ("+2 more",) and len(row.types) == 4
