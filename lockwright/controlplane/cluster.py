"""Start and stop the control plane: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok with its Nodes, each gated on a readiness check with a deadline.

Each component logs to ``<state>/logs/<name>.log``; a component that exits or misses its
deadline fails the start with the tail of its log. Children get SIGKILL when the process
that started them dies (``PR_SET_PDEATHSIG``), so an interrupted test run leaves none.
"""

from __future__ import annotations

import base64
import ctypes
import json
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lockwright.controlplane import build, kwok, pki
from lockwright.controlplane.ports import free_port, free_ports

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
STOP_GRACE_S = 15.0
POLL_S = 0.1


class StartError(Exception):
    """A component did not start; the message names it and carries its log's tail."""


@dataclass(frozen=True)
class Options:
    """What to start.

    Args:
        nodes: fake Nodes kwok runs pods on.
        unavailable_images: fnmatch patterns of images whose pods never become Ready (a
            runtime that never starts); see :mod:`controlplane.kwok`.
        audited_users: users whose requests kube-apiserver's audit log records (Metadata).
        timeout: seconds each component gets to become ready.
        garbage_collector: False starts kube-controller-manager with
            ``--enable-garbage-collector=false`` (owner references are never acted on).
    """

    nodes: int = 1
    unavailable_images: tuple[str, ...] = ()
    audited_users: tuple[str, ...] = ()
    timeout: float = 90.0
    garbage_collector: bool = True


@dataclass
class ControlPlane:
    """A running control plane and the files a client needs."""

    state: Path
    bin_dir: Path
    options: Options
    url: str = ""
    etcd_url: str = ""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # How each component was started and how its readiness is seen, for restart().
    argvs: dict[str, list[str]] = field(default_factory=dict)
    checks: dict[str, tuple[Callable[[], bool], str]] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> str:
        return str(self.state / "kubeconfig")

    @property
    def audit_log(self) -> Path:
        return self.state / "logs" / "audit.log"

    @property
    def pki(self) -> pki.Pki:
        return pki.Pki(self.state / "pki")

    def log(self, name: str) -> Path:
        return self.state / "logs" / f"{name}.log"

    def tail(self, name: str, lines: int = 40) -> str:
        try:
            return "\n".join(self.log(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -- talking to the apiserver as its admin -------------------------------------------

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.pki.file("ca.crt"))
        ctx.load_cert_chain(self.pki.file("admin.crt"), self.pki.file("admin.key"))
        return ctx

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One request as the admin; the decoded JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10, context=self.ssl_context()) as resp:
            raw = resp.read()
        return json.loads(raw) if raw[:1] in (b"{", b"[") else raw.decode()

    def resident_memory(self) -> dict[str, int]:
        """Each component's resident set (VmRSS) in bytes."""
        out = {}
        for name, proc in self.processes.items():
            status = Path(f"/proc/{proc.pid}/status")
            for line in status.read_text().splitlines() if status.exists() else []:
                if line.startswith("VmRSS:"):
                    out[name] = int(line.split()[1]) * 1024
        return out

    # -- lifecycle -----------------------------------------------------------------------

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.log(name), "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=self.state,
                                    preexec_fn=die_with_parent)
        self.processes[name] = proc
        self.argvs[name] = argv
        return proc

    def kill(self, name: str) -> None:
        """SIGKILL one component (a fault test's crash) and reap it; its data stays."""
        proc = self.processes[name]
        proc.kill()
        proc.wait()

    def restart(self, name: str) -> None:
        """Start a killed component again, with the same arguments, ports and data, and
        wait until it is ready as at start (the components without a check of their own
        are ready once started)."""
        if self.processes[name].poll() is None:
            raise StartError(f"{name} is still running; kill it before restarting it")
        self.spawn(name, self.argvs[name])
        if name in self.checks:
            check, what = self.checks[name]
            self.ready(name, check, what)

    def ready(self, name: str, check: Callable[[], bool], what: str) -> None:
        """Poll ``check`` until true; fail if ``name`` exits or the deadline passes."""
        self.checks.setdefault(name, (check, what))
        wait_ready(Component(name, lambda: self.processes[name], self.log(name),
                             self.options.timeout), check, what)

    def stop(self) -> None:
        """SIGTERM every component, newest first; SIGKILL any still running after a grace."""
        for name in reversed(list(self.processes)):
            proc = self.processes[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@dataclass(frozen=True)
class Component:
    """One process of a local server, as :func:`wait_ready` watches it.

    Args:
        name: the component's name, in messages.
        process: its current process (a restart replaces it).
        log: the file its output goes to; a failure carries its tail.
        timeout: seconds it gets to become ready.
        respawn: called instead of failing when the process has exited (a server that
            refuses to start while a killed predecessor's resources linger); None fails.
    """

    name: str
    process: Callable[[], subprocess.Popen[bytes]]
    log: Path
    timeout: float
    respawn: Callable[[], object] | None = None

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def wait_ready(component: Component, check: Callable[[], bool], what: str) -> None:
    """Poll ``check`` until true; fail if the component exits (unless it respawns) or its
    deadline passes, with the tail of its log."""
    c = component
    deadline, last = time.monotonic() + c.timeout, ""
    while True:
        proc = c.process()
        if proc.poll() is not None and c.respawn is None:
            raise StartError(f"{c.name} exited with {proc.returncode} before {what}; "
                             f"log {c.log}:\n{c.tail()}")
        if proc.poll() is not None and c.respawn is not None:
            c.respawn()
        try:
            if check():
                return
        except Exception as exc:  # noqa: BLE001 - "not yet", reported on timeout
            last = f"{type(exc).__name__}: {str(exc)[:300]}"
        if time.monotonic() > deadline:
            raise StartError(f"timed out after {c.timeout:.0f}s waiting for "
                             f"{what}{'; last error: ' + last if last else ''}; log "
                             f"{c.log}:\n{c.tail()}")
        time.sleep(POLL_S)  # poll interval of a readiness check with a deadline


def die_with_parent() -> None:
    """In the child before exec: SIGKILL when the parent dies (PR_SET_PDEATHSIG)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def start(state: Path, options: Options = Options(), bin_dir: Path | None = None,
          before_controllers: Callable[[ControlPlane], None] | None = None) -> ControlPlane:
    """Start a control plane with its state in ``state``; stopped again if any step fails.

    Args:
        before_controllers: called once kube-apiserver answers, before the controllers
            start: what it creates (CRDs) the controllers find at their first sync. The
            garbage collector learns of a CRD created later only at its next discovery
            resync, up to 30 s on (not configurable).
    """
    (state / "logs").mkdir(parents=True, exist_ok=True)
    cp = ControlPlane(state, bin_dir or build.binaries(), options)
    pki.issue(state / "pki")
    try:
        _etcd(cp)
        _apiserver(cp)
        if before_controllers is not None:
            before_controllers(cp)
        for step in (_controllers, _kwok, _nodes):
            step(cp)
    except BaseException:
        cp.stop()
        raise
    return cp


def _etcd(cp: ControlPlane) -> None:
    client, peer = free_ports(2)
    cp.spawn("etcd", [
        str(cp.bin_dir / "etcd"), "--name", "lockwright", "--data-dir", str(cp.state / "etcd"),
        "--listen-client-urls", f"http://127.0.0.1:{client}",
        "--advertise-client-urls", f"http://127.0.0.1:{client}",
        "--listen-peer-urls", f"http://127.0.0.1:{peer}",
        "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
        "--initial-cluster", f"lockwright=http://127.0.0.1:{peer}",
        "--unsafe-no-fsync", "--quota-backend-bytes", str(8 << 30), "--log-level", "warn"])
    cp.etcd_url = f"http://127.0.0.1:{client}"

    def healthy() -> bool:
        with urllib.request.urlopen(f"{cp.etcd_url}/health", timeout=2) as resp:
            return bool(json.loads(resp.read()).get("health") == "true")

    cp.ready("etcd", healthy, "etcd to answer /health")


AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                "omitStages": ["RequestReceived"]}


def _audit_policy(cp: ControlPlane) -> str:
    rules: list[dict[str, Any]] = [{"level": "Metadata", "users": list(u)}
                                   for u in [cp.options.audited_users] if u]
    path = cp.state / "audit-policy.yaml"
    path.write_text(yaml.safe_dump({**AUDIT_POLICY, "rules": [*rules, {"level": "None"}]}))
    return str(path)


def _apiserver(cp: ControlPlane) -> None:
    port, p = free_port(), cp.pki
    cp.spawn("kube-apiserver", [
        str(cp.bin_dir / "kube-apiserver"), "--etcd-servers", cp.etcd_url,
        "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
        "--secure-port", str(port), "--cert-dir", str(cp.state / "pki"),
        "--tls-cert-file", p.file("apiserver.crt"), "--tls-private-key-file",
        p.file("apiserver.key"), "--client-ca-file", p.file("ca.crt"),
        "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
        "--service-account-key-file", p.file("sa.pub"),
        "--service-account-signing-key-file", p.file("sa.key"),
        "--service-cluster-ip-range", SERVICE_CIDR, "--authorization-mode", "Node,RBAC",
        "--allow-privileged=true", "--profiling=false",
        "--audit-policy-file", _audit_policy(cp), "--audit-log-path", str(cp.audit_log),
        "--audit-log-format", "json", "--audit-log-maxsize", "0"])
    cp.url = f"https://127.0.0.1:{port}"
    _write_kubeconfig(cp)
    cp.ready("kube-apiserver", lambda: cp.request("GET", "/readyz") == "ok",
             "kube-apiserver to answer /readyz")


def _write_kubeconfig(cp: ControlPlane) -> None:
    def data(name: str) -> str:
        return base64.b64encode(Path(cp.pki.file(name)).read_bytes()).decode()

    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "lockwright",
        "clusters": [{"name": "lockwright", "cluster": {
            "server": cp.url, "certificate-authority-data": data("ca.crt")}}],
        "users": [{"name": "admin", "user": {"client-certificate-data": data("admin.crt"),
                                             "client-key-data": data("admin.key")}}],
        "contexts": [{"name": "lockwright", "context": {"cluster": "lockwright",
                                                        "user": "admin"}}]}
    path = Path(cp.kubeconfig)
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)


def _controllers(cp: ControlPlane) -> None:
    p = cp.pki
    cp.spawn("kube-controller-manager", [
        str(cp.bin_dir / "kube-controller-manager"), "--kubeconfig", cp.kubeconfig,
        "--leader-elect=false", "--controllers=*", "--secure-port=0",
        "--use-service-account-credentials=true",
        "--service-account-private-key-file", p.file("sa.key"),
        "--root-ca-file", p.file("ca.crt"), "--cluster-signing-cert-file", p.file("ca.crt"),
        "--cluster-signing-key-file", p.file("ca.key"), "--allocate-node-cidrs=false",
        f"--enable-garbage-collector={str(cp.options.garbage_collector).lower()}"])
    cp.spawn("kube-scheduler", [
        str(cp.bin_dir / "kube-scheduler"), "--kubeconfig", cp.kubeconfig,
        "--leader-elect=false", "--secure-port=0"])
    # The token controller makes every namespace's `default` ServiceAccount; pods wait on it.
    cp.ready("kube-controller-manager",
             lambda: bool(cp.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")),
             "the controllers to make default/default's ServiceAccount")


def _kwok(cp: ControlPlane) -> None:
    config = cp.state / "kwok.yaml"
    config.write_text(kwok.stages(build.stages_dir(cp.bin_dir), cp.options.unavailable_images))
    cp.spawn("kwok", [
        str(cp.bin_dir / "kwok"), "--kubeconfig", cp.kubeconfig, "--config", str(config),
        "--manage-all-nodes=true", "--node-lease-duration-seconds=40",
        "--cidr", POD_CIDR, "--node-ip", "127.0.0.1",
        "--server-address", f"127.0.0.1:{free_port()}"])


def _nodes(cp: ControlPlane) -> None:
    names = [f"kwok-node-{i}" for i in range(cp.options.nodes)]
    for name in names:
        cp.request("POST", "/api/v1/nodes", kwok.node(name))

    def schedulable() -> bool:
        return all(kwok.schedulable(cp.request("GET", f"/api/v1/nodes/{n}")) for n in names)

    cp.ready("kwok", schedulable, f"Node {', '.join(names)} Ready without the not-ready taint")
