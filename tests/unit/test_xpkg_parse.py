"""Streaming parse of package.yaml: documents, validation errors with their index, memory."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml

from lockwright.errors import InvalidPackage, LintError
from lockwright.xpkg import parse
from lockwright.xpkg.meta import ProviderMeta
from lockwright.xpkg.parse import iter_objects, parse_package, scan_package
from tests.helpers import traced_peak

PROVIDER = "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata:\n  name: p\n"
CONFIGURATION = "apiVersion: meta.pkg.crossplane.io/v1\nkind: Configuration\nmetadata:\n  name: c\n"


def crd(name: str) -> str:
    return (f"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            f"metadata:\n  name: {name}\nspec:\n  group: example.org\n")


def stream(*docs: str) -> io.BytesIO:
    return io.BytesIO("---\n".join(docs).encode())


def test_iter_objects_counts_empty_documents() -> None:
    text = "---\n# only a comment\n---\na: 1\n---\n---\nb: 2\n...\n"
    assert list(iter_objects(io.StringIO(text))) == [(1, {"a": 1}), (3, {"b": 2})]


def test_parse_package_keeps_objects_and_counts() -> None:
    parsed = parse_package(stream(crd("a.example.org"), PROVIDER, crd("b.example.org")))
    assert isinstance(parsed.meta, ProviderMeta) and parsed.meta_index == 1
    assert [o["metadata"]["name"] for o in parsed.objects] == ["a.example.org", "b.example.org"]
    assert parsed.counts == {"CustomResourceDefinition": 2}
    assert [(s.index, s.name) for s in parsed.summaries] == [(0, "a.example.org"),
                                                            (2, "b.example.org")]
    assert parsed.documents == 3


def test_parse_package_without_objects_keeps_summaries_only() -> None:
    parsed = parse_package(stream(PROVIDER, crd("a.example.org")), keep_objects=False)
    assert parsed.objects == () and len(parsed.summaries) == 1


def test_timestamps_stay_strings() -> None:
    doc = PROVIDER + "  annotations:\n    released: 2024-01-01\n"
    assert parse_package(stream(doc)).meta.annotations == {"released": "2024-01-01"}
    assert list(iter_objects(io.StringIO("a: 2024-01-01T10:00:00Z\nb: yes\n"))) == [
        (0, {"a": "2024-01-01T10:00:00Z", "b": True})]


def test_text_streams_work_too() -> None:
    assert parse_package(io.StringIO(PROVIDER)).meta.name == "p"


ERRORS = [
    ((PROVIDER, crd("a.example.org"), PROVIDER.replace("name: p", "name: q")),
     ("not exactly one package meta type: document 2 (Provider) is a second meta object "
     "after document 0 (Provider)")),
    ((crd("a.example.org"),), "not exactly one package meta type: the package has no meta object"),
    ((PROVIDER, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"),
     'document 1 (ConfigMap cm): no kind "ConfigMap" is registered for version "v1"'),
    ((PROVIDER, "apiVersion: apiextensions.crossplane.io/v9\nkind: Composition\n"),
     ('document 1 (Composition): no kind "Composition" is registered for version '
     '"apiextensions.crossplane.io/v9"')),
    ((PROVIDER, "metadata:\n  name: x\n"), "document 1 (x): object has no kind"),
    ((PROVIDER, "kind: Thing\n"), "document 1 (Thing): object has no apiVersion"),
    ((PROVIDER, "spec: {}\n"), "document 1: object has no kind"),
    ((PROVIDER, "- a\n- b\n"), "document 1: expected an object, got list"),
    ((PROVIDER, "key: [unclosed\n"),
     "document 1: invalid YAML at line 7, column 1: did not find expected ',' or ']'"),
    ((PROVIDER, "a: b: c\n"), "document 1: invalid YAML at line 6, column 5: mapping values"),
    ((PROVIDER.replace("kind: Provider", "kind: Function").replace("/v1", "/v1alpha1"),),
     'document 0 (Function): no kind "Function" is registered'),
    ((PROVIDER + "spec:\n  dependsOn: [{version: '1'}]\n",),
     "document 0 (Provider): spec.dependsOn[0]: encountered an invalid dependency"),
]


@pytest.mark.parametrize(("docs", "message"), ERRORS)
def test_invalid_packages_name_document_and_kind(docs: tuple[str, ...], message: str) -> None:
    with pytest.raises(InvalidPackage, match=re.escape(message)):
        parse_package(stream(*docs))


def test_expect_checks_the_meta_kind() -> None:
    with pytest.raises(InvalidPackage, match="package meta type is not Configuration"):
        parse_package(stream(PROVIDER), expect="Configuration")


def test_scan_package_lints_and_keeps_nothing() -> None:
    summary = scan_package(stream(PROVIDER, crd("a.example.org")), expect="Provider")
    assert summary.counts == {"CustomResourceDefinition": 1}
    assert summary.warnings == ()


def test_scan_package_raises_lint_error_for_wrong_kinds() -> None:
    with pytest.raises(LintError, match=re.escape(
            "linting package contents failed: document 1 (CustomResourceDefinition "
            "a.example.org): object did not pass any of the linters with following errors: "
            "object is not an XRD")):
        scan_package(stream(CONFIGURATION, crd("a.example.org")))


def test_scan_package_raises_lint_error_for_bad_crossplane_constraint() -> None:
    doc = PROVIDER + "spec:\n  crossplane:\n    version: '>>1'\n"
    with pytest.raises(LintError, match=re.escape(
            "package version constraints are poorly formatted: improper constraint: >>1")):
        scan_package(stream(doc))


def test_oversized_streams_are_refused() -> None:
    with pytest.raises(InvalidPackage, match="larger than"):
        list(parse.iter_objects(stream(PROVIDER, crd("a.example.org")), limit=100))


def write_big_package(path: Path, objects: int) -> None:
    filler = "x" * 400
    with open(path, "w") as f:
        f.write(PROVIDER)
        for i in range(objects):
            f.write("---\n" + crd(f"r{i}.example.org"))
            f.write("  versions:\n" + "".join(
                f"  - name: v{j}\n    description: {filler}\n" for j in range(10)))


def test_scan_is_streaming(tmp_path: Path) -> None:
    path = tmp_path / "package.yaml"
    write_big_package(path, 2000)  # ~9 MB of YAML
    assert path.stat().st_size > 8_000_000
    with open(path, "rb") as f:
        summary, peak = traced_peak(lambda: scan_package(f))
    assert summary.counts == {"CustomResourceDefinition": 2000}
    assert peak < 2_000_000, f"peak {peak} bytes: the stream was not parsed incrementally"


class _PyYAMLOnly(yaml.CSafeLoader):
    """The reference: PyYAML's own constructor with the same resolvers as the product's."""

    yaml_implicit_resolvers = parse._Loader.yaml_implicit_resolvers


TRICKY_DOCUMENTS = [
    "a: {b: [1, 0x1F, 0o17, 1_000, 1:20, -2]}\nc: [yes, On, off, ~, null, '', .inf, 1e3]\n",
    "date: 2024-01-01\nstamp: 2024-01-01T10:00:00Z\nquoted: '123'\ntagged: !!str 123\n",
    "a: 1\na: 2\n1: int-key\ntrue: bool-key\n? 1.5\n: float-key\n~: null-key\n",
    "base: &b {x: 1, y: [1, 2]}\nother: *b\nlist: &l [a]\nagain: *l\n",  # aliases
    "base: &b {x: 1}\nmerged: {<<: *b, y: 2}\n",  # merge key
    "data: !!binary aGk=\nset: !!set {a, b}\nomap: !!omap [{a: 1}, {b: 2}]\n",
    "s: &s text\nt: *s\nempty:\n",
    "k: |\n  block\n  text\nf: >\n  folded\n  text\n",
]


@pytest.mark.parametrize("text", TRICKY_DOCUMENTS)
def test_direct_construction_matches_pyyaml(text: str) -> None:
    ours = [doc for _, doc in iter_objects(io.StringIO(text))]
    assert ours == list(yaml.load_all(io.StringIO(text), Loader=_PyYAMLOnly))


def test_aliases_stay_shared_as_pyyaml_builds_them() -> None:
    [(_, doc)] = iter_objects(io.StringIO("base: &b {x: 1}\nother: *b\n"))
    assert doc["other"] is doc["base"]


@pytest.mark.parametrize(("text", "problem"), [
    ("? [a, b]\n: v\n", "unhashable key"),
    ("a: !custom x\n", "could not determine a constructor"),
])
def test_direct_construction_leaves_errors_to_pyyaml(text: str, problem: str) -> None:
    with pytest.raises(InvalidPackage, match=problem):
        list(iter_objects(io.StringIO(text)))
