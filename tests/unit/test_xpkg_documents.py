"""documents.jsonl: written by the validating parse, read back as the same objects."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lockwright.errors import InvalidPackage, LintError
from lockwright.oci.validate import validate_documents, validate_package
from lockwright.xpkg import documents as jsonl
from lockwright.xpkg.parse import iter_objects
from tests.helpers import traced_peak
from tests.unit.test_xpkg_parse import CONFIGURATION, PROVIDER, crd, write_big_package

TRICKY = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
          "metadata:\n  name: t.example.org\n  annotations: {released: 2024-01-01}\n"
          "spec:\n  group: example.org\n  x: [1, 2.5, true, null, 'ü', 'yes']\n")


def _write(tmp_path: Path, *docs: str) -> tuple[Path, Path]:
    path, docs_path = tmp_path / "package.yaml", tmp_path / "documents.jsonl"
    path.write_text("---\n".join(docs))
    with docs_path.open("wb") as out:
        validate_package(path, documents=out)
    return path, docs_path


def test_documents_hold_every_document_with_its_index(tmp_path: Path) -> None:
    path, docs_path = _write(tmp_path, "", PROVIDER, crd("a.example.org"), TRICKY)
    with path.open("rb") as f, docs_path.open("rb") as d:
        assert list(jsonl.iter_documents(d)) == list(iter_objects(f))
    assert len(docs_path.read_bytes().splitlines()) == 3  # empty documents are skipped


def test_summary_from_documents_matches_the_yaml(tmp_path: Path) -> None:
    path, docs_path = _write(tmp_path, crd("a.example.org"), PROVIDER, TRICKY)
    assert validate_documents(docs_path, "Provider") == validate_package(path, "Provider")


def test_summary_from_documents_applies_the_same_rules(tmp_path: Path) -> None:
    _, docs_path = _write(tmp_path, PROVIDER, crd("a.example.org"))
    with pytest.raises(InvalidPackage, match="not Configuration"):
        validate_documents(docs_path, "Configuration")
    docs_path.write_bytes(jsonl.dump(0, {"apiVersion": "meta.pkg.crossplane.io/v1",
                                         "kind": "Configuration", "metadata": {"name": "c"}})
                          + jsonl.dump(1, {"apiVersion": "apiextensions.k8s.io/v1",
                                           "kind": "CustomResourceDefinition",
                                           "metadata": {"name": "a.example.org"}}))
    with pytest.raises(LintError):
        validate_documents(docs_path)


def test_integer_keys_become_strings_as_in_kubernetes() -> None:
    [(index, doc)] = list(jsonl.iter_documents(io.BytesIO(jsonl.dump(4, {"a": {1: "x"}}))))
    assert (index, doc) == (4, {"a": {"1": "x"}})


def test_value_json_cannot_carry_is_an_invalid_package(tmp_path: Path) -> None:
    path = tmp_path / "package.yaml"
    path.write_text(CONFIGURATION + "---\n" + crd("a.example.org") + "  data: !!binary aGk=\n")
    with pytest.raises(InvalidPackage, match="document 1: not representable as JSON"), \
            (tmp_path / "d").open("wb") as out:
        validate_package(path, documents=out)


def test_damaged_line_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        list(jsonl.iter_documents(io.BytesIO(b'[0, {"a": 1}]\n{"a": 1}\n')))


def test_reading_documents_is_streaming(tmp_path: Path) -> None:
    path = tmp_path / "package.yaml"
    write_big_package(path, 2000)  # ~9 MB of YAML
    docs_path = tmp_path / "documents.jsonl"
    with docs_path.open("wb") as out:
        validate_package(path, documents=out)
    summary, peak = traced_peak(lambda: validate_documents(docs_path))
    assert summary.counts == {"CustomResourceDefinition": 2000}
    assert peak < 2_000_000, f"peak {peak} bytes: documents were not read one at a time"
