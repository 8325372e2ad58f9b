"""The layering DESIGN.md asks for, checked by import-linter's contracts in pyproject.toml:
workflows never import I/O, the core never imports Temporal, product code never imports
devcluster, and nothing below the operator CLI (``commands``) imports it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

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
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), "lockwright", "contracts", "workflows",
         "activities", "worker", "devcluster", "controlplane", "commands"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_test_module_names_are_unique() -> None:
    """pytest imports test modules by basename (the test folders are not packages): two
    ``test_x.py`` in different folders stop a whole run at collection."""
    from collections import Counter
    from pathlib import Path

    names = Counter(p.name for p in Path(ROOT, "tests").rglob("test_*.py"))
    assert [n for n, count in names.items() if count > 1] == []
