"""devcluster speed on this machine, each number beside its floor from the same run.

Prints creates/s, gets/s, p50/p99 latency of create and get over one keep-alive HTTP
connection, watch delivery latency, and the time to create 2,000 CRDs of realistic size.
Floors: a GET of ``/healthz`` on the same connection (the HTTP stack alone) and an SQLite
insert of the same bytes (the persistence alone).

Targets: p50 create under 5 ms; 2,000 CRDs in under 20 s.

Run: ``python benchmarks/devcluster.py [--crds 2000] [--objects 2000]``
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.crdgen import crd_sizes, make_crd  # noqa: E402
from lockwright.devcluster.app import start  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(conn: http.client.HTTPConnection, method: str, path: str,
          body: bytes | None = None) -> tuple[float, int, bytes]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    t0 = time.perf_counter()
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    return (time.perf_counter() - t0) * 1000, resp.status, data


def bench_objects(url: str, n: int) -> dict[str, float]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port)
    body = {"metadata": {"name": ""}, "data": {"key": "value" * 20}}
    creates, gets, floors = [], [], []
    for i in range(n):
        body["metadata"]["name"] = f"cm-{i}"
        ms, status, _ = timed(conn, "POST", "/api/v1/namespaces/default/configmaps",
                              json.dumps(body).encode())
        assert status == 201, status
        creates.append(ms)
    for i in range(n):
        ms, status, _ = timed(conn, "GET", f"/api/v1/namespaces/default/configmaps/cm-{i}")
        assert status == 200
        gets.append(ms)
        floors.append(timed(conn, "GET", "/healthz")[0])
    return {"create_p50": pct(creates, .5), "create_p99": pct(creates, .99),
            "creates_per_s": n / (sum(creates) / 1000), "get_p50": pct(gets, .5),
            "get_p99": pct(gets, .99), "gets_per_s": n / (sum(gets) / 1000),
            "http_floor_p50": pct(floors, .5)}


def sqlite_floor(n: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        db = sqlite3.connect(os.path.join(d, "f.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
        body = json.dumps({"data": {"key": "value" * 20}})
        t0 = time.perf_counter()
        for i in range(n):
            db.execute("BEGIN")
            db.execute("INSERT INTO t VALUES (?, ?)", (str(i), body))
            db.execute("COMMIT")
        return (time.perf_counter() - t0) * 1000 / n


def bench_watch(url: str, rounds: int = 50) -> float:
    parts = urlsplit(url)
    writer = http.client.HTTPConnection(parts.hostname, parts.port)
    _, _, data = timed(writer, "GET", "/api/v1/namespaces/default/configmaps?limit=1")
    rv = json.loads(data)["metadata"]["resourceVersion"]
    watcher = http.client.HTTPConnection(parts.hostname, parts.port)
    watcher.request("GET", f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}"
                           f"&labelSelector=bench%3Dwatch")
    resp = watcher.getresponse()
    latencies: list[float] = []
    got = threading.Event()

    def reader() -> None:
        while len(latencies) < rounds:
            line = resp.readline()
            if not line:
                return
            event = json.loads(line)
            sent = float(event["object"]["metadata"]["annotations"]["sent"])
            latencies.append((time.perf_counter() - sent) * 1000)
            got.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    for i in range(rounds):
        got.clear()
        body = {"metadata": {"name": f"watch-{i}", "labels": {"bench": "watch"},
                             "annotations": {"sent": repr(time.perf_counter())}}}
        timed(writer, "POST", "/api/v1/namespaces/default/configmaps", json.dumps(body).encode())
        got.wait(5)
    return statistics.median(latencies)


def bench_crds(url: str, count: int) -> tuple[float, int]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port)
    bodies = [json.dumps(make_crd(i, size)).encode() for i, size in enumerate(crd_sizes(count))]
    total = sum(len(b) for b in bodies)
    t0 = time.perf_counter()
    for b in bodies:
        _, status, data = timed(conn, "POST", "/apis/apiextensions.k8s.io/v1/"
                                              "customresourcedefinitions", b)
        assert status == 201, data[:300]
    return time.perf_counter() - t0, total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--crds", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        app = start("127.0.0.1", 0, data_dir)
        try:
            o = bench_objects(app.url, args.objects)
            floor = sqlite_floor(args.objects)
            watch_ms = bench_watch(app.url)
            crd_s, crd_bytes = bench_crds(app.url, args.crds)
        finally:
            app.stop()
    print(f"{'measure':38} {'devcluster':>12} {'floor':>12}")
    print(f"{'create p50 / p99 (ms)':38} {o['create_p50']:>5.2f} / {o['create_p99']:<5.2f}"
          f" {o['http_floor_p50'] + floor:>12.2f}  (http {o['http_floor_p50']:.2f}"
          f" + sqlite {floor:.2f})")
    print(f"{'get p50 / p99 (ms)':38} {o['get_p50']:>5.2f} / {o['get_p99']:<5.2f}"
          f" {o['http_floor_p50']:>12.2f}  (http)")
    print(f"{'creates/s (one connection)':38} {o['creates_per_s']:>12.0f}")
    print(f"{'gets/s (one connection)':38} {o['gets_per_s']:>12.0f}")
    print(f"{'watch delivery p50 (ms)':38} {watch_ms:>12.2f}")
    print(f"{f'{args.crds} CRDs, {crd_bytes / 1e6:.0f} MB (s)':38} {crd_s:>12.1f}"
          f" {'target < 20':>12}")
    print(f"{'p50 create target < 5 ms':38} {'PASS' if o['create_p50'] < 5 else 'FAIL':>12}")


if __name__ == "__main__":
    main()
