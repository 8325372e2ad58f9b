"""Crossplane v2's MRDs as pure functions: conversion, Go's filepath.Match, activation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lockwright.managed import convert, policy
from lockwright.managed.match import BadPattern, match, matches, well_formed
from lockwright.managed.policy import Definition, Policy
from tests.e2e.packages import crd

DATA = Path(__file__).resolve().parents[1] / "data"
# Generated with Go 1.26.8's path/filepath.Match over these (pattern, name) pairs.
GO_VECTORS = json.loads((DATA / "filepath_match_go1.26.json").read_text())


# --- filepath.Match --------------------------------------------------------------------
@pytest.mark.parametrize("vector", GO_VECTORS, ids=lambda v: f"{v['pattern']}|{v['name']}")
def test_match_agrees_with_go(vector: dict[str, Any]) -> None:
    if vector["bad"]:
        with pytest.raises(BadPattern):
            match(vector["pattern"], vector["name"])
        assert not matches(vector["pattern"], vector["name"])
    else:
        assert match(vector["pattern"], vector["name"]) is vector["matched"]


@pytest.mark.parametrize(("pattern", "ok"), [
    ("*", True), ("*.aws.upbound.io", True), ("[a-c]*", True), ("a\\*", True),
    ("[", False), ("a\\", False), ("[a-", False), ("[]", False), ("", False),
])
def test_well_formed(pattern: str, ok: bool) -> None:
    assert well_formed(pattern) is ok


# --- conversion ------------------------------------------------------------------------
@pytest.mark.parametrize(("kind", "converts"), [
    ("Bucket", True), ("ProviderConfig", False), ("ClusterProviderConfig", False),
    ("ProviderConfigUsage", False), ("ClusterProviderConfigUsage", False),
    ("ProviderConfigs", True),
])
def test_exempt_kinds_stay_crds(kind: str, converts: bool) -> None:
    assert convert.converts(crd("s3.aws.example.org", kind)) is converts


def test_a_crd_whose_kind_cannot_be_read_converts() -> None:
    assert convert.converts({"apiVersion": convert.CRD_API_VERSION, "kind": convert.CRD_KIND,
                             "spec": "nonsense"})


@pytest.mark.parametrize(("capabilities", "safe"), [
    ([], False), (["SafeStart"], True), (["safe-start"], True), (["safe_start"], True),
    (["SAFESTART"], True), (["Safe Start"], True), (["composition"], False),
    (["safe-start-later"], False), (["Other", "safeStart"], True),
])
def test_the_capability_in_any_spelling(capabilities: list[str], safe: bool) -> None:
    assert convert.safe_start(capabilities) is safe


def test_to_mrd_keeps_metadata_and_spec_and_sets_state() -> None:
    source = crd("s3.aws.example.org", "Bucket")
    source["metadata"]["labels"] = {"a": "b"}
    mrd = convert.to_mrd(source, active=False)
    assert (mrd["apiVersion"], mrd["kind"]) == (convert.MRD_API_VERSION, convert.MRD_KIND)
    assert mrd["metadata"] == source["metadata"]
    assert mrd["spec"] == {**source["spec"], "state": "Inactive"}
    assert convert.to_mrd(source, active=True)["spec"]["state"] == "Active"


@pytest.mark.parametrize(("spec", "problem"), [
    ("x", "spec is not an object"),
    ({"group": 1}, "spec.group is not a string"),
    ({"names": []}, "spec.names is not an object"),
    ({"names": {"kind": 3}}, "spec.names.kind is not a string"),
    ({"names": {"shortNames": "b"}}, "spec.names.shortNames is not a list of strings"),
    ({"versions": {}}, "spec.versions is not a list of objects"),
    ({"versions": [{"name": "v1", "served": "yes"}]}, "spec.versions[0].served is not a boolean"),
    ({"conversion": "Webhook"}, "spec.conversion is not an object"),
    ({"preserveUnknownFields": "no"}, "spec.preserveUnknownFields is not a boolean"),
])
def test_a_crd_of_the_wrong_shape_cannot_convert(spec: Any, problem: str) -> None:
    with pytest.raises(convert.ConversionError, match=problem.replace("[", r"\[")) as err:
        convert.check({"metadata": {"name": "buckets.example.org"}, "spec": spec})
    assert "buckets.example.org" in str(err.value)


def test_a_good_crd_checks() -> None:
    convert.check(crd("s3.aws.example.org", "Bucket"))


@pytest.mark.parametrize(("default_active", "active", "expected"), [
    (True, frozenset(), ["ManagedResourceDefinition:Active", "CustomResourceDefinition"]),
    (False, frozenset(), ["ManagedResourceDefinition:Inactive"]),
    (False, frozenset({"buckets.s3.example.org"}),
     ["ManagedResourceDefinition:Active", "CustomResourceDefinition"]),
])
def test_the_conversion_of_one_crd(default_active: bool, active: frozenset[str],
                                   expected: list[str]) -> None:
    out = convert.Conversion(default_active, active).objects(crd("s3.example.org", "Bucket"))
    assert [o["kind"] + (":" + o["spec"]["state"] if "state" in o["spec"] else "")
            for o in out] == expected


def test_the_conversion_passes_other_objects_through() -> None:
    config = crd("s3.example.org", "ProviderConfig")
    webhook = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "w"}}
    conversion = convert.Conversion(False)
    assert conversion.objects(config) == [config]
    assert conversion.objects(webhook) == [webhook]


@pytest.mark.parametrize(("capabilities", "definitions", "active", "awaiting"), [
    (["SafeStart"], 50, 0, True), (["SafeStart"], 50, 2, False), (["SafeStart"], 0, 0, False),
    ([], 50, 0, False),
])
def test_awaiting_activation(capabilities: list[str], definitions: int, active: int,
                             awaiting: bool) -> None:
    assert convert.awaiting_activation(capabilities, definitions, active) is awaiting


# --- activation ------------------------------------------------------------------------
ROWS = [Definition("buckets.s3.aws.io", False, "rev-a"), Definition("queues.sqs.aws.io", True,
                                                                     "rev-a"),
        Definition("vms.compute.gcp.io", False, "rev-b"), Definition("orphans.x.io", False)]


@pytest.mark.parametrize(("policies", "activate", "activated"), [
    ([], {}, {}),
    ([Policy("p", ("*",))], {"buckets.s3.aws.io": "p", "vms.compute.gcp.io": "p",
                             "orphans.x.io": "p"},
     {"p": sorted(d.name for d in ROWS)}),
    ([Policy("aws", ("*.aws.io",))], {"buckets.s3.aws.io": "aws"},
     {"aws": ["buckets.s3.aws.io", "queues.sqs.aws.io"]}),
    ([Policy("b", ("*.gcp.io",)), Policy("a", ("vms.*",))], {"vms.compute.gcp.io": "a"},
     {"a": ["vms.compute.gcp.io"], "b": ["vms.compute.gcp.io"]}),
    ([Policy("bad", ("[",)), Policy("none", ("nothing",))], {}, {"bad": [], "none": []}),
])
def test_decide_is_a_union_and_one_way(policies: list[Policy], activate: dict[str, str],
                                       activated: dict[str, list[str]]) -> None:
    decision = policy.decide(policies, ROWS)
    assert decision.activate == activate
    assert decision.activated == activated


def test_active_by_revision_counts_what_is_and_what_was_activated() -> None:
    assert policy.active_by_revision(ROWS, {"buckets.s3.aws.io"}) == {"rev-a": 2, "rev-b": 0}


@pytest.mark.parametrize(("recorded", "written"), [
    ({}, [d.name for d in ROWS]),  # revisions not listed: every MRD's conditions written
    ({"rev-a": "1", "rev-b": "0"}, [d.name for d in ROWS]),
    # rev-a is still establishing its MRDs (no count yet): they wait for its recording.
    ({"rev-a": None, "rev-b": "0"}, ["vms.compute.gcp.io", "orphans.x.io"]),
    ({"rev-a": None, "rev-b": None}, ["orphans.x.io"]),  # no controller: always written
])
def test_the_mrds_of_an_install_still_establishing_wait_for_its_count(
        recorded: dict[str, str | None], written: list[str]) -> None:
    assert [d.name for d in policy.settled_rows(ROWS, recorded)] == written

# --- safe-start in one pass (issue 33): the policies in force, at install ---------------
PACKAGE = ["buckets.s3.aws.io", "queues.sqs.aws.io", "topics.sns.aws.io"]


@pytest.mark.parametrize(("policies", "active", "expected"), [
    ([], [], {}),  # no policy: every MRD Inactive, the runtime waits at zero
    ([Policy("p", ("*",))], [], {n: "p" for n in PACKAGE}),  # the default policy
    ([Policy("p", ("*.s3.aws.io", "topics.*"))], [],
     {"buckets.s3.aws.io": "p", "topics.sns.aws.io": "p"}),
    # Already Active (a live MRD, or a type served before): Active anyway, no policy's doing.
    ([Policy("p", ("*.aws.io",))], ["queues.sqs.aws.io"],
     {"buckets.s3.aws.io": "p", "topics.sns.aws.io": "p"}),
    # A union: each MRD with the first policy (by name) that names it.
    ([Policy("z", ("*",)), Policy("a", ("buckets.*",))], [],
     {"buckets.s3.aws.io": "a", "queues.sqs.aws.io": "z", "topics.sns.aws.io": "z"}),
    # Other packages' names and malformed or empty patterns activate nothing here.
    ([Policy("gcp", ("*.gcp.io",)), Policy("bad", ("[",)), Policy("empty", ())], [], {}),
    ([Policy("p", ("buckets.s3.aws.io",))], ["buckets.s3.aws.io"], {}),
])
def test_at_install_the_policies_in_force_name_the_active_mrds(
        policies: list[Policy], active: list[str], expected: dict[str, str]) -> None:
    assert policy.at_install(policies, PACKAGE, active) == expected


@pytest.mark.parametrize("patterns", [(), ("*",), ("*.aws.io",), ("q*", "t*"), ("[",),
                                      ("buckets.s3.aws.io", "nothing")])
def test_at_install_decides_what_the_later_activation_would(patterns: tuple[str, ...]) -> None:
    """The install's decision is the activation workflow's over the same MRDs Inactive."""
    policies = [Policy("p", patterns), Policy("q", ("topics.*",))]
    later = policy.decide(policies, [Definition(n, n == PACKAGE[1]) for n in PACKAGE])
    assert policy.at_install(policies, PACKAGE, {PACKAGE[1]}) == later.activate


@pytest.mark.parametrize(("obj", "expected"), [
    ({"metadata": {"name": "p"}, "spec": {"activate": ["*.aws.io", "x"]}},
     Policy("p", ("*.aws.io", "x"))),
    ({"metadata": {"name": "p"}, "spec": {}}, Policy("p", ())),
    ({"metadata": {"name": "p"}}, Policy("p", ())),
])
def test_a_policy_object_as_activation_reads_it(obj: dict[str, Any], expected: Policy) -> None:
    assert Policy.of(obj) == expected


@pytest.mark.parametrize(("active", "activated", "expected"), [
    (frozenset(), (), ["ManagedResourceDefinition:Inactive"]),
    (frozenset({"buckets.s3.example.org"}), (("buckets.s3.example.org", "p"),),
     ["ManagedResourceDefinition:Active", "CustomResourceDefinition"]),
])
def test_a_safe_start_crd_a_policy_names_is_established_active_with_its_crd(
        active: frozenset[str], activated: tuple[tuple[str, str], ...],
        expected: list[str]) -> None:
    out = convert.Conversion(False, active, activated).objects(crd("s3.example.org", "Bucket"))
    assert [o["kind"] + (":" + o["spec"]["state"] if "state" in o["spec"] else "")
            for o in out] == expected


@pytest.mark.parametrize(("active", "crd_exists", "expected"), [
    (False, False, ("False", "InactiveManagedResource")),
    (False, True, ("False", "InactiveManagedResource")),
    (True, False, ("Unknown", "PendingManagedResource")),
    (True, True, ("True", "EstablishedManagedResource")),
])
def test_established(active: bool, crd_exists: bool, expected: tuple[str, str]) -> None:
    assert policy.established(active, crd_exists) == expected


def test_policy_health_in_crossplanes_words() -> None:
    assert policy.policy_health(0, 3) == ("True", "Running", "")
    assert policy.policy_health(1, 3) == (
        "Unknown", "EncounteredErrors", "failed to activate 1 of 3 ManagedResourceDefinitions")


@pytest.mark.parametrize("matched, served, expected", [
    # Every MRD it activated is served: True, and what a kubectl wait returns on.
    (["a.x.io", "b.x.io"], {"a.x.io", "b.x.io", "c.x.io"},
     ("True", "EstablishedManagedResources",
      "all 2 activated ManagedResourceDefinitions are established")),
    # One is not served yet (Inactive, no CRD, or its CRD not Established): Unknown, named.
    (["a.x.io", "b.x.io"], {"a.x.io"},
     ("Unknown", "PendingManagedResources",
      "1 of 2 activated ManagedResourceDefinitions confirmed established; "
      "waiting for b.x.io")),
    ([f"t{i}.x.io" for i in range(7)], set(),
     ("Unknown", "PendingManagedResources",
      "0 of 7 activated ManagedResourceDefinitions confirmed established; waiting for "
      "t0.x.io, t1.x.io, t2.x.io, t3.x.io, t4.x.io, ...")),
    # A policy matching nothing (applied before its provider) does not say its kinds are
    # served.
    ([], {"a.x.io"}, ("Unknown", "NoManagedResources",
                      "no ManagedResourceDefinition matches this policy's patterns yet")),
])
def test_policy_established(matched: list[str], served: set[str],
                            expected: tuple[str, str, str]) -> None:
    assert policy.policy_established(matched, served) == expected


@pytest.mark.parametrize("matched, present, served, expected", [
    # Those not known served, in order: the pass reads them until one is not Established.
    (["c.x.io", "a.x.io", "b.x.io"], {"a.x.io", "b.x.io", "c.x.io"}, {"b.x.io"},
     ["a.x.io", "c.x.io"]),
    # One has no CRD (or is Inactive): the policy waits whatever the others say, no read.
    (["a.x.io", "b.x.io"], {"a.x.io"}, set(), []),
    # All known served already: nothing to read.
    (["a.x.io"], {"a.x.io"}, {"a.x.io"}, []),
    ([], set(), set(), []),
])
def test_unconfirmed(matched: list[str], present: set[str], served: set[str],
                     expected: list[str]) -> None:
    assert policy.unconfirmed(matched, present, served) == expected


ESTABLISHED = [{"type": "Established", "status": "True"}]


@pytest.mark.parametrize("conditions, recorded, matched, present, settled", [
    (ESTABLISHED, ["a", "b"], ["a", "b"], {"a", "b"}, True),
    # Not True yet, or not for these MRDs, or one's CRD is gone: its CRDs are read again.
    ([{"type": "Established", "status": "Unknown"}], ["a"], ["a"], {"a"}, False),
    ([], ["a"], ["a"], {"a"}, False),
    (ESTABLISHED, ["a"], ["a", "b"], {"a", "b"}, False),
    (ESTABLISHED, ["a", "b"], ["a", "b"], {"a"}, False),
])
def test_a_settled_policy_reads_no_crd(conditions: list[dict[str, str]], recorded: list[str],
                                        matched: list[str], present: set[str],
                                        settled: bool) -> None:
    assert policy.settled(conditions, recorded, matched, present) is settled


# --- the activity's side: a conversion that fails falls back, saying so ----------------
class _Reader:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def _documents(tmp_path: Path, objects: list[Any]) -> Path:
    path = tmp_path / "documents.jsonl"
    path.write_text("".join(json.dumps([i, o]) + "\n" for i, o in enumerate(objects)))
    return path


def test_a_failed_conversion_installs_crds_with_a_warning(tmp_path: Path) -> None:
    from lockwright.activities.definitions import Definitions

    broken = crd("s3.example.org", "Bucket")
    broken["spec"]["versions"][0]["served"] = "yes"
    reader = _Reader()
    definitions = Definitions(None, reader, None, enabled=True)  # type: ignore[arg-type]
    documents = _documents(tmp_path, [crd("s3.example.org", "Queue"), broken])
    assert definitions.conversion("provider", {}, "sha256:0", documents) is None
    [(type_, reason, message)] = reader.events
    assert (type_, reason) == ("Warning", "ConvertCRDToMRD")
    assert "buckets.s3.example.org: spec.versions[0].served is not a boolean" in message


@pytest.mark.parametrize(("kind", "enabled"), [("configuration", True), ("provider", False)])
def test_no_conversion_off_or_for_other_kinds(tmp_path: Path, kind: str,
                                              enabled: bool) -> None:
    from lockwright.activities.definitions import Definitions

    definitions = Definitions(None, _Reader(), None, enabled=enabled)  # type: ignore[arg-type]
    documents = _documents(tmp_path, [crd("s3.example.org", "Queue")])
    assert definitions.conversion(kind, {}, "sha256:0", documents) is None


@pytest.mark.parametrize(("recorded", "active", "behind"), [
    (None, 5, False),  # the install has not recorded a count yet: it will
    ("0", 2, True), ("2", 2, False), ("3", 2, False), ("x", 0, True),
])
def test_a_recorded_count_behind_the_active_mrds(recorded: str | None, active: int,
                                                 behind: bool) -> None:
    assert policy.behind(recorded, active) is behind
