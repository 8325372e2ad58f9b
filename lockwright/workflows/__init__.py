"""Temporal workflows of lockwright: deterministic, small, importing only contracts.

``PackageWorkflow`` is the entity workflow per package; ``InstallRevision`` is its child
per revision; ``ResolveDependencies`` resolves the cluster's package graph;
``ActivateDefinitions`` applies the activation policies; ``ProtectProviders`` keeps
Providers in use from being deleted; ``PlanCandidate`` plans a
candidate package reference (``lockwright plan --package``). Register ``ALL_WORKFLOWS`` on
the worker.
"""

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    # Each module by its dotted name: the sandbox then knows every contracts module, and
    # the payload converter finds the names a dataclass's string annotations refer to
    # (``typing.get_type_hints`` looks them up in ``sys.modules[cls.__module__]``).
    import lockwright.contracts.activation
    import lockwright.contracts.dependencies
    import lockwright.contracts.names
    import lockwright.contracts.package
    import lockwright.contracts.plan
    import lockwright.contracts.protection
    import lockwright.contracts.revision
    import lockwright.contracts.shared  # noqa: F401

from lockwright.workflows.activation import ActivateDefinitions
from lockwright.workflows.dependencies import ResolveDependencies
from lockwright.workflows.package import PackageWorkflow
from lockwright.workflows.plan import PlanCandidate
from lockwright.workflows.protection import ProtectProviders
from lockwright.workflows.revision import InstallRevision

ALL_WORKFLOWS: list[type] = [PackageWorkflow, InstallRevision, ResolveDependencies,
                             PlanCandidate, ActivateDefinitions, ProtectProviders]

__all__ = ["ALL_WORKFLOWS", "ActivateDefinitions", "InstallRevision", "PackageWorkflow",
           "PlanCandidate", "ProtectProviders", "ResolveDependencies"]
