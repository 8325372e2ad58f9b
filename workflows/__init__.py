"""Temporal workflows of lockwright: deterministic, small, importing only contracts.

``PackageWorkflow`` is the entity workflow per package; ``InstallRevision`` is its child
per revision; ``ResolveDependencies`` resolves the cluster's package graph;
``PlanCandidate`` plans a candidate package reference (``lockwright plan --package``). Register ``ALL_WORKFLOWS`` on the worker.
"""

from workflows.package import PackageWorkflow
from workflows.plan import PlanCandidate
from workflows.resolve import ResolveDependencies
from workflows.revision import InstallRevision

ALL_WORKFLOWS: list[type] = [PackageWorkflow, InstallRevision, ResolveDependencies,
                             PlanCandidate]

__all__ = ["ALL_WORKFLOWS", "InstallRevision", "PackageWorkflow", "PlanCandidate",
           "ResolveDependencies"]
