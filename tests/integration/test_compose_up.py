"""``docker compose up`` of the project's docker-compose.yml, to a Healthy Provider.

The file runs as written, but for what cannot run on a machine with no image hub and no
container networks (tests/fixtures/compose/override.yaml): images built here, every service
on the host's network bound to 127.0.0.1. The compose CLI is Compose v2 built from its Go
module (Debian's docker-compose 1.29 refuses the file: top-level ``name``). lockwright
drives a devcluster of this test's own as deploy/'s ServiceAccount, its kubeconfig mounted
as the file mounts ``KUBECONFIG_FILE``.

The file's host ports are fixed (PostgreSQL 5432, Temporal 7233 and its services' ports,
the registry 5000, the worker's metrics 9090): the test fails at once, naming the port,
when one is taken.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_smoke_install import allow_secrets
from tests.fixtures.compose import images
from tests.fixtures.deploy import install_service_account
from tests.fixtures.devcluster import start_devcluster
from tests.fixtures.docker import Docker, Image
from tests.fixtures.phases import phase
from tests.fixtures.stack import Stack
from tests.helpers import port_free, unique, wait_for

pytestmark = pytest.mark.docker

ROOT = images.ROOT
PROVIDER_ROOT = ROOT / "tests" / "data" / "packages" / "provider"
# The ports docker-compose.yml's services listen on (Temporal's four services: gRPC and
# membership; the frontend's HTTP API).
FIXED_PORTS = (5432, 7233, 7234, 7235, 7239, 7243, 6933, 6934, 6935, 6939, 5000, 9090)
REGISTRY_NAME = "registry.lockwright.internal:5000"


@dataclass
class Compose:
    """One compose project of docker-compose.yml with the override."""

    binary: Path
    project: str
    env: dict[str, str]

    def __call__(self, *args: str, timeout: float = 600, check: bool = True
                 ) -> subprocess.CompletedProcess[str]:
        argv = [str(self.binary), "-f", str(ROOT / "docker-compose.yml"), "-f",
                str(images.OVERRIDE), "-p", self.project, *args]
        done = subprocess.run(argv, cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)} failed "
                                 f"({done.returncode}):\n{done.stdout[-3000:]}"
                                 f"{done.stderr[-5000:]}")
        return done

    def logs(self, service: str) -> str:
        done = self("logs", "--no-color", service, check=False)
        return done.stdout + done.stderr

    def leftovers(self, docker: Docker) -> dict[str, list[str]]:
        """Containers, networks and volumes of this project still present."""
        label = f"label=com.docker.compose.project={self.project}"
        listings = {"containers": ("ps", "-a", "--format", "{{.Names}}"),
                    "networks": ("network", "ls", "--format", "{{.Name}}"),
                    "volumes": ("volume", "ls", "--format", "{{.Name}}")}
        found = {kind: docker.run(*cmd, "--filter", label).stdout.split()
                 for kind, cmd in listings.items()}
        return {kind: names for kind, names in found.items() if names}


@pytest.fixture(scope="module")
def compose_images(docker: Docker, base_image: str, lockwright_image: Image) -> dict[str, str]:
    """The images the override names, built on the base (once per machine)."""
    with phase("compose images"):
        return {"LW_IMAGE": lockwright_image.name,
                "LW_POSTGRES_IMAGE": images.postgres_image(docker, base_image),
                "LW_REGISTRY_IMAGE": images.registry_image(docker, base_image),
                "LW_TEMPORAL_IMAGE": images.temporal_image(docker, base_image)}


@pytest.fixture(scope="module")
def compose_cli() -> Path:
    with phase("compose CLI"):
        return images.compose_binary()


@pytest.fixture
def cluster() -> Iterator[tuple[Stack, Path]]:
    """A devcluster enforcing RBAC, and lockwright's kubeconfig readable by uid 10001."""
    with tempfile.TemporaryDirectory(prefix="lockwright-compose-") as tmp:
        state = Path(tmp)
        (state / "home").mkdir()
        dc = start_devcluster(str(state), "--authorization-mode", "RBAC")
        stack = Stack(dc, "127.0.0.1:5000", "127.0.0.1:7233", "lockwright", state)
        try:
            own = Path(install_service_account(stack.api, dc.kubeconfig,
                                               state / "lockwright.kubeconfig"))
            own.chmod(0o644)
            stack.lockwright_kubeconfig = str(own)
            yield stack, own
            assert stack.denials() == [], f"lockwright was refused by RBAC: {stack.denials()}"
        finally:
            stack.stop()
            dc.stop()


def test_compose_up_brings_a_provider_to_healthy_and_down_leaves_nothing(
        docker: Docker, compose_images: dict[str, str], compose_cli: Path,
        cluster: tuple[Stack, Path], record_property: Any) -> None:
    taken = [port for port in FIXED_PORTS if not port_free(port)]
    assert not taken, f"docker-compose.yml's ports {taken} are in use on 127.0.0.1"
    stack, kubeconfig = cluster
    env = {**os.environ, **compose_images, "DOCKER_HOST": docker.host,
           "KUBECONFIG_FILE": str(kubeconfig)}
    compose = Compose(compose_cli, f"lockwright-test-{uuid.uuid4().hex[:8]}", env)
    started = time.monotonic()
    try:
        compose("up", "-d")
        up_seconds = time.monotonic() - started
        for service, line in (("worker", "worker polling"), ("watcher", "watcher synced")):
            wait_for(lambda s=service, ln=line: ln in compose.logs(s), timeout=120,
                     interval=0.5, what=f"compose {service}: {line}")
        allow_secrets(stack)
        pushed = stack.push(PROVIDER_ROOT)
        name = unique("provider")
        stack.apply_package("Provider", name, pushed.replace("127.0.0.1:5000", REGISTRY_NAME))
        try:
            stack.wait_healthy("Provider", name, timeout=180)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nworker: {compose.logs('worker')[-3000:]}") from exc
        healthy_seconds = time.monotonic() - started
        record_property("compose_up_seconds", round(up_seconds, 1))
        record_property("compose_to_healthy_seconds", round(healthy_seconds, 1))
        print(f"\ncompose up {up_seconds:.0f} s, Provider Healthy {healthy_seconds:.0f} s "
              "after `up`", file=sys.stderr)
        ps = compose("ps", "--all", "--format", "{{.Service}} {{.State}} {{.ExitCode}}").stdout
        states = dict(line.split(" ", 1) for line in ps.splitlines() if line.strip())
        assert states["temporal-schema"] == "exited 0" and states["temporal-init"] == "exited 0"
        assert "temporal-ui" not in states
    finally:
        compose("down", "--volumes", "--timeout", "40", check=False)
    assert compose.leftovers(docker) == {}
