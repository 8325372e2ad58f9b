"""Finding, or building once, the control plane's binaries (scripts/build-control-plane.sh)
and the Temporal cluster's (scripts/build-temporal.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build-control-plane.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
TEMPORAL_SCRIPT = ROOT / "scripts" / "build-temporal.sh"
TEMPORAL_BINARIES = ("temporal-server", "temporal-sql-tool")


class BuildError(Exception):
    """The control plane could not be built; the message carries the build's last lines."""


def binaries(progress: TextIO | None = sys.stderr) -> Path:
    """The directory holding the binaries, building them first when they are missing.

    ``$LOCKWRIGHT_CONTROL_PLANE_BIN`` names a directory of ready binaries instead. The
    build's progress lines go to ``progress`` (nothing when None).
    """
    return _find_or_build(SCRIPT, BINARIES, "LOCKWRIGHT_CONTROL_PLANE_BIN", progress)


def temporal_binaries(progress: TextIO | None = sys.stderr) -> Path:
    """The directory holding ``temporal-server`` and ``temporal-sql-tool``, built first when
    missing; PostgreSQL's schema is in :func:`temporal_schema_dir`.

    ``$LOCKWRIGHT_TEMPORAL_BIN`` names a directory of ready binaries instead (with the
    schema in ``../schema``, as the build lays it out).
    """
    return _find_or_build(TEMPORAL_SCRIPT, TEMPORAL_BINARIES, "LOCKWRIGHT_TEMPORAL_BIN",
                          progress)


def temporal_schema_dir(bin_dir: Path) -> Path:
    """Temporal's SQL schema (``postgresql/v12/...``), copied beside the binaries."""
    return bin_dir.parent / "schema"


def _find_or_build(script: Path, names: tuple[str, ...], variable: str,
                   progress: TextIO | None) -> Path:
    given = os.environ.get(variable)
    if given:
        return _complete(Path(given), names, script)
    return _complete(run_build(script, variable, progress), names, script)


def run_build(script: Path, variable: str, progress: TextIO | None) -> Path:
    """Run one of scripts/build-*.sh (they share scripts/lib/gobuild.sh): the bin directory
    it prints last. Its step lines (``[name] ...``) and Go's downloads go to ``progress``.

    Raises:
        BuildError: Go is missing (``variable`` names ready binaries instead) or the build
            failed; the message ends with its output.
    """
    if shutil.which("go", path=f"{os.environ.get('PATH', '')}:/usr/local/go/bin") is None:
        raise BuildError(f"go is missing: {script.name} builds with Go 1.26 "
                         f"(apt-get install golang-go, or set {variable})")
    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    lines = [_echo(line, progress) for line in proc.stdout]
    if proc.wait() != 0 or not lines:
        raise BuildError(f"{script.name} failed ({proc.returncode}):\n" + "".join(lines[-40:]))
    return Path(lines[-1].strip())


def _echo(line: str, progress: TextIO | None) -> str:
    if progress is not None and (line.startswith("go: downloading")
                                 or line.startswith("[") and "] " in line):
        progress.write(line)
        progress.flush()
    return line


def _complete(bin_dir: Path, names: tuple[str, ...], script: Path) -> Path:
    missing = [b for b in names if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise BuildError(f"{bin_dir} lacks {', '.join(missing)}; run {script}")
    return bin_dir


def stages_dir(bin_dir: Path) -> Path:
    """kwok's Stage configurations, copied beside the binaries from kwok's module."""
    return bin_dir.parent / "stages"
