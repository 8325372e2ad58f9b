"""Finding, or building once, the control plane's binaries (scripts/build-control-plane.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build-control-plane.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl",
            "kwok")


class BuildError(Exception):
    """The control plane could not be built; the message carries the build's last lines."""


def binaries(progress: TextIO | None = sys.stderr) -> Path:
    """The directory holding the binaries, building them first when they are missing.

    ``$LOCKWRIGHT_CONTROL_PLANE_BIN`` names a directory of ready binaries instead. The
    build's progress lines go to ``progress`` (nothing when None).
    """
    given = os.environ.get("LOCKWRIGHT_CONTROL_PLANE_BIN")
    if given:
        return _complete(Path(given))
    if shutil.which("go", path=f"{os.environ.get('PATH', '')}:/usr/local/go/bin") is None:
        raise BuildError("go is missing: the control plane is built with Go 1.26 "
                         "(apt-get install golang-go, or set LOCKWRIGHT_CONTROL_PLANE_BIN)")
    proc = subprocess.Popen(["bash", str(SCRIPT)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    lines = [_echo(line, progress) for line in proc.stdout]
    if proc.wait() != 0 or not lines:
        raise BuildError(f"{SCRIPT.name} failed ({proc.returncode}):\n" + "".join(lines[-40:]))
    return _complete(Path(lines[-1].strip()))


def _echo(line: str, progress: TextIO | None) -> str:
    if progress is not None and line.startswith(("[control plane]", "go: downloading")):
        progress.write(line)
        progress.flush()
    return line


def _complete(bin_dir: Path) -> Path:
    missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise BuildError(f"{bin_dir} lacks {', '.join(missing)}; run {SCRIPT}")
    return bin_dir


def stages_dir(bin_dir: Path) -> Path:
    """kwok's Stage configurations, copied beside the binaries from kwok's module."""
    return bin_dir.parent / "stages"
