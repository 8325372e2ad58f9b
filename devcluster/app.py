"""Wire the store, controllers and HTTP server into one running devcluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from devcluster.cluster import Cluster
from devcluster.controllers import DeploymentSimulator, GarbageCollector
from devcluster.server import DevServer, Settings, serve_in_thread


@dataclass
class App:
    """A running devcluster."""

    cluster: Cluster
    server: DevServer
    gc: GarbageCollector
    deployments: DeploymentSimulator

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.gc.stop()
        self.deployments.stop()
        self.cluster.store.close()


def start(host: str, port: int, data_dir: str, *, history: int = 10_000,
          bookmark_interval: float = 1.0, deployment_delay: float = 0.05,
          unavailable_images: Sequence[str] = ()) -> App:
    """Start devcluster on ``host:port`` (0 picks a free port) with state in ``data_dir``.

    Deployments with a pod-template image matching one of ``unavailable_images`` (fnmatch
    patterns) are kept unavailable.
    """
    Settings.bookmark_interval = bookmark_interval
    cluster = Cluster(data_dir, history)
    gc = GarbageCollector(cluster)
    deployments = DeploymentSimulator(cluster, deployment_delay, unavailable_images)
    server = DevServer((host, port), cluster)
    gc.start()
    deployments.start()
    serve_in_thread(server)
    return App(cluster, server, gc, deployments)
