"""Temporal workflows of lockwright: deterministic, small, importing only contracts.

``PackageWorkflow`` is the entity workflow per package; ``InstallRevision`` is its child
per revision. Register ``ALL_WORKFLOWS`` on the worker.
"""

from workflows.package import PackageWorkflow
from workflows.revision import InstallRevision

ALL_WORKFLOWS: list[type] = [PackageWorkflow, InstallRevision]

__all__ = ["ALL_WORKFLOWS", "InstallRevision", "PackageWorkflow"]
