"""Finding, or building once, ``helm`` (scripts/build-helm.sh), as :mod:`.build` finds the
control plane: tests lint, render and install deploy/chart/lockwright with it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from lockwright.controlplane import build
from lockwright.controlplane.build import ROOT, BuildError

SCRIPT = ROOT / "scripts" / "build-helm.sh"


def binary(progress: TextIO | None = sys.stderr) -> Path:
    """The ``helm`` executable, building it first when it is missing.

    ``$LOCKWRIGHT_HELM_BIN`` names a ready executable (any helm v4), or the directory
    holding it, instead. The build's progress lines go to ``progress`` (nothing when None).

    Raises:
        BuildError: Go is missing or the build failed (:func:`.build.run_build`).
    """
    given = os.environ.get("LOCKWRIGHT_HELM_BIN")
    if given:
        path = Path(given)
        return _executable(path / "helm" if path.is_dir() else path, "LOCKWRIGHT_HELM_BIN")
    return _executable(build.run_build(SCRIPT, "LOCKWRIGHT_HELM_BIN", progress) / "helm",
                       SCRIPT.name)


def _executable(path: Path, source: str) -> Path:
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BuildError(f"{path} (from {source}) is not an executable helm; unset "
                         f"LOCKWRIGHT_HELM_BIN to build it, or run {SCRIPT}")
    return path
