"""The package cache directory when it cannot be written (a read-only root, no home), as in
the image under deploy/: reading a package file does not touch the cache; fetching,
``cache load`` and the worker say which directory they need and how to give one.

As root nothing is read-only by permission, so the unwritable directory here lies under a
regular file (mkdir fails with ENOTDIR); tests/integration/test_image.py does the same
with a real read-only root in a container.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_oci_roundtrip import write_root

ROOT = Path(__file__).resolve().parents[2]


def lockwright(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lockwright", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False,
                          env=env)


@pytest.fixture
def no_cache_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose home and XDG cache cannot hold a directory."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the home should be\n")
    env = {k: v for k, v in os.environ.items() if k != "LOCKWRIGHT_CACHE_DIR"}
    return {**env, "HOME": str(blocker / "home"), "XDG_CACHE_HOME": str(blocker / "cache"),
            "DOCKER_CONFIG": "/nonexistent"}


@pytest.fixture
def package_file(tmp_path: Path) -> Path:
    out = tmp_path / "provider.xpkg"
    built = lockwright("xpkg", "build", "--package-root",
                       str(write_root(tmp_path, "Provider")), "-o", str(out),
                       env={**os.environ})
    assert built.returncode == 0, built.stderr
    return out


def test_reading_a_file_needs_no_cache(no_cache_env, package_file):
    for args in (["inspect", str(package_file)], ["lint", str(package_file)]):
        done = lockwright("xpkg", *args, env=no_cache_env)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
    out = package_file.with_name("package.yaml")
    done = lockwright("xpkg", "extract", str(package_file), "-o", str(out), env=no_cache_env)
    assert done.returncode == 0, done.stderr
    assert "kind: Provider" in out.read_text()
    assert not Path(no_cache_env["XDG_CACHE_HOME"]).exists()


@pytest.mark.parametrize("args", [
    ["xpkg", "inspect", "127.0.0.1:9/nothing/here:v1"],
    ["xpkg", "extract", "127.0.0.1:9/nothing/here:v1", "-o", "/dev/null"],
    ["xpkg", "cache", "load", "PACKAGE", "--as", "example.org/p:v1"],
])
def test_commands_needing_the_cache_name_it(no_cache_env, package_file, args):
    args = [str(package_file) if a == "PACKAGE" else a for a in args]
    done = lockwright(*args, env=no_cache_env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    wanted = Path(no_cache_env["XDG_CACHE_HOME"]) / "lockwright" / "xpkg"
    assert f"package cache directory {wanted} cannot be created" in done.stderr
    assert "LOCKWRIGHT_CACHE_DIR" in done.stderr and "volume" in done.stderr


def test_worker_without_a_cache_says_so_before_connecting(no_cache_env, tmp_path):
    cache = Path(no_cache_env["HOME"]) / "cache"
    env = {**no_cache_env, "LOCKWRIGHT_CACHE_DIR": str(cache),
           # Nothing listens here: the worker must stop before trying.
           "LOCKWRIGHT_TEMPORAL_ADDRESS": "127.0.0.1:9"}
    done = lockwright("worker", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"package cache directory {cache} cannot be created" in done.stderr
    assert "Traceback" not in done.stderr
