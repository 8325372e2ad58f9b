"""A stalled worker says where its threads wait: the worker's SIGUSR1 dump, and the digest
a test stack's timed-out wait puts in its failure (tests/fixtures/threads.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lockwright.k8s import Kube
from lockwright.settings import Settings
from tests.fixtures.threads import DUMP_MARK, digest, threads

DUMP = '''Thread 0x00007f01 (most recent call first):
  File "/w/lockwright/k8s/client.py", line 204 in _send
  File "/w/lockwright/k8s/client.py", line 171 in _answer
  File "/w/lockwright/k8s/client.py", line 147 in _call
  File "/w/lockwright/activities/health.py", line 80 in watch_health

Thread 0x00007f02 (most recent call first):
  File "/w/lockwright/k8s/client.py", line 204 in _send
  File "/w/lockwright/k8s/client.py", line 171 in _answer
  File "/w/lockwright/k8s/client.py", line 147 in _call

Current thread 0x00007f03 (most recent call first):
  File "/py/concurrent/futures/thread.py", line 81 in _worker
'''

# 2026-11-30: 63 threads so, waiting on the lock of the connection pool's queue.
POOL_WAIT = '''Thread 0x00007f04 (most recent call first):
  File "/py/threading.py", line 272 in __enter__
  File "/py/queue.py", line 165 in get
  File "/site/urllib3/connectionpool.py", line 280 in _get_conn
  File "/site/urllib3/connectionpool.py", line 720 in urlopen
  File "/site/kubernetes/client/rest.py", line 200 in request
  File "/w/lockwright/k8s/client.py", line 207 in _send
  File "/w/lockwright/k8s/client.py", line 174 in _answer
'''


def test_the_digest_groups_threads_by_where_they_wait_most_common_first() -> None:
    assert digest(DUMP) == (
        "1× k8s/client.py:204 _send < k8s/client.py:171 _answer < k8s/client.py:147 _call"
        " < activities/health.py:80 watch_health; "
        "1× k8s/client.py:204 _send < k8s/client.py:171 _answer < k8s/client.py:147 _call; "
        "1× futures/thread.py:81 _worker")


def test_the_digest_names_the_call_a_thread_waits_in_before_lockwright_frames() -> None:
    assert digest(POOL_WAIT) == (
        "1× py/threading.py:272 __enter__ < py/queue.py:165 get"
        " < urllib3/connectionpool.py:280 _get_conn"
        " < k8s/client.py:207 _send < k8s/client.py:174 _answer")


def test_the_worker_dumps_every_thread_on_sigusr1_and_keeps_running() -> None:
    code = ("import os, signal, sys\n"
            "from lockwright.worker.worker import dump_stacks_on_signal\n"
            "dump_stacks_on_signal()\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\n"
            "print('still running', flush=True)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == "still running\n", done.stderr
    assert DUMP_MARK in done.stderr and "line 4 in <module>" in done.stderr


def test_no_live_worker_gives_no_digest() -> None:
    assert threads([], lambda: "") == ""


@pytest.mark.parametrize("slots", [1, 8, 32])
def test_every_admitted_activity_and_local_activity_has_a_thread(slots: int) -> None:
    # The SDK admits `slots` activities and `slots` local activities, all on one executor.
    assert Settings(max_concurrent_activities=slots).activity_threads >= slots + slots


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.mark.parametrize("connections", [64, 200])
def test_the_connection_pool_keeps_a_connection_for_each_calling_thread(
        tmp_path: Path, connections: int) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG)
    kube = Kube.connect(str(config), connections=connections)
    try:
        assert kube._api.configuration.connection_pool_maxsize >= connections  # noqa: SLF001
    finally:
        kube.close()
