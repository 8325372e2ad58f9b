"""Metrics and log lines, in process: what each recorder records, where Lock races are
counted, the metrics setting, the log format and the fields a log line carries."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import ActivityEnvironment

from lockwright import contracts as c
from lockwright.activities.errors import input_fields
from lockwright.activities.lock import LockKeeper
from lockwright.activities.reads import PackageReader
from lockwright.contracts import metrics as m
from lockwright.errors import KubeConflict
from lockwright.log import log_format, stdlib_formatter
from lockwright.settings import SettingsError, from_args

Update = tuple[str, Any, dict[str, str]]


@pytest.fixture(scope="module")
def buffered() -> tuple[Runtime, MetricBuffer]:
    """A Temporal runtime whose metrics go to a buffer the test reads."""
    buffer = MetricBuffer(10_000)
    return Runtime(telemetry=TelemetryConfig(metrics=buffer)), buffer


def updates_of(buffer: MetricBuffer) -> list[Update]:
    return [(u.metric.name, u.value, {k: str(v) for k, v in u.attributes.items()
                                      if k not in ("service_name", "task_queue", "namespace")})
            for u in buffer.retrieve_updates()]


# --- recorders ---------------------------------------------------------------------------
@pytest.mark.parametrize(("error_type", "counter", "outcome"), [
    ("", m.INSTALLS_SUCCEEDED, "succeeded"),
    ("LintError", m.INSTALLS_FAILED, "failed"),
    (m.UNHEALTHY, m.INSTALLS_FAILED, "failed"),
])
def test_a_finished_install_is_counted_once_and_timed(
        buffered: tuple[Runtime, MetricBuffer], error_type: str, counter: str,
        outcome: str) -> None:
    runtime, buffer = buffered
    buffer.retrieve_updates()
    m.install_finished(runtime.metric_meter, c.PROVIDER, m.INSTALL, 1.5, error_type)
    labels = {"kind": c.PROVIDER, "mode": m.INSTALL}
    counted = {**labels, "error_type": error_type} if error_type else labels
    assert updates_of(buffer) == [(counter, 1, counted),
                                  (m.INSTALL_DURATION, 1.5, {**labels, "outcome": outcome})]


def test_started_switch_and_resolution_recorders(buffered: tuple[Runtime, MetricBuffer]) -> None:
    runtime, buffer = buffered
    buffer.retrieve_updates()
    m.install_started(runtime.metric_meter, c.FUNCTION, m.PREPARE)
    m.switch_finished(runtime.metric_meter, c.PROVIDER, 12.0, "reverted")
    m.resolution_failed(runtime.metric_meter, "unresolved")
    assert updates_of(buffer) == [
        (m.INSTALLS_STARTED, 1, {"kind": c.FUNCTION, "mode": m.PREPARE}),
        (m.SWITCH_DURATION, 12.0, {"kind": c.PROVIDER, "outcome": "reverted"}),
        (m.RESOLUTION_FAILURES, 1, {"reason": "unresolved"})]


def test_every_histogram_has_buckets_in_seconds_rising() -> None:
    assert set(m.BUCKETS) == {m.INSTALL_DURATION, m.SWITCH_DURATION}
    for buckets in m.BUCKETS.values():
        assert list(buckets) == sorted(set(buckets)) and buckets[-1] >= 300


# --- Lock compare-and-swap races ---------------------------------------------------------
class RacingKube:
    """A Lock that another writer changes between our read and our write, ``races`` times."""

    def __init__(self, races: int) -> None:
        self.races = races
        self.lock: dict[str, Any] = {"metadata": {"name": "lock", "resourceVersion": "1"}}

    def get(self, *_: Any) -> dict[str, Any]:
        return self.lock

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.races:
            self.races -= 1
            raise KubeConflict("the object has been modified")
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": "9"}}


def lock_activities(kube: RacingKube, tmp_path: Path) -> LockKeeper:
    return LockKeeper(kube, PackageReader(kube))  # type: ignore[arg-type]


def test_each_lost_compare_and_swap_is_counted(buffered: tuple[Runtime, MetricBuffer],
                                               tmp_path: Path) -> None:
    runtime, buffer = buffered
    buffer.retrieve_updates()
    env = ActivityEnvironment()
    env.metric_meter = runtime.metric_meter
    acts = lock_activities(RacingKube(races=2), tmp_path)
    version, attempts = env.run(acts.lock_cas, lambda lock: {**lock, "packages": []})
    assert (version, attempts) == ("9", 3)
    assert [(name, value) for name, value, _ in updates_of(buffer)] == [
        (m.LOCK_CAS_CONFLICTS, 1), (m.LOCK_CAS_CONFLICTS, 1)]


def test_a_race_outside_an_activity_is_not_an_error(tmp_path: Path) -> None:
    acts = lock_activities(RacingKube(races=1), tmp_path)
    assert acts.lock_cas(lambda lock: {**lock, "packages": []}) == ("9", 2)


# --- the metrics setting -----------------------------------------------------------------
@pytest.mark.parametrize("address", ["", "0.0.0.0:9090", "127.0.0.1:0", "[::]:9090",
                                     "worker.internal:9464"])
def test_metrics_address_is_empty_or_host_port(address: str) -> None:
    assert from_args(None, {"LOCKWRIGHT_METRICS_ADDRESS": address}).metrics_address == address


@pytest.mark.parametrize("address", ["9090", "http://0.0.0.0:9090", "0.0.0.0"])
def test_a_bad_metrics_address_names_the_flag_and_the_fix(address: str) -> None:
    with pytest.raises(SettingsError) as err:
        from_args(None, {"LOCKWRIGHT_METRICS_ADDRESS": address})
    message = str(err.value)
    assert "--metrics-address / LOCKWRIGHT_METRICS_ADDRESS" in message
    assert "0.0.0.0:9090" in message


def test_metrics_address_travels_to_child_processes() -> None:
    settings = from_args(None, {"LOCKWRIGHT_METRICS_ADDRESS": "127.0.0.1:9090"})
    assert settings.env()["LOCKWRIGHT_METRICS_ADDRESS"] == "127.0.0.1:9090"


# --- log format and fields ---------------------------------------------------------------
class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("value", "env", "stream", "expected"), [
    (None, "", io.StringIO(), "json"),          # a file or a pipe: JSON
    (None, "", Terminal(), "console"),          # a terminal: key=value
    (None, "console", io.StringIO(), "console"),
    (None, "JSON", Terminal(), "json"),
    ("console", "json", io.StringIO(), "console"),  # the caller's choice wins
    (None, "yaml", io.StringIO(), "json"),      # not a format: as if unset
])
def test_log_format(monkeypatch: pytest.MonkeyPatch, value: str | None, env: str,
                    stream: io.StringIO, expected: str) -> None:
    monkeypatch.setenv("LOCKWRIGHT_LOG_FORMAT", env)
    assert log_format(value, stream) == expected


def record(extra: dict[str, Any]) -> logging.LogRecord:
    """A standard library record as a workflow's ``workflow.logger.warning`` makes it."""
    rec = logging.LogRecord("temporalio.workflow", logging.WARNING, __file__, 1,
                            "install failed step=%s", ("parse_package",), None)
    rec.__dict__.update(extra)
    return rec


def test_a_workflow_record_becomes_a_json_line_with_its_ids_and_package() -> None:
    temporal = {"workflow_id": "revision:provider:p-1", "run_id": "r-1",
                "workflow_type": "InstallRevision", "attempt": 1, "namespace": "default"}
    line = stdlib_formatter("json").format(record({
        "temporal_workflow": temporal, "kind": c.PROVIDER, "package": "p",
        "revision": "p-1"}))
    fields = json.loads(line)
    assert fields["event"] == "install failed step=parse_package"
    assert (fields["workflow_id"], fields["run_id"], fields["workflow_type"]) == (
        "revision:provider:p-1", "r-1", "InstallRevision")
    assert (fields["kind"], fields["package"], fields["revision"]) == (c.PROVIDER, "p", "p-1")
    assert (fields["level"], fields["logger"]) == ("warning", "temporalio.workflow")


def test_an_activity_record_names_its_workflow_run_and_activity() -> None:
    temporal = {"workflow_id": "package:provider:p", "workflow_run_id": "r-2",
                "activity_type": c.READ_PACKAGE, "attempt": 3}
    line = stdlib_formatter("console").format(record({"temporal_activity": temporal}))
    for text in ("workflow_id=package:provider:p", "run_id=r-2",
                 f"activity={c.READ_PACKAGE}", "attempt=3", "install failed"):
        assert text in line, line


@pytest.mark.parametrize(("arg", "expected"), [
    (c.ReadPackageInput(kind=c.PROVIDER, name="p"), {"kind": c.PROVIDER, "package": "p"}),
    (c.TakeLockInput(kind=c.PROVIDER, package="p", revision="p-1"),
     {"kind": c.PROVIDER, "package": "p", "revision": "p-1"}),
    (c.WriteRevisionStatusInput(kind=c.FUNCTION, revision="f-1"),
     {"kind": c.FUNCTION, "revision": "f-1"}),
    (c.ResolveDependenciesInput(), {}),
    (None, {}),
])
def test_an_activity_input_names_its_package_and_revision(arg: object,
                                                          expected: dict[str, str]) -> None:
    assert input_fields(arg) == expected
