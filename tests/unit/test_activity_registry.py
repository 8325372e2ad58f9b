"""One list of activities: every name is timed, registered by the worker and faked."""

from __future__ import annotations

from pathlib import Path

from temporalio import activity

from lockwright import contracts as c
from lockwright.settings import Settings
from tests.activity_view import Activities
from tests.integration.fake_cluster import FakeCluster
from lockwright.workflows.retry import TIMEOUTS


def names(fns: list[object]) -> list[str]:
    out = []
    for fn in fns:
        defn = activity._Definition.from_callable(fn)  # noqa: SLF001 - the registered name
        assert defn is not None and defn.name
        out.append(defn.name)
    return out


def test_every_activity_is_named_timed_registered_and_faked(tmp_path: Path) -> None:
    acts = Activities(Settings(cache_dir=str(tmp_path)), kube=None, cache=None)  # type: ignore[arg-type]
    assert len(set(c.ALL_ACTIVITY_NAMES)) == len(c.ALL_ACTIVITY_NAMES)
    assert set(TIMEOUTS) == set(c.ALL_ACTIVITY_NAMES)
    assert sorted(names(acts.all())) == sorted(c.ALL_ACTIVITY_NAMES)
    assert sorted(names(FakeCluster().activities())) == sorted(c.ALL_ACTIVITY_NAMES)


def test_no_activity_has_its_cancellation_raised_into_its_thread(tmp_path: Path) -> None:
    """Declared with ``lockwright.activities.errors.defn``: see tests/integration/
    test_activity_cancel.py for what the SDK's default did to the Kubernetes client."""
    acts = Activities(Settings(cache_dir=str(tmp_path)), kube=None, cache=None)  # type: ignore[arg-type]
    raised = [d.name for d in map(activity._Definition.from_callable, acts.all())  # noqa: SLF001
              if d is None or not d.no_thread_cancel_exception]
    assert raised == []
