"""``python -m lockwright xpkg …`` as a user runs it, against a real registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import unique
from tests.integration.test_oci_roundtrip import write_root
from tests.oci_images import Entry, Layer, push_image, tar_bytes

pytestmark = pytest.mark.registry
ROOT = Path(__file__).resolve().parents[2]


def xpkg(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lockwright", "xpkg", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "DOCKER_CONFIG": "/nonexistent", **(env or {})})


@pytest.fixture
def built(tmp_path) -> Path:
    out = tmp_path / "provider.xpkg"
    result = xpkg("build", "--package-root", str(write_root(tmp_path, "Provider")), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_build_push_inspect_extract(registry, built, tmp_path):
    ref = f"{registry.host}/test/{unique('cli')}:v1.0.0"
    common = ["--insecure-registry", registry.host, "--cache-dir", str(tmp_path / "cache")]
    pushed = xpkg("push", "-f", str(built), ref, *common)
    assert pushed.returncode == 0, pushed.stderr
    digest = pushed.stdout.strip().rsplit("@", 1)[1]

    remote = xpkg("inspect", ref, "-o", "json", *common)
    assert remote.returncode == 0, remote.stderr
    info = json.loads(remote.stdout)
    assert info["digest"] == digest and info["kind"] == "Provider"
    assert info["name"] == "provider-test" and info["crossplane"] == ">=v1.14.0-0"
    assert info["objects"] == {"CustomResourceDefinition": 1}
    assert info["baseLayer"].startswith("sha256:")

    local = json.loads(xpkg("inspect", str(built), "-o", "json", *common).stdout)
    assert local == info

    out = tmp_path / "package.yaml"
    extracted = xpkg("extract", ref, "-o", str(out), *common)
    assert extracted.returncode == 0, extracted.stderr
    assert "kind: Provider" in out.read_text() and "widgets.example.org" in out.read_text()
    assert xpkg("lint", str(built), *common).returncode == 0


def test_insecure_registry_from_environment(registry, built, tmp_path):
    ref = f"{registry.host}/test/{unique('env')}:v1"
    env = {"LOCKWRIGHT_INSECURE_REGISTRIES": f"other:1,{registry.host}"}
    assert xpkg("push", "-f", str(built), ref, env=env).returncode == 0
    text = xpkg("inspect", ref, "--cache-dir", str(tmp_path / "c"), env=env)
    assert text.returncode == 0 and "Provider provider-test" in text.stdout


def test_extract_missing_tag_fails_without_writing(registry, tmp_path):
    out = tmp_path / "package.yaml"
    result = xpkg("extract", f"{registry.host}/test/{unique('gone')}:v1", "-o", str(out),
                  "--insecure-registry", registry.host, "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 1
    assert "PackageNotFound" in result.stderr and "MANIFEST_UNKNOWN" in result.stderr
    assert not out.exists() and list(tmp_path.glob("*package.yaml*")) == []


def test_extract_hostile_package_fails_without_writing(registry, tmp_path):
    repo = f"test/{unique('evil')}"
    push_image(registry.host, repo, "v1", [Layer(tar_bytes([Entry("../package.yaml", b"x")]))])
    out = tmp_path / "package.yaml"
    result = xpkg("extract", f"{registry.host}/{repo}:v1", "-o", str(out),
                  "--insecure-registry", registry.host, "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 1 and "escapes the package root" in result.stderr
    assert not out.exists()


def test_extract_plain_http_without_insecure_flag_fails(registry, tmp_path):
    out = tmp_path / "package.yaml"
    result = xpkg("extract", f"{registry.host}/test/x:v1", "-o", str(out),
                  "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 1 and "RegistryUnavailable" in result.stderr
    assert not out.exists()


def test_cache_load_then_extract_from_file_and_lint_dir(tmp_path, built):
    load = xpkg("cache", "load", str(built), "--as", "xpkg.example.io/acme/p:v1",
                "--cache-dir", str(tmp_path / "c"))
    assert load.returncode == 0, load.stderr
    assert "-> sha256:" in load.stdout
    assert len([p for p in (tmp_path / "c").iterdir() if not p.name.startswith(".")]) == 1
    out = tmp_path / "from-file.yaml"
    assert xpkg("extract", str(built), "-o", str(out), "--cache-dir",
                str(tmp_path / "c")).returncode == 0
    assert "provider-test" in out.read_text()
    assert xpkg("lint", str(tmp_path / "provider")).returncode == 0
    (tmp_path / "provider" / "crds" / "bad.yaml").write_text("kind: [\n")
    bad = xpkg("lint", str(tmp_path / "provider"))
    assert bad.returncode == 1 and "invalid YAML" in bad.stderr
