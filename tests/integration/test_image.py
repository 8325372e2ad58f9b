"""lockwright's image, built from the Dockerfile and run as deploy/ runs it.

The image is built on a Debian bookworm base made here (no image hub is reachable; see
tests/fixtures/docker.py). Every container runs on the host network as uid 10001 with a
read-only root filesystem and no capabilities, writable only where deploy/ mounts an
emptyDir (a tmpfs here): /tmp, and the worker's package cache. The cluster is a devcluster
of this module's own, enforcing RBAC, that lockwright reaches as deploy/'s ServiceAccount.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_smoke_install import allow_secrets
from tests.fixtures.compose import dockerfile
from tests.fixtures.deploy import install_service_account
from tests.fixtures.docker import HOST_CA_BUNDLE, Docker, Image
from tests.fixtures.devcluster import start_devcluster
from tests.fixtures.stack import BROKEN_IMAGES, FAST_TUNING, Stack
from tests.helpers import unique, wait_for

pytestmark = [pytest.mark.docker, pytest.mark.registry, pytest.mark.temporal]

ROOT = dockerfile.ROOT
PROVIDER_ROOT = ROOT / "tests" / "data" / "packages" / "provider"
# As deploy/worker.yaml and watcher.yaml: uid 10001, read-only root, no capabilities.
AS_DEPLOYED = ("--network", "host", "--user", "10001:10001", "--read-only",
               "--cap-drop", "ALL", "--security-opt", "no-new-privileges")
CACHE_DIR = "/var/cache/lockwright"


def run(docker: Docker, image: Image, *args: str, options: tuple[str, ...] = (),
        check: bool = False) -> subprocess.CompletedProcess[str]:
    """``docker run --rm`` of the image as deployed, with more ``options``."""
    return docker.run("run", "--rm", *AS_DEPLOYED, *options, image.name, *args,
                      timeout=180, check=check)


def readable(path: Path, into: Path) -> Path:
    """A copy of ``path`` uid 10001 can read (a bind mount keeps the file's mode)."""
    into.mkdir(parents=True, exist_ok=True)
    copy = into / path.name
    shutil.copyfile(path, copy)
    copy.chmod(0o644)
    return copy


def test_base_python_is_what_the_dockerfile_asks(docker: Docker, base_image: str) -> None:
    default = dockerfile.stages()[0].base
    wanted = re.match(r"python:(\d+)\.(\d+)", default)
    assert wanted, default
    done = docker.run("run", "--rm", "--network", "host", base_image, "python", "-c",
                      "import sys; print(*sys.version_info[:2])")
    assert done.stdout.split() == [wanted[1], wanted[2]], (default, done.stdout)
    release = docker.run("run", "--rm", "--network", "host", base_image, "cat",
                         "/etc/os-release").stdout
    assert "VERSION_CODENAME=bookworm" in release and default.endswith("bookworm")


def test_image_runs_help_as_uid_10001_and_reports_its_size(
        docker: Docker, lockwright_image: Image, record_property: Any) -> None:
    record_property("image_bytes", lockwright_image.size)
    record_property("image_build_seconds", round(lockwright_image.build_seconds, 1))
    print(f"\nimage {lockwright_image.name}: {lockwright_image.size / 1e6:.0f} MB, "
          f"built in {lockwright_image.build_seconds:.0f} s (0: cached)", file=sys.stderr)
    config = json.loads(docker.run("image", "inspect", "--format", "{{json .Config}}",
                                   lockwright_image.name).stdout)
    assert config["User"] == "10001:10001" and config["Entrypoint"] == ["lockwright"]
    done = run(docker, lockwright_image, "--help")
    assert done.returncode == 0, done.stderr
    for command in ("worker", "watcher", "crds", "xpkg"):
        assert command in done.stdout
    whoami = docker.run("run", "--rm", *AS_DEPLOYED, "--entrypoint", "id",
                        lockwright_image.name, "-u").stdout.strip()
    assert whoami == "10001"


def test_the_build_ca_bundle_is_in_no_layer(docker: Docker, base_image: str,
                                            lockwright_image: Image) -> None:
    def bundle(image: str) -> str:
        out = docker.run("run", "--rm", "--network", "host", "--entrypoint", "cat", image,
                         "/etc/ssl/certs/ca-certificates.crt").stdout
        return hashlib.sha256(out.encode()).hexdigest()

    assert bundle(lockwright_image.name) == bundle(base_image)
    history = docker.run("history", "--no-trunc", "--format", "{{.CreatedBy}}",
                         lockwright_image.name).stdout
    assert "ca-bundle" not in history and "PIP_CERT" not in history
    if HOST_CA_BUNDLE.is_file():
        host = hashlib.sha256(HOST_CA_BUNDLE.read_bytes()).hexdigest()
        # When the host trusts more than Debian does, the build used it and did not keep it.
        assert bundle(base_image) == host or bundle(lockwright_image.name) != host


@pytest.fixture(scope="module")
def package_file() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lockwright-image-pkg-") as tmp:
        out = Path(tmp) / "provider.xpkg"
        done = subprocess.run([sys.executable, "-m", "lockwright", "xpkg", "build",
                               "--package-root", str(PROVIDER_ROOT), "-o", str(out)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        out.chmod(0o644)
        yield out


def test_xpkg_on_a_read_only_root(docker: Docker, lockwright_image: Image,
                                  package_file: Path) -> None:
    mount = ("-v", f"{package_file}:/pkg/provider.xpkg:ro")
    inspected = run(docker, lockwright_image, "xpkg", "inspect", "/pkg/provider.xpkg",
                    options=(*mount, "--tmpfs", "/tmp"))
    assert inspected.returncode == 0, inspected.stderr
    assert "Package:     Provider" in inspected.stdout
    # No tmpfs: nowhere to unpack the file, and the error says what to mount.
    bare = run(docker, lockwright_image, "xpkg", "inspect", "/pkg/provider.xpkg",
               options=mount)
    assert bare.returncode == 1 and "Traceback" not in bare.stderr, bare.stderr
    assert "writable temporary directory" in bare.stderr and "--tmpfs /tmp" in bare.stderr
    # A reference needs the package cache: the error names it and the setting.
    fetched = run(docker, lockwright_image, "xpkg", "inspect", "127.0.0.1:9/none/here:v1",
                  options=("--tmpfs", "/tmp"))
    assert fetched.returncode == 1 and "Traceback" not in fetched.stderr, fetched.stderr
    assert ("package cache directory /home/lockwright/.cache/lockwright/xpkg cannot be "
            "created") in fetched.stderr and "LOCKWRIGHT_CACHE_DIR" in fetched.stderr


class Deployed:
    """This module's cluster, and lockwright's containers running against it."""

    def __init__(self, docker: Docker, image: Image, stack: Stack, kubeconfig: Path) -> None:
        self.docker, self.image, self.stack, self.kubeconfig = docker, image, stack, kubeconfig
        self.containers: list[str] = []

    def env(self) -> tuple[str, ...]:
        """The stack's settings (Temporal, task queue, registries, tuning) as ``-e`` flags,
        with the kubeconfig and the cache where the containers have them."""
        settings = {k: v for k, v in self.stack.env.items()
                    if k.startswith("LOCKWRIGHT_") and k != "LOCKWRIGHT_CACHE_DIR"}
        settings.update(KUBECONFIG="/kube/config", LOCKWRIGHT_CACHE_DIR=CACHE_DIR)
        return tuple(f for k, v in sorted(settings.items()) for f in ("-e", f"{k}={v}"))

    def mounts(self) -> tuple[str, ...]:
        return ("-v", f"{self.kubeconfig}:/kube/config:ro", "--tmpfs", "/tmp")

    def crds_install(self) -> subprocess.CompletedProcess[str]:
        return run(self.docker, self.image, "crds", "install",
                   options=(*self.env(), *self.mounts()))

    def start(self, command: str, ready_line: str, *options: str) -> str:
        """``docker run -d IMAGE command``; waits until its log has ``ready_line``."""
        name = f"lockwright-{command}-{uuid.uuid4().hex[:8]}"
        self.containers.append(name)
        self.docker.run("run", "-d", "--name", name, *AS_DEPLOYED, *self.env(),
                        *self.mounts(), *options, self.image.name, command)

        def ready() -> bool:
            state = self.docker.run("inspect", "--format", "{{.State.Running}}", name)
            assert state.stdout.strip() == "true", f"{command} exited: {self.logs(name)}"
            return ready_line in self.logs(name)

        wait_for(ready, timeout=90, interval=0.3, what=f"{command} container: {ready_line}")
        return name

    def logs(self, name: str) -> str:
        done = self.docker.run("logs", name, check=False)
        return (done.stdout + done.stderr)[-4000:]

    def remove(self) -> None:
        for name in self.containers:
            self.docker.run("rm", "-f", name, check=False)


@pytest.fixture(scope="module")
def deployed(docker: Docker, lockwright_image: Image, registry: Any,
             temporal_env: Any) -> Iterator[Deployed]:
    with tempfile.TemporaryDirectory(prefix="lockwright-image-") as tmp:
        state = Path(tmp)
        (state / "home").mkdir()
        cluster = start_devcluster(str(state), "--unavailable-images", BROKEN_IMAGES,
                                   "--authorization-mode", "RBAC")
        address = temporal_env.client.service_client.config.target_host
        stack = Stack(cluster, registry.host, address, f"image-{uuid.uuid4().hex[:8]}", state,
                      tuning=dict(FAST_TUNING))
        deployed = None
        try:
            own = install_service_account(stack.api, cluster.kubeconfig,
                                          state / "lockwright.kubeconfig")
            stack.lockwright_kubeconfig = own
            deployed = Deployed(docker, lockwright_image, stack,
                                readable(Path(own), state / "mounted"))
            yield deployed
            assert stack.denials() == [], f"lockwright was refused by RBAC: {stack.denials()}"
        finally:
            if deployed is not None:
                deployed.remove()
            stack.stop()
            cluster.stop()


def test_crds_install_from_the_image(deployed: Deployed) -> None:
    done = deployed.crds_install()
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.match(r"created \d+, updated \d+, unchanged \d+", done.stdout), done.stdout
    crd = deployed.stack.kubectl("get", "crd", "providers.pkg.crossplane.io", "-o", "json")
    assert json.loads(crd.stdout)["spec"]["group"] == "pkg.crossplane.io"
    again = deployed.crds_install()
    assert again.returncode == 0 and again.stdout.startswith("created 0,"), again.stdout


def test_worker_and_watcher_containers_bring_a_provider_to_healthy(
        deployed: Deployed) -> None:
    assert deployed.crds_install().returncode == 0
    worker = deployed.start("worker", "worker polling",
                            "--tmpfs", f"{CACHE_DIR}:uid=10001,gid=10001,mode=0700")
    watcher = deployed.start("watcher", "watcher synced")
    stack = deployed.stack
    allow_secrets(stack)
    ref = stack.push(PROVIDER_ROOT)
    name = unique("provider")
    stack.apply_package("Provider", name, ref)
    try:
        conds = stack.wait_healthy("Provider", name, timeout=120)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nworker: {deployed.logs(worker)}\n"
                             f"watcher: {deployed.logs(watcher)}") from exc
    assert conds["Installed"]["status"] == "True"
    revisions = stack.revisions("Provider", name)
    assert [r["spec"]["desiredState"] for r in revisions] == ["Active"]
    # The worker's package cache is the tmpfs; nothing else was writable.
    cached = deployed.docker.run("exec", worker, "ls", CACHE_DIR).stdout.split()
    assert any(re.fullmatch(r"[0-9a-f]{64}", entry) for entry in cached), cached

