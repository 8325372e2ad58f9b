"""The layering docs/design.md asks for, checked by import-linter's contracts in pyproject.toml
(the floors as a layers contract, no import cycles, workflows never import I/O, the core
never imports Temporal, only ``lockwright.k8s`` imports ``kubernetes``, product code never
imports devcluster), and the shape of the house: no hidden imports, no long modules, a core
of folders."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_import_contracts_kept() -> None:
    lint = shutil.which("lint-imports") or os.path.join(os.path.dirname(sys.executable),
                                                        "lint-imports")
    result = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_product_code_is_strictly_typed(tmp_path: object) -> None:
    """mypy --strict (configured in pyproject.toml) passes on every product package."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), "lockwright"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_test_module_names_are_unique() -> None:
    """pytest imports test modules by basename (the test folders are not packages): two
    ``test_x.py`` in different folders stop a whole run at collection."""
    from collections import Counter

    names = Counter(p.name for p in Path(ROOT, "tests").rglob("test_*.py"))
    assert [n for n, count in names.items() if count > 1] == []


# devcluster, a test server, is not product.
NOT_PRODUCT = ("devcluster",)
# A module that imports inside its functions on purpose says why once, on a line of its
# own starting with this (e.g. start-up time: ``lockwright --help`` loads no Temporal).
LAZY_MARK = "# Imports inside functions:"


def _product_modules() -> list[Path]:
    return sorted(p for p in Path(ROOT, "lockwright").rglob("*.py")
                  if p.relative_to(ROOT).parts[1] not in NOT_PRODUCT)


def _function_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return found


def _explained(lines: list[str], node: ast.stmt) -> bool:
    """A comment on the import, on the line above it, or on the import just before it."""
    above = lines[node.lineno - 2] if node.lineno >= 2 else ""
    own = lines[node.lineno - 1:node.end_lineno or node.lineno]
    if any("#" in line for line in own) or above.strip().startswith("#"):
        return True
    return above.strip().startswith(("import ", "from ")) and "#" in above


def test_imports_inside_functions_say_why() -> None:
    """No import hides inside a function unless a comment says why (start-up time, an
    optional dependency): a hidden import is how a cycle or a wrong floor goes unseen."""
    unexplained = []
    for path in _product_modules():
        text = path.read_text()
        if any(line.startswith(LAZY_MARK) for line in text.splitlines()):
            continue
        lines = text.splitlines()
        unexplained += [f"{path.relative_to(ROOT)}:{node.lineno}"
                        for node in _function_imports(ast.parse(text))
                        if not _explained(lines, node)]
    assert unexplained == []


def test_no_product_module_is_over_600_lines() -> None:
    """Modules stay readable in one sitting (devcluster, a test server, is not product)."""
    long = {str(p.relative_to(ROOT)): n for p in _product_modules()
            if (n := len(p.read_text().splitlines())) > 600}
    assert long == {}


def test_the_core_keeps_few_flat_modules() -> None:
    """Capabilities live in folders of lockwright/; its root keeps the few shared modules
    (errors, names, conditions, settings, log) and the package's own files."""
    flat = sorted(p.name for p in Path(ROOT, "lockwright").glob("*.py"))
    assert len(flat) <= 10, flat


def _layers_contract() -> dict[str, object]:
    import tomllib

    config = tomllib.loads(Path(ROOT, "pyproject.toml").read_text())
    return next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")


def test_every_folder_of_lockwright_has_a_floor() -> None:
    """Each module and folder of lockwright/ sits on a floor of the layers contract, or is a
    development server (standalone, its own contract), so a new folder cannot slip in
    unplaced."""
    layers = _layers_contract()["layers"]
    assert isinstance(layers, list)
    placed = {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}
    placed |= {"devcluster", "controlplane", "__init__", "__main__"}
    found = {p.stem for p in Path(ROOT, "lockwright").iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert sorted(found - placed) == [] and sorted(placed - found) == []


def test_only_lockwright_is_a_top_level_package() -> None:
    """One importable name: every Python package of the repository sits under lockwright/
    (tests/ and benchmarks/ are not installed; crds/ is a link into lockwright/data/)."""
    top = {p.parent.name for p in Path(ROOT).glob("*/__init__.py") if not p.parent.is_symlink()}
    assert top <= {"lockwright", "tests", "benchmarks"}, top
