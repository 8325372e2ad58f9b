"""An activation pass heartbeats while it writes.

Making a 2,000-resource Provider's MRDs Active is 4,000 requests (a patch and an Event
each); on a busy API server that outlasts the activity's 30 s heartbeat timeout, and a
pass that never heartbeats is then retried from the start, again and again (seen in the
full-size install benchmark on devcluster). Here the first write waits for a heartbeat.
"""

from __future__ import annotations

import threading
from typing import Any

from temporalio.testing import ActivityEnvironment

from lockwright import contracts as c
from lockwright.activities.activation import ActivationActivities
from lockwright.managed.policy import Definition

POLICY = {"apiVersion": "apiextensions.crossplane.io/v1alpha1",
          "kind": "ManagedResourceActivationPolicy", "metadata": {"name": "all"},
          "spec": {"activate": ["*"]}}


class _Kube:
    """Writes that wait (up to a deadline) for the activity's first heartbeat."""

    def __init__(self, beat: threading.Event) -> None:
        self.beat = beat
        self.patched: list[tuple[str, str | None]] = []

    def patch(self, api: str, kind: str, name: str, body: Any,
              subresource: str | None = None) -> None:
        if not self.beat.wait(30):
            raise AssertionError("the activation pass wrote for 30 s without a heartbeat")
        self.patched.append((name, subresource))


class _Definitions:
    def policies(self) -> list[Any]:
        return [POLICY]

    def rows(self) -> list[Definition]:
        return [Definition("buckets.s3.example.org", False),
                Definition("queues.sqs.example.org", False)]

    def crd_uids(self) -> dict[str, str]:
        return {}

    def provider_revisions(self) -> list[Any]:
        return []


class _Reader:
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        pass


def test_an_activation_pass_heartbeats_while_it_writes() -> None:
    beat = threading.Event()
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beat.set()
    kube = _Kube(beat)
    activities = ActivationActivities(kube, _Reader(), _Definitions())  # type: ignore[arg-type]
    result = env.run(activities.activate_definitions, c.ActivateDefinitionsInput())
    assert result.activated_count == 2 and not result.failed
    assert {name for name, subresource in kube.patched if subresource is None} == {
        "buckets.s3.example.org", "queues.sqs.example.org"}
