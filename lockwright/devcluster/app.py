"""Wire the store, controllers and HTTP server into one running devcluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lockwright.devcluster import tls
from lockwright.devcluster.cluster import Cluster
from lockwright.devcluster.controllers import DeploymentSimulator, GarbageCollector
from lockwright.devcluster.guard import Guard
from lockwright.devcluster.server import DevServer, Settings, serve_in_thread
from lockwright.devcluster.shapes import Recorder
from lockwright.devcluster.watch import BOOKMARK_INTERVAL_S

AUTHORIZATION_MODES = ("AlwaysAllow", "RBAC")


@dataclass
class App:
    """A running devcluster."""

    cluster: Cluster
    server: DevServer
    gc: GarbageCollector
    deployments: DeploymentSimulator
    guard: Guard | None = None
    ca_pem: bytes | None = None

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def admin_token(self) -> str | None:
        """The administrator's bearer token (RBAC mode), for the kubeconfig; else None."""
        return self.guard.tokens.admin_token() if self.guard is not None else None

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.gc.stop()
        self.deployments.stop()
        self.cluster.store.close()


def start(host: str, port: int, data_dir: str, *, history: int = 10_000,
          bookmark_interval: float = BOOKMARK_INTERVAL_S, deployment_delay: float = 0.05,
          unavailable_images: Sequence[str] = (), authorization: str = "AlwaysAllow",
          owner_gc: bool = True, record_shapes: str | None = None) -> App:
    """Start devcluster on ``host:port`` (0 picks a free port) with state in ``data_dir``.

    Deployments with a pod-template image matching one of ``unavailable_images`` (fnmatch
    patterns) are kept unavailable. ``authorization`` ``RBAC`` authenticates bearer tokens
    and authorizes every request by the stored RBAC objects (:mod:`devcluster.guard`);
    ``AlwaysAllow`` serves everyone. RBAC mode serves HTTPS (clients send tokens only over
    TLS) with a CA of its own, ``App.ca_pem``. ``owner_gc`` False turns ownerReference
    garbage collection off (kube-controller-manager's ``--enable-garbage-collector=false``).
    ``record_shapes`` names a file to append the shape of each request served to
    (:mod:`devcluster.shapes`).
    """
    if authorization not in AUTHORIZATION_MODES:
        raise ValueError(f"authorization mode {authorization!r}: use one of "
                         f"{', '.join(AUTHORIZATION_MODES)}")
    Settings.bookmark_interval = bookmark_interval
    cluster = Cluster(data_dir, history)
    guard = Guard(cluster, data_dir) if authorization == "RBAC" else None
    serving = tls.serving(data_dir, host) if guard is not None else None
    gc = GarbageCollector(cluster, owner_references=owner_gc)
    deployments = DeploymentSimulator(cluster, deployment_delay, unavailable_images)
    server = DevServer((host, port), cluster, guard, serving.context() if serving else None,
                       Recorder(record_shapes) if record_shapes else None)
    gc.start()
    deployments.start()
    serve_in_thread(server)
    return App(cluster, server, gc, deployments, guard, serving.ca_pem() if serving else None)
