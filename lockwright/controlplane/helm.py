"""Finding, or building once, ``helm`` (scripts/build-helm.sh), as :mod:`.build` finds the
control plane: tests lint, render and install deploy/chart/lockwright with it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from lockwright.controlplane.build import ROOT, BuildError

SCRIPT = ROOT / "scripts" / "build-helm.sh"


def binary(progress: TextIO | None = sys.stderr) -> Path:
    """The ``helm`` executable, building it first when it is missing.

    ``$LOCKWRIGHT_HELM_BIN`` names a ready executable (any helm v4), or the directory
    holding it, instead. The build's progress lines go to ``progress`` (nothing when None).

    Raises:
        BuildError: Go is missing or the build failed; the message ends with its output.
    """
    given = os.environ.get("LOCKWRIGHT_HELM_BIN")
    if given:
        path = Path(given)
        return _executable(path / "helm" if path.is_dir() else path, "LOCKWRIGHT_HELM_BIN")
    if shutil.which("go", path=f"{os.environ.get('PATH', '')}:/usr/local/go/bin") is None:
        raise BuildError("go is missing: helm is built with Go 1.26 "
                         "(apt-get install golang-go, or set LOCKWRIGHT_HELM_BIN)")
    proc = subprocess.Popen(["bash", str(SCRIPT)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    lines = [_echo(line, progress) for line in proc.stdout]
    if proc.wait() != 0 or not lines:
        raise BuildError(f"{SCRIPT.name} failed ({proc.returncode}):\n" + "".join(lines[-40:]))
    return _executable(Path(lines[-1].strip()) / "helm", SCRIPT.name)


def _echo(line: str, progress: TextIO | None) -> str:
    if progress is not None and line.startswith(("[helm]", "go: downloading")):
        progress.write(line)
        progress.flush()
    return line


def _executable(path: Path, source: str) -> Path:
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BuildError(f"{path} (from {source}) is not an executable helm; unset "
                         f"LOCKWRIGHT_HELM_BIN to build it, or run {SCRIPT}")
    return path
