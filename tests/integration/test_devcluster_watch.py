"""Watches and persistence.

Matrix: ADDED/MODIFIED/DELETED from a version; list-then-watch misses nothing under
concurrent writes; selectors turn leaving objects into DELETED; BOOKMARK events; a
watch-list's initial events and the bookmark that ends them (asked for, or defaulted);
timeoutSeconds ends the stream; an expired version gets 410 Expired (small history);
a restart keeps objects and keeps resourceVersion increasing.
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from lockwright.devcluster import app
from tests.fixtures.devcluster import DevCluster, start_devcluster


def _raw_watch(url: str, path: str, timeout: float = 10) -> Iterator[dict]:
    with urllib.request.urlopen(url + path, timeout=timeout) as resp:
        for line in resp:
            yield json.loads(line)


def test_watch_from_version_sees_changes(devcluster: DevCluster, core: client.CoreV1Api,
                                         namespace: str) -> None:
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "w1"}})
    core.patch_namespaced_config_map("w1", namespace, {"data": {"a": "b"}})
    core.delete_namespaced_config_map("w1", namespace)
    events = _raw_watch(devcluster.url, f"/api/v1/namespaces/{namespace}/configmaps"
                        f"?watch=1&resourceVersion={rv}&timeoutSeconds=5")
    got = [(e["type"], e["object"]["metadata"]["name"]) for _, e in zip(range(3), events)]
    assert got == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


def test_list_then_watch_misses_nothing(kube_client: client.ApiClient,
                                        core: client.CoreV1Api, namespace: str) -> None:
    """Writers run while we list then watch; every object arrives exactly once as ADDED."""
    stop = threading.Event()
    created: list[str] = []

    def writer() -> None:
        api = client.CoreV1Api(client.ApiClient(kube_client.configuration))
        i = 0
        while not stop.is_set() and i < 200:
            api.create_namespaced_config_map(namespace, {"metadata": {"name": f"c{i}"}})
            created.append(f"c{i}")
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    listed = core.list_namespaced_config_map(namespace)
    seen = {i.metadata.name for i in listed.items}
    w = watch.Watch()
    deadline = time.monotonic() + 20
    t.join()
    for event in w.stream(core.list_namespaced_config_map, namespace,
                          resource_version=listed.metadata.resource_version, timeout_seconds=10):
        assert event["type"] == "ADDED"
        name = event["object"].metadata.name
        assert name not in seen, f"{name} delivered twice"
        seen.add(name)
        if seen >= set(created) or time.monotonic() > deadline:
            w.stop()
    assert seen == set(created) and len(created) == 200


def test_selector_watch_reports_leaving_as_deleted(devcluster: DevCluster,
                                                   core: client.CoreV1Api,
                                                   namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "s",
                                                               "labels": {"pick": "yes"}}})
    rv = core.read_namespaced_config_map("s", namespace).metadata.resource_version
    core.patch_namespaced_config_map("s", namespace, {"metadata": {"labels": {"pick": "no"}}})
    core.patch_namespaced_config_map("s", namespace, {"metadata": {"labels": {"pick": "yes"}}})
    events = _raw_watch(devcluster.url, f"/api/v1/namespaces/{namespace}/configmaps?watch=1"
                        f"&resourceVersion={rv}&labelSelector=pick%3Dyes&timeoutSeconds=5")
    got = [e["type"] for _, e in zip(range(2), events)]
    assert got == ["DELETED", "ADDED"]


def test_bookmarks_when_allowed(devcluster: DevCluster, core: client.CoreV1Api,
                                namespace: str) -> None:
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    events = _raw_watch(devcluster.url, f"/api/v1/namespaces/{namespace}/configmaps?watch=1"
                        f"&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=5")
    first = next(events)
    assert first["type"] == "BOOKMARK"
    assert int(first["object"]["metadata"]["resourceVersion"]) >= int(rv)


@pytest.mark.parametrize("query", [
    "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={rv}",
    "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    "",  # kube-apiserver's defaulting: a watch from no version is a watch-list
])
def test_watch_list_ends_initial_events_with_a_bookmark(
        devcluster: DevCluster, core: client.CoreV1Api, namespace: str, query: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "w1"}})
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    events = _raw_watch(devcluster.url, f"/api/v1/namespaces/{namespace}/configmaps?watch=1"
                        f"&allowWatchBookmarks=true&timeoutSeconds=5&"
                        + query.format(rv=rv))
    added, end = next(events), next(events)
    assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "w1")
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(end["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_watch_without_initial_events_starts_now(devcluster: DevCluster,
                                                 core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "old"}})
    path = (f"/api/v1/namespaces/{namespace}/configmaps?watch=1&sendInitialEvents=false"
            "&resourceVersionMatch=NotOlderThan&timeoutSeconds=5")
    with urllib.request.urlopen(devcluster.url + path, timeout=10) as resp:  # the watch is on
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "new"}})
        first = json.loads(resp.readline())
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "new")


def test_timeout_seconds_ends_stream(devcluster: DevCluster, namespace: str) -> None:
    started = time.monotonic()
    events = list(_raw_watch(devcluster.url, f"/api/v1/namespaces/{namespace}/configmaps"
                             "?watch=1&timeoutSeconds=1"))
    assert events == [] and time.monotonic() - started < 9


def test_restart_and_expired_watch() -> None:
    """State survives a restart; versions keep rising; an old version gets 410 Expired."""
    with tempfile.TemporaryDirectory() as data_dir:
        dc = start_devcluster(data_dir, "--watch-history", "5")
        api = _client(dc)
        api.create_namespaced_config_map("default", {"metadata": {"name": "keep"},
                                                     "data": {"k": "v"}})
        old_rv = int(api.read_namespaced_config_map("keep", "default").metadata.resource_version)
        for i in range(10):
            api.patch_namespaced_config_map("keep", "default", {"data": {"i": str(i)}})
        with pytest.raises(ApiException) as err:
            for _ in watch.Watch().stream(api.list_namespaced_config_map, "default",
                                          resource_version=str(old_rv), timeout_seconds=5):
                pass
        assert err.value.status == 410
        last_rv = int(api.read_namespaced_config_map("keep", "default").metadata.resource_version)
        dc.stop()
        dc = start_devcluster(data_dir)
        api = _client(dc)
        kept = api.read_namespaced_config_map("keep", "default")
        assert kept.data == {"k": "v", "i": "9"}
        assert int(kept.metadata.resource_version) == last_rv
        api.create_namespaced_config_map("default", {"metadata": {"name": "after"}})
        after = api.read_namespaced_config_map("after", "default")
        assert int(after.metadata.resource_version) > last_rv
        dc.stop()


def _client(dc: DevCluster) -> client.CoreV1Api:
    configuration = client.Configuration()
    config.load_kube_config(config_file=dc.kubeconfig, client_configuration=configuration)
    return client.CoreV1Api(client.ApiClient(configuration))


def test_a_watch_on_a_descriptor_above_1023_idles_to_its_timeout(tmp_path: Path) -> None:
    """A server holding more than 1,023 connections (a 2,000-CRD Provider's protection
    streams) still checks an idle watch's client: ``select`` refuses such a descriptor, and
    the refusal ended the watch at its first idle tick, cut off mid-stream."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 4096), hard), hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    running = app.start("127.0.0.1", 0, str(tmp_path))
    try:
        with urllib.request.urlopen(running.url + "/api/v1/namespaces/default/configmaps"
                                    "?watch=1&timeoutSeconds=3", timeout=10) as resp:
            urllib.request.urlopen(urllib.request.Request(
                running.url + "/api/v1/namespaces/default/configmaps", method="POST",
                data=b'{"metadata": {"name": "late"}}',
                headers={"Content-Type": "application/json"}), timeout=10).close()
            got = [json.loads(line) for line in resp]  # IncompleteRead if cut off
    finally:
        running.stop()
        for fd in filler:
            os.close(fd)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [("ADDED", "late")]
