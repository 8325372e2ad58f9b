"""CRD compatibility on other people's data: crdify's test cases and a real provider.

crdify's end-to-end cases (tests/fixtures/crdify, see its README) each hold an old CRD
``a.yaml``, a new one ``b.yaml`` and crdify's verdict ``expected.json`` (empty when crdify
finds nothing). Every case is checked against what lockwright reports; where lockwright
passes what crdify's default configuration flags, the table says why.

provider-kubernetes (tests/fixtures/provider-crds) is compared release to release:
v0.17.1 -> v0.18.0 -> v1.0.0 -> v1.1.0, its package/crds at each tag, verdicts checked by
hand against ``git diff <tag> <tag> -- package/crds``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockwright.crdcompat import FieldSummary, Kind, compare, compare_all

FIXTURES = Path(__file__).parent.parent / "fixtures"
CRDIFY = FIXTURES / "crdify"
PROVIDER = FIXTURES / "provider-crds"
BLOCK, PASS = True, False
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [d for d in yaml.load_all(fh, Loader=Loader) if d]


# case: (what lockwright reports as (kind, path, blocking), why it differs from crdify or "")
CRDIFY_CASES: dict[str, tuple[list[tuple[str, str, bool]], str]] = {
    "defaultvaluechanged": ([(Kind.DEFAULT_CHANGED, ".spec.mode", BLOCK)], ""),
    "defaultvaluenetnew": ([(Kind.DEFAULT_ADDED, ".spec.mode", BLOCK)], ""),
    "defaultvalueremoved": ([(Kind.DEFAULT_REMOVED, ".spec.mode", BLOCK)], ""),
    "descriptionchanged": ([], "descriptions never decide validity: the issue lets them pass"),
    "enumnetnew": ([(Kind.ENUM_ADDED, ".spec.mode", BLOCK)], ""),
    "enumvalueadded": ([(Kind.ENUM_VALUE_ADDED, ".spec.mode", PASS)],
                       ("a value added widens the enum: every stored value stays valid "
                        "(crdify's additionPolicy: Allow)")),
    "enumvalueremoved": ([(Kind.ENUM_VALUE_REMOVED, ".spec.mode", BLOCK)], ""),
    # crdify also reports the removed field's default, enum, type and description
    "existingfieldremoved": ([(Kind.PROPERTY_REMOVED, ".spec.mode", BLOCK)], ""),
    "maxnetnew": ([(Kind.BOUND_TIGHTENED, p, BLOCK) for p in (
        ".spec.containerPorts", ".spec.size", ".spec.name", ".spec.config")], ""),
    "maxvaluedecreased": ([(Kind.BOUND_TIGHTENED, p, BLOCK) for p in (
        ".spec.containerPorts", ".spec.size", ".spec.name", ".spec.config")], ""),
    "minnetnew": ([(Kind.BOUND_TIGHTENED, p, BLOCK) for p in (
        ".spec.containerPorts", ".spec.size", ".spec.name", ".spec.config")], ""),
    "minvalueincreased": ([(Kind.BOUND_TIGHTENED, p, BLOCK) for p in (
        ".spec.containerPorts", ".spec.size", ".spec.name", ".spec.config")], ""),
    "multipleincompatible": ([(Kind.SCOPE_CHANGED, "", BLOCK),
                              (Kind.REQUIRED_ADDED, ".spec.mode", BLOCK),
                              (Kind.BOUND_LOOSENED, ".spec.size", PASS),
                              (Kind.BOUND_TIGHTENED, ".spec.size", BLOCK),
                              (Kind.ENUM_VALUE_ADDED, ".spec.mode", PASS)], ""),
    "nullableadded": ([(Kind.NULLABLE_ADDED, ".spec.code", PASS)],
                      ("accepting null as well rejects nothing that was accepted "
                       "(crdify's nullable additionPolicy: Allow)")),
    "nullableremoved": ([(Kind.NULLABLE_REMOVED, ".spec.code", BLOCK)], ""),
    "patternadded": ([(Kind.PATTERN_CHANGED, ".spec.code", BLOCK)], ""),
    "patternchanged": ([(Kind.PATTERN_CHANGED, ".spec.code", BLOCK)], ""),
    "patternremoved": ([(Kind.PATTERN_REMOVED, ".spec.code", PASS)],
                       ("without the pattern every stored value stays valid "
                        "(crdify's pattern removalPolicy: Allow)")),
    "requiredfieldadded": ([(Kind.REQUIRED_ADDED, ".spec.mode", BLOCK)], ""),
    "scopechanged": ([(Kind.SCOPE_CHANGED, "", BLOCK)], ""),
    # crdify adds "unhandled" for format int32 dropped; the server ignores int32 anyway
    "typechanged": ([(Kind.TYPE_CHANGED, ".spec.containerPort", BLOCK)], ""),
    "validchanges": ([], ""),
}


def test_every_crdify_case_is_in_the_table() -> None:
    assert sorted(p.name for p in CRDIFY.iterdir() if p.is_dir()) == sorted(CRDIFY_CASES)


@pytest.mark.parametrize("case", sorted(CRDIFY_CASES))
def test_crdify_case(case: str) -> None:
    expected, differs = CRDIFY_CASES[case]
    [old], [new] = documents(CRDIFY / case / "a.yaml"), documents(CRDIFY / case / "b.yaml")
    crdify_flags = bool(json.loads((CRDIFY / case / "expected.json").read_text()))
    verdict = compare(old, new)
    assert [(c.kind, c.path if c.path != "." else "", c.blocking)
            for c in verdict.changes] == expected
    # lockwright blocks exactly where crdify does, but for the reasons written down
    assert verdict.blocking == (crdify_flags and not differs)


def provider(tag: str) -> list[dict[str, Any]]:
    return [d for f in sorted((PROVIDER / f"provider-kubernetes-{tag}").glob("*.yaml"))
            for d in documents(f)]


def test_provider_kubernetes_v0_17_1_to_v0_18_0_passes() -> None:
    """controller-gen v0.14 -> v0.16: its version annotation, description text, and
    ``x-kubernetes-list-type: atomic`` on the two arrays of ObservedObjectCollection's
    label selector. A list without a list type already is atomic, so nothing validates or
    merges differently: four CRDs, nothing to report."""
    report = compare_all(provider("v0.17.1"), provider("v0.18.0"))
    assert (report.verdicts, report.added, report.removed, report.unchanged) == ([], [], [], 4)


def test_provider_kubernetes_v0_18_0_to_v1_0_0_blocks_on_the_removed_field() -> None:
    """crossplane-runtime v2 dropped external secret stores, so Object lost
    ``spec.publishConnectionDetailsTo`` in both versions it serves: an Object that sets it
    would have it pruned, silently. The namespaced ``.m.`` API group is new (five CRDs);
    the other three CRDs changed only their controller-gen annotation or descriptions.
    Object converts through a webhook, so its two served versions are not compared."""
    report = compare_all(provider("v0.18.0"), provider("v1.0.0"))
    assert report.added == [f"{p}.kubernetes.m.crossplane.io" for p in (
        "clusterproviderconfigs", "objects", "observedobjectcollections", "providerconfigs",
        "providerconfigusages")]
    assert (report.removed, report.unchanged, report.blocking) == ([], 3, True)
    [verdict] = report.verdicts
    assert verdict.crd == "objects.kubernetes.crossplane.io"
    assert [(c.kind, c.version, c.path, c.blocking) for c in verdict.changes] == [
        (Kind.PROPERTY_REMOVED, v, ".spec.publishConnectionDetailsTo", True)
        for v in ("v1alpha1", "v1alpha2")]
    assert verdict.fields == [FieldSummary(v, removed=1,
                                           first_removed=[".spec.publishConnectionDetailsTo"])
                              for v in ("v1alpha1", "v1alpha2")]


def test_provider_kubernetes_v1_0_0_to_v1_1_0_passes_with_an_enum_value_added() -> None:
    """``AWSWebIdentityCredentials`` joined the identity types of the three ProviderConfig
    kinds: a wider enum, so every stored ProviderConfig stays valid and nothing blocks;
    the plan still shows the change."""
    report = compare_all(provider("v1.0.0"), provider("v1.1.0"))
    assert not report.blocking and report.unchanged == 6
    assert [(v.crd, [(c.kind, c.version, c.path, c.detail) for c in v.changes])
            for v in report.verdicts] == [
        (name, [(Kind.ENUM_VALUE_ADDED, "v1alpha1", ".spec.identity.type",
                 'enum values ["AWSWebIdentityCredentials"] added')])
        for name in ("clusterproviderconfigs.kubernetes.m.crossplane.io",
                     "providerconfigs.kubernetes.crossplane.io",
                     "providerconfigs.kubernetes.m.crossplane.io")]
