"""``lockwright api``'s command lines and printing, without a server (commands.api)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lockwright.commands.api import USAGE, diff_lines, manifest_files
from lockwright.commands.main import build_parser, main
from lockwright.identity.diff import TypeDiff


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize(("argv", "want"), [
    (("api", "list"), {"output": None, "context": ""}),
    (("api", "list", "-o", "json", "--context", "east"), {"output": "json", "context": "east"}),
    (("api", "sum", "--kubeconfig", "k"), {"kubeconfig": "k"}),
    (("api", "verify", "a.sum", "--ignore-extra"), {"file": "a.sum", "ignore_extra": True,
                                                     "manifests": []}),
    (("api", "verify", "-f", "d", "-f", "-"), {"file": None, "manifests": ["d", "-"]}),
    (("api", "diff", "east", "west"), {"a": "east", "b": "west", "output": None}),
])
def test_api_command_lines(argv: tuple[str, ...], want: dict[str, object]) -> None:
    args = parse(*argv)
    assert {k: getattr(args, k) for k in want} == want


@pytest.mark.parametrize("argv", [("api", "verify"), ("api", "verify", "a.sum", "-f", "m")])
def test_verify_needs_a_file_or_manifests_not_both(argv: tuple[str, ...],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(list(argv)) == USAGE
    assert "give a sum FILE or -f MANIFESTS" in capsys.readouterr().err


def test_an_unreadable_sum_file_exits_2_naming_it(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.sum"
    assert main(["api", "verify", str(missing)]) == USAGE
    assert capsys.readouterr().err.startswith(f"error: {missing}: cannot read it: ")


def test_manifest_files_expand_directories_sorted(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml", "sub/c.json", "notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    assert manifest_files([str(tmp_path), "-", "x.yaml"]) == [
        str(tmp_path / "a.yml"), str(tmp_path / "b.yaml"), str(tmp_path / "sub/c.json"), "-",
        "x.yaml"]


def test_diff_lines() -> None:
    found = [TypeDiff("g/v1 A", "only-a"), TypeDiff("g/v1 B", "only-b"),
             TypeDiff("g/v1 C", "definition", "live:x", "live:y", "compatible",
                      ["spec.c: added (compatible)"]),
             TypeDiff("g/v1 C", "controller", "sha256:1 (provider/p)", "sha256:2 (provider/q)")]
    assert diff_lines(found, "east", "west") == [
        "g/v1 A: served only by east", "g/v1 B: served only by west",
        "g/v1 C: definition differs, compatible (east live:x, west live:y)",
        "  spec.c: added (compatible)",
        "g/v1 C: controller differs (east sha256:1 (provider/p), west sha256:2 (provider/q))"]
