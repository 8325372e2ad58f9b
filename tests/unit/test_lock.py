"""Lock entries (docs/crossplane.md §5), upsert/remove by compare-and-swap input, conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from lockwright.errors import InvalidPackage
from lockwright.objects import lock as lk

DIGEST = "sha256:" + "ab" * 32
NOP = "xpkg.upbound.io/crossplane-contrib/provider-nop"


def _lock(*entries: dict[str, Any]) -> dict[str, Any]:
    out = lk.new_lock()
    out["metadata"]["resourceVersion"] = "41"
    out["packages"] = list(entries)
    return out


@pytest.mark.parametrize(("dep", "want"), [
    ({"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "package": NOP,
      "version": ">=v0.1.0"},
     {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "package": NOP,
      "constraints": ">=v0.1.0"}),
    ({"provider": NOP, "version": "v0.2.0"},
     {"package": NOP, "type": "Provider", "constraints": "v0.2.0"}),
    ({"configuration": "r.io/c", "version": DIGEST},
     {"package": "r.io/c", "type": "Configuration", "constraints": DIGEST}),
    ({"function": "r.io/f", "version": "^1.2"},
     {"package": "r.io/f", "type": "Function", "constraints": "^1.2"}),
    # apiVersion+kind+package only wins when all three are set
    ({"kind": "Provider", "package": "r.io/x", "configuration": "r.io/c", "version": "v1"},
     {"package": "r.io/c", "type": "Configuration", "constraints": "v1"}),
])
def test_dependency_from_meta(dep: dict[str, Any], want: dict[str, Any]) -> None:
    assert lk.dependency_from_meta(dep) == want


def test_dependency_invalid() -> None:
    with pytest.raises(InvalidPackage, match="encountered an invalid dependency: package "
                       "dependencies must specify either a valid type"):
        lk.dependency_from_meta({"version": "v1", "package": "r.io/x"})


@pytest.mark.parametrize(("image", "source", "version"), [
    (f"{NOP}:v0.2.0", NOP, "v0.2.0"),
    (f"{NOP}@{DIGEST}", NOP, DIGEST),
    ("127.0.0.1:5000/org/p:v1.0.0", "127.0.0.1:5000/org/p", "v1.0.0"),
])
def test_lock_entry_fields(image: str, source: str, version: str) -> None:
    entry = lk.lock_entry("provider-nop-abababababab", "Provider", image,
                          [{"provider": "r.io/dep", "version": ">=v1.0.0"}])
    assert entry == {
        "name": "provider-nop-abababababab", "type": "Provider",
        "apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
        "source": source, "version": version,
        "dependencies": [{"package": "r.io/dep", "type": "Provider", "constraints": ">=v1.0.0"}],
    }


ENTRY = lk.lock_entry("p-1", "Provider", f"{NOP}:v1")
OTHER = lk.lock_entry("c-1", "Configuration", "r.io/cfg:v2")


@pytest.mark.parametrize(("before", "entry", "after"), [
    ([], ENTRY, [ENTRY]),
    ([OTHER], ENTRY, [OTHER, ENTRY]),
    ([OTHER, ENTRY], ENTRY, None),  # unchanged
    ([{**ENTRY, "version": "v0"}, OTHER], ENTRY, [ENTRY, OTHER]),  # version refreshed in place
    ([{**ENTRY, "dependencies": [{"package": "x", "constraints": "v1"}]}], ENTRY, [ENTRY]),
    ([{**ENTRY, "source": "old.io/p"}, OTHER], ENTRY, [OTHER, ENTRY]),  # moved registry
    ([ENTRY, dict(ENTRY)], ENTRY, [ENTRY]),  # duplicates collapse
    ([{**ENTRY, "kind": "Function", "type": "Function"}], ENTRY,
     [{**ENTRY, "kind": "Function", "type": "Function"}, ENTRY]),  # another kind: separate
])
def test_upsert_entry(before: list[dict[str, Any]], entry: dict[str, Any],
                      after: list[dict[str, Any]] | None) -> None:
    lock = _lock(*before)
    out = lk.upsert_entry(lock, entry)
    if after is None:
        assert out is None
        return
    assert out is not None
    assert out["packages"] == after
    assert out["metadata"]["resourceVersion"] == "41"  # kept for compare-and-swap
    assert lock["packages"] == before  # input untouched


def test_upsert_copies_entry() -> None:
    entry = lk.lock_entry("p-2", "Provider", f"{NOP}:v1", [{"provider": "r.io/d", "version": "v1"}])
    out = lk.upsert_entry(_lock(), entry)
    assert out is not None
    out["packages"][0]["dependencies"].append({"package": "y"})
    assert len(entry["dependencies"]) == 1


@pytest.mark.parametrize(("before", "name", "after"), [
    ([ENTRY, OTHER], "p-1", [OTHER]),
    ([OTHER], "p-1", None),
    ([], "p-1", None),
])
def test_remove_entry(before: list[dict[str, Any]], name: str,
                      after: list[dict[str, Any]] | None) -> None:
    out = lk.remove_entry(_lock(*before), name)
    assert (out["packages"] if out else None) == after


def test_find_entry() -> None:
    assert lk.find_entry(_lock(ENTRY, OTHER), "c-1") == OTHER
    assert lk.find_entry(_lock(ENTRY), "nope") is None


CRD_A = lk.ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "as.example.org")
CRD_B = lk.ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "bs.example.org")
ALPHA = lk.Owner("Provider", "alpha", "alpha-111111111111")
BETA_OLD = lk.Owner("Provider", "beta", "beta-000000000000")


@pytest.mark.parametrize(("existing", "want"), [
    ({}, []),
    ({CRD_A: BETA_OLD, CRD_B: BETA_OLD}, []),  # our own package: hand-off, no conflict
    ({CRD_B: ALPHA, CRD_A: ALPHA}, [lk.Conflict(CRD_A, ALPHA), lk.Conflict(CRD_B, ALPHA)]),
    ({CRD_B: ALPHA}, [lk.Conflict(CRD_B, ALPHA)]),
    ({CRD_A: lk.Owner("Function", "beta")}, [lk.Conflict(CRD_A, lk.Owner("Function", "beta"))]),
])
def test_find_conflicts(existing: dict[lk.ObjectKey, lk.Owner],
                        want: list[lk.Conflict]) -> None:
    got = lk.find_conflicts([CRD_A, CRD_B], existing, kind="Provider", package="beta")
    assert got == want


def test_conflict_message_names_holder() -> None:
    conflict = lk.Conflict(CRD_A, ALPHA)
    assert conflict.message == (
        'CustomResourceDefinition.apiextensions.k8s.io "as.example.org" is already controlled '
        "by Provider alpha (revision alpha-111111111111)")
    assert lk.conflicts_message([conflict, lk.Conflict(CRD_B, ALPHA)]).count("alpha") == 4


def test_object_key_of() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "as.example.org"}}
    assert lk.ObjectKey.of(crd) == CRD_A
    assert str(lk.ObjectKey.of({"apiVersion": "v1", "kind": "Secret",
                                "metadata": {"name": "s"}})) == 'Secret "s"'
