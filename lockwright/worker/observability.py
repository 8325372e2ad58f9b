"""What the worker tells operators besides its work: Prometheus metrics, and logs.

With ``--metrics-address`` the worker's Temporal runtime serves Prometheus metrics: the
SDK's own and lockwright's (:mod:`contracts.metrics`), through one meter, with durations
in seconds. The runtime's own log lines are forwarded to Python's logging, so
:mod:`lockwright.log` renders them as every other line.
"""

from __future__ import annotations

import logging

from temporalio import activity
from temporalio import workflow as temporal_workflow
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
)

from lockwright.contracts.metrics import BUCKETS


def worker_runtime(metrics_address: str) -> Runtime:
    """The worker's Temporal runtime: Prometheus metrics, the core's log lines forwarded.

    Args:
        metrics_address: HOST:PORT to serve ``/metrics`` on; empty: no metrics.

    Raises:
        ValueError: the address cannot be listened on (in use, not an address).
    """
    metrics = PrometheusConfig(bind_address=metrics_address, durations_as_seconds=True,
                               histogram_bucket_overrides=BUCKETS) if metrics_address else None
    # Forwarded, the core's lines are rendered as lockwright's (JSON off a terminal).
    forwarded = LoggingConfig(filter=LoggingConfig.default.filter, forwarding=LogForwardingConfig(
        logger=logging.getLogger("temporalio.core")))
    return Runtime(telemetry=TelemetryConfig(logging=forwarded, metrics=metrics))


def use_runtime(metrics_address: str) -> None:
    """Make :func:`worker_runtime` the process's default Temporal runtime.

    Every client connected afterwards, and the workers polling through it, use it.
    """
    Runtime.set_default(worker_runtime(metrics_address))


def quiet_sdk_messages() -> None:
    """Temporal's loggers stop appending their context to each message.

    :func:`lockwright.log.temporal_fields` makes fields of it; in the message too it would
    only repeat them.
    """
    temporal_workflow.logger.workflow_info_on_message = False
    activity.logger.activity_info_on_message = False
