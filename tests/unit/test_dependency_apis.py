"""Table tests: what a package's ``lockwright.dev/requires-apis`` adds to its Lock entry."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.dependencies.apis import (
    Indexes,
    Served,
    definition_names,
    dependency,
    holders,
    inactive_definition,
    may_serve,
    needs,
    required,
    unserved,
    waiting_for,
)
from lockwright.dependencies.graph import satisfies
from lockwright.errors import InvalidPackage
from lockwright.identity.apis import ApiRef, ServedType, parse
from lockwright.identity.names import REQUIRES_APIS
from lockwright.index.model import Entry

Obj = dict[str, Any]
PKG = "pkg.crossplane.io/v1"
AWS, AWS2, GCP = "reg.example/org/provider-aws", "reg.example/fork/provider-aws", \
    "reg.example/org/provider-gcp"
BUCKET = ServedType("s3.example.org", "Bucket", "buckets", ("v1beta1",))
BUCKET_V1 = ServedType("s3.example.org", "Bucket", "buckets", ("v1beta1", "v1"))
TOPIC = ServedType("pubsub.example.org", "Topic", "topics", ("v1",))
API = parse("buckets.s3.example.org/v1beta1")
API_V1 = parse("Bucket.s3.example.org/v1")
IDX = "reg.example/org/index:v1"


def entry(repo: str, tag: str, *types: ServedType, kind: str = "Provider") -> Entry:
    return Entry(repo, tag, f"sha256:{abs(hash((repo, tag))):064x}"[:71], kind, types=types,
                 index=IDX)


INDEX = Indexes((entry(AWS, "v1.0.0", TOPIC), entry(AWS, "v1.1.0", BUCKET),
                 entry(AWS, "v1.2.0", BUCKET_V1), entry(AWS, "v2.0.0", BUCKET_V1),
                 entry(GCP, "v0.3.0", TOPIC)), (IDX,))
SEVERAL = Indexes((*INDEX.entries, entry(AWS2, "v3.0.0", BUCKET_V1)), (IDX,))
DROPPED = Indexes((entry(AWS, "v1.0.0", BUCKET), entry(AWS, "v1.1.0", TOPIC),
                   entry(AWS, "v1.2.0", BUCKET)), (IDX,))


def digest(repo: str, tag: str) -> str:
    """The digest :func:`entry` lists for ``repo:tag``."""
    return entry(repo, tag).digest


def dep(package: str, version: str, kind: str = "Provider") -> Obj:
    return {"apiVersion": PKG, "kind": kind, "package": package, "version": version}


def lock_dep(package: str, constraints: str) -> Obj:
    return {"apiVersion": PKG, "kind": "Provider", "package": package,
            "constraints": constraints}


# --- the annotation ---------------------------------------------------------------------
@pytest.mark.parametrize(("text", "want"), [
    ("", []),
    ("buckets.s3.example.org/v1beta1", [API]),
    (" buckets.s3.example.org/v1beta1 , Bucket.s3.example.org/v1,", [API, API_V1]),
    ("buckets.s3.example.org/v1beta1,buckets.s3.example.org/v1beta1", [API]),
])
def test_required_reads_the_annotation(text: str, want: list[ApiRef]) -> None:
    assert required({REQUIRES_APIS: text} if text else {}) == want


def test_required_refuses_naming_the_annotation_and_the_forms() -> None:
    with pytest.raises(InvalidPackage) as caught:
        required({REQUIRES_APIS: "buckets.s3.example.org/v1, s3 buckets"})
    assert REQUIRES_APIS in caught.value.message
    assert "'s3 buckets' is not an API" in caught.value.message
    assert "plural.group/version" in caught.value.message


# --- which APIs send us to the indexes ---------------------------------------------------
def test_unserved_are_only_the_apis_nobody_serves() -> None:
    served: dict[ApiRef, Served | None] = {API: Served(), API_V1: None}
    assert unserved([API, API_V1], served) == [API_V1]


# --- the decision, per API --------------------------------------------------------------
CASES: list[tuple[str, Served | None, list[str], list[Obj], Indexes, list[str], list[Obj],
                  list[str]]] = [
    # id, served, declared, recorded, indexes, installed, dependencies, problem fragments
    ("served by a hand-made CRD: nothing", Served(), [], [], Indexes(), [], [], []),
    ("served by a package in the Lock: depend on it, from its version",
     Served(AWS, "Provider", "v1.4.0"), [], [], Indexes(), [AWS],
     [dep(AWS, ">=v1.4.0")], []),
    ("served by a package pinned by digest: that digest",
     Served(AWS, "Provider", "sha256:" + "a" * 64), [], [], Indexes(), [AWS],
     [dep(AWS, "sha256:" + "a" * 64)], []),
    ("served by a package at a tag no range names: nothing",
     Served(AWS, "Provider", "latest"), [], [], Indexes(), [AWS], [], []),
    ("served by a package the entry already depends on: kept as recorded",
     Served(AWS, "Provider", "v2.0.0"), [], [lock_dep(AWS, ">=v1.1.0")], Indexes(), [AWS],
     [dep(AWS, ">=v1.1.0")], []),
    ("served by a package dependsOn names: nothing more",
     Served(AWS, "Provider", "v2.0.0"), [AWS], [], Indexes(), [AWS], [], []),
    ("defined by an Inactive MRD of a package in the Lock: depend on it, say to activate",
     Served(AWS, "Provider", "v1.4.0", inactive="buckets.s3.example.org"), [], [],
     Indexes(), [AWS], [dep(AWS, ">=v1.4.0")],
     [(f"API {API} is defined by ManagedResourceDefinition buckets.s3.example.org of "
      f"Provider {AWS}, which is Inactive: activate it with a "
      "ManagedResourceActivationPolicy")]),
    ("defined by an Inactive MRD nobody's package holds: say to activate",
     Served(inactive="buckets.s3.example.org"), [], [], Indexes(), [], [],
     ["ManagedResourceDefinition buckets.s3.example.org, which is Inactive"]),
    ("not served, one repository serves it: its highest serving version's listed digest",
     None, [], [], INDEX, [], [dep(AWS, digest(AWS, "v2.0.0"))], []),
    ("not served, a version in between drops it: the highest serving version's digest",
     None, [], [], DROPPED, [], [dep(AWS, digest(AWS, "v1.2.0"))], []),
    ("not served, the index lists no digest: the versions that serve it",
     None, [], [], Indexes(tuple(e.__class__(e.repository, e.tag, "", e.kind, types=e.types)
                                 for e in INDEX.entries), (IDX,)), [],
     [dep(AWS, ">=v1.1.0")], []),
    ("not served, several serve it: the candidates and the fix",
     None, [], [], SEVERAL, [], [],
     [f"{AWS2} (v3.0.0); {AWS} (v1.1.0, v1.2.0, v2.0.0)", ("name the one to install in a "
      "dependsOn of crossplane.yaml"), "served by 2 packages"]),
    ("not served, several serve it, dependsOn names one: nothing more",
     None, [AWS2], [], SEVERAL, [], [], []),
    ("not served, several serve it, one is installed: that one",
     None, [], [], SEVERAL, [AWS2], [dep(AWS2, ">=v3.0.0")], []),
    ("not served, several serve it, the entry already chose one: that one, pinned",
     None, [], [lock_dep(AWS, ">=v1.1.0")], SEVERAL, [], [dep(AWS, digest(AWS, "v2.0.0"))],
     []),
    ("not served, no index serves it: the API and the indexes searched",
     None, [], [], Indexes((entry(GCP, "v0.3.0", TOPIC),), (IDX, "reg.example/b:v2")), [],
     [], [(f"no package in the package indexes serves API {API} (indexes searched: {IDX}, "
          "reg.example/b:v2)")]),
    ("not served, no index configured: the setting to set",
     None, [], [], Indexes(), [], [], [f"API {API} is not served", ("no package index is "
                                        "configured"), "set LOCKWRIGHT_PACKAGE_INDEXES"]),
    ("not served, the indexes cannot be read: why, and the recorded dependency stays",
     None, [], [lock_dep(AWS, ">=v1.1.0")], Indexes(error="registry unreachable"), [],
     [dep(AWS, ">=v1.1.0")], ["cannot read the package indexes", "registry unreachable"]),
]


@pytest.mark.parametrize(("served", "declared", "recorded", "indexes", "installed", "deps",
                          "problems"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_needs(served: Served | None, declared: list[str], recorded: list[Obj],
               indexes: Indexes, installed: list[str], deps: list[Obj],
               problems: list[str]) -> None:
    found = needs([API], {API: served}, declared, recorded, indexes, installed)
    assert list(found.dependencies) == deps
    for fragment in problems:
        assert fragment in found.message
    assert bool(found.problems) == bool(problems)


def test_needs_merges_apis_served_by_one_repository_and_keeps_them_all() -> None:
    topics = parse("topics.pubsub.example.org/v1")
    found = needs([API, API_V1, topics], {}, [], [], INDEX)
    # Topic comes from both AWS v1.0.0 and GCP: two candidates, named; AWS once.
    assert list(found.dependencies) == [dep(AWS, digest(AWS, "v2.0.0"))]
    assert len(found.problems) == 1 and f"{AWS} (v1.0.0); {GCP} (v0.3.0)" in found.message


def test_a_recorded_dependency_the_indexes_no_longer_choose_goes_when_they_answer() -> None:
    # Kept only while the indexes cannot be read: an answer decides afresh.
    found = needs([API], {API: None}, [], [lock_dep(GCP, ">=v0.1.0")], INDEX)
    assert list(found.dependencies) == [dep(AWS, digest(AWS, "v2.0.0"))]


@pytest.mark.parametrize(("offered", "want"), [
    ([entry(AWS, "v1.1.0", BUCKET), entry(AWS, "v1.3.0", BUCKET)], ">=v1.1.0"),
    ([entry(AWS, "1.1.0", BUCKET)], ">=1.1.0"),
    ([entry(AWS, "latest", BUCKET)], None),  # a digest: checked below
])
def test_the_constraint_every_serving_version_meets(offered: list[Entry],
                                                    want: str | None) -> None:
    found = dependency(AWS, offered, offered)
    assert found is not None
    constraint = str(found["version"])
    if want is None:
        assert constraint == offered[0].digest
    else:
        assert constraint == want
        assert all(satisfies(e.tag, constraint) for e in offered)


def test_exact_versions_refuse_the_one_in_between_that_drops_it() -> None:
    offered = [e for e in DROPPED.entries if e.serves(API)]
    found = dependency(AWS, offered, DROPPED.entries)
    assert found is not None
    constraint = str(found["version"])
    assert [satisfies(t, constraint) for t in ("v1.0.0", "v1.1.0", "v1.2.0")] == [
        True, False, True]


def test_no_constraint_names_several_digests() -> None:
    offered = [entry(AWS, "latest", BUCKET), entry(AWS, "main", BUCKET)]
    assert dependency(AWS, offered, offered) is None
    found = needs([API], {API: None}, [], [], Indexes(tuple(offered), (IDX,)))
    assert found.dependencies == ()
    assert "only under tags that are not versions (latest, main)" in found.message


def test_holders_are_the_lock_packages_whose_revisions_claim_the_definitions() -> None:
    lock = {"packages": [
        {"name": "aws-abc", "kind": "Provider", "source": AWS, "version": "v1.2.0"},
        {"name": "gcp-def", "type": "Provider", "source": GCP, "version": "sha256:" + "f" * 64},
        {"name": "cfg-123", "kind": "Configuration", "source": "reg.example/org/cfg",
         "version": "v0.1.0"}]}
    claimed = {"aws-abc": ["buckets.s3.example.org", "queues.sqs.example.org"],
               "gcp-def": ["topics.pubsub.example.org"], "gone-999": ["things.example.org"]}
    assert holders(lock, claimed) == {
        "buckets.s3.example.org": Served(AWS, "Provider", "v1.2.0"),
        "queues.sqs.example.org": Served(AWS, "Provider", "v1.2.0"),
        "topics.pubsub.example.org": Served(GCP, "Provider", "sha256:" + "f" * 64)}


# --- reading back what a waiting revision waits on (the watcher wakes it) ----------------
UNRESOLVED = "cannot resolve package dependencies: "
TAGS_ONLY = Indexes((entry(AWS, "latest", BUCKET), entry(AWS, "main", BUCKET)), (IDX,))


@pytest.mark.parametrize("api", [API, API_V1, parse("buckets.s3.example.org")], ids=str)
@pytest.mark.parametrize(("served", "indexes", "recorded"), [
    (c[1], c[4], c[3]) for c in CASES if c[7]] + [(None, TAGS_ONLY, [])],
    ids=[c[0] for c in CASES if c[7]] + ["not served, only tags that are not versions"])
def test_every_problem_names_its_api_for_the_watcher(
        api: ApiRef, served: Served | None, indexes: Indexes, recorded: list[Obj]) -> None:
    """Each message ``needs`` writes reads back as the API it waits on, and only that."""
    found = needs([api], {api: served}, [], recorded, indexes, [])
    assert found.problems
    assert waiting_for(UNRESOLVED + found.message) == (api,)


@pytest.mark.parametrize(("message", "want"), [
    ("", ()),
    (f"API {API} is not served", ()),  # not the dependency message: waits on nothing
    (UNRESOLVED + 'missing dependencies: "reg.example/org/p" (>=v1.0.0)', ()),
    (UNRESOLVED + f"cannot read the package indexes to find a package serving API {API}: "
     "GET https://reg.example/v2/ answered 503: API unavailable", (API,)),
    (UNRESOLVED + f"API {API} is not served; API {API_V1} is not served; API {API} is "
     "not served", (API, API_V1)),
])
def test_waiting_for_reads_the_apis_of_a_dependency_message(
        message: str, want: tuple[ApiRef, ...]) -> None:
    assert waiting_for(message) == want


@pytest.mark.parametrize(("crd", "api", "want"), [
    ("buckets.s3.example.org", "buckets.s3.example.org/v1beta1", True),
    ("buckets.s3.example.org", "Buckets.s3.example.org", True),  # a kind: its group
    ("buckets.s3.example.org", "Bucket.s3.example.org/v1", True),
    ("tables.s3.example.org", "Bucket.s3.example.org/v1", True),
    ("tables.s3.example.org", "buckets.s3.example.org/v1", False),
    ("buckets.s3.example.org", "buckets.example.org", False),
    ("buckets.s3.example.org.evil", "Bucket.s3.example.org", False),
    ("buckets.x.s3.example.org", "Bucket.s3.example.org", False),
])
def test_may_serve(crd: str, api: str, want: bool) -> None:
    assert may_serve(crd, parse(api)) is want


# --- an API an Inactive MRD defines, named by plural or by kind --------------------------
def mrd(plural: str, kind: str, state: str = "Inactive", versions: tuple[str, ...] = (
        "v1beta1",), group: str = "s3.example.org") -> Obj:
    return {"apiVersion": "apiextensions.crossplane.io/v1alpha1",
            "kind": "ManagedResourceDefinition", "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "state": state,
                     "names": {"kind": kind, "plural": plural},
                     "versions": [{"name": v, "served": True} for v in versions]}}


MRD_NAMES = ["buckets.s3.example.org", "policies.s3.example.org", "topics.pubsub.example.org",
             "buckets.s3.example.org.other"]


@pytest.mark.parametrize(("api", "want"), [
    ("buckets.s3.example.org/v1beta1", ["buckets.s3.example.org"]),
    ("Bucket.s3.example.org/v1beta1", ["buckets.s3.example.org", "policies.s3.example.org"]),
    ("Topic.pubsub.example.org", ["topics.pubsub.example.org"]),
    ("Queue.sqs.example.org", []),
    ("queues.s3.example.org", []),
])
def test_definition_names_an_api_may_be_defined_by(api: str, want: list[str]) -> None:
    assert definition_names(parse(api), MRD_NAMES) == want


BUCKETS, POLICIES = mrd("buckets", "Bucket"), mrd("policies", "BucketPolicy")


@pytest.mark.parametrize(("api", "mrds", "want"), [
    ("buckets.s3.example.org/v1beta1", [BUCKETS], "buckets.s3.example.org"),
    ("Bucket.s3.example.org/v1beta1", [POLICIES, BUCKETS], "buckets.s3.example.org"),
    ("BucketPolicy.s3.example.org", [POLICIES, BUCKETS], "policies.s3.example.org"),
    ("Bucket.s3.example.org", [BUCKETS], "buckets.s3.example.org"),  # any served version
    ("Bucket.s3.example.org/v1", [BUCKETS], ""),  # a version it does not serve
    ("bucket.s3.example.org/v1beta1", [BUCKETS], ""),  # lower case is a plural: no such
    ("Bucket.s3.example.org/v1beta1", [mrd("buckets", "Bucket", "Active")], ""),
    ("Bucket.s3.example.org/v1beta1", [mrd("buckets", "Bucket", group="s4.example.org")], ""),
    ("Buckets.s3.example.org/v1beta1", [BUCKETS], ""),  # a kind is matched exactly
    ("Bucket.s3.example.org/v1beta1", [], ""),
])
def test_the_inactive_mrd_defining_an_api_by_plural_or_kind(api: str, mrds: list[Obj],
                                                             want: str) -> None:
    assert inactive_definition(parse(api), mrds) == want


def test_a_kind_defined_by_an_inactive_mrd_is_a_dependency_saying_to_activate_it() -> None:
    """The kind form as the plural form: the package holding the MRD, and the fix."""
    name = inactive_definition(API_V1, [mrd("buckets", "Bucket", versions=("v1",))])
    found = needs([API_V1], {API_V1: Served(AWS, "Provider", "v1.4.0", inactive=name)}, [],
                  [], Indexes(), [AWS])
    assert list(found.dependencies) == [dep(AWS, ">=v1.4.0")]
    assert found.message == (f"API {API_V1} is defined by ManagedResourceDefinition "
                             f"buckets.s3.example.org of Provider {AWS}, which is Inactive: "
                             "activate it with a ManagedResourceActivationPolicy")
