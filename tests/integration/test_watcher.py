"""The watcher against devcluster and the Temporal dev server.

A stub registered under the ``PackageWorkflow`` name on this test's task queue records the
``look_again`` signals, so these tests see exactly what the watcher sends. Each module
uses its own devcluster: a watcher signals every package in its cluster, and the session
cluster belongs to other tests. The 410 tests put a TCP proxy between the watcher and a
devcluster keeping only 5 events, cut it, write more than 5 changes, and restore it.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from lockwright import contracts as c
from lockwright.k8s.bootstrap import bootstrap_at
from lockwright.settings import Settings
from tests.fixtures.devcluster import DevCluster, start_devcluster
from tests.helpers import api_client, unique, wait_for_async
from lockwright.worker.targets import Obj
from lockwright.worker.watcher import Message, Synced, Watcher

pytestmark = pytest.mark.temporal


@workflow.defn(name="PackageWorkflow")
class RecordingPackageWorkflow:
    """Stands in for PackageWorkflow: records signals, never ends."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    @workflow.run
    async def run(self, inp: c.PackageInput) -> None:
        await workflow.wait_condition(lambda: False)

    @workflow.signal(name=c.SIGNAL_LOOK_AGAIN)
    def look_again(self, inp: c.LookAgainInput) -> None:
        self.reasons.append(inp.reason)

    @workflow.query(name="reasons")
    def get_reasons(self) -> list[str]:
        return self.reasons


# --- fixtures ---------------------------------------------------------------------------
def _cluster(root: Path, *extra: str) -> DevCluster:
    dc = start_devcluster(str(root), "--bookmark-interval", "0.2", *extra)
    bootstrap_at(dc.kubeconfig, "crossplane-system")
    return dc


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    dc = _cluster(tmp_path_factory.mktemp("watcher-dc"))
    yield dc
    dc.stop()


@pytest.fixture
async def stub_queue(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    async with Worker(temporal_client, task_queue=task_queue,
                      workflows=[RecordingPackageWorkflow],
                      workflow_runner=UnsandboxedWorkflowRunner()):
        yield task_queue


@dataclass
class Running:
    watcher: Watcher
    stop: asyncio.Event
    task: asyncio.Task[None]

    async def halt(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 30)


class RecordingWatcher(Watcher):
    """A Watcher that keeps every Secret object its streams hand over, to check for data."""

    def __init__(self, settings: Settings, client: Client) -> None:
        super().__init__(settings, client)
        self.secrets: list[Obj] = []

    def _handle(self, msg: Message) -> None:
        if msg.res.kind == "Secret":
            self.secrets += msg.items if isinstance(msg, Synced) else [msg.obj]
        super()._handle(msg)


async def start_watcher(client: Client, kubeconfig: str, queue: str,
                        resync: float = 0, cls: type[Watcher] = Watcher) -> Running:
    settings = Settings(kubeconfig=kubeconfig, task_queue=queue, resync_seconds=resync)
    watcher, stop = cls(settings, client), asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    await asyncio.wait_for(watcher.synced.wait(), 30)
    return Running(watcher, stop, task)


def custom_api(kubeconfig: str) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(api_client(kubeconfig))


def apply_provider(api: Any, name: str, tag: str = "v1") -> None:
    body = {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider", "metadata": {"name": name},
            "spec": {"package": f"xpkg.example.org/tests/{name}:{tag}"}}
    try:
        api.create_cluster_custom_object("pkg.crossplane.io", "v1", "providers", body)
    except Exception as exc:
        if getattr(exc, "status", 0) != 409:
            raise
        api.patch_cluster_custom_object("pkg.crossplane.io", "v1", "providers", name,
                                        {"spec": {"package": body["spec"]["package"]}})


async def reasons(client: Client, queue: str, name: str, kind: str = c.PROVIDER) -> list[str]:
    """The reasons of every look_again the package's stub workflow on ``queue`` got."""
    handle = client.get_workflow_handle(c.package_workflow_id(kind, name, queue))
    return list(await handle.query("reasons", result_type=list[str]))


async def wait_signals(client: Client, queue: str, name: str, at_least: int = 1,
                       timeout: float = 30, kind: str = c.PROVIDER) -> list[str]:
    async def enough() -> list[str] | None:
        got = await reasons(client, queue, name, kind)
        return got if len(got) >= at_least else None

    return await wait_for_async(enough, timeout=timeout,
                                what=f"{at_least} look_again signal(s) for {kind} {name}")


def core_api(kubeconfig: str) -> Any:
    from kubernetes import client

    return client.CoreV1Api(api_client(kubeconfig))


SECRET_VALUE = "hunter2-must-never-leave-the-api-server"


def create_secret(api: Any, name: str) -> None:
    """A Secret whose value also sits in last-applied-configuration, as ``kubectl apply``
    leaves it: the watcher must hold neither."""
    encoded = base64.b64encode(SECRET_VALUE.encode()).decode()
    api.create_namespaced_secret("crossplane-system", {
        "apiVersion": "v1", "kind": "Secret", "data": {".dockerconfigjson": encoded},
        "type": "kubernetes.io/dockerconfigjson", "metadata": {
            "name": name, "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": f'{{"data":"{encoded}"}}'}}})


def assert_no_secret_data(watcher: Watcher, *texts: str) -> None:
    """Nothing the watcher received or remembers, nor any signal text, holds Secret data."""
    assert isinstance(watcher, RecordingWatcher)
    received = watcher.secrets
    assert received, "the watcher received no Secret at all"
    assert all(set(o) == {"metadata"} for o in received), received
    encoded = base64.b64encode(SECRET_VALUE.encode()).decode()
    for text in (repr(received), repr(watcher.index.objects), *texts):
        assert SECRET_VALUE not in text and encoded not in text


# --- tests ------------------------------------------------------------------------------
async def test_applied_provider_starts_its_workflow_with_look_again(
        temporal_client: Client, stub_queue: str, cluster: DevCluster) -> None:
    run = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue)
    try:
        name = unique("p")
        apply_provider(custom_api(cluster.kubeconfig), name)
        got = await wait_signals(temporal_client, stub_queue, name)
        assert got[0] == f"Provider {name} added"
        desc = await temporal_client.get_workflow_handle(
            c.package_workflow_id(c.PROVIDER, name, stub_queue)).describe()
        assert desc.workflow_type == "PackageWorkflow" and desc.task_queue == stub_queue
        attrs = desc.typed_search_attributes
        assert attrs.get(c.SA_PACKAGE_KIND) == "provider"
        assert attrs.get(c.SA_PACKAGE_NAME) == name
        assert attrs.get(c.SA_PACKAGE_SOURCE) == f"xpkg.example.org/tests/{name}:v1"
    finally:
        await run.halt()


async def test_status_writes_are_not_echoed_but_spec_changes_and_deletes_are(
        temporal_client: Client, stub_queue: str, cluster: DevCluster) -> None:
    run = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue)
    api = custom_api(cluster.kubeconfig)
    try:
        name = unique("p")
        apply_provider(api, name)
        await wait_signals(temporal_client, stub_queue, name, 1)
        api.patch_cluster_custom_object_status(
            "pkg.crossplane.io", "v1", "providers", name,
            {"status": {"conditions": [{"type": "Installed", "status": "False",
                                        "reason": "UnpackingPackage",
                                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
        apply_provider(api, name, tag="v2")
        got = await wait_signals(temporal_client, stub_queue, name, 2)
        assert got[1] == f"Provider {name} modified"
        api.delete_cluster_custom_object("pkg.crossplane.io", "v1", "providers", name)
        got = await wait_signals(temporal_client, stub_queue, name, 3)
        assert got == [f"Provider {name} added", f"Provider {name} modified",
                       f"Provider {name} deleted"]
    finally:
        await run.halt()


async def test_two_watchers_make_one_workflow(
        temporal_client: Client, stub_queue: str, cluster: DevCluster) -> None:
    first = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue)
    second = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue)
    try:
        name = unique("p")
        apply_provider(custom_api(cluster.kubeconfig), name)
        await wait_signals(temporal_client, stub_queue, name, 2)
        wid = c.package_workflow_id(c.PROVIDER, name, stub_queue)
        runs = [w async for w in temporal_client.list_workflows(f"WorkflowId = '{wid}'")]
        assert len(runs) == 1
    finally:
        await first.halt()
        await second.halt()


async def test_restarted_watcher_catches_up(
        temporal_client: Client, stub_queue: str, cluster: DevCluster) -> None:
    api = custom_api(cluster.kubeconfig)
    before, during = unique("p"), unique("p")
    run = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue)
    apply_provider(api, before)
    await wait_signals(temporal_client, stub_queue, before, 1)
    await run.halt()
    apply_provider(api, during)
    apply_provider(api, before, tag="v2")
    run = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue)
    try:
        assert (await wait_signals(temporal_client, stub_queue, during))[0] == f"Provider {during} start"
        assert (await wait_signals(temporal_client, stub_queue, before, 2))[1] == f"Provider {before} start"
    finally:
        await run.halt()


async def test_periodic_resync_signals_every_package(
        temporal_client: Client, stub_queue: str, cluster: DevCluster) -> None:
    name = unique("p")
    apply_provider(custom_api(cluster.kubeconfig), name)
    run = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue, resync=1.0)
    try:
        got = await wait_signals(temporal_client, stub_queue, name, 2, timeout=20)
        assert got[:2] == [f"Provider {name} start", f"Provider {name} resync"]
    finally:
        await run.halt()


async def test_revision_and_runtime_config_route_to_packages(
        temporal_client: Client, stub_queue: str, cluster: DevCluster) -> None:
    api = custom_api(cluster.kubeconfig)
    run = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue)
    try:
        name, drc = unique("p"), unique("drc")
        body = {"apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
                "metadata": {"name": name},
                "spec": {"package": f"xpkg.example.org/tests/{name}:v1",
                         "runtimeConfigRef": {"name": drc}}}
        api.create_cluster_custom_object("pkg.crossplane.io", "v1", "providers", body)
        await wait_signals(temporal_client, stub_queue, name, 1)
        api.create_cluster_custom_object("pkg.crossplane.io", "v1beta1",
                                         "deploymentruntimeconfigs", {
            "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "DeploymentRuntimeConfig",
            "metadata": {"name": drc}, "spec": {}})
        got = await wait_signals(temporal_client, stub_queue, name, 2)
        assert got[1] == f"DeploymentRuntimeConfig {drc} added"
        rev = f"{name}-0123456789ab"
        api.create_cluster_custom_object("pkg.crossplane.io", "v1", "providerrevisions", {
            "apiVersion": "pkg.crossplane.io/v1", "kind": "ProviderRevision",
            "metadata": {"name": rev, "labels": {"pkg.crossplane.io/package": name}},
            "spec": {"image": f"xpkg.example.org/tests/{name}:v1", "desiredState": "Inactive",
                     "revision": 1}})
        got = await wait_signals(temporal_client, stub_queue, name, 3)
        assert got[2] == f"ProviderRevision {rev} added"
    finally:
        await run.halt()


async def test_pull_secret_created_after_its_configuration_signals_it(
        temporal_client: Client, stub_queue: str, cluster: DevCluster) -> None:
    run = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue,
                              cls=RecordingWatcher)
    try:
        name, pull, tls = unique("cfg"), unique("pull"), unique("tls")
        custom_api(cluster.kubeconfig).create_cluster_custom_object(
            "pkg.crossplane.io", "v1", "configurations", {
                "apiVersion": "pkg.crossplane.io/v1", "kind": "Configuration",
                "metadata": {"name": name},
                "spec": {"package": f"xpkg.example.org/tests/{name}:v1",
                         "packagePullSecrets": [{"name": pull}]}})
        await wait_signals(temporal_client, stub_queue, name, 1, kind=c.CONFIGURATION)
        core = core_api(cluster.kubeconfig)
        create_secret(core, tls)  # unreferenced, like lockwright's TLS Secrets: no signal
        create_secret(core, pull)
        got = await wait_signals(temporal_client, stub_queue, name, 2, kind=c.CONFIGURATION)
        assert got == [f"Configuration {name} added", f"Secret crossplane-system/{pull} added"]
        assert tls in run.watcher.index.of("Secret")  # seen before pull, and routed nowhere
        core.patch_namespaced_secret(pull, "crossplane-system", {"data": {"x": "eQ=="}})
        got = await wait_signals(temporal_client, stub_queue, name, 3, kind=c.CONFIGURATION)
        assert got[2] == f"Secret crossplane-system/{pull} modified"
        assert_no_secret_data(run.watcher, *got)
    finally:
        await run.halt()


async def test_image_config_pull_secret_routes_to_the_packages_it_matches(
        temporal_client: Client, stub_queue: str, cluster: DevCluster) -> None:
    api = custom_api(cluster.kubeconfig)
    run = await start_watcher(temporal_client, cluster.kubeconfig, stub_queue,
                              cls=RecordingWatcher)
    try:
        name, ic, pull = unique("p"), unique("ic"), unique("icpull")
        apply_provider(api, name)
        await wait_signals(temporal_client, stub_queue, name, 1)
        api.create_cluster_custom_object("pkg.crossplane.io", "v1beta1", "imageconfigs", {
            "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
            "metadata": {"name": ic}, "spec": {
                "matchImages": [{"prefix": f"xpkg.example.org/tests/{name}"}],
                "registry": {"authentication": {"pullSecretRef": {"name": pull}}}}})
        assert (await wait_signals(temporal_client, stub_queue, name, 2))[1] == f"ImageConfig {ic} added"
        core = core_api(cluster.kubeconfig)
        create_secret(core, pull)
        got = await wait_signals(temporal_client, stub_queue, name, 3)
        assert got[2] == f"Secret crossplane-system/{pull} added"
        core.delete_namespaced_secret(pull, "crossplane-system")
        got = await wait_signals(temporal_client, stub_queue, name, 4)
        assert got[3] == f"Secret crossplane-system/{pull} deleted"
        assert_no_secret_data(run.watcher, *got)
    finally:
        await run.halt()


# --- dropped streams and 410 Gone --------------------------------------------------------
class Proxy:
    """A TCP proxy that can cut every connection and refuse new ones until restored."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = upstream_port
        self.open = True
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                conn.close()
                continue
            up = socket.create_connection(("127.0.0.1", self.upstream))
            with self._lock:
                self._conns += [conn, up]
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.open = False
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def restore(self) -> None:
        self.open = True

    def close(self) -> None:
        self.cut()
        self.listener.close()


@pytest.fixture(scope="module")
def small_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevCluster, str]]:
    root = tmp_path_factory.mktemp("watcher-410")
    dc = _cluster(root, "--watch-history", "5")
    proxy = Proxy(int(dc.url.rsplit(":", 1)[1]))
    proxied = root / "proxied-kubeconfig"
    proxied.write_text(Path(dc.kubeconfig).read_text().replace(
        dc.url, f"http://127.0.0.1:{proxy.port}"))
    dc.proxy = proxy  # type: ignore[attr-defined]
    yield dc, str(proxied)
    proxy.close()
    dc.stop()


async def test_dropped_stream_resumes_without_relisting(
        temporal_client: Client, stub_queue: str, small_history: tuple[DevCluster, str]) -> None:
    dc, proxied = small_history
    proxy: Proxy = dc.proxy  # type: ignore[attr-defined]
    run = await start_watcher(temporal_client, proxied, stub_queue)
    try:
        relists = run.watcher.stats["list:relist after 410"]
        proxy.cut()
        name = unique("p")
        apply_provider(custom_api(dc.kubeconfig), name)
        proxy.restore()
        assert (await wait_signals(temporal_client, stub_queue, name))[0] == f"Provider {name} added"
        assert run.watcher.stats["list:relist after 410"] == relists
    finally:
        await run.halt()


async def test_gone_relists_and_misses_no_package(
        temporal_client: Client, stub_queue: str, small_history: tuple[DevCluster, str]) -> None:
    dc, proxied = small_history
    proxy: Proxy = dc.proxy  # type: ignore[attr-defined]
    api = custom_api(dc.kubeconfig)
    doomed = unique("p")
    apply_provider(api, doomed)
    run = await start_watcher(temporal_client, proxied, stub_queue)
    try:
        await wait_signals(temporal_client, stub_queue, doomed, 1)
        proxy.cut()
        names = [f"gone-{uuid.uuid4().hex[:8]}-{i}" for i in range(8)]
        for name in names:
            apply_provider(api, name)
        api.delete_cluster_custom_object("pkg.crossplane.io", "v1", "providers", doomed)
        proxy.restore()
        for name in names:
            assert (await wait_signals(temporal_client, stub_queue, name))[0] == \
                f"Provider {name} relist after 410"
        got = await wait_signals(temporal_client, stub_queue, doomed, 2)
        assert got[1] == f"Provider {doomed} gone at relist after 410"
        assert run.watcher.stats["list:relist after 410"] >= 1
    finally:
        await run.halt()
