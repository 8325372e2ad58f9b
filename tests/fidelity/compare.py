"""Run every request shape against two servers and list where their answers differ.

    python -m tests.fidelity.compare      # starts devcluster and the real control plane

Each shape runs in a namespace of its own (the same name on both servers); answers are
compared after :func:`tests.fidelity.shapes.normalize`: status code, media type and body.
"""

from __future__ import annotations

import ssl
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fidelity.client import Answer, Client
from tests.fidelity.shapes import SHAPES, Identities, namespace, normalize


@dataclass
class Difference:
    """One shape whose answers differ: the step and the first differing paths."""

    shape: str
    step: str
    paths: list[str] = field(default_factory=list)


@dataclass
class Report:
    compared: list[str]
    differences: list[Difference]

    @property
    def identical(self) -> list[str]:
        differing = {d.shape for d in self.differences}
        return [s for s in self.compared if s not in differing]

    def text(self) -> str:
        lines = [f"{len(self.compared)} request shapes compared, {len(self.identical)} "
                 f"identical, {len(self.compared) - len(self.identical)} different"]
        for d in self.differences:
            lines.append(f"  {d.shape} / {d.step}: " + "; ".join(d.paths[:4]))
        return "\n".join(lines)


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two normalised values differ (``a`` first, then ``b``, shortened)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b), key=str)
                for p in diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in diff(x, y, f"{path}[{i}]")]
    if a == b:
        return []
    return [f"{path or '.'}: {_short(a)} vs {_short(b)}"]


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) < 90 else text[:87] + "..."


def _shape_of(answer: Answer) -> dict[str, Any]:
    return {"code": answer.code, "media": answer.media, "body": normalize(answer.body)}


def run_shape(name: str, ids: Identities) -> list[tuple[str, dict[str, Any]]]:
    ns = f"fid-{name.replace('_', '-')}"
    namespace(ids.admin, ns)
    return [(step, _shape_of(answer)) for step, answer in SHAPES[name](ids, ns)]


def compare(left: Identities, right: Identities) -> Report:
    """Every shape on both servers (the two at once), and what differs."""
    differences: list[Difference] = []
    with ThreadPoolExecutor(2) as pool:
        for name in SHAPES:
            a, b = pool.map(lambda ids: run_shape(name, ids), (left, right))
            for (step, x), (_, y) in zip(a, b):
                paths = diff(x, y)
                if paths:
                    differences.append(Difference(name, step, paths))
    return Report(list(SHAPES), differences)


# --- the two servers ------------------------------------------------------------------------
def identities(api: Any, admin: Client, compact: Callable[[], None]) -> Identities:
    """The admin, a ServiceAccount ``default/nobody`` bound to nothing (its token over a
    connection without the admin's client certificate), and the compaction."""
    from kubernetes import client

    from tests.fixtures.deploy import token_for

    core = client.CoreV1Api(api)
    core.create_namespaced_service_account(
        "default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="nobody")))
    token = token_for(api, "default", "nobody")
    context = None
    if admin.context is not None:
        context = ssl.create_default_context(cafile=api.configuration.ssl_ca_cert)
    return Identities(admin, Client(admin.url, context, token), compact)


def etcd_compaction(etcd_url: str) -> Callable[[], None]:
    """Compact etcd at its current revision (its JSON gateway), as it does every 5 minutes."""
    def compact() -> None:
        head = Client(etcd_url, None).send("POST", "/v3/kv/range", {"key": "AA=="}).body
        revision = head["header"]["revision"]
        Client(etcd_url, None).send("POST", "/v3/kv/compaction",
                                    {"revision": revision, "physical": True})
    return compact


def devcluster_compaction(admin: Client) -> Callable[[], None]:
    """devcluster's compaction: ``POST /debug/compact``."""
    def compact() -> None:
        admin.send("POST", "/debug/compact")
    return compact


def _api(kubeconfig: str) -> Any:
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig, client_configuration=configuration)
    return client.ApiClient(configuration)


@contextmanager
def both_servers() -> Iterator[tuple[Identities, Identities]]:
    """A devcluster enforcing RBAC and the real control plane, each fresh."""
    import yaml

    from tests.fixtures.devcluster import start_devcluster
    from tests.fixtures.kube import start_kube

    with tempfile.TemporaryDirectory(prefix="lockwright-fidelity-") as tmp:
        dc = start_devcluster(tmp, "--authorization-mode", "RBAC")
        kube = start_kube(Path(tmp))
        try:
            token = yaml.safe_load(Path(dc.kubeconfig).read_text())["users"][0]["user"].get(
                "token")
            dc_admin = Client(dc.url, dc.ssl_context(), token)
            kube_admin = Client(kube.url, kube.plane.ssl_context())
            with _api(dc.kubeconfig) as dc_api, _api(kube.kubeconfig) as kube_api:
                yield (identities(dc_api, dc_admin, devcluster_compaction(dc_admin)),
                       identities(kube_api, kube_admin, etcd_compaction(kube.plane.etcd_url)))
        finally:
            kube.stop()
            dc.stop()


def main() -> int:
    with both_servers() as (dc, kube):
        report = compare(dc, kube)
    print(report.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
